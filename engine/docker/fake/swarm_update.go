package fake

import (
	"cmp"
	"reflect"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// This file is the Swarm's updater, swarmkit's update.Supervisor and
// update.Updater (manager/orchestrator/update/updater.go) as a state
// machine on the fake clock: the same decisions, in the same order, where
// swarmkit's goroutines would be waiting.

// swarmDefaultUpdate is the update (and rollback) config of a spec that
// names none (api/defaults).
var swarmDefaultUpdate = docker.UpdateConfig{Parallelism: 1, Monitor: swarmMonitor,
	FailureAction: docker.FailurePause, Order: docker.OrderStopFirst}

// updater is one run of swarmkit's Updater over a service's slots.
type updater struct {
	s       *Swarm
	v       *swarmService
	spec    docker.ServiceSpec // the goal: the service's spec when it began
	status  *updateStatus      // the service's update status when it began
	cfg     docker.UpdateConfig
	monitor time.Duration

	dirty   int                             // how many slots were dirty when it began: the failure ratio's base
	seen    map[*swarmTask]docker.TaskState // each slot task's desired state when it began: its workers read those
	queue   [][]*swarmTask                  // dirty slots not yet handed to a worker, in Swarm's (seeded) order
	workers []*worker                       // Parallelism of them
	updated map[string]time.Time            // the tasks it made: when each reached RUNNING or an end (zero: not yet)
	failed  map[string]bool
	// pending are the failures seen while no slot waited for a worker:
	// swarmkit's Run reads them only once its workers are done.
	pending []*swarmTask

	halted       bool      // a failure action fired: no further slot is handed out
	stopped      bool      // ... and it was a pause or a rollback: the update is not marked completed
	monitoring   bool      // the workers are done: one more Monitor of watching
	monitorUntil time.Time // when that ends
	done         bool      // run to its end, or cancelled
}

// worker is one of an updater's workers.
type worker struct {
	busy       bool
	task       *swarmTask   // the new task it waits to see RUNNING or ended
	old        []*swarmTask // start-first: the slot's tasks, shut down once task runs
	startFirst bool
	sleepUntil time.Time // its Delay after a slot
}

// supervise is swarmkit's update.Supervisor.Update: an updater already
// working towards the service's spec goes on; any other is cancelled, and a
// new one starts on slots.
func (s *Swarm) supervise(v *swarmService, slots [][]*swarmTask, at time.Time) {
	if u := v.up; u != nil {
		if reflect.DeepEqual(u.spec, v.spec) {
			return
		}
		u.end()
	}
	u := &updater{s: s, v: v, spec: v.spec, updated: map[string]time.Time{}, failed: map[string]bool{}}
	if v.status != nil {
		st := *v.status
		u.status = &st
	}
	v.up = u
	u.run(slots, at)
}

// end stops the updater: cancelled, or run to its end. Its tasks go on.
func (u *updater) end() {
	u.done = true
	if u.v.up == u {
		u.v.up = nil
	}
}

// run is Updater.Run up to its wait: the dirty slots in Swarm's order, the
// update marked in progress, the workers started.
func (u *updater) run(slots [][]*swarmTask, at time.Time) {
	st := u.status
	if st != nil && (st.state == docker.UpdatePaused || st.state == docker.UpdateRollbackPaused) {
		u.end()
		return
	}
	var dirty [][]*swarmTask
	for _, slot := range slots {
		if u.slotDirty(slot) {
			dirty = append(dirty, slot)
		}
	}
	if len(dirty) == 0 {
		if st != nil && (st.state == docker.UpdateUpdating || st.state == docker.UpdateRollbackStarted) {
			u.s.completeUpdate(u.v, at)
		}
		u.end()
		return
	}
	if st == nil {
		u.s.startUpdate(u.v, at)
	}
	u.cfg = u.spec.Update
	if st != nil && st.state == docker.UpdateRollbackStarted {
		u.cfg = u.spec.Rollback
	}
	if u.cfg == (docker.UpdateConfig{}) {
		u.cfg = swarmDefaultUpdate
	}
	u.monitor = cmp.Or(u.cfg.Monitor, swarmMonitor)
	parallelism := cmp.Or(u.cfg.Parallelism, len(dirty))
	u.s.rng.Shuffle(len(dirty), func(i, j int) { dirty[i], dirty[j] = dirty[j], dirty[i] }) // Go's map order
	u.dirty, u.queue = len(dirty), dirty
	u.seen = map[*swarmTask]docker.TaskState{}
	for _, slot := range dirty {
		for _, t := range slot {
			u.seen[t] = t.Desired
		}
	}
	for range parallelism {
		u.workers = append(u.workers, &worker{})
	}
	u.pump(at)
}

func (u *updater) taskDirty(t *swarmTask) bool {
	// A placement change alone dirties only a task whose node no longer
	// satisfies the constraints (swarmkit's IsTaskDirty).
	return !reflect.DeepEqual(u.spec.Task, t.tmpl) || !reflect.DeepEqual(endpointOf(u.spec), t.endpoint) ||
		(t.NodeID != "" && !u.s.nodeFits(u.s.node(t.NodeID), u.spec.Placement))
}

func (u *updater) slotDirty(slot []*swarmTask) bool {
	return len(slot) > 1 || (len(slot) == 1 && u.taskDirty(slot[0]))
}

// pump hands slots to idle workers while there are any and no failure
// action stopped it; once every worker is done, the failures seen meanwhile
// are weighed and one more Monitor begins (or, stopped, it ends).
func (u *updater) pump(at time.Time) {
	for !u.done && !u.halted && len(u.queue) > 0 {
		i := slices.IndexFunc(u.workers, func(w *worker) bool { return !w.busy })
		if i < 0 {
			return
		}
		slot := u.queue[0]
		u.queue = u.queue[1:]
		u.work(u.workers[i], slot, at)
	}
	if u.done || u.monitoring || (!u.halted && len(u.queue) > 0) ||
		slices.ContainsFunc(u.workers, func(w *worker) bool { return w.busy }) {
		return
	}
	if u.stopped {
		u.end()
		return
	}
	u.monitoring = true
	pending := u.pending
	u.pending = nil
	for _, t := range pending {
		if u.weigh(t, at) {
			u.monitored(at)
			return
		}
	}
	u.monitorUntil = at.Add(u.monitor)
}

// work is the worker's body for one slot (Updater.worker): a task of the
// slot already on the goal is kept and the others shut down; otherwise a
// new task is made, start-first beside the old ones, stop-first once they
// stopped, and the worker waits for it. Like swarmkit's, it judges the
// slot as it was when the update began (a task the restart supervisor
// made since is not in it: swarmkit#2242).
func (u *updater) work(w *worker, slot []*swarmTask, at time.Time) {
	w.busy = true
	var existing *swarmTask
	for _, t := range slot {
		if u.taskDirty(t) {
			continue
		}
		if u.seen[t] == docker.TaskRunning {
			existing = t
			break
		}
		if u.seen[t] == docker.TaskReady {
			existing = t
		}
	}
	if existing != nil {
		u.useExisting(slot, existing, at)
		if !u.done {
			u.afterSlot(w, at)
		}
		return
	}
	n := u.s.newTask(u.v, u.spec, slot[0].Slot, at)
	u.updated[n.ID] = time.Time{}
	w.task = n
	if u.cfg.Order == docker.OrderStartFirst {
		w.old, w.startFirst = slot, true
		u.s.run(n, at)
		return
	}
	old := u.s.removeOld(slot, at)
	u.s.startAfter(n, old, at)
}

func (u *updater) useExisting(slot []*swarmTask, existing *swarmTask, at time.Time) {
	var others []*swarmTask
	for _, t := range slot {
		if t != existing {
			others = append(others, t)
		}
	}
	if len(others) == 0 && u.seen[existing] == docker.TaskRunning {
		return
	}
	var old *swarmTask
	if len(others) > 0 {
		old = u.s.removeOld(others, at)
	}
	if u.seen[existing] != docker.TaskRunning && existing.Desired == docker.TaskReady {
		u.s.startAfter(existing, old, at)
	}
}

// removeOld shuts down the tasks of a slot that should still run, and
// returns the last of them (Updater.removeOldTasks).
func (s *Swarm) removeOld(tasks []*swarmTask, at time.Time) *swarmTask {
	var removed *swarmTask
	for _, t := range tasks {
		if t.Desired != docker.TaskRunning && t.Desired != docker.TaskReady {
			continue
		}
		s.shutdown(t, docker.TaskShutdown, at)
		removed = t
	}
	return removed
}

// progress tells the updater that t is RUNNING or over: the worker waiting
// on it (start-first: once it runs, the slot's old tasks are shut down)
// goes on to its Delay.
func (u *updater) progress(t *swarmTask, at time.Time) {
	if u.done || (t.State != docker.TaskRunning && !t.State.Ended()) {
		return
	}
	for _, w := range u.workers {
		if w.task != t {
			continue
		}
		u.updated[t.ID] = at
		w.task = nil
		if w.startFirst && t.State == docker.TaskRunning {
			u.s.removeOld(w.old, at)
		}
		w.old, w.startFirst = nil, false
		if !u.done {
			u.afterSlot(w, at)
		}
		return
	}
}

func (u *updater) afterSlot(w *worker, at time.Time) {
	if u.cfg.Delay > 0 {
		w.sleepUntil = at.Add(u.cfg.Delay)
		return
	}
	w.busy = false
	u.pump(at)
}

// slept is a worker's Delay over.
func (u *updater) slept(w *worker, at time.Time) {
	w.sleepUntil = time.Time{}
	w.busy = false
	u.pump(at)
}

// monitored is the last Monitor over (or cut short by a failure action):
// unless paused or rolled back, the update is marked completed.
func (u *updater) monitored(at time.Time) {
	u.monitorUntil = time.Time{}
	if !u.stopped {
		u.s.completeUpdate(u.v, at)
	}
	u.end()
}

// taskEnded is a task of the service over: a failure the updater weighs
// (at once while its Run waits to hand a slot out or watches its last
// Monitor; else once its workers are done), then the progress of the
// worker waiting on it.
func (u *updater) taskEnded(t *swarmTask, at time.Time) {
	if u.done {
		return
	}
	switch {
	case u.cfg.FailureAction == docker.FailureContinue || u.stopped:
	case u.monitoring:
		if u.weigh(t, at) && !u.done {
			u.monitored(at)
		}
	case !u.halted && len(u.queue) > 0:
		u.weigh(t, at)
	default:
		u.pending = append(u.pending, t)
	}
	u.progress(t, at)
}

// weigh is swarmkit's failureTriggersAction: a task this updater made that
// failed before RUNNING, or within Monitor after, counts; past
// MaxFailureRatio of the dirty slots the failure action fires. It reports
// whether it fired.
func (u *updater) weigh(t *swarmTask, at time.Time) bool {
	if u.failed[t.ID] {
		return false
	}
	started, found := u.updated[t.ID]
	if !found || (!started.IsZero() && at.Sub(started) > u.monitor) {
		return false
	}
	u.failed[t.ID] = true
	if float32(len(u.failed))/float32(u.dirty) <= u.cfg.MaxFailureRatio {
		return false
	}
	switch u.cfg.FailureAction {
	case docker.FailurePause:
		u.halted, u.stopped = true, true
		u.s.pauseUpdate(u.v, "update paused due to failure or early termination of task "+t.ID, at)
	case docker.FailureRollback:
		if u.status != nil && u.status.state == docker.UpdateRollbackStarted {
			// Never roll back a rollback. As in swarmkit, this halts the
			// slots but leaves the update to be marked completed after
			// the last Monitor.
			u.halted = true
			u.s.pauseUpdate(u.v, "rollback paused due to failure or early termination of task "+t.ID, at)
			return true
		}
		u.halted, u.stopped = true, true
		u.s.rollbackUpdate(u.v, "update rolled back due to failure or early termination of task "+t.ID, at)
	}
	return true
}

// The updater's writes of the service's update status; each is a write,
// with a new version.

func (s *Swarm) startUpdate(v *swarmService, at time.Time) {
	if v.status != nil {
		return
	}
	v.status = &updateStatus{state: docker.UpdateUpdating, message: "update in progress", started: at}
	s.write(v, at)
}

func (s *Swarm) pauseUpdate(v *swarmService, message string, at time.Time) {
	if v.status == nil {
		return // the service was written since: the pause is lost, as in swarmkit
	}
	if v.status.state == docker.UpdateRollbackStarted {
		v.status.state = docker.UpdateRollbackPaused
	} else {
		v.status.state = docker.UpdatePaused
	}
	v.status.message = message
	s.write(v, at)
}

// rollbackUpdate restores PreviousSpec as the spec, drops it, and marks a
// rollback started; the orchestrator then reconciles the service, whose
// new updater runs with the Rollback settings. Without a PreviousSpec
// nothing is written.
func (s *Swarm) rollbackUpdate(v *swarmService, message string, at time.Time) {
	if v.status == nil || v.prev == nil {
		return
	}
	v.status.state, v.status.message = docker.UpdateRollbackStarted, message
	v.spec, v.prev = *v.prev, nil
	s.write(v, at)
	s.reconcile(v, at)
}

func (s *Swarm) completeUpdate(v *swarmService, at time.Time) {
	if v.status == nil {
		return // the service was written since
	}
	if v.status.state == docker.UpdateRollbackStarted {
		v.status.state, v.status.message = docker.UpdateRollbackCompleted, "rollback completed"
	} else {
		v.status.state, v.status.message = docker.UpdateCompleted, "update completed"
	}
	s.write(v, at)
}
