package reconcile

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Issue 26 row 15: an engine that went away mid-start comes back with the
// new container Created (never started) and the old ones Exited. A
// container that never started cannot have missed its health deadline: it
// is made again. An old container that went down while no up-to-date one
// serves its slot is brought back. A new container that did start (or
// whose start failed) and is not healthy within its deadline still fails.
func TestEngineCameBack(t *testing.T) {
	short := func(w *spec.Workload) { w.Update.HealthDeadline = 30 * time.Second }
	stopFirst := func(w *spec.Workload) { short(w); w.Update.Order = spec.OrderStopFirst }
	// created is slot 0's new container, created 35s before t0 (past its
	// 30s deadline) and never started.
	created := func(c *docker.Container) {
		c.State, c.Health, c.HealthySinceStart = docker.StateCreated, docker.HealthNone, false
		c.Created, c.StartedAt = t0.Add(-35*time.Second), time.Time{}
	}
	down := exited(0)
	noFailure := func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
		t.Helper()
		if fs := p.Failures(); len(fs) != 0 {
			t.Fatalf("failures %+v", fs)
		}
	}
	failed := func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
		t.Helper()
		if fs := p.Failures(); len(fs) != 1 || fs[0].Why.Kind != ReasonHealthDeadline {
			t.Fatalf("failures %+v, want the new container's missed deadline", fs)
		}
	}
	kinds := func(want ...ReasonKind) func(*testing.T, Plan, *spec.ResolvedDesired) {
		return func(t *testing.T, p Plan, d *spec.ResolvedDesired) {
			t.Helper()
			noFailure(t, p, d)
			steps := p.Steps()
			for i, k := range want {
				if steps[i].Why.Kind != k || steps[i].Reason != steps[i].Why.String() {
					t.Fatalf("step %d: %s %q, want a %s reason", i, brief(steps[i]), steps[i].Reason, k)
				}
			}
		}
	}
	runRules(t, []ruleCase{
		{name: "the issue's host: the new one is made again, the old one restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down), fresh(d, "web", 0, created))
			},
			want: []string{"restart web/0", "stop web/0"}, check: kinds(ReasonOldDown, ReasonNeverStarted)},
		{name: "never started, within its deadline: made again too", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, created, func(c *docker.Container) { c.Created = t0.Add(-time.Second) }))
			},
			want: []string{"stop web/0"}, check: kinds(ReasonNeverStarted)},
		{name: "its start in flight: booting, waited for", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, created, func(c *docker.Container) { c.Starting = true }))
			},
			want: []string{"wait web/0"}, check: failed},
		{name: "its start failed: a failure of its version, not a lost start", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, created, func(c *docker.Container) { c.Error = "exec: no such file" }))
			},
			want: []string{"restart web/0"}, check: failed},
		{name: "it started and exited: failed, never made again", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, down, func(c *docker.Container) {
					c.Created, c.StartedAt = t0.Add(-35*time.Second), t0.Add(-35*time.Second)
				}))
			},
			want: []string{"restart web/0"}, check: failed},
		{name: "it started, was restarted late, and is still booting: failed from its creation", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, booting, func(c *docker.Container) { c.Created = t0.Add(-35 * time.Second) }))
			},
			want: []string{"wait web/0"}, check: failed},
		{name: "old one down, no new one yet: started beside it, and it is restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0, down)) },
			want:  []string{"start web/0", "restart web/0"}, check: kinds(ReasonRoll, ReasonOldDown)},
		{name: "old one down, new one booting: restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down), fresh(d, "web", 0, booting))
			},
			want: []string{"restart web/0", "wait web/0"}, check: kinds(ReasonOldDown, ReasonBooting)},
		{name: "old one down, its slot queued: restarted, so it serves while it waits", desired: []*spec.Workload{workload("web", 2, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, booting), stale(d, "web", 1, down))
			},
			want: []string{"wait web/0", "restart web/1", "wait web/1"}, check: kinds(ReasonBooting, ReasonOldDown, ReasonQueued)},
		{name: "old one down, new one healthy: rolled, not restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0, down), fresh(d, "web", 0)) },
			want:  []string{"roll web/0"}},
		{name: "stop-first: the old one goes anyway, not restarted", desired: []*spec.Workload{workload("web", 1, stopFirst)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0, down)) },
			want:  []string{"roll web/0"}},
		{name: "old one down within its backoff: waited for", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down, func(c *docker.Container) { c.RestartCount, c.FinishedAt = 3, t0.Add(-time.Second) }),
					fresh(d, "web", 0, booting))
			},
			want: []string{"wait web/0", "wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[0]; s.Wait != WaitBackoff || !s.Until.Equal(t0.Add(3*time.Second)) {
					t.Fatalf("first step %s %s until %v, want the old one's 4s backoff", brief(s), s.Wait, s.Until)
				}
			}},
		{name: "another old one still runs: nothing restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down), stale(d, "web", 0, withID("x")), fresh(d, "web", 0, booting))
			},
			want: []string{"wait web/0"}},
		{name: "of two old ones down, the one that started last", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down), stale(d, "web", 0, down, withID("x"), func(c *docker.Container) { c.StartedAt = t0.Add(-time.Minute) }),
					fresh(d, "web", 0, booting))
			},
			want: []string{"restart web/0", "wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[0]; s.ContainerID != "x" {
					t.Fatalf("restarts %s, want x, the last started", brief(s))
				}
			}},
		{name: "an old one draining is leaving: not restarted", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(stale(d, "web", 0, down), fresh(d, "web", 0, booting))
				o.Draining = map[string]bool{"id-web-0-old": true}
				return o
			},
			want: []string{"wait web/0"}},
		{name: "an old one whose restart is in flight: not restarted again", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(stale(d, "web", 0, down), fresh(d, "web", 0, booting))
				o.Restarting = map[string]bool{"id-web-0-old": true}
				return o
			},
			want: []string{"wait web/0"}},
		{name: "an old one that never started served nothing: not started", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, created), fresh(d, "web", 0, booting))
			},
			want: []string{"wait web/0"}},
		{name: "its new spec on hold: the old one is brought back to serve", desired: []*spec.Workload{workload("web", 1, short)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(stale(d, "web", 0, down))
				w := d.Workload("web")
				o.Holds = map[string]map[string]bool{"web": {w.Hash: true}}
				return o
			},
			want: []string{"restart web/0"}, check: kinds(ReasonOldDown)},
		{name: "a failed new one rolled back: the old one is brought back", desired: []*spec.Workload{workload("web", 1, func(w *spec.Workload) {
			short(w)
			w.Update.FailureAction = spec.FailureRollback
		})},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, down), fresh(d, "web", 0, unhealthy, func(c *docker.Container) {
					c.HealthySinceStart, c.Created, c.StartedAt = false, t0.Add(-35*time.Second), t0.Add(-35*time.Second)
				}))
			},
			want: []string{"restart web/0", "stop web/0"}},
	})
}
