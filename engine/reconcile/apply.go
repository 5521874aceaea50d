package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Result is the outcome of one executed step.
type Result struct {
	Step     Step
	Err      error
	Duration time.Duration
}

// ApplyOptions observe Apply as it goes.
type ApplyOptions struct {
	OnStart func(Step)   // before a step runs
	OnDone  func(Result) // after it ran
	Run     RunOptions   // how each step runs (its drain)
}

// Apply runs every executable step in order, the only place in this package
// that calls the engine. A failed step does not stop the others: their errors
// are joined (I6). Each step is idempotent where its effect is already in
// place: a start whose name exists, or a stop or remove of a container that is
// gone, is a no-op. Apply stops early only when ctx ends.
func Apply(ctx context.Context, c docker.Client, steps []Step, opts ApplyOptions) ([]Result, error) {
	var results []Result
	var errs []error
	for _, s := range steps {
		if !s.Executable() {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		if opts.OnStart != nil {
			opts.OnStart(s)
		}
		began := time.Now()
		err := RunWith(ctx, c, s, opts.Run)
		r := Result{Step: s, Err: err, Duration: time.Since(began)}
		results = append(results, r)
		if opts.OnDone != nil {
			opts.OnDone(r)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return results, errors.Join(errs...)
}

// Run executes one step against the engine, as RunWith with no options.
func Run(ctx context.Context, c docker.Client, s Step) error {
	return RunWith(ctx, c, s, RunOptions{})
}

// RunWith executes one step against the engine. A stop or roll drains the
// container first (see the package doc): a pre_stop that fails does not
// keep the container from stopping, and the step's error then wraps
// ErrPreStop.
//
// The end of ctx (a second signal) cuts short what only waits: a step not
// yet begun, its pre_stop and its drain, which leave the container running.
// A call that changes a container, once made, is carried to its end past
// ctx, bounded (see carried): the engine goes on with a call whose caller
// has gone, so a stop cut short would leave the container Exited with no
// remove to follow, and a create cut short would leave it Created and never
// started (issue 18). A stop and its remove go together.
func RunWith(ctx context.Context, c docker.Client, s Step, opts RunOptions) error {
	if s.Then {
		// A then row is a projection: only the step a fresh plan holds runs.
		return fmt.Errorf("%s %s: a then row does not run; its step runs once a plan holds it", s.Action, s.Target())
	}
	switch s.Action {
	case ActStart:
		if s.Create == nil {
			return fmt.Errorf("start %s: step has no create spec", s.Target())
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("start %s: %w", s.Target(), err)
		}
		if s.SplitFirst != "" {
			// The canary's split (share 0) first: a container the proxy
			// sees before it would take a plain share of the traffic.
			if opts.Split == nil {
				return &SplitFirstError{Step: s, Err: ErrNoCanaryRunner}
			}
			if err := opts.Split(ctx, s); err != nil {
				return &SplitFirstError{Step: s, Err: err}
			}
		}
		cctx, cancel := carried(ctx, 0)
		id, err := c.Create(cctx, *s.Create)
		cancel()
		if errors.Is(err, docker.ErrConflict) {
			id, err = sameStart(ctx, c, s)
		} else if err != nil {
			err = fmt.Errorf("start %s: %w", s.Target(), err)
		}
		if err == nil && opts.Created != nil {
			opts.Created(id)
		}
		return err
	case ActStop, ActRoll:
		var drained error
		if len(s.PreStop) > 0 || s.Drain > 0 {
			gone, err := drain(ctx, c, s, opts)
			if gone {
				return nil
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%s %s %s: drain: %w", s.Action, s.Target(), s.Container, ctx.Err())
			}
			drained = err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s %s %s: %w", s.Action, s.Target(), s.Container, err)
		}
		// From the stop on, the step goes to its end: the stop and then
		// the remove, both carried past the end of ctx.
		sctx, cancel := carried(ctx, stopWait(s.Grace))
		defer cancel()
		if err := c.Stop(sctx, s.ContainerID, s.Grace); err != nil && !errors.Is(err, docker.ErrNotFound) {
			return fmt.Errorf("%s %s %s: %w", s.Action, s.Target(), s.Container, errors.Join(err, drained))
		}
		rctx, cancel := carried(ctx, 0)
		defer cancel()
		if err := c.Remove(rctx, s.ContainerID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			return fmt.Errorf("%s %s %s: remove: %w", s.Action, s.Target(), s.Container, errors.Join(err, drained))
		}
		if drained != nil {
			return fmt.Errorf("%s %s %s: stopped after the drain anyway: %w", s.Action, s.Target(), s.Container, drained)
		}
		return nil
	case ActRestart:
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("restart %s %s: %w", s.Target(), s.Container, err)
		}
		rctx, cancel := carried(ctx, stopWait(s.Grace))
		defer cancel()
		if err := c.Restart(rctx, s.ContainerID, s.Grace); err != nil {
			return fmt.Errorf("restart %s %s: %w", s.Target(), s.Container, err)
		}
		return nil
	case ActUpdate:
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("update %s %s: %w", s.Target(), s.Container, err)
		}
		uctx, cancel := carried(ctx, 0)
		defer cancel()
		if err := c.Update(uctx, s.ContainerID, s.Limits); err != nil {
			return fmt.Errorf("update %s %s: %w", s.Target(), s.Container, err)
		}
		return nil
	case ActWait:
		return nil
	case ActCanary:
		return runCanary(ctx, c, s, opts)
	case ActPull:
		return runPull(ctx, c, s, opts)
	}
	return fmt.Errorf("%s %s: unknown action", s.Action, s.Target())
}

// sameStart decides a start whose name is taken: if the container of that name
// carries every label the start would give it, the start already happened and
// is a no-op. Anything else (another prefix's container, one created by hand)
// is an error: counting it as done would leave the slot empty for good.
// It returns that container's ID.
func sameStart(ctx context.Context, c docker.Client, s Step) (string, error) {
	d, err := c.Inspect(ctx, s.Create.Name)
	if err != nil {
		return "", fmt.Errorf("start %s: name %s is taken, and inspecting it failed: %w", s.Target(), s.Create.Name, err)
	}
	for k, v := range s.Create.Labels {
		if d.Labels[k] != v {
			return "", fmt.Errorf("start %s: name %s is taken by a container that is not this slot's (label %s): %w",
				s.Target(), s.Create.Name, k, docker.ErrConflict)
		}
	}
	return d.ID, nil
}

// carrySlack bounds an engine call carried past the end of its step's
// context (RunWith), beyond the stop grace it waits out: an engine that
// does not answer in that time is not waited for any longer.
const carrySlack = 30 * time.Second

// carried is the context of an engine call that, once made, is not cut
// short by the end of ctx: it keeps ctx's values, and once ctx ends it
// ends in its turn wait plus carrySlack later. While ctx lasts it adds no
// bound of its own.
func carried(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(wait+carrySlack, cancel)
		context.AfterFunc(cctx, func() { t.Stop() })
	})
	return cctx, func() { stop(); cancel() }
}

// stopWait is the longest a stop with grace waits for the container's
// process before the engine kills it: grace in whole seconds, as the engine
// takes it, or the default stop grace when grace leaves it to the
// container's own stop timeout.
func stopWait(grace time.Duration) time.Duration {
	if grace <= 0 {
		return spec.DefaultStopGrace
	}
	return grace.Truncate(time.Second) + time.Second
}
