package reconcile

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

var workloadNames = []string{"api", "web", "worker", "gone"} // "gone" is never desired

// genDesired draws a desired state of one to three workloads.
func genDesired(t *rapid.T) *spec.ResolvedDesired {
	var ws []*spec.Workload
	for _, name := range workloadNames[:3] {
		if rapid.IntRange(0, 4).Draw(t, name+"-desired") == 0 {
			continue
		}
		w := workload(name, rapid.IntRange(0, 4).Draw(t, name+"-replicas"))
		w.Version = rapid.SampledFrom([]string{"1", "2"}).Draw(t, name+"-version")
		w.Image = name + ":v" + w.Version
		w.Update.Parallelism = rapid.IntRange(1, 3).Draw(t, name+"-parallelism")
		w.Update.Strategy = rapid.SampledFrom([]string{spec.StrategyRolling, spec.StrategyBlueGreen}).Draw(t, name+"-strategy")
		w.Update.Order = rapid.SampledFrom([]string{spec.OrderStartFirst, spec.OrderStopFirst}).Draw(t, name+"-order")
		w.Update.FailureAction = rapid.SampledFrom([]string{spec.FailurePause, spec.FailureRollback, spec.FailureContinue}).Draw(t, name+"-failure")
		if rapid.Bool().Draw(t, name+"-nohealthcheck") {
			w.Healthcheck = nil
		}
		if rapid.Bool().Draw(t, name+"-limited") {
			w.Resources.Memory = 64 << 20
		}
		ws = append(ws, w)
	}
	return resolved(ws...)
}

// genObserved draws containers around the desired state, slot by slot so that
// slots often hold several containers: up-to-date, stale, legacy, orphans,
// surplus, extras and unmanaged ones, in any state.
func genObserved(t *rapid.T, d *spec.ResolvedDesired) *Observed {
	o := &Observed{Now: t0, Restarts: map[string]int{}}
	for _, name := range workloadNames {
		w := d.Workload(name)
		if w == nil || w.Err != nil {
			w = &resolved(workload(name, 1)).Workloads[0]
		}
		one := &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{*w}}
		for slot := 0; slot <= w.Replicas; slot++ {
			for k := rapid.IntRange(0, 3).Draw(t, "in-slot"); k > 0; k-- {
				o.Containers = append(o.Containers, genContainer(t, one, w, slot, len(o.Containers)))
			}
		}
	}
	if rapid.Bool().Draw(t, "hold") && len(d.Workloads) > 0 {
		w := d.Workloads[0]
		o.Holds = map[string]map[string]bool{w.Name: {w.Hash: true}}
	}
	o.SkipHealth = rapid.IntRange(0, 9).Draw(t, "skiphealth") == 0
	return o
}

func genContainer(t *rapid.T, one *spec.ResolvedDesired, w *spec.Resolved, slot, i int) docker.Container {
	var c docker.Container
	if rapid.Bool().Draw(t, "fresh") {
		c = fresh(one, w.Name, slot)
	} else {
		c = stale(one, w.Name, slot)
	}
	c.ID = fmt.Sprintf("c%02d", i)
	c.Name = c.Name + "-" + c.ID
	switch rapid.IntRange(0, 11).Draw(t, "labels") {
	case 0:
		delete(c.Labels, docker.SpecLabel(pfx)) // legacy
	case 1:
		c.Labels[docker.SlotLabel(pfx)] = "x" // orphan
	case 2:
		delete(c.Labels, docker.ManagedLabel(pfx)) // not ours
	}
	c.State = rapid.SampledFrom([]docker.State{docker.StateRunning, docker.StateRunning, docker.StateRunning,
		docker.StateRunning, docker.StateRunning, docker.StateExited, docker.StateRestarting, docker.StateCreated, docker.StateDead}).Draw(t, "state")
	c.Starting = c.State == docker.StateCreated && rapid.Bool().Draw(t, "starting") // its start in flight
	c.HasHealthcheck = w.Healthcheck != nil
	if c.HasHealthcheck {
		c.Health = rapid.SampledFrom([]docker.Health{docker.HealthHealthy, docker.HealthStarting, docker.HealthUnhealthy}).Draw(t, "health")
	} else {
		c.Health = docker.HealthNone
	}
	c.HealthySinceStart = c.Health == docker.HealthHealthy || rapid.Bool().Draw(t, "healthy-since-start")
	age := time.Duration(rapid.IntRange(0, 300).Draw(t, "age")) * time.Second
	c.Created, c.StartedAt = t0.Add(-age), t0.Add(-age)
	if c.State != docker.StateRunning {
		c.FinishedAt = t0.Add(-age / 2)
	}
	c.RestartCount = rapid.IntRange(0, 3).Draw(t, "restarts")
	if rapid.Bool().Draw(t, "drift") {
		c.Limits.Memory = 128 << 20
	}
	return c
}

type slotKey struct {
	workload string
	slot     int
}

// healthyInSlot counts the healthy containers of each desired slot. It judges
// health on its own, not through the package's code under test.
func healthyInSlot(d *spec.ResolvedDesired, o *Observed, exclude map[string]bool) map[slotKey]int {
	out := map[slotKey]int{}
	for i := range o.Containers {
		c := &o.Containers[i]
		if c.Labels[docker.ManagedLabel(pfx)] != "true" || exclude[c.ID] {
			continue
		}
		w := d.Workload(c.Labels[docker.WorkloadLabel(pfx)])
		idx, err := strconv.Atoi(c.Labels[docker.SlotLabel(pfx)])
		if w == nil || err != nil || idx >= w.Replicas || c.State != docker.StateRunning {
			continue
		}
		healthy := o.SkipHealth || c.Health == docker.HealthHealthy ||
			(!c.HasHealthcheck && o.Now.Sub(c.StartedAt) >= w.Update.MinReady)
		if healthy {
			out[slotKey{w.Name, idx}]++
		}
	}
	return out
}

// I1: no plan stops or rolls the last healthy container of a desired slot,
// unless the workload is stop-first.
func TestI1NeverStopsLastHealthy(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Several scenarios a check: the interesting ones (a healthy old
		// container beside a booting new one) are rare draws.
		for range 8 {
			checkI1(t)
		}
	})
}

func checkI1(t *rapid.T) {
	{
		d := genDesired(t)
		o := genObserved(t, d)
		p := Diff(d, o)
		stopped := map[string]bool{}
		for _, s := range p.Steps() {
			if s.Action == ActStop || s.Action == ActRoll {
				stopped[s.ContainerID] = true
			}
		}
		before, after := healthyInSlot(d, o, nil), healthyInSlot(d, o, stopped)
		for k, n := range before {
			if n > 0 && after[k] == 0 && d.Workload(k.workload).EffectiveOrder() != spec.OrderStopFirst {
				t.Fatalf("slot %s/%d loses its last healthy container:\n%s", k.workload, k.slot, p)
			}
		}
	}
}

// I2: Diff is deterministic, whatever the order of the containers.
func TestI2Deterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		first := Diff(d, o)
		perm := rapid.Permutation(o.Containers).Draw(t, "perm")
		o2 := *o
		o2.Containers = perm
		if second := Diff(d, &o2); !reflect.DeepEqual(first, second) {
			t.Fatalf("two diffs differ:\n%s\nvs\n%s", first, second)
		}
	})
}

// Every wait Diff plans, its then rows' too, carries its kind: a view
// never has to read a reason's words to tell a deadline from a backoff.
func TestEveryWaitHasAKind(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		p := Diff(d, o)
		AddThen(d, o, &p)
		for _, wp := range p.Workloads {
			for _, s := range append(append([]Step(nil), wp.Steps...), wp.Then...) {
				if s.Action == ActWait && s.Wait == "" {
					t.Fatalf("wait without a kind: %s %q", brief(s), s.Reason)
				}
			}
		}
	})
}

// I3: at the converged state the plan is empty.
func TestI3ConvergedIsFixpoint(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := &Observed{Now: t0}
		for _, w := range d.Workloads {
			for i := 0; i < w.Replicas; i++ {
				c := fresh(d, w.Name, i)
				if w.Healthcheck == nil {
					c.HasHealthcheck, c.Health = false, docker.HealthNone
				}
				o.Containers = append(o.Containers, c)
			}
		}
		// Unmanaged neighbours do not disturb the fixpoint.
		n := rapid.IntRange(0, 3).Draw(t, "unmanaged")
		for i := 0; i < n; i++ {
			o.Containers = append(o.Containers, docker.Container{ID: fmt.Sprint("u", i), Name: fmt.Sprint("other-", i), State: docker.StateExited})
		}
		if p := Diff(d, o); !p.Empty() {
			t.Fatalf("converged state has a plan:\n%s", p)
		}
	})
}

// I5: a container without our managed label is never in any plan.
func TestI5UnmanagedNeverPlanned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		unmanaged := map[string]bool{}
		for _, c := range o.Containers {
			if c.Labels[docker.ManagedLabel(pfx)] != "true" {
				unmanaged[c.ID] = true
				unmanaged[c.Name] = true
			}
		}
		for _, s := range Diff(d, o).Steps() {
			if unmanaged[s.ContainerID] || (s.Action != ActStart && unmanaged[s.Container]) {
				t.Fatalf("step on an unmanaged container: %s", brief(s))
			}
		}
	})
}

// I6: Apply runs every step even when some fail and joins their errors.
func TestI6ApplyRunsEveryStep(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		steps := Diff(d, o).Executable()
		r := recorderFor(o)
		failing := 0
		for _, s := range steps {
			if rapid.Bool().Draw(t, "fail") {
				verb := map[Action]string{ActStart: "create", ActStop: "stop", ActRoll: "stop", ActRestart: "restart", ActUpdate: "update"}[s.Action]
				r.fail[verb+":"+s.Container] = fmt.Errorf("injected %d", failing)
				failing++
			}
		}
		results, err := Apply(t.Context(), r, steps, ApplyOptions{})
		if len(results) != len(steps) {
			t.Fatalf("%d of %d steps ran", len(results), len(steps))
		}
		failed := 0
		for _, res := range results {
			if res.Err != nil {
				failed++
			}
		}
		if failed < failing || (failing > 0) != (err != nil) {
			t.Fatalf("failed %d, injected %d, joined error %v", failed, failing, err)
		}
	})
}

// Diff's slot states hold every managed container with a workload label
// exactly once and no other (I5); at most one container serves a slot, a
// drained one never; a ready slot is desired and served by an up-to-date,
// healthy container.
func TestSlotStatesHoldEveryContainerOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d := genDesired(t)
		o := genObserved(t, d)
		for i := range o.Containers {
			if rapid.IntRange(0, 7).Draw(t, "draining") == 0 {
				if o.Draining == nil {
					o.Draining = map[string]bool{}
				}
				o.Draining[o.Containers[i].ID] = true
			}
		}
		plan := Diff(d, o)
		seen := map[string]int{}
		for _, st := range plan.Slots {
			serving := 0
			for _, c := range st.Containers {
				seen[c.ID]++
				if c.Serves {
					serving++
				}
				if c.Serves && (c.Condition == ConditionDrained || !c.Condition.Healthy()) {
					t.Fatalf("%s/%d: %s serves, %s", st.Workload, st.Slot, c.Name, c.Condition)
				}
			}
			if serving > 1 {
				t.Fatalf("%s/%d: %d containers serve", st.Workload, st.Slot, serving)
			}
			if st.Ready && (!st.Desired || st.Containers[0].Relation == RelNeedsUpdate || !st.Containers[0].Relation.Fresh() || !st.Containers[0].Serves) {
				t.Fatalf("%s/%d ready: %+v", st.Workload, st.Slot, st)
			}
		}
		for _, c := range o.Containers {
			want := 0
			if c.Labels[docker.ManagedLabel(pfx)] == "true" && c.Labels[docker.WorkloadLabel(pfx)] != "" {
				want = 1
			}
			if seen[c.ID] != want {
				t.Fatalf("%s is in %d slot states, want %d", c.Name, seen[c.ID], want)
			}
		}
	})
}
