package session

import (
	"github.com/rollcall/rollcall/engine/reconcile"
	"slices"
)

// Intent is something the operator asks of the session, sent with Do.
type Intent interface{ intent() }

type (
	// ApproveStep lets the step with this Key() run in step mode (after a
	// fresh diff still holds it). It also un-skips the step.
	ApproveStep struct{ Key string }
	// ApproveRollout approves the rollout (step mode): every step, present
	// and to come, until the desired state as it was when it was given is
	// reached. A desired change, a failed step, a pause or a blast-radius
	// question ends it.
	ApproveRollout struct{}
	// Skip keeps a step from running, in step and auto mode, until it is
	// un-skipped, approved again or leaves the plan.
	Skip struct{ Key string }
	// Unskip lets a skipped step run again as its mode allows.
	Unskip struct{ Key string }
	// SetMode switches to watch, step or auto; an acting mode takes the
	// host lock first, and falls back to watch without it.
	SetMode struct{ Mode Mode }
	// Pause stops every step until Resume; a running step finishes.
	Pause struct{}
	// Resume lifts a pause.
	Resume struct{}
	// Rollback puts a workload's current spec on hold and stops its
	// up-to-date containers wherever an older one still serves the slot,
	// with the stops Diff plans for it (drained: pre_stop, update.drain).
	Rollback struct{ Workload string }
	// Retry lifts every hold of a workload (§6: `t` in the console, as
	// `rollcall retry WORKLOAD`), journaled: its held spec starts again
	// under the usual rules. Refused in watch mode.
	Retry struct{ Workload string }
	// Recreate asks for a rolling restart (§5 rule 10) of one workload, or
	// of every workload when Workload is "".
	Recreate struct{ Workload string }
	// Emergency turns skip-health (§5 rule 11) on or off.
	Emergency struct{ On bool }
	// Confirm answers the pending confirmation (Snapshot.Confirm).
	Confirm struct{ Yes bool }
	// Refresh relists the engine now.
	Refresh struct{}
)

func (ApproveStep) intent()    {}
func (ApproveRollout) intent() {}
func (Skip) intent()           {}
func (Unskip) intent()         {}
func (SetMode) intent()        {}
func (Pause) intent()          {}
func (Resume) intent()         {}
func (Rollback) intent()       {}
func (Retry) intent()          {}
func (Recreate) intent()       {}
func (Emergency) intent()      {}
func (Confirm) intent()        {}
func (Refresh) intent()        {}

// handle applies one intent. Whatever it changes makes the plan unfit to
// act on until a fresh relist.
func (l *loop) handle(i Intent) {
	l.spend()
	defer l.requestFetch()
	switch i := i.(type) {
	case ApproveStep:
		if !l.acting("approve a step") {
			return
		}
		delete(l.skipped, i.Key)
		if l.confirm != nil && l.confirm.Key == i.Key {
			l.confirm.Declined = false
		}
		if l.mode == ModeStep {
			l.approved[i.Key] = true
		}
		l.decided(Decision{Kind: DecisionApprove, Key: i.Key, Step: stepIn(l.plan, i.Key)})
	case ApproveRollout:
		if !l.acting("approve the rollout") {
			return
		}
		if l.desired == nil {
			l.reply("approve the rollout: no desired state loaded")
			return
		}
		l.rollout = &rolloutApproval{fp: l.desiredFP, since: l.engineNow()}
		l.decided(Decision{Kind: DecisionApproveRollout, Plan: l.plan.Summary()})
	case Unskip:
		if l.skipped[i.Key] {
			delete(l.skipped, i.Key)
			l.decided(Decision{Kind: DecisionUnskip, Key: i.Key, Step: stepIn(l.plan, i.Key)})
		}
	case Skip:
		l.decided(Decision{Kind: DecisionSkip, Key: i.Key, Step: stepIn(l.plan, i.Key)})
		l.skip(i.Key)
		if l.confirm != nil && l.confirm.Key == i.Key {
			l.confirm = nil
		}
	case SetMode:
		l.setMode(i.Mode)
	case Pause:
		if l.pause == nil {
			l.pause = &PauseInfo{Reason: "paused by " + l.opts.User, ByOperator: true, Since: l.engineNow()}
			p := *l.pause
			l.fact(Fact{Kind: FactPaused, Pause: &p})
			l.endRollout(ApprovalEnd{Cause: ApprovalPaused})
		}
	case Resume:
		l.unpause()
	case Rollback:
		l.startRollback(i.Workload)
	case Retry:
		l.retry(i.Workload)
	case Pin:
		l.pin(i)
	case Recreate:
		l.startRecreate(i.Workload)
	case Emergency:
		if l.skipHealth != i.On {
			l.skipHealth = i.On
			kind := DecisionEmergencyOff
			if i.On {
				kind = DecisionEmergencyOn
			}
			l.decided(Decision{Kind: kind})
		}
	case Confirm:
		l.answer(i.Yes)
	case Gate:
		l.setGate(i)
	case Refresh:
	}
}

// acting reports whether the session may act; in watch mode it notes that
// what was asked is refused.
func (l *loop) acting(what string) bool {
	if l.mode.Acting() {
		return true
	}
	l.reply("watch mode is read-only: cannot %s (switch to step or auto)", what)
	return false
}

func (l *loop) setMode(m Mode) {
	if _, err := ParseMode(string(m)); err != nil {
		l.reply("%v", err)
		return
	}
	if m == l.mode {
		return
	}
	clear(l.approved)
	if !m.Acting() {
		l.mode = m
		if len(l.running) > 0 {
			l.releaseAfterStep = true
		} else {
			l.releaseLock()
		}
		return
	}
	l.releaseAfterStep = false
	l.mode = m
	l.takeLock() // falls back to watch without it
}

func (l *loop) startRecreate(workload string) {
	if !l.acting("recreate") {
		return
	}
	if l.desired == nil {
		l.reply("recreate: no desired state loaded")
		return
	}
	at := l.engineNow()
	var names []string
	if workload == "" {
		names = l.desired.Names()
	} else if _, ok := l.desired.Workloads[workload]; ok {
		names = []string{workload}
	} else {
		l.reply("recreate: no workload %q in the desired state", workload)
		return
	}
	for _, n := range names {
		l.recreate[n] = at
	}
	l.decided(Decision{Kind: DecisionRecreate, Workload: workload, Names: names})
}

// answer takes the operator's yes or no to the pending confirmation.
func (l *loop) answer(yes bool) {
	c := l.confirm
	if c == nil {
		l.reply("nothing to confirm")
		return
	}
	switch c.Kind {
	case ConfirmBlast:
		if yes {
			l.confirm = nil
		} else {
			c.Declined = true // the guard holds; it asks nothing new
		}
	case ConfirmDowntime:
		l.confirm = nil
		if yes {
			l.confirmed[c.Key] = true
		} else {
			l.skip(c.Key)
		}
	}
	kind, answered := DecisionDecline, *c
	if yes {
		kind = DecisionConfirm
	}
	l.decided(Decision{Kind: kind, Confirm: &answered})
}

// decided records an operator's decision d (FactDecided), by the
// session's user: the journal's decision line is made from it.
func (l *loop) decided(d Decision) {
	d.By = l.opts.User
	l.fact(Fact{Kind: FactDecided, Decision: &d})
}

// stepIn is the executable step of p with key, nil when p has none.
func stepIn(p reconcile.Plan, key string) *reconcile.Step {
	for _, s := range p.Executable() {
		if s.Key() == key {
			return &s
		}
	}
	return nil
}

// skip keeps the step with key from running, in step and auto mode,
// until it is un-skipped, approved again or leaves the plan.
func (m *marks) skip(key string) {
	m.skipped[key] = true
	delete(m.approved, key)
}

// inPlan reports whether the plan holds an executable step with key.
func inPlan(p reconcile.Plan, key string) bool {
	return slices.ContainsFunc(p.Executable(), func(s reconcile.Step) bool { return s.Key() == key })
}
