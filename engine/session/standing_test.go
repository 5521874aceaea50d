package session

import (
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/state"
	"strings"
	"testing"
	"time"
)

// The standing is decided once, by the session: converged once the
// desired state is reached, and a relist alone never moves it (a reader
// would see a converged session turn undone at each resync), though it
// is marked Pending while the relist is under way.
func TestStandingIsDecidedOnce(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto)
	h.start()
	h.drive("converged", func(s Snapshot) bool { return s.Standing.Kind == StandingConverged && !s.Standing.Pending })
	for range 5 {
		clock.Advance(time.Second)
		h.s.Do(Refresh{})
		after := clock.Now()
		h.waitFor("a relist", func(s Snapshot) bool {
			if s.Standing.Kind != StandingConverged {
				t.Fatalf("a relist moved the standing to %v (fresh %v)", s.Standing.Kind, s.Fresh)
			}
			return s.Fresh && !s.PlanAt.Before(after)
		})
	}
	if st := h.last.Standing; st.Kind != StandingConverged || st.Pending || len(st.Causes) != 0 {
		t.Fatalf("standing %+v after the relists, want converged, decided", st)
	}
}

// In step mode, a plan with steps to run and nothing approved stands
// awaiting approval, naming the next step; approved, it rolls; done, it
// has converged.
func TestStandingAwaitsTheOperatorInStepMode(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep)
	h.start()
	s := h.drive("awaiting approval", func(s Snapshot) bool { return s.Standing.Kind == StandingAwaitingApproval })
	c := s.Standing.Causes
	if len(c) != 1 || c[0].Kind != CauseApproval || c[0].Step == nil || c[0].Step.Key() != s.Next {
		t.Fatalf("causes %+v, want the next step (%s) awaiting approval", c, s.Next)
	}
	if !strings.Contains(s.Standing.Said(), "web/0") {
		t.Errorf("said %q, want the step's target", s.Standing.Said())
	}
	h.s.Do(ApproveStep{Key: s.Next})
	h.drive("converged", func(s Snapshot) bool { return s.Standing.Kind == StandingConverged && !s.Standing.Pending })
}

// A spec on hold that keeps the plan from the desired state stands held,
// with the hold's typed cause; apply's run ends on it, failed.
func TestStandingHeldNamesTheHoldsCause(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeAuto)
	h.start()
	h.drive("rolled", func(s Snapshot) bool { return s.Standing.Kind == StandingConverged && !s.Standing.Pending })
	h.s.Do(Rollback{Workload: "web"})
	s := h.drive("held", func(s Snapshot) bool { return s.Standing.Kind == StandingHeld && !s.Standing.Pending })
	var hold *Cause
	for i, c := range s.Standing.Causes {
		if c.Kind == CauseHold {
			hold = &s.Standing.Causes[i]
		}
	}
	if hold == nil || hold.Workload != "web" || hold.Hold != state.HoldByOperator {
		t.Fatalf("causes %+v, want web's hold, by the operator", s.Standing.Causes)
	}
	if why, over := judge(s.Standing, true); !over || !strings.Contains(why, "rolled back by the operator") {
		t.Fatalf("judge: %q, %v; want over, naming the operator's rollback", why, over)
	}
}

// A new container that missed its health deadline is in the standing
// (Failing, from Diff's plan) whatever the kind: with failure_action
// continue the session rolls on, and only Failing says a slot failed.
func TestStandingCarriesTheFailures(t *testing.T) {
	f, clock := newEngine()
	f.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	yaml := func(image string) string {
		return strings.Replace(desiredYAML(image, 2, "failure_action: continue"), "health_deadline: 10s", "health_deadline: 3250ms", 1)
	}
	seed(t, f, clock, yaml("web:v1"))
	h := newHarness(t, f, clock, yaml("web:bad"), ModeAuto)
	h.start()
	s := h.drive("a failure in the standing", func(s Snapshot) bool { return len(s.Standing.Failing) > 0 })
	if fl := s.Standing.Failing[0]; fl.Workload != "web" || fl.Action != "continue" {
		t.Fatalf("failing %+v, want web's, failure_action continue", s.Standing.Failing)
	}
	if s.Pause != nil || len(s.Holds) > 0 {
		t.Fatalf("continue paused or held: pause %v holds %v", s.Pause, s.Holds)
	}
}
