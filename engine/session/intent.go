package session

import (
	"fmt"
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
		l.decision("approve", "", i.Key)
	case ApproveRollout:
		if !l.acting("approve the rollout") {
			return
		}
		if l.desired == nil {
			l.note("approve the rollout: no desired state loaded")
			return
		}
		l.rollout = &rolloutApproval{fp: l.desiredFP, since: l.engineNow()}
		l.decision("approve-rollout", "", l.plan.Summary())
		l.note("rollout approved by %s: every step to the desired state runs, unless something fails, pauses or asks", l.opts.User)
	case Unskip:
		if l.skipped[i.Key] {
			delete(l.skipped, i.Key)
			l.decision("unskip", "", i.Key)
		}
	case Skip:
		l.decision("skip", "", i.Key)
		l.skip(i.Key)
		if l.confirm != nil && l.confirm.Key == i.Key {
			l.confirm = nil
		}
	case SetMode:
		l.setMode(i.Mode)
	case Pause:
		if l.pause == nil {
			l.pause = &PauseInfo{Reason: "paused by " + l.opts.User, ByOperator: true, Since: l.engineNow()}
			l.decision("pause", "", "")
			p := *l.pause
			l.fact(Fact{Kind: FactPaused, Pause: &p})
			l.endRollout("paused")
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
			if i.On {
				l.decision("emergency-on", "", "skip-health: up-to-date running containers count as healthy")
			} else {
				l.decision("emergency-off", "", "health is waited for again")
			}
			if i.On {
				l.note("emergency: health is not waited for (skip-health on)")
			} else {
				l.note("emergency off: health is waited for again")
			}
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
	l.note("watch mode is read-only: cannot %s (switch to step or auto)", what)
	return false
}

func (l *loop) setMode(m Mode) {
	if _, err := ParseMode(string(m)); err != nil {
		l.note("%v", err)
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
		l.note("recreate: no desired state loaded")
		return
	}
	at := l.engineNow()
	var names []string
	if workload == "" {
		names = l.desired.Names()
	} else if _, ok := l.desired.Workloads[workload]; ok {
		names = []string{workload}
	} else {
		l.note("recreate: no workload %q in the desired state", workload)
		return
	}
	for _, n := range names {
		l.recreate[n] = at
	}
	l.decision("recreate", workload, fmt.Sprintf("rolling restart of %v", names))
	l.note("recreate requested for %v: every older container rolls, slot by slot", names)
}

// answer takes the operator's yes or no to the pending confirmation.
func (l *loop) answer(yes bool) {
	c := l.confirm
	if c == nil {
		l.note("nothing to confirm")
		return
	}
	switch c.Kind {
	case ConfirmBlast:
		if yes {
			l.decision("confirm", "", c.Prompt)
			l.confirm = nil
			l.note("confirmed: %s", c.Prompt)
		} else {
			l.decision("decline", "", c.Prompt)
			c.Declined = true // the guard holds; it asks nothing new
		}
	case ConfirmDowntime:
		l.confirm = nil
		if yes {
			l.decision("confirm", c.Step.Workload, "downtime: "+c.Key)
			l.confirmed[c.Key] = true
			l.note("confirmed downtime: %s", c.Step.Target())
		} else {
			l.decision("decline", c.Step.Workload, "downtime: "+c.Key)
			l.skip(c.Key)
			l.note("declined downtime: %s skipped (approve it to be asked again)", c.Step.Target())
		}
	}
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
