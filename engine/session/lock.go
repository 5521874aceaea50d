package session

import (
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/state"
)

// The host lock itself is engine/state's; this file holds what the session
// decides about it: when to take it, let it go, and read who holds it. Each
// of those touches the lock file, so it runs on the lock worker beside the
// loop (lockJob), in order, and comes back as a lockDone.

// LockHolder is who holds a host lock, as its lock file says.
type LockHolder = state.LockHolder

// Lock is a host lock held by a caller, for a session to act under
// (Options.Lock): the demo stages and opens its console under one lock.
type Lock = state.Lock

// ErrLocked is the host lock held by another acting session.
var ErrLocked = state.ErrLocked

// AcquireLock takes the host lock of an engine and prefix without waiting:
// when it is held the error wraps ErrLocked and names the holder.
func AcquireLock(info docker.EngineInfo, prefix, user string) (*Lock, error) {
	return state.AcquireLock(info, prefix, user)
}

// DefaultLockPath is the host lock for an engine and prefix
// (state.DefaultLockPath): one file per engine identity and prefix.
func DefaultLockPath(info docker.EngineInfo, prefix string) string {
	return state.DefaultLockPath(info, prefix)
}

// lockPollEvery is how often a session without the lock reads who holds it,
// so a console that fell back to watch sees it come free.
const lockPollEvery = 2 * time.Second

// lockOp is what the lock worker does.
type lockOp int

const (
	lockTake    lockOp = iota // take the lock, without waiting
	lockRelease               // let go of job.lock
	lockRead                  // read who holds it
)

// lockJob is one operation on the lock file, run by the lock worker.
type lockJob struct {
	op   lockOp
	gen  uint64 // lockTake: the loop's lockGen as it asked
	path string // "" means the default path of info and prefix
	info docker.EngineInfo
	// prefix and user: whose lock, and who takes it.
	prefix, user string
	since        time.Time
	lock         *state.Lock // lockRelease
}

// lockDone is what came of a lockJob.
type lockDone struct {
	job    lockJob
	path   string
	lock   *state.Lock // lockTake: the lock taken; nil when not
	holder *state.LockHolder
	err    error
}

// lockFiles is the lock worker: it runs one lock job at a time, beside
// the loop, and knows the locks this session took and has not let go of
// yet, the loop's or not (a take the loop no longer wants is let go of
// only once the loop saw it). Only the worker's goroutine touches it.
type lockFiles struct {
	held map[*state.Lock]bool
}

func newLockFiles() *lockFiles { return &lockFiles{held: map[*state.Lock]bool{}} }

// lockWorker is what the session's lock worker runs.
func (s *Session) lockWorker() func(lockJob) lockDone {
	do := newLockFiles().do
	if s.lockWrap != nil {
		return s.lockWrap(do)
	}
	return do
}

// do runs one lock job.
func (w *lockFiles) do(j lockJob) lockDone {
	path := j.path
	if path == "" && j.op != lockRelease {
		path = state.DefaultLockPath(j.info, j.prefix)
	}
	d := lockDone{job: j, path: path}
	switch j.op {
	case lockTake:
		d.lock, d.holder, d.err = state.TakeLock(path, j.user, j.since)
		if d.lock != nil {
			w.held[d.lock] = true
		}
	case lockRelease:
		j.lock.Release()
		delete(w.held, j.lock)
	case lockRead:
		// The file names this session while a take of its own holds it:
		// that is nobody else.
		if !w.holds(path) {
			d.holder = state.ReadLockHolder(path)
		}
	}
	return d
}

// holds: a lock this session took at path is not let go of yet.
func (w *lockFiles) holds(path string) bool {
	for lk := range w.held {
		if lk.Path == path && lk.Held() {
			return true
		}
	}
	return false
}

// takeLock asks for the host lock for an acting mode; onLock takes the
// answer in. Until the engine has said which it is, the default lock path
// is unknown and the attempt waits for the next list. One take is on the
// worker at a time: while one is, a new one waits for it to come back
// (onLockTaken), so a take the loop no longer wants is let go of before
// the next one runs, and the session never finds the lock held by itself.
func (l *loop) takeLock() {
	if l.lockHeld() || l.lockTaking {
		return
	}
	if l.callerLocks() {
		lk := l.callerLock()
		if !lk.Held() {
			l.lockErr = "the host lock handed to this session was released"
			if lk == nil {
				l.lockErr = "the caller holds no host lock for this session"
			}
			l.mode = ModeWatch
			return
		}
		l.lock, l.lockPath, l.holder, l.lockErr = lk, lk.Path, nil, ""
		return
	}
	if l.opts.LockPath == "" && !l.infoOK {
		return
	}
	l.lockTaking = true
	l.locks.Push(lockJob{op: lockTake, gen: l.lockGen, path: l.opts.LockPath, info: l.info, prefix: l.prefix,
		user: l.opts.User, since: l.engineNow()})
}

// releaseLock lets go of the host lock, and of any take still in flight:
// what it brings back is let go of too (a take from an older generation,
// onLockTaken). The session stops acting under it at once; it holds it (the
// snapshot says so) until the worker let go.
func (l *loop) releaseLock() {
	l.lockGen++
	if l.callerLocks() {
		l.lock = nil // the caller's: it releases it; taken again from it
		return
	}
	if l.lock != nil && !l.lockLetGo {
		l.lockLetGo = true
		l.locks.Push(lockJob{op: lockRelease, lock: l.lock})
	}
}

// callerLocks: the caller takes and lets go of the host lock
// (Options.Lock, Options.HeldLock); the session only acts under it.
func (l *loop) callerLocks() bool { return l.opts.Lock != nil || l.opts.HeldLock != nil }

// callerLock is the lock the caller holds for the session (nil: none now).
func (l *loop) callerLock() *Lock {
	if l.opts.HeldLock != nil {
		return l.opts.HeldLock()
	}
	return l.opts.Lock
}

// lockHeld: the session holds the host lock and acts under it (it is not
// being let go of).
func (g *guards) lockHeld() bool { return g.lock != nil && !g.lockLetGo }

// readHolder asks who holds the lock, for a session that does not hold
// it: one read at a time. A lock its caller holds (a watching demo) is
// nobody else's: its file names this process.
func (l *loop) readHolder() {
	if l.lock != nil {
		l.holder = nil
		return
	}
	if l.callerLocks() {
		if lk := l.callerLock(); lk.Held() {
			l.holder, l.lockPath = nil, lk.Path
			return
		}
	}
	if l.holderReading || l.opts.LockPath == "" && !l.infoOK {
		return
	}
	l.holderReading = true
	l.locks.Push(lockJob{op: lockRead, path: l.opts.LockPath, info: l.info, prefix: l.prefix})
}

// onLock takes in what the lock worker did.
func (l *loop) onLock(d lockDone) {
	switch d.job.op {
	case lockTake:
		l.onLockTaken(d)
	case lockRelease:
		if d.job.lock == l.lock {
			l.lock, l.lockLetGo = nil, false
		}
	case lockRead:
		l.holderReading = false
		if l.lock != nil {
			l.holder = nil
			return
		}
		l.lockPath = d.path
		l.onHolderRead(d.holder)
	}
}

// onLockTaken takes in a take of the lock: held, the session acts under
// it; refused, it drops to watch and shows who holds it. A take the loop
// no longer wants (asked before a release: the mode or the prefix changed
// meanwhile) is let go of, its answer (held or refused) is not the
// session's, and an acting mode that still wants the lock takes it again,
// after that release on the worker.
func (l *loop) onLockTaken(d lockDone) {
	l.lockTaking = false
	if d.job.gen != l.lockGen || !l.mode.Acting() || l.lockHeld() {
		if d.lock != nil {
			l.locks.Push(lockJob{op: lockRelease, lock: d.lock})
		}
		if l.mode.Acting() {
			l.takeLock()
		}
		return
	}
	l.lockPath = d.path
	if d.err != nil {
		l.holder = d.holder
		l.lockErr = d.err.Error()
		was := l.mode
		l.mode = ModeWatch
		clear(l.approved)
		l.fact(Fact{Kind: FactLockRefused, Lock: &LockFact{Path: d.path, Holder: d.holder, Err: d.err.Error(), Wanted: was}})
		return
	}
	l.lock, l.holder, l.lockErr, l.lockFree = d.lock, nil, "", false
	l.fact(Fact{Kind: FactLockTaken, Lock: &LockFact{Path: d.path}})
	l.act() // a plan in hand may run now
}

// onHolderRead takes in who holds the lock, and says when the lock this
// session wanted came free: SetMode then takes it.
func (l *loop) onHolderRead(h *state.LockHolder) {
	if freed, was := l.holderRead(h); freed {
		l.fact(Fact{Kind: FactLockFree, Lock: &LockFact{Path: l.lockPath, Holder: was}})
	}
}

// holderRead takes in who holds the lock (h, nil: nobody); freed: the
// lock this session wanted just came free, from was.
func (g *guards) holderRead(h *state.LockHolder) (freed bool, was *state.LockHolder) {
	was = g.holder
	g.holder = h
	if g.lockErr == "" {
		return false, was
	}
	free := h == nil
	freed = free && !g.lockFree
	g.lockFree = free
	return freed, was
}

// armLockPoll keeps the lock poll going only while it has something to
// find: a session that holds the lock, or never wanted it, does not wake.
func (g *guards) armLockPoll() {
	switch need := g.lock == nil && g.lockErr != ""; {
	case need && !g.lockPoll.Armed():
		g.lockPoll.Set(lockPollEvery)
	case !need && g.lockPoll.Armed():
		g.lockPoll.Stop()
	}
}

// pollLock reads the lock holder again while another session holds the
// lock this one wanted.
func (l *loop) pollLock() {
	if l.lock != nil || l.lockErr == "" {
		return
	}
	l.readHolder()
}
