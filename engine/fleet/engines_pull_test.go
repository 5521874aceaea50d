package fleet_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/spec"
)

// Three real engines roll from v1 to an image only a registry has (a
// registry of the test process, on loopback). e0 and e1 reach it; e2
// does not (nothing listens there in its namespace). e0 and e1 pull, e2's
// pull fails as unreachable, and the rollout holds: the fleet says e2 and
// the kind, and every engine still runs its v1 container, untouched. Once
// e2 reaches the registry its pull succeeds and the rollout runs to the
// end on every engine.
func TestFleetPullsOnRealEnginesBeforeWaveZero(t *testing.T) {
	engines := dockertest.StartEngines(t, 3, dockertest.DefaultBridge())
	prefix := dockertest.Prefix(t)
	v1, _ := dockertest.DemoappImage(t, "v1")
	reg := dockertest.StartRegistry(t)
	local := dockertest.ImageTag("fleetpull", "v2")
	dockertest.BuildForRegistry(t, local, "v2", 1<<20)
	ref := reg.Push(t, local, dockertest.Repo("web")+":v2")
	dockertest.RemoveLocal(t, local)
	clients := map[string]docker.Client{}
	for _, e := range engines {
		e.Load(t, v1)
		clients[e.Name] = e.Client(t)
	}
	reg.ServeTo(t, engines[0])
	reg.ServeTo(t, engines[1])
	dial := func(ctx context.Context, h *spec.Host) (docker.Client, error) { return clients[h.Name], nil }
	rf := startRealFleet(t, realFleetYAML(prefix, v1, engines), dial)
	src := rf.src
	await := func(what string, cond func(fleet.Snapshot) bool) fleet.Snapshot {
		t.Helper()
		return rf.await(what, 3*time.Minute, cond)
	}
	runs := func(s fleet.Snapshot, img string) bool {
		for _, h := range s.Hosts {
			if len(h.Session.Containers) != 1 || h.Session.Containers[0].Image != img {
				return false
			}
		}
		return true
	}
	first := await("every engine on v1", func(s fleet.Snapshot) bool {
		return s.Steady && s.Decision.Phase == fleet.PhaseDone && runs(s, v1)
	})
	before := map[string]string{}
	for _, h := range first.Hosts {
		before[h.Name] = h.Session.Containers[0].ID
	}

	src.set(realFleetYAML(prefix, ref, engines))
	e2 := engines[2].Name
	pullWait := func(s fleet.Snapshot, host string) (fleet.Wait, bool) {
		if len(s.Decision.Waves) == 0 {
			return fleet.Wait{}, false
		}
		i := slices.IndexFunc(s.Decision.Waves[0].Waits, func(w fleet.Wait) bool { return w.Kind == fleet.WaitPull && w.Host == host })
		if i < 0 {
			return fleet.Wait{}, false
		}
		return s.Decision.Waves[0].Waits[i], true
	}
	pulled := func(s fleet.Snapshot, host string) bool {
		for _, h := range s.Hosts {
			if h.Name == host {
				_, waits := pullWait(s, host)
				return h.Session.Desired != nil && h.Session.Desired.Workloads["web"].Image == ref &&
					!h.Session.Plan.Empty() && !waits && h.Session.Resolved != nil
			}
		}
		return false
	}
	snap := await("e0 and e1 pulled, e2's pull failed", func(s fleet.Snapshot) bool {
		w, ok := pullWait(s, e2)
		return s.RolloutID != first.RolloutID && ok && w.Pull.Failed && pulled(s, engines[0].Name) && pulled(s, engines[1].Name)
	})
	if w, _ := pullWait(snap, e2); w.Pull.Kind != docker.PullUnreachable {
		t.Errorf("e2's wait %+v, want the kind unreachable", w)
	}
	if snap.Decision.Record.Started() {
		t.Fatalf("the rollout started with e2's pull failed: %+v", snap.Decision.Record)
	}
	// Nothing touched anywhere: each engine runs its v1 container still,
	// asked of the engines themselves.
	for _, e := range engines {
		cs, err := clients[e.Name].List(t.Context(), prefix)
		if err != nil {
			t.Fatal(err)
		}
		if len(cs) != 1 || cs[0].ID != before[e.Name] || cs[0].Image != v1 || cs[0].State != docker.StateRunning {
			t.Errorf("%s runs %+v while e2's pull fails, want its v1 container %s untouched", e.Name, cs, before[e.Name])
		}
	}

	reg.ServeTo(t, engines[2])
	await("every engine on the registry's image", func(s fleet.Snapshot) bool {
		return s.Steady && s.Decision.Phase == fleet.PhaseDone && runs(s, ref)
	})
}
