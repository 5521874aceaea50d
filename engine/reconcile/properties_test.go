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
	if c.State == docker.StateCreated && !c.Starting {
		switch rapid.IntRange(0, 2).Draw(t, "created") {
		case 0: // never started: its start was lost
			c.StartedAt, c.Health, c.HealthySinceStart = time.Time{}, docker.HealthNone, false
		case 1: // its start failed
			c.StartedAt, c.Error = time.Time{}, "OCI runtime create failed"
		}
	}
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

// I1: no plan stops, rolls or restarts the last healthy container of a
// desired slot, unless the workload is stop-first.
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
			// A restart takes a running container down too (issue 26
			// row 15: an old container is restarted only while down).
			if s.Action == ActStop || s.Action == ActRoll || s.Action == ActRestart {
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

// Issue 26 row 15, over random states: a container that never started is
// never a failure; a new one that did start (or whose start failed), past
// its deadline and not healthy, still is (no late start or remake hides a
// bad version); a stale container is restarted only while it is down and
// no up-to-date one is healthy in its slot, never under stop-first; and a
// slot whose old containers are all down, with no healthy up-to-date one,
// gets one of them back (or waits out its backoff).
func TestDownAndNeverStartedProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Random states, and states mid-roll (an old container beside a
		// newer one in every slot), several a check: the cases that
		// matter are rare draws in random states.
		for range 4 {
			d := genDesired(t)
			checkDownAndNeverStarted(t, d, genObserved(t, d))
			checkDownAndNeverStarted(t, d, genMidRoll(t, d))
		}
	})
}

// genMidRoll draws every desired slot mid-roll: an old container, in any
// state, and often a newer up-to-date one created after it, in any state:
// running healthy, booting or unhealthy, exited, Created and never
// started, Created with its start failed or in flight; up to twice its
// health deadline old.
func genMidRoll(t *rapid.T, d *spec.ResolvedDesired) *Observed {
	o := &Observed{Now: t0, Restarts: map[string]int{}}
	for _, w := range d.Workloads {
		if w.Err != nil {
			continue
		}
		one := &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{w}}
		for slot := range w.Replicas {
			states := []docker.State{docker.StateRunning, docker.StateExited, docker.StateDead, docker.StateCreated, docker.StateRestarting}
			old := stale(one, w.Name, slot, withID(fmt.Sprintf("o%02d", len(o.Containers))))
			old.State = rapid.SampledFrom(states).Draw(t, "old-state")
			if old.State != docker.StateRunning {
				old.Health, old.HealthySinceStart, old.FinishedAt = docker.HealthNone, false, t0.Add(-time.Second)
			}
			if old.State == docker.StateCreated {
				old.StartedAt = time.Time{}
			}
			o.Containers = append(o.Containers, old)
			if rapid.IntRange(0, 3).Draw(t, "no-new") == 0 {
				continue
			}
			deadline := w.Update.HealthDeadline
			age := time.Duration(rapid.Int64Range(0, int64(2*deadline)).Draw(t, "new-age"))
			c := fresh(one, w.Name, slot, withID(fmt.Sprintf("n%02d", len(o.Containers))))
			c.Created, c.StartedAt = t0.Add(-age), t0.Add(-age)
			if w.Healthcheck == nil {
				c.HasHealthcheck, c.Health = false, docker.HealthNone
			}
			switch rapid.IntRange(0, 7).Draw(t, "new-state") {
			case 0: // running, healthy
			case 1: // running, not yet healthy
				if c.HasHealthcheck {
					c.Health, c.HealthySinceStart = docker.HealthStarting, false
				} else {
					c.StartedAt = t0
				}
			case 2: // running, unhealthy
				if c.HasHealthcheck {
					c.Health, c.HealthySinceStart = docker.HealthUnhealthy, rapid.Bool().Draw(t, "was-healthy")
				}
			case 3: // exited
				c.State, c.Health, c.HealthySinceStart, c.ExitCode, c.FinishedAt = docker.StateExited, docker.HealthNone, false, 1, t0
			case 4: // created, never started
				c.State, c.Health, c.HealthySinceStart, c.StartedAt = docker.StateCreated, docker.HealthNone, false, time.Time{}
			case 5: // created, its start failed
				c.State, c.Health, c.HealthySinceStart, c.StartedAt, c.Error = docker.StateCreated, docker.HealthNone, false, time.Time{}, "start failed"
			case 6: // created, its start in flight
				c.State, c.Health, c.HealthySinceStart, c.StartedAt, c.Starting = docker.StateCreated, docker.HealthNone, false, time.Time{}, true
			case 7: // created, after it had run once (a start that failed later)
				c.State, c.Health, c.HealthySinceStart = docker.StateCreated, docker.HealthNone, false
			}
			o.Containers = append(o.Containers, c)
		}
	}
	o.SkipHealth = rapid.IntRange(0, 9).Draw(t, "skiphealth") == 0
	return o
}

func checkDownAndNeverStarted(t *rapid.T, d *spec.ResolvedDesired, o *Observed) {
	{
		p := Diff(d, o)
		byID := map[string]*docker.Container{}
		for i := range o.Containers {
			byID[o.Containers[i].ID] = &o.Containers[i]
		}
		never := func(c *docker.Container) bool {
			return c.State == docker.StateCreated && !c.Starting && c.StartedAt.IsZero() && c.Error == ""
		}
		for _, f := range p.Failures() {
			for _, c := range o.Containers {
				if c.Name == f.Container && never(&c) {
					t.Fatalf("%s never started, yet failed: %s", c.Name, f.Reason)
				}
			}
		}
		steps := p.Steps()
		for _, st := range p.Slots {
			if !st.Desired {
				continue
			}
			w := d.Workload(st.Workload)
			var fresh, old []*docker.Container
			healthyFresh := false
			for _, cs := range st.Containers {
				c := byID[cs.ID]
				switch {
				case cs.Relation.Fresh() || cs.Relation == RelDuplicate:
					fresh = append(fresh, c)
					healthyFresh = healthyFresh || c.State == docker.StateRunning &&
						(o.SkipHealth || c.Health == docker.HealthHealthy || !c.HasHealthcheck && o.Now.Sub(c.StartedAt) >= w.Update.MinReady)
				case cs.Relation == RelStale || cs.Relation == RelLegacy:
					old = append(old, c)
				}
			}
			failedHere := func(name string) bool {
				for _, f := range p.Failures() {
					if f.Workload == st.Workload && f.Container == name {
						return true
					}
				}
				return false
			}
			// A lone new container that started, past its deadline and
			// not healthy, fails.
			if len(fresh) == 1 && st.Containers[0].Relation == RelUpToDate || len(fresh) == 1 && st.Containers[0].Relation == RelNeedsUpdate {
				c := fresh[0]
				isNew := false
				for _, s := range old {
					isNew = isNew || s.Created.Before(c.Created)
				}
				if isNew && !never(c) && !healthyFresh && c.State != docker.StatePaused &&
					!o.Now.Before(c.Created.Add(w.Update.HealthDeadline)) && !failedHere(c.Name) {
					t.Fatalf("%s/%d: %s started (or failed to), is past its deadline, yet no failure:\n%s", st.Workload, st.Slot, c.Name, p)
				}
			}
			restarted := map[string]bool{}
			for _, s := range steps {
				if s.Workload != st.Workload || s.Slot != st.Slot || s.Then {
					continue
				}
				if s.Action == ActRestart || s.Action == ActWait && s.Wait == WaitBackoff {
					restarted[s.ContainerID] = true
					restarted[s.Container] = true
				}
				if s.Why.Kind != ReasonOldDown {
					continue
				}
				c := byID[s.ContainerID]
				if c == nil || c.State == docker.StateRunning || c.State == docker.StatePaused || healthyFresh ||
					w.EffectiveOrder() == spec.OrderStopFirst {
					t.Fatalf("%s/%d: old %s restarted (state %s, a healthy new one %v, order %s):\n%s",
						st.Workload, st.Slot, s.Container, c.State, healthyFresh, w.EffectiveOrder(), p)
				}
			}
			if healthyFresh || len(old) == 0 || w.EffectiveOrder() == spec.OrderStopFirst {
				continue
			}
			up, ran := false, false
			for _, c := range old {
				switch c.State {
				case docker.StateExited, docker.StateDead:
					ran = ran || !c.StartedAt.IsZero()
				case docker.StateCreated:
					up = up || c.Starting
				default:
					up = true
				}
			}
			if up || !ran {
				continue
			}
			back := false
			for _, c := range old {
				back = back || restarted[c.ID] || restarted[c.Name]
			}
			if !back {
				t.Fatalf("%s/%d: every old container is down, none up-to-date healthy, and none is brought back:\n%s", st.Workload, st.Slot, p)
			}
		}
	}
}
