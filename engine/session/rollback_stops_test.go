package session

import (
	"context"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// The operator's rollback stops are the operator's, to their end: once its
// stop of the new container is done, the session does not take it for
// failure_action's rollback (listed in RolledBack, which the webhooks post
// as a rollback by failure_action, its spec held again). The spec stays on
// hold once, by the operator's rollback.
func TestOperatorRollbackStopIsNotFailureActions(t *testing.T) {
	for _, mode := range []Mode{ModeStep, ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			f, clock := newEngine()
			seed(t, f, clock, desiredYAML("web:v1", 2))
			v2 := desiredYAML("web:v2", 2)
			d, err := load.Parse("v2.yaml", []byte(v2))
			if err != nil {
				t.Fatal(err)
			}
			r := spec.Resolve(context.Background(), d, f)
			hash := r.Workload("web").Hash
			// Slot 1 mid-roll: its v2 container runs beside the v1 one.
			if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 1)); err != nil {
				t.Fatal(err)
			}
			f.ResetCalls()
			h := newHarness(t, f, clock, v2, mode)
			h.start()
			if mode == ModeAuto {
				h.s.Do(Pause{})
				h.waitFor("the pause", func(s Snapshot) bool { return s.Pause != nil && s.Fresh })
			} else {
				h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
			}
			h.s.Do(Rollback{Workload: "web"})
			h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
			snap := h.settle()
			newName := reconcile.ContainerName(pfx, "web", 1, hash)
			if m := f.Mutations(); !slices.Contains(m, "stop:"+newName) {
				t.Fatalf("mutations %q: the rollback never stopped %s", m, newName)
			}
			if len(snap.RolledBack) != 0 {
				t.Errorf("the operator's rollback is listed as failure_action's: %+v", snap.RolledBack)
			}
			if hs := snap.Holds["web"]; !slices.Equal(hs, []string{hash}) {
				t.Errorf("holds %v, want web's spec %s on hold once", snap.Holds, short(hash))
			}
		})
	}
}
