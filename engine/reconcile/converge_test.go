package reconcile_test

// The tests that converge the fake engine, through reconciletest.Converge
// (which imports reconcile, so they cannot be tests of package reconcile).

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/spec"
)

// fakeWorld is a fake engine on a manual clock, with v1 and v2 images of
// every workload, and Converge options whose sleeps advance that clock.
func fakeWorld(seed int64, ready time.Duration) (*fake.Engine, *fake.ManualClock, reconciletest.Options) {
	clock := fake.NewManualClock(reconcile.T0)
	f := fake.New(fake.Options{Clock: clock, Seed: seed})
	for _, name := range reconcile.WorkloadNames {
		for _, v := range []string{"1", "2"} {
			f.AddImage(name+":v"+v, "", fake.Behaviour{ReadyAfter: ready})
		}
	}
	opts := reconciletest.Options{
		Now:       clock.Now,
		Sleep:     func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil },
		MaxRounds: 300,
	}
	return f, clock, opts
}

func desiredOf(ws ...*spec.Workload) *spec.Desired {
	d := &spec.Desired{Prefix: reconcile.Prefix, Workloads: map[string]*spec.Workload{}}
	for _, w := range ws {
		d.Workloads[w.Name] = w
	}
	return d
}

func TestConvergeRollsOnFakeEngine(t *testing.T) {
	f, clock, opts := fakeWorld(1, 2*time.Second)
	ctx := t.Context()
	if _, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 3, reconcile.V1)), opts); err != nil {
		t.Fatalf("first converge: %v", err)
	}
	var rolled []string
	opts.Apply.OnDone = func(r reconcile.Result) {
		rolled = append(rolled, string(r.Step.Action)+" "+r.Step.Target()+" "+r.Step.Container)
	}
	rep, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 3)), opts)
	if err != nil {
		t.Fatalf("roll v1 → v2: %v", err)
	}
	cs, _ := f.List(ctx, reconcile.Prefix)
	if len(cs) != 3 {
		t.Fatalf("%d containers after the roll, want 3", len(cs))
	}
	for _, c := range cs {
		if c.Image != "web:v2" || !reconcile.Healthy(&c, time.Second, clock.Now(), false) {
			t.Fatalf("not rolled: %+v", c)
		}
	}
	if rep.Steps != 6 || rep.Failed != 0 {
		t.Fatalf("steps %d failed %d, want 3 starts and 3 rolls: %q", rep.Steps, rep.Failed, rolled)
	}
}

func TestConvergePausesOnHealthDeadline(t *testing.T) {
	f, _, opts := fakeWorld(1, 2*time.Second)
	f.AddImage("web:v2", "id-broken", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	ctx := t.Context()
	if _, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 1, reconcile.V1)), opts); err != nil {
		t.Fatal(err)
	}
	_, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 1)), opts)
	if err == nil || !errors.Is(err, reconciletest.ErrPaused) {
		t.Fatalf("err %v, want reconciletest.ErrPaused", err)
	}
	cs, _ := f.List(ctx, reconcile.Prefix)
	serving := 0
	for _, c := range cs {
		if c.Image == "web:v1" && c.State == docker.StateRunning {
			serving++
		}
	}
	if serving != 1 {
		t.Fatalf("the old container must keep serving: %+v", cs)
	}
}

func TestConvergeRollbackHolds(t *testing.T) {
	f, _, opts := fakeWorld(1, 2*time.Second)
	f.AddImage("web:v2", "id-broken", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	ctx := t.Context()
	if _, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 1, reconcile.V1)), opts); err != nil {
		t.Fatal(err)
	}
	rollback := func(w *spec.Workload) { w.Update.FailureAction = spec.FailureRollback }
	rep, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 1, rollback)), opts)
	if err != nil {
		t.Fatalf("rollback should settle: %v", err)
	}
	if len(rep.Holds["web"]) != 1 {
		t.Fatalf("holds %v", rep.Holds)
	}
	cs, _ := f.List(ctx, reconcile.Prefix)
	if len(cs) != 1 || cs[0].Image != "web:v1" || cs[0].State != docker.StateRunning {
		t.Fatalf("after rollback: %+v", cs)
	}
}

// I4: with the fake engine, repeated converges reach the fixpoint in a
// bounded number of rounds, even when a share of engine calls fail.
func TestI4ConvergesDespiteFailures(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Int64().Draw(t, "seed")
		f, _, opts := fakeWorld(seed, time.Duration(rapid.IntRange(0, 5).Draw(t, "ready"))*time.Second)
		ctx := context.Background()
		var start, next []*spec.Workload
		for _, name := range reconcile.WorkloadNames {
			if rapid.Bool().Draw(t, name+"-before") {
				start = append(start, reconcile.TestWorkload(name, rapid.IntRange(0, 4).Draw(t, name+"-n0"), reconcile.V1))
			}
			if rapid.Bool().Draw(t, name+"-after") {
				w := reconcile.TestWorkload(name, rapid.IntRange(0, 4).Draw(t, name+"-n1"))
				if rapid.Bool().Draw(t, name+"-still-v1") {
					reconcile.V1(w)
				}
				w.Update.Parallelism = rapid.IntRange(1, 3).Draw(t, name+"-par")
				w.Update.Strategy = rapid.SampledFrom([]string{spec.StrategyRolling, spec.StrategyBlueGreen}).Draw(t, name+"-strategy")
				w.Update.Order = rapid.SampledFrom([]string{spec.OrderStartFirst, spec.OrderStopFirst}).Draw(t, name+"-order")
				if rapid.Bool().Draw(t, name+"-nohc") {
					w.Healthcheck = nil
				}
				next = append(next, w)
			}
		}
		if _, err := reconciletest.Converge(ctx, f, desiredOf(start...), opts); err != nil {
			t.Fatalf("setup: %v", err)
		}
		rate := float64(rapid.IntRange(0, 30).Draw(t, "fail-percent")) / 100
		f.FailRate(rate)
		rep, err := reconciletest.Converge(ctx, f, desiredOf(next...), opts)
		if err != nil {
			t.Fatalf("fail rate %.2f: %v after %d rounds\n%s", rate, err, rep.Rounds, rep.Last)
		}
		f.FailRate(0)
		cs, _ := f.List(ctx, reconcile.Prefix)
		resolved := spec.Resolve(ctx, desiredOf(next...), f)
		if p := reconcile.Diff(resolved, &reconcile.Observed{Now: opts.Now(), Containers: cs}); !p.Empty() {
			t.Fatalf("converge returned but the plan is not empty:\n%s", p)
		}
	})
}

// A step that keeps failing is retried with a growing backoff, not every
// poll: 1s, 2s, 4s …
func TestConvergeBacksOffOnFailure(t *testing.T) {
	f, clock, opts := fakeWorld(1, time.Second)
	f.FailRate(1) // every create fails
	var waits []time.Duration
	opts.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); clock.Advance(d); return nil }
	opts.MaxRounds = 4
	rep, err := reconciletest.Converge(t.Context(), f, desiredOf(reconcile.TestWorkload("web", 1)), opts)
	if err == nil || rep.Failed != 4 {
		t.Fatalf("err %v, failed %d: want 4 failed rounds", err, rep.Failed)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second}
	if fmt.Sprint(waits) != fmt.Sprint(want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
}

// The restarts rollcall issued carry over into the next Converge, so the
// crash backoff of rule 4 keeps growing for a caller that converges again.
func TestConvergeCarriesRestarts(t *testing.T) {
	f, _, opts := fakeWorld(1, time.Second)
	ctx := t.Context()
	d := desiredOf(reconcile.TestWorkload("web", 1, func(w *spec.Workload) { w.Restart = "no" }))
	if _, err := reconciletest.Converge(ctx, f, d, opts); err != nil {
		t.Fatal(err)
	}
	cs, _ := f.List(ctx, reconcile.Prefix)
	if err := f.Kill(cs[0].ID, 1); err != nil {
		t.Fatal(err)
	}
	rep, err := reconciletest.Converge(ctx, f, d, opts)
	if err != nil || rep.Restarts[cs[0].ID] != 1 {
		t.Fatalf("err %v, restarts %v: want one restart counted", err, rep.Restarts)
	}
	opts.Restarts = rep.Restarts
	if err := f.Kill(cs[0].ID, 1); err != nil {
		t.Fatal(err)
	}
	rep, err = reconciletest.Converge(ctx, f, d, opts)
	if err != nil || rep.Restarts[cs[0].ID] != 2 {
		t.Fatalf("err %v, restarts %v: want the count carried to 2", err, rep.Restarts)
	}
}

// The case on the fake engine: an app ready after 8s, whose probes
// the engine reads unhealthy from 3s (no start_period), health_deadline 60s,
// rolls without a single restart.
func TestSlowStarterRollsWithoutRestart(t *testing.T) {
	f, _, opts := fakeWorld(1, 2*time.Second)
	f.AddImage("web:v2", "id-slow", fake.Behaviour{UnhealthyAt: 3 * time.Second, ReadyAfter: 8 * time.Second})
	ctx := t.Context()
	if _, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 3, reconcile.V1)), opts); err != nil {
		t.Fatal(err)
	}
	var ran []string
	var sawSlow bool
	opts.OnPlan = func(_ int, p reconcile.Plan) {
		for _, s := range p.Steps() {
			if s.Action == reconcile.ActWait && strings.Contains(s.Reason, "slow starter") {
				sawSlow = true
			}
		}
	}
	opts.Apply.OnDone = func(r reconcile.Result) { ran = append(ran, string(r.Step.Action)+" "+r.Step.Target()) }
	rep, err := reconciletest.Converge(ctx, f, desiredOf(reconcile.TestWorkload("web", 3)), opts)
	if err != nil {
		t.Fatalf("roll: %v (ran %q)", err, ran)
	}
	for _, s := range ran {
		if strings.HasPrefix(s, "restart") {
			t.Fatalf("a slow starter was restarted: %q", ran)
		}
	}
	if rep.Steps != 6 {
		t.Fatalf("ran %q, want 3 starts and 3 rolls", ran)
	}
	if !sawSlow {
		t.Fatal("no plan showed the unhealthy new container as a booting slow starter")
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "restart:") {
			t.Fatalf("engine call %s", c)
		}
	}
}
