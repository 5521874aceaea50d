package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// revertOf makes c the slot's revert: created before the stale container
// (which stale() makes an hour before t0), so the desired spec went back to
// what it runs (DESIGN §1, rule 13).
func revertOf(c *docker.Container) {
	c.Created, c.StartedAt = t0.Add(-2*time.Hour), t0.Add(-2*time.Hour)
}

// drainedRevert is a revert whose pre_stop ran during an interrupted roll:
// it runs, its healthcheck now fails. healthyBefore says whether the
// engine's last probes still show it healthy since its start (they do only
// for a few seconds after the drain: the engine keeps five).
func drainedRevert(healthyBefore bool) func(*docker.Container) {
	return func(c *docker.Container) {
		revertOf(c)
		c.Health, c.HealthySinceStart = docker.HealthUnhealthy, healthyBefore
	}
}

// Issue 18 row 3: v1 → v2 interrupted while a v1 container drains, then v1
// applied again. The drained v1 containers are reverts, never new
// containers that missed their deadline: they are restarted, nothing is
// rolled back or put on hold, whatever the engine's last probes say.
func TestRule13DrainedRevertIsRestartedNeverRolledBack(t *testing.T) {
	rollback := func(w *spec.Workload) {
		w.Update.FailureAction = spec.FailureRollback
		w.Update.Drain = 5 * time.Second
	}
	for _, healthyBefore := range []bool{true, false} {
		name := "probes still show it healthy since its start"
		if !healthyBefore {
			name = "probes no longer show it healthy since its start"
		}
		t.Run(name, func(t *testing.T) {
			d := resolved(workload("web", 3, rollback))
			// stale() is the other version (v2 here, by the test's
			// naming v1): created after the revert.
			p := Diff(d, observed(
				stale(d, "web", 0), fresh(d, "web", 0, drainedRevert(healthyBefore)),
				fresh(d, "web", 1, revertOf), fresh(d, "web", 2, revertOf)))
			if f := p.Failures(); len(f) != 0 {
				t.Fatalf("a revert failed the rollout: %+v", f)
			}
			for _, s := range p.Steps() {
				if s.Hold != "" {
					t.Fatalf("a revert's spec put on hold: %s", brief(s))
				}
			}
			equalStrings(t, actions(p), []string{"restart web/0"})
			if s := p.Steps()[0]; s.ContainerID != "id-web-0-new" {
				t.Fatalf("restarted %s, want the revert id-web-0-new", s.ContainerID)
			}
		})
	}
	t.Run("a new container past its deadline still fails", func(t *testing.T) {
		d := resolved(workload("web", 1, rollback))
		p := Diff(d, observed(stale(d, "web", 0), fresh(d, "web", 0, func(c *docker.Container) {
			c.Health, c.HealthySinceStart = docker.HealthUnhealthy, false
			c.Created, c.StartedAt = t0.Add(-2*time.Minute), t0.Add(-2*time.Minute)
		})))
		if f := p.Failures(); len(f) != 1 {
			t.Fatalf("failures %+v, want the new container's", f)
		}
	})
}

// unhealthyAfterHealthy is a running container that had been healthy since
// its start and now fails its healthcheck.
func unhealthyAfterHealthy(c *docker.Container) {
	c.Health, c.HealthySinceStart = docker.HealthUnhealthy, true
}

// Issue 18 row 4, rule 4: a health failure across the workload restarts no
// more than parallelism running containers at once; exited ones restart at
// once.
func TestRule4WorkloadWideHealthFailureRestartsOneAtATime(t *testing.T) {
	par := func(n int) func(*spec.Workload) { return func(w *spec.Workload) { w.Update.Parallelism = n } }
	waitsOneAtATime := func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
		for _, s := range p.Steps() {
			if s.Action == ActWait && !strings.Contains(s.Reason, "workload-wide health failure: restarting one at a time") {
				t.Fatalf("wait %s says %q", brief(s), s.Reason)
			}
		}
	}
	runRules(t, []ruleCase{
		{name: "two unhealthy at once: one restarts, the other waits", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, unhealthyAfterHealthy), fresh(d, "web", 1, unhealthyAfterHealthy))
			},
			want: []string{"restart web/0", "wait web/1"}, check: waitsOneAtATime},
		{name: "parallelism 2 of 3: two restart", desired: []*spec.Workload{workload("web", 3, par(2))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, unhealthyAfterHealthy), fresh(d, "web", 1, unhealthyAfterHealthy),
					fresh(d, "web", 2, unhealthyAfterHealthy))
			},
			want: []string{"restart web/0", "restart web/1", "wait web/2"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[2].Reason; !strings.Contains(r, "restarting 2 at a time") {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "exited ones restart at once", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, exited(1)), fresh(d, "web", 1, exited(137)), fresh(d, "web", 2, unhealthyAfterHealthy))
			},
			want: []string{"restart web/0", "restart web/1", "restart web/2"}},
		{name: "a restart in flight (listed exited meanwhile) holds the next", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "web", 0, exited(0)), fresh(d, "web", 1, unhealthyAfterHealthy))
				o.Restarting = map[string]bool{"id-web-0-new": true}
				return o
			},
			want: []string{"restart web/0", "wait web/1"}, check: waitsOneAtATime},
		{name: "a restarted container still booting holds the next", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "web", 0, booting), fresh(d, "web", 1, unhealthyAfterHealthy))
				o.Restarts = map[string]int{"id-web-0-new": 1}
				return o
			},
			want: []string{"wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[1].Reason; !strings.Contains(r, "workload-wide health failure") {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "once it is healthy again the next restarts", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "web", 0), fresh(d, "web", 1, unhealthyAfterHealthy))
				o.Restarts = map[string]int{"id-web-0-new": 1}
				return o
			},
			want: []string{"restart web/1"}},
		{name: "past its deadline it no longer holds the next", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "web", 0, func(c *docker.Container) {
					c.Health, c.HealthySinceStart = docker.HealthUnhealthy, false
					c.StartedAt = t0.Add(-2 * spec.DefaultHealthDeadline)
				}), fresh(d, "web", 1, unhealthyAfterHealthy))
				o.Restarts = map[string]int{"id-web-0-new": 1}
				return o
			},
			// web/0 crashed again: its backoff (1s after one restart)
			// has run out since it started; it takes the budget first.
			want: []string{"restart web/0", "wait web/1"}},
	})
}

// Every wait says its kind as data (DESIGN §5), so a view renders its
// countdown from the kind, never from the reason's words.
func TestWaitsSayTheirKind(t *testing.T) {
	noHC := func(c *docker.Container) {
		c.HasHealthcheck, c.Health = false, docker.HealthNone
		c.StartedAt = t0.Add(-time.Second)
	}
	noHCWorkload := func(w *spec.Workload) { w.Healthcheck = nil }
	blueGreen := func(w *spec.Workload) { w.Update.Strategy = spec.StrategyBlueGreen }
	cases := []struct {
		name    string
		desired *spec.Workload
		build   func(d *spec.ResolvedDesired) *Observed
		want    WaitKind
		until   bool
	}{
		{"booting", workload("web", 1), func(d *spec.ResolvedDesired) *Observed {
			return observed(stale(d, "web", 0), fresh(d, "web", 0, booting))
		}, WaitBoot, true},
		{"min_ready", workload("web", 1, noHCWorkload), func(d *spec.ResolvedDesired) *Observed {
			return observed(fresh(d, "web", 0, noHC))
		}, WaitReady, true},
		{"backoff", workload("web", 1), func(d *spec.ResolvedDesired) *Observed {
			return observed(fresh(d, "web", 0, exited(1), func(c *docker.Container) { c.RestartCount, c.FinishedAt = 4, t0.Add(-time.Second) }))
		}, WaitBackoff, true},
		{"parallelism", workload("web", 2), func(d *spec.ResolvedDesired) *Observed {
			return observed(stale(d, "web", 0), fresh(d, "web", 0, booting), stale(d, "web", 1))
		}, WaitQueue, false},
		{"restarts one at a time", workload("web", 2), func(d *spec.ResolvedDesired) *Observed {
			return observed(fresh(d, "web", 0, unhealthyAfterHealthy), fresh(d, "web", 1, unhealthyAfterHealthy))
		}, WaitQueue, false},
		{"blue-green", workload("web", 2, blueGreen), func(d *spec.ResolvedDesired) *Observed {
			return observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1), fresh(d, "web", 1, booting))
		}, WaitBlueGreen, false},
		{"restarting", workload("web", 1), func(d *spec.ResolvedDesired) *Observed {
			return observed(fresh(d, "web", 0, func(c *docker.Container) { c.State = docker.StateRestarting }))
		}, WaitRestarting, false},
		{"paused", workload("web", 1), func(d *spec.ResolvedDesired) *Observed {
			return observed(fresh(d, "web", 0, func(c *docker.Container) { c.State = docker.StatePaused }))
		}, WaitPaused, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := resolved(tc.desired)
			p := Diff(d, tc.build(d))
			found := false
			for _, s := range p.Steps() {
				if s.Action != ActWait {
					continue
				}
				if s.Wait == "" {
					t.Fatalf("a wait without its kind: %s (%q)", brief(s), s.Reason)
				}
				if s.Wait == tc.want {
					found = true
					if tc.until && s.Until.IsZero() {
						t.Errorf("%s has no Until", brief(s))
					}
				}
			}
			if !found {
				t.Fatalf("no %s wait in %q", tc.want, briefs(p))
			}
		})
	}
}
