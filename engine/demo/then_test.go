package demo

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/spec"
)

// The demo's first plan shows the whole roll: its steps and its then rows
// are all 10 steps it takes, and each step that later runs has the key of a
// row the first plan showed, so an approval given to that row matches it.
func TestDemoFirstPlanShowsEveryStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	f, _, _ := staged(t, 20*time.Millisecond)
	desired, err := load.Parse("demo desired state", []byte(desiredYAML(Prefix, DefaultImages, DefaultImages)))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := f.List(ctx, Prefix)
	if err != nil {
		t.Fatal(err)
	}
	resolved := spec.Resolve(ctx, desired, f)
	obs := &reconcile.Observed{Now: time.Now(), Containers: cs}
	first := reconcile.Diff(resolved, obs)
	reconcile.AddThen(resolved, obs, &first)

	var shown []string
	keys := map[string]bool{}
	for _, s := range append(first.Steps(), first.Then()...) {
		if s.Executable() != (s.Action != reconcile.ActWait && !s.Then) {
			t.Fatalf("Executable() of %+v", s)
		}
		if s.Action != reconcile.ActWait {
			shown = append(shown, string(s.Action)+" "+s.Target())
			keys[s.Key()] = true
		}
	}
	want := []string{
		"stop old-api/0",
		"start web/0", "roll web/0", "start web/1", "roll web/1", "start web/2", "roll web/2",
		"restart worker/0", "update worker/1", "update worker/0",
	}
	sortedShown, sortedWant := slices.Sorted(slices.Values(shown)), slices.Sorted(slices.Values(want))
	if !slices.Equal(sortedShown, sortedWant) {
		t.Fatalf("the first plan shows %q, want the demo's 10 steps %q\n%s", shown, want, first)
	}
	if n := len(first.Executable()); n != 4 {
		t.Fatalf("%d executable steps in the first plan, want 4 (the then rows never run):\n%s", n, first)
	}

	var ran []string
	opts := reconciletest.Options{Poll: 10 * time.Millisecond, MaxRounds: 500}
	opts.Apply.OnDone = func(r reconcile.Result) {
		ran = append(ran, string(r.Step.Action)+" "+r.Step.Target())
		if !keys[r.Step.Key()] {
			t.Errorf("ran %s (key %s), which the first plan did not show", r.Step.Target(), r.Step.Key())
		}
	}
	if _, err := reconciletest.Converge(ctx, f, desired, opts); err != nil {
		t.Fatalf("converge: %v (ran %q)", err, ran)
	}
	if !slices.Equal(slices.Sorted(slices.Values(ran)), sortedWant) {
		t.Fatalf("ran %q, want %q", ran, want)
	}
}
