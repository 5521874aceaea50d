package session

import (
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/state"
)

// heldFile is the one hold the state directory dir keeps, once it is
// written down.
func heldFile(t *testing.T, h *harness, dir string) Hold {
	t.Helper()
	info, err := h.opts.Client.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var got []Hold
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if got, err = ListHolds(dir, info, pfx); err == nil && len(got) == 1 {
			return got[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("holds file: %+v %v, want one hold", got, err)
	return Hold{}
}

// A hold keeps what put it, typed, in the session and in the holds file:
// a canary that failed its analysis is canary-abort (not the operator's,
// as the rollback that puts its hold is no step of failure_action's), an
// operator's rollback is the operator's, failure_action's is
// failure-action.
func TestHoldKeepsItsCause(t *testing.T) {
	t.Run("canary-abort", func(t *testing.T) {
		f, clock := newEngine()
		seed(t, f, clock, desiredYAML("web:v1", 2))
		c := newCohortStandIn(t, f)
		c.set(func(c *cohortStandIn) { c.canaryErrs = 2 }) // 20%
		h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
		dir := t.TempDir()
		h.opts.StateDir, h.opts.Client = dir, notSimulated{f}
		h.start()
		h.drive("the canary rolled back", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
		got := heldFile(t, h, dir)
		if got.Cause != state.HoldByCanaryAbort || !strings.Contains(got.Reason, "error rate") {
			t.Errorf("hold %+v, want cause canary-abort with the judgement", got)
		}
	})
	t.Run("operator", func(t *testing.T) {
		f, clock := newEngine()
		seed(t, f, clock, desiredYAML("web:v1", 1))
		dir := t.TempDir()
		h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
		h.opts.StateDir, h.opts.Client = dir, notSimulated{f}
		h.start()
		h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
		h.s.Do(Rollback{Workload: "web"})
		if got := heldFile(t, h, dir); got.Cause != state.HoldByOperator || got.By != "tester" {
			t.Errorf("hold %+v, want cause operator, by tester", got)
		}
	})
	t.Run("failure-action", func(t *testing.T) {
		f, clock := newEngine()
		f.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
		yaml := func(image string) string {
			return strings.Replace(desiredYAML(image, 1, "failure_action: rollback"), "health_deadline: 10s", "health_deadline: 3250ms", 1)
		}
		seed(t, f, clock, yaml("web:v1"))
		dir := t.TempDir()
		h := newHarness(t, f, clock, yaml("web:bad"), ModeAuto)
		h.opts.StateDir, h.opts.Client = dir, notSimulated{f}
		h.start()
		h.drive("the rollback", func(s Snapshot) bool { return len(s.RolledBack) == 1 && s.Steady })
		if got := heldFile(t, h, dir); got.Cause != state.HoldByFailureAction || !strings.HasPrefix(got.Reason, "web/0") {
			t.Errorf("hold %+v, want cause failure-action naming the step", got)
		}
	})
}
