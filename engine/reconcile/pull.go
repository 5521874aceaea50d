package reconcile

import (
	"context"
	"fmt"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// PullProgress is a pull step's progress: the step and how far its pull is.
type PullProgress struct {
	Step Step
	docker.PullProgress
}

// pullStep is the step that pulls w's image (DESIGN §5 rule 0): the one
// step of the workload while its image is not on the engine.
func pullStep(w *spec.Resolved) Step {
	return Step{Action: ActPull, Workload: w.Name, Slot: NoSlot, Container: w.Pull.Ref,
		Why: Reason{Kind: ReasonPull, Image: w.Pull.Ref, Digest: w.Pull.Digest}}
}

// runPull pulls the step's image through the engine. A failure is the
// engine's *docker.PullError (its kind is data: docker.PullKindOf); the end
// of ctx cancels the pull, which touches no container either way.
func runPull(ctx context.Context, c docker.Client, s Step, opts RunOptions) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pull %s %s: %w", s.Workload, s.Container, err)
	}
	var progress func(docker.PullProgress)
	if opts.OnPull != nil {
		progress = func(p docker.PullProgress) { opts.OnPull(PullProgress{Step: s, PullProgress: p}) }
	}
	if _, err := c.Pull(ctx, s.Container, progress); err != nil {
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return fmt.Errorf("pull %s: %w: %w", s.Workload, cause, err) // why it was cancelled
		}
		return fmt.Errorf("pull %s: %w", s.Workload, err)
	}
	return nil
}

// shortDigest is a manifest digest as a plan line shows it: "sha256:0123abcd".
func shortDigest(d string) string {
	const keep = len("sha256:") + 12
	if len(d) > keep {
		return d[:keep]
	}
	return d
}

// registryNote says that the registry could not tell where w's `pull:
// always` tag points, and that the engine's image is kept.
func registryNote(w *spec.Resolved) string {
	return fmt.Sprintf("pull: always: the registry could not say where %s points (%s): the engine's image is kept",
		w.Image, docker.PullKindOf(w.RegistryErr).Text())
}
