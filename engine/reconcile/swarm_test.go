package reconcile

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// only returns the plan's one step, failing unless it holds exactly one
// executable step of action a.
func only(t *testing.T, p Plan, a Action) Step {
	t.Helper()
	ex := p.Executable()
	if len(ex) != 1 || ex[0].Action != a {
		t.Fatalf("want one %s step, got %q\n%s", a, briefs(p), p)
	}
	if ex[0].Service == nil {
		t.Fatalf("%s step without its service", a)
	}
	return ex[0]
}

func wantWords(t *testing.T, got string, parts ...string) {
	t.Helper()
	for _, part := range parts {
		if !strings.Contains(got, part) {
			t.Errorf("words %q lack %q", got, part)
		}
	}
}

func noExecutable(t *testing.T, p Plan) {
	t.Helper()
	if ex := p.Executable(); len(ex) > 0 {
		t.Fatalf("want nothing to run, got %q\n%s", briefs(p), p)
	}
}

// TestServiceSpecFor: the service of a workload (DESIGN §13): its name,
// labels, task template without anything of one slot, replicas, the
// file's update settings mapped to Swarm's, and dnsrr.
func TestServiceSpecFor(t *testing.T) {
	w := workload("web", 3, func(w *spec.Workload) {
		w.Options.Hostname = "web"
		w.Mounts = []spec.Mount{{Type: spec.MountVolume, Target: "/data", ReadOnly: true}} // read-only: no stop-first
		w.Update.Delay = 5 * time.Second
		w.Update.HealthDeadline = 90 * time.Second
		w.Update.Parallelism = 2
	})
	r := &resolved(w).Workloads[0]
	s := ServiceSpecFor(pfx, r)
	if s.Name != "rollcall_web" || s.Replicas != 3 || s.EndpointMode != "dnsrr" {
		t.Fatalf("name %q replicas %d endpoint %q", s.Name, s.Replicas, s.EndpointMode)
	}
	for k, v := range map[string]string{docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): "web", docker.StackLabel: pfx, docker.StepLabel(pfx): "0"} {
		if s.Labels[k] != v {
			t.Errorf("service label %s = %q, want %q", k, s.Labels[k], v)
		}
	}
	l := s.Task.Labels
	if l[docker.SpecLabel(pfx)] != r.Hash || l[docker.WorkloadLabel(pfx)] != "web" || l[docker.VersionLabel(pfx)] != "2" {
		t.Errorf("template labels %v: want the spec hash, workload and version", l)
	}
	for _, k := range []string{docker.SlotLabel(pfx), docker.ManagedLabel(pfx)} {
		if _, ok := l[k]; ok {
			t.Errorf("template carries %s: a slot's, or one a host's rollcall would take for an orphan", k)
		}
	}
	if s.Task.Name != "" || s.Task.Options.Hostname != "web-{{.Task.Slot}}" {
		t.Errorf("template name %q hostname %q: want none, and Swarm's slot placeholder", s.Task.Name, s.Task.Options.Hostname)
	}
	if len(s.Task.Mounts) != 1 || s.Task.Mounts[0].Source != "rollcall_web_{{.Task.Slot}}_data" {
		t.Errorf("mounts %+v: a slot's own volume by Swarm's placeholder", s.Task.Mounts)
	}
	want := docker.UpdateConfig{Parallelism: 2, Delay: 5 * time.Second, Monitor: 90 * time.Second, FailureAction: "pause", Order: "start-first"}
	if s.Update != want {
		t.Errorf("update %+v, want %+v", s.Update, want)
	}
	for _, c := range []struct{ file, swarm string }{{spec.FailurePause, "pause"}, {spec.FailureRollback, "pause"}, {spec.FailureContinue, "continue"}} {
		w.Update.FailureAction = c.file
		if got := UpdateConfigFor(&resolved(w).Workloads[0]).FailureAction; got != c.swarm {
			t.Errorf("failure_action %s: Swarm's %q, want %q (rollcall rolls back to its own revisions, never Swarm's)", c.file, got, c.swarm)
		}
	}
	w.Update.Strategy = spec.StrategyBlueGreen
	if got := UpdateConfigFor(&resolved(w).Workloads[0]).Parallelism; got != 0 {
		t.Errorf("blue-green: parallelism %d, want 0 (every slot at once)", got)
	}
	if p := PacedUpdateConfig(r); p.Parallelism != 1 || p.Delay != PacedDelay || p.Monitor != 90*time.Second {
		t.Errorf("paced %+v: want parallelism 1, delay PacedDelay, the file's monitor", p)
	}
}

// TestSwarmCreate (S1): a desired workload with no service is created,
// its slots 1..N start on the desired spec with nothing old beside them.
func TestSwarmCreate(t *testing.T) {
	d := v2d()
	p := DiffSwarm(d, swarmObserved(nil))
	s := only(t, p, ActCreate)
	if s.Downtime || s.Service.ID != "" || s.Why.Kind != ReasonSwarmCreate {
		t.Errorf("create %+v", s)
	}
	want := ServiceSpecFor(pfx, d.Workload("web"))
	if s.Service.Spec.Name != want.Name || s.Service.Spec.Task.Labels[docker.SpecLabel(pfx)] != d.Workload("web").Hash || s.Service.Spec.Replicas != 3 {
		t.Errorf("created spec %+v", s.Service.Spec)
	}
	wantWords(t, s.Reason, "3 slots start on the desired spec", "no downtime")
	var nums []int
	for _, st := range p.Slots {
		if !st.Desired || len(st.Containers) > 0 {
			t.Errorf("slot %+v: want desired, empty", st)
		}
		nums = append(nums, st.Slot)
	}
	if !slices.Equal(nums, []int{1, 2, 3}) {
		t.Errorf("slots %v: want Swarm's 1, 2, 3", nums)
	}
	if cold := DiffSwarm(resolved(workload("web", 0)), swarmObserved(nil)); !cold.Empty() {
		t.Errorf("replicas 0 and no service: want nothing, got %s", cold)
	}
}

// TestSwarmRemove (S2): a managed service whose workload is gone is
// removed (extra); so is a second service of one workload.
func TestSwarmRemove(t *testing.T) {
	d := v2d()
	cur := service(d, "web")
	p := DiffSwarm(resolved(), swarmObserved([]docker.Service{cur}, tasks(cur, 2, docker.TaskRunning)))
	s := only(t, p, ActRemove)
	if s.Service.ID != "svc-web" || s.Why.Kind != ReasonExtra {
		t.Errorf("remove %+v", s)
	}
	for _, st := range p.Slots {
		if st.Desired || st.Containers[0].Relation != RelExtra {
			t.Errorf("slot %+v: want an extra's", st)
		}
	}
	dup := service(d, "web", func(s *docker.Service) {
		s.ID, s.Spec.Name, s.CreatedAt = "svc-dup", "rollcall_web2", t0.Add(-2*time.Hour)
	})
	p = DiffSwarm(d, swarmObserved([]docker.Service{dup, cur}, tasks(cur, 3, docker.TaskRunning)))
	s = only(t, p, ActRemove)
	if s.Service.ID != "svc-dup" || s.Why.Kind != ReasonSwarmDuplicate || s.Why.Serving != "rollcall_web" {
		t.Errorf("duplicate: %+v; want the one not of the workload's name removed, older though it is", s)
	}
}

// TestSwarmScale (S8): only the replicas differ: a scale in place, and
// its reason says Swarm takes the lowest free slots, or chooses the
// tasks that go.
func TestSwarmScale(t *testing.T) {
	d := v2d()
	up := service(d, "web", replicas(2))
	p := DiffSwarm(d, swarmObserved([]docker.Service{up}, tasks(up, 2, docker.TaskRunning)))
	s := only(t, p, ActScale)
	if s.Downtime || s.Service.Spec.Replicas != 3 || s.Service.Spec.Task.Labels[docker.SpecLabel(pfx)] != up.Spec.Task.Labels[docker.SpecLabel(pfx)] {
		t.Errorf("scale up %+v: replicas 3, the same template", s.Service.Spec)
	}
	wantWords(t, s.Reason, "replicas 2 → 3 in place", "no task replaced", "lowest free slots")

	down := service(d, "web", replicas(4))
	p = DiffSwarm(d, swarmObserved([]docker.Service{down}, tasks(down, 4, docker.TaskRunning)))
	s = only(t, p, ActScale)
	wantWords(t, s.Reason, "replicas 4 → 3", "Swarm chooses which tasks go")
	if st, _ := p.Slot("web", 4); st.Desired || st.Containers[0].Relation != RelSurplus {
		t.Errorf("slot 4 %+v: want surplus", st)
	}
}

// TestSwarmRolloutAuto (S4, unpaced): a new template is ONE write of the
// whole spec with the file's settings, at the version read, the next
// step counter; stop-first says its downtime.
func TestSwarmRolloutAuto(t *testing.T) {
	d1, d2 := v1d(), v2d()
	old := service(d2, "web", withTemplate(d1, "web"))
	p := DiffSwarm(d2, swarmObserved([]docker.Service{old}, tasks(old, 3, docker.TaskRunning)))
	s := only(t, p, ActRollout)
	if s.Service.ID != "svc-web" || s.Service.Version != 10 || s.Service.Counter() != "4" || s.Downtime {
		t.Errorf("rollout %+v: want the version read (10), counter 4, no downtime", s.Service)
	}
	if s.Service.Spec.Update != UpdateConfigFor(d2.Workload("web")) || s.Service.Spec.Task.Labels[docker.SpecLabel(pfx)] != d2.Workload("web").Hash {
		t.Errorf("rollout writes %+v", s.Service.Spec)
	}
	wantWords(t, s.Reason, "Swarm rolls 3 slots, parallelism 1, start-first", "image web:v1 → web:v2")
	if len(p.Steps()) != 1 {
		t.Errorf("steps %q: one write, no slot waits beside it", briefs(p))
	}
	if st, _ := p.Slot("web", 1); st.Containers[0].Relation != RelStale || !st.Containers[0].Serves {
		t.Errorf("slot 1 %+v: the old task is stale and serves", st)
	}

	d1s, d2s := v1d(stopFirst), v2d(stopFirst)
	old = service(d2s, "web", withTemplate(d1s, "web"))
	s = only(t, DiffSwarm(d2s, swarmObserved([]docker.Service{old}, tasks(old, 3, docker.TaskRunning))), ActRollout)
	if !s.Downtime {
		t.Error("stop-first rollout: want Downtime (rule 8a: the console asks)")
	}
	wantWords(t, s.Reason, "stop-first: each slot down until its new task is RUNNING")
}

// TestSwarmRollback (S4): rollcall's rollback is a roll forward to the
// stored revision, put in place of the desired spec: planned as any
// rollout, never with Swarm's PreviousSpec.
func TestSwarmRollback(t *testing.T) {
	d1, d2 := v1d(), v2d()
	newer := service(d1, "web", withTemplate(d2, "web"))
	ts := tasks(newer, 3, docker.TaskRunning)
	for _, paced := range []bool{false, true} {
		o := swarmObserved([]docker.Service{newer}, ts)
		o.Paced = paced
		s := only(t, DiffSwarm(d1, o), ActRollout)
		if s.Service.Spec.Task.Labels[docker.SpecLabel(pfx)] != d1.Workload("web").Hash || s.Service.Spec.Task.Image != "web:v1" {
			t.Errorf("paced %v: rollback writes %+v, want the v1 template", paced, s.Service.Spec.Task)
		}
		wantWords(t, s.Reason, "image web:v2 → web:v1")
		if paced != (s.Why.Kind == ReasonSwarmStep) {
			t.Errorf("paced %v: reason %s", paced, s.Why.Kind)
		}
	}
}

// TestSwarmPaced (S4, S6): step mode writes the new template with
// parallelism 1 and PacedDelay, then each later step bumps the counter,
// offered only once Swarm placed the last step's task and it is RUNNING.
func TestSwarmPaced(t *testing.T) {
	d1, d2 := v1d(), v2d()
	hash := d2.Workload("web").Hash
	old := service(d2, "web", withTemplate(d1, "web"))
	olds := tasks(old, 3, docker.TaskRunning)
	paced := func(o *SwarmObserved) *SwarmObserved { o.Paced = true; return o }

	s := only(t, DiffSwarm(d2, paced(swarmObserved([]docker.Service{old}, olds))), ActRollout)
	if u := s.Service.Spec.Update; u.Parallelism != 1 || u.Delay != PacedDelay {
		t.Errorf("first step's settings %+v: want parallelism 1, delay PacedDelay", u)
	}
	wantWords(t, s.Reason, "Swarm updates one slot", "Swarm picks which slot", "a manager failover may advance one unasked")

	// Written, Swarm has not begun: a wait, no second write.
	cur := service(d2, "web", pacedSettings, func(s *docker.Service) { s.Spec.Labels[docker.StepLabel(pfx)] = "4" })
	p := DiffSwarm(d2, paced(swarmObserved([]docker.Service{cur}, olds)))
	noExecutable(t, p)
	if w := p.Steps()[0]; w.Slot != NoSlot || w.Wait != WaitSwarm || w.Why.Kind != ReasonSwarmPending {
		t.Errorf("first wait %+v: want Swarm's, pending", w)
	}

	// Swarm began and placed slot 2's new task: it starts, the old one
	// runs beside it.
	began := t0.Add(-30 * time.Second)
	mid := service(d2, "web", pacedSettings, updating(began), func(s *docker.Service) { s.Spec.Labels[docker.StepLabel(pfx)] = "4" })
	starting := task(mid, 2, docker.TaskStarting, created(t0.Add(-10*time.Second)))
	ts := []docker.Task{olds[0], olds[1], olds[2], starting}
	p = DiffSwarm(d2, paced(swarmObserved([]docker.Service{mid}, ts)))
	noExecutable(t, p)
	boot := p.Steps()
	if len(boot) != 3 || boot[1].Slot != 2 || boot[1].Wait != WaitBoot || boot[1].Why.Kind != ReasonSwarmStarting {
		t.Fatalf("want slot 2's boot wait between two queued, got %q", briefs(p))
	}
	wantWords(t, boot[1].Reason, "RUNNING once healthy", "the next step is offered once it is")
	if st, _ := p.Slot("web", 2); st.Ready || st.Wait != WaitBoot || !st.Containers[1].Serves || st.Containers[0].Serves {
		t.Errorf("slot 2 %+v: the old task serves while the new one boots", st)
	}
	if st, _ := p.Slot("web", 3); st.Wait != WaitQueue {
		t.Errorf("slot 3 %+v: queued for a later step", st)
	}

	// It runs and its old task is shut down: the next step.
	running := task(mid, 2, docker.TaskRunning, created(t0.Add(-10*time.Second)))
	gone := olds[1]
	gone.Desired, gone.State = docker.TaskShutdown, docker.TaskShutdown
	ts = []docker.Task{olds[0], gone, olds[2], running}
	s = only(t, DiffSwarm(d2, paced(swarmObserved([]docker.Service{mid}, ts))), ActAdvance)
	if s.Service.Counter() != "5" || s.Service.Spec.Task.Labels[docker.SpecLabel(pfx)] != hash || !isPaced(s.Service.Spec.Update) {
		t.Errorf("advance %+v: counter 5, the same template, paced settings", s.Service.Spec)
	}
	wantWords(t, s.Reason, "1 of 3 on the desired spec", "Swarm picks which slot")

	// Advanced again: Swarm's new updater began after the last task: wait.
	again := service(d2, "web", pacedSettings, updating(t0), func(s *docker.Service) { s.Spec.Labels[docker.StepLabel(pfx)] = "5" })
	p = DiffSwarm(d2, paced(swarmObserved([]docker.Service{again}, ts)))
	noExecutable(t, p)
	if p.Steps()[0].Why.Kind != ReasonSwarmPending {
		t.Errorf("after the advance: %q, want pending", briefs(p))
	}
}

// TestSwarmPaceSwitch (S6, S7): switching pace mid-roll writes the
// other mode's settings.
func TestSwarmPaceSwitch(t *testing.T) {
	d1, d2 := v1d(), v2d()
	file := UpdateConfigFor(d2.Workload("web"))
	mk := func(mods ...func(*docker.Service)) (docker.Service, []docker.Task) {
		s := service(d2, "web", append([]func(*docker.Service){updating(t0.Add(-time.Minute))}, mods...)...)
		o := service(d2, "web", withTemplate(d1, "web"))
		return s, []docker.Task{task(s, 1, docker.TaskRunning, created(t0.Add(-50*time.Second))), task(o, 2, docker.TaskRunning), task(o, 3, docker.TaskRunning)}
	}
	svc, ts := mk(pacedSettings)
	s := only(t, DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts)), ActSettings)
	if s.Service.Spec.Update != file {
		t.Errorf("step → auto writes %+v, want the file's %+v", s.Service.Spec.Update, file)
	}
	wantWords(t, s.Reason, "auto from here: Swarm rolls the 2 slots left")

	svc, ts = mk()
	o := swarmObserved([]docker.Service{svc}, ts)
	o.Paced = true
	s = only(t, DiffSwarm(d2, o), ActAdvance)
	if !isPaced(s.Service.Spec.Update) || !s.Why.Switch {
		t.Errorf("auto → step writes %+v", s.Service.Spec.Update)
	}
	wantWords(t, s.Reason, "step mode from here")
}

// TestSwarmSettle (S9): a paced roll done leaves Swarm's updater asleep:
// the file's settings are written back (no task replaced), though not
// while a start-first overlap would be cut short.
func TestSwarmSettle(t *testing.T) {
	d2 := v2d()
	svc := service(d2, "web", pacedSettings, updating(t0.Add(-time.Minute)))
	o := swarmObserved([]docker.Service{svc}, tasks(svc, 3, docker.TaskRunning))
	o.Paced = true
	s := only(t, DiffSwarm(d2, o), ActSettings)
	if s.Service.Spec.Update != UpdateConfigFor(d2.Workload("web")) || s.Downtime {
		t.Errorf("settle writes %+v", s.Service.Spec.Update)
	}
	wantWords(t, s.Reason, "roll done", "no task is replaced")

	d1 := v1d()
	old := service(d2, "web", withTemplate(d1, "web"))
	ts := append(tasks(svc, 2, docker.TaskRunning), task(old, 3, docker.TaskRunning), task(svc, 3, docker.TaskStarting, created(t0.Add(-5*time.Second))))
	o = swarmObserved([]docker.Service{svc}, ts)
	o.Paced = true
	p := DiffSwarm(d2, o)
	noExecutable(t, p)
	if got := briefs(p); len(got) != 1 || p.Steps()[0].Slot != 3 || p.Steps()[0].Wait != WaitBoot {
		t.Errorf("overlap: %q, want slot 3's boot wait alone", got)
	}
}

// TestSwarmConverged (S10): every slot RUNNING on the desired spec,
// replicas and settings equal, no update under way: the plan is empty;
// Swarm's monitor period and old tasks still retiring are waits.
func TestSwarmConverged(t *testing.T) {
	d2 := v2d()
	svc := service(d2, "web")
	ts := tasks(svc, 3, docker.TaskRunning)
	for _, state := range []docker.UpdateState{docker.UpdateNone, docker.UpdateCompleted} {
		svc.UpdateState = state
		p := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts))
		if !p.Empty() || len(p.Workloads) != 0 {
			t.Fatalf("%q: want empty, got\n%s", state, p)
		}
		if ready, total := p.Progress(); ready != 3 || total != 3 {
			t.Errorf("progress %d/%d", ready, total)
		}
	}
	// The manager pins images to a digest: still the desired image.
	pinned := svc
	pinned.Spec.Task.Image += "@sha256:0123"
	pts := tasks(pinned, 3, docker.TaskRunning)
	if p := DiffSwarm(d2, swarmObserved([]docker.Service{pinned}, pts)); !p.Empty() {
		t.Errorf("pinned to a digest: want empty, got\n%s", p)
	}
	svc.UpdateState = docker.UpdateUpdating
	p := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts))
	if w := only1(t, p); w.Wait != WaitSwarm || w.Why.Kind != ReasonSwarmMonitor {
		t.Errorf("updating: %+v, want Swarm's monitor wait", w)
	}
	svc.UpdateState = docker.UpdateNone
	d1 := v1d()
	old := task(service(d2, "web", withTemplate(d1, "web")), 2, docker.TaskRunning)
	p = DiffSwarm(d2, swarmObserved([]docker.Service{svc}, append(ts, old)))
	if w := only1(t, p); w.Why.Kind != ReasonSwarmRetiring || w.Why.Left != 1 {
		t.Errorf("an old task still wanted: %+v, want a retiring wait", w)
	}
}

func only1(t *testing.T, p Plan) Step {
	t.Helper()
	if len(p.Steps()) != 1 {
		t.Fatalf("want one step, got %q\n%s", briefs(p), p)
	}
	return p.Steps()[0]
}

// TestSwarmSlotStates: tasks into slots as Swarm numbers them, each with
// its relation, condition and whether it serves; a node down is not
// healthy; a task Swarm replaced by itself is marked, and its wait is
// Swarm's.
func TestSwarmSlotStates(t *testing.T) {
	d1, d2 := v1d(), v2d()
	svc := service(d2, "web", updating(t0.Add(-time.Minute)), replicas(4))
	old := service(d2, "web", withTemplate(d1, "web"))
	d2.Workloads[0].Replicas = 4
	svc.Spec.Replicas = 4
	failed := task(svc, 3, docker.TaskFailed, taskID("t3dead"), desiredState(docker.TaskShutdown), failedWith("exit 1"), created(t0.Add(-3*time.Minute)))
	ts := []docker.Task{
		task(svc, 1, docker.TaskRunning),                                   // healthy, serves
		task(old, 2, docker.TaskRunning),                                   // stale, serves
		task(svc, 2, docker.TaskStarting, created(t0.Add(-5*time.Second))), // booting beside it
		failed, // history
		task(svc, 3, docker.TaskStarting, created(t0.Add(-2*time.Second))),   // Swarm's restart
		task(svc, 5, docker.TaskRunning, onNode("n2")),                       // a node down
		task(old, 6, docker.TaskShutdown, desiredState(docker.TaskShutdown)), // history, not shown
		task(old, 7, docker.TaskRunning, desiredState(docker.TaskShutdown)),  // leaving
	}
	p := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts))
	type row struct {
		slot    int
		desired bool
		rel     []Relation
		cond    []Condition
		serves  int // index of the serving one, -1 none
	}
	want := []row{
		{1, true, []Relation{RelUpToDate}, []Condition{ConditionHealthy}, 0},
		{2, true, []Relation{RelUpToDate, RelStale}, []Condition{ConditionBooting, ConditionHealthy}, 1},
		{3, true, []Relation{RelUpToDate}, []Condition{ConditionBooting}, -1},
		{5, true, []Relation{RelUpToDate}, []Condition{ConditionCrashed}, -1},
		{7, false, []Relation{RelSurplus}, []Condition{ConditionDrained}, -1},
	}
	if len(p.Slots) != len(want) {
		t.Fatalf("slots %+v", p.Slots)
	}
	for i, w := range want {
		st := p.Slots[i]
		if st.Slot != w.slot || st.Desired != w.desired || len(st.Containers) != len(w.rel) {
			t.Fatalf("slot %d: %+v, want %+v", i, st, w)
		}
		for k, c := range st.Containers {
			if c.Relation != w.rel[k] || c.Condition != w.cond[k] || c.Serves != (k == w.serves) {
				t.Errorf("slot %d task %d: %+v, want %s %s serves %v", st.Slot, k, c, w.rel[k], w.cond[k], k == w.serves)
			}
		}
	}
	s3, _ := p.Slot("web", 3)
	if !s3.Containers[0].EngineReplaced {
		t.Error("slot 3: Swarm's restart after a failure is not marked EngineReplaced")
	}
	if s2, _ := p.Slot("web", 2); s2.Containers[0].EngineReplaced {
		t.Error("slot 2: a roll's new task is marked EngineReplaced")
	}

	// The updater retiring an old task (stop-first) is no failure; an old
	// task that crashed comes back on the current spec: Swarm's step.
	retired := task(old, 1, docker.TaskShutdown, desiredState(docker.TaskShutdown), created(t0.Add(-time.Hour)))
	crashedOld := task(old, 2, docker.TaskFailed, desiredState(docker.TaskShutdown), failedWith("exit 137"), created(t0.Add(-time.Hour)))
	p2 := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, []docker.Task{retired, task(svc, 1, docker.TaskStarting),
		crashedOld, task(svc, 2, docker.TaskStarting)}))
	held := []docker.Task{task(old, 1, docker.TaskRunning, desiredState(docker.TaskShutdown)),
		task(svc, 1, docker.TaskAssigned, desiredState(docker.TaskReady), created(t0))} // stop-first: held until the old one stopped
	if st, _ := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, held)).Slot("web", 1); len(st.Containers) != 2 ||
		st.Containers[0].Condition != ConditionBooting || st.Containers[1].Condition != ConditionDrained {
		t.Errorf("stop-first slot %+v: want the new task booting (Swarm wants it, desired ready), the old one leaving", st)
	}
	if st, _ := p2.Slot("web", 1); st.Containers[0].EngineReplaced {
		t.Error("slot 1: the updater's stop-first step is marked EngineReplaced")
	}
	if st, _ := p2.Slot("web", 2); !st.Containers[0].EngineReplaced {
		t.Error("slot 2: Swarm's restart of a crashed old task on the new spec is not marked EngineReplaced")
	}
	var restarted, crashed Step
	for _, s := range p.Steps() {
		switch s.Slot {
		case 3:
			restarted = s
		case 5:
			crashed = s
		}
	}
	if restarted.Action != ActWait || restarted.Why.Kind != ReasonSwarmRestarted {
		t.Errorf("slot 3 step %+v: want a wait, Swarm's restart", restarted)
	}
	wantWords(t, restarted.Reason, "Swarm restarted it by itself", "failed: exit 1")
	if crashed.Wait != WaitRestarting || !crashed.Why.NodeDown {
		t.Errorf("slot 5 step %+v: want Swarm replacing a task of a node down", crashed)
	}
	wantWords(t, crashed.Reason, "node node-2 is down")

	// Without a healthcheck, RUNNING is unverified; a gap in Swarm's slots
	// is a desired slot Swarm fills.
	nohc := resolved(workload("web", 3, func(w *spec.Workload) { w.Healthcheck = nil }))
	s := service(nohc, "web")
	p = DiffSwarm(nohc, swarmObserved([]docker.Service{s}, []docker.Task{task(s, 1, docker.TaskRunning), task(s, 3, docker.TaskRunning)}))
	if st, _ := p.Slot("web", 1); st.Containers[0].Condition != ConditionUnverified || !st.Ready {
		t.Errorf("no healthcheck: %+v, want unverified and ready", st)
	}
	if w := only1(t, p); w.Slot != 2 || w.Why.Kind != ReasonSwarmPlacing {
		t.Errorf("a gap: %+v, want slot 2 placed by Swarm", w)
	}
}

// TestSwarmPaused (S5): Swarm paused the update on a failure: the
// workload failed with Swarm's message and the task's error; nothing is
// written but the operator's retry, and nothing of a held spec.
func TestSwarmPaused(t *testing.T) {
	d1, d2 := v1d(), v2d()
	svc := service(d2, "web", func(s *docker.Service) {
		s.UpdateState, s.UpdateMessage = docker.UpdatePaused, "update paused due to failure or early termination of task t2"
	})
	old := service(d2, "web", withTemplate(d1, "web"))
	ts := []docker.Task{
		task(svc, 1, docker.TaskRunning),
		task(svc, 2, docker.TaskFailed, taskID("t2"), desiredState(docker.TaskShutdown), failedWith("task: non-zero exit (1)"), created(t0.Add(-2*time.Minute))),
		task(svc, 2, docker.TaskStarting, created(t0.Add(-3*time.Second))),
		task(old, 2, docker.TaskRunning),
		task(old, 3, docker.TaskRunning),
	}
	p := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts))
	noExecutable(t, p)
	fs := p.Failures()
	if len(fs) != 1 || fs[0].Slot != 2 || fs[0].Why.Kind != ReasonSwarmPaused || fs[0].Why.TaskErr != "task: non-zero exit (1)" || fs[0].Action != spec.FailurePause {
		t.Fatalf("failures %+v", fs)
	}
	wantWords(t, fs[0].Reason, "Swarm paused the update (update paused due to failure", "non-zero exit (1)", "until retry")
	if w := p.Steps()[0]; w.Wait != WaitPaused || w.Slot != NoSlot {
		t.Errorf("wait %+v", w)
	}
	if st, _ := p.Slot("web", 3); st.Wait != WaitPaused {
		t.Errorf("slot 3 %+v: paused", st)
	}

	o := swarmObserved([]docker.Service{svc}, ts)
	o.Resume = map[string]bool{"web": true}
	s := only(t, DiffSwarm(d2, o), ActResume)
	if s.Service.Spec.Update != UpdateConfigFor(d2.Workload("web")) || s.Service.Counter() != "4" {
		t.Errorf("resume writes %+v", s.Service.Spec)
	}
	wantWords(t, s.Reason, "sent again", "1 slot left")

	o.Holds = map[string]map[string]bool{"web": {d2.Workload("web").Hash: true}}
	p = DiffSwarm(d2, o)
	if len(p.Steps()) != 0 || len(p.Failures()) != 1 || !slices.Equal(p.Workloads[0].Held, []int{2, 3}) {
		t.Errorf("held and retried: %q failures %d held %v; want nothing of it advanced (rule 9)", briefs(p), len(p.Failures()), p.Workloads[0].Held)
	}
}

// TestSwarmHeld (S3): a desired spec on hold is never written: no
// rollout, no create, no advance; its slots are Held.
func TestSwarmHeld(t *testing.T) {
	d1, d2 := v1d(), v2d()
	hold := map[string]map[string]bool{"web": {d2.Workload("web").Hash: true}}
	old := service(d2, "web", withTemplate(d1, "web"))
	for _, c := range []struct {
		name  string
		svcs  []docker.Service
		ts    []docker.Task
		paced bool
	}{
		{"rollout", []docker.Service{old}, tasks(old, 3, docker.TaskRunning), false},
		{"paced", []docker.Service{old}, tasks(old, 3, docker.TaskRunning), true},
		{"create", nil, nil, false},
	} {
		o := swarmObserved(c.svcs, c.ts)
		o.Holds, o.Paced = hold, c.paced
		p := DiffSwarm(d2, o)
		if len(p.Steps()) != 0 || len(p.Workloads) != 1 || !slices.Equal(p.Workloads[0].Held, []int{1, 2, 3}) || p.Workloads[0].HeldSpec != d2.Workload("web").Hash {
			t.Errorf("%s: %q held %+v", c.name, briefs(p), p.Workloads)
		}
	}
}

// TestSwarmStuck (S10): a task of the roll not RUNNING within
// health_deadline of its creation is a Failure: Swarm's updater waits for
// it with no timeout.
func TestSwarmStuck(t *testing.T) {
	d1, d2 := v1d(), v2d()
	svc := service(d2, "web", updating(t0.Add(-5*time.Minute)))
	old := service(d2, "web", withTemplate(d1, "web"))
	pending := task(svc, 1, docker.TaskPending, created(t0.Add(-2*time.Minute)), onNode(""), func(t *docker.Task) { t.Message = "no suitable node" })
	ts := []docker.Task{pending, task(old, 1, docker.TaskRunning), task(old, 2, docker.TaskRunning), task(old, 3, docker.TaskRunning)}
	p := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts))
	fs := p.Failures()
	if len(fs) != 1 || fs[0].Slot != 1 || fs[0].Why.Kind != ReasonSwarmStuck {
		t.Fatalf("failures %+v\n%s", fs, p)
	}
	wantWords(t, fs[0].Reason, "task pending (no suitable node)", "not RUNNING within health_deadline 1m0s")
	ts[0] = task(svc, 1, docker.TaskPending, created(t0.Add(-30*time.Second)))
	if fs := DiffSwarm(d2, swarmObserved([]docker.Service{svc}, ts)).Failures(); len(fs) != 0 {
		t.Errorf("within its deadline: %+v", fs)
	}
}

// TestSwarmScope (I5's twin): a service without the managed label, and
// its tasks, are never in a plan; a managed one without a workload label
// is a note, left alone.
func TestSwarmScope(t *testing.T) {
	d2 := v2d()
	svc := service(d2, "web")
	foreign := service(d2, "web", func(s *docker.Service) { s.ID = "svc-foreign"; delete(s.Spec.Labels, docker.ManagedLabel(pfx)) })
	nameless := service(d2, "web", func(s *docker.Service) { s.ID = "svc-nameless"; delete(s.Spec.Labels, docker.WorkloadLabel(pfx)) })
	o := swarmObserved([]docker.Service{foreign, svc, nameless}, tasks(svc, 3, docker.TaskRunning), tasks(foreign, 5, docker.TaskFailed))
	p := DiffSwarm(d2, o)
	if !p.Empty() || len(p.Slots) != 3 || len(p.Notes) != 1 {
		t.Fatalf("plan %s notes %q", p, p.Notes)
	}
	for _, c := range SwarmContainers(pfx, o) {
		if strings.Contains(c.Name, "foreign") || c.ID[:2] != "t1" && c.ID[:2] != "t2" && c.ID[:2] != "t3" {
			t.Errorf("container %s of a foreign service", c.Name)
		}
	}
	if n := len(SwarmContainers(pfx, o)); n != 3 {
		t.Errorf("%d containers, want the managed service's 3", n)
	}
}

// TestSwarmUnsupported: a workload that cannot be judged or run on a
// Swarm (its image not resolved, a job, a canary) is in error, and
// nothing of it is created or written.
func TestSwarmUnsupported(t *testing.T) {
	for name, d := range map[string]*spec.ResolvedDesired{
		"job": v2d(func(w *spec.Workload) { w.Job = true }),
		"canary": v2d(func(w *spec.Workload) {
			w.Update.Canary = &spec.Canary{Steps: []spec.CanaryStep{{Share: 0.1, For: time.Minute}}}
		}),
	} {
		p := DiffSwarm(d, swarmObserved(nil))
		if len(p.Steps()) != 0 || len(p.Errors()) != 1 {
			t.Errorf("%s: %q errors %q", name, briefs(p), p.Errors())
		}
	}
	d := v2d()
	d.Workloads[0].Err = errors.New("image web:v2: not found")
	svc := service(v2d(), "web", replicas(1))
	p := DiffSwarm(d, swarmObserved([]docker.Service{svc}, tasks(svc, 1, docker.TaskRunning)))
	if len(p.Steps()) != 0 || len(p.Errors()) != 1 || p.Slots[0].Containers[0].Relation != RelUnknown {
		t.Errorf("unresolved: %q %q %+v", briefs(p), p.Errors(), p.Slots)
	}
}

// TestSwarmPlanText: the plan renders as a host's does, a block per
// workload with its spec diff and steps, and each write's key names its
// step counter.
func TestSwarmPlanText(t *testing.T) {
	d1, d2 := v1d(), v2d()
	old := service(d2, "web", withTemplate(d1, "web"), replicas(2))
	p := DiffSwarm(d2, swarmObserved([]docker.Service{old}, tasks(old, 2, docker.TaskRunning)))
	want := "web\n" +
		"  ├─ ~ image: web:v1 → web:v2\n" +
		"  ├─ ~ replicas: 2 → 3\n" +
		"  ├─ ~ spec: " + short(d1.Workload("web").Hash) + " → " + short(d2.Workload("web").Hash) + "\n" +
		"  ├─ ~ version: 1 → 2\n" +
		"  └─ rollout -   rollcall_web  Swarm rolls 3 slots, parallelism 1, start-first: image web:v1 → web:v2, version 1 → 2\n" +
		"1 rollout\n"
	if got := p.String(); got != want {
		t.Errorf("plan:\n%s\nwant:\n%s", got, want)
	}
	if k := p.Steps()[0].Key(); k != "rollout/web/-1/rollcall_web/4" {
		t.Errorf("key %q", k)
	}
}

// TestSwarmContainers: tasks as containers for the views, with the node.
func TestSwarmContainers(t *testing.T) {
	d2 := v2d()
	svc := service(d2, "web")
	o := swarmObserved([]docker.Service{svc}, []docker.Task{
		task(svc, 1, docker.TaskRunning), task(svc, 2, docker.TaskStarting, onNode("n2")), task(svc, 3, docker.TaskPending, onNode("")),
		task(svc, 3, docker.TaskFailed, taskID("t3x"), failedWith("boom"), desiredState(docker.TaskShutdown)),
	})
	cs := SwarmContainers(pfx, o)
	type want struct {
		state  docker.State
		health docker.Health
		node   string
	}
	byID := map[string]docker.Container{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	for id, w := range map[string]want{
		o.Tasks[0].ID: {docker.StateRunning, docker.HealthHealthy, "node-1"},
		o.Tasks[1].ID: {docker.StateRunning, docker.HealthStarting, "node-2"},
		o.Tasks[2].ID: {docker.StateCreated, docker.HealthNone, ""},
		"t3x":         {docker.StateExited, docker.HealthNone, "node-1"},
	} {
		c := byID[id]
		if c.State != w.state || c.Health != w.health || c.Node != w.node {
			t.Errorf("%s: %s %s %q, want %+v", id, c.State, c.Health, c.Node, w)
		}
	}
	if c := byID["t3x"]; c.Error != "boom" || c.Name != "rollcall_web.3.t3x" || c.Labels[docker.SlotLabel(pfx)] != "3" {
		t.Errorf("failed task as %+v", c)
	}
	// The plan's slots name the same IDs.
	for _, st := range DiffSwarm(d2, o).Slots {
		for _, c := range st.Containers {
			if _, ok := byID[c.ID]; !ok {
				t.Errorf("slot %d: %s is not among the containers", st.Slot, c.ID)
			}
		}
	}
}
