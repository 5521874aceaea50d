package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// engineFor is what a desired state acts through (DESIGN §13): on a
// swarm (engine: swarm) the manager's client, whose Info names the swarm
// by its cluster ID (so the lock, the holds, the pins, the revisions and
// the journal are the swarm's, whichever manager is reached), and the
// swarm itself; on a plain engine c as it is and no swarm. An engine that
// is not a manager of an active swarm is refused, saying what to do.
func engineFor(ctx context.Context, c docker.Client, d *spec.Desired) (docker.Client, docker.Swarm, error) {
	if d == nil || d.Engine != spec.EngineSwarm {
		return c, nil, nil
	}
	sw, ok := c.(docker.Swarm)
	if !ok {
		return nil, nil, fmt.Errorf("engine: swarm in %s: this engine cannot drive a swarm", termSafe(d.Source))
	}
	info, err := sw.SwarmInfo(ctx)
	switch {
	case errors.Is(err, docker.ErrNotManager):
		return nil, nil, withHint(fmt.Errorf("engine: swarm in %s: %w", termSafe(d.Source), err),
			"point --docker-host (or DOCKER_HOST, or a docker context) at a manager of the swarm (`docker node ls` on one lists them), or set engine: docker")
	case err != nil:
		return nil, nil, withHint(err, engineHint)
	}
	return swarmNamed{Client: c, cluster: info.ClusterID}, sw, nil
}

// swarmNamed is a swarm manager's client whose Info names the swarm.
type swarmNamed struct {
	docker.Client
	cluster string
}

func (s swarmNamed) Info(ctx context.Context) (docker.EngineInfo, error) {
	info, err := s.Client.Info(ctx)
	if err == nil {
		info.ID, info.Swarm = s.cluster, true
	}
	return info, err
}
