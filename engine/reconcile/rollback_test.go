package reconcile

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// An operator rollback (Observed.RollingBack) is an input to Diff: the plan
// stops the new containers where an older one still serves, with their
// pre_stop and the drain exactly as Diff's other stops, Hold set, and
// nothing else of the workload: no start, no roll. A slot that finished its
// roll, and one whose older container no longer runs, keeps its new one.
func TestOperatorRollbackIsDiffsStops(t *testing.T) {
	d := resolved(workload("web", 4, withPreStop("/new", "-drain"), withDrain(5*time.Second)))
	hash := d.Workload("web").Hash
	label := func(c *docker.Container) { c.Labels[docker.PreStopLabel(pfx)] = `["/new","-drain"]` }
	second := func(c *docker.Container) { label(c); c.ID += "-b"; c.Name += "-b" }
	cs := []docker.Container{
		fresh(d, "web", 0, label),                              // finished its roll: kept
		fresh(d, "web", 1, label, booting), stale(d, "web", 1), // mid-roll: the new one stops
		fresh(d, "web", 2, label), stale(d, "web", 2, exited(0)), // the old one does not run: kept
		fresh(d, "web", 3, label), fresh(d, "web", 3, second), stale(d, "web", 3), // both new ones stop
	}
	o := observed(cs...)
	o.Holds = map[string]map[string]bool{"web": {hash: true}}
	o.RollingBack = map[string]string{"web": hash}
	plan := Diff(d, o)

	want := []string{
		"stop web/1 " + ContainerName(pfx, "web", 1, hash),
		"stop web/3 " + ContainerName(pfx, "web", 3, hash),
		"stop web/3 " + ContainerName(pfx, "web", 3, hash) + "-b",
	}
	if got := briefs(plan); !slices.Equal(got, want) {
		t.Fatalf("steps %q, want %q\n%s", got, want, plan)
	}
	for _, s := range plan.Steps() {
		if !slices.Equal(s.PreStop, []string{"/new", "-drain"}) || s.Drain != 5*time.Second {
			t.Errorf("%s: pre_stop %q drain %s; want the container's pre_stop and the workload's drain", brief(s), s.PreStop, s.Drain)
		}
		if s.Hold != hash || s.Grace != d.Workload("web").StopGrace {
			t.Errorf("%s: hold %q grace %s; want the rolled-back spec held and the workload's grace", brief(s), s.Hold, s.Grace)
		}
	}
	if !strings.Contains(plan.String(), "(pre_stop /new -drain, drain ≤5s)") {
		t.Errorf("the plan does not show the rollback's drain:\n%s", plan)
	}

	// The same container stopped as a surplus, outside any rollback, drains
	// the same way: one rule for every stop.
	d1 := resolved(workload("web", 1, withPreStop("/new", "-drain"), withDrain(5*time.Second)))
	surplus := Diff(d1, observed(fresh(d1, "web", 0), fresh(d, "web", 1, label)))
	var other Step
	for _, s := range surplus.Steps() {
		if s.Action == ActStop && s.ContainerID == cs[1].ID {
			other = s
		}
	}
	if rb := plan.Steps()[0]; !slices.Equal(rb.PreStop, other.PreStop) || rb.Drain != other.Drain || other.Drain == 0 {
		t.Errorf("rollback stop pre_stop %q drain %s; surplus stop of the same container pre_stop %q drain %s", rb.PreStop, rb.Drain, other.PreStop, other.Drain)
	}
}

// A rollback with nothing left to stop plans what Diff plans without it,
// so the caller can end it; a workload that cannot be acted on is stopped
// nothing, rollback or not.
func TestOperatorRollbackDoneOrBlocked(t *testing.T) {
	d := resolved(workload("web", 2))
	hash := d.Workload("web").Hash
	holds := map[string]map[string]bool{"web": {hash: true}}
	cs := []docker.Container{fresh(d, "web", 0), stale(d, "web", 1)}
	plain := observed(cs...)
	plain.Holds = holds
	rolling := observed(cs...)
	rolling.Holds, rolling.RollingBack = holds, map[string]string{"web": hash}
	if a, b := Diff(d, plain), Diff(d, rolling); !reflect.DeepEqual(a, b) {
		t.Errorf("nothing left to roll back: plan\n%s\nwant as without the rollback\n%s", b, a)
	}

	gone := workload("web", 2, func(w *spec.Workload) { w.Image, w.Pull = "gone:v2", spec.PullNever })
	broken := spec.Resolve(context.Background(), &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"web": gone}}, imageTable{"gone:v2": false})
	if broken.Workload("web").Err == nil {
		t.Fatal("the workload resolved")
	}
	o := observed(fresh(d, "web", 0), stale(d, "web", 0))
	o.RollingBack = map[string]string{"web": hash}
	if p := Diff(broken, o); len(p.Executable()) != 0 {
		t.Errorf("a workload in error was acted on:\n%s", p)
	}
}
