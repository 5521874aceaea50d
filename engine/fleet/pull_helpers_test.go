package fleet

import (
	"context"

	"github.com/rollcall/rollcall/engine/docker"
)

func (e *engine) DistributionInspect(ctx context.Context, ref string) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	return e.fake.DistributionInspect(ctx, ref)
}

func (e *engine) Pull(ctx context.Context, ref string, progress func(docker.PullProgress)) (docker.Image, error) {
	if err := e.check(); err != nil {
		return docker.Image{}, err
	}
	e.record("pull:" + ref)
	return e.fake.Pull(ctx, ref, progress)
}
