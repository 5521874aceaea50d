package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// newSwarmHarness is a session driving a fake swarm of 3 nodes on the
// fake engine's clock (the manager's engine, where the images resolve),
// with web:v1 and web:v2 healthy one second after their start.
func newSwarmHarness(t *testing.T, text string, mode Mode) (*harness, *fake.Swarm) {
	t.Helper()
	f, clock := newEngine()
	sw := fake.NewSwarm(fake.SwarmOptions{Clock: clock, Seed: 7, Nodes: 3})
	sw.AddImage("web:v1", fake.Behaviour{ReadyAfter: time.Second})
	sw.AddImage("web:v2", fake.Behaviour{ReadyAfter: time.Second})
	h := newHarness(t, f, clock, text, mode)
	h.opts.Swarm = sw
	return h, sw
}

func swarmYAML(image string, replicas int) string {
	return "engine: swarm\n" + desiredYAML(image, replicas)
}

// tasksOn counts the running tasks (shown as containers) of image.
func tasksOn(s Snapshot, image string) int { return running(s, image) }

func converged(s Snapshot) bool { return s.Standing.Kind == StandingConverged && !s.Standing.Pending }

// writes are the swarm's writes, in order, as the fake records them
// ("createservice:rollcall_web").
func writes(sw *fake.Swarm) []string { return sw.Mutations() }

// On a swarm, auto creates the workload's service, then rolls a new image
// with one write of the whole spec (Swarm runs the roll), and is named by
// the swarm's cluster ID.
func TestSessionOnASwarmCreatesThenRollsWithOneWrite(t *testing.T) {
	h, sw := newSwarmHarness(t, swarmYAML("web:v1", 3), ModeAuto)
	h.start()
	s := h.drive("3 tasks of v1, converged", func(s Snapshot) bool { return converged(s) && tasksOn(s, "web:v1") == 3 })
	info, _ := sw.SwarmInfo(t.Context())
	if !s.Engine.Swarm || s.Engine.ID != info.ClusterID {
		t.Errorf("engine = %+v, want the swarm named by its cluster ID %s", s.Engine, info.ClusterID)
	}
	for _, c := range s.Containers {
		if c.Node == "" {
			t.Errorf("task %s shows no node", c.Name)
		}
	}
	if got := writes(sw); !slices.Equal(got, []string{"createservice:rollcall_web"}) {
		t.Fatalf("writes after the first converge = %v, want the one create", got)
	}

	h.src.Set(swarmYAML("web:v2", 3))
	h.drive("3 tasks of v2, converged", func(s Snapshot) bool {
		return converged(s) && tasksOn(s, "web:v2") == 3 && tasksOn(s, "web:v1") == 0
	})
	got := writes(sw)
	if len(got) < 2 || got[1] != "updateservice:rollcall_web" {
		t.Fatalf("writes = %v, want the create, then the roll's write", got)
	}
	// After the roll's one write, only a settings write may follow (Swarm's
	// update is over): never one write per slot.
	if len(got) > 3 {
		t.Errorf("writes = %v: a roll of 3 slots took %d writes in auto, want 1 (Swarm rolls them)", got, len(got)-1)
	}
}

// In step mode each approval advances exactly one slot: the first writes
// the new template paced (parallelism 1, a long delay), each later one a
// write outside the template; the next is offered only once the last
// step's task is RUNNING.
func TestSessionOnASwarmStepModeAdvancesOneSlotPerApproval(t *testing.T) {
	h, sw := newSwarmHarness(t, swarmYAML("web:v1", 3), ModeAuto)
	h.start()
	h.drive("3 tasks of v1", func(s Snapshot) bool { return converged(s) && tasksOn(s, "web:v1") == 3 })
	h.s.Do(SetMode{Mode: ModeStep})
	h.waitFor("step mode", func(s Snapshot) bool { return s.Mode == ModeStep })
	h.src.Set(swarmYAML("web:v2", 3))

	next := func(what string) reconcile.Step {
		t.Helper()
		var step reconcile.Step
		h.drive(what, func(s Snapshot) bool {
			for _, st := range s.Plan.Executable() {
				if st.Service != nil && (st.Action == reconcile.ActRollout || st.Action == reconcile.ActAdvance) {
					step = st
					return true
				}
			}
			return false
		})
		return step
	}
	for n := 1; n <= 3; n++ {
		st := next("the step to approve")
		want := reconcile.ActAdvance
		if n == 1 {
			want = reconcile.ActRollout
		}
		if st.Action != want {
			t.Fatalf("step %d is %s, want %s", n, st.Action, want)
		}
		before := len(writes(sw))
		h.s.Do(ApproveStep{Key: st.Key()})
		s := h.drive("the slot to run v2", func(s Snapshot) bool { return tasksOn(s, "web:v2") == n && s.Running == nil })
		if got := len(writes(sw)) - before; got != 1 {
			t.Errorf("approval %d: %d writes, want 1", n, got)
		}
		// Nothing more moves without an approval: time passes, no other slot goes.
		for range 6 {
			h.clock.Advance(2 * time.Second)
			h.s.Do(Refresh{})
			s = h.settle()
		}
		if v2 := tasksOn(s, "web:v2"); v2 != n {
			t.Fatalf("after approval %d and 12s: %d tasks of v2, want %d (one slot per approval)\n%s", n, v2, n, describe(s))
		}
		if n < 3 {
			if v1 := tasksOn(s, "web:v1"); v1 != 3-n {
				t.Errorf("after approval %d: %d tasks of v1, want %d", n, v1, 3-n)
			}
		}
	}
	// The paced roll's last write: the file's settings back, which ends
	// Swarm's sleeping updater; approved as every write is in step mode.
	var settings reconcile.Step
	h.drive("the settings step", func(s Snapshot) bool {
		for _, st := range s.Plan.Executable() {
			if st.Action == reconcile.ActSettings {
				settings = st
				return true
			}
		}
		return false
	})
	h.s.Do(ApproveStep{Key: settings.Key()})
	h.drive("converged on v2", func(s Snapshot) bool { return converged(s) && tasksOn(s, "web:v2") == 3 })
}

// Watch mode reads the swarm and writes nothing (the read-only swarm
// client): a desired change is planned and never written.
func TestSessionOnASwarmWatchWritesNothing(t *testing.T) {
	h, sw := newSwarmHarness(t, swarmYAML("web:v1", 2), ModeWatch)
	h.start()
	s := h.drive("a plan that creates the service", func(s Snapshot) bool {
		for _, st := range s.Plan.Executable() {
			if st.Action == reconcile.ActCreate {
				return true
			}
		}
		return false
	})
	for range 5 {
		h.clock.Advance(time.Second)
		s = h.settle()
	}
	if got := writes(sw); len(got) != 0 {
		t.Errorf("watch mode wrote %v, want nothing", got)
	}
	if s.Engine.ID == "" || !s.Engine.Swarm {
		t.Errorf("engine = %+v, want the swarm", s.Engine)
	}
}

// Swarm pauses an update whose new task fails its health (failure_action
// pause): the standing is failed, with Swarm's words, nothing more is
// written; the operator's retry sends the update again (a resume), and a
// fixed image in the file then rolls.
func TestSessionOnASwarmPausedUpdateFailsAndRetryResumes(t *testing.T) {
	h, sw := newSwarmHarness(t, swarmYAML("web:v1", 2), ModeAuto)
	h.fake.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second})
	sw.AddImage("web:bad", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	h.start()
	h.drive("2 tasks of v1", func(s Snapshot) bool { return converged(s) && tasksOn(s, "web:v1") == 2 })

	h.src.Set(swarmYAML("web:bad", 2))
	s := h.drive("the update paused by Swarm", func(s Snapshot) bool {
		return s.Standing.Kind == StandingFailed && !s.Standing.Pending
	})
	if tasksOn(s, "web:v1") < 1 {
		t.Errorf("after the failed update: %d tasks of v1 run, want the old serving", tasksOn(s, "web:v1"))
	}
	paused := len(writes(sw))
	for range 5 {
		h.clock.Advance(2 * time.Second)
		s = h.settle()
	}
	if tasksOn(s, "web:v1") < 1 {
		t.Errorf("10s into the pause: %d tasks of v1 run, want the old serving", tasksOn(s, "web:v1"))
	}
	if got := len(writes(sw)); got != paused {
		t.Errorf("while Swarm's update is paused: %d more writes, want none (it waits for the operator)", got-paused)
	}

	h.s.Do(Retry{Workload: "web"})
	h.drive("the resume written", func(s Snapshot) bool { return len(writes(sw)) > paused })
	if last := writes(sw)[len(writes(sw))-1]; last != "updateservice:rollcall_web" {
		t.Errorf("the retry wrote %s, want the service's update sent again", last)
	}

	h.src.Set(swarmYAML("web:v2", 2))
	h.drive("converged on v2", func(s Snapshot) bool {
		return converged(s) && tasksOn(s, "web:v2") >= 2 && tasksOn(s, "web:v1") == 0 && tasksOn(s, "web:bad") == 0
	})
}

// A desired state is for what the session drives: a session on a swarm
// refuses a file that turned to engine: docker, and keeps the last good
// one (nothing of it is acted on).
func TestSessionOnASwarmRefusesAnotherEngine(t *testing.T) {
	h, sw := newSwarmHarness(t, swarmYAML("web:v1", 2), ModeAuto)
	h.start()
	h.drive("2 tasks of v1", func(s Snapshot) bool { return converged(s) && tasksOn(s, "web:v1") == 2 })
	before := len(writes(sw))
	h.src.Set(desiredYAML("web:v2", 2)) // engine: docker, the default
	s := h.drive("the file refused", func(s Snapshot) bool { return s.SourceErr != nil })
	if !strings.Contains(s.SourceErr.Error(), "restart rollcall") {
		t.Errorf("source error = %v, want the engine change refused", s.SourceErr)
	}
	for range 3 {
		h.clock.Advance(time.Second)
		s = h.settle()
	}
	if got := len(writes(sw)); got != before || tasksOn(s, "web:v1") != 2 {
		t.Errorf("after the refused file: %d more writes, %d tasks of v1; want none and 2", got-before, tasksOn(s, "web:v1"))
	}
	if calls := h.fake.Calls(); countPrefix(calls, "create") > 0 {
		t.Errorf("the plain engine was acted on: %v", calls)
	}
}
