package session

import (
	"context"
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// This file is the session on a Swarm (DESIGN §13): the same loop, with
// the swarm manager's services and tasks in place of a host's containers.
// What changes, and only here:
//
//   - Observe: a relist reads the managed services, their tasks and the
//     nodes (Options.Swarm) instead of the containers; the tasks are shown
//     as containers (reconcile.SwarmContainers), with their node. Swarm
//     has no task events, so while anything moves (a step in flight, a
//     wait, Swarm's updater at work) the session relists every
//     swarmPollMoving, as docker/cli's progress does, and every
//     swarmPollStill otherwise; the resync and image events stay as on a
//     host.
//   - Identity: the swarm's cluster ID names it (EngineInfo.ID), so the
//     lock, the holds, the revisions and the journal are per swarm,
//     whichever manager is reached.
//   - Diff: reconcile.DiffSwarm, paced (one slot per approval) in step
//     mode unless the operator approved the whole rollout (A), unpaced
//     otherwise; pins and holds go in as on a host.
//   - Steps: a step with a Service runs through reconcile.RunSwarm on the
//     swarm client the mode allows: read-only in watch, scoped to the
//     prefix's managed services while acting with the lock held.
//   - Retry: beside lifting holds, a workload whose update Swarm paused on
//     a failure is resumed (SwarmObserved.Resume) by the next plan's write.
//
// Everything else (modes, approvals, the fresh-diff rule, the journal,
// holds, pins, revisions, notify, the standing) reads the plan and the
// facts as on a host.

const (
	swarmPollMoving = 200 * time.Millisecond
	swarmPollStill  = 2 * time.Second
)

// swarmState is what the loop keeps of a swarm: nil fields on a host.
type swarmState struct {
	swarmRaw docker.Swarm // reads, and steps while acting with the lock held
	swarmRO  docker.Swarm // steps otherwise: refuses every write

	swarmScoped       docker.Swarm
	swarmScopedPrefix string

	swarmObs    *reconcile.SwarmObserved // the last read: services, tasks, nodes
	swarmResume map[string]bool          // workloads whose paused update the operator retried
}

func newSwarmState(s docker.Swarm) swarmState {
	if s == nil {
		return swarmState{}
	}
	return swarmState{swarmRaw: s, swarmRO: docker.ReadOnlySwarm(s), swarmResume: map[string]bool{}}
}

// onSwarm reports whether the session drives a swarm.
func (w *swarmState) onSwarm() bool { return w.swarmRaw != nil }

// scopedFor is the swarm client a step acts through while acting: it
// touches only the prefix's managed services.
func (w *swarmState) scopedFor(prefix string) docker.Swarm {
	if w.swarmScoped == nil || w.swarmScopedPrefix != prefix {
		w.swarmScoped, w.swarmScopedPrefix = docker.ScopedSwarm(w.swarmRaw, prefix), prefix
	}
	return w.swarmScoped
}

// swarmRead is one read of the manager, beside the loop.
type swarmRead struct {
	info *docker.SwarmInfo
	obs  *reconcile.SwarmObserved
}

// readSwarm reads the manager: its swarm (when needInfo), the managed
// services of prefix, their tasks and the nodes.
func readSwarm(ctx context.Context, s docker.Swarm, prefix string, needInfo bool) (swarmRead, error) {
	var r swarmRead
	if needInfo {
		info, err := s.SwarmInfo(ctx)
		if err != nil {
			return r, err
		}
		r.info = &info
	}
	obs := &reconcile.SwarmObserved{}
	var err error
	if obs.Services, err = s.Services(ctx, prefix); err != nil {
		return r, fmt.Errorf("list services: %w", err)
	}
	if obs.Tasks, err = s.Tasks(ctx, prefix); err != nil {
		return r, fmt.Errorf("list tasks: %w", err)
	}
	if obs.Nodes, err = s.Nodes(ctx); err != nil {
		return r, fmt.Errorf("list nodes: %w", err)
	}
	r.obs = obs
	return r, nil
}

// swarmObserved is the read in hand with the session's marks, for
// DiffSwarm at the plan's Now.
func (l *loop) swarmObserved() *reconcile.SwarmObserved {
	o := reconcile.SwarmObserved{}
	if l.swarmObs != nil {
		o = *l.swarmObs
	}
	o.Now = l.observed.engine
	o.Holds = l.holds
	o.Paced = l.mode == ModeStep && l.rollout == nil
	o.Resume = l.swarmResume
	return &o
}

// swarmMoving reports whether anything of the swarm moves, so that it is
// read again soon: a step in flight, a wait, an update Swarm runs.
func (l *loop) swarmMoving() bool {
	if len(l.running) > 0 {
		return true
	}
	for _, s := range l.plan.Steps() {
		if s.Action == reconcile.ActWait {
			return true
		}
	}
	if l.swarmObs != nil {
		for _, svc := range l.swarmObs.Services {
			if svc.UpdateState == docker.UpdateUpdating || svc.UpdateState == docker.UpdateRollbackStarted {
				return true
			}
		}
	}
	return false
}

// swarmPoll is when a swarm is read again with nothing else asking: Swarm
// says nothing of its tasks by itself.
func (l *loop) swarmPoll() time.Duration {
	if l.swarmMoving() {
		return swarmPollMoving
	}
	return swarmPollStill
}

// resumeSwarm marks a workload whose update Swarm paused to be resumed by
// the next plan (the operator's retry); it reports whether there was one.
func (l *loop) resumeSwarm(workload string) bool {
	if !l.onSwarm() || l.swarmObs == nil {
		return false
	}
	name := docker.ServiceName(l.prefix, workload)
	for _, svc := range l.swarmObs.Services {
		if svc.Spec.Name == name && (svc.UpdateState == docker.UpdatePaused || svc.UpdateState == docker.UpdateRollbackPaused) {
			l.swarmResume[workload] = true
			return true
		}
	}
	return false
}

// resumed forgets a retried workload once its resume was written.
func (w *swarmState) resumed(s reconcile.Step) {
	if s.Action == reconcile.ActResume {
		delete(w.swarmResume, s.Workload)
	}
}

// ReadSwarm is one read of a swarm manager for a one-shot plan: the
// managed services of prefix, their tasks and the nodes (Now and the
// marks are the caller's).
func ReadSwarm(ctx context.Context, s docker.Swarm, prefix string) (*reconcile.SwarmObserved, error) {
	r, err := readSwarm(ctx, s, prefix, false)
	return r.obs, err
}

// unpause lifts the session's pause, journaled: the operator's Resume, or
// a retry of the update Swarm paused, whose failure paused the session.
func (l *loop) unpause() {
	if l.pause == nil {
		return
	}
	l.fact(Fact{Kind: FactResumed, Pause: l.pause})
	l.pause = nil
}
