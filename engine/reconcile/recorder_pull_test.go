package reconcile

import (
	"context"

	"github.com/rollcall/rollcall/engine/docker"
)

func (r *recorder) Pull(_ context.Context, ref string, _ func(docker.PullProgress)) (docker.Image, error) {
	return docker.Image{ID: "sha256:pulled-" + ref}, r.do("pull", ref)
}

func (r *recorder) DistributionInspect(context.Context, string) (string, error) {
	panic("unexpected DistributionInspect")
}
