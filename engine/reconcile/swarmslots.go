package reconcile

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// This file classifies a Swarm's tasks into slots (swarm.go's package
// rules): the one place that judges a task, for DiffSwarm and for every
// view (Plan.Slots; SwarmContainers for the rows).

// swarmSlots is a workload's slots as DiffSwarm judged them: the states
// it returns, and beside each what its rules read.
type swarmSlots struct {
	states []SlotState
	info   []slotInfo // by index of states
}

// slotInfo is what the rules read of one slot.
type slotInfo struct {
	svc     *docker.Service
	desired bool
	// primary is the slot's first up-to-date task that Swarm wants
	// running, and cond its condition; nil when it has none.
	primary *docker.Task
	cond    Condition
	// prev is the task primary replaced, when Swarm replaced it by itself
	// (EngineReplaced: taskState), and prevDown whether that one's node is
	// down.
	prev     *docker.Task
	prevDown bool
	// node and prevNode are the hostnames of their nodes.
	node, prevNode string
	// fresh are the up-to-date tasks Swarm wants running; stale the older
	// ones it still wants running (Swarm is yet to update the slot, or a
	// start-first new task runs beside it).
	fresh []*docker.Task
	stale []*docker.Task
}

// overlap: a start-first slot whose new task is not yet RUNNING beside
// its old one.
func (s *slotInfo) overlap() bool { return s.primary != nil && !s.cond.Healthy() && len(s.stale) > 0 }

// taskJudge judges a workload's tasks.
type taskJudge struct {
	prefix      string
	hash, image string // the desired ones; "" when none is known: nothing is up-to-date
	healthcheck bool   // the tasks have a healthcheck: RUNNING is Swarm's healthy
	nodes       map[string]*docker.Node
}

// wanted reports whether Swarm wants t running: its desired state is
// running, or ready (a stop-first task held until its old one stopped).
func wanted(t *docker.Task) bool {
	return t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady
}

// nodeUp reports whether the node a task runs on is up; with no nodes
// read, every node counts as up.
func (j taskJudge) nodeUp(id string) bool {
	if len(j.nodes) == 0 || id == "" {
		return true
	}
	n := j.nodes[id]
	return n != nil && n.State == docker.NodeReady
}

// of is the condition of a live task: drained while Swarm shuts it down,
// crashed when it ended while Swarm wants it running or its node is
// down, healthy when RUNNING (Swarm's healthy; unverified without a
// healthcheck), booting before.
func (j taskJudge) of(t *docker.Task) Condition {
	switch {
	case !wanted(t):
		return ConditionDrained
	case t.State.Ended(), !j.nodeUp(t.NodeID):
		return ConditionCrashed
	case t.State == docker.TaskRunning && j.healthcheck:
		return ConditionHealthy
	case t.State == docker.TaskRunning:
		return ConditionUnverified
	}
	return ConditionBooting
}

func (j taskJudge) upToDate(t *docker.Task) bool {
	return j.hash != "" && t.Spec == j.hash && imageIs(t.Image, j.image)
}

// rank orders conditions for the first up-to-date task: healthy, booting,
// crashed, leaving.
func rank(c Condition) int {
	switch c {
	case ConditionHealthy, ConditionUnverified:
		return 0
	case ConditionBooting:
		return 1
	case ConditionDrained:
		return 3
	}
	return 2
}

// engineFailed reports whether Swarm replaced t by itself: it ended in a
// failure (failed, rejected, orphaned, or exited and restarted by the
// restart policy) or its node is down, and Swarm no longer wants it.
func (j taskJudge) engineFailed(t *docker.Task) bool {
	if wanted(t) {
		return false
	}
	switch t.State {
	case docker.TaskFailed, docker.TaskRejected, docker.TaskOrphaned, docker.TaskComplete:
		return true
	}
	return !j.nodeUp(t.NodeID)
}

// slots lays out the workload's tasks by slot. rel RelUpToDate judges
// them against the desired spec; RelExtra and RelUnknown (a workload not
// desired, or not resolved) give every task that relation, or surplus
// and orphan outside the desired slots.
func (sw *swarmWorkload) slots(rel Relation) swarmSlots {
	j := taskJudge{prefix: sw.prefix, nodes: sw.nodes}
	if rel == RelUpToDate {
		j.hash, j.image = sw.w.Hash, sw.w.Image
	}
	switch {
	case sw.svc != nil:
		hc := sw.svc.Spec.Task.Healthcheck
		j.healthcheck = hc != nil && !slices.Equal(hc.Test, []string{"NONE"})
	case sw.w != nil:
		j.healthcheck = sw.w.Healthcheck != nil
	}
	live := map[int][]*docker.Task{}
	all := map[int][]*docker.Task{}
	wantedSlots := map[int]bool{}
	for _, t := range sw.tasks {
		n := t.Slot
		if n < 1 {
			n = NoSlot
		}
		all[n] = append(all[n], t)
		if wanted(t) || !t.State.Ended() {
			live[n] = append(live[n], t)
		}
		if wanted(t) && n != NoSlot {
			wantedSlots[n] = true
		}
	}
	desired := map[int]bool{}
	if sw.w != nil {
		// The first replicas of the slots Swarm keeps a task for, then
		// the lowest free numbers, which Swarm takes next.
		ws := slices.Sorted(maps.Keys(wantedSlots))
		for _, n := range ws[:min(sw.w.Replicas, len(ws))] {
			desired[n] = true
		}
		for n := 1; len(desired) < sw.w.Replicas; n++ {
			if !wantedSlots[n] {
				desired[n] = true
			}
		}
	}
	nums := slices.Sorted(maps.Keys(live))
	for n := range desired {
		if _, ok := live[n]; !ok {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	if len(nums) > 0 && nums[0] == NoSlot { // orphans last
		nums = append(nums[1:], NoSlot)
	}

	var out swarmSlots
	for _, n := range nums {
		st := SlotState{Workload: sw.name, Slot: n, Desired: desired[n]}
		info := slotInfo{svc: sw.svc, desired: desired[n]}
		ts := live[n]
		switch {
		case rel == RelUpToDate && desired[n]:
			var fresh, stale []*docker.Task
			for _, t := range ts {
				if j.upToDate(t) {
					fresh = append(fresh, t)
				} else {
					stale = append(stale, t)
				}
			}
			slices.SortStableFunc(fresh, func(a, b *docker.Task) int {
				return cmp.Or(cmp.Compare(rank(j.of(a)), rank(j.of(b))), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
			})
			for k, t := range fresh {
				cs := sw.taskState(j, t, all[n], RelDuplicate)
				if k == 0 {
					cs.Relation = RelUpToDate
				}
				st.Containers = append(st.Containers, cs)
				if wanted(t) {
					info.fresh = append(info.fresh, t)
				}
			}
			for _, t := range stale { // by creation already
				cs := sw.taskState(j, t, all[n], RelStale)
				if t.Spec == "" {
					cs.Relation = RelLegacy
				}
				cs.Drift = taskDrift(t, sw.w)
				st.Containers = append(st.Containers, cs)
				if wanted(t) {
					info.stale = append(info.stale, t)
				}
			}
			if len(fresh) > 0 && wanted(fresh[0]) {
				info.primary, info.cond, info.node = fresh[0], j.of(fresh[0]), sw.nodeName(fresh[0].NodeID)
				if p := predecessor(fresh[0], all[n]); p != nil && j.engineFailed(p) {
					info.prev, info.prevDown, info.prevNode = p, !j.nodeUp(p.NodeID), sw.nodeName(p.NodeID)
				}
			}
			st.serve()
		default:
			r := rel
			if rel == RelUpToDate || (rel == RelUnknown && !desired[n]) {
				r = RelSurplus
				if n == NoSlot {
					r = RelOrphan
				}
			}
			for _, t := range ts {
				st.Containers = append(st.Containers, sw.taskState(j, t, all[n], r))
				switch {
				case !wanted(t):
				case j.upToDate(t):
					// A surplus slot's task of the desired spec: Swarm is to
					// retire it, and a paced roll waits for it all the same.
					info.fresh = append(info.fresh, t)
					if info.primary == nil {
						info.primary, info.cond, info.node = t, j.of(t), sw.nodeName(t.NodeID)
					}
				default:
					info.stale = append(info.stale, t)
				}
			}
		}
		out.states = append(out.states, st)
		out.info = append(out.info, info)
	}
	return out
}

// taskState is a task as a container of its slot; slot are all the
// slot's tasks, to tell whether Swarm replaced its predecessor: the task
// created last before it failed or lost its node, whatever its spec (the
// updater retires an old task by shutting it down; Swarm's restart
// supervisor replaces a failed one on the service's current spec, so an
// old task that crashes mid-roll comes back on the new one, a step no one
// approved).
func (sw *swarmWorkload) taskState(j taskJudge, t *docker.Task, slot []*docker.Task, rel Relation) ContainerState {
	cs := ContainerState{ID: t.ID, Name: taskName(sw.svc, t), Relation: rel, Condition: j.of(t)}
	if p := predecessor(t, slot); p != nil && j.engineFailed(p) {
		cs.EngineReplaced = true
	}
	return cs
}

// predecessor is the task of the slot created last before t; nil if none.
func predecessor(t *docker.Task, slot []*docker.Task) *docker.Task {
	var best *docker.Task
	for _, o := range slot {
		if o == t || !before(o, t) {
			continue
		}
		if best == nil || before(best, o) {
			best = o
		}
	}
	return best
}

// before orders tasks by creation, then ID.
func before(a, b *docker.Task) bool {
	return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID)) < 0
}

// taskDrift is how a stale task differs from w: a task without a spec
// label only says so.
func taskDrift(t *docker.Task, w *spec.Resolved) []Drift {
	if t.Spec == "" {
		return []Drift{{Field: DriftLegacy}}
	}
	var out []Drift
	if !imageIs(t.Image, w.Image) {
		out = append(out, Drift{DriftImage, t.Image, w.Image})
	}
	if t.Spec != w.Hash {
		out = append(out, Drift{DriftSpec, short(t.Spec), short(w.Hash)})
	}
	return out
}

// left counts the desired slots Swarm is yet to update: a task of an older
// spec that Swarm wants running, and none of the desired spec.
func (s swarmSlots) left() int {
	n := 0
	for _, in := range s.info {
		if in.desired && len(in.fresh) == 0 && len(in.stale) > 0 {
			n++
		}
	}
	return n
}

// onSpec counts the desired slots with a task of the desired spec that
// Swarm wants running.
func (s swarmSlots) onSpec() int {
	n := 0
	for _, in := range s.info {
		if in.desired && len(in.fresh) > 0 {
			n++
		}
	}
	return n
}

// retiring counts the tasks Swarm still wants running that it is to
// retire: the old task beside a new one that runs, and the tasks of a
// slot past the replicas.
func (s swarmSlots) retiring() int {
	n := 0
	for _, in := range s.info {
		switch {
		case !in.desired:
			n += len(in.stale) + len(in.fresh)
		case in.primary != nil && in.cond.Healthy():
			n += len(in.stale)
		}
	}
	return n
}

// state is the info of slot num, if the workload has it.
func (s swarmSlots) state(num int) (*slotInfo, bool) {
	for i := range s.states {
		if s.states[i].Slot == num {
			return &s.info[i], true
		}
	}
	return nil, false
}

// placedSince reports whether Swarm's updater placed a task since it
// began (its UpdateStarted, set as it starts on a write): a task of the
// desired spec created at or after then. Before, the last write's step
// has not been taken yet.
func (s swarmSlots) placedSince(state docker.UpdateState, started time.Time) bool {
	if state != docker.UpdateUpdating || started.IsZero() {
		return false
	}
	for _, in := range s.info {
		for _, t := range in.fresh {
			if !t.CreatedAt.Before(started) {
				return true
			}
		}
	}
	return false
}

// bootWaits are the waits of the slots (a surplus one's too) whose task
// of the desired spec is not RUNNING: starting (or restarted by Swarm), or crashed and
// being replaced by Swarm.
func (s swarmSlots) bootWaits(w *spec.Resolved, paced bool) []Step {
	var out []Step
	for i, in := range s.info {
		p := in.primary
		if p == nil || in.cond.Healthy() {
			continue
		}
		st := Step{Action: ActWait, Workload: w.Name, Slot: s.states[i].Slot, Container: taskName(in.svc, p)}
		switch {
		case in.cond == ConditionCrashed:
			st.Wait = WaitRestarting
			st.Why = Reason{Kind: ReasonSwarmCrashed, TaskState: p.State, TaskErr: p.Err, Node: in.node, NodeDown: !p.State.Ended()}
		case in.prev != nil:
			st.Wait = WaitBoot
			st.Why = Reason{Kind: ReasonSwarmRestarted, TaskState: in.prev.State, Message: p.Message, TaskErr: in.prev.Err,
				Node: in.prevNode, NodeDown: in.prevDown, Paced: paced}
		default:
			st.Wait = WaitBoot
			st.Why = Reason{Kind: ReasonSwarmStarting, TaskState: p.State, Message: p.Message, Deadline: w.Update.HealthDeadline, Paced: paced}
			st.Until = p.CreatedAt.Add(w.Update.HealthDeadline)
		}
		out = append(out, st)
	}
	return out
}

// queueWaits are the waits of the desired slots with no task of the
// desired spec: queued for Swarm's updater (paced: for a later step), or
// not yet placed.
func (s swarmSlots) queueWaits(w *spec.Resolved, paced bool) []Step {
	var out []Step
	for i, in := range s.info {
		if !in.desired || len(in.fresh) > 0 {
			continue
		}
		st := Step{Action: ActWait, Workload: w.Name, Slot: s.states[i].Slot, Container: in.svc.Spec.Name}
		switch {
		case len(in.stale) == 0:
			st.Wait, st.Why = WaitSwarm, Reason{Kind: ReasonSwarmPlacing}
		case paced:
			st.Container = taskName(in.svc, in.stale[0])
			st.Wait, st.Why = WaitQueue, Reason{Kind: ReasonSwarmQueued, Paced: true}
		default:
			u := in.svc.Spec.Update
			st.Container = taskName(in.svc, in.stale[0])
			st.Wait, st.Why = WaitSwarm, Reason{Kind: ReasonSwarmQueued, Parallelism: u.Parallelism, Order: cmp.Or(u.Order, spec.OrderStopFirst)}
		}
		out = append(out, st)
	}
	return out
}

// stuck are the Failures of a roll's tasks not RUNNING within
// health_deadline of their creation while Swarm's update is under way:
// Swarm's updater waits for a task to run with no timeout of its own.
func (s swarmSlots) stuck(w *spec.Resolved, svc *docker.Service, now time.Time) []Failure {
	if svc.UpdateState != docker.UpdateUpdating {
		return nil
	}
	var out []Failure
	for i, in := range s.info {
		p := in.primary
		if !in.desired || p == nil || in.cond != ConditionBooting || now.Before(p.CreatedAt.Add(w.Update.HealthDeadline)) {
			continue
		}
		out = append(out, Failure{Workload: w.Name, Slot: s.states[i].Slot, Container: taskName(svc, p), Action: w.Update.FailureAction,
			Why: Reason{Kind: ReasonSwarmStuck, TaskState: p.State, Message: p.Message, Deadline: w.Update.HealthDeadline}})
	}
	return out
}

// taskName is a task's name as Docker names its container:
// "<service>.<slot>.<task ID>".
func taskName(svc *docker.Service, t *docker.Task) string {
	return svc.Spec.Name + "." + strconv.Itoa(t.Slot) + "." + t.ID
}

func sortedTasks(ts []*docker.Task) []*docker.Task {
	slices.SortFunc(ts, func(a, b *docker.Task) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return ts
}

func nodesOf(ns []docker.Node) map[string]*docker.Node {
	out := make(map[string]*docker.Node, len(ns))
	for i := range ns {
		out[ns[i].ID] = &ns[i]
	}
	return out
}

// SwarmContainers are the tasks of prefix's managed services as
// containers, for the views that list a slot's containers beside
// Plan.Slots (a ContainerState's ID is its task's): named as Docker names
// a task's container, the task's image, Swarm's slot and the task's spec
// hash as labels, its state as a container's (running from STARTING on,
// created with a start in flight before, exited once it ended), health
// from Swarm's word (STARTING, or RUNNING with a healthcheck: healthy),
// Swarm's error text, and the node's hostname. Only the views read them:
// Diff never plans for them, and they carry no managed label.
func SwarmContainers(prefix string, o *SwarmObserved) []docker.Container {
	managed, workloadKey := docker.ManagedLabel(prefix), docker.WorkloadLabel(prefix)
	svcs := map[string]*docker.Service{}
	for i := range o.Services {
		if s := &o.Services[i]; s.Spec.Labels[managed] == "true" && s.Spec.Labels[workloadKey] != "" {
			svcs[s.ID] = s
		}
	}
	nodes := nodesOf(o.Nodes)
	var out []docker.Container
	for i := range o.Tasks {
		t := &o.Tasks[i]
		svc := svcs[t.ServiceID]
		if svc == nil {
			continue
		}
		hc := svc.Spec.Task.Healthcheck
		c := docker.Container{
			ID: t.ID, Name: taskName(svc, t), Image: t.Image,
			Labels: map[string]string{workloadKey: svc.Spec.Labels[workloadKey], docker.SlotLabel(prefix): strconv.Itoa(t.Slot),
				docker.SpecLabel(prefix): t.Spec},
			HasHealthcheck: hc != nil && !slices.Equal(hc.Test, []string{"NONE"}),
			ExitCode:       t.ExitCode, Error: t.Err, Created: t.CreatedAt,
		}
		if n := nodes[t.NodeID]; n != nil {
			c.Node = n.Hostname
		}
		switch {
		case t.State.Ended():
			c.State, c.FinishedAt = docker.StateExited, t.Since
		case t.State == docker.TaskRunning:
			c.State, c.StartedAt = docker.StateRunning, t.Since
			if c.HasHealthcheck {
				c.Health, c.HealthySinceStart = docker.HealthHealthy, true
			}
		case t.State == docker.TaskStarting:
			c.State, c.StartedAt, c.Health = docker.StateRunning, t.Since, docker.HealthStarting
		default:
			c.State, c.Starting = docker.StateCreated, true
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b docker.Container) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	return out
}
