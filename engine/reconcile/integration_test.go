package reconcile_test

// Integration tests of Converge on the real Docker engine: each runs the
// reconcile rules (DESIGN §5) end to end through the moby adapter. The
// harness is in realengine_test.go.

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
)

// Rules 1 and 2: empty slots are started; then a new image rolls slot by
// slot, each old container drained once its replacement is healthy.
func TestRealConvergeFromNothingThenRoll(t *testing.T) {
	rt := newRealTest(t)
	v1 := rt.desired(demoWorkload("web", imageV1, 3))
	if got := actions(t, rt.converge(v1, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActStart: 3}) {
		t.Errorf("from nothing, executed %v; want 3 starts", got)
	}
	old := rt.converged(v1)["web"]

	v2 := rt.desired(demoWorkload("web", imageV2, 3))
	if got := actions(t, rt.converge(v2, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActStart: 3, reconcile.ActRoll: 3}) {
		t.Errorf("v1 → v2, executed %v; want 3 starts and 3 rolls", got)
	}
	for i, c := range rt.converged(v2)["web"] {
		if slices.Contains(ids(old), c.ID) {
			t.Errorf("web/%d: %s is a v1 container, still there after the roll", i, c.Name)
		}
		if body, err := get(rt.ctx, c); err != nil || !strings.HasPrefix(body, "v2 ") {
			t.Errorf("web/%d %s answers %q, %v; want v2", i, c.Name, body, err)
		}
	}
}

// Rules 4 and 6: a crashed container is restarted in place (restart "no", so
// the engine leaves it dead); a slot beyond the replica count (surplus) and a
// workload gone from the desired state (extra) are stopped and removed.
func TestRealCrashSurplusExtra(t *testing.T) {
	rt := newRealTest(t)
	before := rt.desired(
		demoWorkload("side", imageV1, 1, `restart: "no"`),
		demoWorkload("web", imageV1, 3, `restart: "no"`),
	)
	rt.converge(before, reconciletest.Options{})
	web := rt.converged(before)["web"]

	crashed := web[1]
	rt.docker("kill", crashed.ID)
	rt.waitFor("the killed container shows as exited", 20*time.Second, func() (bool, string) {
		for _, c := range rt.list() {
			if c.ID == crashed.ID {
				return c.State == docker.StateExited, string(c.State)
			}
		}
		return false, "gone"
	})

	after := rt.desired(demoWorkload("web", imageV1, 2, `restart: "no"`))
	results := rt.converge(after, reconciletest.Options{})
	var got []string
	for _, r := range results {
		got = append(got, string(r.Step.Action)+" "+r.Step.Target()+" "+r.Step.Reason)
	}
	want := []string{ // sorted, as got is
		"restart web/1 crashed: exit 137",
		"stop side/0 extra: workload side is not in the desired state",
		"stop web/2 surplus: index 2 ≥ replicas 2",
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("executed:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	actions(t, results)

	now := rt.converged(after)["web"]
	if now[0].ID != web[0].ID || !now[0].StartedAt.Equal(web[0].StartedAt) {
		t.Errorf("web/0 is %s started %v, want the untouched %s started %v", now[0].Name, now[0].StartedAt, web[0].Name, web[0].StartedAt)
	}
	if now[1].ID != crashed.ID || !now[1].StartedAt.After(crashed.StartedAt) {
		t.Errorf("web/1 is %s started %v, want %s restarted in place after %v", now[1].Name, now[1].StartedAt, crashed.Name, crashed.StartedAt)
	}
}

// I5: a container without the managed label is never looked at or touched,
// even one named and labelled like a workload's, through a start, a roll and
// a stop of everything.
func TestRealUnmanagedUntouched(t *testing.T) {
	rt := newRealTest(t)
	stray := rt.docker("run", "-d", "--name", rt.prefix+"-web-0-stray",
		"--label", testLabel(rt.prefix)+"=true", "--label", dockertest.RunLabelArg,
		"--label", docker.WorkloadLabel(rt.prefix)+"=web",
		"--label", docker.SlotLabel(rt.prefix)+"=0",
		"-p", "127.0.0.1::8080", imageV1)
	state := func() string {
		return rt.docker("inspect", "-f", "{{.Id}} {{.State.Status}} {{.State.StartedAt}} {{.RestartCount}}", stray)
	}
	want := state()
	if !strings.HasPrefix(want, stray+" running ") {
		t.Fatalf("stray container: %s, want running", want)
	}

	opts := reconciletest.Options{OnPlan: func(round int, p reconcile.Plan) {
		for _, s := range p.Steps() {
			if s.ContainerID == stray || strings.HasSuffix(s.Container, "-stray") {
				t.Errorf("round %d plans %s for the unmanaged container", round, s)
			}
		}
	}}
	for _, step := range []struct {
		name      string
		workloads []string
	}{
		{"start", []string{demoWorkload("web", imageV1, 1)}},
		{"roll", []string{demoWorkload("web", imageV2, 1)}},
		{"stop everything", nil},
	} {
		d := rt.desired(step.workloads...)
		rt.converge(d, opts)
		rt.converged(d)
		if got := state(); got != want {
			t.Errorf("after %s: the unmanaged container is %q, want %q", step.name, got, want)
		}
	}
	if cs := rt.list(); len(cs) != 0 {
		t.Errorf("after workloads: {}, %d managed containers remain", len(cs))
	}
}

// Rule 5: new limits are applied in place (same container, never
// restarted), and a limit changed by hand is drift that is put back.
func TestRealLimitsInPlace(t *testing.T) {
	rt := newRealTest(t)
	small := rt.desired(demoWorkload("web", imageV1, 2, "resources: {cpus: 0.5, memory: 64M}"))
	rt.converge(small, reconciletest.Options{})
	before := rt.converged(small)["web"]

	big := rt.desired(demoWorkload("web", imageV1, 2, "resources: {cpus: 0.25, memory: 128M}"))
	if got := actions(t, rt.converge(big, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActUpdate: 2}) {
		t.Errorf("new limits: executed %v, want 2 updates", got)
	}
	after := rt.converged(big)["web"] // checks the limits the engine applies
	sameContainers(t, "after the update", before, after)

	rt.docker("update", "--memory", "96m", "--memory-swap", "96m", after[0].ID)
	plan := rt.diff(big)
	steps := plan.Executable()
	if len(steps) != 1 || steps[0].Action != reconcile.ActUpdate || steps[0].ContainerID != after[0].ID || steps[0].Limits.Memory != 128<<20 {
		t.Fatalf("after docker update --memory 96m, plan:\n%s\nwant one update of %s back to 128M", plan, after[0].Name)
	}
	if got := actions(t, rt.converge(big, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActUpdate: 1}) {
		t.Errorf("drift: executed %v, want 1 update", got)
	}
	sameContainers(t, "after the drift was put back", before, rt.converged(big)["web"])
}

// sameContainers checks that every slot still holds the very container it
// held before: same ID, never restarted.
func sameContainers(t *testing.T, when string, before, after []docker.Container) {
	t.Helper()
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || !a.StartedAt.Equal(b.StartedAt) || a.RestartCount != b.RestartCount {
			t.Errorf("%s: web/%d is %s started %v (restarts %d), want %s started %v (restarts %d)",
				when, i, a.Name, a.StartedAt, a.RestartCount, b.Name, b.StartedAt, b.RestartCount)
		}
	}
}

// A converge cut short mid-roll leaves every slot served, and the next one
// picks up where it stopped: the same end state, no container left behind.
// With parallelism 2 the roll's first round starts both slots; the cancel
// comes after the first start, so the second never happens.
func TestRealCancelledMidRoll(t *testing.T) {
	rt := newRealTest(t)
	v1 := rt.desired(demoWorkload("web", imageV1, 2, "update: {parallelism: 2}"))
	rt.converge(v1, reconciletest.Options{})
	old := rt.converged(v1)["web"]

	v2 := rt.desired(demoWorkload("web", imageV2, 2, "update: {parallelism: 2}"))
	ctx, cancel := context.WithCancel(rt.ctx)
	defer cancel()
	cut := reconciletest.Options{Apply: reconcile.ApplyOptions{OnDone: func(r reconcile.Result) {
		if r.Step.Action == reconcile.ActStart {
			cancel()
		}
	}}}
	results, err := rt.tryConverge(ctx, v2, cut)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Converge cancelled after the first start: %v, want it cut short", err)
	}
	if len(results) != 1 || results[0].Step.Action != reconcile.ActStart || results[0].Err != nil {
		t.Fatalf("cancelled Converge executed %v, want exactly the one start", results)
	}
	// Cut mid-roll: the old containers both still run, beside the one new.
	var running []string
	for _, c := range rt.list() {
		if c.State == docker.StateRunning {
			running = append(running, c.ID)
		}
	}
	for _, c := range old {
		if !slices.Contains(running, c.ID) {
			t.Errorf("after the cancel, %s no longer runs", c.Name)
		}
	}
	if len(running) != 3 {
		t.Errorf("after the cancel, %d containers run, want the 2 old ones and 1 new", len(running))
	}

	if got := actions(t, rt.converge(v2, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActStart: 1, reconcile.ActRoll: 2}) {
		t.Errorf("the second Converge executed %v, want the 1 start left and 2 rolls", got)
	}
	web := rt.converged(v2)["web"] // exactly 2, all v2, nothing else
	if first := results[0].Step; web[first.Slot].Name != first.Container {
		t.Errorf("web/%d is %s, want %s, started before the cancel", first.Slot, web[first.Slot].Name, first.Container)
	}
	for i, c := range web {
		if body, err := get(rt.ctx, c); err != nil || !strings.HasPrefix(body, "v2 ") {
			t.Errorf("web/%d %s answers %q, %v; want v2", i, c.Name, body, err)
		}
	}
}

// A tag rebuilt to a new image ID makes its containers stale (DESIGN §5,
// resolving): they roll onto the new image. The versions baked in name the
// run: image IDs are content addresses, so an image built alike by a
// concurrent run would be the same image, and removing it by ID in cleanup
// would pull it from under that run.
func TestRealRebuiltTag(t *testing.T) {
	rt := newRealTest(t)
	tag := "rollcall-test-demoapp:" + rt.prefix
	before, after := dockertest.Run+"-a", dockertest.Run+"-b"
	rt.removeImageInCleanup(tag)
	first := dockertest.BuildDemoapp(t, tag, before)
	rt.removeImageInCleanup(first)
	d := rt.desired(demoWorkload("web", tag, 2))
	rt.converge(d, reconciletest.Options{})
	old := rt.converged(d)["web"] // on the first image

	second := dockertest.BuildDemoapp(t, tag, after)
	if second == first {
		t.Fatalf("rebuilt %s with another version, yet the image ID is still %s", tag, first)
	}
	plan := rt.diff(d)
	if len(plan.Workloads) != 1 || !slices.Contains(plan.Workloads[0].Changes, "~ image ID: "+short(first)+" → "+short(second)+" (tag rebuilt)") {
		t.Errorf("after the rebuild, plan:\n%s\nwant the image ID change", plan)
	}

	if got := actions(t, rt.converge(d, reconciletest.Options{})); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActStart: 2, reconcile.ActRoll: 2}) {
		t.Errorf("after the rebuild, executed %v; want 2 starts and 2 rolls", got)
	}
	for i, c := range rt.converged(d)["web"] { // checks ImageID == second
		if c.ID == old[i].ID {
			t.Errorf("web/%d is still %s, on the old image", i, c.Name)
		}
		if body, err := get(rt.ctx, c); err != nil || !strings.HasPrefix(body, after+" ") {
			t.Errorf("web/%d %s answers %q, %v; want %s", i, c.Name, body, err, after)
		}
	}
}

// Container names leave out what would tell two prefixes apart: the spec hash
// covers neither the prefix nor the workload name, so prefix P with workload
// "web-api" and prefix "P-web" with workload "api" name the same spec's
// containers alike. The start of the second then meets a name that is taken
// by a container it does not manage. It must not count that as done (Apply
// treats ErrConflict as "already created"): Converge would then start the
// same name again and again, without a pause or an error, while the slot
// stays empty.
func TestRealNameTakenByOtherPrefix(t *testing.T) {
	rt := newRealTest(t)
	other := rt.desiredAt(rt.prefix+"-web", demoWorkload("api", imageV1, 1)) // swept with rt.prefix, which it starts with
	rt.converge(other, reconciletest.Options{})

	ours := rt.desired(demoWorkload("web-api", imageV1, 1))
	var starts, failedStarts int
	began := time.Now()
	results, err := rt.tryConverge(rt.ctx, ours, reconciletest.Options{MaxRounds: 20})
	for _, r := range results {
		if r.Step.Action == reconcile.ActStart {
			starts++
			if r.Err != nil {
				failedStarts++
			}
		}
	}
	if err == nil {
		rt.converged(ours) // a way around the name is fine too
		return
	}
	if failedStarts == 0 {
		t.Errorf("Converge: %v; its start of %s ran %d times in %s, each reported done, while the name belongs to prefix %s's container; "+
			"want the start to fail and say the name is taken", err, results[0].Step.Container, starts, time.Since(began).Round(time.Millisecond), other.Prefix)
	}
}
