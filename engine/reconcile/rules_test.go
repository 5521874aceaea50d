package reconcile

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// ruleCase is one situation and the plan it must give.
type ruleCase struct {
	name    string
	desired []*spec.Workload
	build   func(d *spec.ResolvedDesired) *Observed
	want    []string // "action target", in plan order
	check   func(t *testing.T, p Plan, d *spec.ResolvedDesired)
}

func runRules(t *testing.T, cases []ruleCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := resolved(tc.desired...)
			p := Diff(d, tc.build(d))
			equalStrings(t, actions(p), tc.want)
			if tc.check != nil {
				tc.check(t, p, d)
			}
		})
	}
}

func TestRule1StartMissing(t *testing.T) {
	runRules(t, []ruleCase{
		{name: "empty slots start", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed() },
			want:  []string{"start web/0", "start web/1", "start web/2"},
			check: func(t *testing.T, p Plan, d *spec.ResolvedDesired) {
				s := p.Steps()[1]
				if s.Create == nil || s.Create.Name != s.Container || s.Create.Labels[docker.SlotLabel(pfx)] != "1" ||
					s.Create.Labels[docker.SpecLabel(pfx)] != d.Workload("web").Hash || s.Create.Labels[docker.ManagedLabel(pfx)] != "true" {
					t.Fatalf("create spec lacks the labels of DESIGN §4: %+v", s.Create)
				}
				if !strings.HasPrefix(s.Container, "rollcall-web-1-") || len(s.Container) != len("rollcall-web-1-")+8 {
					t.Fatalf("name %q is not <prefix>-<workload>-<slot>-<hash8>", s.Container)
				}
				if s.Reason != "missing: slot 1 of 3" {
					t.Fatalf("reason %q", s.Reason)
				}
			}},
		{name: "stale keeps running while its replacement starts", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0)) },
			want:  []string{"start web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; !strings.Contains(r, "image web:v1 → web:v2") || !strings.Contains(r, "keeps serving") {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "legacy container treated as stale", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0, func(c *docker.Container) { delete(c.Labels, docker.SpecLabel(pfx)) }))
			},
			want: []string{"start web/0"}},
	})
}

func TestRule2RollWhenHealthy(t *testing.T) {
	runRules(t, []ruleCase{
		{name: "stale rolled once replacement healthy", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), fresh(d, "web", 0)) },
			want:  []string{"roll web/0"},
			check: func(t *testing.T, p Plan, d *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if s.ContainerID != "id-web-0-old" || s.Grace != spec.DefaultStopGrace {
					t.Fatalf("rolled the wrong container or grace: %+v", s)
				}
			}},
		{name: "duplicate stopped, first created kept", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				a := fresh(d, "web", 0, withID("a"))
				b := fresh(d, "web", 0, withID("b"), func(c *docker.Container) { c.Created = t0.Add(-2 * time.Minute) })
				return observed(a, b)
			},
			want: []string{"stop web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if id := p.Steps()[0].ContainerID; id != "a" {
					t.Fatalf("stopped %s, want the later-created a", id)
				}
			}},
		{name: "healthy duplicate kept over booting one", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				a := fresh(d, "web", 0, withID("a"), booting)
				a.Created = t0.Add(-time.Hour)
				return observed(a, fresh(d, "web", 0, withID("b")))
			},
			want: []string{"stop web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if id := p.Steps()[0].ContainerID; id != "a" {
					t.Fatalf("stopped %s, want the booting a", id)
				}
			}},
		{name: "converged slot has no steps", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0), fresh(d, "web", 1)) },
			want:  nil},
	})
}

func TestRule3WaitWhileBooting(t *testing.T) {
	runRules(t, []ruleCase{
		{name: "booting with healthcheck: wait until deadline, stale untouched", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, booting))
			},
			want: []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if want := t0.Add(-2 * time.Second).Add(spec.DefaultHealthDeadline); !s.Until.Equal(want) {
					t.Fatalf("until %v, want %v", s.Until, want)
				}
				if !strings.Contains(s.Reason, "booting") {
					t.Fatalf("reason %q", s.Reason)
				}
			}},
		{name: "no healthcheck: wait for min_ready", desired: []*spec.Workload{workload("web", 1, func(w *spec.Workload) { w.Healthcheck = nil })},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, booting, func(c *docker.Container) { c.HasHealthcheck, c.Health = false, docker.HealthNone }))
			},
			want: []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if want := t0.Add(-2 * time.Second).Add(spec.DefaultMinReady); !p.Steps()[0].Until.Equal(want) {
					t.Fatalf("until %v, want %v", p.Steps()[0].Until, want)
				}
			}},
		{name: "no healthcheck: healthy after min_ready", desired: []*spec.Workload{workload("web", 1, func(w *spec.Workload) { w.Healthcheck = nil })},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, func(c *docker.Container) { c.HasHealthcheck, c.Health = false, docker.HealthNone }))
			},
			want: []string{"roll web/0"}},
	})
}

func TestRule4RestartCrashedWithBackoff(t *testing.T) {
	crashed := func(count int, finishedAgo time.Duration) func(*docker.Container) {
		return func(c *docker.Container) {
			exited(137)(c)
			c.RestartCount, c.FinishedAt = count, t0.Add(-finishedAgo)
		}
	}
	runRules(t, []ruleCase{
		{name: "exited past backoff: restart", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, crashed(0, 2*time.Second)))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "crashed: exit 137" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "OOM named in reason", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, crashed(0, 2*time.Second), func(c *docker.Container) { c.OOMKilled = true }))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "crashed: exit 137 (OOM)" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "within backoff 2^3s: wait", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, crashed(4, 5*time.Second)))
			},
			want: []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if want := t0.Add(3 * time.Second); !p.Steps()[0].Until.Equal(want) {
					t.Fatalf("until %v, want %v (finished 5s ago + 8s)", p.Steps()[0].Until, want)
				}
			}},
		{name: "rollcall's own restarts count towards backoff", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				o := observed(fresh(d, "web", 0, crashed(0, 3*time.Second)))
				o.Restarts = map[string]int{"id-web-0-new": 3} // 4s backoff
				return o
			},
			want: []string{"wait web/0"}},
		{name: "backoff capped at one minute", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, crashed(40, 61*time.Second)))
			},
			want: []string{"restart web/0"}},
		{name: "running unhealthy is crashed", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0, unhealthy)) },
			want:  []string{"restart web/0"}},
		{name: "created, never started, nothing to replace: started", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, func(c *docker.Container) {
					c.State, c.Health, c.StartedAt = docker.StateCreated, docker.HealthNone, time.Time{}
				}))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "crashed: created but never started" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "a new container created and never started is made again", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, func(c *docker.Container) {
					c.State, c.Health, c.StartedAt = docker.StateCreated, docker.HealthNone, time.Time{}
				}))
			},
			want: []string{"stop web/0"}},
		{name: "created with its start in flight is booting: nothing stops", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, func(c *docker.Container) {
					c.State, c.Health, c.StartedAt, c.Starting = docker.StateCreated, docker.HealthNone, time.Time{}, true
				}))
			},
			want: []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; !strings.HasPrefix(r, "starting: the engine is starting it") {
					t.Fatalf("reason %q", r)
				}
			}},
	})
	for n, want := range map[int]time.Duration{0: 0, 1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 100: time.Minute} {
		if got := crashBackoff(n); got != want {
			t.Errorf("crashBackoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestRule5UpdateLimitsInPlace(t *testing.T) {
	limited := func(w *spec.Workload) { w.Resources = spec.Resources{NanoCPUs: 5e8, Memory: 64 << 20} }
	runRules(t, []ruleCase{
		{name: "memory changed by hand is drift, put back", desired: []*spec.Workload{workload("web", 1, limited)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, func(c *docker.Container) { c.Limits.Memory = 128 << 20 }))
			},
			want: []string{"update web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if s.Limits != (docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "unless-stopped"}) {
					t.Fatalf("limits %+v", s.Limits)
				}
			}},
		{name: "restart policy changed in place", desired: []*spec.Workload{workload("web", 1, func(w *spec.Workload) { w.Restart = "always" })},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, func(c *docker.Container) { c.Limits.Restart = "unless-stopped" }))
			},
			want: []string{"update web/0"}},
		{name: "a lifted limit needs a new container, named beside the old", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, func(c *docker.Container) { c.Limits.Memory = 64 << 20 }))
			},
			want: []string{"start web/0"},
			check: func(t *testing.T, p Plan, d *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if s.Container != fresh(d, "web", 0).Name+"-id-web" || !strings.Contains(s.Reason, "limit lifted") {
					t.Fatalf("step %+v", s)
				}
			}},
		{name: "resources are not in the hash: no new container", desired: []*spec.Workload{workload("web", 1, limited)},
			build: func(d *spec.ResolvedDesired) *Observed {
				unlimited := resolved(workload("web", 1))
				return observed(fresh(unlimited, "web", 0))
			},
			want: []string{"update web/0"}},
	})
}

func TestRule6SurplusColdExtra(t *testing.T) {
	runRules(t, []ruleCase{
		{name: "surplus index >= replicas stopped", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0), fresh(d, "web", 1), fresh(d, "web", 2), fresh(d, "web", 3))
			},
			want: []string{"stop web/2", "stop web/3"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "surplus: index 2 ≥ replicas 2" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "cold: replicas 0 stops all", desired: []*spec.Workload{workload("web", 0)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(resolved(workload("web", 2)), "web", 0), stale(d, "web", 1))
			},
			want: []string{"stop web/0", "stop web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "cold: replicas 0" {
					t.Fatalf("reason %q", r)
				}
			}},
		{name: "extra: workload gone", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0), fresh(resolved(workload("old", 1)), "old", 0))
			},
			want: []string{"stop old/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if r := p.Steps()[0].Reason; r != "extra: workload old is not in the desired state" {
					t.Fatalf("reason %q", r)
				}
			}},
	})
}

func TestRule7OrphansDrainedLast(t *testing.T) {
	orphan := func(d *spec.ResolvedDesired) docker.Container {
		return stale(d, "web", 0, withID("orphan"), func(c *docker.Container) { c.Labels[docker.SlotLabel(pfx)] = "x" })
	}
	runRules(t, []ruleCase{
		{name: "kept while a slot is not healthy", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(orphan(d), fresh(d, "web", 0)) },
			want:  []string{"start web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if len(p.Workloads[0].Notes) != 1 || !strings.Contains(p.Workloads[0].Notes[0], "orphan") {
					t.Fatalf("notes %q", p.Workloads[0].Notes)
				}
			}},
		{name: "drained once every slot is healthy", desired: []*spec.Workload{workload("web", 2)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(orphan(d), fresh(d, "web", 0), fresh(d, "web", 1))
			},
			want: []string{"roll web/-"}},
	})
}

func TestRule8Parallelism(t *testing.T) {
	three := func(d *spec.ResolvedDesired) []docker.Container {
		return []docker.Container{stale(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2)}
	}
	par2 := func(w *spec.Workload) { w.Update.Parallelism = 2 }
	blueGreen := func(w *spec.Workload) { w.Update.Strategy = spec.StrategyBlueGreen }
	runRules(t, []ruleCase{
		{name: "parallelism 1: one slot at a time", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(three(d)...) },
			want:  []string{"start web/0", "wait web/1", "wait web/2"}},
		{name: "parallelism 2", desired: []*spec.Workload{workload("web", 3, par2)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(three(d)...) },
			want:  []string{"start web/0", "start web/1", "wait web/2"}},
		{name: "a slot mid-roll holds the others", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(append(three(d), fresh(d, "web", 2, booting))...)
			},
			want: []string{"wait web/0", "wait web/1", "wait web/2"}},
		{name: "first starts are not limited", desired: []*spec.Workload{workload("web", 4)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), stale(d, "web", 1), fresh(d, "web", 1, booting))
			},
			want: []string{"wait web/0", "wait web/1", "start web/2", "start web/3"}},
		{name: "done slot rolls and frees the next", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(append(three(d), fresh(d, "web", 0))...) },
			want:  []string{"roll web/0", "start web/1", "wait web/2"}},
		{name: "blue-green starts every slot at once", desired: []*spec.Workload{workload("web", 3, blueGreen)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(three(d)...) },
			want:  []string{"start web/0", "start web/1", "start web/2"}},
		{name: "blue-green drains nothing until all are healthy", desired: []*spec.Workload{workload("web", 3, blueGreen)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(append(three(d), fresh(d, "web", 0), fresh(d, "web", 1), fresh(d, "web", 2, booting))...)
			},
			want: []string{"wait web/0", "wait web/1", "wait web/2"}},
		{name: "blue-green drains all once all are healthy", desired: []*spec.Workload{workload("web", 3, blueGreen)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(append(three(d), fresh(d, "web", 0), fresh(d, "web", 1), fresh(d, "web", 2))...)
			},
			want: []string{"roll web/0", "roll web/1", "roll web/2"}},
	})
}

func TestRule8aStopFirst(t *testing.T) {
	stopFirst := func(w *spec.Workload) { w.Update.Order = spec.OrderStopFirst }
	fixedPort := func(w *spec.Workload) {
		w.Ports = []spec.Port{{HostIP: "127.0.0.1", HostPort: 8080, ContainerPort: 8080, Proto: "tcp"}}
	}
	runRules(t, []ruleCase{
		{name: "old stopped first, flagged as downtime", desired: []*spec.Workload{workload("web", 2, stopFirst)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), stale(d, "web", 1)) },
			want:  []string{"roll web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if !s.Downtime || !strings.HasPrefix(s.Reason, "stop-first: slot down until the new container is healthy") {
					t.Fatalf("step %+v", s)
				}
			}},
		{name: "empty slot then starts, others wait for it", desired: []*spec.Workload{workload("web", 2, stopFirst)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 1)) },
			want:  []string{"start web/0", "wait web/1"}},
		{name: "fixed host port forces stop-first", desired: []*spec.Workload{workload("web", 1, fixedPort)},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0)) },
			want:  []string{"roll web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if !p.Steps()[0].Downtime {
					t.Fatal("fixed host port roll not flagged as downtime")
				}
			}},
	})
}

func TestRule9HoldBlocksRestart(t *testing.T) {
	d := resolved(workload("web", 1))
	o := observed(stale(d, "web", 0))
	o.Holds = map[string]map[string]bool{"web": {d.Workload("web").Hash: true}}
	p := Diff(d, o)
	if len(p.Steps()) != 0 {
		t.Fatalf("held spec started again: %q", briefs(p))
	}
	if len(p.Workloads) != 1 || !strings.Contains(p.Workloads[0].Notes[0], "on hold") {
		t.Fatalf("hold not explained: %+v", p.Workloads)
	}
	// A new desired spec is not held.
	d2 := resolved(workload("web", 1, func(w *spec.Workload) { w.Version = "3" }))
	equalStrings(t, actions(Diff(d2, o)), []string{"start web/0"})
}

func TestRule10ForcedRecreate(t *testing.T) {
	d := resolved(workload("web", 1))
	request := t0.Add(-time.Second)
	old := fresh(d, "web", 0)
	o := observed(old)
	o.RecreateBefore = map[string]time.Time{"web": request}
	p := Diff(d, o)
	equalStrings(t, actions(p), []string{"start web/0"})
	if s := p.Steps()[0]; s.Container == old.Name || !strings.Contains(s.Reason, "recreate requested") {
		t.Fatalf("recreate start %+v must get a new name and say why", s)
	}
	// The new one healthy: the old one rolls.
	n := fresh(d, "web", 0, withID("new"), func(c *docker.Container) { c.Created = t0 })
	o.Containers = append(o.Containers, n)
	equalStrings(t, briefs(Diff(d, o)), []string{"roll web/0 " + old.Name})
}

func TestRule11SkipHealth(t *testing.T) {
	d := resolved(workload("web", 1))
	o := observed(stale(d, "web", 0), fresh(d, "web", 0, booting))
	equalStrings(t, actions(Diff(d, o)), []string{"wait web/0"})
	o.SkipHealth = true
	equalStrings(t, actions(Diff(d, o)), []string{"roll web/0"})
}

func TestRule12EngineRestarting(t *testing.T) {
	d := resolved(workload("web", 1))
	o := observed(fresh(d, "web", 0, func(c *docker.Container) { c.State = docker.StateRestarting }))
	p := Diff(d, o)
	equalStrings(t, actions(p), []string{"wait web/0"})
	if !strings.Contains(p.Steps()[0].Reason, "engine is restarting") {
		t.Fatalf("reason %q", p.Steps()[0].Reason)
	}
}

func TestMissingImageStopsNothing(t *testing.T) {
	// pull: never: the missing image is an error (the default pulls it
	// first: TestMissingImageIsPulledFirst).
	never := workload("web", 1, func(w *spec.Workload) { w.Pull = spec.PullNever })
	d := &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"web": never}}
	r := spec.Resolve(t.Context(), d, imageTable{"web:v2": false})
	full := resolved(workload("web", 1))
	o := observed(stale(full, "web", 0), fresh(full, "web", 1), fresh(full, "web", 2))
	p := Diff(r, o)
	if len(p.Steps()) != 0 {
		t.Fatalf("steps for a workload whose image is missing: %q", briefs(p))
	}
	if errs := p.Errors(); len(errs) != 1 || !strings.Contains(errs[0], "web:v2") {
		t.Fatalf("errors %q", errs)
	}
}

func TestHealthDeadline(t *testing.T) {
	late := func(c *docker.Container) {
		booting(c)
		c.Created, c.StartedAt = t0.Add(-2*time.Minute), t0.Add(-2*time.Minute)
	}
	action := func(a string) func(*spec.Workload) { return func(w *spec.Workload) { w.Update.FailureAction = a } }
	runRules(t, []ruleCase{
		{name: "pause: failure reported, nothing stopped", desired: []*spec.Workload{workload("web", 2, action(spec.FailurePause))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, late), stale(d, "web", 1))
			},
			want: []string{"wait web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if f := p.Failures(); len(f) != 1 || f[0].Action != spec.FailurePause || f[0].Slot != 0 {
					t.Fatalf("failures %+v", f)
				}
			}},
		{name: "rollback: new stopped and held, old kept", desired: []*spec.Workload{workload("web", 2, action(spec.FailureRollback))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, late), stale(d, "web", 1))
			},
			want: []string{"stop web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, d *spec.ResolvedDesired) {
				s := p.Steps()[0]
				if s.ContainerID != "id-web-0-new" || s.Hold != d.Workload("web").Hash {
					t.Fatalf("rollback step %+v", s)
				}
			}},
		{name: "first start past the deadline is no failure: nothing to fall back on", desired: []*spec.Workload{workload("web", 1, action(spec.FailureRollback))},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(fresh(d, "web", 0, late)) },
			want:  []string{"wait web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if f := p.Failures(); len(f) != 0 {
					t.Fatalf("failures %+v", f)
				}
			}},
		{name: "a settled container that crashes is restarted, not failed", desired: []*spec.Workload{workload("web", 1)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, exited(1), func(c *docker.Container) { c.Created = t0.Add(-24 * time.Hour) }))
			},
			want: []string{"restart web/0"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if f := p.Failures(); len(f) != 0 {
					t.Fatalf("failures %+v", f)
				}
			}},
		{name: "continue: the other slots go on", desired: []*spec.Workload{workload("web", 2, action(spec.FailureContinue))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0, late), stale(d, "web", 1))
			},
			want: []string{"wait web/0", "start web/1"}},
	})
}

func TestUnmanagedNeverInPlan(t *testing.T) {
	d := resolved(workload("web", 1))
	foreign := stale(d, "web", 0, withID("foreign"))
	delete(foreign.Labels, docker.ManagedLabel(pfx))
	noWorkload := stale(d, "web", 0, withID("anon"))
	delete(noWorkload.Labels, docker.WorkloadLabel(pfx))
	p := Diff(d, observed(foreign, noWorkload, fresh(d, "web", 0)))
	if len(p.Steps()) != 0 {
		t.Fatalf("plan touches unmanaged or unlabelled containers: %q", briefs(p))
	}
	if len(p.Notes) != 1 || !strings.Contains(p.Notes[0], "left alone") {
		t.Fatalf("notes %q", p.Notes)
	}
}

func TestImageRebuiltMakesStale(t *testing.T) {
	d := resolved(workload("web", 1))
	c := fresh(d, "web", 0, func(c *docker.Container) { c.ImageID = "id-old-build" })
	c.Labels[docker.SpecLabel(pfx)] = spec.Hash(d.Workload("web").Workload, "id-old-build")
	p := Diff(d, observed(c))
	equalStrings(t, actions(p), []string{"start web/0"})
	if r := p.Steps()[0].Reason; !strings.Contains(r, "rebuilt") {
		t.Fatalf("reason %q", r)
	}
}

func TestDiffIgnoresInputOrder(t *testing.T) {
	d := resolved(workload("web", 3), workload("api", 2, func(w *spec.Workload) { w.Update.Parallelism = 2 }))
	cs := []docker.Container{stale(d, "web", 0), stale(d, "web", 1), fresh(d, "web", 1, booting), stale(d, "api", 0),
		fresh(d, "api", 3), fresh(resolved(workload("gone", 1)), "gone", 0), fresh(d, "web", 2, exited(1))}
	want := Diff(d, observed(cs...))
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		rng.Shuffle(len(cs), func(a, b int) { cs[a], cs[b] = cs[b], cs[a] })
		if got := Diff(d, observed(cs...)); !reflect.DeepEqual(got, want) {
			t.Fatalf("plan depends on input order:\n%s\nvs\n%s", got, want)
		}
	}
}

func TestPlanTree(t *testing.T) {
	d := resolved(workload("web", 3))
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1), fresh(resolved(workload("old", 1)), "old", 0))
	p := diffThen(d, o)
	want := `old
  ├─ - workload removed from the desired state
  └─ stop    0   rollcall-old-0-` + short(resolved(workload("old", 1)).Workload("old").Hash) + `  extra: workload old is not in the desired state
web
  ├─ ~ image: web:v1 → web:v2
  ├─ ~ replicas: 2 → 3
  ├─ ~ version: 1 → 2
  ├─ roll    0   rollcall-web-0-01234567  image web:v1 → web:v2, version 1 → 2; ` + fresh(d, "web", 0).Name + ` is healthy
  ├─ start   1   ` + fresh(d, "web", 1).Name + `  roll: image web:v1 → web:v2, version 1 → 2; rollcall-web-1-01234567 keeps serving
  ├─ start   2   ` + fresh(d, "web", 2).Name + `  missing: slot 2 of 3
  └─ then roll    1   rollcall-web-1-01234567  image web:v1 → web:v2, version 1 → 2; once ` + fresh(d, "web", 1).Name + ` is healthy
2 start · 1 roll · 1 stop · then 1 roll
`
	if got := p.String(); got != want {
		t.Fatalf("tree:\n%s\nwant:\n%s", got, want)
	}
	if (Plan{}).Summary() != "nothing to do" {
		t.Fatal("empty summary")
	}
}

// What ran is summed up in the plan's words, in the plan's order of
// actions whatever order the steps ran in: apply's and the fleet's last
// lines say it (SummaryOf), with no plan made up to hold the steps.
func TestSummaryOfStepsThatRan(t *testing.T) {
	for _, c := range []struct {
		steps []Step
		want  string
	}{
		{nil, "nothing to do"},
		{[]Step{{Action: ActRoll}}, "1 roll"},
		{[]Step{{Action: ActStop}, {Action: ActRoll}, {Action: ActStart}, {Action: ActStart}, {Action: ActPull}},
			"1 pull · 2 start · 1 roll · 1 stop"},
	} {
		if got := SummaryOf(c.steps); got != c.want {
			t.Errorf("SummaryOf(%v) = %q, want %q", c.steps, got, c.want)
		}
	}
}
