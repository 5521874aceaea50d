package reconcile

import (
	"fmt"
	"maps"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

var (
	swarmNames      = []string{"api", "web", "gone"} // "gone" is never desired
	swarmTaskStates = []docker.TaskState{docker.TaskNew, docker.TaskPending, docker.TaskAssigned, docker.TaskPreparing, docker.TaskReady,
		docker.TaskStarting, docker.TaskRunning, docker.TaskRunning, docker.TaskRunning, docker.TaskComplete, docker.TaskShutdown,
		docker.TaskFailed, docker.TaskRejected, docker.TaskOrphaned}
	swarmUpdateStates = []docker.UpdateState{docker.UpdateNone, docker.UpdateUpdating, docker.UpdatePaused, docker.UpdateCompleted,
		docker.UpdateRollbackStarted, docker.UpdateRollbackPaused, docker.UpdateRollbackCompleted}
)

// genSwarmWorkload draws a workload of name at v1 or v2.
func genSwarmWorkload(t *rapid.T, name, what string, replicas int) *spec.Workload {
	w := workload(name, replicas)
	if rapid.Bool().Draw(t, what+"-v1") {
		v1(w)
	}
	w.Update.Order = rapid.SampledFrom([]string{spec.OrderStartFirst, spec.OrderStopFirst}).Draw(t, what+"-order")
	w.Update.FailureAction = rapid.SampledFrom([]string{spec.FailurePause, spec.FailureRollback, spec.FailureContinue}).Draw(t, what+"-failure")
	return w
}

// genSwarm draws a desired state and a swarm around it: services of any
// template, replicas, settings and update state, some not managed; tasks
// of either spec in any state, on any node, in any slot.
func genSwarm(t *rapid.T) (*spec.ResolvedDesired, *SwarmObserved, map[string]bool) {
	var ws []*spec.Workload
	for _, name := range swarmNames[:2] {
		if rapid.IntRange(0, 3).Draw(t, name+"-desired") > 0 {
			ws = append(ws, genSwarmWorkload(t, name, name, rapid.IntRange(0, 3).Draw(t, name+"-replicas")))
		}
	}
	d := resolved(ws...)
	o := &SwarmObserved{Now: t0, Paced: rapid.Bool().Draw(t, "paced")}
	if rapid.Bool().Draw(t, "nodes") {
		o.Nodes = swarmNodes
	}
	foreign := map[string]bool{}
	for _, name := range swarmNames {
		for k := rapid.IntRange(0, 2).Draw(t, name+"-services"); k > 0; k-- {
			svc := genService(t, d, name, len(o.Services))
			if rapid.IntRange(0, 5).Draw(t, "unmanaged") == 0 {
				delete(svc.Spec.Labels, docker.ManagedLabel(pfx))
				foreign[svc.ID] = true
			}
			o.Services = append(o.Services, svc)
			o.Tasks = append(o.Tasks, genTasks(t, d, svc, len(o.Tasks))...)
		}
	}
	if len(d.Workloads) > 0 && rapid.IntRange(0, 4).Draw(t, "hold") == 0 {
		w := d.Workloads[0]
		o.Holds = map[string]map[string]bool{w.Name: {w.Hash: true}}
	}
	if rapid.Bool().Draw(t, "resume") {
		o.Resume = map[string]bool{"web": true, "api": true}
	}
	return d, o, foreign
}

// swarmTemplates caches the services genTemplate draws from (a resolve
// each would make the properties slow), by name, version, replicas, order
// and failure action.
var swarmTemplates sync.Map

// genTemplate draws the service spec of a workload of name, at v1 or v2.
func genTemplate(t *rapid.T, name, what string) docker.ServiceSpec {
	isV1 := rapid.Bool().Draw(t, what+"-v1")
	replicas := rapid.IntRange(0, 3).Draw(t, what+"-replicas")
	order := rapid.SampledFrom([]string{spec.OrderStartFirst, spec.OrderStopFirst}).Draw(t, what+"-order")
	failure := rapid.SampledFrom([]string{spec.FailurePause, spec.FailureRollback, spec.FailureContinue}).Draw(t, what+"-failure")
	key := fmt.Sprintf("%s/%v/%d/%s/%s", name, isV1, replicas, order, failure)
	if s, ok := swarmTemplates.Load(key); ok {
		return cloneSpec(s.(docker.ServiceSpec))
	}
	w := workload(name, replicas)
	if isV1 {
		v1(w)
	}
	w.Update.Order, w.Update.FailureAction = order, failure
	s := ServiceSpecFor(pfx, &resolved(w).Workloads[0])
	swarmTemplates.Store(key, s)
	return cloneSpec(s)
}

func cloneSpec(s docker.ServiceSpec) docker.ServiceSpec {
	s.Labels = maps.Clone(s.Labels)
	return s
}

func genService(t *rapid.T, d *spec.ResolvedDesired, name string, i int) docker.Service {
	spc := genTemplate(t, name, "template")
	if w := d.Workload(name); w != nil && rapid.IntRange(0, 3).Draw(t, "template-desired") > 0 {
		spc = ServiceSpecFor(pfx, w) // the desired template, often
	}
	s := docker.Service{ID: fmt.Sprintf("svc%d-%s", i, name), Version: uint64(rapid.IntRange(1, 50).Draw(t, "version")),
		Spec: spc, CreatedAt: t0.Add(-time.Duration(i) * time.Hour)}
	if rapid.IntRange(0, 3).Draw(t, "renamed") == 0 {
		s.Spec.Name += strconv.Itoa(i)
	}
	s.Spec.Replicas = rapid.IntRange(0, 4).Draw(t, "service-replicas")
	switch rapid.IntRange(0, 3).Draw(t, "settings") {
	case 0:
		pacedSettings(&s)
	case 1:
		s.Spec.Update.Parallelism = 0
	}
	s.Spec.Labels[docker.StepLabel(pfx)] = strconv.Itoa(rapid.IntRange(0, 9).Draw(t, "counter"))
	s.UpdateState = docker.UpdateUpdating // a roll under way, most often
	if rapid.Bool().Draw(t, "other-update-state") {
		s.UpdateState = rapid.SampledFrom(swarmUpdateStates).Draw(t, "update-state")
	}
	if rapid.Bool().Draw(t, "started") {
		s.UpdateStarted = t0.Add(-time.Duration(rapid.IntRange(0, 30).Draw(t, "started-at")) * 10 * time.Second)
	}
	return s
}

func genTasks(t *rapid.T, d *spec.ResolvedDesired, svc docker.Service, n int) []docker.Task {
	name := svc.Spec.Labels[docker.WorkloadLabel(pfx)]
	var out []docker.Task
	for slot := 0; slot <= 4; slot++ {
		for k := rapid.IntRange(0, 3).Draw(t, "in-slot"); k > 0; k-- {
			ts := svc
			if w := d.Workload(name); w != nil && rapid.Bool().Draw(t, "task-desired-spec") {
				ts.Spec.Task = ServiceSpecFor(pfx, w).Task
			} else if rapid.Bool().Draw(t, "task-other-spec") {
				ts.Spec.Task = genTemplate(t, name, "task").Task
			}
			at := t0.Add(-time.Duration(rapid.IntRange(0, 30).Draw(t, "created")) * 10 * time.Second)
			tk := task(ts, slot, rapid.SampledFrom(swarmTaskStates).Draw(t, "state"), created(at),
				taskID(fmt.Sprintf("t%03d", n+len(out))),
				desiredState(rapid.SampledFrom([]docker.TaskState{docker.TaskRunning, docker.TaskRunning, docker.TaskReady, docker.TaskShutdown}).Draw(t, "desired")),
				onNode(rapid.SampledFrom([]string{"n1", "n1", "n2", "n3", ""}).Draw(t, "node")))
			if rapid.IntRange(0, 6).Draw(t, "digest") == 0 {
				tk.Image += "@sha256:0123"
			}
			out = append(out, tk)
		}
	}
	return out
}

func shuffled(t *rapid.T, o *SwarmObserved) *SwarmObserved {
	c := *o
	c.Services = rapid.Permutation(o.Services).Draw(t, "services-order")
	c.Tasks = rapid.Permutation(o.Tasks).Draw(t, "tasks-order")
	c.Nodes = rapid.Permutation(o.Nodes).Draw(t, "nodes-order")
	return &c
}

// TestSwarmPropDeterministic (I2's twin): the same swarm, read in any
// order, gives the same plan.
func TestSwarmPropDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, o, _ := genSwarm(t)
		a, b := DiffSwarm(d, o), DiffSwarm(d, shuffled(t, o))
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("two plans of one swarm:\n%s\n%s", a, b)
		}
	})
}

// TestSwarmPropScope (I5's twin): nothing of a service without the
// managed label is in any plan: no step on it, no task of it in a slot.
func TestSwarmPropScope(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, o, foreign := genSwarm(t)
		p := DiffSwarm(d, o)
		for _, s := range p.Steps() {
			if s.Service != nil && foreign[s.Service.ID] {
				t.Fatalf("step %s on an unmanaged service", brief(s))
			}
		}
		foreignTask := map[string]bool{}
		for _, tk := range o.Tasks {
			if foreign[tk.ServiceID] {
				foreignTask[tk.ID] = true
			}
		}
		for _, st := range p.Slots {
			for _, c := range st.Containers {
				if foreignTask[c.ID] {
					t.Fatalf("slot %s/%d holds %s, a task of an unmanaged service", st.Workload, st.Slot, c.ID)
				}
			}
		}
	})
}

// TestSwarmPropWrites: every write names the version of the service it
// was read from, and carries a step counter past the one read.
func TestSwarmPropWrites(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		d, o, _ := genSwarm(t)
		byID := map[string]docker.Service{}
		for _, s := range o.Services {
			byID[s.ID] = s
		}
		for _, s := range DiffSwarm(d, o).Executable() {
			if s.Action == ActCreate || s.Action == ActRemove {
				continue
			}
			read := byID[s.Service.ID]
			if s.Service.Version != read.Version || stepCounter(pfx, s.Service.Spec) != stepCounter(pfx, read.Spec)+1 {
				t.Fatalf("%s writes at version %d counter %s; read at %d counter %s", brief(s), s.Service.Version, s.Service.Counter(),
					read.Version, read.Spec.Labels[docker.StepLabel(pfx)])
			}
		}
	})
}

// TestSwarmPropPacedGate: in step mode, no write that makes Swarm take a
// slot (the first step, an advance) is offered while a task of the
// desired spec that Swarm wants running (the last step's among them) is
// not RUNNING on a node that is up; and no write at all cuts a
// start-first overlap short.
func TestSwarmPropPacedGate(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var d *spec.ResolvedDesired
		var o *SwarmObserved
		if rapid.Bool().Draw(t, "mid-roll") {
			d, o = genPacedRoll(t)
		} else {
			d, o, _ = genSwarm(t)
		}
		o.Paced = true
		j := taskJudge{nodes: nodesOf(o.Nodes)}
		for _, s := range DiffSwarm(d, o).Executable() {
			if s.Service.ID == "" || s.Action == ActRemove || s.Action == ActResume {
				continue
			}
			w := d.Workload(s.Workload)
			newest := (*docker.Task)(nil)
			for i := range o.Tasks {
				tk := &o.Tasks[i]
				if tk.ServiceID != s.Service.ID || !swarmWants(tk) || tk.Spec != w.Hash || !imageIs(tk.Image, w.Image) || tk.Slot < 1 {
					continue
				}
				if newest == nil || before(newest, tk) {
					newest = tk
				}
				running := tk.State == docker.TaskRunning && j.nodeUp(tk.NodeID)
				if (s.Action == ActAdvance || s.Action == ActRollout) && !running {
					t.Fatalf("%s offered while %s (slot %d) is %s on %s", brief(s), tk.ID, tk.Slot, tk.State, tk.NodeID)
				}
				if !running && overlapped(o, tk, w) && !runsFresh(o, tk, w, j) {
					t.Fatalf("%s offered while %s (slot %d) boots beside its old task", brief(s), tk.ID, tk.Slot)
				}
			}
			if newest != nil && (s.Action == ActAdvance || s.Action == ActRollout) && newest.State != docker.TaskRunning {
				t.Fatalf("%s offered while the last step's task %s is %s", brief(s), newest.ID, newest.State)
			}
		}
	})
}

// genPacedRoll draws a step-mode roll under way: the desired template
// written with paced settings (or not), each slot's old task and maybe its
// new one beside or instead, in any state, created before or after
// Swarm's updater began.
func genPacedRoll(t *rapid.T) (*spec.ResolvedDesired, *SwarmObserved) {
	d := resolved(genSwarmWorkload(t, "web", "web", rapid.IntRange(1, 3).Draw(t, "replicas")))
	w := d.Workload("web")
	old := service(d, "web", func(s *docker.Service) { s.Spec.Task = genTemplate(t, "web", "old").Task })
	svc := service(d, "web", updating(t0.Add(-time.Duration(rapid.IntRange(0, 6).Draw(t, "began"))*10*time.Second)))
	if rapid.IntRange(0, 3).Draw(t, "paced-settings") > 0 {
		pacedSettings(&svc)
	}
	if rapid.IntRange(0, 4).Draw(t, "not-updating") == 0 {
		svc.UpdateState = docker.UpdateNone
	}
	o := &SwarmObserved{Now: t0, Services: []docker.Service{svc}}
	if rapid.Bool().Draw(t, "nodes") {
		o.Nodes = swarmNodes
	}
	states := []docker.TaskState{docker.TaskRunning, docker.TaskRunning, docker.TaskStarting, docker.TaskPending, docker.TaskFailed}
	for slot := 1; slot <= w.Replicas+1; slot++ {
		if rapid.IntRange(0, 3).Draw(t, "old") > 0 {
			o.Tasks = append(o.Tasks, task(old, slot, docker.TaskRunning, taskID(fmt.Sprintf("o%d", slot)),
				desiredState(rapid.SampledFrom([]docker.TaskState{docker.TaskRunning, docker.TaskShutdown}).Draw(t, "old-desired"))))
		}
		if rapid.Bool().Draw(t, "new") {
			at := t0.Add(-time.Duration(rapid.IntRange(0, 6).Draw(t, "created")) * 10 * time.Second)
			o.Tasks = append(o.Tasks, task(svc, slot, rapid.SampledFrom(states).Draw(t, "new-state"), taskID(fmt.Sprintf("n%d", slot)), created(at),
				onNode(rapid.SampledFrom([]string{"n1", "n1", "n1", "n2"}).Draw(t, "node"))))
		}
	}
	return d, o
}

// swarmWants is the property's own reading of a task Swarm wants running.
func swarmWants(t *docker.Task) bool {
	return t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady
}

// runsFresh reports whether tk's slot has a task of the desired spec
// RUNNING that Swarm wants running: it serves, whatever else is cut.
func runsFresh(o *SwarmObserved, tk *docker.Task, w *spec.Resolved, j taskJudge) bool {
	for i := range o.Tasks {
		x := &o.Tasks[i]
		if x.ServiceID == tk.ServiceID && x.Slot == tk.Slot && swarmWants(x) && x.Spec == w.Hash && imageIs(x.Image, w.Image) &&
			x.State == docker.TaskRunning && j.nodeUp(x.NodeID) {
			return true
		}
	}
	return false
}

// overlapped reports whether tk's slot holds another task Swarm wants
// running, of another spec.
func overlapped(o *SwarmObserved, tk *docker.Task, w *spec.Resolved) bool {
	for i := range o.Tasks {
		x := &o.Tasks[i]
		if x.ServiceID == tk.ServiceID && x.Slot == tk.Slot && swarmWants(x) && (x.Spec != w.Hash || !imageIs(x.Image, w.Image)) {
			return true
		}
	}
	return false
}

// TestSwarmPropConverged (I3's twin): every slot RUNNING on the desired
// spec, the replicas and settings as the file's, no update under way:
// the plan is empty, whatever history, foreign services and other
// workloads' services lie about, in either pace.
func TestSwarmPropConverged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ws []*spec.Workload
		for _, name := range swarmNames[:2] {
			ws = append(ws, genSwarmWorkload(t, name, name, rapid.IntRange(0, 3).Draw(t, name+"-replicas")))
		}
		d := resolved(ws...)
		o := &SwarmObserved{Now: t0, Paced: rapid.Bool().Draw(t, "paced"), Nodes: swarmNodes}
		for i, w := range d.Workloads {
			if w.Replicas == 0 && rapid.Bool().Draw(t, "no-service") {
				continue
			}
			svc := service(d, w.Name, func(s *docker.Service) {
				s.ID = "svc-" + w.Name
				s.Version = uint64(rapid.IntRange(1, 50).Draw(t, "version"))
				s.Spec.Labels[docker.StepLabel(pfx)] = strconv.Itoa(rapid.IntRange(0, 9).Draw(t, "counter"))
				s.UpdateState = rapid.SampledFrom([]docker.UpdateState{docker.UpdateNone, docker.UpdateCompleted, docker.UpdateRollbackCompleted}).Draw(t, "state")
			})
			o.Services = append(o.Services, svc)
			for slot := 1; slot <= w.Replicas; slot++ {
				o.Tasks = append(o.Tasks, task(svc, slot, docker.TaskRunning, taskID(fmt.Sprintf("t%d-%d", i, slot))))
			}
			// History: ended tasks Swarm no longer wants, of any spec.
			for k := rapid.IntRange(0, 4).Draw(t, "history"); k > 0; k-- {
				h := genTasks(t, d, svc, 100*(i+1)+k*10)
				for _, tk := range h {
					tk.Desired = docker.TaskShutdown
					if !tk.State.Ended() {
						tk.State = docker.TaskShutdown
					}
					o.Tasks = append(o.Tasks, tk)
				}
			}
		}
		// A foreign service in any state.
		f := genService(t, d, "web", 9)
		f.ID = "svc-foreign"
		delete(f.Spec.Labels, docker.ManagedLabel(pfx))
		o.Services = append(o.Services, f)
		o.Tasks = append(o.Tasks, genTasks(t, d, f, 900)...)
		if p := DiffSwarm(d, shuffled(t, o)); !p.Empty() || len(p.Workloads) != 0 {
			t.Fatalf("converged, yet:\n%s", p)
		}
	})
}
