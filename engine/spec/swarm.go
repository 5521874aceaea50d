package spec

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// This file is the desired state's side of a Docker Swarm (DESIGN §13):
// the top-level engine key, and what a workload has only as a Swarm
// service. What a swarm cannot honour is refused by engine/source/load
// from one table (load.SwarmRules), which the README shows.

// Engine is what a desired state runs on: the top-level engine key.
type Engine string

const (
	// EngineDocker: plain Docker engines, one (--docker-host,
	// DOCKER_HOST) or several (hosts:). The default.
	EngineDocker Engine = "docker"
	// EngineSwarm: the endpoint is a manager of a swarm; each workload is
	// the service ServiceName(prefix, workload) and its slots are Swarm's
	// task slots.
	EngineSwarm Engine = "swarm"
)

// OnSwarm reports whether d runs on a swarm.
func (d *Desired) OnSwarm() bool { return d.Engine == EngineSwarm }

// EndpointMode is how a service's name resolves (endpoint_mode, compose's
// deploy.endpoint_mode).
type EndpointMode string

const (
	// EndpointVIP: the name resolves to one virtual IP that balances over
	// the tasks; published ports go through it. Swarm's default.
	EndpointVIP EndpointMode = "vip"
	// EndpointDNSRR: the name (and tasks.<service>) resolves to every
	// task's own address; no port can be published through Swarm's
	// routing mesh.
	EndpointDNSRR EndpointMode = "dnsrr"
)

// RestartCondition is when Swarm restarts a task (restart_policy.condition).
type RestartCondition string

const (
	RestartNone      RestartCondition = "none"       // never
	RestartOnFailure RestartCondition = "on-failure" // when it exits non-zero
	RestartAny       RestartCondition = "any"        // whenever it ends: Swarm's default
)

// DefaultSwarmRestartDelay is Swarm's own wait between a task's end and its
// restart, when restart_policy gives no delay.
const DefaultSwarmRestartDelay = 5 * time.Second

// SwarmService is what a workload has only as a Swarm service. It is set
// (non-nil) on every workload of a desired state with `engine: swarm`, and
// nil on plain engines, where the keys that fill it are refused.
//
// Two kinds of fields, by what a change of one makes Swarm do (swarmkit's
// IsTaskDirty compares the task template and the endpoint spec):
//
//   - in the spec hash (a change is a new task on every slot, so every
//     task's revision label says what it runs): EndpointMode, Restart,
//     Reservations, and, on a swarm only, the workload's Resources and
//     StopGrace (Swarm keeps both in the task template and updates
//     neither in place);
//   - not in the spec hash, compared by the planner with the service's
//     spec: Labels (service labels, on no task), and Placement (Swarm
//     moves only the tasks whose node no longer matches; a hash label
//     that changed with it would make every task dirty).
type SwarmService struct {
	// EndpointMode is EndpointVIP (the default) or EndpointDNSRR. In the
	// hash: Swarm recreates every task whose endpoint spec differs.
	EndpointMode EndpointMode
	// Placement is where Swarm may place the tasks. Not in the hash.
	Placement Placement
	// Restart is the task restart policy: restart_policy, else the
	// workload's restart: mapped (no: none; always, unless-stopped: any;
	// on-failure[:N]: on-failure, max attempts N). Every default is
	// filled in. In the hash (task template).
	Restart SwarmRestart
	// Reservations are the CPU and memory Swarm reserves on a node to
	// place a task there (resources.reservations); zero for none. In the
	// hash (task template).
	Reservations Resources
	// Labels are the service's own labels (service_labels, compose's
	// deploy.labels), beside rollcall's; nil for none. They are on no
	// task: not in the hash, and a change starts no task.
	Labels map[string]string
}

// Placement is a service's placement, as Swarm takes it.
type Placement struct {
	// Constraints are Swarm's expressions, as written, in file order:
	// "node.role == worker", "node.labels.zone != b".
	Constraints []string `json:",omitempty"`
	// Preferences are the spread descriptors, in file order:
	// "node.labels.zone" for {spread: node.labels.zone}.
	Preferences []string `json:",omitempty"`
	// MaxReplicas is the most tasks of the service on one node
	// (max_replicas_per_node); 0: no limit.
	MaxReplicas int `json:",omitempty"`
}

// SwarmRestart is a task restart policy, as Swarm takes it. After load
// every field is filled in: Condition is never "", Delay is
// DefaultSwarmRestartDelay unless the file gives one.
type SwarmRestart struct {
	Condition   RestartCondition
	Delay       time.Duration // between a task's end and its restart
	MaxAttempts int           // restarts before Swarm gives up; 0: no limit
	Window      time.Duration // the window max attempts are counted in; 0: unbounded
}

// SwarmRestartOf maps a workload's restart: (a Docker restart policy, as
// the loader checked it) onto Swarm's policy, with Swarm's default delay.
func SwarmRestartOf(restart string) SwarmRestart {
	r := SwarmRestart{Condition: RestartAny, Delay: DefaultSwarmRestartDelay}
	n, counted := strings.CutPrefix(restart, "on-failure:")
	switch {
	case restart == "no":
		r.Condition = RestartNone
	case restart == "on-failure":
		r.Condition = RestartOnFailure
	case counted:
		r.Condition = RestartOnFailure
		r.MaxAttempts, _ = strconv.Atoi(n)
	}
	return r
}

// SwarmHostname is the hostname a workload's task template carries:
// "" for the image's; with replicas above 1, per slot through Swarm's
// template, "<hostname>-{{.Task.Slot}}" (Swarm's slots count from 1:
// web-1, web-2, …); with one, as written.
func (w *Workload) SwarmHostname() string {
	h := w.Options.Hostname
	if h == "" || w.Replicas <= 1 {
		return h
	}
	return h + "-{{.Task.Slot}}"
}

// ErrSwarmImageVolume is the Err of a workload on a swarm whose image
// declares a VOLUME that no mount of the workload covers: Swarm would give
// each new task an empty anonymous volume there, so a roll would lose what
// the old task wrote. Nothing of the workload starts or stops (DESIGN §3
// State: the plan refuses it).
var ErrSwarmImageVolume = errors.New("the image declares a VOLUME that Swarm would give each new task empty")

// SwarmImageVolumeHint says what to do instead, for the message of a
// workload refused with ErrSwarmImageVolume, and for the README's table.
const SwarmImageVolumeHint = "mount a named volume (declared under volumes:) or a tmpfs at that target"
