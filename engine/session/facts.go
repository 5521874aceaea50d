package session

import (
	"log/slog"
	"time"

	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// FactKind is what a session reports of a step (DESIGN §7): typed, so a
// view renders it from its fields and never reads a log message's words.
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
)

// Fact is one thing a session reports of a step. Options.Events gets
// each; without it each is a structured log line on Options.Log, as the
// agent writes them.
type Fact struct {
	Kind     FactKind
	Step     reconcile.Step
	Duration time.Duration            // done, failed
	Err      error                    // failed
	RetryIn  time.Duration            // failed: auto tries it again after this
	Drain    *reconcile.DrainProgress // draining, drained
	Canary   *CanaryView              // canary
	Pull     *reconcile.PullProgress  // pulling
}

// Observer sees each step Fact (as well as Events or Log get it) and
// each notice of notify.go, whether or not notify: names a webhook, as
// data: the agent's metrics count them (engine/metrics). It is called from
// the loop: it must not block.
type Observer interface {
	Fact(Fact)
	Notice(notify.Event)
}

// event reports e: to Options.Events when set, else to the log; and to
// Options.Observer.
func (l *loop) event(e Fact) {
	if l.opts.Observer != nil {
		l.opts.Observer.Fact(e)
	}
	if l.opts.Facts != nil {
		l.opts.Facts(e)
		return
	}
	msg, level, attrs := e.logLine()
	l.log(level, msg, attrs...)
}

// logLine is e as a structured log line: message, level and attributes.
func (e Fact) logLine() (string, slog.Level, []any) {
	s := e.Step
	attrs := []any{"action", string(s.Action), "target", s.Target(), "container", s.Container}
	switch e.Kind {
	case FactStepStarted:
		return "step started", levelInfo, append(attrs, "reason", s.Reason, "downtime", s.Downtime)
	case FactStepDone:
		return "step done", levelInfo, append(attrs, "duration_ms", e.Duration.Milliseconds())
	case FactStepFailed:
		return "step failed", levelError, append(attrs, "duration_ms", e.Duration.Milliseconds(), "error", e.Err.Error(), "retry_in", e.RetryIn.String())
	case FactWaiting:
		return "waiting", levelInfo, append(attrs, "reason", s.Reason)
	case FactCanary:
		v := e.Canary
		j := v.Judgement
		attrs = append(attrs, "step", v.Step.Index+1, "of", v.Step.Of, "share", v.Step.Share, "verdict", string(j.Verdict),
			"canary_requests", j.Canary.Requests, "canary_errors", j.Canary.Errors, "canary_p95_ms", j.Canary.P95.Milliseconds(),
			"stable_requests", j.Stable.Requests, "stable_errors", j.Stable.Errors, "stable_p95_ms", j.Stable.P95.Milliseconds(),
			"ends", v.Ends, "ended", v.Ended)
		if v.Err != nil {
			attrs = append(attrs, "error", v.Err.Error())
		}
		return "canary", levelInfo, attrs
	case FactPulling:
		p := e.Pull
		return "pulling", levelInfo, append(attrs, "layers", p.Layers, "layers_done", p.LayersDone, "bytes", p.Bytes, "bytes_done", p.BytesDone)
	}
	p := e.Drain
	attrs = append(attrs, "pre_stop_ran", p.PreStopRan)
	if p.PreStopErr != nil {
		attrs = append(attrs, "pre_stop_error", p.PreStopErr.Error())
	}
	if e.Kind == FactDrained {
		return "drained", levelInfo, append(attrs, "ended", p.Ended)
	}
	return "draining", levelInfo, append(attrs, "until", p.Until.Format(time.RFC3339))
}
