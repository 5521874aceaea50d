package moby_test

import (
	"slices"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// TestMobyCreateOptionsTakeEffect: the create options reach the engine,
// as its inspect says, and demoapp runs and turns healthy under them
// (a user without a passwd entry, a working directory the engine makes,
// no capability at all, an init process as PID 1).
func TestMobyCreateOptionsTakeEffect(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("options")
	spec.Options = docker.ContainerOptions{
		User:       "1000:1000",
		WorkingDir: "/srv/app",
		Hostname:   "web-1",
		CapDrop:    []string{"ALL"},
		Init:       true,
		ExtraHosts: []string{"db.internal:10.0.0.5"},
	}
	id := et.create(spec)
	et.waitHealth(id, docker.HealthHealthy, 20*time.Second)

	r, err := moby.MobyClient(et.m).ContainerInspect(et.ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, h := r.Container.Config, r.Container.HostConfig
	if c.User != "1000:1000" || c.WorkingDir != "/srv/app" || c.Hostname != "web-1" {
		t.Errorf("user %q, working dir %q, hostname %q", c.User, c.WorkingDir, c.Hostname)
	}
	if !slices.Equal(h.CapDrop, []string{"ALL"}) || h.Init == nil || !*h.Init || !slices.Equal(h.ExtraHosts, []string{"db.internal:10.0.0.5"}) {
		t.Errorf("cap drop %v, init %v, extra hosts %v", h.CapDrop, h.Init, h.ExtraHosts)
	}
}
