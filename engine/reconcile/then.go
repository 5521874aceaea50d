package reconcile

import (
	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// The projection is bounded, as it diffs the workload again each round:
// maxThenRounds rounds ahead (a roll one slot at a time takes about two a
// slot, so the next dozen slots show), and not at all for a workload of more
// than maxThenContainers containers, which no screen shows whole anyway.
const (
	maxThenRounds     = 24
	maxThenContainers = 300
)

// thenID marks the containers the projection imagines; no engine ID has it.
const thenID = "then:"

// AddThen fills each workload's Then: the steps that follow once the
// plan's waits end, so the operator sees the whole roll from its first step
// (DESIGN §8). It projects the workload forward, assuming the best: every
// step of the plan succeeds, a started or booting container turns healthy, a
// container the engine restarts comes back healthy, a crash backoff runs
// out. Then it diffs again, and again, until nothing changes. What each later
// diff asks for, and the plan does not hold yet, is a then row.
//
// The projection stops where the plan does: a container that missed its
// health deadline stays as it is (its failure_action decides what follows),
// and a container paused on the engine stays paused. A then row is the very
// step a later Diff will give, so its Key is that step's: a start's name is
// a pure function of what is observed, and a roll names the old container.
func AddThen(d *spec.ResolvedDesired, o *Observed, p *Plan) {
	var names map[string]bool
	for i := range p.Workloads {
		if len(p.Workloads[i].Steps) > 0 && d.Workload(p.Workloads[i].Name) != nil {
			if names == nil {
				names = map[string]bool{}
			}
			names[p.Workloads[i].Name] = true
		}
	}
	if names == nil {
		return
	}
	managed, workloadKey := docker.ManagedLabel(d.Prefix), docker.WorkloadLabel(d.Prefix)
	byWorkload := map[string][]docker.Container{}
	for _, c := range o.Containers {
		if w := c.Labels[workloadKey]; c.Labels[managed] == "true" && names[w] {
			byWorkload[w] = append(byWorkload[w], c)
		}
	}
	for i := range p.Workloads {
		wp := &p.Workloads[i]
		if !names[wp.Name] {
			continue
		}
		w := d.Workload(wp.Name)
		if w.Err != nil || len(byWorkload[wp.Name]) > maxThenContainers {
			continue
		}
		one := &spec.ResolvedDesired{Prefix: d.Prefix, Workloads: []spec.Resolved{*w}}
		proj := &Observed{
			Now: o.Now, Containers: byWorkload[wp.Name], RecreateBefore: o.RecreateBefore,
			SkipHealth: o.SkipHealth, Restarts: o.Restarts,
		}
		if h := o.Holds[w.Name]; len(h) > 0 {
			proj.Holds = map[string]map[string]bool{w.Name: h}
		}
		if c, ok := o.Canary[w.Name]; ok {
			proj.Canary = map[string]CanaryProgress{w.Name: c}
		}
		wp.Then = projectThen(one, w, proj, *wp)
	}
}

// projectThen runs the projection of one workload from its block cur.
func projectThen(d *spec.ResolvedDesired, w *spec.Resolved, o *Observed, cur WorkloadPlan) []Step {
	seen := make(map[string]bool, len(cur.Steps))
	for _, s := range cur.Steps {
		seen[s.Key()] = true
	}
	o.Containers = append([]docker.Container(nil), o.Containers...) // the projection's own
	var then []Step
	for range maxThenRounds {
		if !advance(w, o, cur) {
			break
		}
		next := Diff(d, o)
		if len(next.Workloads) == 0 {
			break
		}
		cur = next.Workloads[0]
		for _, s := range cur.Steps {
			if !s.Executable() || seen[s.Key()] {
				continue
			}
			seen[s.Key()] = true
			s.Then = true
			if s.Why.Kind == ReasonReplaced {
				// Not yet: the roll waits for its replacement.
				s.Why.Pending = true
				s.explain()
			}
			then = append(then, s)
		}
	}
	return then
}

// advance moves the projected world o past the block cur, as if every step
// succeeded and every wait ended well. It reports whether anything changed.
func advance(w *spec.Resolved, o *Observed, cur WorkloadPlan) bool {
	failed := map[string]bool{}
	for _, f := range cur.Failures {
		failed[f.Container] = true
	}
	find := func(name string) int {
		for i := range o.Containers {
			if o.Containers[i].Name == name {
				return i
			}
		}
		return -1
	}
	healthy := func(c *docker.Container) {
		c.State, c.Health, c.HasHealthcheck, c.HealthySinceStart = docker.StateRunning, docker.HealthHealthy, true, true
		c.ExitCode, c.OOMKilled = 0, false
	}
	changed := false
	now := o.Now
	for _, s := range cur.Steps {
		i := find(s.Container)
		switch s.Action {
		case ActStart:
			if s.Create == nil || i >= 0 {
				continue
			}
			c := docker.Container{ID: thenID + s.Create.Name, Name: s.Create.Name, Image: s.Create.Image, ImageID: w.ImageID,
				Labels: s.Create.Labels, Created: o.Now, StartedAt: o.Now, Limits: s.Create.Limits}
			healthy(&c)
			o.Containers = append(o.Containers, c)
			changed = true
		case ActStop, ActRoll:
			if i < 0 {
				continue
			}
			o.Containers = append(o.Containers[:i], o.Containers[i+1:]...)
			if s.Hold != "" {
				held := map[string]bool{s.Hold: true}
				for h := range o.Holds[s.Workload] {
					held[h] = true
				}
				o.Holds = map[string]map[string]bool{s.Workload: held}
			}
			changed = true
		case ActRestart:
			if i < 0 {
				continue
			}
			healthy(&o.Containers[i])
			o.Containers[i].StartedAt = o.Now
			changed = true
		case ActUpdate:
			if i < 0 {
				continue
			}
			o.Containers[i].Limits = s.Limits
			changed = true
		case ActCanary:
			// The step passes: the next one, or the roll, follows.
			prog := CanaryProgress{Spec: s.Canary.Spec, Passed: s.Canary.Index + 1}
			o.Canary = map[string]CanaryProgress{s.Workload: prog}
			changed = true
		case ActWait:
			if s.Wait == WaitDependency {
				// Its dependency is met: the projection, of this
				// workload alone, plans the start.
				changed = true
				continue
			}
			if s.Wait == WaitDelay {
				// update.delay: the next slot rolls once it ran out.
				if s.Until.After(now) {
					now = s.Until
					changed = true
				}
				continue
			}
			if i < 0 || failed[s.Container] {
				continue
			}
			c := &o.Containers[i]
			cond, _ := conditionOf(c, w.Update.MinReady, w.Update.HealthDeadline, o.Now, o.SkipHealth)
			switch jobCondition(w.Job, c, cond) {
			case condBooting, condRestarting:
				healthy(c)
				changed = true
			case condCrashed:
				// A restart backoff: the restart follows once it runs out.
				if s.Until.After(now) {
					now = s.Until
					changed = true
				}
			}
		}
	}
	o.Now = now
	return changed
}
