package session

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// The facts in words: as the agent's structured log lines (logLines), and
// as a human reads them (Text), for apply and the console. The journal's
// lines are made from the facts too (journal.go); nowhere else does the
// session put into words what happened.

type logLine struct {
	msg   string
	level slog.Level
	attrs []any
}

// logLines is f as structured log lines (the agent's): message, level and
// attributes. Most facts are one line; a desired state readable again and
// changed is two; a fact the agent does not log (an operator's decision,
// a reply of the console's) none.
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
		out := one("step failed", levelError, append(attrs, "duration_ms", f.Duration.Milliseconds(), "error", f.Err.Error(), "retry_in", f.RetryIn.String())...)
		if v, ok := canaryVerdictOf(f); ok && v.ce.Hold {
			out = append(out, logLine{"canary holds: too little traffic", levelWarn, []any{"workload", s.Workload, "step", s.Canary.Index + 1,
				"requests", v.j.Canary.Requests, "min_requests", s.Canary.Analysis.MinRequests}})
		} else if ok {
			j := v.j
			out = append(out, logLine{"canary failed: rolled back", levelError, []any{"workload", s.Workload, "step", s.Canary.Index + 1, "check", string(j.Check),
				"measured", j.Measured, "limit", j.Limit, "canary_requests", j.Canary.Requests, "stable_requests", j.Stable.Requests}})
		}
		return out
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
	case FactSplitLost:
		v := f.Canary
		loss := v.Losses[len(v.Losses)-1]
		return one("canary split lost at the proxy: set again, window restarted", levelWarn, "workload", v.Workload, "step", v.Step.Index+1,
			"spec", short(loss.Want.Spec), "share", loss.Want.Share, "found", splitText(loss.Saw), "window_lost", loss.Lost.String(), "losses", len(v.Losses))
	case FactUnsplit:
		u := f.Unsplit
		if u.Stopped {
			return one("canary share could not be set to 0: stopped through the engine", levelError, "workload", s.Workload, "container", s.Container, "error", u.Err.Error())
		}
		return one("canary share could not be set to 0, and its stop through the engine failed", levelError, "workload", s.Workload, "container", s.Container,
			"error", u.Err.Error(), "stop_error", u.StopErr.Error())
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
	case FactProxyDown:
		return one("proxy not answering", levelWarn, "admin", f.Proxy.Admin, "error", f.Proxy.Err)
	case FactProxyUp:
		return one("proxy answers again", levelInfo, "admin", f.Proxy.Admin)
	case FactLockTaken:
		return one("host lock taken", levelInfo, "lock", f.Lock.Path)
	case FactLockRefused:
		return one("host lock held elsewhere: watching instead", levelError, "lock", f.Lock.Path, "error", f.Lock.Err)
	case FactHalted:
		return one("halted: nothing more runs without the journal", levelError, "error", f.Why)
	case FactWriteSlow:
		return one("a write is slow: nothing new runs until it is written", levelWarn, "write", f.Write.Write, "pending", f.Write.Took.String())
	case FactWriteDone:
		return one("the slow write ended", levelInfo, "write", f.Write.Write, "took", f.Write.Took.String())
	case FactStateError:
		e := f.StateErr
		switch {
		case e.File == StateHolds && e.Write:
			return one("holds could not be written", levelError, "error", e.Err)
		case e.File == StateHolds:
			return one("holds could not be read", levelError, "error", e.Err)
		case e.File == StatePins && e.Write:
			return one("pins could not be written", levelError, "workload", e.Workload, "error", e.Err)
		case e.File == StatePins:
			return one("pins could not be read", levelError, "error", e.Err)
		}
		return one("a revision could not be kept", levelError, "workload", e.Workload, "spec", short(e.Hash), "error", e.Err)
	case FactNoticeFailed:
		r := f.Notice
		return one("notification not delivered", levelWarn, "kind", string(r.Event.Kind), "url", r.Target,
			"result", string(r.Result), "tries", r.Tries, "error", noticeWhy(f))
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

// Text is f in words, for a human reader: apply prints the session's own
// facts with it, the console lists them. A step's progress (started,
// waiting, draining, a canary's reading, a pull's) each view renders from
// the step; Text says what of a step is the session's word: a step that
// failed, or never ran, and a canary step's verdict. The one place these
// facts get their words.
func (f Fact) Text() string {
	s := f.Step
	switch f.Kind {
	case FactStepDone:
		if v, ok := canaryPassed(f); ok {
			return v
		}
		return fmt.Sprintf("%s %s done", s.Action, s.Target())
	case FactStepFailed:
		if v, ok := canaryVerdictOf(f); ok {
			return v.text(s)
		}
		return fmt.Sprintf("%s %s failed: %v", s.Action, s.Target(), f.Err)
	case FactStepNotRun:
		return fmt.Sprintf("%s %s not run: %s before it began", s.Action, s.Target(), f.Why)
	case FactSplitLost:
		v := f.Canary
		return fmt.Sprintf("canary %s step %d/%d: split lost at the proxy (%s), set again, window restarted", v.Workload, v.Step.Index+1, v.Step.Of, v.Losses[len(v.Losses)-1])
	case FactUnsplit:
		u := f.Unsplit
		if u.Stopped {
			return fmt.Sprintf("canary %s: its share could not be set to 0 at the proxy (%v); %s stopped through the engine", s.Workload, u.Err, s.Container)
		}
		return fmt.Sprintf("canary %s: its share could not be set to 0 at the proxy (%v), and stopping %s through the engine failed: %v", s.Workload, u.Err, s.Container, u.StopErr)
	case FactHealthFailed:
		x := f.Failure
		return fmt.Sprintf("%s/%d %s missed its health deadline: %s (failure_action %s)", x.Workload, x.Slot, x.Container, x.Reason, x.Action)
	case FactPaused:
		if f.Pause != nil {
			return "paused: " + f.Pause.Reason
		}
	case FactResumed:
		switch {
		case f.Pause != nil && f.ByChange:
			return "desired state changed: the pause (" + f.Pause.Reason + ") is lifted"
		case f.Pause != nil:
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
		switch h.Lifted {
		case LiftedByOperator:
			return fmt.Sprintf("hold on %s spec %s lifted by %s: it starts again under the usual rules", h.Workload, shorts(h.Hashes), h.By)
		case LiftedSpecChanged:
			return fmt.Sprintf("hold on %s spec %s lifted: the desired spec changed", h.Workload, shorts(h.Hashes))
		}
		return fmt.Sprintf("hold on %s spec %s lifted %s", h.Workload, shorts(h.Hashes), h.Lifted.words(h.By))
	case FactPinSet:
		p := f.Pin
		return fmt.Sprintf("%s pinned to revision %d (spec %s) by %s", p.Workload, p.Revision, short(p.Hash), p.By)
	case FactPinLifted:
		p := f.Pin
		return fmt.Sprintf("pin of %s to revision %d lifted %s: the desired spec rolls in under the usual rules", p.Workload, p.Revision, p.liftWords())
	case FactRollbackEnded:
		r := f.RollbackEnd
		if r.Kept > 0 {
			return fmt.Sprintf("rollback of %s done; %d slot(s) had finished rolling and keep the new spec", r.Workload, r.Kept)
		}
		return "rollback of " + r.Workload + " done"
	case FactEngineDown:
		return "engine disconnected: nothing runs until it answers (" + f.Why + ")"
	case FactEngineUp:
		return "engine reconnected"
	case FactProxyDown:
		return "proxy: " + f.Proxy.Err + "; until it answers, drains end on unhealthy or at their deadline"
	case FactProxyUp:
		return "proxy " + f.Proxy.Admin + " answers again"
	case FactLockTaken:
		return "host lock taken (" + f.Lock.Path + ")"
	case FactLockRefused:
		if f.Lock.Holder != nil {
			return string(f.Lock.Wanted) + " needs the host lock, held by " + f.Lock.Holder.String() + ": watching instead"
		}
		return string(f.Lock.Wanted) + " needs the host lock: " + f.Lock.Err + ": watching instead"
	case FactLockFree:
		if h := f.Lock.Holder; h != nil {
			return "the host lock is free (" + h.User + " let go): switch to step or auto to take it"
		}
		return "the host lock is free: switch to step or auto to take it"
	case FactHalted:
		return "halted: " + f.Why + "; nothing more runs (no audit, no action)"
	case FactWriteSlow:
		return fmt.Sprintf("%s write pending for %s: nothing new runs until it is written", f.Write.Write, f.Write.Took.Truncate(100*time.Millisecond))
	case FactWriteDone:
		return fmt.Sprintf("%s write ended after %s", f.Write.Write, f.Write.Took.Truncate(100*time.Millisecond))
	case FactStateError:
		e := f.StateErr
		switch e.File {
		case StateHolds:
			return "holds: " + e.Err
		case StatePins:
			return "pins: " + e.Err
		}
		return "revision of " + e.Workload + " not kept: " + e.Err
	case FactNoticeFailed:
		return fmt.Sprintf("notification %s %s: %s", noticeWhat(f), f.Notice.Result, noticeWhy(f))
	case FactRegistryMiss:
		r := f.Registry
		return fmt.Sprintf("registry: %s: %s; asked again in %s", r.Image, r.Kind.Text(), r.RetryIn.Round(time.Second))
	case FactDesired:
		if f.Changed {
			return fmt.Sprintf("desired state loaded from %s: %d workloads", f.Source, f.Workloads)
		}
		return "desired state readable again: " + f.Source
	case FactDesiredError:
		return "desired state broken, keeping the last good one: " + oneLine(f.Err.Error())
	case FactDecided:
		return f.Decision.text()
	case FactApprovalEnded:
		return "rollout approval ended: " + f.ApprovalEnd.text()
	case FactApprovalDropped:
		return "approved step " + f.Key + " is no longer in the plan: dropped"
	case FactAsked:
		return "holding: " + f.Confirm.Prompt + "; confirm to go on"
	}
	return f.Kind.String()
}

// text is an operator's decision in words.
func (d *Decision) text() string {
	step := d.Key
	if d.Step != nil {
		step = string(d.Step.Action) + " " + d.Step.Target()
	}
	switch d.Kind {
	case DecisionApprove:
		return "approved " + step
	case DecisionApproveRollout:
		return "rollout approved by " + d.By + ": every step to the desired state runs, unless something fails, pauses or asks"
	case DecisionSkip:
		return "skipped " + step
	case DecisionUnskip:
		return "unskipped " + step
	case DecisionConfirm, DecisionDecline:
		c := d.Confirm
		switch {
		case c.Kind == ConfirmDowntime && d.Kind == DecisionConfirm:
			return "confirmed downtime: " + c.Step.Target()
		case c.Kind == ConfirmDowntime:
			return "declined downtime: " + c.Step.Target() + " skipped (approve it to be asked again)"
		case d.Kind == DecisionConfirm:
			return "confirmed: " + c.Prompt
		}
		return "declined: " + c.Prompt + " (the guard holds)"
	case DecisionEmergencyOn:
		return "emergency: health is not waited for (skip-health on)"
	case DecisionEmergencyOff:
		return "emergency off: health is waited for again"
	case DecisionRecreate:
		return fmt.Sprintf("recreate requested for %v: every older container rolls, slot by slot", d.Names)
	case DecisionRetryCanary:
		return fmt.Sprintf("canary hold on %s lifted by %s: step %d runs again", d.Workload, d.By, d.Canary)
	case DecisionRetryPull:
		return "retry " + d.Workload + ": its pull of " + d.Image + " goes again now"
	case DecisionRetrySwarm:
		return "retry " + d.Workload + ": the update Swarm paused is sent again"
	}
	return d.Kind.String()
}

// text is why an approved rollout ended, in words.
func (a *ApprovalEnd) text() string {
	switch a.Cause {
	case ApprovalReached:
		return "the desired state is reached"
	case ApprovalDesiredChange:
		return "the desired state changed"
	case ApprovalBlast:
		return "the blast-radius guard asks"
	case ApprovalStepFailed:
		return fmt.Sprintf("%s %s failed", a.Step.Action, a.Step.Target())
	case ApprovalCanaryFailed:
		return fmt.Sprintf("%s %s did not pass", a.Step.Action, a.Step.Target())
	case ApprovalPaused:
		return "paused"
	}
	return ""
}

// canaryVerdict is a canary step's end by its verdict: held on too
// little traffic, or failed a check.
type canaryVerdict struct {
	ce *reconcile.CanaryError
	j  reconcile.Judgement
	ue *reconcile.UnsplitError // its share could not be set to 0 as well
}

// canaryVerdictOf is the verdict of a canary step that failed f, if it
// ended on one (a step that could not measure has none).
func canaryVerdictOf(f Fact) (canaryVerdict, bool) {
	var v canaryVerdict
	if f.Kind != FactStepFailed || f.Step.Action != reconcile.ActCanary || f.Step.Canary == nil || !errors.As(f.Err, &v.ce) {
		return v, false
	}
	errors.As(f.Err, &v.ue)
	v.j = v.ce.Judgement
	return v, true
}

func (v canaryVerdict) text(s reconcile.Step) string {
	cs := s.Canary
	if v.ce.Hold {
		return fmt.Sprintf("canary %s holds at step %d/%d: %s; t retries the step, r rolls it back", s.Workload, cs.Index+1, cs.Of, v.j)
	}
	share := "its share is 0"
	if v.ue != nil {
		share = "its share could not be set to 0, it was stopped through the engine"
	}
	return fmt.Sprintf("canary %s failed at step %d/%d: %s; %s, spec %s on hold, the canary drains and goes", s.Workload, cs.Index+1, cs.Of, v.j, share, short(cs.Spec))
}

// canaryPassed is a canary step that passed, f, in words.
func canaryPassed(f Fact) (string, bool) {
	s := f.Step
	if s.Action != reconcile.ActCanary || s.Canary == nil {
		return "", false
	}
	cs := s.Canary
	if cs.Last() {
		return fmt.Sprintf("canary %s passed all %d steps: the roll goes on", s.Workload, cs.Of), true
	}
	if f.Result != nil && f.Result.Judgement != nil {
		return fmt.Sprintf("canary %s step %d/%d passed: %s", s.Workload, cs.Index+1, cs.Of, *f.Result.Judgement), true
	}
	return fmt.Sprintf("canary %s step %d/%d passed", s.Workload, cs.Index+1, cs.Of), true
}

// noticeWhat is the post that did not go: its kind, the URL (scheme and
// host only: Report.Target), and its tries.
func noticeWhat(f Fact) string {
	r := f.Notice
	what := fmt.Sprintf("%s to %s", r.Event.Kind, r.Target)
	if r.Tries > 0 {
		what += fmt.Sprintf(" (%d tries)", r.Tries)
	}
	return what
}

// noticeWhy is why the post did not go.
func noticeWhy(f Fact) string {
	if err := f.Notice.Err; err != nil {
		return err.Error()
	}
	return "unknown"
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

func shorts(hashes []string) string { return strings.Join(shortList(hashes), ",") }
