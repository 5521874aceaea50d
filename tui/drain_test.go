package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// A roll that drains says so where the running step shows (issue 13):
// "draining web-0-… (pre_stop ran, 3s left)".
func TestRunningStepShowsItsDrain(t *testing.T) {
	s := midRoll()
	step := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 0, Container: "rollcall-web-0-1111aaaa"}
	s.Running = &session.StepRun{Step: step, Since: s.At,
		Drain: &reconcile.DrainProgress{Step: step, PreStopRan: true, Until: s.At.Add(3 * time.Second)}}
	b := newBoard(s)
	if !strings.Contains(b.doing, "draining rollcall-web-0-1111aaaa (pre_stop ran, 3s left)") {
		t.Fatalf("the running step reads %q", b.doing)
	}
}
