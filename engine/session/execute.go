package session

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/state"
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
//
// Nothing new runs while the session ends, nor while a journal line or a
// holds write is pending: the snapshot says what it waits for.
func (l *loop) act() {
	if l.ctx.Err() != nil {
		return
	}
	if why := l.diskWait(l.wallNow()); why != "" {
		l.waiting = why
		return
	}
	fresh := l.unspent() && !l.loading
	if fresh && !l.anyStale() {
		l.dropVanished()
		if l.mode.Acting() && l.lockHeld() && l.connected && l.halted == "" {
			l.checkBlast() // only when it could act: watching weighs nothing
		}
	}
	g := gate{
		Now: l.wallNow(), Mode: l.mode, Unattended: l.opts.Unattended != nil,
		LockHeld: l.lockHeld(), Connected: l.connected,
		Fresh: fresh, Busy: map[string]bool{}, Stale: l.staleSlots(), Room: maxParallelSteps - len(l.running),
		Halted: l.halted != "", Paused: l.pause != nil, Gated: l.gated, GatedPulls: l.gatePulls,
		Blast:      l.refusal != nil || (l.confirm != nil && l.confirm.Kind == ConfirmBlast),
		SettleLeft: l.settleLeft(l.wallNow()),
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
		l.spend() // the plan is spent: the next steps wait for a list after these
	}
	launched := l.wallNow() // one instant for the steps of one plan
	for _, s := range d.Run {
		if s.Downtime {
			l.wentDown(s, launched)
		}
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

// scoped is the client steps act through: raw, refusing any container
// the engine does not say is managed under prefix. One per prefix, so what
// the engine's lists vouched for is not inspected again.
func (o *observer) scoped(raw docker.Client, prefix string) docker.Client {
	if o.scopedClient == nil || o.scopedPrefix != prefix {
		o.scopedClient, o.scopedPrefix = docker.Scoped(raw, prefix), prefix
	}
	return o.scopedClient
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
			l.fact(Fact{Kind: FactApprovalDropped, Key: key})
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
	l.marks.forgetGone(keys)
	l.runner.forgetGone(keys, &l.freshness)
}

// forgetGone drops the skips and confirmations of steps whose key is not
// in keys (the plan's).
func (m *marks) forgetGone(keys map[string]bool) {
	for _, marked := range []map[string]bool{m.skipped, m.confirmed} {
		for key := range marked {
			if !keys[key] {
				delete(marked, key)
			}
		}
	}
}

// forgetGone drops the retries and the results of steps whose key is not
// in keys (the plan's); a result that ended since the plan's list began
// (f) is kept, for the plan does not know it yet.
func (r *runner) forgetGone(keys map[string]bool, f *freshness) {
	for key := range r.retries {
		if !keys[key] {
			delete(r.retries, key)
		}
	}
	for key, res := range r.results {
		if !keys[key] && !f.endedSincePlan(res.ends) {
			delete(r.results, key)
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
		r := *l.refusal
		l.fact(Fact{Kind: FactRefused, Refusal: &r})
		return
	}
	l.confirm = &Confirmation{Kind: ConfirmBlast, Prompt: prompt}
	c := *l.confirm
	l.fact(Fact{Kind: FactAsked, Confirm: &c})
	l.endRollout(ApprovalEnd{Cause: ApprovalBlast})
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
	entry    journal.Entry // who, how and where, for its journal lines
	began    time.Time     // wall clock
	err      error
	duration time.Duration
	// ran is false for a step that never reached the engine: its first
	// journal line could not be written, or what it waited for changed.
	ran         bool
	interrupted bool   // cut short by Abandon
	created     string // a start: the ID of the container it made (RunOptions.Created)
	// judged is a canary step's last judgement (RunOptions.Canary).
	judged *reconcile.Judgement
}

// runStep starts s: it is running from now on (its slot is busy), its
// first journal line goes to the journal, and once that is written launch
// hands it to the engine. A step whose first line cannot be written never
// runs.
func (l *loop) runStep(s reconcile.Step, began time.Time) {
	l.running[s.Key()] = &StepRun{Step: s, Since: l.engineNow(), Listed: l.observed.wall}
	delete(l.approved, s.Key())
	d := stepDone{step: s, mode: l.mode, listed: l.observed.wall, entry: l.entry(l.journalMode()), began: began}
	d.entry.Time = began
	l.writeFirst(Fact{Kind: FactStepStarted, Step: s}, d.entry, func(err error) {
		switch why := l.launchRefused(s); {
		case err != nil:
			l.onStepDone(d) // never ran; the session halted
		case why != "":
			l.notRun(d, why)
		default:
			l.launch(d)
		}
	})
}

// launchRefused is why a step whose first journal line was just written
// no longer runs: the session stopped acting, or the operator held it,
// while the line was written. "" means it runs.
func (l *loop) launchRefused(s reconcile.Step) string {
	switch {
	case l.ctx.Err() != nil:
		return "the session is ending"
	case l.halted != "":
		return "halted"
	case !l.mode.Acting() || !l.lockHeld():
		return "the session stopped acting"
	case l.pause != nil && !l.rollbackStops[s.Key()]:
		return "paused"
	case l.gated != "" && !l.rollbackStops[s.Key()] && !(l.gatePulls && s.Action == reconcile.ActPull):
		return "gated"
	case l.skipped[s.Key()]:
		return "skipped"
	}
	return ""
}

// notRun ends a step whose first line is written but that never reached
// the engine: its last line says so, and then the step ends.
func (l *loop) notRun(d stepDone, why string) {
	f := Fact{Kind: FactStepNotRun, Step: d.step, Why: why}
	l.writeFirst(f, d.entry, func(error) {
		l.fact(f)
		l.onStepDone(d)
	})
}

// launch runs a step beside the loop with the client the mode allows; its
// result comes back on stepped.
func (l *loop) launch(d stepDone) {
	s := d.step
	now := l.engineNow()
	if r := l.running[s.Key()]; r != nil {
		r.Since = now
	}
	if l.opts.OnStep != nil {
		l.opts.OnStep(s, now)
	}
	c := l.ro
	if l.mode.Acting() && l.lockHeld() {
		c = l.scoped(l.raw, l.prefix)
	}
	l.fact(Fact{Kind: FactStepStarted, Step: s}) // its line is written (runStep)

	var created string              // set by RunWith, on the step's goroutine, before it returns
	var judged *reconcile.Judgement // set by the canary runner, on the step's goroutine, before it returns
	run := reconcile.RunOptions{OnDrain: l.onDrain, Released: l.released(s), Created: func(id string) { created = id }}
	if s.Action == reconcile.ActCanary {
		run.Canary = l.canaryRunFor(func(j reconcile.Judgement) { judged = &j })
	}
	if s.SplitFirst != "" {
		run.Split = l.canarySplitFor()
	}
	ctx := l.stepCtx
	if s.Action == reconcile.ActPull {
		// Under the session's own context: a pull touches nothing that
		// serves, so an ending session (a signal, q) cancels it at once
		// rather than waiting for it; and cancelled when the desired state
		// no longer needs its image.
		ctx, run.OnPull = l.pullRun(l.ctx, s)
	}
	// Not goReport: the result must reach the loop even while the session
	// ends, so that the step is journaled and finishStep sees it end.
	sw := l.swarmRO
	if l.onSwarm() && l.mode.Acting() && l.lockHeld() {
		sw = l.scopedFor(l.prefix)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		d.ran = true
		if s.Service != nil {
			d.err = reconcile.RunSwarm(ctx, sw, s) // a swarm's service (swarm.go)
		} else {
			d.err = reconcile.RunWith(ctx, c, s, run)
		}
		d.duration = l.wallNow().Sub(d.began)
		d.interrupted = d.err != nil && ctx.Err() != nil
		d.created, d.judged = created, judged
		l.stepped <- d
	}()
}

// onStepped takes a step's end from its goroutine: its last journal line
// is written first, and the step ends (onStepDone) once it is.
func (l *loop) onStepped(d stepDone) {
	// A pull's progress reports all come before its end, but the loop's
	// select may take the end first: they are taken now, while the step
	// still runs, so its last report is never lost.
	l.drainPullProgress()
	l.writeFirst(d.end(), d.entry, func(error) { l.onStepDone(d) })
}

// end is the fact of a step's end as the step itself says it: done or
// failed, with its result; the loop adds what it decides (a retry's
// wait, the failures in a row) as it records it.
func (d stepDone) end() Fact {
	s := d.step
	res := StepResult{Step: s, Mode: d.mode, Began: d.began, Duration: d.duration, Listed: d.listed, Created: d.created, Judgement: d.judged,
		PullKind: pullKind(s, d.err)}
	if d.err != nil {
		res.Err, res.ProxyFault = d.err.Error(), reconcile.ProxyFaultOf(d.err)
	}
	f := Fact{Kind: FactStepDone, Step: s, Result: &res, Duration: d.duration}
	if d.err != nil {
		f.Kind, f.Err, f.Interrupted = FactStepFailed, d.err, d.interrupted
	}
	return f
}

// onStepDone ends a step once its last line is written (or its first
// could not be: then it never ran).
func (l *loop) onStepDone(d stepDone) {
	s, key := d.step, d.step.Key()
	operator := l.finish(key)
	unneeded := l.endPull(key)
	l.stepEnded(slotOf(s), !d.ran || d.err != nil || s.Hold != "") // a failure or a hold moves what every slot's plan hangs on
	if l.releaseAfterStep && len(l.running) == 0 {
		l.releaseAfterStep = false
		l.releaseLock()
	}
	if !d.ran {
		l.requestFetch()
		return
	}
	end := d.end()
	res := *end.Result
	_, res.ends = l.stamp()
	end.Result = &res
	l.record(res)
	delete(l.confirmed, key)
	var ue *reconcile.UnsplitError
	if errors.As(d.err, &ue) {
		// Said first, whatever follows: never "share 0" for a PUT that failed.
		l.fact(Fact{Kind: FactUnsplit, Step: s, Unsplit: ue})
	}
	var canaryOutcome *reconcile.CanaryError // a judged canary step: canaryEnded says it, not the failure path
	switch {
	case unneeded && d.err != nil:
		// A pull the desired state no longer needs: cancelled, not failed.
		end.Failures = l.failures(key)
		l.fact(end)
	case errors.As(d.err, &canaryOutcome):
		end.Failures = l.failures(key)
		l.fact(end)
		l.endRollout(ApprovalEnd{Cause: ApprovalCanaryFailed, Step: &s})
	case d.err != nil:
		end.RetryIn = l.failed(key, l.wallNow())
		end.Failures = l.failures(key)
		l.fact(end)
		l.endRollout(ApprovalEnd{Cause: ApprovalStepFailed, Step: &s})
	default:
		l.succeeded(s)
		l.resumed(s) // a swarm's resumed update (swarm.go)
		l.fact(end)
		if s.Hold != "" && !operator {
			// failure_action's rollback: its spec goes on hold now, and
			// it is listed. The operator's put the spec on hold as it
			// began, and a Retry since may have lifted it: not again.
			l.hold(s.Workload, s.Hold, holdWhy{state.HoldByFailureAction, s.Target() + ": " + s.Reason})
			rb := RollbackInfo{Workload: s.Workload, Slot: s.Slot, Container: s.Container,
				Hash: s.Hold, Reason: s.Reason, At: l.engineNow()}
			l.rolledBackBy(rb)
			l.fact(Fact{Kind: FactRolledBack, Rollback: &rb})
		}
	}
	if s.Action == reconcile.ActCanary && s.Canary != nil {
		l.canaryEnded(s, d.err, d.judged)
	}
	l.requestFetch()
}

// finish takes the step with key out of those in flight; operator: it was
// an operator rollback's stop, not failure_action's.
func (r *runner) finish(key string) (operator bool) {
	operator = r.rollbackStops[key]
	delete(r.rollbackStops, key)
	delete(r.running, key)
	return operator
}

// record keeps a step's result: the last of its key, and among the recent.
func (r *runner) record(res StepResult) {
	r.results[res.Step.Key()] = res
	r.recent = append(r.recent, res)
	if len(r.recent) > maxRecent {
		r.recent = r.recent[len(r.recent)-maxRecent:]
	}
}

// failed counts one more failure of the step with key, and returns how
// long auto waits before it tries it again, from now (wall clock).
func (r *runner) failed(key string, now time.Time) time.Duration {
	rt := r.retries[key]
	if rt == nil {
		rt = &retry{}
		r.retries[key] = rt
	}
	rt.n++
	wait := reconcile.Backoff(rt.n, retryMin, retryMax)
	rt.at = now.Add(wait)
	return wait
}

// failures is how many times in a row the step with key failed so far.
func (r *runner) failures(key string) int {
	if rt := r.retries[key]; rt != nil {
		return rt.n
	}
	return 0
}

// succeeded forgets the failures of s, and counts it if it restarted a
// container (rule 4's backoff).
func (r *runner) succeeded(s reconcile.Step) {
	delete(r.retries, s.Key())
	if s.Action == reconcile.ActRestart {
		r.restarts[s.ContainerID]++
	}
}

// rolledBackBy lists a rollback by failure_action, the last maxNotes.
func (r *runner) rolledBackBy(info RollbackInfo) {
	r.rolledBack = append(r.rolledBack, info)
	if len(r.rolledBack) > maxNotes {
		r.rolledBack = r.rolledBack[1:]
	}
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
	if r.Drain == nil { // its drain began: Diff's slots say it is leaving
		l.plan = l.plan.WithDrained(p.Step.ContainerID)
	}
	r.Drain = &p
	kind := FactDraining
	if p.Ended != "" {
		kind = FactDrained
	}
	l.fact(Fact{Kind: kind, Step: p.Step, Drain: &p})
}

// halt stops every step for good: the journal cannot be written, and
// rollcall does not act without its audit trail.
func (l *loop) halt(why string) {
	if l.halted != "" {
		return
	}
	l.halted = why
	l.fact(Fact{Kind: FactHalted, Why: why})
}

// hold puts workload's spec hash on hold for why, and has the holds file
// say so.
func (l *loop) hold(workload, hash string, why holdWhy) {
	l.guards.hold(workload, hash, why)
	l.saveHolds()
	l.fact(Fact{Kind: FactHoldSet, Hold: &HoldFact{Workload: workload, Hashes: []string{hash}, By: l.opts.User, Cause: why.cause, Detail: why.detail}})
}

// holdWhy is what put a hold, kept with it: its typed cause, and the
// detail said as it was put.
type holdWhy struct {
	cause  state.HoldCause
	detail string
}

// hold puts workload's spec hash on hold for why.
func (g *guards) hold(workload, hash string, why holdWhy) {
	if g.holds[workload] == nil {
		g.holds[workload] = map[string]bool{}
	}
	g.holds[workload][hash] = true
	if g.holdWhys == nil {
		g.holdWhys = map[string]map[string]holdWhy{}
	}
	if g.holdWhys[workload] == nil {
		g.holdWhys[workload] = map[string]holdWhy{}
	}
	g.holdWhys[workload][hash] = why
}

// holdWhy is what put workload's spec hash on hold (the zero holdWhy, a
// cause unknown, for a hold the session does not know).
func (g *guards) holdWhy(workload, hash string) holdWhy { return g.holdWhys[workload][hash] }

// startRollback is the operator's rollback of a workload: hold its spec at
// once; rollbackStep then stops its new containers one by one.
func (l *loop) startRollback(workload string) {
	if !l.acting("roll back") {
		return
	}
	w := l.resolvedWorkload(workload)
	if w == nil {
		l.reply("roll back: no workload %q in the desired state", workload)
		return
	}
	if w.Err != nil {
		l.reply("roll back %s: %v", workload, w.Err)
		return
	}
	l.beginRollback(workload, w.Hash, holdWhy{cause: state.HoldByOperator})
}

// beginRollback rolls workload's spec hash back, as the operator's r does
// and as a failed canary does: the spec on hold at once (its FactHoldSet
// is the rollback's journal line, by its cause), then Diff's stops of it
// (Observed.RollingBack), drained.
func (l *loop) beginRollback(workload, hash string, why holdWhy) {
	l.hold(workload, hash, why)
	l.rollbacks[workload] = hash
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
		l.fact(Fact{Kind: FactRollbackEnded, RollbackEnd: &RollbackEnd{Workload: name, Kept: kept}})
	}
	return reconcile.Step{}, false
}
