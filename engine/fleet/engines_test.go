package fleet_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// The test binary links the moby adapter through dockertest; the package
// itself does not (DESIGN §2): it reaches engines only through a Dialer.
func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// realFleetYAML is the demoapp, one replica on each engine, under prefix.
func realFleetYAML(prefix, image string, engines []*dockertest.Dockerd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix: %s\nworkloads:\n  web:\n    image: %s\n    replicas: 1\n", prefix, image)
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s, timeout: 1s, retries: 3}\n")
	b.WriteString("    stop_grace_period: 2s\n    update:\n      health_deadline: 60s\n")
	b.WriteString("hosts:\n")
	for _, e := range engines {
		fmt.Fprintf(&b, "  %s: {endpoint: %q}\n", e.Name, e.Host)
	}
	return b.String()
}

// source is a desired file in memory, changed with set.
type source struct {
	mu   sync.Mutex
	text string
	ch   chan struct{}
}

func (s *source) Name() string { return "fleet.yaml" }
func (s *source) Load(context.Context) (*spec.Desired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return load.Parse("fleet.yaml", []byte(s.text))
}
func (s *source) Changes(context.Context) <-chan struct{} { return s.ch }
func (s *source) set(text string) {
	s.mu.Lock()
	s.text = text
	s.mu.Unlock()
	loopkit.Signal(s.ch)
}

// canaryWatch is a client that, at every create on a host of a later
// wave, notes whether the canary engine ran only the new image, healthy.
type canaryWatch struct {
	docker.Client
	canary docker.Client
	prefix string
	image  *string
	mu     *sync.Mutex
	early  *[]string
}

func (c canaryWatch) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	c.mu.Lock()
	img := *c.image
	c.mu.Unlock()
	cs, err := c.canary.List(ctx, c.prefix)
	ready := err == nil && len(cs) == 1
	for _, ct := range cs {
		ready = ready && ct.Image == img && ct.State == docker.StateRunning && ct.Health == docker.HealthHealthy
	}
	if !ready {
		c.mu.Lock()
		*c.early = append(*c.early, s.Name)
		c.mu.Unlock()
	}
	return c.Client.Create(ctx, s)
}

// Two real engines (dockerd processes of the test's own, each its own
// host): the fleet converges both on v1, then rolls v2 canary first: the
// canary engine runs v2 healthy before the other engine gets a create.
func TestFleetOnRealEngines(t *testing.T) {
	engines := dockertest.StartEngines(t, 2, dockertest.DefaultBridge())
	prefix := dockertest.Prefix(t)
	v1, _ := dockertest.DemoappImage(t, "v1")
	v2, _ := dockertest.DemoappImage(t, "v2")
	clients := map[string]docker.Client{}
	for _, e := range engines {
		e.Load(t, v1)
		e.Load(t, v2)
		clients[e.Name] = e.Client(t)
	}
	var mu sync.Mutex
	var early []string
	image := v1
	dial := func(ctx context.Context, h *spec.Host) (docker.Client, error) {
		c := clients[h.Name]
		if h.Name == engines[0].Name {
			return c, nil
		}
		return canaryWatch{Client: c, canary: clients[engines[0].Name], prefix: prefix, image: &image, mu: &mu, early: &early}, nil
	}
	src := &source{text: realFleetYAML(prefix, v1, engines), ch: make(chan struct{}, 1)}
	f := fleet.New(fleet.Options{Source: src, Dial: dial, Mode: session.ModeAuto, User: "tester",
		LockDir: t.TempDir(), Settle: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	await := func(what string, cond func(fleet.Snapshot) bool) fleet.Snapshot {
		t.Helper()
		deadline := time.After(3 * time.Minute)
		var last fleet.Snapshot
		for {
			select {
			case s := <-f.Snapshots():
				last = s
				if cond(s) {
					return s
				}
			case <-deadline:
				t.Fatalf("waiting for %s: gave up; blocked %q, phase %s, notes %v", what, last.Blocked, fleet.PhaseName(last.Decision.Phase), last.Notes)
			}
		}
	}
	runs := func(s fleet.Snapshot, img string) bool {
		for _, h := range s.Hosts {
			if len(h.Session.Containers) != 1 || h.Session.Containers[0].Image != img {
				return false
			}
		}
		return true
	}
	done1 := func(img string) func(fleet.Snapshot) bool {
		return func(s fleet.Snapshot) bool { return s.Steady && s.Decision.Phase == fleet.PhaseDone && runs(s, img) }
	}
	first := await("both engines on v1", done1(v1))
	mu.Lock()
	image, early = v2, nil
	mu.Unlock()
	src.set(realFleetYAML(prefix, v2, engines))
	snap := await("both engines on v2", func(s fleet.Snapshot) bool { return s.RolloutID != first.RolloutID && done1(v2)(s) })
	mu.Lock()
	defer mu.Unlock()
	if len(early) > 0 {
		t.Errorf("%v created on %s before the canary %s ran v2, healthy", early, engines[1].Name, engines[0].Name)
	}
	for _, h := range snap.Hosts {
		if h.EngineID == "" || !h.Lock.Held {
			t.Errorf("host %s: engine %q, lock held %v", h.Name, h.EngineID, h.Lock.Held)
		}
	}
}
