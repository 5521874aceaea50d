package session

import (
	"path/filepath"
	"testing"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/source"
)

// With no desired state at all there is no plan: a missing file must not
// read as "every container is extra".
func TestNoDesiredStateMeansNoPlan(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, "", ModeAuto)
	h.opts.Source = source.File(filepath.Join(t.TempDir(), "none.yaml"))
	h.start()
	snap := h.waitFor("a list", func(s Snapshot) bool { return s.Connected && len(s.Containers) == 2 })
	if snap.SourceErr == nil || snap.Desired != nil || !snap.Plan.Empty() {
		t.Fatalf("source err %v, desired %v, plan:\n%s", snap.SourceErr, snap.Desired, snap.Plan)
	}
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("acted without a desired state: %q", m)
	}
	for _, v := range h.last.Slots {
		if v.Desired != nil || v.Containers[0].Relation != reconcile.RelUnknown {
			t.Errorf("slot %+v", v)
		}
	}
}

// A later desired state with another prefix is refused; the last good one stays.
func TestPrefixChangeIsRefused(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch).start()
	h.waitFor("a plan", func(s Snapshot) bool { return s.Resolved != nil })
	h.src.Set("prefix: other\n" + desiredYAML("web:v1", 1))
	snap := h.waitFor("the refusal", func(s Snapshot) bool { return s.SourceErr != nil })
	if snap.Prefix != pfx || snap.Desired.Prefix != pfx {
		t.Fatalf("prefix %q, desired prefix %q; error %v", snap.Prefix, snap.Desired.Prefix, snap.SourceErr)
	}
}

// After a broken start, the first good desired state sets the prefix.
func TestFirstGoodStateSetsThePrefix(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, "prefix: other\n"+desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, "workloads:\n  web: [broken\n", ModeWatch).start()
	h.waitFor("the error", func(s Snapshot) bool { return s.SourceErr != nil && s.Prefix == pfx })
	h.src.Set("prefix: other\n" + desiredYAML("web:v1", 1))
	snap := h.waitFor("the new prefix at work", func(s Snapshot) bool {
		return s.SourceErr == nil && s.Prefix == "other" && len(s.Containers) == 1 && s.Fresh && s.Plan.Empty()
	})
	if snap.Progress != (Progress{Ready: 1, Total: 1}) {
		t.Errorf("progress %v", snap.Progress)
	}
}
