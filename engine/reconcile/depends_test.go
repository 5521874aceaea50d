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
		{name: "a roll waits for its dependency's roll", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "db", 0), stale(d, "web", 0), fresh(d, "web", 1))
			},
			want: []string{"start db/0", "wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				s := p.Steps()[1]
				if s.Wait != WaitDependency || !s.Why.DependRoll || s.Reason != "depends on db: rolls once db has rolled and is healthy" {
					t.Fatalf("%s: %+v %q", brief(s), s.Why, s.Reason)
				}
			}},
		{name: "a roll waits while the dependency's new container boots", desired: []*spec.Workload{db(), web(spec.DependStarted)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "db", 0, booting), stale(d, "web", 0))
			},
			want: []string{"wait db/0", "wait web/0", "start web/1"}},
		{name: "a roll goes once the dependency rolled", desired: []*spec.Workload{db(), web(spec.DependHealthy)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "db", 0), stale(d, "web", 0), fresh(d, "web", 1))
			},
			want: []string{"start web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[0]; s.Why.Kind != ReasonRoll {
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

// A one-shot job (another workload waits for it to complete) runs once per
// spec: its container that exited 0 is done, one that failed is restarted,
// and a new spec runs it once more.
func TestJobRunsOncePerSpec(t *testing.T) {
	job := func(w *spec.Workload) { w.Job, w.Healthcheck, w.Restart = true, nil, "no" }
	d := resolved(workload("migrate", 1, job))
	done := fresh(d, "migrate", 0, exited(0))
	equalStrings(t, actions(Diff(d, observed(done))), nil)
	equalStrings(t, actions(Diff(d, observed(fresh(d, "migrate", 0, exited(1))))), []string{"restart migrate/0"})
	equalStrings(t, actions(Diff(d, observed(stale(d, "migrate", 0, exited(0))))), []string{"start migrate/0"})

	// The same exited container of a workload that is no job is a crash.
	d = resolved(workload("web", 1, func(w *spec.Workload) { w.Healthcheck = nil }))
	equalStrings(t, actions(Diff(d, observed(fresh(d, "web", 0, exited(0))))), []string{"restart web/0"})
}

// An operator's rollback takes back update.rollback_parallelism slots at
// once (compose's rollback_config.parallelism); 0 takes all at once.
func TestRollbackParallelism(t *testing.T) {
	for _, tc := range []struct {
		par  int
		want []string
	}{
		{0, []string{"stop web/0", "stop web/1", "stop web/2"}},
		{1, []string{"stop web/0", "wait web/1", "wait web/2"}},
		{2, []string{"stop web/0", "stop web/1", "wait web/2"}},
	} {
		d := resolved(workload("web", 3, func(w *spec.Workload) { w.Update.RollbackParallelism = tc.par }))
		o := observed(stale(d, "web", 0), fresh(d, "web", 0, withID("a")), stale(d, "web", 1), fresh(d, "web", 1, withID("b")),
			stale(d, "web", 2), fresh(d, "web", 2, withID("c")))
		o.RollingBack = map[string]string{"web": d.Workload("web").Hash}
		p := Diff(d, o)
		equalStrings(t, actions(p), tc.want)
		for _, s := range p.Steps() {
			if s.Action == ActWait && (s.Wait != WaitQueue || s.Why.Kind != ReasonQueued || s.Why.Parallelism != tc.par) {
				t.Errorf("par %d: %s: %+v", tc.par, brief(s), s.Why)
			}
		}
	}
}
