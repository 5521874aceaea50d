package reconcile

import (
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// DESIGN §1: a container that has not been healthy since it last started is
// booting until its health_deadline, whatever the engine's health says;
// crashed is exited or dead, unhealthy after it had been healthy since its
// start, or unhealthy past that deadline.
func TestSlowStarterIsBooting(t *testing.T) {
	// startedAgo: started that long before t0, never healthy since, and
	// the engine now reads it unhealthy (probes failed past their retries).
	slow := func(startedAgo time.Duration) func(*docker.Container) {
		return func(c *docker.Container) {
			c.Health, c.HealthySinceStart = docker.HealthUnhealthy, false
			c.Created, c.StartedAt = t0.Add(-startedAgo), t0.Add(-startedAgo)
		}
	}
	noStartPeriod := func(w *spec.Workload) { w.Healthcheck.StartPeriod = 0 }
	runRules(t, []ruleCase{
		{name: "unhealthy before the deadline, replacing an old one: wait, old untouched",
			desired: []*spec.Workload{workload("web", 1, noStartPeriod)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, slow(3*time.Second)))
			},
			want: []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if want := t0.Add(-3 * time.Second).Add(spec.DefaultHealthDeadline); !s.Until.Equal(want) {
					t.Fatalf("until %v, want %v (the deadline, for a countdown)", s.Until, want)
				}
				for _, part := range []string{"booting", "retries 3", "start_period 0s", "deadline 1m0s"} {
					if !strings.Contains(s.Reason, part) {
						t.Fatalf("reason %q lacks %q", s.Reason, part)
					}
				}
				if len(p.Failures()) != 0 {
					t.Fatalf("failures %+v", p.Failures())
				}
			}},
		{name: "unhealthy before the deadline, first start: wait, no restart",
			desired: []*spec.Workload{workload("web", 1)},
			build:   func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0, slow(3*time.Second))) },
			want:    []string{"wait web/0"}},
		{name: "restarted by the engine long after its creation: the deadline counts from the last start",
			desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, slow(3*time.Second), func(c *docker.Container) { c.Created = t0.Add(-24 * time.Hour) }))
			},
			want: []string{"wait web/0"}},
		{name: "still unhealthy past the deadline: crashed, restarted",
			desired: []*spec.Workload{workload("web", 1)},
			build:   func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0, slow(61*time.Second))) },
			want:    []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "crashed: not healthy within health_deadline 1m0s of its start" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "still unhealthy past the deadline, replacing an old one: a failure",
			desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, slow(61*time.Second)))
			},
			want: []string{"restart web/0"}, // failure_action pause: the session stops acting
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if f := p.Failures(); len(f) != 1 || !strings.Contains(f[0].Reason, "crashed") {
					t.Fatalf("failures %+v", f)
				}
			}},
		{name: "unhealthy at its deadline to the instant, replacing an old one: a failure, as a moment later",
			desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, slow(60*time.Second)))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if f := p.Failures(); len(f) != 1 {
					t.Fatalf("at the deadline: crashed without a failure, so restarted past failure_action: failures %+v", f)
				}
			}},
		{name: "unhealthy after it had been healthy since its start: crashed at once",
			desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, slow(3*time.Second), func(c *docker.Container) { c.HealthySinceStart = true }))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "crashed: unhealthy after it was healthy" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "exited is crashed, whatever the deadline",
			desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, slow(3*time.Second), exited(1)))
			},
			want: []string{"restart web/0"}},
	})
}
