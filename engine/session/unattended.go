package session

import (
	"context"
	"fmt"
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
	// Steps are the steps it ran, in order.
	Steps []StepResult
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
	seen := map[string]bool{}
	var lastPlan time.Time
	record := func(snap Snapshot) {
		out.Last = snap
		if snap.Fresh && !snap.PlanAt.Equal(lastPlan) {
			lastPlan = snap.PlanAt
			out.Plans++
		}
		for _, r := range snap.Recent {
			id := r.Step.Key() + "@" + r.Began.String()
			if !seen[id] {
				seen[id] = true
				out.Steps = append(out.Steps, r)
			}
		}
	}
	verdict := ""
	stopped := "" // "timed out" or "interrupted": ctx ended the run
	ended := false
loop:
	for {
		select {
		case snap, ok := <-s.Snapshots():
			if !ok {
				break loop
			}
			record(snap)
			if v, stop := judge(snap, untilSteady); stop {
				verdict, ended = v, true
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

// judge reads a snapshot for an unattended run: whether it is over, and if
// so why it failed ("" for success).
func judge(s Snapshot, untilSteady bool) (string, bool) {
	if s.Halted != "" {
		return "halted: " + s.Halted, true
	}
	if !untilSteady {
		return "", false
	}
	switch {
	case s.Desired == nil && s.SourceErr != nil:
		return "desired state: " + oneLine(s.SourceErr.Error()), true
	case s.Refusal != nil:
		return fmt.Sprintf("refused: %s; nothing was stopped (pass --allow-mass-stop to do it on purpose)", s.Refusal.Reason), true
	case s.Pause != nil:
		return "paused: " + s.Pause.Reason + "; fix it and run again, or roll back the desired state", true
	case !s.Fresh || s.Settling > 0:
		return "", false
	}
	if why := canaryHeld(s); why != "" {
		return why, true
	}
	if !s.Plan.Empty() {
		return "", false // steps to run, or waits that end by themselves
	}
	var why []string
	for _, r := range s.RolledBack {
		why = append(why, fmt.Sprintf("rolled back %s/%d (%s): spec %s is on hold until the desired spec changes",
			r.Workload, r.Slot, r.Reason, short(r.Hash)))
	}
	if len(why) == 0 {
		for _, w := range sortedKeys(s.Holds) {
			for _, h := range s.Holds[w] {
				why = append(why, fmt.Sprintf("%s: spec %s is on hold (rolled back before); change the desired spec, or run `rollcall retry %s`, to try again", w, short(h), w))
			}
		}
	}
	for _, p := range s.Pins {
		if p.Standing { // the pinned revision is reached, not the desired spec (revisions_pin.go)
			why = append(why, p.Workload+" "+p.Line())
		}
	}
	if errs := s.Plan.Errors(); len(errs) > 0 {
		why = append(why, "cannot converge: "+strings.Join(errs, "; "))
	}
	if len(why) > 0 {
		return strings.Join(why, "; "), true
	}
	if s.Steady {
		return "", true
	}
	return "", false
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// canaryHeld says why nothing more runs when a canary step ended with too
// little traffic and holds (on_insufficient_traffic: hold), and the plan
// has nothing else to run: only an operator moves it on. "" otherwise.
func canaryHeld(s Snapshot) string {
	if s.Running != nil {
		return ""
	}
	for _, wp := range s.Plan.Workloads {
		for _, st := range wp.Steps {
			if st.Executable() {
				return ""
			}
		}
	}
	// Diff says which canary holds (ReasonCanaryHeld): not worked out again.
	var why []string
	for _, wp := range s.Plan.Workloads {
		for _, st := range wp.Steps {
			if r := st.Why; r.Kind == reconcile.ReasonCanaryHeld && r.Canary != nil && r.Judgement != nil {
				why = append(why, fmt.Sprintf("canary %s holds at step %d/%d: %s; `rollcall retry %s` runs the step again, or change the desired spec",
					wp.Name, r.Canary.Index+1, r.Canary.Of, *r.Judgement, wp.Name))
			}
		}
	}
	return strings.Join(why, "; ")
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
