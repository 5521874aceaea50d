package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/rollcall/rollcall/engine/docker"
)

// swarmWriteTries bounds the writes of one step that the manager refuses
// as out of sequence: Swarm's own status writes bump a service's version,
// so a write made from a read a moment old may need another read.
const swarmWriteTries = 5

// RunSwarm executes one step of DiffSwarm's plan against a swarm manager:
// the only code here that calls a Swarm. A create, write or remove, once
// made, is carried to its end past ctx, bounded, as RunWith carries a
// container's (the manager goes on with a call whose caller went away).
//
//   - create: a service of that name that is already rollcall's (managed,
//     of the workload) is the create done (I6); any other is an error
//     wrapping docker.ErrConflict, never counted as done.
//   - write (scale, rollout, advance, settings, resume): the step's spec
//     at the version the plan read. Refused as out of sequence, the
//     service is read again and the write made at its new version, up to
//     swarmWriteTries writes in all; the step counter is carried forward
//     past the one read, so the write is still a change Swarm acts on.
//   - remove: a service already gone is the remove done.
//
// A wait does nothing; a then row never runs.
func RunSwarm(ctx context.Context, s docker.Swarm, step Step) error {
	if step.Then {
		return fmt.Errorf("%s %s: a then row does not run; its step runs once a plan holds it", step.Action, step.Target())
	}
	if step.Action == ActWait {
		return nil
	}
	sv := step.Service
	if sv == nil {
		return fmt.Errorf("%s %s: not a step on a Swarm (no service)", step.Action, step.Target())
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s service %s: %w", step.Action, sv.Spec.Name, err)
	}
	switch step.Action {
	case ActCreate:
		cctx, cancel := carried(ctx, 0)
		defer cancel()
		_, err := s.CreateService(cctx, sv.Spec)
		if errors.Is(err, docker.ErrConflict) {
			return sameService(cctx, s, sv)
		}
		if err != nil {
			return fmt.Errorf("create service %s: %w", sv.Spec.Name, err)
		}
		return nil
	case ActRemove:
		rctx, cancel := carried(ctx, 0)
		defer cancel()
		if err := s.RemoveService(rctx, sv.ID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			return fmt.Errorf("remove service %s: %w", sv.Spec.Name, err)
		}
		return nil
	case ActScale, ActRollout, ActAdvance, ActSettings, ActResume:
		return writeService(ctx, s, step)
	}
	return fmt.Errorf("%s %s: unknown action on a Swarm", step.Action, step.Target())
}

// writeService writes the step's spec, read again and retried while the
// manager refuses the version as out of sequence.
func writeService(ctx context.Context, s docker.Swarm, step Step) error {
	sv := step.Service
	spec := sv.Spec
	spec.Labels = maps.Clone(sv.Spec.Labels)
	stepKey := docker.StepLabel(sv.Prefix)
	version := sv.Version
	for try := 1; ; try++ {
		wctx, cancel := carried(ctx, 0)
		err := s.UpdateService(wctx, sv.ID, version, spec)
		cancel()
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, docker.ErrOutOfSequence):
			return fmt.Errorf("%s service %s: %w", step.Action, spec.Name, err)
		case try == swarmWriteTries:
			return fmt.Errorf("%s service %s: %d writes refused: %w", step.Action, spec.Name, try, err)
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("%s service %s: %w", step.Action, spec.Name, errors.Join(err, cerr))
		}
		svcs, rerr := s.Services(ctx, sv.Prefix)
		if rerr != nil {
			return fmt.Errorf("%s service %s: read again after %w: %w", step.Action, spec.Name, err, rerr)
		}
		var cur *docker.Service
		for i := range svcs {
			if svcs[i].ID == sv.ID {
				cur = &svcs[i]
			}
		}
		if cur == nil {
			return fmt.Errorf("%s service %s: gone since the plan read it: %w", step.Action, spec.Name, docker.ErrNotFound)
		}
		version = cur.Version
		if n := stepCounter(sv.Prefix, cur.Spec) + 1; n > stepCounter(sv.Prefix, spec) {
			spec.Labels[stepKey] = strconv.Itoa(n)
		}
	}
}

// sameService decides a create whose name is taken: a managed service of
// the prefix with that name and the step's workload is the create done;
// anything else (a service made by hand or by `docker stack deploy`, or
// another workload's) is an error.
func sameService(ctx context.Context, s docker.Swarm, sv *ServiceStep) error {
	svcs, err := s.Services(ctx, sv.Prefix)
	if err != nil {
		return fmt.Errorf("create service %s: name taken, and reading the services failed: %w", sv.Spec.Name, err)
	}
	key := docker.WorkloadLabel(sv.Prefix)
	for _, c := range svcs {
		if c.Spec.Name == sv.Spec.Name && c.Spec.Labels[docker.ManagedLabel(sv.Prefix)] == "true" && c.Spec.Labels[key] == sv.Spec.Labels[key] {
			return nil
		}
	}
	return fmt.Errorf("create service %s: the name is taken by a service that is not this workload's: %w", sv.Spec.Name, docker.ErrConflict)
}
