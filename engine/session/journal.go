package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/state"
)

// The journal (DESIGN §7) is made from the facts: lineOf is the one place
// a fact becomes its line, with who, how and where it happened. A fact is
// journaled in one of two ways, as lineOf says of each kind:
//
//   - As it is recorded (lineAsRecorded): its line is handed to the
//     journal's worker in the loop's turn that records the fact, for
//     facts nothing waits on: an operator's decision (FactDecided), a
//     pause and a resume by the operator, the lock taken, an operator's
//     or a canary's rollback (its FactHoldSet), a post that did not go.
//     Nothing new runs until the line is written (diskWait), and a line
//     that cannot be written halts the session.
//   - Before it is recorded (lineFirst): the facts an action hangs on. A
//     step's start is written first, and the step reaches the engine,
//     its FactStepStarted recorded, only once it is: a step whose line
//     cannot be written never runs (no audit, no action). A step's end
//     (done, failed, not run) is written before the step leaves the
//     steps in flight, so its slot frees and the lock goes only once the
//     journal has it. An operator's retry lifts a hold (FactHoldLifted)
//     only once its line is written. The fact is built first, its line
//     made from it, and the same fact recorded after.
//
// Three lines are not made from a fact, and say why where they are
// written: a pin and a pin's end (revisions_pin.go) are the operator's
// (or the session's) decision to change the pins file, journaled before
// the file is written; the fact (FactPinSet, FactPinLifted) is what a
// later read of the file finds, which another process may have written
// too. And `rollcall retry` outside a session (RetryHolds) journals its
// own line: there is no session to record a fact.
//
// The lines on disk are as they always were (history reads old and new).

// lineWhen is when a fact's journal line is written.
type lineWhen int

const (
	lineNone       lineWhen = iota // the journal does not record it
	lineAsRecorded                 // handed to the journal as the fact is recorded
	lineFirst                      // written before the fact is recorded (writeFirst)
)

// lineOf is fact f's journal line and when it is written: the one place
// a fact becomes a journal line. from is who, how, where and when (asked
// only for a fact the journal records).
func lineOf(f Fact, from func() journal.Entry) (journal.Entry, lineWhen) {
	decision := func(action, workload, reason string) (journal.Entry, lineWhen) {
		e := from()
		e.Action, e.Workload, e.Reason, e.Result = action, workload, reason, journal.ResultDecision
		return e, lineAsRecorded
	}
	step := func(err error, duration time.Duration) journal.Entry {
		at := from()
		e := journal.FromResult(reconcile.Result{Step: f.Step, Err: err, Duration: duration}, at.Time, at.User, at.Mode)
		e.Engine, e.Prefix, e.Host, e.Rollout = at.Engine, at.Prefix, at.Host, at.Rollout
		return e
	}
	switch f.Kind {
	case FactStepStarted:
		e := step(nil, 0)
		e.Result = journal.ResultStarted
		return e, lineFirst
	case FactStepNotRun:
		e := step(errors.New("not run: "+f.Why), 0)
		e.Result = journal.ResultInterrupted
		return e, lineFirst
	case FactStepDone, FactStepFailed:
		e := step(f.Err, f.Duration)
		if f.Interrupted {
			e.Result = journal.ResultInterrupted
		}
		if f.Result != nil && f.Result.Judgement != nil {
			e.Canary = journal.CanaryOf(f.Step, *f.Result.Judgement)
		}
		return e, lineFirst
	case FactHoldLifted:
		if h := f.Hold; h.Lifted == LiftedByOperator {
			e, _ := decision("retry", h.Workload, "hold lifted on spec "+strings.Join(shortList(h.Hashes), ", "))
			return e, lineFirst
		}
	case FactHoldSet:
		switch h := f.Hold; {
		case h.Elsewhere:
		case h.Cause == state.HoldByOperator:
			return decision("rollback", h.Workload, "spec "+short(h.Hashes[0])+" on hold")
		case h.Cause == state.HoldByCanaryAbort:
			return decision("canary-abort", h.Workload, "spec "+short(h.Hashes[0])+" on hold: "+h.Detail)
		}
	case FactPaused:
		if f.Failure == nil {
			return decision("pause", "", "")
		}
	case FactResumed:
		if !f.ByChange {
			return decision("resume", "", f.Pause.Reason)
		}
	case FactLockTaken:
		return decision("lock-taken", "", f.Lock.Path)
	case FactNoticeFailed:
		e, when := decision("notify-"+string(f.Notice.Result), f.Notice.Event.Workload, noticeWhat(f))
		e.Error = noticeWhy(f)
		return e, when
	case FactDecided:
		return decisionLine(f.Decision, decision)
	}
	return journal.Entry{}, lineNone
}

// decisionLine is the journal's decision line of d, made by line.
func decisionLine(d *Decision, line func(action, workload, reason string) (journal.Entry, lineWhen)) (journal.Entry, lineWhen) {
	switch d.Kind {
	case DecisionApprove, DecisionSkip, DecisionUnskip:
		return line(d.Kind.String(), "", d.Key)
	case DecisionApproveRollout:
		return line("approve-rollout", "", d.Plan)
	case DecisionConfirm, DecisionDecline:
		if c := d.Confirm; c.Kind == ConfirmDowntime {
			return line(d.Kind.String(), c.Step.Workload, "downtime: "+c.Key)
		}
		return line(d.Kind.String(), "", d.Confirm.Prompt)
	case DecisionEmergencyOn:
		return line("emergency-on", "", "skip-health: up-to-date running containers count as healthy")
	case DecisionEmergencyOff:
		return line("emergency-off", "", "health is waited for again")
	case DecisionRecreate:
		return line("recreate", d.Workload, fmt.Sprintf("rolling restart of %v", d.Names))
	case DecisionRetryCanary:
		return line("retry", d.Workload, fmt.Sprintf("canary step %d runs again", d.Canary))
	case DecisionRetrySwarm:
		return line("retry", d.Workload, "the update Swarm paused is sent again")
	}
	// A failed pull retried at once (DecisionRetryPull) is not journaled:
	// it lifts no hold, and the pull's own lines say it ran again.
	return journal.Entry{}, lineNone
}

// journalFact hands the line of f, just recorded, to the journal, if it
// is one journaled as it is recorded.
func (l *loop) journalFact(f Fact) {
	e, when := lineOf(f, func() journal.Entry {
		e := l.entry(l.journalMode())
		e.Time = f.At
		return e
	})
	if when == lineAsRecorded {
		l.writeJournal(e, f.At, nil)
	}
}

// writeFirst writes the line of f, a fact an action hangs on, before f is
// recorded: then runs on the loop once it is written (err nil) or could
// not be, and records f itself where the action happens. from is who,
// how, where and when.
func (l *loop) writeFirst(f Fact, from journal.Entry, then func(err error)) {
	e, when := lineOf(f, func() journal.Entry { return from })
	if when != lineFirst {
		panic("session: " + f.Kind.String() + " is not journaled before it is recorded")
	}
	l.writeJournal(e, l.wallNow(), then)
}

// lineNow is who, how and where, for a line written now.
func (l *loop) lineNow() journal.Entry {
	e := l.entry(l.journalMode())
	e.Time = l.wallNow() // the journal is on the wall clock, as the steps' lines
	return e
}

// journalWait is a journal line handed to the journal worker: when it was
// (wall clock), and what the loop does once it is written (err nil) or
// could not be.
type journalWait struct {
	since time.Time
	then  func(err error)
}

// errJournalGone is a line the session ended without: the disk never took
// it.
var errJournalGone = errors.New("not written: the session ended first")

// writeJournal has the journal worker append e, handed over at now (wall
// clock), and then runs then (if set) on the loop with the outcome
// (onJournaled): no audit, no action, so what hangs on a line waits for
// it. A line that cannot be written halts the session. Without a journal,
// then runs at once.
func (d *disk) writeJournal(e journal.Entry, now time.Time, then func(error)) {
	switch {
	case !d.journaled:
		if then != nil {
			then(nil)
		}
		return
	case d.diskGone:
		if then != nil {
			then(errJournalGone)
		}
		return
	}
	d.jwait = append(d.jwait, journalWait{since: now, then: then})
	d.journalW.Push(e)
}

// onJournaled takes in the lines the journal worker wrote, in order.
func (l *loop) onJournaled(errs []error) {
	for _, err := range errs {
		if len(l.jwait) == 0 {
			return // given up on as the session ended
		}
		w := l.jwait[0]
		l.jwait = l.jwait[1:]
		if err != nil {
			l.halt("journal: " + err.Error())
		}
		if w.then != nil {
			w.then(err)
		}
	}
	if len(l.jwait) == 0 {
		l.diskDone("journal")
	}
	l.act() // what waited for the journal may run
}

// decisionThen journals a decision that is no fact of its own (a pin, a
// pin's end: see the top of this file), and once its line is written
// runs then. It fails like a step would: a decision that cannot be
// journaled halts the session, and then never runs.
func (l *loop) decisionThen(action, workload, about string, then func()) {
	e := l.lineNow()
	e.Action, e.Workload, e.Reason, e.Result = action, workload, about, journal.ResultDecision
	l.writeJournal(e, e.Time, func(err error) {
		if err == nil {
			then()
		}
	})
}

// entry is a journal entry with who, how and where filled in.
func (l *loop) entry(mode string) journal.Entry {
	e := journal.Entry{User: l.opts.User, Mode: mode, Prefix: l.prefix, Slot: -1, Host: l.opts.Host}
	if l.infoOK {
		e.Engine = l.engineName()
	}
	// The fleet's rollout, else the session's own (notify.go): the journal
	// lines of a rollout and its webhook posts carry one ID.
	e.Rollout = l.stepRollout()
	return e
}

// journalMode is how the journal names the session's mode.
func (l *loop) journalMode() string {
	if l.opts.JournalMode != "" {
		return l.opts.JournalMode
	}
	return string(l.mode)
}

func shortList(hashes []string) []string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = short(h)
	}
	return out
}
