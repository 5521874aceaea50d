package fake

import (
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// A slow starter on the fake: starting, unhealthy from UnhealthyAt, healthy
// at ReadyAfter. HealthySinceStart turns true with the first healthy and is
// reset by the next start.
func TestFakeSlowStarter(t *testing.T) {
	f, clock := newTestFake(t)
	f.AddImage("slow:v1", "sha256:slow1", Behaviour{UnhealthyAt: 3 * time.Second, ReadyAfter: 8 * time.Second})
	spec := managedSpec("rollcall-web-0-slow", "slow:v1")
	spec.Limits.Restart = "no"
	id := mustCreate(t, f, spec)
	at := func(d time.Duration, health docker.Health, since bool) {
		t.Helper()
		clock.Set(fakeEpoch.Add(d))
		c := mustInspect(t, f, id).Container
		if c.Health != health || c.HealthySinceStart != since {
			t.Fatalf("at %s: health %q, healthy since start %v; want %q, %v", d, c.Health, c.HealthySinceStart, health, since)
		}
	}
	at(time.Second, docker.HealthStarting, false)
	at(4*time.Second, docker.HealthUnhealthy, false)
	at(9*time.Second, docker.HealthHealthy, true)
	if err := f.SetHealth(id, docker.HealthUnhealthy); err != nil {
		t.Fatal(err)
	}
	at(10*time.Second, docker.HealthUnhealthy, true) // unhealthy after healthy: a crash
	if err := f.Restart(testCtx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	at(11*time.Second, docker.HealthStarting, false)
}

// The fake's inspect tells how the container was created, as the moby
// adapter's does.
func TestFakeInspectConfig(t *testing.T) {
	f, _ := newTestFake(t)
	spec := managedSpec("rollcall-web-0-cfg", "web:v1")
	spec.Command = []string{"-listen", ":8080"}
	spec.Env = []string{"A=1", "B=2"}
	spec.StopSignal = "SIGINT"
	spec.Networks = []string{"front", "back"}
	id := mustCreate(t, f, spec)
	cfg := mustInspect(t, f, id).Config
	if !slices.Equal(cfg.Cmd, spec.Command) || !slices.Equal(cfg.Env, spec.Env) || cfg.StopSignal != "SIGINT" ||
		cfg.Healthcheck == nil || cfg.Healthcheck.Interval != time.Second || !cfg.ImageKnown ||
		!slices.Equal(cfg.Networks, []string{"back", "front"}) ||
		!slices.Equal(cfg.Ports, []docker.PortSpec{{ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1"}}) {
		t.Errorf("config %+v", cfg)
	}
}
