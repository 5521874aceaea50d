package session

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// Outcome is how an unattended run ended (apply, agent, the demo's staging).
type Outcome struct {
	// Converged: the desired state was reached (apply), or the run ended
	// with its context and nothing went wrong (agent).
	Converged bool
	// Reason says why not: paused, refused, rolled back, on hold, cannot
	// converge, halted, timed out or interrupted. "" when Converged.
	Reason string
	// TimedOut: the run ended at its context's deadline, not converged;
	// Last.Plan is what was left.
	TimedOut bool
	// Plans counts the fresh plans the session diffed while it ran.
	Plans int
	// Steps are the steps it ran, in order, as the session's facts told
	// them (step done, step failed).
	Steps []StepResult
	// Missed counts the facts the run fell too far behind to read: its
	// Steps may lack some then. 0 in any run that kept up.
	Missed uint64
	// Standing is where the session stood when the run ended: what
	// Converged and Reason say in short.
	Standing Standing
	// Last is the last snapshot.
	Last Snapshot
	// Left is what was left when the run ended: Last's plan without the
	// steps that ran to their end since it was made (a step in flight when
	// ctx ended finishes first, before any new plan is made).
	Left reconcile.Plan
}

// Converge runs s, which should be in auto mode with an Unattended policy,
// until the desired state is reached or cannot be without a human: a pause
// (failure_action pause), a refusal (blast radius), a rollback or a spec
// on hold, a workload that cannot be acted on (its image is missing), a
// journal that cannot be written, a desired state that never loaded, or
// ctx ending (a timeout or a signal). The session is then ended, letting a
// step in flight finish.
func Converge(ctx context.Context, s *Session) Outcome {
	return unattended(ctx, s, true)
}

// Serve runs s, in auto mode with an Unattended policy, until ctx ends
// (agent): refusals, pauses and rollbacks are logged and waited out. It
// ends early, not converged, only when the journal cannot be written.
func Serve(ctx context.Context, s *Session) Outcome {
	return unattended(ctx, s, false)
}

func unattended(ctx context.Context, s *Session, untilSteady bool) Outcome {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()

	var out Outcome
	var seen uint64 // the last fact read
	var lastPlan time.Time
	record := func(snap Snapshot) {
		out.Last = snap
		if snap.Fresh && !snap.PlanAt.Equal(lastPlan) {
			lastPlan = snap.PlanAt
			out.Plans++
		}
		facts, missed := snap.FactsSince(seen)
		out.Missed += missed
		for _, f := range facts {
			if (f.Kind == FactStepDone || f.Kind == FactStepFailed) && f.Result != nil {
				out.Steps = append(out.Steps, *f.Result)
			}
		}
		seen = max(seen, snap.LastFact())
	}
	verdict := ""
	stopped := "" // "timed out" or "interrupted": ctx ended the run
	ended := false
	judged := false // the standing ended the run
loop:
	for {
		select {
		case snap, ok := <-s.Snapshots():
			if !ok {
				break loop
			}
			record(snap)
			if v, stop := judge(snap.Standing, untilSteady); stop {
				verdict, ended, judged = v, true, true
				out.Standing = snap.Standing // what ended the run, not how the session's end looks
				break loop
			}
		case <-ctx.Done():
			switch {
			case !untilSteady:
				ended = true
			case ctx.Err() == context.DeadlineExceeded:
				stopped, out.TimedOut = "timed out", true
			default:
				stopped = "interrupted"
			}
			break loop
		}
	}
	cancel()
	for snap := range s.Snapshots() { // Run lets a running step end first
		record(snap)
	}
	if !judged {
		out.Standing = out.Last.Standing
	}
	// What was left is said once the steps in flight have ended, from
	// what ran: not from the plan as it stood when ctx ended.
	out.Left = Left(out.Last)
	if stopped != "" {
		verdict = stopped + "; left: " + out.Left.Summary()
	}
	if err := <-done; err != nil && verdict == "" {
		verdict = err.Error()
	}
	if h := out.Last.Halted; h != "" {
		verdict, out.TimedOut = "halted: "+h, false
	}
	out.Converged = verdict == "" && (ended || !untilSteady)
	if !out.Converged && verdict == "" {
		verdict = "ended before the desired state was reached"
	}
	out.Reason = verdict
	return out
}

// judge reads the session's standing for an unattended run: whether the
// run is over, and if so why it failed ("" for success). It decides
// nothing itself: the standing does.
func judge(st Standing, untilSteady bool) (string, bool) {
	failed := func() (string, bool) { return st.Said(), true }
	if st.Kind == StandingFailed && st.Causes[0].Kind == CauseHalted {
		return failed()
	}
	if !untilSteady {
		return "", false
	}
	switch st.Kind {
	case StandingBlocked:
		if st.Causes[0].Kind == CauseDesired { // no desired state: nothing to wait for
			return failed()
		}
	case StandingFailed, StandingHeld:
		if !st.Pending || st.Causes[0].Kind == CauseRefused || st.Causes[0].Kind == CauseFailurePause {
			return failed()
		}
	case StandingConverged:
		if !st.Pending {
			return "", true
		}
	}
	return "", false
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Left is what s's plan had left: its steps but those s says ran to
// their end (StepDone) since the plan's list was taken.
func Left(s Snapshot) reconcile.Plan {
	left := s.Plan
	left.Workloads = nil
	for _, w := range s.Plan.Workloads {
		w.Steps = slices.DeleteFunc(slices.Clone(w.Steps), func(st reconcile.Step) bool {
			return s.Steps[st.Key()].State == StepDone
		})
		left.Workloads = append(left.Workloads, w)
	}
	return left
}
