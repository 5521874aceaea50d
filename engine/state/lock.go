package state

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rollcall/rollcall/engine/docker"
)

// LockHolder is who holds a host lock, as its lock file says.
type LockHolder struct {
	User  string
	PID   int
	Since time.Time
}

func (h LockHolder) String() string {
	return fmt.Sprintf("%s (pid %d) since %s", h.User, h.PID, h.Since.Local().Format(time.DateTime))
}

// ErrLocked is the host lock held by another acting session.
var ErrLocked = errors.New("held by another session")

// Lock is a host lock held: an exclusive flock on its file. It is safe for
// concurrent use.
type Lock struct {
	Path string

	mu sync.Mutex
	f  *os.File // nil once released
}

// Held reports whether the lock is still held (not released). It touches
// no file.
func (l *Lock) Held() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f != nil
}

// Release empties the lock file (so nobody reads a stale holder) and lets
// go of the lock. Releasing twice, or a nil Lock, does nothing.
func (l *Lock) Release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	_ = l.f.Truncate(0)
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// TakeLock takes the lock at path without waiting (its directory is made
// if need be) and writes "user pid since" into it. When another process
// holds it, the error is ErrLocked and the holder is returned if the file
// names one.
func TakeLock(path, user string, since time.Time) (*Lock, *LockHolder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, ReadLockHolder(path), fmt.Errorf("host lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ReadLockHolder(path), ErrLocked
		}
		return nil, nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	line := fmt.Sprintf("%s %d %s\n", user, os.Getpid(), since.UTC().Format(time.RFC3339))
	// Who holds it is for display only: a failed write leaves the lock held.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(line), 0)
	return &Lock{Path: path, f: f}, nil, nil
}

// AcquireLock takes the host lock of an engine and prefix (DefaultLockPath)
// without waiting: when it is held the error wraps ErrLocked and names the
// holder.
func AcquireLock(info docker.EngineInfo, prefix, user string) (*Lock, error) {
	path := DefaultLockPath(info, prefix)
	lk, holder, err := TakeLock(path, user, time.Now())
	switch {
	case errors.Is(err, ErrLocked) && holder != nil:
		return nil, fmt.Errorf("host lock %s: held by %s: %w", path, holder, ErrLocked)
	case errors.Is(err, ErrLocked):
		return nil, fmt.Errorf("host lock %s: %w", path, ErrLocked)
	case err != nil:
		return nil, err
	}
	return lk, nil
}

// DefaultLockPath is the host lock for an engine and prefix: one file per
// engine and prefix under /run/lock when it is writable (host-wide, so two
// operators of one host share it), else the temp directory.
func DefaultLockPath(info docker.EngineInfo, prefix string) string {
	dir := os.TempDir()
	if unix.Access("/run/lock", unix.W_OK) == nil {
		dir = "/run/lock"
	}
	return filepath.Join(dir, "rollcall-"+prefix+"-"+EngineKey(info)+".lock")
}

// maxHolderLine bounds what is read of a lock file: "user pid since" is
// one short line.
const maxHolderLine = 4 << 10

// ReadLockHolder reads who holds the lock at path. An empty file, one that
// does not parse, or one naming a process that is gone names nobody.
// The file is read only if it is a regular one, and at most a line of it:
// a FIFO put in its place neither hangs the read nor names anybody.
func ReadLockHolder(path string) *LockHolder {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	data := make([]byte, maxHolderLine)
	n, _ := io.ReadFull(f, data)
	data = data[:n]
	fields := strings.Fields(string(data))
	if len(fields) != 3 {
		return nil
	}
	pid, err := strconv.Atoi(fields[1])
	if err != nil || pid <= 0 {
		return nil
	}
	since, err := time.Parse(time.RFC3339, fields[2])
	if err != nil {
		return nil
	}
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return nil
	}
	return &LockHolder{User: fields[0], PID: pid, Since: since}
}
