package session

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/state"
)

// Leaving an acting mode lets go of the lock; coming back takes it again.
func TestWatchReleasesTheLock(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	h.waitFor("the lock", func(s Snapshot) bool { return s.Lock.Held })
	h.s.Do(SetMode{Mode: ModeWatch})
	h.waitFor("the release", func(s Snapshot) bool { return !s.Lock.Held && s.Mode == ModeWatch })
	lk, _, err := state.TakeLock(h.opts.LockPath, "probe", time.Now())
	if err != nil {
		t.Fatalf("the lock is still held in watch mode: %v", err)
	}
	lk.Release()
	h.s.Do(SetMode{Mode: ModeAuto})
	h.waitFor("the lock again", func(s Snapshot) bool { return s.Lock.Held && s.Mode == ModeAuto })
}

// The lock is polled only while another session holds it: a session that
// holds it, or watches without wanting it, has nothing to find and does
// not wake for it (an idle console draws nothing).
func TestLockPollRunsOnlyWhileAnotherHoldsTheLock(t *testing.T) {
	l := &loop{}
	defer l.lockPoll.Stop()
	l.armLockPoll()
	if l.lockPoll.Armed() {
		t.Error("polled in watch mode, with no lock wanted")
	}
	l.lockErr = "held by ops (pid 42)"
	l.armLockPoll()
	if !l.lockPoll.Armed() {
		t.Error("not polled while another session holds the lock")
	}
	l.lock, l.lockErr = &state.Lock{}, ""
	l.armLockPoll()
	if l.lockPoll.Armed() {
		t.Error("polled while holding the lock")
	}
}

// Watch then auto right after the start, while the first take of the lock
// is still on the lock worker: the session ends in auto under the lock,
// and never names itself as the lock's holder.
func TestWatchThenAutoRightAfterStartTakesTheLock(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto).start()
	h.waitFor("the first snapshot", func(Snapshot) bool { return true })
	h.s.Do(SetMode{Mode: ModeWatch})
	h.s.Do(SetMode{Mode: ModeAuto})
	snap := h.waitFor("auto under the lock, or a fall back to watch", func(s Snapshot) bool {
		return s.Mode == ModeAuto && s.Lock.Held || s.Mode == ModeWatch && s.Lock.Err != ""
	})
	if snap.Mode != ModeAuto || !snap.Lock.Held || snap.Lock.Holder != nil || hasNote(snap, "needs the host lock") {
		t.Fatalf("mode %s, lock held %v, holder %+v, error %q; want auto under the lock\n%s",
			snap.Mode, snap.Lock.Held, snap.Lock.Holder, snap.Lock.Err, describe(snap))
	}
}

// lockGate holds the session's first take of the lock on the lock worker,
// once it ran, until open is called: the loop goes on meanwhile, so what
// it does while a take is in flight is certain, not a matter of timing.
type lockGate struct {
	ran  chan struct{} // closed once the first take ran
	gate chan struct{}
	once sync.Once
}

func (g *lockGate) open() { g.once.Do(func() { close(g.gate) }) }

// startGated starts the session as start does, its first take of the lock
// held by the gate it returns.
func (h *harness) startGated() *lockGate {
	h.t.Helper()
	g := &lockGate{ran: make(chan struct{}), gate: make(chan struct{})}
	h.s = New(h.opts)
	first := true // the worker's goroutine alone reads and writes it
	h.s.lockWrap = func(do func(lockJob) lockDone) func(lockJob) lockDone {
		return func(j lockJob) lockDone {
			d := do(j)
			if j.op == lockTake && first {
				first = false
				close(g.ran)
				<-g.gate
			}
			return d
		}
	}
	h.run()
	h.t.Cleanup(g.open) // first: a test that failed early lets the worker go
	select {
	case <-g.ran:
	case <-time.After(waitLimit):
		h.t.Fatal("the session never took the lock")
	}
	return g
}

// Watch then auto while the first take of the lock is on the worker (it
// took the lock): that take is the older generation's, let go of, and the
// lock taken again after; the session ends in auto under the lock, never
// "held by" itself. Before, a second take ran beside the first and found
// the lock held, by this process.
func TestStaleTakeIsLetGoBeforeTheNextTake(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	g := h.startGated()
	h.s.Do(SetMode{Mode: ModeWatch})
	h.waitFor("watch", func(s Snapshot) bool { return s.Mode == ModeWatch })
	h.s.Do(SetMode{Mode: ModeAuto})
	h.waitFor("auto, the lock not yet held", func(s Snapshot) bool { return s.Mode == ModeAuto && !s.Lock.Held })
	g.open()
	snap := h.waitFor("auto under the lock, or a fall back to watch", func(s Snapshot) bool {
		return s.Mode == ModeAuto && s.Lock.Held || s.Mode == ModeWatch && s.Lock.Err != ""
	})
	if snap.Mode != ModeAuto || !snap.Lock.Held || snap.Lock.Holder != nil || hasNote(snap, "needs the host lock") {
		t.Fatalf("mode %s, lock held %v, holder %+v, error %q; want auto under the lock\n%s",
			snap.Mode, snap.Lock.Held, snap.Lock.Holder, snap.Lock.Err, describe(snap))
	}
}

// A take from an older generation is not the session's answer, refused or
// not: refused while another held the lock, it came back after the
// operator went to watch, the other let go, and the operator asked for
// auto again. The session takes the lock, now free, rather than fall back
// to watch on the old refusal.
func TestTakeFromAnOlderGenerationIsNotTheAnswer(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	other, _, err := state.TakeLock(h.opts.LockPath, "alice", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	g := h.startGated() // the take ran, refused: alice holds the lock
	h.s.Do(SetMode{Mode: ModeWatch})
	h.waitFor("watch", func(s Snapshot) bool { return s.Mode == ModeWatch })
	other.Release()
	h.s.Do(SetMode{Mode: ModeAuto})
	h.waitFor("auto, the lock not yet held", func(s Snapshot) bool { return s.Mode == ModeAuto && !s.Lock.Held })
	g.open()
	snap := h.waitFor("auto under the lock, or a fall back to watch", func(s Snapshot) bool {
		return s.Mode == ModeAuto && s.Lock.Held || s.Mode == ModeWatch && s.Lock.Err != ""
	})
	if snap.Mode != ModeAuto || !snap.Lock.Held || hasNote(snap, "alice") {
		t.Fatalf("mode %s, lock held %v, holder %+v, error %q; want auto under the lock, alice's refusal gone\n%s",
			snap.Mode, snap.Lock.Held, snap.Lock.Holder, snap.Lock.Err, describe(snap))
	}
}

// A session that went to watch while its take was on the worker reads who
// holds the lock before that take is let go of: the file names this
// session, which is nobody else; the holder is none.
func TestWatchNeverNamesItsOwnStaleTakeAsHolder(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	g := h.startGated()
	h.s.Do(SetMode{Mode: ModeWatch})
	// Listed, the session asked who holds the lock: that read waits
	// behind the take on the worker.
	h.waitFor("watch, listed", func(s Snapshot) bool { return s.Mode == ModeWatch && !s.PlanAt.IsZero() })
	g.open()
	// The lock's path is known once the read came back (the take, no
	// longer wanted, does not set it).
	snap := h.waitFor("the holder read", func(s Snapshot) bool { return s.Lock.Path != "" })
	if snap.Lock.Holder != nil || snap.Lock.Held || snap.Mode != ModeWatch {
		t.Fatalf("mode %s, held %v, holder %+v: want watch, held by nobody", snap.Mode, snap.Lock.Held, snap.Lock.Holder)
	}
}

// A session acting under its caller's lock (the demo's) names nobody as
// the holder while it watches: the file names this process, not another.
// So `demo --watch`, or a demo switched to watch, never says it is locked
// out by itself.
func TestCallersLockIsNoOtherHolder(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch)
	lk, _, err := state.TakeLock(h.opts.LockPath, "demo", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	h.opts.Lock = lk
	h.start()
	snap := h.waitFor("the lock's path", func(s Snapshot) bool { return s.Lock.Path != "" && !s.PlanAt.IsZero() })
	if snap.Lock.Holder != nil || snap.Lock.Path != lk.Path {
		t.Fatalf("demo --watch: holder %+v, path %q; want nobody, %q", snap.Lock.Holder, snap.Lock.Path, lk.Path)
	}
	h.s.Do(SetMode{Mode: ModeStep})
	h.waitFor("step under the caller's lock", func(s Snapshot) bool { return s.Mode == ModeStep && s.Lock.Held })
	h.s.Do(SetMode{Mode: ModeWatch})
	h.waitFor("watch again", func(s Snapshot) bool { return s.Mode == ModeWatch && !s.Lock.Held })
	if snap := h.settle(); snap.Lock.Holder != nil {
		t.Fatalf("a demo switched to watch names %+v as the holder", snap.Lock.Holder)
	}
}

// A console opened read-only (--watch), which never wants the lock, beside
// another process's session that holds it, names that one: its user and
// pid, never this process. (Issue 29 saw `demo --watch` name itself; the
// caller's-lock case is TestCallersLockIsNoOtherHolder.)
func TestWatchNamesTheOtherHolder(t *testing.T) {
	other := exec.Command("sleep", "30") // the other rollcall's process
	if err := other.Start(); err != nil {
		t.Fatalf("start a process to hold the lock: %v", err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch)
	lk, _, err := state.TakeLock(h.opts.LockPath, "agent", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	since := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	// The flock stays this test's; the file names the other process, as
	// its own take would have written it.
	line := fmt.Sprintf("agent %d %s\n", other.Process.Pid, since.Format(time.RFC3339))
	if err := os.WriteFile(h.opts.LockPath, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	snap := h.waitFor("the holder read", func(s Snapshot) bool { return s.Lock.Holder != nil })
	if hd := snap.Lock.Holder; hd.PID != other.Process.Pid || hd.User != "agent" || !hd.Since.Equal(since) || snap.Lock.Held || snap.Mode != ModeWatch {
		t.Fatalf("watch beside another holder: holder %+v, held %v, mode %s; want agent (pid %d), not held, watch",
			hd, snap.Lock.Held, snap.Mode, other.Process.Pid)
	}
	if snap.Lock.Holder.PID == os.Getpid() {
		t.Fatalf("watch names itself (pid %d) as the lock's holder", os.Getpid())
	}
}
