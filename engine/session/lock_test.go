package session

import (
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
	defer l.lockPoll.stop()
	l.armLockPoll()
	if l.lockPoll.armed() {
		t.Error("polled in watch mode, with no lock wanted")
	}
	l.lockErr = "held by ops (pid 42)"
	l.armLockPoll()
	if !l.lockPoll.armed() {
		t.Error("not polled while another session holds the lock")
	}
	l.lock, l.lockErr = &state.Lock{}, ""
	l.armLockPoll()
	if l.lockPoll.armed() {
		t.Error("polled while holding the lock")
	}
}
