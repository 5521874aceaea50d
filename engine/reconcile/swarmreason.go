package reconcile

import (
	"fmt"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
)

// The reasons of a Swarm's steps, waits and failures (swarm.go), each with
// the Reason fields its words are made of.
const (
	// Writes.
	ReasonSwarmCreate    ReasonKind = "swarm-create"    // the service is missing: Replicas
	ReasonSwarmDuplicate ReasonKind = "swarm-duplicate" // a second service of the workload: Serving (the one kept)
	ReasonSwarmScale     ReasonKind = "swarm-scale"     // only the replicas differ: From, Replicas
	ReasonSwarmRollout   ReasonKind = "swarm-rollout"   // a new task template, unpaced: Replicas, Parallelism, Order, Delay, Drift, Image
	ReasonSwarmStep      ReasonKind = "swarm-step"      // paced: one slot per approval: Done, Replicas, Switch; the first: Drift, Image
	ReasonSwarmSettings  ReasonKind = "swarm-settings"  // the file's update settings: Left, Paced, Parallelism, Order (Drift: placement, service labels beside)
	ReasonSwarmService   ReasonKind = "swarm-service"   // placement or service labels differ: Drift
	ReasonSwarmResume    ReasonKind = "swarm-resume"    // the operator's retry of an update Swarm paused: Left

	// Waits.
	ReasonSwarmStarting  ReasonKind = "swarm-starting"  // a task of the desired spec not yet RUNNING: TaskState, Message, Deadline, Paced
	ReasonSwarmRestarted ReasonKind = "swarm-restarted" // Swarm replaced a failed task by itself, the new one not yet RUNNING: TaskState, TaskErr (the failed one's), Node, NodeDown, Paced
	ReasonSwarmCrashed   ReasonKind = "swarm-crashed"   // a task ended, or its node is down, while Swarm wants it running: TaskState, TaskErr, Node, NodeDown
	ReasonSwarmQueued    ReasonKind = "swarm-queued"    // a slot on an older spec: Paced; unpaced: Parallelism, Order
	ReasonSwarmPlacing   ReasonKind = "swarm-placing"   // a desired slot with no task yet
	ReasonSwarmPending   ReasonKind = "swarm-pending"   // paced: the last step is written, Swarm has not placed its task
	ReasonSwarmMonitor   ReasonKind = "swarm-monitor"   // every slot done, Swarm watches the new tasks: Deadline (its monitor)
	ReasonSwarmRetiring  ReasonKind = "swarm-retiring"  // Swarm retires old or surplus tasks: Left

	// Failures (and the wait of a paused update).
	ReasonSwarmPaused ReasonKind = "swarm-paused" // Swarm paused the update on a failure: Message, and the failed task's TaskState, TaskErr, Node
	ReasonSwarmStuck  ReasonKind = "swarm-stuck"  // a task of the roll not RUNNING within health_deadline: TaskState, Message, Deadline
)

// swarmWords are a Swarm reason's words; false for any other kind.
func (r Reason) swarmWords() (string, bool) {
	switch r.Kind {
	case ReasonSwarmCreate:
		return fmt.Sprintf("missing: %d %s start on the desired spec; no old task, no downtime", r.Replicas, plural(r.Replicas, "slot")), true
	case ReasonSwarmDuplicate:
		return "duplicate: service " + r.Serving + " is the workload's", true
	case ReasonSwarmScale:
		switch {
		case r.Replicas == 0:
			return fmt.Sprintf("cold: replicas %d → 0; Swarm removes every task", r.From), true
		case r.Replicas > r.From:
			return fmt.Sprintf("scale: replicas %d → %d in place, no task replaced; Swarm takes the lowest free slots", r.From, r.Replicas), true
		}
		return fmt.Sprintf("scale: replicas %d → %d in place, no task replaced; Swarm chooses which tasks go (those not running first, then nodes with the most)",
			r.From, r.Replicas), true
	case ReasonSwarmRollout:
		delay := ""
		if r.Delay > 0 {
			delay = fmt.Sprintf(", delay %s", r.Delay)
		}
		return fmt.Sprintf("Swarm rolls %d %s, %s, %s%s%s: %s", r.Replicas, plural(r.Replicas, "slot"), parallelText(r.Parallelism), r.Order, delay,
			stopFirstSwarm(r.Order), staleWhy(r.Drift, r.Image)), true
	case ReasonSwarmStep:
		const picks = "Swarm picks which slot, and a manager failover may advance one unasked"
		switch {
		case r.Switch:
			return fmt.Sprintf("step mode from here: Swarm updates one more slot (%d of %d on the desired spec), then sleeps until the next approval; %s",
				r.Done, r.Replicas, picks), true
		case len(r.Drift) > 0 || r.Image != "":
			return fmt.Sprintf("step 1: Swarm updates one slot (%d of %d on the desired spec), then sleeps until the next approval; %s: %s",
				r.Done, r.Replicas, picks, staleWhy(r.Drift, r.Image)), true
		}
		return fmt.Sprintf("next step: Swarm updates one more slot (%d of %d on the desired spec); %s", r.Done, r.Replicas, picks), true
	case ReasonSwarmSettings:
		settings := parallelText(r.Parallelism) + ", " + r.Order
		switch {
		case r.Left > 0 && r.Paced:
			return fmt.Sprintf("auto from here: Swarm rolls the %d %s left with the file's update settings (%s)%s",
				r.Left, plural(r.Left, "slot"), settings, stopFirstSwarm(r.Order)), true
		case r.Left > 0:
			return fmt.Sprintf("update settings differ: Swarm rolls the %d %s left with the file's (%s)%s",
				r.Left, plural(r.Left, "slot"), settings, stopFirstSwarm(r.Order)), true
		case r.Paced:
			return "roll done: the file's update settings are written back, which ends Swarm's sleeping updater; no task is replaced", true
		}
		return "update settings differ from the file's: written in place, no task is replaced", true
	case ReasonSwarmService:
		return "service settings differ (" + driftFields(r.Drift) + "): written in place, no task is replaced; " +
			"Swarm moves only the tasks whose node no longer satisfies the placement", true
	case ReasonSwarmResume:
		return fmt.Sprintf("retry: the update Swarm paused is sent again; Swarm goes on with the %d %s left", r.Left, plural(r.Left, "slot")), true
	case ReasonSwarmStarting:
		return fmt.Sprintf("Swarm starts it (task %s%s): RUNNING once healthy, deadline %s%s", r.TaskState, parens(r.Message), r.Deadline, nextStep(r.Paced)), true
	case ReasonSwarmRestarted:
		if r.NodeDown {
			return fmt.Sprintf("Swarm replaced it by itself: node %s is down; RUNNING once healthy%s", r.Node, nextStep(r.Paced)), true
		}
		return fmt.Sprintf("Swarm restarted it by itself: its task %s%s; RUNNING once healthy%s", r.TaskState, errText(r.TaskErr), nextStep(r.Paced)), true
	case ReasonSwarmCrashed:
		if r.NodeDown {
			return fmt.Sprintf("node %s is down: Swarm replaces its task", r.Node), true
		}
		return fmt.Sprintf("task %s%s: Swarm restarts it", r.TaskState, errText(r.TaskErr)), true
	case ReasonSwarmQueued:
		if r.Paced {
			return "queued: a later step; Swarm picks which slot goes next", true
		}
		return fmt.Sprintf("Swarm's updater takes it: %s, %s, in an order of its own", parallelText(r.Parallelism), r.Order), true
	case ReasonSwarmPlacing:
		return "Swarm places its task", true
	case ReasonSwarmPending:
		return "the step is written: Swarm has not placed its task yet", true
	case ReasonSwarmMonitor:
		return fmt.Sprintf("every slot runs the desired spec: Swarm watches the new tasks (monitor %s) before it ends the update", r.Deadline), true
	case ReasonSwarmRetiring:
		return fmt.Sprintf("Swarm retires %d old or surplus %s", r.Left, plural(r.Left, "task")), true
	case ReasonSwarmPaused:
		failed := ""
		if r.TaskState != "" {
			failed = fmt.Sprintf("; a task %s%s", r.TaskState, errText(r.TaskErr))
			if r.Node != "" {
				failed += " on " + r.Node
			}
		}
		return fmt.Sprintf("Swarm paused the update%s%s; nothing more is written until retry", parens(r.Message), failed), true
	case ReasonSwarmStuck:
		return fmt.Sprintf("task %s%s, not RUNNING within health_deadline %s; Swarm's updater waits for it with no timeout",
			r.TaskState, parens(r.Message), r.Deadline), true
	}
	return "", false
}

// stopFirstSwarm is what stop-first costs on a Swarm, in words.
func stopFirstSwarm(order string) string {
	if order == spec.OrderStopFirst {
		return "; stop-first: each slot down until its new task is RUNNING"
	}
	return ""
}

// nextStep says, in step mode, what a not yet RUNNING task holds back.
func nextStep(paced bool) string {
	if paced {
		return "; the next step is offered once it is"
	}
	return ""
}

func parens(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func errText(err string) string {
	if err == "" {
		return ""
	}
	return ": " + err
}

// driftFields names the fields of drift: "placement, service labels".
func driftFields(drift []Drift) string {
	names := make([]string, 0, len(drift))
	for _, d := range drift {
		names = append(names, string(d.Field))
	}
	return strings.Join(names, ", ")
}
