package fake

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Tests of the fake Swarm's rules, each a rule of swarmkit's that rollcall
// relies on (research/swarm.md §1).

const swarmPrefix = "shop"

// swarmTest is a Swarm on a manual clock with the images the tests use.
type swarmTest struct {
	t     *testing.T
	s     *Swarm
	clock *ManualClock
}

func newSwarmTest(t *testing.T, opts SwarmOptions) *swarmTest {
	t.Helper()
	clock := NewManualClock(fakeEpoch)
	opts.Clock = clock
	if opts.Seed == 0 {
		opts.Seed = 7
	}
	s := NewSwarm(opts)
	s.AddImage("web:v1", Behaviour{ReadyAfter: 2 * time.Second})
	s.AddImage("web:v2", Behaviour{ReadyAfter: 2 * time.Second})
	s.AddImage("web:v3", Behaviour{ReadyAfter: 2 * time.Second})
	s.AddImage("web:bad", Behaviour{ReadyAfter: 2 * time.Second, Unhealthy: true})
	s.AddImage("web:never", Behaviour{ReadyAfter: 1000 * time.Hour})
	s.AddImage("web:crashy", Behaviour{ReadyAfter: 2 * time.Second, CrashAfter: 4 * time.Second, ExitCode: 3})
	return &swarmTest{t: t, s: s, clock: clock}
}

// webSpec is the web workload's service: image as its revision label, a
// healthcheck (so a task is STARTING until ReadyAfter), up as its updates.
func webSpec(image string, replicas int, up docker.UpdateConfig) docker.ServiceSpec {
	return docker.ServiceSpec{
		Name: docker.ServiceName(swarmPrefix, "web"),
		Labels: map[string]string{docker.ManagedLabel(swarmPrefix): "true", docker.StackLabel: swarmPrefix,
			docker.WorkloadLabel(swarmPrefix): "web"},
		Task: docker.CreateSpec{
			Image: image,
			Labels: map[string]string{docker.ManagedLabel(swarmPrefix): "true", docker.WorkloadLabel(swarmPrefix): "web",
				docker.SpecLabel(swarmPrefix): image},
			Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second},
		},
		Replicas:     replicas,
		Update:       up,
		EndpointMode: "dnsrr",
	}
}

// stepUpdate is the step trick's settings: one slot, then a day's sleep.
var stepUpdate = docker.UpdateConfig{Parallelism: 1, Delay: 24 * time.Hour, Monitor: 5 * time.Second,
	FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}

func (h *swarmTest) advance(d time.Duration) {
	h.clock.Advance(d)
	h.s.Tick()
}

// create creates spec and lets its tasks become RUNNING.
func (h *swarmTest) create(spec docker.ServiceSpec) string {
	h.t.Helper()
	id, err := h.s.CreateService(testCtx, spec)
	if err != nil {
		h.t.Fatalf("create %s: %v", spec.Name, err)
	}
	h.advance(3 * time.Second)
	return id
}

func (h *swarmTest) service(id string) docker.Service {
	h.t.Helper()
	svcs, err := h.s.Services(testCtx, swarmPrefix)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, v := range svcs {
		if v.ID == id {
			return v
		}
	}
	h.t.Fatalf("service %s is not listed", id)
	return docker.Service{}
}

// update writes the service's spec changed by edit, at its current version.
func (h *swarmTest) update(id string, edit func(*docker.ServiceSpec)) {
	h.t.Helper()
	v := h.service(id)
	spec := v.Spec
	edit(&spec)
	if err := h.s.UpdateService(testCtx, id, v.Version, spec); err != nil {
		h.t.Fatalf("update %s: %v", spec.Name, err)
	}
}

func (h *swarmTest) tasks() []docker.Task {
	h.t.Helper()
	ts, err := h.s.Tasks(testCtx, swarmPrefix)
	if err != nil {
		h.t.Fatal(err)
	}
	return ts
}

// live are the tasks that should run (desired READY or RUNNING).
func (h *swarmTest) live() []docker.Task {
	return slices.DeleteFunc(h.tasks(), func(t docker.Task) bool {
		return t.Desired != docker.TaskRunning && t.Desired != docker.TaskReady
	})
}

// serving are the slots whose task is RUNNING on revision rev.
func (h *swarmTest) serving(rev string) []int {
	var out []int
	for _, t := range h.tasks() {
		if t.Desired == docker.TaskRunning && t.State == docker.TaskRunning && t.Spec == rev {
			out = append(out, t.Slot)
		}
	}
	slices.Sort(out)
	return out
}

func (h *swarmTest) bump(id string) {
	h.t.Helper()
	h.update(id, func(s *docker.ServiceSpec) {
		n := len(s.Labels[docker.StepLabel(swarmPrefix)])
		s.Labels[docker.StepLabel(swarmPrefix)] = strings.Repeat("+", n+1)
	})
}

func toImage(image string) func(*docker.ServiceSpec) {
	return func(s *docker.ServiceSpec) {
		s.Task.Image = image
		s.Task.Labels[docker.SpecLabel(swarmPrefix)] = image
	}
}

// A service's tasks are STARTING until their healthcheck passes, then
// RUNNING (Swarm's RUNNING means healthy), one per slot 1..replicas, spread
// over the nodes.
func TestSwarmTasksAreRunningOnceHealthy(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{Nodes: 3})
	if _, err := h.s.CreateService(testCtx, webSpec("web:v1", 3, docker.UpdateConfig{})); err != nil {
		t.Fatal(err)
	}
	ts := h.tasks()
	nodes := map[string]bool{}
	for i, task := range ts {
		if task.Slot != i+1 || task.State != docker.TaskStarting || task.Desired != docker.TaskRunning || task.ContainerID == "" {
			t.Errorf("task %d right after the create = %+v, want slot %d STARTING", i, task, i+1)
		}
		if task.Workload != "web" || task.Spec != "web:v1" || task.Image != "web:v1" {
			t.Errorf("task %d: workload %q, revision %q, image %q", i, task.Workload, task.Spec, task.Image)
		}
		nodes[task.NodeID] = true
	}
	if len(ts) != 3 || len(nodes) != 3 {
		t.Fatalf("%d tasks on %d nodes, want 3 on 3: %+v", len(ts), len(nodes), ts)
	}
	h.advance(1999 * time.Millisecond)
	if got := h.serving("web:v1"); len(got) != 0 {
		t.Fatalf("slots %v RUNNING before ReadyAfter", got)
	}
	h.advance(time.Millisecond)
	if got := h.serving("web:v1"); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("slots RUNNING at ReadyAfter: %v, want 1 2 3", got)
	}
}

// A spec read back is the spec written, in its normal form.
func TestSwarmSpecReadsBackAsWritten(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	spec := webSpec("web:v1", 2, stepUpdate)
	spec.Rollback = docker.UpdateConfig{Parallelism: 2, FailureAction: docker.FailureContinue, Order: docker.OrderStopFirst}
	spec.Task.Env = []string{"A=1"}
	spec.Task.Networks = []string{"shop_default"}
	spec.Task.Aliases = map[string][]string{"shop_default": {"web"}}
	id := h.create(spec)
	if got := h.service(id).Spec; !reflect.DeepEqual(got, spec) {
		t.Errorf("spec read back:\n%+v\nwritten:\n%+v", got, spec)
	}

	odd := webSpec("web", 1, docker.UpdateConfig{})
	odd.Name = "shop_odd"
	odd.Task.Env = []string{}
	odd.Task.Aliases = map[string][]string{"shop_default": {}}
	odd.Task.Networks = []string{"shop_default"}
	oddID := h.create(odd)
	got := h.service(oddID).Spec
	if got.Task.Image != "web:latest" || got.Task.Env != nil || got.Task.Aliases != nil {
		t.Errorf("normal form: image %q, env %#v, aliases %#v; want web:latest, nil, nil", got.Task.Image, got.Task.Env, got.Task.Aliases)
	}
}

// A name in use is ErrConflict; a service that is not there is
// ErrNotFound; a removed service takes its tasks with it.
func TestSwarmServiceLifecycle(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{}))
	if _, err := h.s.CreateService(testCtx, webSpec("web:v2", 1, docker.UpdateConfig{})); !errors.Is(err, docker.ErrConflict) {
		t.Fatalf("a second create of shop_web: %v, want ErrConflict", err)
	}
	if err := h.s.RemoveService(testCtx, id); err != nil {
		t.Fatal(err)
	}
	if svcs, _ := h.s.Services(testCtx, swarmPrefix); len(svcs) != 0 || len(h.tasks()) != 0 {
		t.Fatalf("after the remove: services %+v, tasks %+v", svcs, h.tasks())
	}
	if err := h.s.RemoveService(testCtx, id); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("a second remove: %v, want ErrNotFound", err)
	}
	if err := h.s.UpdateService(testCtx, id, 1, webSpec("web:v1", 1, docker.UpdateConfig{})); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("an update of a removed service: %v, want ErrNotFound", err)
	}
}

// A spec that a swarm cannot run is refused, and nothing is created.
func TestSwarmRefusesWhatSwarmCannotRun(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	spec := webSpec("web:v1", 1, docker.UpdateConfig{})
	spec.Task.Options.Privileged = true
	_, err := h.s.CreateService(testCtx, spec)
	var se *docker.SpecError
	if !errors.As(err, &se) || se.Problems[0].Option != "privileged" {
		t.Fatalf("create of a privileged task: %v, want a SpecError on privileged", err)
	}
	if svcs, _ := h.s.Services(testCtx, swarmPrefix); len(svcs) != 0 {
		t.Fatalf("refused create made %v", svcs)
	}
}

// Every write of a service gives it a new version, the updater's own
// status writes too; a write naming an older one is ErrOutOfSequence and
// changes nothing.
func TestSwarmStaleVersionIsOutOfSequence(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{}))
	before := h.service(id)
	h.update(id, toImage("web:v2"))
	writing := h.service(id) // the write, then the updater's "update in progress"
	if writing.Version <= before.Version || writing.UpdateState != docker.UpdateUpdating {
		t.Fatalf("after the write: version %d (was %d), state %q", writing.Version, before.Version, writing.UpdateState)
	}
	h.advance(time.Minute) // the updater marks it completed: another write
	done := h.service(id)
	if done.UpdateState != docker.UpdateCompleted || done.Version <= writing.Version {
		t.Fatalf("after the roll: state %q, version %d (was %d)", done.UpdateState, done.Version, writing.Version)
	}
	for _, stale := range []uint64{before.Version, writing.Version} {
		spec := done.Spec
		toImage("web:v3")(&spec)
		err := h.s.UpdateService(testCtx, id, stale, spec)
		if !errors.Is(err, docker.ErrOutOfSequence) {
			t.Fatalf("write at stale version %d: %v, want ErrOutOfSequence", stale, err)
		}
	}
	if got := h.service(id); got.Version != done.Version || got.Spec.Task.Image != "web:v2" {
		t.Fatalf("a refused write changed the service: version %d, image %s", got.Version, got.Spec.Task.Image)
	}
	if err := h.s.UpdateService(testCtx, id, done.Version, done.Spec); err != nil {
		t.Fatalf("write at the current version: %v", err)
	}
}

// A write keeps the spec before it as PreviousSpec, one level deep.
func TestSwarmWriteKeepsPreviousSpec(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 1, docker.UpdateConfig{}))
	if p := h.service(id).PreviousSpec; p != nil {
		t.Fatalf("a new service has PreviousSpec %+v", p)
	}
	h.update(id, toImage("web:v2"))
	h.update(id, toImage("web:v3"))
	v := h.service(id)
	if v.PreviousSpec == nil || v.PreviousSpec.Task.Image != "web:v2" {
		t.Fatalf("PreviousSpec after v1 → v2 → v3 = %+v, want the v2 spec", v.PreviousSpec)
	}
}

// Dirty slots are updated in a random order fixed by the seed: not slot
// order, the same under one seed, another under another.
func TestSwarmUpdateOrderIsSeeded(t *testing.T) {
	order := func(seed int64) []int {
		h := newSwarmTest(t, SwarmOptions{Seed: seed})
		id := h.create(webSpec("web:v1", 5, docker.UpdateConfig{Parallelism: 1, FailureAction: docker.FailurePause, Order: docker.OrderStopFirst}))
		h.update(id, toImage("web:v2"))
		var got []int
		for range 5 {
			for _, task := range h.live() {
				if task.Spec == "web:v2" && !slices.Contains(got, task.Slot) {
					got = append(got, task.Slot)
				}
			}
			h.advance(2 * time.Second)
		}
		return got
	}
	a, b := order(7), order(7)
	if !slices.Equal(a, b) || len(a) != 5 {
		t.Fatalf("one seed, two orders: %v and %v", a, b)
	}
	orders := map[string]bool{fmt.Sprint(a): true}
	for seed := int64(1); seed <= 6; seed++ {
		orders[fmt.Sprint(order(seed))] = true
	}
	if len(orders) < 3 || orders["[1 2 3 4 5]"] && len(orders) == 1 {
		t.Fatalf("seven seeds gave the orders %v: want them to differ", orders)
	}
}

// Parallelism workers each take one slot at a time: at most that many new
// tasks are on their way at once; 0 takes all the dirty slots at once.
func TestSwarmParallelism(t *testing.T) {
	for _, tt := range []struct{ parallelism, want int }{{1, 1}, {2, 2}, {0, 4}} {
		t.Run(fmt.Sprint(tt.parallelism), func(t *testing.T) {
			h := newSwarmTest(t, SwarmOptions{})
			id := h.create(webSpec("web:v1", 4, docker.UpdateConfig{Parallelism: tt.parallelism,
				FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
			h.update(id, toImage("web:v2"))
			most := 0
			for range 8 {
				starting := 0
				for _, task := range h.live() {
					if task.Spec == "web:v2" && task.State == docker.TaskStarting {
						starting++
					}
				}
				most = max(most, starting)
				h.advance(time.Second)
			}
			if most != tt.want {
				t.Fatalf("at most %d new tasks starting at once, want %d", most, tt.want)
			}
			if got := h.serving("web:v2"); len(got) != 4 {
				t.Fatalf("slots on v2 after the roll: %v", got)
			}
		})
	}
}

// Start-first runs the new task beside the old until it is RUNNING, then
// shuts the old down; stop-first shuts the old down first.
func TestSwarmUpdateOrder(t *testing.T) {
	for _, order := range []string{docker.OrderStartFirst, docker.OrderStopFirst} {
		t.Run(order, func(t *testing.T) {
			h := newSwarmTest(t, SwarmOptions{})
			id := h.create(webSpec("web:v1", 1, docker.UpdateConfig{Parallelism: 1, FailureAction: docker.FailurePause, Order: order}))
			h.update(id, toImage("web:v2"))
			oldRuns := slices.Equal(h.serving("web:v1"), []int{1})
			if want := order == docker.OrderStartFirst; oldRuns != want {
				t.Fatalf("while the new task starts, the old one runs: %v, want %v (tasks %+v)", oldRuns, want, h.tasks())
			}
			h.advance(2 * time.Second)
			if v1, v2 := h.serving("web:v1"), h.serving("web:v2"); len(v1) != 0 || !slices.Equal(v2, []int{1}) {
				t.Fatalf("once the new one is RUNNING: v1 in %v, v2 in %v; want the new alone", v1, v2)
			}
		})
	}
}

// After each slot a worker sleeps Delay before it takes the next.
func TestSwarmUpdateDelay(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{Parallelism: 1, Delay: 10 * time.Second,
		FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:v2"))
	h.advance(2 * time.Second) // the first slot is RUNNING: the worker sleeps from here
	h.advance(9 * time.Second)
	if got := h.serving("web:v2"); len(got) != 1 || len(h.live()) != 2 {
		t.Fatalf("within the delay: v2 in %v, live %+v; want one slot, nothing started", got, h.live())
	}
	h.advance(time.Second)
	if len(h.live()) != 3 {
		t.Fatalf("at the delay's end the next slot's task is not made: %+v", h.live())
	}
}

// The step trick (DESIGN §13): with Parallelism 1 and a long Delay, one
// slot updates, and each write outside the task template (StepLabel)
// cancels the sleeping updater, whose successor updates exactly one more
// slot, and sleeps again.
func TestSwarmStepLabelAdvancesExactlyOneSlot(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{Nodes: 2})
	id := h.create(webSpec("web:v1", 4, stepUpdate))
	h.update(id, toImage("web:v2"))
	for step := 1; step <= 4; step++ {
		h.advance(time.Minute) // well past RUNNING and the Monitor, far short of the Delay
		if got := h.serving("web:v2"); len(got) != step {
			t.Fatalf("step %d: slots on v2 %v, want %d", step, got, step)
		}
		if v1 := h.serving("web:v1"); len(v1) != 4-step {
			t.Fatalf("step %d: slots on v1 %v, want %d", step, v1, 4-step)
		}
		if st := h.service(id).UpdateState; st != docker.UpdateUpdating {
			t.Fatalf("step %d: update state %q, want updating (the updater sleeps its Delay)", step, st)
		}
		h.advance(12 * time.Hour)
		if got := h.serving("web:v2"); len(got) != step {
			t.Fatalf("step %d, half a Delay later: slots on v2 %v, want still %d", step, got, step)
		}
		if step < 4 {
			h.bump(id)
		}
	}
}

// A step written before the previous step's task is RUNNING costs the
// start-first overlap: the new updater finds two tasks in the slot, keeps
// the new one and shuts the old down at once (why rollcall gates an
// approval on RUNNING).
func TestSwarmEarlyStepCostsTheOverlap(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 1, stepUpdate))
	h.update(id, toImage("web:v2"))
	h.advance(time.Second) // the new task is STARTING, the old one serves
	if got := h.serving("web:v1"); len(got) != 1 {
		t.Fatalf("before the early step: v1 serves in %v", got)
	}
	h.bump(id)
	if v1, v2 := h.serving("web:v1"), h.serving("web:v2"); len(v1) != 0 || len(v2) != 0 {
		t.Fatalf("after the early step: v1 in %v, v2 in %v; want the slot serving nothing until v2 is healthy", v1, v2)
	}
	h.advance(time.Second)
	if got := h.serving("web:v2"); len(got) != 1 {
		t.Fatalf("once healthy: v2 in %v", got)
	}
}

// A write of the very same spec keeps a running updater (it works towards
// that goal already), but clears the update status, so the update is
// never marked completed.
func TestSwarmSameSpecKeepsTheUpdater(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 3, stepUpdate))
	h.update(id, toImage("web:v2"))
	h.advance(time.Minute)
	h.update(id, func(*docker.ServiceSpec) {})
	h.advance(time.Minute)
	if got := h.serving("web:v2"); len(got) != 1 {
		t.Fatalf("after a write of the same spec: v2 in %v, want the one slot (the updater sleeps on)", got)
	}
	h.advance(72 * time.Hour)
	v := h.service(id)
	if got := h.serving("web:v2"); len(got) != 3 || v.UpdateState != docker.UpdateNone {
		t.Fatalf("after the delays: v2 in %v, state %q; want all three, and no status", got, v.UpdateState)
	}
}

// A new task that fails within Monitor pauses the update (FailureAction
// pause): UpdatePaused with Swarm's message, and no further slot.
func TestSwarmFailurePauses(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 3, docker.UpdateConfig{Parallelism: 1, Monitor: 10 * time.Second,
		FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:crashy")) // RUNNING at 2s, exits 3 at 4s: within the Monitor
	h.advance(time.Minute)
	v := h.service(id)
	if v.UpdateState != docker.UpdatePaused || !strings.HasPrefix(v.UpdateMessage, "update paused due to failure") {
		t.Fatalf("update state %q (%q), want paused", v.UpdateState, v.UpdateMessage)
	}
	crashy := map[int]bool{}
	for _, task := range h.tasks() {
		if task.Spec == "web:crashy" {
			crashy[task.Slot] = true
		}
	}
	if len(crashy) != 2 {
		// The second slot was handed out when the first was RUNNING (no
		// Delay), before its crash: two slots at most.
		t.Fatalf("slots that got the failing image: %v, want the two the updater reached before the crash", crashy)
	}
	if got := h.serving("web:v1"); len(got) != 1 {
		t.Fatalf("slots left on v1: %v, want one", got)
	}
}

// A crash after Monitor does not count, though the updater still runs:
// the update goes on to the next slot and completes.
func TestSwarmFailureAfterMonitorDoesNotCount(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{Parallelism: 1, Delay: 10 * time.Second, Monitor: time.Second,
		FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:crashy")) // the first slot RUNNING at 2s, crashed at 4s: 2s after, past the 1s Monitor
	h.advance(5 * time.Second)
	if st := h.service(id).UpdateState; st != docker.UpdateUpdating {
		t.Fatalf("state %q after the crash, in the Delay: want still updating", st)
	}
	h.advance(time.Minute)
	slots := map[int]bool{}
	for _, task := range h.tasks() {
		if task.Spec == "web:crashy" {
			slots[task.Slot] = true
		}
	}
	if st := h.service(id).UpdateState; st != docker.UpdateCompleted || len(slots) != 2 {
		t.Fatalf("state %q, slots reached %v; want completed, both", st, slots)
	}
}

// FailureAction continue ignores failures: every slot is updated.
func TestSwarmFailureContinues(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 3, docker.UpdateConfig{Parallelism: 1,
		FailureAction: docker.FailureContinue, Order: docker.OrderStopFirst}))
	h.update(id, toImage("web:bad"))
	h.advance(time.Minute)
	slots := map[int]bool{}
	for _, task := range h.tasks() {
		if task.Spec == "web:bad" {
			slots[task.Slot] = true
		}
	}
	if len(slots) != 3 || h.service(id).UpdateState != docker.UpdateCompleted {
		t.Fatalf("slots on the bad image %v, state %q; want all three, completed", slots, h.service(id).UpdateState)
	}
}

// FailureAction rollback restores PreviousSpec (and drops it), rolls the
// slots back with the Rollback settings, and marks the rollback completed.
func TestSwarmFailureRollsBack(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	spec := webSpec("web:v1", 3, docker.UpdateConfig{Parallelism: 1, FailureAction: docker.FailureRollback, Order: docker.OrderStartFirst})
	spec.Rollback = docker.UpdateConfig{Parallelism: 0, FailureAction: docker.FailurePause, Order: docker.OrderStopFirst}
	id := h.create(spec)
	h.update(id, toImage("web:bad"))
	h.advance(2 * time.Second) // the first bad task fails its healthcheck
	v := h.service(id)
	if v.UpdateState != docker.UpdateRollbackStarted || v.Spec.Task.Image != "web:v1" || v.PreviousSpec != nil {
		t.Fatalf("after the failure: state %q, image %s, previous %v; want rollback_started, v1, none",
			v.UpdateState, v.Spec.Task.Image, v.PreviousSpec)
	}
	h.advance(time.Minute)
	v = h.service(id)
	if v.UpdateState != docker.UpdateRollbackCompleted || !slices.Equal(h.serving("web:v1"), []int{1, 2, 3}) {
		t.Fatalf("after the rollback: state %q, v1 in %v", v.UpdateState, h.serving("web:v1"))
	}
}

// A write after a pause resumes the update on the slots still dirty; the
// ones already updated stay.
func TestSwarmWriteResumesAPausedUpdate(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 3, docker.UpdateConfig{Parallelism: 1, Delay: 5 * time.Second,
		FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:v2"))
	h.advance(3 * time.Second)
	h.s.AddImage("web:v2", Behaviour{ReadyAfter: 2 * time.Second, Unhealthy: true}) // the next start of v2 fails
	h.advance(time.Minute)
	if st := h.service(id).UpdateState; st != docker.UpdatePaused {
		t.Fatalf("state %q, want paused", st)
	}
	updated := h.serving("web:v2")
	h.s.AddImage("web:v2", Behaviour{ReadyAfter: 2 * time.Second})
	h.update(id, func(*docker.ServiceSpec) {}) // docker service update with no flags
	h.advance(time.Minute)
	if got := h.serving("web:v2"); len(got) != 3 || !slices.Contains(got, updated[0]) {
		t.Fatalf("after the resume: v2 in %v (before: %v), want all three", got, updated)
	}
}

// A crashed task is replaced in its slot, after RestartDelay, on the
// service's current spec, even while the update is paused (swarmkit#2242).
func TestSwarmCrashIsReplacedOnTheCurrentSpec(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 3, docker.UpdateConfig{Parallelism: 1, FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:bad"))
	h.advance(3 * time.Second)
	if st := h.service(id).UpdateState; st != docker.UpdatePaused {
		t.Fatalf("state %q, want paused", st)
	}
	v1 := h.serving("web:v1")
	var victim docker.Task
	for _, task := range h.tasks() {
		if task.Slot == v1[0] && task.State == docker.TaskRunning {
			victim = task
		}
	}
	if err := h.s.CrashTask(victim.ID, 1); err != nil {
		t.Fatal(err)
	}
	var replacement docker.Task
	for _, task := range h.live() {
		if task.Slot == victim.Slot && task.ID != victim.ID {
			replacement = task
		}
	}
	if replacement.Spec != "web:bad" || replacement.Desired != docker.TaskReady {
		t.Fatalf("replacement of the crashed v1 task = %+v, want a READY task on the current spec (web:bad)", replacement)
	}
	h.advance(4999 * time.Millisecond)
	if st := h.task(replacement.ID).State; st != docker.TaskReady {
		t.Fatalf("replacement before RestartDelay: %s", st)
	}
	h.advance(time.Millisecond)
	if st := h.task(replacement.ID).State; st != docker.TaskStarting {
		t.Fatalf("replacement at RestartDelay: %s, want starting", st)
	}
}

func (h *swarmTest) task(id string) docker.Task {
	h.t.Helper()
	for _, task := range h.tasks() {
		if task.ID == id {
			return task
		}
	}
	h.t.Fatalf("task %s is gone", id)
	return docker.Task{}
}

// Restart policy no: a crashed task is not replaced.
func TestSwarmRestartPolicyNo(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	spec := webSpec("web:v1", 1, docker.UpdateConfig{})
	spec.Restart = docker.SwarmRestart{Condition: docker.RestartNone}
	h.create(spec)
	task := h.tasks()[0]
	if err := h.s.CrashTask(task.ID, 1); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Minute)
	if live := h.live(); len(live) != 0 {
		t.Fatalf("a crashed task with restart no was replaced: %+v", live)
	}
}

// A replica count changed adds slots (the lowest free, on the current
// spec) or removes some, and touches no other task.
func TestSwarmScaleTouchesNoOtherSlot(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{}))
	before := h.tasks()
	h.update(id, func(s *docker.ServiceSpec) { s.Replicas = 4 })
	h.advance(3 * time.Second)
	after := h.tasks()
	if len(after) != 4 || after[0] != before[0] || after[1] != before[1] || after[2].Slot != 3 || after[3].Slot != 4 {
		t.Fatalf("scale 2 → 4: tasks %+v (were %+v)", after, before)
	}
	h.update(id, func(s *docker.ServiceSpec) { s.Replicas = 1 })
	kept := h.live()
	if len(kept) != 1 || kept[0] != after[0] {
		t.Fatalf("scale 4 → 1: live %+v, want slot 1's task as it was", kept)
	}
	if st := h.service(id).UpdateState; st != docker.UpdateNone {
		t.Fatalf("a scale started an update: %q", st)
	}
}

// A node that goes down keeps its tasks as last seen; they are replaced on
// the other nodes after RestartDelay, orphaned after OrphanAfter, and shut
// down when the node comes back.
func TestSwarmNodeDown(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{Nodes: 2, OrphanAfter: time.Hour})
	h.create(webSpec("web:v1", 2, docker.UpdateConfig{}))
	nodes, _ := h.s.Nodes(testCtx)
	lost := nodes[1].ID
	var gone docker.Task
	for _, task := range h.tasks() {
		if task.NodeID == lost {
			gone = task
		}
	}
	if err := h.s.SetNodeDown(lost); err != nil {
		t.Fatal(err)
	}
	if got := h.task(gone.ID); got.State != docker.TaskRunning || got.Desired != docker.TaskShutdown {
		t.Fatalf("the down node's task = %+v, want RUNNING as last seen, desired shutdown", got)
	}
	h.advance(8 * time.Second)
	for _, task := range h.live() {
		if task.NodeID == lost || task.State != docker.TaskRunning {
			t.Fatalf("after RestartDelay and ReadyAfter: %+v, want both slots running on the node left", task)
		}
	}
	h.advance(time.Hour)
	if got := h.task(gone.ID); got.State != docker.TaskOrphaned {
		t.Fatalf("after OrphanAfter the down node's task is %s, want orphaned", got.State)
	}
	if ns, _ := h.s.Nodes(testCtx); ns[1].State != docker.NodeDown {
		t.Fatalf("node state %q, want down", ns[1].State)
	}
}

// With no node to run on, a task waits pending, and runs once a node joins.
func TestSwarmTaskWaitsForANode(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	nodes, _ := h.s.Nodes(testCtx)
	if err := h.s.SetNodeDown(nodes[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.CreateService(testCtx, webSpec("web:v1", 1, docker.UpdateConfig{})); err != nil {
		t.Fatal(err)
	}
	if task := h.tasks()[0]; task.State != docker.TaskPending || task.NodeID != "" {
		t.Fatalf("task with every node down = %+v, want pending", task)
	}
	h.s.AddNode("spare")
	h.advance(2 * time.Second)
	if got := h.serving("web:v1"); len(got) != 1 {
		t.Fatalf("after a node joined: %+v", h.tasks())
	}
}

// A new task that never turns healthy holds its worker for good: Swarm's
// updater has no timeout.
func TestSwarmUpdaterWaitsForeverOnAStartingTask(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 2, docker.UpdateConfig{Parallelism: 1, FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
	h.update(id, toImage("web:never"))
	h.advance(100 * time.Hour)
	if st := h.service(id).UpdateState; st != docker.UpdateUpdating || len(h.serving("web:v1")) != 2 || len(h.live()) != 3 {
		t.Fatalf("after 100h: state %q, v1 in %v, live %d; want updating, both old, one new starting",
			st, h.serving("web:v1"), len(h.live()))
	}
}

// An image the swarm lacks is rejected at once.
func TestSwarmUnknownImageIsRejected(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{RestartDelay: time.Hour})
	if _, err := h.s.CreateService(testCtx, webSpec("web:nowhere", 1, docker.UpdateConfig{})); err != nil {
		t.Fatal(err)
	}
	if task := h.tasks()[0]; task.State != docker.TaskRejected || task.Err == "" {
		t.Fatalf("task of an unknown image = %+v, want rejected with an error", task)
	}
}

// An injected failure fails the call and changes nothing.
func TestSwarmInjectedFailures(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{})
	id := h.create(webSpec("web:v1", 1, docker.UpdateConfig{}))
	h.s.FailNext("UpdateService", nil)
	v := h.service(id)
	spec := v.Spec
	toImage("web:v2")(&spec)
	if err := h.s.UpdateService(testCtx, id, v.Version, spec); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected update: %v", err)
	}
	if got := h.service(id); got.Version != v.Version || got.Spec.Task.Image != "web:v1" {
		t.Fatalf("a failed update changed the service: %+v", got)
	}
	h.s.FailCall("Tasks", 1)
	if _, err := h.s.Tasks(testCtx, swarmPrefix); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected tasks: %v", err)
	}
	calls := h.s.Calls()
	if !slices.Contains(calls, "updateservice:shop_web!fail") || !slices.Contains(calls, "tasks:shop!fail") {
		t.Fatalf("calls %q", calls)
	}
	if m := h.s.Mutations(); !slices.Contains(m, "createservice:shop_web") || slices.Contains(m, "tasks:shop!fail") {
		t.Fatalf("mutations %q", m)
	}
}

// A swarm that is not managed here says ErrNotManager.
func TestSwarmNotManager(t *testing.T) {
	h := newSwarmTest(t, SwarmOptions{NotManager: true})
	if _, err := h.s.SwarmInfo(testCtx); !errors.Is(err, docker.ErrNotManager) {
		t.Fatalf("SwarmInfo: %v, want ErrNotManager", err)
	}
	h = newSwarmTest(t, SwarmOptions{Nodes: 3})
	info, err := h.s.SwarmInfo(testCtx)
	if err != nil || info.ClusterID == "" || info.Nodes != 3 || info.Managers != 1 {
		t.Fatalf("SwarmInfo = %+v, %v", info, err)
	}
}

// Given one seed, clock and calls, two swarms are the same: IDs, order.
func TestSwarmIsDeterministic(t *testing.T) {
	run := func() []docker.Task {
		h := newSwarmTest(t, SwarmOptions{Nodes: 2})
		id := h.create(webSpec("web:v1", 4, docker.UpdateConfig{Parallelism: 2, FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}))
		h.update(id, toImage("web:v2"))
		h.advance(3 * time.Second)
		return h.tasks()
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
	}
}
