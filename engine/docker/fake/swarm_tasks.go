package fake

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// This file is the Swarm's tasks and orchestrator: how a task moves from
// READY to its end in time, how a service's slots follow its replica count,
// and the restart supervisor (swarmkit's replicated orchestrator and
// restart.Supervisor). The updater is in swarm_update.go.

// taskDue is a time-driven change of a task; a task has one due at a time.
type taskDue int

const (
	atStart     taskDue = iota // a READY task's delay is over: it runs
	atWaitOver                 // stop-first: the task it replaces had its minute to stop
	atHealthy                  // STARTING: its healthcheck passes, RUNNING
	atUnhealthy                // STARTING: its healthcheck fails, FAILED
	atCrash                    // its container exits
	atOrphan                   // on a down node for OrphanAfter
)

// due is the task's next time-driven change, if any.
func (t *swarmTask) due() (time.Time, taskDue, bool) {
	switch {
	case t.State.Ended():
		return time.Time{}, 0, false
	case !t.orphanAt.IsZero():
		return t.orphanAt, atOrphan, true // its node is down: nothing else is heard of it
	case t.waitStop != nil:
		return t.waitUntil, atWaitOver, true
	case t.Desired == docker.TaskReady && !t.startAt.IsZero():
		return t.startAt, atStart, true
	}
	b := t.behaviour
	crash, crashes := t.started.Add(b.CrashAfter), b.CrashAfter > 0
	switch t.State {
	case docker.TaskStarting:
		ready := t.started.Add(b.ReadyAfter)
		switch {
		case crashes && crash.Before(ready):
			return crash, atCrash, true
		case b.Unhealthy:
			return ready, atUnhealthy, true
		}
		return ready, atHealthy, true
	case docker.TaskRunning:
		if crashes {
			return crash, atCrash, true
		}
	}
	return time.Time{}, 0, false
}

// advance applies every change due by the clock's now, earliest first
// (tasks in creation order, then the updaters' timers), and returns now.
func (s *Swarm) advance() time.Time {
	now := s.clock.Now()
	for {
		var next func()
		var nextAt time.Time
		consider := func(at time.Time, fire func()) {
			if !at.After(now) && (next == nil || at.Before(nextAt)) {
				next, nextAt = fire, at
			}
		}
		for _, t := range s.tasks {
			if at, kind, ok := t.due(); ok {
				consider(at, func() { s.fireTask(t, kind, at) })
			}
		}
		for _, v := range s.services {
			if u := v.up; u != nil {
				for _, w := range u.workers {
					if !w.sleepUntil.IsZero() {
						consider(w.sleepUntil, func() { u.slept(w, w.sleepUntil) })
					}
				}
				if !u.monitorUntil.IsZero() {
					consider(u.monitorUntil, func() { u.monitored(u.monitorUntil) })
				}
			}
		}
		if next == nil {
			return now
		}
		next()
	}
}

func (s *Swarm) fireTask(t *swarmTask, kind taskDue, at time.Time) {
	switch kind {
	case atStart, atWaitOver:
		s.run(t, at)
	case atHealthy:
		s.setState(t, docker.TaskRunning, "started", at)
		s.taskRunning(t, at)
	case atUnhealthy:
		s.end(t, docker.TaskFailed, "started", 137, "task: non-zero exit (137): dockerexec: unhealthy container", at)
	case atCrash:
		code := t.behaviour.ExitCode
		if t.behaviour.OOM && code == 0 {
			code = 137
		}
		s.exit(t, code, at)
	case atOrphan:
		t.orphanAt = time.Time{}
		s.end(t, docker.TaskOrphaned, "task orphaned (its node is down)", t.ExitCode, t.Err, at)
	}
}

func (s *Swarm) setState(t *swarmTask, state docker.TaskState, message string, at time.Time) {
	t.State, t.Message, t.Since = state, message, at
}

// newTask makes a task of spec (the service's, or the goal of an updater)
// in slot, READY: its caller runs it, or times its start.
func (s *Swarm) newTask(v *swarmService, spec docker.ServiceSpec, slot int, at time.Time) *swarmTask {
	s.seq++
	t := &swarmTask{seq: s.seq, tmpl: cloneServiceSpec(docker.ServiceSpec{Task: spec.Task}).Task,
		endpoint: endpointOf(spec), placement: cloneServiceSpec(docker.ServiceSpec{Placement: spec.Placement}).Placement}
	t.Task = docker.Task{ID: s.newID(), ServiceID: v.id, Slot: slot, Desired: docker.TaskReady, CreatedAt: at}
	t.behaviour, t.known = s.images[t.tmpl.Image]
	s.setState(t, docker.TaskNew, "created", at)
	s.tasks = append(s.tasks, t)
	s.place(t, at)
	s.reap(v.id, slot)
	return t
}

// place puts a task on the ready, active node with the fewest tasks of its
// service, the first such as a tie-break; with none, the task is pending.
func (s *Swarm) place(t *swarmTask, at time.Time) bool {
	var best *swarmNode
	bestN := 0
	for _, n := range s.nodes {
		if n.State != docker.NodeReady || n.Availability != docker.NodeActive || !s.nodeFits(n, t.placement) {
			continue
		}
		c := 0
		for _, o := range s.tasks {
			if o != t && o.ServiceID == t.ServiceID && o.NodeID == n.ID && !o.State.Ended() &&
				(o.Desired == docker.TaskRunning || o.Desired == docker.TaskReady) {
				c++
			}
		}
		if max := t.placement.MaxReplicas; max > 0 && c >= max {
			continue
		}
		if best == nil || c < bestN {
			best, bestN = n, c
		}
	}
	if best == nil {
		s.setState(t, docker.TaskPending, "pending task scheduling: no suitable node", at)
		return false
	}
	t.NodeID = best.ID
	s.setState(t, docker.TaskReady, "prepared", at)
	return true
}

// placePending places the tasks that waited for a node, and runs those
// that should run.
func (s *Swarm) placePending(at time.Time) {
	for _, t := range slices.Clone(s.tasks) {
		if t.NodeID != "" || t.State.Ended() {
			continue
		}
		if t.Desired == docker.TaskRunning {
			s.run(t, at)
		} else {
			s.place(t, at)
		}
	}
}

// run tells a task to run: its container starts on its node (a task with
// no node waits for one), STARTING until healthy when its template has a
// healthcheck, RUNNING at once otherwise.
func (s *Swarm) run(t *swarmTask, at time.Time) {
	t.Desired = docker.TaskRunning
	t.startAt, t.waitStop, t.waitUntil = time.Time{}, nil, time.Time{}
	if t.NodeID == "" && !s.place(t, at) {
		return
	}
	switch {
	case !t.known:
		s.end(t, docker.TaskRejected, "preparing", 0, "No such image: "+t.tmpl.Image, at)
	case t.behaviour.FailStart:
		s.end(t, docker.TaskFailed, "starting", 128, "starting container failed: simulated start failure (image "+t.tmpl.Image+")", at)
	default:
		t.ContainerID = fmt.Sprintf("%016x%016x%016x%016x", s.rng.Uint64(), s.rng.Uint64(), s.rng.Uint64(), s.rng.Uint64())
		t.started = at
		if t.tmpl.Healthcheck != nil {
			s.setState(t, docker.TaskStarting, "starting", at)
			return
		}
		s.setState(t, docker.TaskRunning, "started", at)
		s.taskRunning(t, at)
	}
}

// exit ends a task's container with code: complete on 0, failed otherwise.
func (s *Swarm) exit(t *swarmTask, code int, at time.Time) {
	if code == 0 {
		s.end(t, docker.TaskComplete, "finished", 0, "", at)
		return
	}
	s.end(t, docker.TaskFailed, "started", code, fmt.Sprintf("task: non-zero exit (%d)", code), at)
}

// end moves a task to an end state and tells whom it concerns: the
// service's updater, the restart supervisor, a task waiting for it to stop.
func (s *Swarm) end(t *swarmTask, state docker.TaskState, message string, code int, errText string, at time.Time) {
	s.setState(t, state, message, at)
	t.ExitCode, t.Err = code, errText
	v := s.service(t.ServiceID)
	if v != nil && v.up != nil {
		v.up.taskEnded(t, at)
	}
	if v != nil && (t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady) {
		s.restart(t, at)
	}
	s.stopped(t, at)
	if t.Desired == docker.TaskRemove {
		s.tasks = slices.DeleteFunc(s.tasks, func(o *swarmTask) bool { return o == t })
	}
}

func (s *Swarm) taskRunning(t *swarmTask, at time.Time) {
	if v := s.service(t.ServiceID); v != nil && v.up != nil {
		v.up.progress(t, at)
	}
}

// stopped starts the tasks that waited for t to stop (stop-first).
func (s *Swarm) stopped(t *swarmTask, at time.Time) {
	for _, w := range slices.Clone(s.tasks) {
		if w.waitStop == t {
			s.run(w, at)
		}
	}
}

// startAfter starts t once old has stopped (at once when there is none,
// or it has), as swarmkit's DelayStart with waitStop.
func (s *Swarm) startAfter(t, old *swarmTask, at time.Time) {
	if old == nil || old.State.Ended() {
		s.run(t, at)
		return
	}
	t.waitStop, t.waitUntil = old, at.Add(swarmOldTaskTimeout)
}

// shutdown sets a task's desired state (shutdown, or remove when its slot
// goes): on a ready node it stops at once; on a down one it stays as it
// was last seen.
func (s *Swarm) shutdown(t *swarmTask, desired docker.TaskState, at time.Time) {
	if t.Desired == docker.TaskShutdown || t.Desired == docker.TaskRemove {
		if desired == docker.TaskRemove {
			t.Desired = desired
		}
	} else {
		t.Desired = desired
		t.startAt, t.waitStop, t.waitUntil = time.Time{}, nil, time.Time{}
	}
	if t.State.Ended() {
		if t.Desired == docker.TaskRemove {
			s.tasks = slices.DeleteFunc(s.tasks, func(o *swarmTask) bool { return o == t })
		}
		return
	}
	if n := s.node(t.NodeID); n != nil && n.State == docker.NodeDown {
		return
	}
	s.end(t, docker.TaskShutdown, "shutdown", 0, "", at)
}

// restart is swarmkit's restart supervisor: a task that should run and
// ended (or whose node is down) is shut down and, unless its restart policy
// says no, replaced in its slot by a task of the service's current spec,
// READY until RestartDelay has passed.
func (s *Swarm) restart(t *swarmTask, at time.Time) {
	t.Desired = docker.TaskShutdown
	v := s.service(t.ServiceID)
	if v == nil || !restarts(t) {
		return
	}
	n := s.newTask(v, v.spec, t.Slot, at)
	n.startAt = at.Add(s.opts.RestartDelay)
}

// restarts reports whether t's restart policy replaces it: any (or none
// said) does, on-failure does unless it completed, none never does.
// MaxAttempts, Window and Delay are not modelled (the delay is
// SwarmOptions.RestartDelay).
func restarts(t *swarmTask) bool {
	switch t.endpoint.restart.Condition {
	case "", docker.RestartAny:
		return true
	case docker.RestartOnFailure:
		return t.State != docker.TaskComplete
	}
	return false
}

// nodeFits reports whether n satisfies p's constraints. The fake models
// node.id, node.hostname and node.role with == and !=; any other key
// (node.labels.*, engine.labels.*, node.platform.*) is taken as
// satisfied, and preferences do not steer placement (the fewest tasks of
// the service wins, as without them).
func (s *Swarm) nodeFits(n *swarmNode, p docker.Placement) bool {
	if n == nil {
		return false
	}
	for _, c := range p.Constraints {
		op := "=="
		k, v, ok := strings.Cut(c, "==")
		if !ok {
			op = "!="
			k, v, _ = strings.Cut(c, "!=")
		}
		var have string
		switch strings.TrimSpace(k) {
		case "node.id":
			have = n.ID
		case "node.hostname":
			have = n.Hostname
		case "node.role":
			have = "worker"
			if n.Manager {
				have = "manager"
			}
		default:
			continue
		}
		if eq := strings.EqualFold(have, strings.TrimSpace(v)); eq != (op == "==") {
			return false
		}
	}
	return true
}

// reap keeps a slot's history to TaskHistory tasks, dropping the oldest
// that are over.
func (s *Swarm) reap(serviceID string, slot int) {
	n := 0
	for _, t := range s.tasks {
		if t.ServiceID == serviceID && t.Slot == slot {
			n++
		}
	}
	s.tasks = slices.DeleteFunc(s.tasks, func(t *swarmTask) bool {
		if n <= s.opts.TaskHistory || t.ServiceID != serviceID || t.Slot != slot ||
			!t.State.Ended() || t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady {
			return false
		}
		n--
		return true
	})
}

// slotTasks are a service's slots that have a task that should run (desired
// READY or RUNNING), by slot number, each holding those tasks oldest first;
// and the slot numbers whose every task is over.
func (s *Swarm) slotTasks(v *swarmService) (live [][]*swarmTask, dead []int) {
	bySlot := map[int][]*swarmTask{}
	all := map[int]bool{}
	for _, t := range s.tasks {
		if t.ServiceID != v.id {
			continue
		}
		all[t.Slot] = true
		if t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady {
			bySlot[t.Slot] = append(bySlot[t.Slot], t)
		}
	}
	for _, n := range sortedKeys(all) {
		if ts, ok := bySlot[n]; ok {
			live = append(live, ts)
		} else {
			dead = append(dead, n)
		}
	}
	return live, dead
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// reconcile is swarmkit's replicated orchestrator, run at every write of a
// service's spec: the tasks of dead slots go, slots are added or removed
// to the replica count, and the updater is handed the slots kept.
func (s *Swarm) reconcile(v *swarmService, at time.Time) {
	live, dead := s.slotTasks(v)
	s.tasks = slices.DeleteFunc(s.tasks, func(t *swarmTask) bool { return t.ServiceID == v.id && slices.Contains(dead, t.Slot) })
	want := v.spec.Replicas
	switch {
	case want > len(live):
		used := map[int]bool{}
		for _, slot := range live {
			used[slot[0].Slot] = true
		}
		n := 0
		for range want - len(live) {
			for n++; used[n]; n++ {
			}
			s.run(s.newTask(v, v.spec, n, at), at)
		}
		s.supervise(v, live, at)
	case want < len(live):
		kept := scaleDownOrder(live)
		s.supervise(v, kept[:want], at)
		for _, slot := range kept[want:] {
			for _, t := range slot {
				s.shutdown(t, docker.TaskRemove, at)
			}
		}
	default:
		s.supervise(v, live, at)
	}
}

// scaleDownOrder sorts slots the way swarmkit keeps them on a scale-down:
// those with a running task first, then the fewer copies of the service
// their node already holds, then the lower slot number.
func scaleDownOrder(live [][]*swarmTask) [][]*swarmTask {
	running := func(slot []*swarmTask) bool {
		return slices.ContainsFunc(slot, func(t *swarmTask) bool { return t.State == docker.TaskRunning })
	}
	out := slices.Clone(live)
	slices.SortStableFunc(out, func(a, b []*swarmTask) int {
		return cmp.Compare(boolRank(!running(a)), boolRank(!running(b)))
	})
	copies := map[string]int{}
	index := map[int]int{}
	for _, slot := range out {
		copies[slot[0].NodeID]++
		index[slot[0].Slot] = copies[slot[0].NodeID]
	}
	slices.SortStableFunc(out, func(a, b []*swarmTask) int {
		return cmp.Or(cmp.Compare(boolRank(!running(a)), boolRank(!running(b))),
			cmp.Compare(index[a[0].Slot], index[b[0].Slot]), cmp.Compare(a[0].Slot, b[0].Slot))
	})
	return out
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
