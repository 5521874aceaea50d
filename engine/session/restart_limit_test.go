package session

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// gatedRestarts is a fake engine whose restarts wait for release, so that a
// test can look at what the session does while one is in flight.
type gatedRestarts struct {
	*fake.Engine
	mu      sync.Mutex
	entered []string
	release chan struct{}
}

func (g *gatedRestarts) Restart(ctx context.Context, id string, grace time.Duration) error {
	g.mu.Lock()
	g.entered = append(g.entered, id)
	g.mu.Unlock()
	// As docker's restart does, the container stops first: a list taken
	// meanwhile shows it exited.
	if err := g.Engine.Stop(ctx, id, grace); err != nil {
		return err
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return g.Engine.Restart(ctx, id, grace)
}

func (g *gatedRestarts) restarts() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.entered...)
}

// Issue 18 row 4 (DESIGN §5 rule 4): both replicas turn unhealthy at the
// same moment. The session restarts one; while that restart is in flight,
// relists never start the other's, and the other restarts only once the
// first is healthy again.
func TestWorkloadWideHealthFailureRestartsOneAtATime(t *testing.T) {
	f, clock := newEngine()
	text := desiredYAML("web:v1", 2)
	seed(t, f, clock, text)
	g := &gatedRestarts{Engine: f, release: make(chan struct{})}
	h := newHarness(t, f, clock, text, ModeAuto)
	h.opts.Client = g
	var once sync.Once
	releaseAll := func() { once.Do(func() { close(g.release) }) }
	t.Cleanup(releaseAll) // a failing test still lets the session end
	h.start()
	snap := h.waitFor("two healthy replicas", func(s Snapshot) bool {
		n := 0
		for _, c := range s.Containers {
			if c.Health == docker.HealthHealthy {
				n++
			}
		}
		return n == 2
	})
	for _, c := range snap.Containers {
		if err := f.SetHealth(c.ID, docker.HealthUnhealthy); err != nil {
			t.Fatal(err)
		}
	}
	h.s.Do(Refresh{})
	h.waitFor("one restart in flight", func(s Snapshot) bool { return s.Running != nil })
	for range 5 {
		clock.Advance(100 * time.Millisecond)
		after := clock.Now()
		h.s.Do(Refresh{})
		snap = h.waitFor("a plan listed while the restart runs", func(s Snapshot) bool { return !s.PlanAt.Before(after) })
	}
	if r := g.restarts(); len(r) != 1 {
		t.Fatalf("restarts issued while one was in flight: %q", r)
	}
	waiting := false
	for _, s := range snap.Plan.Steps() {
		if s.Action == reconcile.ActWait && strings.Contains(s.Reason, "workload-wide health failure") {
			waiting = true
		}
	}
	if !waiting {
		t.Fatalf("the other replica does not wait for its turn:\n%s", describe(snap))
	}
	releaseAll()
	h.drive("both healthy again", func(s Snapshot) bool {
		n := 0
		for _, c := range s.Containers {
			if c.Health == docker.HealthHealthy {
				n++
			}
		}
		return n == 2 && s.Running == nil
	})
	if r := g.restarts(); len(r) != 2 || r[0] == r[1] {
		t.Fatalf("restarts %q, want each replica once", r)
	}
}
