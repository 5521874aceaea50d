package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/spec"
)

func thenOf(p Plan) []string {
	var out []string
	for _, s := range p.Then() {
		out = append(out, string(s.Action)+" "+s.Target())
	}
	return out
}

// Then rows (DESIGN §8): the steps that follow once the waits end, in the
// order they come, flagged, never executable.
func TestThenRows(t *testing.T) {
	three := func(d *spec.ResolvedDesired) []docker.Container {
		return []docker.Container{stale(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2)}
	}
	for _, tc := range []struct {
		name    string
		desired []*spec.Workload
		build   func(d *spec.ResolvedDesired) *Observed
		steps   []string
		then    []string
	}{
		{"a rolling update, one slot at a time", []*spec.Workload{workload("web", 3)},
			func(d *spec.ResolvedDesired) *Observed { return observed(three(d)...) },
			[]string{"start web/0", "wait web/1", "wait web/2"},
			[]string{"roll web/0", "start web/1", "roll web/1", "start web/2", "roll web/2"}},
		{"booting: its roll follows", []*spec.Workload{workload("web", 1)},
			func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, booting))
			},
			[]string{"wait web/0"}, []string{"roll web/0"}},
		{"stop-first: each slot's start follows its stop", []*spec.Workload{workload("web", 2, func(w *spec.Workload) { w.Update.Order = spec.OrderStopFirst })},
			func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), stale(d, "web", 1)) },
			[]string{"roll web/0", "wait web/1"}, []string{"start web/0", "roll web/1", "start web/1"}},
		{"blue-green: the rolls follow once all are healthy", []*spec.Workload{workload("web", 2, func(w *spec.Workload) { w.Update.Strategy = spec.StrategyBlueGreen })},
			func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), stale(d, "web", 1)) },
			[]string{"start web/0", "start web/1"}, []string{"roll web/0", "roll web/1"}},
		{"a crash backoff: the restart follows", []*spec.Workload{workload("web", 1)},
			func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, exited(1), func(c *docker.Container) { c.RestartCount = 4; c.FinishedAt = t0.Add(-time.Second) }))
			},
			[]string{"wait web/0"}, []string{"restart web/0"}},
		{"a restart: the limits follow", []*spec.Workload{workload("web", 1, func(w *spec.Workload) { w.Restart = "always" })},
			func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, exited(1), func(c *docker.Container) { c.Limits.Restart = "no" }))
			},
			[]string{"restart web/0"}, []string{"update web/0"}},
		{"a missed deadline (pause): nothing follows for that slot, and the queue waits", []*spec.Workload{workload("web", 2)},
			func(d *spec.ResolvedDesired) *Observed {
				late := func(c *docker.Container) {
					booting(c)
					c.Created, c.StartedAt = t0.Add(-2*time.Minute), t0.Add(-2*time.Minute)
				}
				return observed(stale(d, "web", 0), fresh(d, "web", 0, late), stale(d, "web", 1))
			},
			[]string{"wait web/0", "wait web/1"}, nil},
		{"paused on the engine: left alone", []*spec.Workload{workload("web", 1)},
			func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, func(c *docker.Container) { c.State = docker.StatePaused }))
			},
			[]string{"wait web/0"}, nil},
		{"orphans drain once every slot is healthy", []*spec.Workload{workload("web", 1)},
			func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, withID("orphan"), func(c *docker.Container) { c.Labels[docker.SlotLabel(pfx)] = "x" }))
			},
			[]string{"start web/0"}, []string{"roll web/-"}},
		{"converged: no then rows", []*spec.Workload{workload("web", 2)},
			func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0), fresh(d, "web", 1)) },
			nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := resolved(tc.desired...)
			p := diffThen(d, tc.build(d))
			equalStrings(t, actions(p), tc.steps)
			equalStrings(t, thenOf(p), tc.then)
			for _, s := range p.Then() {
				if !s.Then || s.Executable() {
					t.Fatalf("then row %s: Then %v, Executable %v", brief(s), s.Then, s.Executable())
				}
			}
		})
	}
}

// A then row has the Key of the step it becomes: approve "start web/1" while
// web/0 still boots, and the plan that holds the real start has that key.
func TestThenRowKeyMatchesTheStep(t *testing.T) {
	d := resolved(workload("web", 2))
	p := diffThen(d, observed(stale(d, "web", 0), fresh(d, "web", 0, booting), stale(d, "web", 1)))
	keys := map[string]Step{}
	for _, s := range p.Then() {
		keys[s.Key()] = s
	}
	// web/0 turned healthy and its old container rolled: web/1 starts.
	later := diffThen(d, observed(fresh(d, "web", 0), stale(d, "web", 1)))
	start := later.Executable()[0]
	then, ok := keys[start.Key()]
	if start.Action != ActStart || !ok {
		t.Fatalf("the real %s (key %s) matches no then row of the first plan: %v", brief(start), start.Key(), thenOf(p))
	}
	if then.Create == nil || then.Create.Name != start.Create.Name || !strings.Contains(then.Reason, "keeps serving") {
		t.Fatalf("then row %+v", then)
	}
	// And the roll of web/0's old container, once web/0 is healthy.
	roll := diffThen(d, observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))).Executable()[0]
	if th, ok := keys[roll.Key()]; roll.Action != ActRoll || !ok || !strings.Contains(th.Reason, "once "+fresh(d, "web", 0).Name+" is healthy") {
		t.Fatalf("the real %s matches no then row: %v", brief(roll), thenOf(p))
	}
}

// Then rows never run, never make a plan non-empty, never count in the
// summary, and never repeat a step the plan holds now.
func TestThenRowsAreNeverRun(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		p := diffThen(d, o)
		now := map[string]bool{}
		for _, s := range p.Steps() {
			now[s.Key()] = true
		}
		if len(p.Then()) > 0 && p.Empty() {
			t.Fatalf("then rows in an empty plan:\n%s", p)
		}
		for _, s := range p.Then() {
			if s.Executable() || !s.Then || now[s.Key()] {
				t.Fatalf("then row %s: executable %v, repeats a step %v", brief(s), s.Executable(), now[s.Key()])
			}
		}
		n := 0
		for _, c := range p.Counts() {
			n += c
		}
		if n != len(p.Steps()) {
			t.Fatalf("counts %v for %d steps", p.Counts(), len(p.Steps()))
		}
		r := recorderFor(o)
		results, err := Apply(t.Context(), r, p.Then(), ApplyOptions{})
		if len(results) != 0 || err != nil || len(r.calls) != 0 {
			t.Fatalf("Apply ran then rows: %d results, calls %q, err %v", len(results), r.calls, err)
		}
		if s := p.Then(); len(s) > 0 {
			if err := Run(t.Context(), r, s[0]); err == nil || len(r.calls) != 0 {
				t.Fatalf("Run ran a then row: %v %q", err, r.calls)
			}
		}
	})
}

// A then row handed straight to RunWith is refused before the engine hears
// of it, whatever its action.
func TestRunWithRefusesAThenRow(t *testing.T) {
	f := fake.New(fake.Options{Clock: fake.NewManualClock(t0), Seed: 1})
	for _, a := range []Action{ActStart, ActStop, ActRoll, ActRestart, ActUpdate} {
		s := Step{Action: a, Workload: "web", Slot: 0, Container: "rollcall-web-0-x", ContainerID: "x", Then: true,
			Create: &docker.CreateSpec{Name: "rollcall-web-0-x", Image: "web:v1"}}
		if err := RunWith(context.Background(), f, s, RunOptions{}); err == nil {
			t.Errorf("%s then row ran", a)
		}
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("then rows reached the engine: %q", m)
	}
}
