package session

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// hostLock is an exclusive flock on a lock file, held while acting.
type hostLock struct{ f *os.File }

// ErrLocked is the host lock held by another acting session.
var ErrLocked = errors.New("held by another session")

// HostLock takes the host lock of an engine and prefix for a headless
// command that acts (apply, agent), so it never acts beside a console in
// step or auto mode, or another agent. It does not wait: when the lock is
// held the error wraps ErrLocked and names the holder. release frees it.
func HostLock(info docker.EngineInfo, prefix, user string) (release func(), err error) {
	path := DefaultLockPath(info, prefix)
	l, holder, err := acquireLock(path, user, time.Now())
	switch {
	case errors.Is(err, ErrLocked) && holder != nil:
		return nil, fmt.Errorf("host lock %s: held by %s: %w", path, holder, ErrLocked)
	case errors.Is(err, ErrLocked):
		return nil, fmt.Errorf("host lock %s: %w", path, ErrLocked)
	case err != nil:
		return nil, err
	}
	return l.release, nil
}

// DefaultLockPath is the host lock for an engine and prefix: one file per
// endpoint and prefix under /run/lock when it is writable, else the temp
// directory. A simulated engine lives in one process, so its lock is per
// process too.
func DefaultLockPath(info docker.EngineInfo, prefix string) string {
	dir := os.TempDir()
	if unix.Access("/run/lock", unix.W_OK) == nil {
		dir = "/run/lock"
	}
	key := info.Endpoint
	if info.Simulated {
		key += "#" + strconv.Itoa(os.Getpid())
	}
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(dir, "rollcall-"+prefix+"-"+hex.EncodeToString(sum[:6])+".lock")
}

// acquireLock takes the lock at path without waiting and writes
// "user pid since" into it. When another session holds it, the error is
// ErrLocked and the holder is returned if the file names one.
func acquireLock(path, user string, since time.Time) (*hostLock, *LockHolder, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, readLockHolder(path), fmt.Errorf("host lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, readLockHolder(path), ErrLocked
		}
		return nil, nil, fmt.Errorf("host lock %s: %w", path, err)
	}
	line := fmt.Sprintf("%s %d %s\n", user, os.Getpid(), since.UTC().Format(time.RFC3339))
	// Who holds it is for display only: a failed write leaves the lock held.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(line), 0)
	return &hostLock{f: f}, nil, nil
}

// release empties the file (so nobody reads a stale holder) and unlocks.
func (h *hostLock) release() {
	_ = h.f.Truncate(0)
	_ = unix.Flock(int(h.f.Fd()), unix.LOCK_UN)
	h.f.Close()
}

// readLockHolder reads who holds the lock at path. An empty file, one that
// does not parse, or one naming a process that is gone names nobody.
func readLockHolder(path string) *LockHolder {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
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

// takeLock takes the host lock for an acting mode. Without it the session
// drops to watch and shows who holds it. Until the engine has said which it
// is, the default lock path is unknown and the attempt waits for the next
// list.
func (l *loop) takeLock() {
	if l.lock != nil {
		return
	}
	path := l.opts.LockPath
	if path == "" {
		if !l.infoOK {
			return
		}
		path = DefaultLockPath(l.info, l.prefix)
	}
	l.lockPath = path
	lk, holder, err := acquireLock(path, l.opts.User, l.now())
	if err != nil {
		l.holder = holder
		l.lockErr = err.Error()
		was := l.mode
		l.mode = ModeWatch
		clear(l.approved)
		if holder != nil {
			l.note("%s needs the host lock, held by %s: watching instead", was, holder)
		} else {
			l.note("%s needs the host lock: %v: watching instead", was, err)
		}
		return
	}
	l.lock, l.holder, l.lockErr = lk, nil, ""
}

func (l *loop) releaseLock() {
	if l.lock != nil {
		l.lock.release()
		l.lock = nil
	}
}

// readHolder refreshes who holds the lock, for a session that does not.
func (l *loop) readHolder() {
	if l.lock != nil {
		l.holder = nil
		return
	}
	path := l.opts.LockPath
	if path == "" && l.infoOK {
		path = DefaultLockPath(l.info, l.prefix)
	}
	if path == "" {
		return
	}
	l.lockPath = path
	l.holder = readLockHolder(path)
}
