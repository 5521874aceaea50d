package session

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/state"
)

// A gated session (one host of a fleet) runs nothing in auto until its
// gate opens, says why in its snapshot, and then runs its plan.
func TestGateHoldsUntilOpen(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto)
	h.opts.Gated = true
	h.start()

	h.waitFor("a plan", func(s Snapshot) bool { return len(s.Plan.Executable()) == 2 })
	snap := h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("a closed gate let steps run: %q", m)
	}
	if snap.Gated == "" || !strings.HasPrefix(snap.Waiting, "gated: ") {
		t.Errorf("Gated %q, Waiting %q: want the closed gate said", snap.Gated, snap.Waiting)
	}

	h.s.Do(Gate{Open: true})
	snap = h.drive("the plan to run", func(s Snapshot) bool { return s.Steady && s.Progress.Done() && s.Progress.Total == 2 })
	if snap.Gated != "" {
		t.Errorf("Gated %q after the gate opened", snap.Gated)
	}
	if n := countPrefix(f.Mutations(), "create:"); n != 2 {
		t.Errorf("mutations %q: want the two starts", f.Mutations())
	}
}

// Closing the gate stops new steps (the why is the caller's), and a new
// desired state closes a gated session's gate again as it loads, before
// any of it runs.
func TestGateClosesOnNewDesired(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto)
	h.opts.Gated = true
	h.start()
	h.s.Do(Gate{Open: true})
	h.waitFor("the gate open and steady", func(s Snapshot) bool { return s.Gated == "" && s.Steady })

	h.s.Do(Gate{Why: "wave 2 waits for the canary"})
	h.waitFor("the gate closed", func(s Snapshot) bool { return s.Gated == "wave 2 waits for the canary" })
	h.src.Set(desiredYAML("web:v2", 2))
	h.waitFor("the new desired state's plan", func(s Snapshot) bool {
		return s.Desired != nil && s.Desired.Workloads["web"].Image == "web:v2" && len(s.Plan.Executable()) > 0
	})
	h.s.Do(Gate{Open: true})
	h.waitFor("the gate open", func(s Snapshot) bool { return s.Gated == "" })
	// Opened: the next desired state closes it again by itself.
	h.src.Set(desiredYAML("web:v2", 3))
	snap := h.waitFor("the gate closed by the load", func(s Snapshot) bool {
		return s.Desired != nil && s.Desired.Workloads["web"].Replicas == 3 && s.Gated != ""
	})
	if snap.Gated != gateWaiting {
		t.Errorf("Gated %q, want %q", snap.Gated, gateWaiting)
	}
	// While it was open, a step may have begun (auto mode): that one may
	// end; nothing may begin behind the closed gate.
	creates := countPrefix(f.Mutations(), "create:")
	inFlight := len(snap.RunningSteps)
	h.settle()
	if n := countPrefix(f.Mutations(), "create:"); n > creates+inFlight {
		t.Fatalf("a step ran behind a closed gate: %d creates when it closed (%d steps in flight), %d after: %q", creates, inFlight, n, f.Mutations())
	}
}

// Opening the gate never lifts a failure's pause (failure_action pause):
// only Resume does.
func TestGateDoesNotLiftFailurePause(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	f.AddImage("web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Hour}) // never healthy in time
	h := newHarness(t, f, clock, desiredYAML("web:v3", 2, "failure_action: pause"), ModeAuto)
	h.opts.Gated = true
	h.start()
	h.s.Do(Gate{Open: true})
	h.waitFor("the new container", func(s Snapshot) bool { return running(s, "web:v3") == 1 })
	h.clock.Advance(11 * time.Second)
	f.Tick()
	h.s.Do(Refresh{})
	h.waitFor("the failure's pause", func(s Snapshot) bool { return s.Pause != nil && !s.Pause.ByOperator })
	before := len(f.Mutations())

	h.s.Do(Gate{Why: "the fleet holds"})
	h.s.Do(Gate{Open: true})
	h.waitFor("the gate open again", func(s Snapshot) bool { return s.Gated == "" })
	snap := h.settle()
	if snap.Pause == nil || snap.Pause.ByOperator {
		t.Fatalf("opening the gate lifted the failure's pause:\n%s", describe(snap))
	}
	if m := f.Mutations(); len(m) != before {
		t.Errorf("steps ran while paused: %q", m[before:])
	}
}

// Host and Rollout are on every journal line of a fleet's session: its
// steps' two lines and its decisions.
func TestJournalHostAndRollout(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep)
	path := h.withJournal()
	h.opts.Host, h.opts.Rollout = "edge-1", func() string { return "r-1" }
	h.start()
	h.waitFor("a plan", func(s Snapshot) bool { return len(s.Plan.Executable()) == 1 })
	h.s.Do(ApproveRollout{})
	h.drive("the start", func(s Snapshot) bool { return s.Steady && s.Progress.Done() })
	entries, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, e := range entries {
		kinds[e.Result] = true
		if e.Host != "edge-1" || e.Rollout != "r-1" {
			t.Errorf("line %+v: want host edge-1 and rollout r-1", e)
		}
	}
	if !kinds[journal.ResultStarted] || !kinds[journal.ResultOK] || !kinds[journal.ResultDecision] {
		t.Errorf("journal results %v: want a step's two lines and a decision", kinds)
	}
}

// A caller that takes and lets go of the lock itself (HeldLock): the
// session watches while it hands none over, and acts under the one it
// hands over.
func TestHeldLock(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	var given atomic.Pointer[Lock]
	h.opts.HeldLock = given.Load
	h.start()
	snap := h.settle()
	if snap.Mode != ModeWatch || snap.Lock.Held || len(f.Mutations()) != 0 {
		t.Fatalf("mode %s, lock held %v, mutations %q: want watch without a lock", snap.Mode, snap.Lock.Held, f.Mutations())
	}
	lk, _, err := state.TakeLock(filepath.Join(t.TempDir(), "fleet.lock"), "fleet", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	given.Store(lk)
	h.s.Do(SetMode{Mode: ModeAuto})
	snap = h.drive("the start under the caller's lock", func(s Snapshot) bool { return s.Lock.Held && s.Steady && s.Progress.Done() })
	if snap.Lock.Path != lk.Path {
		t.Errorf("lock %q, want the caller's %q", snap.Lock.Path, lk.Path)
	}
}
