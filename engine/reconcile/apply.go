package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
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
		_, err := c.Create(ctx, *s.Create)
		if errors.Is(err, docker.ErrConflict) {
			return sameStart(ctx, c, s)
		}
		if err != nil {
			return fmt.Errorf("start %s: %w", s.Target(), err)
		}
		return nil
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
		if err := c.Stop(ctx, s.ContainerID, s.Grace); err != nil && !errors.Is(err, docker.ErrNotFound) {
			return fmt.Errorf("%s %s %s: %w", s.Action, s.Target(), s.Container, errors.Join(err, drained))
		}
		if err := c.Remove(ctx, s.ContainerID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			return fmt.Errorf("%s %s %s: remove: %w", s.Action, s.Target(), s.Container, errors.Join(err, drained))
		}
		if drained != nil {
			return fmt.Errorf("%s %s %s: stopped after the drain anyway: %w", s.Action, s.Target(), s.Container, drained)
		}
		return nil
	case ActRestart:
		if err := c.Restart(ctx, s.ContainerID, s.Grace); err != nil {
			return fmt.Errorf("restart %s %s: %w", s.Target(), s.Container, err)
		}
		return nil
	case ActUpdate:
		if err := c.Update(ctx, s.ContainerID, s.Limits); err != nil {
			return fmt.Errorf("update %s %s: %w", s.Target(), s.Container, err)
		}
		return nil
	case ActWait:
		return nil
	}
	return fmt.Errorf("%s %s: unknown action", s.Action, s.Target())
}

// sameStart decides a start whose name is taken: if the container of that name
// carries every label the start would give it, the start already happened and
// is a no-op. Anything else (another prefix's container, one created by hand)
// is an error: counting it as done would leave the slot empty for good.
func sameStart(ctx context.Context, c docker.Client, s Step) error {
	d, err := c.Inspect(ctx, s.Create.Name)
	if err != nil {
		return fmt.Errorf("start %s: name %s is taken, and inspecting it failed: %w", s.Target(), s.Create.Name, err)
	}
	for k, v := range s.Create.Labels {
		if d.Labels[k] != v {
			return fmt.Errorf("start %s: name %s is taken by a container that is not this slot's (label %s): %w",
				s.Target(), s.Create.Name, k, docker.ErrConflict)
		}
	}
	return nil
}
