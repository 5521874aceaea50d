package session

import (
	"fmt"
	"strings"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// A session's standing is where it stands as a whole, decided once, here,
// from its state (in the manner of a Deployment's conditions): apply's end
// and exit code, the fleet's outcome per host, the console's header and
// the agent's metrics read it. No one else judges "done or failed".

// StandingKind is where a session stands.
type StandingKind int

const (
	StandingStarting         StandingKind = iota // no desired state or no list of the engine yet
	StandingConverged                            // the desired state is reached (a pin the operator set counts as reached)
	StandingRolling                              // steps run, or are to run by themselves, or a wait ends by itself
	StandingAwaitingApproval                     // step mode: the next step waits for the operator (Causes: approval, confirm)
	StandingHeld                                 // nothing more runs until the operator acts or the desired spec changes (Causes)
	StandingFailed                               // something failed and nothing more runs by itself (Causes)
	StandingBlocked                              // the session cannot act: the engine, the lock, or no desired state (Causes)
)

var standingNames = [...]string{
	StandingStarting: "starting", StandingConverged: "converged", StandingRolling: "rolling",
	StandingAwaitingApproval: "awaiting-approval", StandingHeld: "held", StandingFailed: "failed",
	StandingBlocked: "blocked",
}

// String is the kind as apply --json and the metrics name it.
func (k StandingKind) String() string {
	if int(k) < len(standingNames) {
		return standingNames[k]
	}
	return fmt.Sprintf("standing(%d)", int(k))
}

// MarshalText names the kind in JSON.
func (k StandingKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind as MarshalText names it.
func (k *StandingKind) UnmarshalText(b []byte) error {
	return unmarshalName(b, standingNames[:], (*int)(k), "standing")
}

// StandingKinds are every kind, in order (the metrics export one series each).
func StandingKinds() []StandingKind {
	return []StandingKind{StandingStarting, StandingConverged, StandingRolling, StandingAwaitingApproval,
		StandingHeld, StandingFailed, StandingBlocked}
}

// Standing is where a session stands, and why.
type Standing struct {
	Kind   StandingKind
	Causes []Cause
	// Pinned are the workloads whose standing pin is what runs, as the
	// operator asked (rollcall rollback): converged on them is success.
	Pinned []PinView
	// Failing are the new containers that missed their health deadline
	// in the plan this was decided from (Diff's, with each workload's
	// failure_action): beside any kind, for failure_action continue
	// rolls on while one fails, and a rollback runs after it is seen.
	Failing []reconcile.Failure
	// Pending: the state moved since this was decided (a relist, a
	// desired change settling); it is the last decision until a fresh
	// plan decides again. A relist alone never moves a standing.
	Pending bool
}

// CauseKind is why a session stands where it does.
type CauseKind int

const (
	CauseHalted         CauseKind = iota + 1 // the journal cannot be written (Why)
	CauseRefused                             // an unattended session refused the desired state (Refusal)
	CauseFailurePause                        // failure_action pause (Pause)
	CauseOperatorPause                       // the operator paused (Pause)
	CauseRolledBack                          // failure_action rolled a slot back; its spec is on hold (Rollback)
	CauseHold                                // a spec on hold (Workload, Hash, Hold)
	CauseCanaryHeld                          // a canary step held for too little traffic (Workload, Canary, Judgement)
	CauseCannotConverge                      // the plan has errors: a workload cannot be acted on (Errors)
	CauseDesired                             // no desired state loaded: it cannot be read (Why)
	CauseEngine                              // the engine does not answer (Why)
	CauseLock                                // the host lock is held elsewhere (Holder, Why)
	CauseApproval                            // step mode: the next step waits for approval (Step)
	CauseConfirm                             // a question waits for the operator (Confirm)
)

var causeNames = [...]string{
	CauseHalted: "halted", CauseRefused: "refused", CauseFailurePause: "failure-pause", CauseOperatorPause: "operator-pause",
	CauseRolledBack: "rolled-back", CauseHold: "hold", CauseCanaryHeld: "canary-held", CauseCannotConverge: "cannot-converge",
	CauseDesired: "desired", CauseEngine: "engine", CauseLock: "lock", CauseApproval: "approval", CauseConfirm: "confirm",
}

// String is the kind as apply --json names it.
func (k CauseKind) String() string {
	if k > 0 && int(k) < len(causeNames) {
		return causeNames[k]
	}
	return fmt.Sprintf("cause(%d)", int(k))
}

// MarshalText names the kind in JSON.
func (k CauseKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind as MarshalText names it.
func (k *CauseKind) UnmarshalText(b []byte) error {
	return unmarshalName(b, causeNames[:], (*int)(k), "cause")
}

// unmarshalName sets *k to the index of b in names.
func unmarshalName(b []byte, names []string, k *int, what string) error {
	for i, n := range names {
		if n != "" && n == string(b) {
			*k = i
			return nil
		}
	}
	return fmt.Errorf("unknown %s %q", what, b)
}

// Cause is one reason for a standing.
type Cause struct {
	Kind      CauseKind
	Workload  string
	Hash      string    // hold
	Hold      HoldCause // hold: what put it
	Why       string
	Refusal   *Refusal
	Pause     *PauseInfo
	Rollback  *RollbackInfo
	Canary    *reconcile.CanaryStep
	Judgement *reconcile.Judgement
	Errors    []string
	Holder    *LockHolder
	Step      *reconcile.Step
	Confirm   *Confirmation
}

// Said is the cause in words: the one place a standing's causes get them.
func (c Cause) Said() string {
	switch c.Kind {
	case CauseHalted:
		return "halted: " + c.Why
	case CauseRefused:
		return fmt.Sprintf("refused: %s; nothing was stopped (pass --allow-mass-stop to do it on purpose)", c.Refusal.Reason)
	case CauseFailurePause, CauseOperatorPause:
		return "paused: " + c.Pause.Reason + "; fix it and run again, or roll back the desired state"
	case CauseRolledBack:
		r := c.Rollback
		return fmt.Sprintf("rolled back %s/%d (%s): spec %s is on hold until the desired spec changes", r.Workload, r.Slot, r.Reason, short(r.Hash))
	case CauseHold:
		return fmt.Sprintf("%s: spec %s is on hold (%s); change the desired spec, or run `rollcall retry %s`, to try again", c.Workload, short(c.Hash), c.Hold.Said(), c.Workload)
	case CauseCanaryHeld:
		return fmt.Sprintf("canary %s holds at step %d/%d: %s; `rollcall retry %s` runs the step again, or change the desired spec",
			c.Workload, c.Canary.Index+1, c.Canary.Of, *c.Judgement, c.Workload)
	case CauseCannotConverge:
		return "cannot converge: " + strings.Join(c.Errors, "; ")
	case CauseDesired:
		return "desired state: " + c.Why
	case CauseEngine:
		return "engine: " + c.Why
	case CauseLock:
		if c.Holder != nil {
			return "the host lock is held by " + c.Holder.String()
		}
		return "the host lock: " + c.Why
	case CauseApproval:
		return "the next step waits for approval: " + c.Step.Target()
	case CauseConfirm:
		return "waiting for an answer: " + c.Confirm.Prompt
	}
	return ""
}

// Said is the standing in words: its causes, and for a converged one the
// pins reached.
func (s Standing) Said() string {
	var parts []string
	for _, c := range s.Causes {
		parts = append(parts, c.Said())
	}
	if s.Kind == StandingConverged {
		for _, p := range s.Pinned {
			parts = append(parts, fmt.Sprintf("%s pinned to revision %d, as asked", p.Workload, p.Revision.Number))
		}
	}
	return strings.Join(parts, "; ")
}

// standing decides where the session stands from the snapshot s being
// made of it: the one judge. A state that is not fresh (a relist under
// way, a desired change settling) keeps the last decision, marked
// Pending, unless it is one decided at once (halted, refused, paused, no
// desired state, a step in flight).
func (l *loop) standing(s *Snapshot) Standing {
	st, decided := standingOf(s, func(w, h string) HoldCause { return l.holdWhy(w, h).cause })
	if decided {
		st.Failing = s.Plan.Failures()
		l.lastStanding = st
		return st
	}
	last := l.lastStanding
	last.Pending = true
	return last
}

// standingOf is where s stands, and whether s is enough to decide it;
// causeOf says what put a hold of s.Holds.
func standingOf(s *Snapshot, causeOf func(workload, hash string) HoldCause) (Standing, bool) {
	one := func(k StandingKind, c Cause) (Standing, bool) { return Standing{Kind: k, Causes: []Cause{c}}, true }
	switch {
	case s.Halted != "":
		return one(StandingFailed, Cause{Kind: CauseHalted, Why: s.Halted})
	case s.Desired == nil && s.SourceErr != nil:
		return one(StandingBlocked, Cause{Kind: CauseDesired, Why: oneLine(s.SourceErr.Error())})
	case s.Refusal != nil:
		r := *s.Refusal
		return one(StandingFailed, Cause{Kind: CauseRefused, Refusal: &r})
	case s.Pause != nil && s.Pause.ByOperator:
		p := *s.Pause
		return one(StandingHeld, Cause{Kind: CauseOperatorPause, Pause: &p})
	case s.Pause != nil:
		p := *s.Pause
		return one(StandingFailed, Cause{Kind: CauseFailurePause, Pause: &p})
	case s.Lock.Holder != nil && s.Lock.Err != "":
		h := *s.Lock.Holder
		return one(StandingBlocked, Cause{Kind: CauseLock, Holder: &h, Why: s.Lock.Err})
	case !s.Connected && s.EngineErr != "":
		return one(StandingBlocked, Cause{Kind: CauseEngine, Why: s.EngineErr})
	case len(s.RunningSteps) > 0:
		return Standing{Kind: StandingRolling}, true
	case s.Desired == nil || s.Resolved == nil:
		return Standing{Kind: StandingStarting}, true
	case !s.Fresh || s.Settling > 0:
		return Standing{}, false
	}
	if held := canaryHeld(s); len(held) > 0 {
		return Standing{Kind: StandingHeld, Causes: held}, true
	}
	if !s.Plan.Empty() {
		if c, ok := awaiting(s); ok {
			return Standing{Kind: StandingAwaitingApproval, Causes: []Cause{c}}, true
		}
		return Standing{Kind: StandingRolling}, true // steps to run, or waits that end by themselves
	}
	var held []Cause
	rolled := map[[2]string]bool{}
	for _, r := range s.RolledBack {
		r := r
		held = append(held, Cause{Kind: CauseRolledBack, Workload: r.Workload, Hash: r.Hash, Rollback: &r})
		rolled[[2]string{r.Workload, r.Hash}] = true
	}
	for _, w := range sortedKeys(s.Holds) {
		for _, h := range s.Holds[w] {
			if !rolled[[2]string{w, h}] {
				held = append(held, Cause{Kind: CauseHold, Workload: w, Hash: h, Hold: causeOf(w, h)})
			}
		}
	}
	var pinned []PinView
	for _, p := range s.Pins {
		if p.Standing { // the pinned revision is what runs, as the operator asked (revisions_pin.go)
			pinned = append(pinned, p)
		}
	}
	// A pinned revision's hold is the pin's doing, not a failure.
	held = dropPinnedHolds(held, pinned)
	if errs := s.Plan.Errors(); len(errs) > 0 {
		return Standing{Kind: StandingFailed, Causes: append(held, Cause{Kind: CauseCannotConverge, Errors: errs})}, true
	}
	if len(held) > 0 {
		return Standing{Kind: StandingHeld, Causes: held}, true
	}
	return Standing{Kind: StandingConverged, Pinned: pinned}, true
}

// dropPinnedHolds leaves out the holds of the desired specs the pins
// hold back: a pin holds the desired spec while it stands.
func dropPinnedHolds(held []Cause, pinned []PinView) []Cause {
	out := held[:0]
	for _, c := range held {
		keep := true
		for _, p := range pinned {
			if c.Kind == CauseHold && c.Workload == p.Workload && c.Hash == p.Against {
				keep = false
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// awaiting is the operator's part in a step-mode plan with steps to run:
// a question to answer, or the next step to approve; false when the plan
// runs without them (auto, an approved rollout, approved steps).
func awaiting(s *Snapshot) (Cause, bool) {
	if s.Confirm != nil && !s.Confirm.Declined {
		c := *s.Confirm
		return Cause{Kind: CauseConfirm, Confirm: &c}, true
	}
	if s.Mode != ModeStep || s.Rollout != nil || s.Next == "" {
		return Cause{}, false
	}
	for _, st := range s.Plan.Executable() {
		if ss := s.Steps[st.Key()]; ss.Approved {
			return Cause{}, false
		}
		if st.Key() == s.Next {
			step := st
			return Cause{Kind: CauseApproval, Step: &step}, true
		}
	}
	return Cause{}, false
}

// canaryHeld is why nothing more runs when a canary step ended with too
// little traffic and holds (on_insufficient_traffic: hold), and the plan
// has nothing else to run: only an operator moves it on. None otherwise.
func canaryHeld(s *Snapshot) []Cause {
	for _, wp := range s.Plan.Workloads {
		for _, st := range wp.Steps {
			if st.Executable() {
				return nil
			}
		}
	}
	// Diff says which canary holds (ReasonCanaryHeld): not worked out again.
	var held []Cause
	for _, wp := range s.Plan.Workloads {
		for _, st := range wp.Steps {
			if r := st.Why; r.Kind == reconcile.ReasonCanaryHeld && r.Canary != nil && r.Judgement != nil {
				held = append(held, Cause{Kind: CauseCanaryHeld, Workload: wp.Name, Canary: r.Canary, Judgement: r.Judgement})
			}
		}
	}
	return held
}
