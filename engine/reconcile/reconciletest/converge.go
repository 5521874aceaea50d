package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// Options tune Converge. The zero value is ready for the real engine.
type Options struct {
	Now   func() time.Time                                 // default time.Now
	Sleep func(ctx context.Context, d time.Duration) error // default: a timer, cut short by ctx
	// Poll is the longest pause between rounds while only waiting (default 250ms).
	Poll time.Duration
	// MaxRounds bounds the loop; 0 means until converged or ctx ends.
	MaxRounds int

	SkipHealth     bool
	RecreateBefore map[string]time.Time
	Holds          map[string]map[string]bool // taken over and extended by rollbacks
	// Restarts counts the restarts rollcall issued, by container ID, for the
	// crash backoff of rule 4; taken over and extended, so a caller that
	// converges again (the agent) keeps the backoff growing.
	Restarts map[string]int

	OnPlan func(round int, p reconcile.Plan)
	Apply  reconcile.ApplyOptions
}

// Report says what Converge did.
type Report struct {
	Rounds   int
	Steps    int // executed
	Failed   int // executed and failed
	Last     reconcile.Plan
	Holds    map[string]map[string]bool
	Restarts map[string]int
}

// ErrPaused is returned when a workload with failure_action pause missed its
// health deadline: a human has to look.
var ErrPaused = errors.New("paused")

// Converge observes, diffs and applies until the plan is empty (nil), a
// workload cannot go on (ErrPaused, or its image is missing), MaxRounds is
// reached, or ctx ends. Step failures do not end it: the next round sees the
// engine as it is and tries again.
func Converge(ctx context.Context, c docker.Client, d *spec.Desired, opts Options) (Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = reconcile.Sleep
	}
	if opts.Poll <= 0 {
		opts.Poll = 250 * time.Millisecond
	}
	rep := Report{Holds: opts.Holds}
	if rep.Holds == nil {
		rep.Holds = map[string]map[string]bool{}
	}
	restarts := opts.Restarts
	if restarts == nil {
		restarts = map[string]int{}
	}
	rep.Restarts = restarts
	failures := 0 // rounds in a row with a failed step
	for {
		if opts.MaxRounds > 0 && rep.Rounds >= opts.MaxRounds {
			return rep, fmt.Errorf("not converged after %d rounds: %s", rep.Rounds, rep.Last.Summary())
		}
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("not converged: %w (%s)", err, rep.Last.Summary())
		}
		rep.Rounds++
		containers, err := c.List(ctx, d.Prefix)
		if err != nil {
			if serr := opts.Sleep(ctx, opts.Poll); serr != nil {
				return rep, fmt.Errorf("list containers: %w", err)
			}
			continue
		}
		resolved := spec.Resolve(ctx, d, c)
		obs := &reconcile.Observed{Now: opts.Now(), Containers: containers, Holds: rep.Holds,
			RecreateBefore: opts.RecreateBefore, SkipHealth: opts.SkipHealth, Restarts: restarts}
		plan := reconcile.Diff(resolved, obs)
		rep.Last = plan
		if opts.OnPlan != nil {
			opts.OnPlan(rep.Rounds, plan)
		}
		if errs := plan.Errors(); plan.Empty() && len(errs) > 0 {
			return rep, errors.New(strings.Join(errs, "; "))
		} else if plan.Empty() {
			return rep, nil
		}
		for _, f := range plan.Failures() {
			if f.Action == spec.FailurePause {
				return rep, fmt.Errorf("%w: %s/%d %s: %s", ErrPaused, f.Workload, f.Slot, f.Container, f.Reason)
			}
		}

		steps := plan.Executable()
		results, _ := reconcile.Apply(ctx, c, steps, opts.Apply)
		failed := false
		for _, r := range results {
			rep.Steps++
			if r.Err != nil {
				rep.Failed++
				failed = true
				continue
			}
			if r.Step.Hold != "" {
				if rep.Holds[r.Step.Workload] == nil {
					rep.Holds[r.Step.Workload] = map[string]bool{}
				}
				rep.Holds[r.Step.Workload][r.Step.Hold] = true
			}
			if r.Step.Action == reconcile.ActRestart {
				restarts[r.Step.ContainerID]++
			}
		}
		wait := time.Duration(0)
		switch {
		case failed:
			// A step that keeps failing is tried again after 1s, 2s, 4s …
			// capped at 1m, not every poll: it would hammer the engine.
			failures++
			wait = failureBackoff(failures)
		case len(steps) == 0:
			failures = 0
			wait = nextLook(plan, obs.Now, opts.Poll)
		default:
			failures = 0
		}
		if wait > 0 {
			if err := opts.Sleep(ctx, wait); err != nil {
				return rep, fmt.Errorf("not converged: %w (%s)", err, plan.Summary())
			}
		}
	}
}

// failureBackoff is the pause after the n-th round in a row with a failed
// step: 1s, 2s, 4s … capped at 1m.
func failureBackoff(n int) time.Duration { return reconcile.Backoff(n, time.Second, time.Minute) }

// nextLook is how long to wait before the next round when only waiting: until
// the earliest wait ends, but no longer than poll.
func nextLook(p reconcile.Plan, now time.Time, poll time.Duration) time.Duration {
	d := poll
	for _, s := range p.Steps() {
		if s.Action == reconcile.ActWait && !s.Until.IsZero() {
			if u := s.Until.Sub(now); u < d {
				d = u
			}
		}
	}
	if d < 10*time.Millisecond {
		d = 10 * time.Millisecond
	}
	return d
}
