package session

import (
	"fmt"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// Retry backoff of a step that failed at the engine, in auto mode.
const (
	retryMin = time.Second
	retryMax = time.Minute
)

type retry struct {
	n  int
	at time.Time // wall clock
}

// maxRecent is how many executed steps a snapshot lists.
const maxRecent = 20

// act runs the next step, if any may run: decide says which. It is called
// whenever a plan may have become actionable.
func (l *loop) act() {
	fresh := l.planEpoch == l.epoch && !l.loading
	if fresh && !l.anyStale() {
		l.dropVanished()
		if l.mode.Acting() && l.lock != nil && l.connected && l.halted == "" {
			l.checkBlast() // only when it could act: watching weighs nothing
		}
	}
	g := gate{
		Now: time.Now(), Mode: l.mode, Unattended: l.opts.Unattended != nil,
		LockHeld: l.lock != nil, Connected: l.connected,
		Fresh: fresh, Busy: map[string]bool{}, Stale: l.staleSlots(), Room: maxParallelSteps - len(l.running),
		Halted: l.halted != "", Paused: l.pause != nil,
		Blast:      l.refusal != nil || (l.confirm != nil && l.confirm.Kind == ConfirmBlast),
		SettleLeft: l.settleLeft(),
		Approved:   l.approved, Rollout: l.rollout != nil, Skipped: l.skipped, Confirmed: l.confirmed,
		RetryAt: map[string]time.Time{}, RollingBack: map[string]bool{},
	}
	for key, r := range l.retries {
		g.RetryAt[key] = r.at
	}
	for w := range l.rollbacks {
		g.RollingBack[w] = true
	}
	for _, r := range l.running {
		g.Busy[slotOf(r.Step)] = true
	}
	steps := l.plan.Executable()
	if l.patchedID != "" {
		// A plan from a state patched by an event (onDie): only the
		// restart of that container, and nothing else, may run from it;
		// nor does a rollback end on it.
		steps = slices.DeleteFunc(steps, func(s reconcile.Step) bool {
			return s.Action != reconcile.ActRestart || s.ContainerID != l.patchedID
		})
	} else if g.Mode.Acting() && g.LockHeld && g.Connected && g.Fresh && !g.Halted {
		if s, ok := l.rollbackStep(); ok {
			g.Rollback = &s
		}
	}
	d := decide(steps, g)
	l.waiting = d.Wait
	if d.Ask != nil && l.confirm == nil {
		l.confirm = d.Ask
	}
	if len(d.Run) > 0 {
		l.epoch++ // the plan is spent: the next steps wait for a list after these
	}
	launched := time.Now() // one instant for the steps of one plan
	for _, s := range d.Run {
		if s.Downtime && !l.confirmed[s.Key()] {
			l.log(levelWarn, "downtime: running a stop-first step unasked, as the desired state asks",
				"action", string(s.Action), "target", s.Target(), "container", s.Container, "reason", s.Reason)
		}
		if g.Rollback != nil && s.Key() == g.Rollback.Key() {
			l.rollbackStops[s.Key()] = true
		}
		l.runStep(s, launched)
	}
}

// staleSlots are the slots whose last step ended after the plan's list
// began: the plan does not know what that step did. onFetched drops the
// slots a list saw, so every slot left in slotEnded is one.
func (l *loop) staleSlots() map[string]bool {
	out := make(map[string]bool, len(l.slotEnded))
	for slot := range l.slotEnded {
		out[slot] = true
	}
	return out
}

// anyStale: a step ended since the plan's list began.
func (l *loop) anyStale() bool { return len(l.slotEnded) > 0 }

// scoped is the client steps act through: refusing any container the
// engine does not say is managed under the prefix. One per prefix, so what
// the engine's lists vouched for is not inspected again.
func (l *loop) scoped() docker.Client {
	if l.scopedClient == nil || l.scopedPrefix != l.prefix {
		l.scopedClient, l.scopedPrefix = docker.Scoped(l.raw, l.prefix), l.prefix
	}
	return l.scopedClient
}

// maxParallelSteps bounds the steps in flight at once, whatever the
// workloads' parallelism, so a blue-green start of many slots does not
// flood the engine.
const maxParallelSteps = 16

// dropVanished drops approvals (and a pending downtime question) whose step
// a fresh plan no longer holds.
func (l *loop) dropVanished() {
	for key := range l.approved {
		if !inPlan(l.plan, key) {
			delete(l.approved, key)
			l.note("approved step %s is no longer in the plan: dropped", key)
		}
	}
	if c := l.confirm; c != nil && c.Kind == ConfirmDowntime && !inPlan(l.plan, c.Key) {
		l.confirm = nil
	}
}

// forgetGoneSteps drops what is kept about steps that left the plan.
func (l *loop) forgetGoneSteps() {
	keys := map[string]bool{}
	for _, s := range l.plan.Executable() {
		keys[s.Key()] = true
	}
	for _, m := range []map[string]bool{l.skipped, l.confirmed} {
		for key := range m {
			if !keys[key] {
				delete(m, key)
			}
		}
	}
	for key := range l.retries {
		if !keys[key] {
			delete(l.retries, key)
		}
	}
	for key, r := range l.results {
		if !keys[key] && r.ends <= l.planEnds {
			delete(l.results, key)
		}
	}
}

// checkBlast holds every step after a desired change whose plan would stop
// or roll more than half of the running managed containers. A console asks;
// an unattended session refuses and waits for the next desired change,
// unless it was started with AllowMassStop.
func (l *loop) checkBlast() {
	if !l.blastCheck || l.resolved == nil {
		return
	}
	l.blastCheck = false
	hit, total := blastRadius(l.plan, l.containers)
	if 2*hit <= total {
		return
	}
	prompt := fmt.Sprintf("the new desired state stops or rolls %d of %d running containers", hit, total)
	if u := l.opts.Unattended; u != nil {
		if u.AllowMassStop {
			l.log(levelWarn, "blast radius: going on, as allowed", "stops", hit, "running", total)
			return
		}
		l.refusal = &Refusal{Stops: hit, Running: total, Reason: prompt}
		l.note("refused: %s; waiting for the next desired change (or run with --allow-mass-stop)", prompt)
		l.log(levelError, "refused: blast radius", "stops", hit, "running", total,
			"hint", "waiting for the next desired change; --allow-mass-stop lets it through")
		return
	}
	l.confirm = &Confirmation{Kind: ConfirmBlast, Prompt: prompt}
	l.note("holding: %s; confirm to go on", prompt)
	l.endRollout("the blast-radius guard asks")
}

// blastRadius counts the running managed containers the plan stops or rolls,
// and all the running ones.
func blastRadius(p reconcile.Plan, containers []docker.Container) (hit, running int) {
	live := map[string]bool{}
	for _, c := range containers {
		if c.State == docker.StateRunning {
			live[c.ID] = true
		}
	}
	seen := map[string]bool{}
	for _, s := range p.Steps() {
		if (s.Action == reconcile.ActStop || s.Action == reconcile.ActRoll) && live[s.ContainerID] {
			seen[s.ContainerID] = true
		}
	}
	return len(seen), len(live)
}

type stepDone struct {
	step     reconcile.Step
	listed   time.Time
	mode     Mode
	began    time.Time // wall clock
	err      error
	duration time.Duration
	ran      bool  // false: the journal refused the step's first line, so it never ran
	jerr     error // the journal could not be written
}

// runStep runs s beside the loop with the client the mode allows. The
// journal gets a line before the step starts and another when it ends;
// a step whose first line cannot be written does not run.
func (l *loop) runStep(s reconcile.Step, began time.Time) {
	now := l.now()
	l.running[s.Key()] = &StepRun{Step: s, Since: now, Listed: l.planListed}
	delete(l.approved, s.Key())
	if l.opts.OnStep != nil {
		l.opts.OnStep(s, now)
	}
	c := l.ro
	if l.mode.Acting() && l.lock != nil {
		c = l.scoped()
	}
	l.event(Event{Kind: EventStepStarted, Step: s})
	mode, jr, listed := l.mode, l.opts.Journal, l.planListed
	entry := l.entry(l.journalMode())
	run := reconcile.RunOptions{OnDrain: l.onDrain, Released: l.released(s)}
	// Not goReport: the result must reach the loop even while the session
	// ends, so that the step is journaled and finishStep sees it end.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		d := l.step(c, s, run, mode, jr, entry, began)
		d.listed = listed
		l.stepped <- d
	}()
}

// step runs s and journals it: a line before, a line after. It runs beside
// the loop and touches none of its state.
func (l *loop) step(c docker.Client, s reconcile.Step, run reconcile.RunOptions, mode Mode, jr *journal.Journal, entry journal.Entry, began time.Time) stepDone {
	d := stepDone{step: s, mode: mode, began: began}
	if jr != nil {
		e := journal.FromResult(reconcile.Result{Step: s}, began, entry.User, entry.Mode)
		e.Engine, e.Prefix, e.Result = entry.Engine, entry.Prefix, journal.ResultStarted
		if d.jerr = jr.Append(e); d.jerr != nil {
			return d
		}
	}
	d.ran = true
	d.err = reconcile.RunWith(l.stepCtx, c, s, run)
	d.duration = time.Since(began)
	if jr != nil {
		e := journal.FromResult(reconcile.Result{Step: s, Err: d.err, Duration: d.duration}, began, entry.User, entry.Mode)
		e.Engine, e.Prefix = entry.Engine, entry.Prefix
		if d.err != nil && l.stepCtx.Err() != nil {
			e.Result = journal.ResultInterrupted
		}
		d.jerr = jr.Append(e)
	}
	return d
}

func (l *loop) onStepDone(d stepDone) {
	s, key := d.step, d.step.Key()
	operator := l.rollbackStops[key] // an operator rollback's stop, not failure_action's
	delete(l.rollbackStops, key)
	l.ends++
	l.slotEnded[slotOf(s)] = l.ends
	if !d.ran || d.err != nil || s.Hold != "" {
		l.epoch++ // what every slot's plan hangs on moved: a failure, a hold
	}
	delete(l.running, key)
	if d.jerr != nil {
		l.halt("journal: " + d.jerr.Error())
	}
	if !d.ran {
		l.requestFetch()
		return
	}
	res := StepResult{Step: s, Mode: d.mode, Began: d.began, Duration: d.duration, Listed: d.listed, ends: l.ends}
	if d.err != nil {
		res.Err = d.err.Error()
	}
	l.results[key] = res
	l.recent = append(l.recent, res)
	if len(l.recent) > maxRecent {
		l.recent = l.recent[len(l.recent)-maxRecent:]
	}
	delete(l.confirmed, key)
	if d.err != nil {
		r := l.retries[key]
		if r == nil {
			r = &retry{}
			l.retries[key] = r
		}
		r.n++
		wait := reconcile.Backoff(r.n, retryMin, retryMax)
		r.at = time.Now().Add(wait)
		l.note("%s %s failed: %v", s.Action, s.Target(), d.err)
		l.endRollout(fmt.Sprintf("%s %s failed", s.Action, s.Target()))
		l.event(Event{Kind: EventStepFailed, Step: s, Duration: d.duration, Err: d.err, RetryIn: wait})
	} else {
		delete(l.retries, key)
		l.event(Event{Kind: EventStepDone, Step: s, Duration: d.duration})
		if s.Hold != "" && !operator {
			// failure_action's rollback: its spec goes on hold now, and
			// it is listed. The operator's put the spec on hold as it
			// began, and a Retry since may have lifted it: not again.
			l.hold(s.Workload, s.Hold)
			l.rolledBack = append(l.rolledBack, RollbackInfo{Workload: s.Workload, Slot: s.Slot, Container: s.Container,
				Hash: s.Hold, Reason: s.Reason, At: l.now()})
			if len(l.rolledBack) > maxNotes {
				l.rolledBack = l.rolledBack[1:]
			}
			l.note("rolled back %s: spec %s is on hold until the desired spec changes", s.Target(), short(s.Hold))
			l.log(levelError, "rolled back: the new spec is on hold until the desired spec changes",
				"workload", s.Workload, "slot", s.Slot, "container", s.Container, "spec", short(s.Hold), "reason", s.Reason)
		}
		if s.Action == reconcile.ActRestart {
			l.restarts[s.ContainerID]++
		}
	}
	if l.releaseAfterStep && len(l.running) == 0 {
		l.releaseAfterStep = false
		l.releaseLock()
	}
	l.requestFetch()
}

// onDrain hands a step's drain progress to the loop, from the step's
// goroutine. It never blocks the step: the loop shows the latest.
func (l *loop) onDrain(p reconcile.DrainProgress) {
	select {
	case l.drained <- p:
	default:
	}
}

// onDrained shows a drain in the running step, and logs it.
func (l *loop) onDrained(p reconcile.DrainProgress) {
	r := l.running[p.Step.Key()]
	if r == nil {
		return
	}
	r.Drain = &p
	kind := EventDraining
	if p.Ended != "" {
		kind = EventDrained
	}
	l.event(Event{Kind: kind, Step: p.Step, Drain: &p})
}

// halt stops every step for good: the journal cannot be written, and
// rollcall does not act without its audit trail.
func (l *loop) halt(why string) {
	if l.halted != "" {
		return
	}
	l.halted = why
	l.note("halted: %s; nothing more runs (no audit, no action)", why)
	l.log(levelError, "halted: nothing more runs without the journal", "error", why)
}

func (l *loop) hold(workload, hash string) {
	if l.holds[workload] == nil {
		l.holds[workload] = map[string]bool{}
	}
	l.holds[workload][hash] = true
	l.saveHolds()
}

// startRollback is the operator's rollback of a workload: hold its spec at
// once; rollbackStep then stops its new containers one by one.
func (l *loop) startRollback(workload string) {
	if !l.acting("roll back") {
		return
	}
	w := l.resolvedWorkload(workload)
	if w == nil {
		l.note("roll back: no workload %q in the desired state", workload)
		return
	}
	if w.Err != nil {
		l.note("roll back %s: %v", workload, w.Err)
		return
	}
	l.decision("rollback", workload, "spec "+short(w.Hash)+" on hold")
	l.hold(workload, w.Hash)
	l.rollbacks[workload] = w.Hash
	l.note("rolling back %s: spec %s on hold; its new containers stop where an older one still serves", workload, short(w.Hash))
}

// rollbackStep is the next stop of an operator rollback: the first stop
// Diff planned for it (Observed.RollingBack carries l.rollbacks), with the
// pre_stop and drain of every stop. A rollback Diff plans no stop for any
// more ends; one whose workload cannot be acted on (Diff stops nothing of
// it) waits.
func (l *loop) rollbackStep() (reconcile.Step, bool) {
	for _, name := range sortedKeys(l.rollbacks) {
		hash := l.rollbacks[name]
		for _, wp := range l.plan.Workloads {
			if wp.Name != name {
				continue
			}
			for _, s := range wp.Steps {
				if s.Action == reconcile.ActStop && s.Hold == hash {
					return s, true
				}
			}
		}
		if w := l.resolvedWorkload(name); w == nil || w.Err != nil {
			continue
		}
		kept := 0
		for _, c := range l.containers {
			if c.Labels[docker.WorkloadLabel(l.prefix)] == name && c.Labels[docker.SpecLabel(l.prefix)] == hash {
				kept++
			}
		}
		delete(l.rollbacks, name)
		if kept > 0 {
			l.note("rollback of %s done; %d slot(s) had finished rolling and keep the new spec", name, kept)
		} else {
			l.note("rollback of %s done", name)
		}
	}
	return reconcile.Step{}, false
}
