package session

import (
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/state"
)

// A session's record is a log of facts (DESIGN §7): each thing that
// happened, typed, numbered from 1 without gaps, with its wall and engine
// times. The journal, the agent's log, apply, the console and the metrics
// read it; none of them works out what happened by comparing one snapshot
// with the next. Every snapshot carries the last maxFacts of them
// (Snapshot.Facts); FactsSince tells a reader that fell behind how many it
// missed.

// FactKind is what kind of thing a fact says happened.
type FactKind int

const (
	FactStepStarted FactKind = iota + 1
	FactStepDone
	FactStepFailed
	FactWaiting  // a wait of the plan, each time its reason changes
	FactDraining // a stop or roll drains: its pre_stop ran (or failed), the wait goes on
	FactDrained  // the drain's wait ended (Drain.Ended says why)
	FactCanary   // a canary step's reading: its cohorts' figures so far (Canary)
	FactPulling  // a pull step's progress: a layer or a tenth of its bytes more is done (Pull)

	FactPaused       // the session paused (Pause): by the operator, or a failure with failure_action pause (Failure)
	FactResumed      // the operator resumed (Pause: the pause that ended)
	FactRefused      // an unattended session refused a desired state for its blast radius (Refusal)
	FactRolledBack   // failure_action rolled a slot back (Rollback)
	FactHoldSet      // a spec went on hold (Hold)
	FactHoldLifted   // a hold was lifted (Hold)
	FactPinSet       // a workload was pinned to a revision (Pin)
	FactPinLifted    // a pin was lifted (Pin)
	FactEngineDown   // the engine stopped answering (Why)
	FactEngineUp     // the engine answers again
	FactLockTaken    // the session took the host lock (Lock)
	FactLockRefused  // the host lock is held elsewhere: the session watches instead (Lock)
	FactHalted       // nothing more runs: the journal cannot be written (Why)
	FactDesired      // a desired state loaded (Workloads; Again: readable after a broken one)
	FactDesiredError // the desired state could not be loaded; the last good one stays (Err)
	FactHealthFailed // a new container missed its health deadline (Failure, with its failure_action); once while it stays failed

	FactStepNotRun      // a step whose first journal line was written never reached the engine (Step, Why)
	FactDecided         // an operator's decision that is no other fact (Decision): approve, skip, confirm, emergency, recreate, a retry
	FactApprovalEnded   // an approved rollout (A) ended (ApprovalEnd)
	FactApprovalDropped // an approved step left the plan: its approval is dropped (Key)
	FactAsked           // the session asks the operator (Confirm): the blast radius
	FactSplitLost       // a canary step found its split lost at the proxy, set it again and restarted its window (Canary, its last Losses)
	FactUnsplit         // a canary's share could not be set to 0 at the proxy: stopped through the engine, or not (Step, Unsplit)
	FactProxyDown       // the proxy in front stopped answering (Proxy)
	FactProxyUp         // it answers again (Proxy)
	FactWriteSlow       // a write the loop waits for is slow: nothing new runs until it ends (Write)
	FactWriteDone       // a write said to be slow ended (Write)
	FactStateError      // the holds, pins or revisions file could not be read or written (StateErr)
	FactNoticeFailed    // a webhook post failed every try, or was dropped (Notice)
	FactLockFree        // the host lock this session wanted came free (Lock: Holder, who let go)
	FactRegistryMiss    // the registry could not say where a followed tag points; asked again later (Registry)
	FactRollbackEnded   // an operator's rollback ended: Diff plans no stop of it any more (RollbackEnd)
)

var factKindNames = [...]string{
	FactStepStarted: "step-started", FactStepDone: "step-done", FactStepFailed: "step-failed",
	FactWaiting: "waiting", FactDraining: "draining", FactDrained: "drained", FactCanary: "canary",
	FactPulling: "pulling", FactPaused: "paused", FactResumed: "resumed", FactRefused: "refused",
	FactRolledBack: "rolled-back", FactHoldSet: "hold-set", FactHoldLifted: "hold-lifted",
	FactPinSet: "pin-set", FactPinLifted: "pin-lifted", FactEngineDown: "engine-down",
	FactEngineUp: "engine-up", FactLockTaken: "lock-taken", FactLockRefused: "lock-refused",
	FactHalted: "halted", FactDesired: "desired-loaded", FactDesiredError: "desired-rejected",
	FactHealthFailed: "health-failed", FactStepNotRun: "step-not-run", FactDecided: "decided",
	FactApprovalEnded: "approval-ended", FactApprovalDropped: "approval-dropped", FactAsked: "asked",
	FactSplitLost: "split-lost", FactUnsplit: "unsplit", FactProxyDown: "proxy-down", FactProxyUp: "proxy-up",
	FactWriteSlow: "write-slow", FactWriteDone: "write-done", FactStateError: "state-error",
	FactNoticeFailed: "notice-failed", FactLockFree: "lock-free", FactRegistryMiss: "registry-miss",
	FactRollbackEnded: "rollback-ended",
}

// String is the kind as apply --json and the logs name it.
func (k FactKind) String() string {
	if k > 0 && int(k) < len(factKindNames) && factKindNames[k] != "" {
		return factKindNames[k]
	}
	return fmt.Sprintf("fact(%d)", int(k))
}

// MarshalText names the kind in JSON.
func (k FactKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind as MarshalText names it.
func (k *FactKind) UnmarshalText(b []byte) error {
	return unmarshalName(b, factKindNames[:], (*int)(k), "fact")
}

// IsStep reports whether the kind is about a step of the plan (Step is set).
func (k FactKind) IsStep() bool {
	return k >= FactStepStarted && k <= FactPulling || k == FactStepNotRun || k == FactUnsplit
}

// Fact is one thing that happened in a session.
type Fact struct {
	Seq      uint64 // from 1, one more for each fact, never reused
	Kind     FactKind
	At       time.Time // wall clock
	EngineAt time.Time // the engine's clock (Options.Now)

	// A step's facts.
	Step     reconcile.Step
	Result   *StepResult   // done, failed: the step as it ran
	Duration time.Duration // done, failed
	Err      error         // step failed; desired rejected
	// Interrupted: failed, cut short by Session.Abandon (the journal says
	// interrupted).
	Interrupted bool
	RetryIn     time.Duration            // failed: auto tries it again after this
	Failures    int                      // failed: its failures in a row so far (auto's retries); 0: not counted (a cancelled pull, a canary's verdict)
	Drain       *reconcile.DrainProgress // draining, drained
	Canary      *CanaryView              // canary
	Pull        *reconcile.PullProgress  // pulling

	// The session's facts.
	Pause     *PauseInfo    // paused, resumed
	Failure   *Failure      // health failed; paused by failure_action pause: what failed
	Refusal   *Refusal      // refused
	Rollback  *RollbackInfo // rolled back
	Hold      *HoldFact     // hold set, lifted
	Pin       *PinFact      // pin set, lifted
	Lock      *LockFact     // lock taken, refused
	Why       string        // engine down: what the engine said; halted: why the journal cannot be written; step not run: what stopped it
	Source    string        // desired loaded, rejected: Source.Name()
	Workloads int           // desired loaded: how many workloads it has
	Again     bool          // desired loaded: readable after a load that failed
	Changed   bool          // desired loaded: its workloads differ from the last good one
	ByChange  bool          // resumed: a new desired state lifted a failure pause, not the operator

	Decision    *Decision               // decided
	ApprovalEnd *ApprovalEnd            // approval ended
	Key         string                  // approval dropped: the step's key
	Confirm     *Confirmation           // asked
	Unsplit     *reconcile.UnsplitError // unsplit
	Proxy       *ProxyFact              // proxy down, up
	Write       *WriteFact              // write slow, done
	StateErr    *StateError             // state error
	Notice      *notify.Report          // notice failed
	Registry    *RegistryMiss           // registry miss
	RollbackEnd *RollbackEnd            // rollback ended
}

// Decision is an operator's decision that is no other fact: the
// journal's decision lines (approve, skip, confirm ...) are made from it.
// A pause, a resume, an operator's rollback (its hold) and a retry that
// lifts a hold are facts of their own kinds.
type Decision struct {
	Kind     DecisionKind
	By       string          // the operator
	Key      string          // approve, skip, unskip: the step's key
	Step     *reconcile.Step // approve, skip, unskip: the step, when the plan has it
	Workload string          // recreate ("": every workload); a retry's
	Names    []string        // recreate: the workloads that roll
	Plan     string          // approve-rollout: the plan's summary as it was approved
	Confirm  *Confirmation   // confirm, decline: the question answered
	Canary   int             // retry of a canary: the step (1-based) that runs again
	Image    string          // retry of a pull: its image
}

// DecisionKind is what the operator decided.
type DecisionKind int

const (
	DecisionApprove        DecisionKind = iota + 1 // a step (step mode)
	DecisionApproveRollout                         // every step to the desired state (A)
	DecisionSkip                                   // a step is kept from running
	DecisionUnskip                                 // and may run again
	DecisionConfirm                                // yes to a question (the blast radius, a stop-first step)
	DecisionDecline                                // no to it
	DecisionEmergencyOn                            // skip-health on
	DecisionEmergencyOff                           // and off
	DecisionRecreate                               // a rolling restart of a workload, or of all
	DecisionRetryCanary                            // a canary step that held runs again
	DecisionRetryPull                              // a failed pull goes again at once
	DecisionRetrySwarm                             // an update Swarm paused is sent again (swarm.go)
)

var decisionNames = [...]string{
	DecisionApprove: "approve", DecisionApproveRollout: "approve-rollout", DecisionSkip: "skip", DecisionUnskip: "unskip",
	DecisionConfirm: "confirm", DecisionDecline: "decline", DecisionEmergencyOn: "emergency-on", DecisionEmergencyOff: "emergency-off",
	DecisionRecreate: "recreate", DecisionRetryCanary: "retry-canary", DecisionRetryPull: "retry-pull",
	DecisionRetrySwarm: "retry-swarm",
}

// String is the kind as apply --json names it.
func (k DecisionKind) String() string {
	if k > 0 && int(k) < len(decisionNames) {
		return decisionNames[k]
	}
	return fmt.Sprintf("decision(%d)", int(k))
}

// MarshalText names the kind in JSON.
func (k DecisionKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// ApprovalEnd is why an approved rollout (A) ended.
type ApprovalEnd struct {
	Cause ApprovalEndCause
	Step  *reconcile.Step // a step that failed, or a canary step that did not pass
}

// ApprovalEndCause is what ended an approved rollout.
type ApprovalEndCause int

const (
	ApprovalReached       ApprovalEndCause = iota + 1 // the desired state is reached
	ApprovalDesiredChange                             // the desired state changed
	ApprovalBlast                                     // the blast-radius guard asks
	ApprovalStepFailed                                // a step failed (Step)
	ApprovalCanaryFailed                              // a canary step did not pass (Step)
	ApprovalPaused                                    // the session paused
)

// ProxyFact is the proxy in front going or coming back.
type ProxyFact struct {
	Admin string // its admin API
	Err   string // down: what asking it said
}

// WriteFact is a write the loop waits for turning slow, or ending so.
type WriteFact struct {
	Write string        // "journal" or "holds"
	Took  time.Duration // slow: pending so far; done: how long it took
}

// StateFile is one of the session's files beside the journal.
type StateFile int

const (
	StateHolds     StateFile = iota + 1 // the holds
	StatePins                           // the pins
	StateRevisions                      // the revisions kept
)

// StateError is a file of the session's state that could not be read or
// written.
type StateError struct {
	File     StateFile
	Write    bool   // a write failed (else a read)
	Workload string // pins written, a revision: the workload's
	Hash     string // a revision: its spec
	Err      string
}

// RegistryMiss is the registry not saying where a followed tag points.
type RegistryMiss struct {
	Image   string
	Kind    docker.PullKind
	RetryIn time.Duration // when it is asked again
}

// RollbackEnd is an operator's rollback that ended.
type RollbackEnd struct {
	Workload string
	Kept     int // slots that had finished rolling and keep the new spec
}

// Failure is a new container that missed its health deadline.
type Failure struct {
	Workload  string
	Slot      int
	Container string
	Reason    string
	Action    string // the workload's failure_action (pause, rollback, continue)
}

// HoldCause is what put a spec on hold (kept in the holds file).
type HoldCause = state.HoldCause

// LiftCause is why a hold or a pin was lifted.
type LiftCause int

const (
	LiftedByOperator  LiftCause = iota + 1 // Retry, in this session
	LiftedElsewhere                        // outside this session (rollcall retry)
	LiftedSpecChanged                      // the desired spec changed
)

// HoldFact is a hold set or lifted.
type HoldFact struct {
	Workload string
	Hashes   []string  // the specs
	By       string    // the operator, when it was theirs
	Cause    HoldCause // hold set: what put it
	Detail   string    // hold set: what the cause said as it was put (failure_action's: the step)
	// Elsewhere: hold set by another process (read from the holds file).
	Elsewhere bool
	Lifted    LiftCause // hold lifted: why
}

// PinFact is a pin set or lifted.
type PinFact struct {
	Workload string
	Revision int
	Hash     string
	By       string
	Lifted   LiftCause // pin lifted: why
}

// LockFact is the host lock taken, held elsewhere, or come free.
type LockFact struct {
	Path   string
	Holder *LockHolder // refused: who holds it, when known; free: who let go, when known
	Err    string      // refused: what taking it said
	Wanted Mode        // refused: the mode that needed it
}

// maxFacts is how many of the last facts a snapshot carries.
const maxFacts = 512

// factLog is the loop's record of facts. Snapshots share its backing
// array: a snapshot's slice is capped at its length, and the log only
// ever appends past it, or moves its last maxFacts to a new array.
type factLog struct {
	seq   uint64
	facts []Fact
}

func (g *factLog) add(f Fact) Fact {
	g.seq++
	f.Seq = g.seq
	if len(g.facts) >= 2*maxFacts {
		g.facts = append(make([]Fact, 0, 2*maxFacts), g.facts[len(g.facts)-maxFacts+1:]...)
	}
	g.facts = append(g.facts, f)
	return f
}

// last is the last maxFacts facts, for a snapshot.
func (g *factLog) last() []Fact {
	n := len(g.facts)
	lo := max(n-maxFacts, 0)
	return g.facts[lo:n:n]
}

// FactsSince is the facts s carries after seq, oldest first, and how many
// facts came after seq that s no longer carries: a reader that fell that
// far behind is told, never silently skipped.
func (s Snapshot) FactsSince(seq uint64) (facts []Fact, missed uint64) {
	if len(s.Facts) == 0 {
		return nil, 0
	}
	if first := s.Facts[0].Seq; first > seq+1 {
		missed = first - seq - 1
	}
	for i, f := range s.Facts {
		if f.Seq > seq {
			return s.Facts[i:], missed
		}
	}
	return nil, missed
}

// LastFact is the number of the last fact s carries (0: none yet).
func (s Snapshot) LastFact() uint64 {
	if n := len(s.Facts); n > 0 {
		return s.Facts[n-1].Seq
	}
	return 0
}

// PullFailed says whether the pull step key of s's plan stands failed,
// and why its last try failed, as its step failed fact says (PullOther
// when the facts s carries no longer say): the one reading of a failed
// pull's kind, for the console and the fleet.
func (s Snapshot) PullFailed(key string) (docker.PullKind, bool) {
	if s.Steps[key].State != StepFailed {
		return "", false
	}
	for i := len(s.Facts) - 1; i >= 0; i-- {
		if f := s.Facts[i]; f.Kind == FactStepFailed && f.Result != nil && f.Step.Key() == key {
			if f.Result.PullKind != "" {
				return f.Result.PullKind, true
			}
			break
		}
	}
	return docker.PullOther, true
}

// Observer sees each Fact (as well as Facts or Log get it), each notice
// of notify.go, whether or not notify: names a webhook, and the standing
// each time its kind changes (from the first snapshot on), as data: the
// agent's metrics count them (engine/metrics). It is called from the
// loop: it must not block.
type Observer interface {
	Fact(Fact)
	Notice(notify.Event)
	Standing(Standing)
}

// fact records f: numbered and timed into the log every snapshot carries,
// its journal line to the journal if it is one journaled as it is
// recorded (journal.go), then to Options.Observer, and to Options.Facts
// when set, else to the log.
func (l *loop) fact(f Fact) {
	f.At, f.EngineAt = l.wallNow(), l.engineNow()
	f = l.facts.add(f)
	l.journalFact(f)
	if l.opts.Observer != nil {
		l.opts.Observer.Fact(f)
	}
	if l.opts.Facts != nil {
		l.opts.Facts(f)
		return
	}
	for _, line := range f.logLines() {
		l.log(line.level, line.msg, line.attrs...)
	}
}
