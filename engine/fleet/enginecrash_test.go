package fleet

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
)

// Issue 26 row 15 on the fleet: a host's engine dies right after its new
// container was created (kill -9 of dockerd) and comes back 35 s later,
// past health_deadline, with the new container Created (never started)
// and the old ones Exited(0). A new run (apply, or the agent) finds the
// host so: it is no failed host, its old containers serve again at once,
// and the rollout finishes on every host.
func TestHostBackFromEngineCrashMidStartRecovers(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	text := fleetYAML("web:v2", 2, abc, "batch: 1")
	r := w.fleet(text, session.ModeAuto).start()
	r.drive("b's first new container", func(Snapshot) bool { return slices.Contains(w.mutated(), "b") })
	b := w.engines["b"]
	b.goAway()
	r.stop()

	// The engine as it comes back: what ran is Exited(0), the container
	// whose start was in flight is Created and was never started.
	ctx := context.Background()
	cs, err := b.fake.List(ctx, "rollcall")
	if err != nil {
		t.Fatal(err)
	}
	neverStarted := ""
	for _, c := range cs {
		if err := b.fake.Stop(ctx, c.ID, 0); err != nil {
			t.Fatal(err)
		}
		if c.Image != "web:v2" {
			continue
		}
		if err := b.fake.Remove(ctx, c.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := b.fake.AddContainer(docker.Container{Name: c.Name, Image: c.Image, ImageID: c.ImageID, Labels: c.Labels,
			State: docker.StateCreated, HasHealthcheck: c.HasHealthcheck, Limits: c.Limits, Created: c.Created}); err != nil {
			t.Fatal(err)
		}
		neverStarted = c.Name
	}
	if neverStarted == "" {
		t.Fatalf("b had no v2 container to leave Created: %+v", cs)
	}
	w.clock.Advance(35 * time.Second)
	b.fake.ResetCalls()
	b.comeBack()

	r = w.fleet(text, session.ModeAuto).start()
	snap := r.drive("the rollout to finish", func(s Snapshot) bool {
		return doneAll(s) || s.Decision.Phase == PhasePaused || len(s.Decision.Record.Failed) > 0
	})
	if !doneAll(snap) {
		t.Fatalf("the rollout did not finish; b stays down:\n%s", describe(snap))
	}
	for _, h := range abc {
		if !w.ready(h, "web:v2", 2) {
			t.Errorf("%s runs %v, want 2 web:v2, healthy", h, w.engineImages(h))
		}
	}
	for _, h := range snap.Hosts {
		if h.Session.Pause != nil {
			t.Errorf("%s paused: %s", h.Name, h.Session.Pause.Reason)
		}
	}
	calls := b.fake.Calls()
	if !slices.ContainsFunc(calls, func(c string) bool { return strings.HasPrefix(c, "restart:") && c != "restart:"+neverStarted }) {
		t.Errorf("b's old containers were never brought back while it rolled: calls %q", calls)
	}
	if slices.Contains(calls, "restart:"+neverStarted) || !slices.Contains(calls, "remove:"+neverStarted) {
		t.Errorf("the never-started %s was not made again (removed, then created anew): calls %q", neverStarted, calls)
	}
}
