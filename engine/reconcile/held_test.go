package reconcile

import (
	"slices"
	"testing"
)

// TestHeldSlotsAreTyped: the slots a hold keeps from starting are data on
// the workload's plan (Held, with the spec HeldSpec), not only a note, so a
// caller can tell "converged" from "held" without reading text (§9).
func TestHeldSlotsAreTyped(t *testing.T) {
	d := resolved(workload("web", 2))
	hash := d.Workload("web").Hash
	o := observed(stale(d, "web", 0), fresh(d, "web", 1))
	o.Holds = map[string]map[string]bool{"web": {hash: true}}
	p := Diff(d, o)
	if !p.Empty() {
		t.Fatalf("held plan has steps: %q", briefs(p))
	}
	if len(p.Workloads) != 1 || !slices.Equal(p.Workloads[0].Held, []int{0}) || p.Workloads[0].HeldSpec != hash {
		t.Fatalf("held %+v, want slot 0 held on %s", p.Workloads, hash)
	}
	// No hold: nothing held.
	o.Holds = nil
	for _, w := range Diff(d, o).Workloads {
		if len(w.Held) > 0 || w.HeldSpec != "" {
			t.Errorf("no hold, yet %s holds %v on %q", w.Name, w.Held, w.HeldSpec)
		}
	}
}
