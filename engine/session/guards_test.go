package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// These tests each keep one guard of the session. Each was checked by
// breaking the guard on purpose and watching the test fail.

// noRestartYAML is one web container that the engine does not restart by
// itself: a crash is rollcall's to restart.
const noRestartYAML = `workloads:
  web:
    image: web:v1
    restart: "no"
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`

// crashOne kills the only container of web/0 and returns its name.
func crashOne(t *testing.T, f *fake.Engine) string {
	t.Helper()
	cs, err := f.List(context.Background(), pfx)
	if err != nil || len(cs) == 0 {
		t.Fatalf("list: %v %v", cs, err)
	}
	if err := f.Kill(cs[0].ID, 137); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	return cs[0].Name
}

// Step mode runs no restart that nobody approved; the approval runs it.
func TestStepModeRunsNoUnapprovedRestart(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, noRestartYAML)
	name := crashOne(t, f)
	h := newHarness(t, f, clock, noRestartYAML, ModeStep).start()
	snap := h.waitFor("the restart in the plan", func(s Snapshot) bool {
		return slices.ContainsFunc(s.Plan.Executable(), func(st reconcile.Step) bool { return st.Action == reconcile.ActRestart })
	})
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("step mode ran an unapproved restart: %q", m)
	}
	h.s.Do(ApproveStep{Key: snap.Plan.Executable()[0].Key()})
	h.waitFor("the approved restart", func(s Snapshot) bool { return len(s.Recent) == 1 && s.Running == nil })
	if m := f.Mutations(); !slices.Equal(m, []string{"restart:" + name}) {
		t.Fatalf("mutations %q, want the approved restart only", m)
	}
}

// A pause holds every step, in auto mode and in step mode with approvals.
func TestPauseBlocksSteps(t *testing.T) {
	for _, mode := range []Mode{ModeAuto, ModeStep} {
		t.Run(string(mode), func(t *testing.T) {
			f, clock := newEngine()
			h := newHarness(t, f, clock, "workloads: {}\n", mode).start()
			h.waitFor("the first plan", func(s Snapshot) bool { return s.Fresh })
			h.s.Do(Pause{})
			h.waitFor("the pause", func(s Snapshot) bool { return s.Pause != nil })
			h.src.Set(desiredYAML("web:v1", 2))
			snap := h.waitFor("two starts", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Executable()) == 2 })
			h.s.Do(ApproveRollout{})
			h.settle()
			if m := f.Mutations(); len(m) != 0 {
				t.Fatalf("steps ran while paused: %q", m)
			}
			if !strings.Contains(h.last.Waiting, "paused") {
				t.Errorf("waiting %q, want it to say paused", h.last.Waiting)
			}
			h.s.Do(Resume{})
			if mode == ModeStep {
				h.s.Do(ApproveRollout{})
			}
			h.waitFor("the starts after resume", func(s Snapshot) bool { return len(f.Mutations()) == 2 })
			_ = snap
		})
	}
}

// An operator rollback stops the new container only where an old one still
// serves: a slot that finished its roll keeps its only container.
func TestOperatorRollbackKeepsFinishedSlots(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 2)))
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Resolve(context.Background(), d, f)
	ctx := context.Background()
	// Slot 0 finished its roll: only its v2 container is left. Slot 1 is
	// mid-roll: v1 and v2 side by side.
	cs, _ := f.List(ctx, pfx)
	for _, c := range cs {
		if c.Labels[docker.SlotLabel(pfx)] == "0" {
			if err := f.Stop(ctx, c.ID, 0); err != nil {
				t.Fatal(err)
			}
			if err := f.Remove(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	for slot := range 2 {
		if _, err := f.Create(ctx, *reconcile.CreateSpec(pfx, r.Workload("web"), slot)); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(2 * time.Second)
	f.Tick()
	f.ResetCalls()
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2), ModeStep).start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
	h.s.Do(Rollback{Workload: "web"})
	h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
	snap := h.settle()
	slot0 := reconcile.ContainerName(pfx, "web", 0, r.Workload("web").Hash)
	slot1 := reconcile.ContainerName(pfx, "web", 1, r.Workload("web").Hash)
	if m := f.Mutations(); !slices.Equal(m, []string{"stop:" + slot1, "remove:" + slot1}) {
		t.Fatalf("mutations %q, want only slot 1's new container stopped", m)
	}
	if !slices.ContainsFunc(snap.Containers, func(c docker.Container) bool { return c.Name == slot0 && c.State == docker.StateRunning }) {
		t.Errorf("slot 0 lost its only container:\n%s", describe(snap))
	}
}

// An operator rollback runs at once, even while paused: it is an order.
func TestOperatorRollbackRunsWhilePaused(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	d, _ := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	r := spec.Resolve(context.Background(), d, f)
	if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 0)); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeAuto)
	h.start()
	h.s.Do(Pause{})
	h.waitFor("the pause", func(s Snapshot) bool { return s.Pause != nil && s.Fresh })
	h.s.Do(Rollback{Workload: "web"})
	h.waitFor("the rollback while paused", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
	if m := f.Mutations(); len(m) != 2 || !strings.HasPrefix(m[0], "stop:") {
		t.Fatalf("mutations %q, want the new container stopped", m)
	}
}

// The blast radius counts rolls as well as stops: both take a running
// container away.
func TestBlastRadiusCountsStopsAndRolls(t *testing.T) {
	running := []docker.Container{
		{ID: "a", State: docker.StateRunning}, {ID: "b", State: docker.StateRunning},
		{ID: "c", State: docker.StateRunning}, {ID: "d", State: docker.StateRunning},
		{ID: "x", State: docker.StateExited},
	}
	plan := func(steps ...reconcile.Step) reconcile.Plan {
		return reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{Name: "web", Steps: steps}}}
	}
	tests := []struct {
		name string
		plan reconcile.Plan
		hit  int
	}{
		{"stops", plan(reconcile.Step{Action: reconcile.ActStop, ContainerID: "a"}, reconcile.Step{Action: reconcile.ActStop, ContainerID: "b"}), 2},
		{"rolls", plan(reconcile.Step{Action: reconcile.ActRoll, ContainerID: "a"}, reconcile.Step{Action: reconcile.ActRoll, ContainerID: "b"},
			reconcile.Step{Action: reconcile.ActRoll, ContainerID: "c"}), 3},
		{"mixed", plan(reconcile.Step{Action: reconcile.ActRoll, ContainerID: "a"}, reconcile.Step{Action: reconcile.ActStop, ContainerID: "b"}), 2},
		{"an exited one does not count", plan(reconcile.Step{Action: reconcile.ActStop, ContainerID: "x"}), 0},
		{"starts and restarts do not count", plan(reconcile.Step{Action: reconcile.ActStart}, reconcile.Step{Action: reconcile.ActRestart, ContainerID: "a"}), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hit, total := blastRadius(tt.plan, running)
			if hit != tt.hit || total != 4 {
				t.Errorf("blast radius %d of %d, want %d of 4", hit, total, tt.hit)
			}
		})
	}
}

// A step is journaled before it starts and when it ends, a restart too,
// with the engine and the prefix.
func TestEveryStepIsJournaledBeforeAndAfter(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, noRestartYAML)
	name := crashOne(t, f)
	h := newHarness(t, f, clock, noRestartYAML, ModeAuto)
	path := h.withJournal()
	h.start()
	h.waitFor("the restart", func(s Snapshot) bool { return len(s.Recent) == 1 && s.Running == nil })
	var got []string
	entries, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Action == "lock-taken" {
			continue
		}
		got = append(got, e.Action+" "+e.Container+" "+e.Result)
		if e.Engine == "" || e.Prefix != pfx || e.Mode != "auto" {
			t.Errorf("entry without engine, prefix or mode: %+v", e)
		}
	}
	want := []string{"restart " + name + " started", "restart " + name + " ok"}
	if !slices.Equal(got, want) {
		t.Fatalf("journal %q, want %q", got, want)
	}
}

// A journal that cannot be written halts the session: the step whose first
// line fails never runs, and nothing after it does.
func TestJournalFailureHalts(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto)
	h.withJournal()
	h.opts.Journal.Close() // every Append now fails
	h.start()
	snap := h.waitFor("the halt", func(s Snapshot) bool { return s.Halted != "" })
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("steps ran without a journal: %q", m)
	}
	if !strings.Contains(snap.Halted, "journal") {
		t.Errorf("halted %q", snap.Halted)
	}
}

// Crash backoff: the restarts rollcall issued count until the container has
// run healthy for 10s, not from the moment it is healthy.
func TestRestartCountResetsAfterTenSecondsHealthy(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	w := spec.Resolved{Workload: &spec.Workload{Name: "web", Update: spec.UpdatePolicy{MinReady: time.Second}}}
	for _, tt := range []struct {
		healthyFor time.Duration
		kept       bool
	}{{time.Second, true}, {9 * time.Second, true}, {10 * time.Second, false}, {time.Minute, false}} {
		c := docker.Container{ID: "c1", State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
			StartedAt: now.Add(-tt.healthyFor), Labels: map[string]string{docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): "web", docker.SlotLabel(pfx): "0"}}
		l := &loop{desire: desire{prefix: pfx}, observer: observer{observed: instant{engine: now}, containers: []docker.Container{c},
			resolved: &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{w}}}, runner: runner{restarts: map[string]int{"c1": 3}}}
		l.plan = reconcile.Diff(l.resolved, &reconcile.Observed{Now: now, Containers: l.containers})
		l.forgetRestarts(&l.observer, l.skipHealth)
		if _, kept := l.restarts["c1"]; kept != tt.kept {
			t.Errorf("healthy for %s: restart count kept %v, want %v", tt.healthyFor, kept, tt.kept)
		}
	}
}

// A step runs only from a plan diffed from a list taken after every step
// that started before it, and after the last step of its own slot ended:
// steps of one plan run together, and a slot's step that ends leaves the
// other slots' steps of the plan in hand good, not its own.
func TestEveryStepFollowsAFreshList(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 3))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 3), ModeAuto).start()
	seen := map[string]StepResult{}
	h.drive("the roll", func(s Snapshot) bool {
		for _, r := range s.Recent {
			seen[r.Step.Key()+r.Began.String()] = r
		}
		return s.Steady && running(s, "web:v2") == 3
	})
	if len(seen) < 6 {
		t.Fatalf("only %d steps ran", len(seen))
	}
	for _, a := range seen {
		end := a.Began.Add(a.Duration)
		for _, b := range seen {
			if a.Began.Before(b.Began) && b.Listed.Before(a.Began) {
				t.Fatalf("%s began %s from a list of %s, older than the start of %s (%s)",
					b.Step.Key(), b.Began.Format(time.StampMicro), b.Listed.Format(time.StampMicro), a.Step.Key(), a.Began.Format(time.StampMicro))
			}
			if slotOf(a.Step) == slotOf(b.Step) && !end.After(b.Began) && b.Listed.Before(end) {
				t.Fatalf("%s began %s from a list of %s, older than the end of %s in its slot (%s)",
					b.Step.Key(), b.Began.Format(time.StampMicro), b.Listed.Format(time.StampMicro), a.Step.Key(), end.Format(time.StampMicro))
			}
		}
	}
}

// Holds outlive the session: a rollback's hold is kept in the state
// directory, read back by the next session and by ReadHolds, and dropped
// once the desired spec changes.
func TestHoldsOutliveTheSession(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	d, _ := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	r := spec.Resolve(context.Background(), d, f)
	if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 0)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
	h.s.Do(Rollback{Workload: "web"})
	h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })

	files, _ := filepath.Glob(filepath.Join(dir, "holds-*.json"))
	if len(files) != 1 {
		t.Fatalf("holds files %v, want one", files)
	}
	data, _ := os.ReadFile(files[0])
	if !strings.Contains(string(data), r.Workload("web").Hash) {
		t.Fatalf("holds file %s does not hold %s", data, r.Workload("web").Hash)
	}

	// A second session on the same state directory keeps the hold: it
	// does not start the held spec again.
	f.ResetCalls()
	h2 := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeAuto)
	h2.opts.StateDir = dir
	h2.opts.Client = notSimulated{f}
	h2.opts.LockPath = filepath.Join(t.TempDir(), "other.lock")
	h2.start()
	snap := h2.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh })
	h2.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("the held spec was started again: %q\n%s", m, describe(snap))
	}
	if hs := h2.last.Holds["web"]; len(hs) != 1 {
		t.Fatalf("holds %v, want the kept one", h2.last.Holds)
	}
	// A new desired spec lifts it.
	h2.src.Set(strings.Replace(desiredYAML("web:v2", 1), "replicas: 1", "replicas: 1\n    version: \"2b\"", 1))
	h2.waitFor("the hold lifted", func(s Snapshot) bool { return s.Fresh && len(s.Holds) == 0 })
	if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
		t.Errorf("holds file still there after the spec changed: %v", err)
	}
}

// notSimulated is the fake engine standing in for a real one, whose holds
// are kept on disk (a simulated engine's die with its process).
type notSimulated struct{ *fake.Engine }

func (n notSimulated) Info(ctx context.Context) (docker.EngineInfo, error) {
	info, err := n.Engine.Info(ctx)
	info.Simulated = false
	return info, err
}

// heldList is an engine whose List can be held at the door, to finish a
// relist at a chosen moment.
type heldList struct {
	docker.Client
	mu      sync.Mutex
	hold    bool
	entered chan struct{}
	release chan struct{}
}

func (h *heldList) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	h.mu.Lock()
	held := h.hold
	h.mu.Unlock()
	if held {
		h.entered <- struct{}{}
		<-h.release
	}
	return h.Client.List(ctx, prefix)
}

// A relist that started before an intent is too old to act on: the step
// the intent approved waits for the relist after it.
func TestNoStepFromAListOlderThanTheLastIntent(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	held := &heldList{Client: f, entered: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
	h.opts.Client = held
	h.start()
	t.Cleanup(func() { // runs before the harness ends the session
		held.mu.Lock()
		held.hold = false
		held.mu.Unlock()
		close(held.release)
	})
	snap := h.waitFor("the start in the plan", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Executable()) == 1 })
	key := snap.Plan.Executable()[0].Key()

	held.mu.Lock()
	held.hold = true
	held.mu.Unlock()
	h.s.Do(Refresh{})
	<-held.entered // a relist is under way, from before the approval
	h.s.Do(ApproveStep{Key: key})
	time.Sleep(50 * time.Millisecond) // the loop takes the approval in
	held.release <- struct{}{}        // the old relist ends
	<-held.entered                    // the relist after the approval starts
	time.Sleep(50 * time.Millisecond)
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("a step ran from a list older than the approval: %q", m)
	}
	held.mu.Lock()
	held.hold = false
	held.mu.Unlock()
	held.release <- struct{}{}
	h.waitFor("the approved start", func(s Snapshot) bool { return len(s.Recent) == 1 && s.Running == nil })
}

// One rollout approval takes a roll to the desired state, steps to come
// included; a desired change ends it.
func TestApproveRolloutRunsTheWholeRoll(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 3))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 3), ModeStep).start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Executable()) > 0 })
	h.s.Do(ApproveRollout{})
	h.waitFor("the rollout under way", func(s Snapshot) bool { return s.Rollout != nil })
	snap := h.drive("the roll to v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 3 })
	if running(snap, "web:v1") != 0 {
		t.Fatalf("v1 left:\n%s", describe(snap))
	}
	if snap.Rollout != nil || !hasNote(snap, "the desired state is reached") {
		t.Errorf("the rollout approval outlived the rollout: %+v", snap.Rollout)
	}

	// A new desired state is not covered by the old approval.
	// Wait for this approval's own end (the desired state is reached at
	// once), not the first one's note: else the change below could come
	// first, and the approval would cover it.
	h.s.Do(ApproveRollout{})
	h.waitFor("the second approval ended", func(s Snapshot) bool {
		return countNotes(s, "rollout approved by") == 2 && countNotes(s, "rollout approval ended") == 2
	})
	h.src.Set(desiredYAML("web:v1", 3))
	h.waitFor("the approval ended by the change", func(s Snapshot) bool { return s.Rollout == nil && s.Fresh && len(s.Plan.Executable()) > 0 })
	f.ResetCalls()
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("steps of the new desired state ran on the old approval: %q", m)
	}
}

// A container that dies is restarted from the state in hand, patched by
// the die event, without waiting for a relist (rule 4 reacts at once);
// nothing but that restart runs from such a state.
func TestDieIsRestartedWithoutARelist(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, noRestartYAML)
	h := newHarness(t, f, clock, noRestartYAML, ModeAuto)
	h.opts.Coalesce = time.Hour // a relist would wait: only the patched state can act
	h.start()
	h.waitFor("the steady state", func(s Snapshot) bool { return s.Steady })
	killed := time.Now()
	name := crashOne(t, f)
	snap := h.waitFor("the restart", func(s Snapshot) bool { return len(s.Recent) == 1 })
	r := snap.Recent[0]
	if r.Step.Action != reconcile.ActRestart || r.Step.Container != name {
		t.Fatalf("ran %s, want the restart of %s", r.Step.Key(), name)
	}
	if !r.Listed.Before(killed) {
		t.Errorf("the restart waited for a relist (listed %s, killed %s)", r.Listed.Format(time.StampMicro), killed.Format(time.StampMicro))
	}
}

// heldCreate is an engine whose Create waits at the door until released.
type heldCreate struct {
	docker.Client
	entered chan struct{}
	release chan struct{}
}

func (h *heldCreate) Create(ctx context.Context, spec docker.CreateSpec) (string, error) {
	h.entered <- struct{}{}
	<-h.release
	return h.Client.Create(ctx, spec)
}

// A session that ends mid-step carries the step to its end (the engine call
// is not cancelled) and journals it ok. Abandon does not cut short a call
// the engine already has either: a create cut short would leave a
// container Created and never started (issue 18 row 7).
func TestEndingSessionFinishesTheStepInFlight(t *testing.T) {
	for _, abandon := range []bool{false, true} {
		t.Run(map[bool]string{false: "finish", true: "abandon"}[abandon], func(t *testing.T) {
			f, clock := newEngine()
			held := &heldCreate{Client: f, entered: make(chan struct{}), release: make(chan struct{})}
			h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
			h.opts.Client = held
			path := h.withJournal()
			s := New(h.opts)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			go func() {
				for range s.Snapshots() {
				}
			}()
			<-held.entered // the start is under way
			cancel()
			if abandon {
				s.Abandon()
			}
			time.Sleep(50 * time.Millisecond)
			select {
			case <-done:
				t.Fatal("the session ended before its step did")
			default:
			}
			close(held.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			entries, err := journal.Read(path, 0)
			if err != nil {
				t.Fatal(err)
			}
			steps := stepEntries(entries)
			if len(steps) != 1 || steps[0].Result != journal.ResultOK {
				t.Fatalf("journal %+v, want the start ok", steps)
			}
			cs, _ := f.List(context.Background(), pfx)
			if len(cs) != 1 || cs[0].State != docker.StateRunning {
				t.Fatalf("the finished start left %+v", cs)
			}
		})
	}
}

// gatedClient holds the create of one slot's container, and the first list
// taken while it is held: the list returns what the engine said before
// the create went through, only once the test lets it.
type gatedClient struct {
	docker.Client
	slot          string // "-web-0-": a part of the container name
	createHeld    chan struct{}
	createRelease chan struct{}
	listHeld      chan struct{}
	listRelease   chan struct{}
	mu            sync.Mutex
	created       bool // the held create came
	armed         bool // the next list is held
}

func (g *gatedClient) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	if strings.Contains(s.Name, g.slot) {
		g.mu.Lock()
		first := !g.created
		g.created, g.armed = true, first
		g.mu.Unlock()
		if first {
			close(g.createHeld)
			<-g.createRelease
		}
	}
	return g.Client.Create(ctx, s)
}

func (g *gatedClient) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	cs, err := g.Client.List(ctx, prefix)
	g.mu.Lock()
	hold := g.armed
	g.armed = false
	g.mu.Unlock()
	if hold {
		close(g.listHeld)
		<-g.listRelease
	}
	return cs, err
}

// A slot whose step ended after the plan's list began runs nothing from
// that plan: the list does not know what the step did. Here the list was
// taken while slot 0's start was held, so its plan still asks to start
// slot 0; that start already ran, and must not run again.
func TestNoStepInASlotFromAListOlderThanItsStep(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	g := &gatedClient{Client: f, slot: "-web-0-", createHeld: make(chan struct{}), createRelease: make(chan struct{}),
		listHeld: make(chan struct{}), listRelease: make(chan struct{})}
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2, "parallelism: 2"), ModeAuto)
	h.opts.Client = g
	h.start()
	<-g.createHeld
	select {
	case <-g.listHeld: // slot 1's start ended: a list without slot 0's new container
	case <-time.After(waitLimit):
		t.Fatal("no list while slot 0's start was held")
	}
	close(g.createRelease)
	h.waitFor("slot 0's start to end", func(s Snapshot) bool {
		return slices.ContainsFunc(s.Recent, func(r StepResult) bool { return r.Step.Slot == 0 && r.Step.Action == reconcile.ActStart })
	})
	close(g.listRelease)
	seen := map[string]StepResult{}
	h.drive("the roll", func(s Snapshot) bool {
		for _, r := range s.Recent {
			seen[r.Step.Key()+r.Began.String()] = r
		}
		return s.Steady && running(s, "web:v2") == 2
	})
	starts := 0
	for _, r := range seen {
		if r.Step.Slot == 0 && r.Step.Action == reconcile.ActStart {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("slot 0 was started %d times, want once", starts)
	}
}

// gatedJournal is a journal's disk: a line that block picks waits in its
// Write until release is closed, as on a hung disk; entered is closed as
// the first such write begins to wait.
type gatedJournal struct {
	block   func(e journal.Entry) bool
	fail    func(e journal.Entry) error // nil: no line fails
	entered chan struct{}
	release chan struct{}
	once    sync.Once

	mu    sync.Mutex
	lines []journal.Entry
}

func newGatedJournal(block func(journal.Entry) bool) *gatedJournal {
	return &gatedJournal{block: block, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedJournal) Write(p []byte) (int, error) {
	var e journal.Entry
	if err := json.Unmarshal(p, &e); err != nil {
		return 0, err
	}
	if g.block(e) {
		g.once.Do(func() { close(g.entered) })
		<-g.release
	}
	if g.fail != nil {
		if err := g.fail(e); err != nil {
			return 0, err
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lines = append(g.lines, e)
	return len(p), nil
}

// written are the lines written so far.
func (g *gatedJournal) written() []journal.Entry {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.lines)
}

// auditedClient calls seen at each create and stop, before the engine
// does it.
type auditedClient struct {
	docker.Client
	seen func(call, name string)
}

func (a *auditedClient) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	a.seen("create", s.Name)
	return a.Client.Create(ctx, s)
}

func (a *auditedClient) Stop(ctx context.Context, id string, grace time.Duration) error {
	a.seen("stop", id)
	return a.Client.Stop(ctx, id, grace)
}

// answerLimit is how soon a loop that does not wait on the disk answers
// an intent with a snapshot.
const answerLimit = time.Second

// answers checks that the loop answers: after a Refresh, a new snapshot
// comes within answerLimit. A loop that waits on the disk does not.
func (h *harness) answers(what string) Snapshot {
	h.t.Helper()
	select {
	case snap := <-h.s.Snapshots(): // one published before: not an answer
		h.last = snap
	default:
	}
	h.s.Do(Refresh{})
	select {
	case snap, ok := <-h.s.Snapshots():
		if !ok {
			h.t.Fatalf("%s: the session ended", what)
		}
		h.last = snap
		return snap
	case <-time.After(answerLimit):
		h.t.Fatalf("%s: no snapshot within %s of a refresh: the loop waits", what, answerLimit)
	}
	return Snapshot{}
}

// stallsOnTheDisk checks the session while a write of kind hangs: the loop
// keeps answering, the snapshot says what it waits for, it is not fresh,
// nothing reaches the engine, and once the write is slow a note says so.
func stallsOnTheDisk(t *testing.T, h *harness, kind string, launched *atomic.Int32) {
	t.Helper()
	began := time.Now()
	for time.Since(began) < diskSlowAfter+500*time.Millisecond {
		snap := h.answers(kind + " write hung")
		if !strings.Contains(snap.Waiting, kind+" write pending") || snap.Fresh {
			t.Fatalf("while the %s write hangs: waiting %q, fresh %v; want the write named, not fresh", kind, snap.Waiting, snap.Fresh)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if m := h.fake.Mutations(); len(m) != 0 || launched.Load() != 0 {
		t.Fatalf("while the %s write hangs: %d step(s) launched, mutations %q", kind, launched.Load(), m)
	}
	// The note comes from the disk alarm, which a loaded machine may
	// deliver after the refresh that answers: wait for it, bounded.
	deadline := time.Now().Add(waitLimit)
	for {
		snap := h.answers(kind + " write slow")
		if hasNote(snap, kind+" write pending for") && strings.Contains(snap.Waiting, "pending for") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no word of the slow %s write: waiting %q\n%s", kind, snap.Waiting, describe(snap))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if m := h.fake.Mutations(); len(m) != 0 || launched.Load() != 0 {
		t.Fatalf("while the %s write was slow: %d step(s) launched, mutations %q", kind, launched.Load(), m)
	}
}

// TestNothingRunsWithoutItsJournalLine: the journal's disk hangs, on a
// step's first line or on an operator decision's line. The loop keeps
// answering and says what it waits for, nothing reaches the engine, and
// once the disk lets go the step runs, its first line written before its
// first engine call.
func TestNothingRunsWithoutItsJournalLine(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mode  Mode
		block func(journal.Entry) bool
	}{
		{"the step's first line", ModeAuto, func(e journal.Entry) bool { return e.Result == journal.ResultStarted }},
		{"the approval's line", ModeStep, func(e journal.Entry) bool { return e.Action == "approve" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newEngine()
			gj := newGatedJournal(tt.block)
			defer close(gj.release) // were the test to fail first
			h := newHarness(t, f, clock, desiredYAML("web:v1", 1), tt.mode)
			h.opts.Journal = journal.NewWriter(gj)
			var atCreate []journal.Entry
			h.opts.Client = &auditedClient{Client: f, seen: func(call, _ string) {
				if call == "create" && atCreate == nil {
					atCreate = gj.written()
				}
			}}
			var launched atomic.Int32
			h.opts.OnStep = func(reconcile.Step, time.Time) { launched.Add(1) }
			h.start()
			if tt.mode == ModeStep {
				snap := h.waitFor("the start in the plan", func(s Snapshot) bool {
					return s.Fresh && s.Lock.Held && len(s.Plan.Executable()) == 1
				})
				h.s.Do(ApproveStep{Key: snap.Plan.Executable()[0].Key()})
			}
			select {
			case <-gj.entered:
			case <-time.After(waitLimit):
				t.Fatalf("the blocked line was never written:\n%s", describe(h.last))
			}

			stallsOnTheDisk(t, h, "journal", &launched)

			gj.release <- struct{}{} // the one blocked write goes through
			h.drive("the start", func(s Snapshot) bool { return running(s, "web:v1") == 1 && s.Running == nil })
			started := slices.IndexFunc(atCreate, func(e journal.Entry) bool {
				return e.Result == journal.ResultStarted && e.Action == "start" && e.Workload == "web"
			})
			if started < 0 {
				t.Fatalf("the create ran before the step's first line was written: journal then %+v", atCreate)
			}
			if tt.mode == ModeStep && !slices.ContainsFunc(atCreate[:started], func(e journal.Entry) bool { return e.Action == "approve" }) {
				t.Errorf("the step's line came before its approval's: %+v", atCreate)
			}
			if !hasNote(h.last, "journal write ended after") {
				t.Errorf("no word that the slow write ended:\n%s", describe(h.last))
			}
		})
	}
}

// TestNothingRunsWhileTheHoldsWriteHangs: the holds file's write waits (on
// its lock, held by another rollcall) after an operator rollback put a
// spec on hold. The loop keeps answering and says what it waits for, and
// the rollback's stop does not run; once the write ends, the stop runs,
// with the hold on disk by then.
func TestNothingRunsWhileTheHoldsWriteHangs(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	d, _ := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	r := spec.Resolve(context.Background(), d, f)
	hash := r.Workload("web").Hash
	if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 0)); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	dir := t.TempDir()
	info, _ := notSimulated{f}.Info(context.Background())
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
	h.opts.StateDir = dir
	var heldAtStop []Hold
	h.opts.Client = &auditedClient{Client: notSimulated{f}, seen: func(call, _ string) {
		if call == "stop" && heldAtStop == nil {
			heldAtStop, _ = ListHolds(dir, info, pfx)
			heldAtStop = append(heldAtStop, Hold{}) // not nil: seen
		}
	}}
	var launched atomic.Int32
	h.opts.OnStep = func(reconcile.Step, time.Time) { launched.Add(1) }
	h.start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh && s.Lock.Held })

	// Another rollcall holds the holds file's lock.
	held, release := make(chan struct{}), make(chan struct{})
	other := make(chan error, 1)
	go func() {
		_, err := state.UpdateHoldsFile(state.HoldsPath(dir, info, pfx), state.HoldsLockWait, func(state.Holds) bool {
			close(held)
			<-release
			return false
		})
		other <- err
	}()
	<-held
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	defer letGo()
	h.s.Do(Rollback{Workload: "web"})
	h.waitFor("the hold", func(s Snapshot) bool { return len(s.Holds["web"]) == 1 })

	stallsOnTheDisk(t, h, "holds", &launched)

	letGo()
	if err := <-other; err != nil {
		t.Fatal(err)
	}
	h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
	if heldAtStop == nil {
		t.Fatalf("the rollback's stop never ran: %q", f.Mutations())
	}
	if !slices.ContainsFunc(heldAtStop, func(h Hold) bool { return h.Workload == "web" && h.Hash == hash }) {
		t.Errorf("the stop ran before the hold was written: holds file then %+v", heldAtStop)
	}
}

// TestAStepHeldWhileItsLineIsWrittenDoesNotRun: the operator pauses, or
// turns to watch, while a step's first journal line hangs on the disk.
// Once the line is written the step does not reach the engine, and its
// last line says it never ran.
func TestAStepHeldWhileItsLineIsWrittenDoesNotRun(t *testing.T) {
	for _, tt := range []struct {
		name  string
		do    Intent
		taken func(Snapshot) bool
	}{
		{"paused", Pause{}, func(s Snapshot) bool { return s.Pause != nil }},
		{"watch mode", SetMode{Mode: ModeWatch}, func(s Snapshot) bool { return s.Mode == ModeWatch }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newEngine()
			gj := newGatedJournal(func(e journal.Entry) bool { return e.Result == journal.ResultStarted })
			defer close(gj.release)
			h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
			h.opts.Journal = journal.NewWriter(gj)
			h.start()
			select {
			case <-gj.entered:
			case <-time.After(waitLimit):
				t.Fatalf("the step's first line was never written:\n%s", describe(h.last))
			}
			h.s.Do(tt.do)
			// Released only once a snapshot shows the intent taken: a
			// snapshot published before the loop took it says nothing.
			h.waitFor("the intent taken", tt.taken)
			gj.release <- struct{}{}
			snap := h.waitFor("the step not run", func(s Snapshot) bool { return hasNote(s, "not run") && s.Running == nil })
			h.settle()
			if m := f.Mutations(); len(m) != 0 {
				t.Fatalf("the held step ran: %q", m)
			}
			var results []string
			for _, e := range gj.written() {
				if e.Action == "start" {
					results = append(results, e.Result)
					if e.Result == journal.ResultInterrupted && !strings.Contains(e.Error, "not run") {
						t.Errorf("the last line says %q, want that it never ran", e.Error)
					}
				}
			}
			if !slices.Equal(results, []string{journal.ResultStarted, journal.ResultInterrupted}) {
				t.Errorf("the step's lines %q, want started then interrupted\n%s", results, describe(snap))
			}
			if _, watch := tt.do.(SetMode); watch {
				h.waitFor("the lock let go", func(s Snapshot) bool { return !s.Lock.Held })
			}
		})
	}
}

// TestARetryWhoseLineFailsLiftsNothing: no audit, no action. The retry's
// journal line cannot be written: the session halts, and the hold stands
// in the session and in the holds file.
func TestARetryWhoseLineFailsLiftsNothing(t *testing.T) {
	f, clock := newEngine()
	dir, info, _ := heldWeb(t, f, clock)
	gj := newGatedJournal(func(journal.Entry) bool { return false })
	gj.fail = func(e journal.Entry) error {
		if e.Action == "retry" {
			return errors.New("disk full")
		}
		return nil
	}
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.opts.Journal = journal.NewWriter(gj)
	h.start()
	h.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh && len(s.Holds["web"]) == 1 })
	h.s.Do(Retry{Workload: "web"})
	snap := h.waitFor("the halt", func(s Snapshot) bool { return s.Halted != "" })
	h.settle()
	if !strings.Contains(snap.Halted, "disk full") || len(h.last.Holds["web"]) != 1 {
		t.Errorf("halted %q, holds %v: want the halt and the hold kept", snap.Halted, h.last.Holds)
	}
	if hs, err := ListHolds(dir, info, pfx); err != nil || len(hs) != 1 {
		t.Errorf("holds file %+v %v: the hold was lifted without its line", hs, err)
	}
}

// TestAnEndingSessionGivesUpOnAHungJournal: a session asked to end while
// its journal's disk hangs waits for it a bounded time, then returns,
// and the step whose first line never got written never ran.
func TestAnEndingSessionGivesUpOnAHungJournal(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the ending's slack")
	}
	f, clock := newEngine()
	gj := newGatedJournal(func(e journal.Entry) bool { return e.Result == journal.ResultStarted })
	defer close(gj.release)
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	h.opts.Journal = journal.NewWriter(gj)
	s := New(h.opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	go func() { // a reader, as the console is
		for range s.Snapshots() {
		}
	}()
	select {
	case <-gj.entered:
	case <-time.After(waitLimit):
		t.Fatal("the step's first line was never written")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2*stepFinishSlack + waitLimit):
		t.Fatal("Run did not return while the journal hung")
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Errorf("the step ran without its line: %q", m)
	}
}
