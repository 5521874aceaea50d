package session

import (
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

// Lock is a host lock held by a caller, for a session to act under
// (Options.Lock): the demo stages and opens its console under one lock.
type Lock struct {
	Path string
	h    *hostLock
}

// Release frees the lock.
func (l *Lock) Release() {
	if l != nil && l.h != nil {
		l.h.release()
		l.h = nil
	}
}

// AcquireLock takes the host lock of an engine and prefix without waiting:
// when it is held the error wraps ErrLocked and names the holder.
func AcquireLock(info docker.EngineInfo, prefix, user string) (*Lock, error) {
	path := DefaultLockPath(info, prefix)
	h, holder, err := acquireLock(path, user, time.Now())
	switch {
	case errors.Is(err, ErrLocked) && holder != nil:
		return nil, fmt.Errorf("host lock %s: held by %s: %w", path, holder, ErrLocked)
	case errors.Is(err, ErrLocked):
		return nil, fmt.Errorf("host lock %s: %w", path, ErrLocked)
	case err != nil:
		return nil, err
	}
	return &Lock{Path: path, h: h}, nil
}

// DefaultLockPath is the host lock for an engine and prefix: one file per
// engine and prefix under /run/lock when it is writable (host-wide, so two
// operators of one host share it), else the temp directory. The engine is
// named by its identity (the ID of `docker info`), not by the endpoint, so
// two paths to one engine (a socket and a link to it, a tcp relay) share
// one lock. A simulated engine lives in one process, so its lock is per
// process too.
func DefaultLockPath(info docker.EngineInfo, prefix string) string {
	dir := os.TempDir()
	if unix.Access("/run/lock", unix.W_OK) == nil {
		dir = "/run/lock"
	}
	return filepath.Join(dir, "rollcall-"+prefix+"-"+engineKey(info)+".lock")
}

// lockPollEvery is how often a session without the lock reads who holds it,
// so a console that fell back to watch sees it come free.
const lockPollEvery = 2 * time.Second

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
	if lk := l.opts.Lock; lk != nil {
		if lk.h == nil {
			l.lockErr = "the host lock handed to this session was released"
			l.mode = ModeWatch
			return
		}
		l.lock, l.lockPath, l.holder, l.lockErr = lk.h, lk.Path, nil, ""
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
		l.log(levelError, "host lock held elsewhere: watching instead", "lock", path, "error", err.Error())
		return
	}
	if l.lockErr != "" {
		l.note("took the host lock")
	}
	l.lock, l.holder, l.lockErr, l.lockFree = lk, nil, "", false
	l.log(levelInfo, "host lock taken", "lock", path)
	l.decision("lock-taken", "", path)
}

func (l *loop) releaseLock() {
	if l.opts.Lock != nil {
		l.lock = nil // the caller's: it releases it; taken again from it
		return
	}
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

// armLockPoll keeps the lock poll going only while it has something to
// find: a session that holds the lock, or never wanted it, does not wake.
func (l *loop) armLockPoll() {
	switch need := l.lock == nil && l.lockErr != ""; {
	case need && !l.lockPoll.armed():
		l.lockPoll.set(lockPollEvery)
	case !need && l.lockPoll.armed():
		l.lockPoll.stop()
	}
}

// pollLock re-reads the lock holder while another session holds the lock
// this one wanted, and says when it comes free: SetMode then takes it.
func (l *loop) pollLock() {
	if l.lock != nil || l.lockErr == "" {
		return
	}
	was := l.holder
	l.readHolder()
	free := l.holder == nil
	if free && !l.lockFree {
		if was != nil {
			l.note("the host lock is free (%s let go): switch to step or auto to take it", was.User)
		} else {
			l.note("the host lock is free: switch to step or auto to take it")
		}
	}
	l.lockFree = free
}
