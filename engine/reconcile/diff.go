package reconcile

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Diff returns the plan that moves the observed containers towards the desired
// state: what to do and to wait for now. It is pure: the same inputs give the
// same plan, whatever the order of o.Containers. Only containers labelled
// <prefix>.managed=true are considered. AddThen adds the steps that follow
// once its waits end, for the operator to see the whole roll; Diff leaves
// them out, as acting needs only what runs now and it stays fast.
func Diff(d *spec.ResolvedDesired, o *Observed) Plan {
	prefix := d.Prefix
	managed := docker.ManagedLabel(prefix)
	workloadKey := docker.WorkloadLabel(prefix)

	byWorkload := map[string][]*docker.Container{}
	var plan Plan
	for i := range o.Containers {
		c := &o.Containers[i]
		if c.Labels[managed] != "true" {
			continue // I5: never ours to look at
		}
		w := c.Labels[workloadKey]
		if w == "" {
			plan.Notes = append(plan.Notes, fmt.Sprintf("%s has %s but no %s label: left alone", c.Name, managed, workloadKey))
			continue
		}
		byWorkload[w] = append(byWorkload[w], c)
	}
	sort.Strings(plan.Notes)

	desired := make(map[string]*spec.Resolved, len(d.Workloads))
	names := make([]string, 0, len(d.Workloads)+len(byWorkload))
	for i := range d.Workloads {
		desired[d.Workloads[i].Name] = &d.Workloads[i]
		names = append(names, d.Workloads[i].Name)
	}
	for name := range byWorkload {
		if desired[name] == nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)

	plan.Workloads = make([]WorkloadPlan, 0, len(names))
	nslots := 0
	for i := range d.Workloads {
		nslots += max(d.Workloads[i].Replicas, 0) + 1
	}
	plan.Slots = make([]SlotState, 0, nslots+len(byWorkload))
	for _, name := range names {
		cs := byWorkload[name]
		slices.SortFunc(cs, func(a, b *docker.Container) int {
			if c := cmp.Compare(a.Name, b.Name); c != 0 {
				return c
			}
			return cmp.Compare(a.ID, b.ID)
		})
		var wp WorkloadPlan
		if w := desired[name]; w != nil {
			waitFor := unmetDependency(w, desired, byWorkload, o)
			rollAfter := rollingDependency(prefix, w, desired, byWorkload, o)
			wp, plan.Slots = diffWorkload(plan.Slots, prefix, w, cs, o, waitFor, rollAfter)
			addDrains(prefix, &wp, cs, w.Update.Drain)
		} else {
			wp = diffExtra(prefix, name, cs)
			plan.Slots = unjudgedStates(plan.Slots, prefix, name, nil, cs, o)
			addDrains(prefix, &wp, cs, 0)
		}
		sortSteps(wp.Steps)
		for i := range wp.Steps {
			wp.Steps[i].explain()
		}
		for i := range wp.Failures {
			wp.Failures[i].explain()
		}
		if len(wp.Steps) > 0 || len(wp.Failures) > 0 || wp.Error != "" || len(wp.Notes) > 0 {
			plan.Workloads = append(plan.Workloads, wp)
		}
	}
	return plan
}

// slot is one replica position with the containers in it.
type slot struct {
	fresh   []*docker.Container // up-to-date, best first: primary is fresh[0]
	stale   []*docker.Container // stale and legacy
	drift   [][]Drift           // of each stale container, in order
	cond    condition           // of fresh[0]
	ready   time.Time           // min_ready moment of a booting fresh[0] without healthcheck
	failed  bool                // fresh[0] missed its health deadline
	holding bool                // fresh[0] is healthy
}

func (s *slot) primary() *docker.Container {
	if len(s.fresh) == 0 {
		return nil
	}
	return s.fresh[0]
}

// The workload's slot states are appended to states. waitFor is the
// dependency its cold starts wait for (depends_on), if any.
func diffWorkload(states []SlotState, prefix string, w *spec.Resolved, cs []*docker.Container, o *Observed, waitFor, rollAfter *spec.Dependency) (WorkloadPlan, []SlotState) {
	wp := WorkloadPlan{Name: w.Name}
	if w.Pull != nil {
		// Rule 0: the pull, and nothing else of the workload, until its
		// image is on the engine.
		wp.Steps = []Step{pullStep(w)}
		return wp, unjudgedStates(states, prefix, w.Name, w, cs, o)
	}
	if w.RegistryErr != nil {
		wp.Notes = append(wp.Notes, registryNote(w))
	}
	if w.Err != nil {
		wp.Error = w.Err.Error() + ": nothing of this workload is started or stopped"
		return wp, unjudgedStates(states, prefix, w.Name, w, cs, o)
	}
	n := w.Replicas
	recreate := o.RecreateBefore[w.Name]
	specKey := docker.SpecLabel(prefix)
	slotKey := docker.SlotLabel(prefix)
	want := DesiredLimits(w.Workload)
	slots := make([]slot, n)
	surplus := map[int][]*docker.Container{}
	var orphans []*docker.Container
	for _, c := range cs {
		idx, ok := slotIndex(c, slotKey)
		switch {
		case !ok:
			orphans = append(orphans, c)
		case idx >= n:
			surplus[idx] = append(surplus[idx], c)
		case upToDate(specKey, w, c, recreate, want):
			slots[idx].fresh = append(slots[idx].fresh, c)
		default:
			slots[idx].stale = append(slots[idx].stale, c)
			slots[idx].drift = append(slots[idx].drift, driftOf(prefix, w, c, recreate))
		}
	}

	minReady := w.Update.MinReady
	allHealthy := true
	for i := range slots {
		s := &slots[i]
		if len(s.fresh) == 0 {
			allHealthy = false
			continue
		}
		if len(s.fresh) > 1 {
			sortFresh(s.fresh, minReady, w.Update.HealthDeadline, w.Job, o)
		}
		p := s.fresh[0]
		s.cond, s.ready = conditionOf(p, minReady, w.Update.HealthDeadline, o.Now, o.SkipHealth)
		s.cond = jobCondition(w.Job, p, s.cond)
		s.holding = s.cond == condHealthy
		if !s.holding {
			allHealthy = false
			// Only a container that replaces an old one can miss its deadline:
			// a crash of a long-settled container is rule 4, not a failed roll.
			// A revert (older than every stale container of its slot: the
			// desired spec went back to what it runs) is never new, so it
			// never fails the rollout (rule 13): unhealthy, it is crashed.
			// One that never started (its start was lost: the engine or
			// rollcall went away between its create and its start) ran
			// nothing, so it cannot have missed a deadline: it is made
			// again (recreate below), with a deadline of its own.
			s.failed = isNew(p, s.stale) && !neverStarted(p) && s.cond != condPaused && !o.Now.Before(p.Created.Add(w.Update.HealthDeadline))
		}
	}

	// Size the step list once: a slot not settled gets a step for each of
	// its containers, or one (a start, a wait) when it has none; only a
	// limits update beside a wait goes past that, and grows the list.
	est := len(orphans)
	for _, cs := range surplus {
		est += len(cs)
	}
	for i := range slots {
		if !slots[i].holding || len(slots[i].stale) > 0 || len(slots[i].fresh) > 1 {
			est += max(len(slots[i].stale)+len(slots[i].fresh), 1)
		}
	}
	wp.Steps = make([]Step, 0, est)

	order := w.EffectiveOrder()
	stopFirst, stopFirstWhat := w.StopFirst()
	blueGreen := w.Update.Strategy == spec.StrategyBlueGreen
	continueOnFailure := w.Update.FailureAction == spec.FailureContinue
	var inFlight []string // the slots mid-roll, as "web/0"
	for i := range slots {
		s := &slots[i]
		if s.holding || (s.failed && continueOnFailure) {
			continue
		}
		if order == spec.OrderStopFirst {
			if len(s.stale) == 0 {
				inFlight = append(inFlight, slotName(w.Name, i)) // down: empty, or its new container not yet healthy
			}
		} else if len(s.stale) > 0 && len(s.fresh) > 0 {
			inFlight = append(inFlight, slotName(w.Name, i))
		}
	}
	par := w.Update.Parallelism
	if par < 1 {
		par = 1
	}
	// Rule 4: at most par running containers of the workload restart at
	// once, so a health failure across the workload (a dependency down, a
	// loaded host) never restarts them all together. A restart in flight,
	// and a container rollcall restarted that is booting again (not yet
	// healthy, not past its deadline), use the budget. An exited or dead
	// container serves nothing: it restarts at once, outside the budget.
	restartBudget := par
	for i := range slots {
		if p := slots[i].primary(); p != nil && (o.Restarting[p.ID] || (slots[i].cond == condBooting && o.Restarts[p.ID] > 0)) {
			restartBudget--
		}
	}

	gate := canaryGateOf(w, o, slots)
	delayed := rollDelay(w, slots)

	add := func(s Step) { wp.Steps = append(wp.Steps, s) }
	for i := range slots {
		s := &slots[i]
		p := s.primary()
		// Rule 1: a stale container keeps serving until a replacement is
		// healthy. One that went down meanwhile (an engine restart, a
		// crash) is brought back while its slot has no healthy up-to-date
		// container; stop-first takes it out anyway.
		if !s.holding && order != spec.OrderStopFirst && !w.Job {
			// A job's old container that ended serves nothing to bring back.
			if c := downOld(s.stale, o); c != nil {
				add(restartOld(w, i, c, o))
			}
		}
		// A new container that never started is made again rather than
		// started late: its deadline counts from its creation, which is
		// its start for every container rollcall creates. It served
		// nothing, so its stop touches nothing that serves; the next plan
		// starts the slot under the usual rules.
		if p != nil && neverStarted(p) && isNew(p, s.stale) {
			add(Step{Action: ActStop, Workload: w.Name, Slot: i, Container: p.Name, ContainerID: p.ID, Grace: w.StopGrace,
				Why: Reason{Kind: ReasonNeverStarted}})
			continue
		}
		if p == nil && gate != nil && len(s.stale) > 0 && i != gate.startSlot {
			add(gate.waitFor(w, i, s.stale[0].Name))
			continue
		}
		if p == nil {
			if o.Held(w.Name, w.Hash) {
				wp.Notes = append(wp.Notes, fmt.Sprintf("slot %d: spec %s is on hold (rolled back); not started until the desired spec changes", i, short(w.Hash)))
				wp.Held, wp.HeldSpec = append(wp.Held, i), w.Hash
				continue
			}
			create := CreateSpec(prefix, w, i)
			for _, c := range s.stale {
				if c.Name == create.Name {
					// The old container has the name (a forced recreate, or
					// a limit to lift): the new one takes a suffix of the old
					// ID, so the two live side by side and the name is
					// still a pure function of what is observed.
					create.Name += "-" + shortID(c.ID)[:6]
					break
				}
			}
			start := Step{Action: ActStart, Workload: w.Name, Slot: i, Container: create.Name, Create: create}
			if gate != nil {
				// Any container of the spec is of the canary cohort while
				// its canary has steps left: it serves nothing until a
				// step's share sends it requests.
				start.SplitFirst = w.Hash
			}
			switch {
			case len(s.stale) == 0 && waitFor != nil:
				// depends_on: a cold start waits for its dependency.
				add(Step{Action: ActWait, Wait: WaitDependency, Workload: w.Name, Slot: i, Container: create.Name,
					Why: Reason{Kind: ReasonDependency, Dependency: waitFor.Workload, DependCondition: waitFor.Condition}})
			case len(s.stale) == 0:
				start.Why = Reason{Kind: ReasonMissing, Slot: i, Replicas: n}
				add(start)
			case rollAfter != nil:
				// depends_on: a dependency rolls first.
				add(Step{Action: ActWait, Wait: WaitDependency, Workload: w.Name, Slot: i, Container: s.stale[0].Name,
					Why: Reason{Kind: ReasonDependency, Dependency: rollAfter.Workload, DependRoll: true}})
			case gate != nil && order != spec.OrderStopFirst:
				start.Why = Reason{Kind: ReasonCanaryStart, Drift: s.drift[0], Image: w.Image, Serving: s.stale[0].Name}
				add(start)
			case blueGreen && gate == nil:
				start.Why = Reason{Kind: ReasonBlueGreen, Drift: s.drift[0], Image: w.Image, Serving: s.stale[0].Name}
				add(start)
			case len(inFlight) >= par && gate == nil:
				add(Step{Action: ActWait, Wait: WaitQueue, Workload: w.Name, Slot: i, Container: s.stale[0].Name,
					Why: Reason{Kind: ReasonQueued, Parallelism: par, RollingFirst: slices.Clip(inFlight)}})
			case o.Now.Before(delayed) && gate == nil:
				add(Step{Action: ActWait, Wait: WaitDelay, Workload: w.Name, Slot: i, Container: s.stale[0].Name, Until: delayed,
					Why: Reason{Kind: ReasonDelay, Delay: w.Update.Delay}})
			case order == spec.OrderStopFirst:
				inFlight = append(inFlight, slotName(w.Name, i))
				for k, c := range s.stale {
					add(Step{Action: ActRoll, Workload: w.Name, Slot: i, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace, Downtime: true,
						Why: Reason{Kind: ReasonStopFirst, Drift: s.drift[k], Image: w.Image, StopFirst: stopFirst, StopFirstWhat: stopFirstWhat,
							LastDown: o.Downtime[w.Name]}})
				}
			default:
				inFlight = append(inFlight, slotName(w.Name, i))
				start.Why = Reason{Kind: ReasonRoll, Drift: s.drift[0], Image: w.Image, Serving: s.stale[0].Name}
				add(start)
			}
			continue
		}

		if s.failed {
			f := Failure{Workload: w.Name, Slot: i, Container: p.Name, Action: w.Update.FailureAction,
				Why: Reason{Kind: ReasonHealthDeadline, Condition: Condition(s.cond), Deadline: w.Update.HealthDeadline}}
			wp.Failures = append(wp.Failures, f)
			if f.Action == spec.FailureRollback {
				for _, c := range s.fresh {
					add(Step{Action: ActStop, Workload: w.Name, Slot: i, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace, Hold: w.Hash,
						Why: Reason{Kind: ReasonRollback, Deadline: w.Update.HealthDeadline, Serving: s.stale[0].Name}})
				}
				continue
			}
		}

		switch s.cond {
		case condHealthy:
			switch {
			case gate != nil && i == gate.stepSlot && gate.prog.Held != nil:
				add(gate.held(w, i, p.Name))
			case gate != nil && i == gate.stepSlot:
				add(gate.step(w, i, p))
			case len(s.stale) == 0:
			case gate != nil:
				add(gate.waitFor(w, i, s.stale[0].Name))
			case blueGreen && !allHealthy:
				add(Step{Action: ActWait, Wait: WaitBlueGreen, Workload: w.Name, Slot: i, Container: s.stale[0].Name,
					Why: Reason{Kind: ReasonBlueGreenWait, Replicas: n}})
			default:
				for k, c := range s.stale {
					add(Step{Action: ActRoll, Workload: w.Name, Slot: i, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace,
						Replacement: p.Name, Why: Reason{Kind: ReasonReplaced, Drift: s.drift[k], Image: w.Image, Serving: p.Name}})
				}
			}
			for _, c := range s.fresh[1:] {
				add(Step{Action: ActStop, Workload: w.Name, Slot: i, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace,
					Why: Reason{Kind: ReasonDuplicate, Serving: p.Name}})
			}
		case condBooting:
			deadline := bootDeadline(p, w.Update.HealthDeadline)
			if failAt := p.Created.Add(w.Update.HealthDeadline); isNew(p, s.stale) && failAt.Before(deadline) {
				deadline = failAt // a replacement fails its roll from its creation on
			}
			st := Step{Action: ActWait, Wait: WaitBoot, Workload: w.Name, Slot: i, Container: p.Name, Until: deadline, Why: bootWhy(w, p)}
			if !s.ready.IsZero() {
				st.Wait, st.Until = WaitReady, s.ready
				st.Why = Reason{Kind: ReasonReady, MinReady: minReady}
			}
			if s.failed {
				st.Until = time.Time{}
			}
			add(st)
		case condRestarting:
			add(Step{Action: ActWait, Wait: WaitRestarting, Workload: w.Name, Slot: i, Container: p.Name,
				Why: Reason{Kind: ReasonRestarting, RestartPolicy: normRestart(p.Limits.Restart)}})
		case condPaused:
			add(Step{Action: ActWait, Wait: WaitPaused, Workload: w.Name, Slot: i, Container: p.Name, Why: Reason{Kind: ReasonPaused}})
		case condCrashed:
			attempts := p.RestartCount + o.Restarts[p.ID]
			last := p.StartedAt
			if p.FinishedAt.After(last) {
				last = p.FinishedAt
			}
			at := last.Add(crashBackoff(attempts))
			if o.Now.Before(at) {
				add(Step{Action: ActWait, Wait: WaitBackoff, Workload: w.Name, Slot: i, Container: p.Name, Until: at,
					Why: Reason{Kind: ReasonBackoff, Crash: crashOf(w, p), Backoff: crashBackoff(attempts)}})
			} else if p.State == docker.StateRunning && restartBudget <= 0 {
				add(Step{Action: ActWait, Wait: WaitQueue, Workload: w.Name, Slot: i, Container: p.Name,
					Why: Reason{Kind: ReasonRestartQueued, Crash: crashOf(w, p), Parallelism: par}})
			} else {
				if p.State == docker.StateRunning {
					restartBudget--
				}
				add(Step{Action: ActRestart, Workload: w.Name, Slot: i, Container: p.Name, ContainerID: p.ID, Grace: w.StopGrace,
					Why: Reason{Kind: ReasonCrashed, Crash: crashOf(w, p)}})
			}
		}
		if s.cond != condCrashed && !LimitsEqual(p.Limits, want) {
			add(Step{Action: ActUpdate, Workload: w.Name, Slot: i, Container: p.Name, ContainerID: p.ID, Limits: want,
				Why: Reason{Kind: ReasonLimits, Have: p.Limits, Want: want}})
		}
	}

	idxs := make([]int, 0, len(surplus))
	for idx := range surplus {
		idxs = append(idxs, idx)
	}
	sort.Ints(idxs)
	for _, idx := range idxs {
		why := Reason{Kind: ReasonSurplus, Slot: idx, Replicas: n}
		if n == 0 {
			why = Reason{Kind: ReasonCold}
		}
		for _, c := range surplus[idx] {
			add(Step{Action: ActStop, Workload: w.Name, Slot: idx, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace, Why: why})
		}
	}
	for _, c := range orphans {
		if !allHealthy {
			wp.Notes = append(wp.Notes, c.Name+": orphan (no readable slot label), drained once every slot is healthy")
			continue
		}
		add(Step{Action: ActRoll, Workload: w.Name, Slot: NoSlot, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace,
			Why: Reason{Kind: ReasonOrphan}})
	}
	if h := o.RollingBack[w.Name]; h != "" {
		if stops := rollbackStops(prefix, w, h, cs); len(stops) > 0 {
			wp.Steps = stops // the rest of the workload waits for the rollback
			if par := w.Update.RollbackParallelism; par > 0 {
				wp.Steps = pacedRollback(w, stops, par)
			}
		}
	}
	if len(wp.Steps) > 0 || len(wp.Failures) > 0 {
		wp.Changes = specChanges(prefix, w, slots, surplus, orphans, recreate)
		wp.Privileged = w.Options.Privileged // options.go
	}
	return wp, slotStates(states, len(cs), prefix, w, slots, surplus, orphans, wp.Held, wp.Steps, o)
}

// unmetDependency is the first dependency of w (depends_on) that its cold
// starts wait for: one whose condition no container of it meets, started
// (running), healthy (as rule 2 counts healthy) or completed (exited 0).
// A dependency that is not desired, or desired with no replica, runs
// nothing to wait for: it holds nothing. nil when none holds.
func unmetDependency(w *spec.Resolved, desired map[string]*spec.Resolved, byWorkload map[string][]*docker.Container, o *Observed) *spec.Dependency {
	for k, dep := range w.DependsOn {
		dw := desired[dep.Workload]
		if dw == nil || dw.Replicas == 0 || dependencyMet(dep.Condition, dw, byWorkload[dep.Workload], o) {
			continue
		}
		return &w.DependsOn[k]
	}
	return nil
}

// rollingDependency is the first dependency of w (depends_on) still
// rolling, which w's roll waits for: one with a container of another spec
// than its desired one, or fewer healthy containers of its spec than its
// replicas, or a pull to come. A dependency that is not desired, has no
// replica, or cannot be resolved for good holds nothing. nil when none
// holds.
func rollingDependency(prefix string, w *spec.Resolved, desired map[string]*spec.Resolved, byWorkload map[string][]*docker.Container, o *Observed) *spec.Dependency {
	specKey := docker.SpecLabel(prefix)
	for k, dep := range w.DependsOn {
		dw := desired[dep.Workload]
		switch {
		case dw == nil || dw.Replicas == 0:
			continue
		case dw.Pull != nil:
			return &w.DependsOn[k]
		case dw.Err != nil:
			continue
		}
		healthy := 0
		for _, c := range byWorkload[dep.Workload] {
			if o.Draining[c.ID] {
				continue
			}
			if c.Labels[specKey] != dw.Hash {
				return &w.DependsOn[k]
			}
			cond, _ := conditionOf(c, dw.Update.MinReady, dw.Update.HealthDeadline, o.Now, o.SkipHealth)
			if jobCondition(dw.Job, c, cond) == condHealthy {
				healthy++
			}
		}
		if healthy < dw.Replicas {
			return &w.DependsOn[k]
		}
	}
	return nil
}

func dependencyMet(cond string, dw *spec.Resolved, cs []*docker.Container, o *Observed) bool {
	for _, c := range cs {
		if o.Draining[c.ID] {
			continue // leaving: it serves nothing
		}
		switch cond {
		case spec.DependHealthy:
			if Healthy(c, dw.Update.MinReady, o.Now, o.SkipHealth) {
				return true
			}
		case spec.DependCompleted:
			if c.State == docker.StateExited && c.ExitCode == 0 && !c.StartedAt.IsZero() {
				return true
			}
		default:
			if c.State == docker.StateRunning {
				return true
			}
		}
	}
	return false
}

// rollDelay is when the next slot of w may start rolling (update.delay):
// Delay after the last slot finished its roll, taken as the newest
// healthy up-to-date container's start plus min_ready. That is when one
// without a healthcheck counts ready; the engine does not tell when one
// with a healthcheck turned healthy, so for it this is the earliest
// moment it can have been ready, not the moment it was. Zero when no
// delay applies (none set, or no slot holds an up-to-date container: a
// roll's first slot, and first starts, are never delayed).
func rollDelay(w *spec.Resolved, slots []slot) time.Time {
	if w.Update.Delay <= 0 {
		return time.Time{}
	}
	var last time.Time
	for i := range slots {
		if !slots[i].holding {
			continue
		}
		p := slots[i].primary()
		at := p.StartedAt
		if at.IsZero() {
			at = p.Created
		}
		if at = at.Add(w.Update.MinReady); at.After(last) {
			last = at
		}
	}
	if last.IsZero() {
		return time.Time{}
	}
	return last.Add(w.Update.Delay)
}

// rollbackStops are the stops of the operator's rollback of spec hash
// (Observed.RollingBack): every container of that spec, by its spec label,
// in a slot where a container of another spec still runs to serve it. A
// slot that finished its roll keeps its new container. Diff drains each
// stop as any other (addDrains); nothing of hash is started.
// pacedRollback takes back par slots of an operator's rollback at once
// (update.rollback_parallelism): the first par slots' stops run, the
// others wait, queued behind them.
func pacedRollback(w *spec.Resolved, stops []Step, par int) []Step {
	var first []string
	out := make([]Step, 0, len(stops))
	for _, s := range stops {
		name := slotName(w.Name, s.Slot)
		if slices.Contains(first, name) || len(first) < par {
			if !slices.Contains(first, name) {
				first = append(first, name)
			}
			out = append(out, s)
			continue
		}
		if n := len(out); n > 0 && out[n-1].Action == ActWait && out[n-1].Slot == s.Slot {
			continue // one wait a slot
		}
		out = append(out, Step{Action: ActWait, Wait: WaitQueue, Workload: w.Name, Slot: s.Slot, Container: s.Container,
			Why: Reason{Kind: ReasonQueued, Parallelism: par, RollingFirst: slices.Clip(first)}})
	}
	return out
}

func rollbackStops(prefix string, w *spec.Resolved, hash string, cs []*docker.Container) []Step {
	specKey, slotKey := docker.SpecLabel(prefix), docker.SlotLabel(prefix)
	type rolled struct {
		fresh []*docker.Container
		older *docker.Container // the first running container of another spec
	}
	slots := map[int]*rolled{}
	for _, c := range cs { // in name order
		idx, ok := slotIndex(c, slotKey)
		if !ok {
			continue
		}
		r := slots[idx]
		if r == nil {
			r = &rolled{}
			slots[idx] = r
		}
		switch {
		case c.Labels[specKey] == hash:
			r.fresh = append(r.fresh, c)
		case c.State == docker.StateRunning && r.older == nil:
			r.older = c
		}
	}
	idxs := make([]int, 0, len(slots))
	for idx, r := range slots {
		if len(r.fresh) > 0 && r.older != nil {
			idxs = append(idxs, idx)
		}
	}
	sort.Ints(idxs)
	var stops []Step
	for _, idx := range idxs {
		r := slots[idx]
		for _, c := range r.fresh {
			stops = append(stops, Step{Action: ActStop, Workload: w.Name, Slot: idx, Container: c.Name, ContainerID: c.ID,
				Grace: w.StopGrace, Hold: hash,
				Why: Reason{Kind: ReasonRolledBack, Spec: hash, Serving: r.older.Name}})
		}
	}
	return stops
}

// UpToDate reports whether c is up-to-date for w: the desired spec hash and
// image ID, created after any forced recreate, and no limit to lift. Limits
// that only differ make it needs-update, which still counts as up-to-date.
func UpToDate(prefix string, w *spec.Resolved, c *docker.Container, recreate time.Time) bool {
	return upToDate(docker.SpecLabel(prefix), w, c, recreate, DesiredLimits(w.Workload))
}

func upToDate(specKey string, w *spec.Resolved, c *docker.Container, recreate time.Time, want docker.Limits) bool {
	return c.Labels[specKey] == w.Hash && c.ImageID == w.ImageID && (recreate.IsZero() || !c.Created.Before(recreate)) &&
		!liftsLimit(c.Limits, want)
}

// sortFresh orders a slot's up-to-date containers best first: healthy before
// booting before crashed, then the first created.
func sortFresh(cs []*docker.Container, minReady, deadline time.Duration, job bool, o *Observed) {
	type ranked struct {
		c    *docker.Container
		cond condition
	}
	r := make([]ranked, len(cs))
	for i, c := range cs {
		r[i].c = c
		r[i].cond, _ = conditionOf(c, minReady, deadline, o.Now, o.SkipHealth)
		r[i].cond = jobCondition(job, c, r[i].cond)
	}
	slices.SortStableFunc(r, func(a, b ranked) int {
		if a.cond != b.cond {
			return cmp.Compare(a.cond, b.cond)
		}
		return a.c.Created.Compare(b.c.Created)
	})
	for i := range r {
		cs[i] = r[i].c
	}
}

// liftsLimit reports whether going from have to want removes a CPU or memory
// limit. The engine cannot do that in place (an update to 0 is ignored), so
// such a container needs a new one, not an UPDATE.
func liftsLimit(have, want docker.Limits) bool {
	return (want.NanoCPUs == 0 && have.NanoCPUs > 0) || (want.Memory == 0 && have.Memory > 0)
}

func diffExtra(prefix, name string, cs []*docker.Container) WorkloadPlan {
	wp := WorkloadPlan{Name: name, Changes: []string{"- workload removed from the desired state"}}
	for _, c := range cs {
		slot, ok := slotOf(c, prefix)
		if !ok {
			slot = NoSlot
		}
		wp.Steps = append(wp.Steps, Step{Action: ActStop, Workload: name, Slot: slot, Container: c.Name, ContainerID: c.ID,
			Grace: spec.DefaultStopGrace, Why: Reason{Kind: ReasonExtra, Workload: name}})
	}
	return wp
}

// specChanges is the workload's spec diff, desired against what runs.
func specChanges(prefix string, w *spec.Resolved, slots []slot, surplus map[int][]*docker.Container, orphans []*docker.Container, recreate time.Time) []string {
	var out []string
	occupied := len(surplus)
	seen := map[string]bool{}
	note := func(line string) {
		if !seen[line] {
			seen[line] = true
			out = append(out, line)
		}
	}
	for i := range slots {
		s := &slots[i]
		if len(s.fresh) > 0 || len(s.stale) > 0 {
			occupied++
		}
		for _, ds := range s.drift {
			for _, d := range ds {
				switch d.Field {
				case DriftLegacy:
					note("~ legacy containers (no spec label)")
				case DriftImage, DriftImageID, DriftVersion:
					note(d.Line())
				}
			}
		}
	}
	if !recreate.IsZero() {
		note("~ recreate requested at " + recreate.UTC().Format(time.TimeOnly))
	}
	if occupied == 0 && len(orphans) == 0 && w.Replicas > 0 {
		note(fmt.Sprintf("+ new workload: %d %s", w.Replicas, plural(w.Replicas, "replica")))
	} else if occupied != w.Replicas {
		note(fmt.Sprintf("~ replicas: %d → %d", occupied, w.Replicas))
	}
	sort.Strings(out)
	return out
}

// neverStarted reports whether c was created and never started: no start
// in flight (Starting), none on record, and no start that failed (Error).
// A failed start is a real failure of its version; this is a start that
// was lost.
func neverStarted(c *docker.Container) bool {
	return c.State == docker.StateCreated && !c.Starting && c.StartedAt.IsZero() && c.Error == ""
}

// downOld returns the stale container of a slot to bring back, if the slot
// has none up: of those that ran and exited or died, the one that started
// last (it served last). A stale container that runs, is restarting, is
// paused or whose restart or drain is in flight counts as up or leaving:
// none is brought back then. One that never started served nothing: it is
// not brought back.
func downOld(stale []*docker.Container, o *Observed) *docker.Container {
	var best *docker.Container
	for _, c := range stale {
		if o.Draining[c.ID] || o.Restarting[c.ID] {
			return nil
		}
		switch c.State {
		case docker.StateExited, docker.StateDead:
		case docker.StateCreated:
			if !c.Starting {
				continue
			}
			return nil
		default: // running, restarting, paused, removing
			return nil
		}
		if c.StartedAt.IsZero() {
			continue
		}
		if best == nil || c.StartedAt.After(best.StartedAt) || c.StartedAt.Equal(best.StartedAt) && c.Name < best.Name {
			best = c
		}
	}
	return best
}

// restartOld is the step that brings the down stale container c of slot i
// back: a restart, after rule 4's backoff if it went down before.
func restartOld(w *spec.Resolved, i int, c *docker.Container, o *Observed) Step {
	attempts := c.RestartCount + o.Restarts[c.ID]
	last := c.StartedAt
	if c.FinishedAt.After(last) {
		last = c.FinishedAt
	}
	if at := last.Add(crashBackoff(attempts)); o.Now.Before(at) {
		return Step{Action: ActWait, Wait: WaitBackoff, Workload: w.Name, Slot: i, Container: c.Name, Until: at,
			Why: Reason{Kind: ReasonBackoff, Crash: crashOf(w, c), Backoff: crashBackoff(attempts)}}
	}
	return Step{Action: ActRestart, Workload: w.Name, Slot: i, Container: c.Name, ContainerID: c.ID, Grace: w.StopGrace,
		Why: Reason{Kind: ReasonOldDown, Crash: crashOf(w, c)}}
}

// isNew reports whether c is new in its slot (DESIGN §1): created after a
// stale container of the slot that it replaces. One older than every stale
// container is a revert: the desired spec went back to what it runs.
func isNew(c *docker.Container, stale []*docker.Container) bool {
	for _, o := range stale {
		if o.Created.Before(c.Created) {
			return true
		}
	}
	return false
}

// atATime says how many restart at once: "one", else the count.
func atATime(n int) string {
	if n == 1 {
		return "one"
	}
	return strconv.Itoa(n)
}

func slotName(workload string, slot int) string { return workload + "/" + strconv.Itoa(slot) }

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// LimitsText renders limits for humans: "cpus 0.5 mem 64M restart always",
// with ∞ for no limit.
func LimitsText(l docker.Limits) string {
	return cpuMemText(l) + " restart " + normRestart(l.Restart)
}

// cpuMemText is LimitsText without the restart policy: "cpus 0.5 mem 64M".
func cpuMemText(l docker.Limits) string {
	cpu := "∞"
	if l.NanoCPUs > 0 {
		cpu = fmt.Sprintf("%g", float64(l.NanoCPUs)/1e9)
	}
	mem := "∞"
	if l.Memory > 0 {
		mem = fmt.Sprintf("%dM", l.Memory>>20)
	}
	return fmt.Sprintf("cpus %s mem %s", cpu, mem)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func sortSteps(steps []Step) {
	slotRank := func(slot int) int {
		if slot == NoSlot {
			return int(^uint(0) >> 1)
		}
		return slot
	}
	slices.SortStableFunc(steps, func(a, b Step) int {
		if c := cmp.Compare(slotRank(a.Slot), slotRank(b.Slot)); c != 0 {
			return c
		}
		if c := cmp.Compare(actionOrder[a.Action], actionOrder[b.Action]); c != 0 {
			return c
		}
		return cmp.Compare(a.Container, b.Container)
	})
}

func sortStrings(s []string) { sort.Strings(s) }
