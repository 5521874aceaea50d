package reconcile

import (
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

func dependsOn(name, cond string) func(*spec.Workload) {
	return func(w *spec.Workload) {
		w.DependsOn = append(w.DependsOn, spec.Dependency{Workload: name, Condition: cond})
	}
}

// dependencyWait checks that slot 0 of web waits for db to be what.
func dependencyWait(t *testing.T, p Plan, cond, words string) {
	t.Helper()
	for _, s := range p.Steps() {
		if s.Workload != "web" {
			continue
		}
		if s.Action != ActWait || s.Wait != WaitDependency || !s.Until.IsZero() || s.Why.Kind != ReasonDependency ||
			s.Why.Dependency != "db" || s.Why.DependCondition != cond || s.Reason != "depends on db: starts once a container of it is "+words {
			t.Fatalf("%s: wait %q, why %+v, reason %q", brief(s), s.Wait, s.Why, s.Reason)
		}
	}
	for _, st := range p.Slots {
		if st.Workload == "web" && st.Wait != WaitDependency {
			t.Fatalf("slot state web/%d: wait %q", st.Slot, st.Wait)
		}
	}
}

// depends_on: the cold starts of a workload wait while no container of a
// dependency meets its condition (running, healthy, exited 0); a roll is
// not held, and a dependency that runs nothing holds nothing.
func TestDependsOnOrdersColdStarts(t *testing.T) {
	db := func(mods ...func(*spec.Workload)) *spec.Workload { return workload("db", 1, mods...) }
	web := func(cond string) *spec.Workload { return workload("web", 2, dependsOn("db", cond)) }
	runRules(t, []ruleCase{
		{name: "nothing runs: the dependency starts, the workload waits", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed() },
			want:  []string{"start db/0", "wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				dependencyWait(t, p, spec.DependHealthy, "healthy")
			}},
		{name: "healthy: still booting", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0, booting)) },
			want:  []string{"wait db/0", "wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				dependencyWait(t, p, spec.DependHealthy, "healthy")
			}},
		{name: "healthy: met", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0)) },
			want:  []string{"start web/0", "start web/1"}},
		{name: "healthy: an old container of the dependency counts", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "db", 0)) },
			want:  []string{"start db/0", "start web/0", "start web/1"}},
		{name: "healthy: a draining container does not", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "db", 0))
				o.Draining = map[string]bool{"id-db-0-new": true}
				return o
			},
			want: []string{"wait web/0", "wait web/1"}},
		{name: "started: a booting container is enough", desired: []*spec.Workload{db(), web(spec.DependStarted)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0, booting)) },
			want:  []string{"wait db/0", "start web/0", "start web/1"}},
		{name: "started: an exited container is not", desired: []*spec.Workload{db(), web(spec.DependStarted)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0, exited(1))) },
			want:  []string{"restart db/0", "wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				dependencyWait(t, p, spec.DependStarted, "running")
			}},
		{name: "completed: exited 0", desired: []*spec.Workload{db(), web(spec.DependCompleted)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0, exited(0))) },
			want:  []string{"restart db/0", "start web/0", "start web/1"}},
		{name: "completed: still running", desired: []*spec.Workload{db(), web(spec.DependCompleted)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "db", 0)) },
			want:  []string{"wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				dependencyWait(t, p, spec.DependCompleted, "completed (exit 0)")
			}},
		{name: "a dependency with no replica holds nothing", desired: []*spec.Workload{workload("db", 0), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed() },
			want:  []string{"start web/0", "start web/1"}},
		{name: "a roll is not held", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), fresh(d, "web", 1)) },
			want:  []string{"start db/0", "start web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[1]; s.Why.Kind != ReasonRoll {
					t.Fatalf("%s: %s", brief(s), s.Why.Kind)
				}
			}},
		{name: "every dependency is waited for, the first unmet named", desired: []*spec.Workload{
			db(), workload("cache", 1), workload("web", 1, dependsOn("cache", spec.DependStarted), dependsOn("db", spec.DependHealthy))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "cache", 0), fresh(d, "db", 0, booting))
			},
			want: []string{"wait db/0", "wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				dependencyWait(t, p, spec.DependHealthy, "healthy")
			}},
	})
}

// The then rows show the starts that follow once the dependency is met.
func TestDependsOnThen(t *testing.T) {
	d := resolved(workload("db", 1), workload("web", 1, dependsOn("db", spec.DependHealthy)))
	p := diffThen(d, observed(fresh(d, "db", 0, func(c *docker.Container) { c.State = docker.StateExited; c.ExitCode = 1 })))
	var then []string
	for _, s := range p.Then() {
		then = append(then, string(s.Action)+" "+s.Target())
	}
	equalStrings(t, then, []string{"start web/0"})
}
