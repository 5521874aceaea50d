package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/spec"
)

// engineCrashedMidStart leaves f as an engine that died right after the
// create of slot 0's new container (kill -9 of dockerd) and came back
// later: every old container Exited(0), the new one Created and never
// started, then past's worth of time on the clock (issue 26 row 15).
func engineCrashedMidStart(t *testing.T, f *fake.Engine, clock *fake.ManualClock, d *spec.Desired, past time.Duration) (id, name string) {
	t.Helper()
	ctx := context.Background()
	cs, err := f.List(ctx, reconcile.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if err := f.Stop(ctx, c.ID, 0); err != nil {
			t.Fatal(err)
		}
	}
	w := spec.Resolve(ctx, d, f).Workload("web")
	create := reconcile.CreateSpec(reconcile.Prefix, w, 0)
	img, err := f.ImageInspect(ctx, create.Image)
	if err != nil {
		t.Fatal(err)
	}
	id, err = f.AddContainer(docker.Container{Name: create.Name, Image: create.Image, ImageID: img.ID, Labels: create.Labels,
		State: docker.StateCreated, HasHealthcheck: true, Limits: create.Limits})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(past)
	return id, create.Name
}

// Issue 26 row 15 on one host: an engine that crashed mid-start comes back
// past health_deadline with the new container Created (never started) and
// the old ones Exited(0). A container that never started cannot have missed
// its deadline: the roll goes on (no pause), the old containers serve again
// meanwhile, and the host converges on v2.
func TestEngineCrashedMidStartRecovers(t *testing.T) {
	f, clock, opts := fakeWorld(1, 2*time.Second)
	ctx := t.Context()
	if _, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 2, reconcile.V1)), opts); err != nil {
		t.Fatal(err)
	}
	short := func(w *spec.Workload) { w.Update.HealthDeadline = 30 * time.Second }
	d := desiredOf(reconcile.TestWorkload("web", 2, short))
	created, name := engineCrashedMidStart(t, f, clock, d, 35*time.Second)

	var first reconcile.Plan
	opts.OnPlan = func(round int, p reconcile.Plan) {
		if round == 1 {
			first = p
		}
	}
	rep, err := reconciletest.Converge(ctx, f, d, opts)
	if err != nil {
		t.Fatalf("after the engine came back: %v\nfirst plan:\n%s", err, first)
	}
	if fs := first.Failures(); len(fs) != 0 {
		t.Errorf("a container that never started is judged failed: %+v", fs)
	}
	// The old containers of both slots are brought back at once, so each
	// slot serves while it rolls.
	restarted := map[int]bool{}
	for _, s := range first.Steps() {
		if s.Action == reconcile.ActRestart && s.Why.Kind == reconcile.ReasonOldDown {
			restarted[s.Slot] = true
		}
	}
	if !restarted[0] || !restarted[1] {
		t.Errorf("the first plan does not bring both old containers back:\n%s", first)
	}
	cs, _ := f.List(ctx, reconcile.Prefix)
	if len(cs) != 2 {
		t.Fatalf("%d containers after the roll, want 2: %+v", len(cs), cs)
	}
	for _, c := range cs {
		if c.Image != "web:v2" || c.State != docker.StateRunning || c.Health != docker.HealthHealthy {
			t.Errorf("not rolled: %s %s %s %s", c.Name, c.Image, c.State, c.Health)
		}
		if c.ID == created {
			t.Errorf("the never-started container %s was kept, not made again", c.Name)
		}
	}
	if rep.Failed != 0 {
		t.Errorf("%d steps failed", rep.Failed)
	}
	for _, call := range f.Calls() {
		if call == "restart:"+name {
			t.Errorf("the never-started new container was started late (%s): its deadline would count from its creation", call)
		}
	}
}
