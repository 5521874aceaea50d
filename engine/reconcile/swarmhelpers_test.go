package reconcile

import (
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// A swarm's fixtures: services as rollcall writes them, their tasks, and
// two nodes (n1 ready, n2 down).

var swarmNodes = []docker.Node{
	{ID: "n1", Hostname: "node-1", State: docker.NodeReady, Availability: "active", Manager: true, Leader: true},
	{ID: "n2", Hostname: "node-2", State: docker.NodeDown, Availability: "active"},
}

// service is workload name's service as rollcall writes it for d: the
// file's settings, version 10, step counter 3, no update status.
func service(d *spec.ResolvedDesired, name string, mods ...func(*docker.Service)) docker.Service {
	s := docker.Service{ID: "svc-" + name, Version: 10, Spec: ServiceSpecFor(pfx, d.Workload(name)),
		CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Hour)}
	s.Spec.Labels[docker.StepLabel(pfx)] = "3"
	for _, m := range mods {
		m(&s)
	}
	return s
}

// withTemplate gives s the task template (and endpoint) of workload name in
// d: an older or newer spec than the desired one.
func withTemplate(d *spec.ResolvedDesired, name string) func(*docker.Service) {
	return func(s *docker.Service) {
		o := ServiceSpecFor(pfx, d.Workload(name))
		s.Spec.Task = o.Task
	}
}

func pacedSettings(s *docker.Service) {
	s.Spec.Update.Parallelism, s.Spec.Update.Delay = 1, PacedDelay
}

func updating(started time.Time) func(*docker.Service) {
	return func(s *docker.Service) { s.UpdateState, s.UpdateStarted = docker.UpdateUpdating, started }
}

func replicas(n int) func(*docker.Service) { return func(s *docker.Service) { s.Spec.Replicas = n } }

// task is a task of s's current template in slot, on node n1, wanted
// running, in state, created a minute before t0.
func task(s docker.Service, slot int, state docker.TaskState, mods ...func(*docker.Task)) docker.Task {
	t := docker.Task{
		ServiceID: s.ID, Workload: s.Spec.Labels[docker.WorkloadLabel(pfx)], Slot: slot, NodeID: "n1",
		Desired: docker.TaskRunning, State: state, Since: t0.Add(-time.Minute), CreatedAt: t0.Add(-time.Minute),
		Spec: s.Spec.Task.Labels[docker.SpecLabel(pfx)], Image: s.Spec.Task.Image,
	}
	t.ID = fmt.Sprintf("t%d%s", slot, short(t.Spec)[:4])
	for _, m := range mods {
		m(&t)
	}
	return t
}

// tasks are one task a slot, slots 1..n, of s's template.
func tasks(s docker.Service, n int, state docker.TaskState, mods ...func(*docker.Task)) []docker.Task {
	var out []docker.Task
	for i := 1; i <= n; i++ {
		out = append(out, task(s, i, state, mods...))
	}
	return out
}

func taskID(id string) func(*docker.Task) { return func(t *docker.Task) { t.ID = id } }
func onNode(id string) func(*docker.Task) { return func(t *docker.Task) { t.NodeID = id } }
func desiredState(s docker.TaskState) func(*docker.Task) {
	return func(t *docker.Task) { t.Desired = s }
}
func created(at time.Time) func(*docker.Task) {
	return func(t *docker.Task) { t.CreatedAt, t.Since = at, at }
}
func failedWith(err string) func(*docker.Task) {
	return func(t *docker.Task) { t.State, t.Err, t.ExitCode = docker.TaskFailed, err, 1 }
}

func swarmObserved(svcs []docker.Service, ts ...[]docker.Task) *SwarmObserved {
	o := &SwarmObserved{Now: t0, Services: svcs, Nodes: swarmNodes}
	for _, t := range ts {
		o.Tasks = append(o.Tasks, t...)
	}
	return o
}

// v1d and v2d are web (3 replicas) at v1 and at v2, with mods on both.
func v1d(mods ...func(*spec.Workload)) *spec.ResolvedDesired {
	return resolved(workload("web", 3, append([]func(*spec.Workload){v1}, mods...)...))
}
func v2d(mods ...func(*spec.Workload)) *spec.ResolvedDesired {
	return resolved(workload("web", 3, mods...))
}
