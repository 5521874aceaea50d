package session

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
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
)

var factKindNames = [...]string{
	FactStepStarted: "step-started", FactStepDone: "step-done", FactStepFailed: "step-failed",
	FactWaiting: "waiting", FactDraining: "draining", FactDrained: "drained", FactCanary: "canary",
	FactPulling: "pulling", FactPaused: "paused", FactResumed: "resumed", FactRefused: "refused",
	FactRolledBack: "rolled-back", FactHoldSet: "hold-set", FactHoldLifted: "hold-lifted",
	FactPinSet: "pin-set", FactPinLifted: "pin-lifted", FactEngineDown: "engine-down",
	FactEngineUp: "engine-up", FactLockTaken: "lock-taken", FactLockRefused: "lock-refused",
	FactHalted: "halted", FactDesired: "desired-loaded", FactDesiredError: "desired-rejected",
	FactHealthFailed: "health-failed",
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
func (k FactKind) IsStep() bool { return k >= FactStepStarted && k <= FactPulling }

// Fact is one thing that happened in a session.
type Fact struct {
	Seq      uint64 // from 1, one more for each fact, never reused
	Kind     FactKind
	At       time.Time // wall clock
	EngineAt time.Time // the engine's clock (Options.Now)

	// A step's facts.
	Step     reconcile.Step
	Result   *StepResult              // done, failed: the step as it ran
	Duration time.Duration            // done, failed
	Err      error                    // step failed; desired rejected
	RetryIn  time.Duration            // failed: auto tries it again after this
	Failures int                      // failed: its failures in a row so far (auto's retries); 0: not counted (a cancelled pull, a canary's verdict)
	Drain    *reconcile.DrainProgress // draining, drained
	Canary   *CanaryView              // canary
	Pull     *reconcile.PullProgress  // pulling

	// The session's facts.
	Pause     *PauseInfo    // paused, resumed
	Failure   *Failure      // health failed; paused by failure_action pause: what failed
	Refusal   *Refusal      // refused
	Rollback  *RollbackInfo // rolled back
	Hold      *HoldFact     // hold set, lifted
	Pin       *PinFact      // pin set, lifted
	Lock      *LockFact     // lock taken, refused
	Why       string        // engine down: what the engine said; halted: why the journal cannot be written
	Source    string        // desired loaded, rejected: Source.Name()
	Workloads int           // desired loaded: how many workloads it has
	Again     bool          // desired loaded: readable after a load that failed
	Changed   bool          // desired loaded: its workloads differ from the last good one
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

// LockFact is the host lock taken or held elsewhere.
type LockFact struct {
	Path   string
	Holder *LockHolder // refused: who holds it, when known
	Err    string      // refused: what taking it said
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
// then to Options.Observer, and to Options.Facts when set, else to the log.
func (l *loop) fact(f Fact) {
	f.At, f.EngineAt = l.wallNow(), l.engineNow()
	f = l.facts.add(f)
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

type logLine struct {
	msg   string
	level slog.Level
	attrs []any
}

// logLines is f as structured log lines (the agent's): message, level and
// attributes. Most facts are one line; a desired state readable again and
// changed is two.
func (f Fact) logLines() []logLine {
	one := func(msg string, level slog.Level, attrs ...any) []logLine {
		return []logLine{{msg, level, attrs}}
	}
	s := f.Step
	attrs := []any{"action", string(s.Action), "target", s.Target(), "container", s.Container}
	switch f.Kind {
	case FactStepStarted:
		return one("step started", levelInfo, append(attrs, "reason", s.Reason, "downtime", s.Downtime)...)
	case FactStepDone:
		return one("step done", levelInfo, append(attrs, "duration_ms", f.Duration.Milliseconds())...)
	case FactStepFailed:
		return one("step failed", levelError, append(attrs, "duration_ms", f.Duration.Milliseconds(), "error", f.Err.Error(), "retry_in", f.RetryIn.String())...)
	case FactWaiting:
		return one("waiting", levelInfo, append(attrs, "reason", s.Reason)...)
	case FactCanary:
		v := f.Canary
		j := v.Judgement
		attrs = append(attrs, "step", v.Step.Index+1, "of", v.Step.Of, "share", v.Step.Share, "verdict", string(j.Verdict),
			"canary_requests", j.Canary.Requests, "canary_errors", j.Canary.Errors, "canary_p95_ms", j.Canary.P95.Milliseconds(),
			"stable_requests", j.Stable.Requests, "stable_errors", j.Stable.Errors, "stable_p95_ms", j.Stable.P95.Milliseconds(),
			"ends", v.Ends, "ended", v.Ended)
		if v.Err != nil {
			attrs = append(attrs, "error", v.Err.Error())
		}
		return one("canary", levelInfo, attrs...)
	case FactPulling:
		p := f.Pull
		return one("pulling", levelInfo, append(attrs, "layers", p.Layers, "layers_done", p.LayersDone, "bytes", p.Bytes, "bytes_done", p.BytesDone)...)
	case FactDraining, FactDrained:
		p := f.Drain
		attrs = append(attrs, "pre_stop_ran", p.PreStopRan)
		if p.PreStopErr != nil {
			attrs = append(attrs, "pre_stop_error", p.PreStopErr.Error())
		}
		if f.Kind == FactDrained {
			return one("drained", levelInfo, append(attrs, "ended", p.Ended)...)
		}
		return one("draining", levelInfo, append(attrs, "until", p.Until.Format(time.RFC3339))...)
	case FactHealthFailed:
		x := f.Failure
		return one("health deadline missed", levelError, "workload", x.Workload, "slot", x.Slot, "container", x.Container,
			"reason", x.Reason, "failure_action", x.Action)
	case FactPaused:
		if x := f.Failure; x != nil {
			return one("paused: a new container missed its health deadline (failure_action pause)", levelError,
				"workload", x.Workload, "slot", x.Slot, "container", x.Container, "reason", x.Reason)
		}
		return one("paused by the operator", levelInfo, "reason", f.Pause.Reason)
	case FactResumed:
		return one("resumed", levelInfo, "reason", f.Pause.Reason)
	case FactRefused:
		r := f.Refusal
		return one("refused: blast radius", levelError, "stops", r.Stops, "running", r.Running,
			"hint", "waiting for the next desired change; --allow-mass-stop lets it through")
	case FactRolledBack:
		r := f.Rollback
		return one("rolled back: the new spec is on hold until the desired spec changes", levelError,
			"workload", r.Workload, "slot", r.Slot, "container", r.Container, "spec", short(r.Hash), "reason", r.Reason)
	case FactHoldSet:
		h := f.Hold
		return one("spec on hold", levelInfo, "workload", h.Workload, "spec", shorts(h.Hashes), "cause", h.Cause.Key(), "elsewhere", h.Elsewhere)
	case FactHoldLifted:
		h := f.Hold
		switch h.Lifted {
		case LiftedByOperator:
			return one("hold lifted by the operator", levelInfo, "workload", h.Workload, "spec", shorts(h.Hashes), "user", h.By)
		case LiftedElsewhere:
			return one("hold lifted outside this session", levelInfo, "workload", h.Workload, "spec", shorts(h.Hashes))
		}
		return one("hold lifted: the desired spec changed", levelInfo, "workload", h.Workload, "spec", shorts(h.Hashes))
	case FactPinSet:
		p := f.Pin
		return one("pinned", levelInfo, "workload", p.Workload, "revision", p.Revision, "spec", short(p.Hash), "by", p.By)
	case FactPinLifted:
		p := f.Pin
		return one("pin lifted", levelInfo, "workload", p.Workload, "revision", p.Revision, "why", p.liftWords())
	case FactEngineDown:
		return one("engine disconnected: nothing runs until it answers", levelError, "error", f.Why)
	case FactEngineUp:
		return one("engine reconnected", levelInfo)
	case FactLockTaken:
		return one("host lock taken", levelInfo, "lock", f.Lock.Path)
	case FactLockRefused:
		return one("host lock held elsewhere: watching instead", levelError, "lock", f.Lock.Path, "error", f.Lock.Err)
	case FactHalted:
		return one("halted: nothing more runs without the journal", levelError, "error", f.Why)
	case FactDesired:
		var out []logLine
		if f.Again {
			out = append(out, logLine{"desired state readable again", levelInfo, []any{"source", f.Source}})
		}
		if f.Changed {
			out = append(out, logLine{"desired state loaded", levelInfo, []any{"source", f.Source, "workloads", f.Workloads}})
		}
		return out
	case FactDesiredError:
		var list spec.ErrorList
		if errors.As(f.Err, &list) {
			out := make([]logLine, 0, len(list))
			for _, e := range list {
				out = append(out, logLine{"desired state broken: keeping the last good one", levelError,
					[]any{"file", e.File, "line", e.Line, "col", e.Col, "error", e.Msg, "hint", e.Hint}})
			}
			return out
		}
		return one("desired state broken: keeping the last good one", levelError, "source", f.Source, "error", f.Err.Error())
	}
	return nil
}

// Text is a fact of the session's own (not a step's) in words, for a
// human reader: apply prints it, the console lists it. The one place
// these facts get their words.
func (f Fact) Text() string {
	switch f.Kind {
	case FactHealthFailed:
		x := f.Failure
		return fmt.Sprintf("%s/%d %s missed its health deadline: %s (failure_action %s)", x.Workload, x.Slot, x.Container, x.Reason, x.Action)
	case FactPaused:
		if f.Pause != nil {
			return "paused: " + f.Pause.Reason
		}
	case FactResumed:
		if f.Pause != nil {
			return "resumed (" + f.Pause.Reason + ")"
		}
	case FactRefused:
		return "refused: " + f.Refusal.Reason + "; waiting for the next desired change (or run with --allow-mass-stop)"
	case FactRolledBack:
		r := f.Rollback
		return fmt.Sprintf("rolled back %s/%d %s: spec %s is on hold until the desired spec changes (%s)", r.Workload, r.Slot, r.Container, short(r.Hash), r.Reason)
	case FactHoldSet:
		h := f.Hold
		return fmt.Sprintf("%s: spec %s on hold (%s)", h.Workload, shorts(h.Hashes), h.Cause.Said())
	case FactHoldLifted:
		h := f.Hold
		return fmt.Sprintf("%s: hold on spec %s lifted %s", h.Workload, shorts(h.Hashes), h.Lifted.words(h.By))
	case FactPinSet:
		p := f.Pin
		return fmt.Sprintf("%s pinned to revision %d (spec %s) by %s", p.Workload, p.Revision, short(p.Hash), p.By)
	case FactPinLifted:
		p := f.Pin
		return fmt.Sprintf("%s: pin to revision %d lifted %s", p.Workload, p.Revision, p.liftWords())
	case FactEngineDown:
		return "engine disconnected: nothing runs until it answers (" + f.Why + ")"
	case FactEngineUp:
		return "engine reconnected"
	case FactLockTaken:
		return "host lock taken (" + f.Lock.Path + ")"
	case FactLockRefused:
		if f.Lock.Holder != nil {
			return "host lock held by " + f.Lock.Holder.String() + ": watching instead"
		}
		return "host lock: " + f.Lock.Err + ": watching instead"
	case FactHalted:
		return "halted: " + f.Why + "; nothing more runs (no audit, no action)"
	case FactDesired:
		if f.Changed {
			return fmt.Sprintf("desired state loaded from %s: %d workloads", f.Source, f.Workloads)
		}
		return "desired state readable again: " + f.Source
	case FactDesiredError:
		return "desired state broken, keeping the last good one: " + oneLine(f.Err.Error())
	}
	return f.Kind.String()
}

func (c LiftCause) words(by string) string {
	switch c {
	case LiftedByOperator:
		return "by " + by
	case LiftedElsewhere:
		return "outside this session (rollcall retry)"
	case LiftedSpecChanged:
		return "as the desired spec changed"
	}
	return ""
}

// why is a hold set in words: its cause's, with its detail.
func (h *HoldFact) why() string { return state.Hold{Cause: h.Cause, Reason: h.Detail}.Why() }

func (p *PinFact) liftWords() string { return p.Lifted.words(p.By) }

func shorts(hashes []string) string {
	out := make([]string, len(hashes))
	for i, h := range hashes {
		out[i] = short(h)
	}
	return strings.Join(out, ",")
}
