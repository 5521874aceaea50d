package docker

import (
	"context"
	"errors"
	"time"
)

// This file is rollcall's narrow view of a Docker Swarm (DESIGN §13): the
// calls rollcall makes to a swarm manager, in rollcall's own types. A
// workload is a service named ServiceName(prefix, workload); its slots are
// Swarm's task slots. rollcall never schedules a task itself: it writes a
// service's spec and reads its tasks. The moby adapter implements Swarm
// (engine/docker/moby), so does the fake (engine/docker/fake), and the
// read-only and scope guards wrap it as they wrap Client.

// Swarm is every call rollcall makes to a swarm manager.
//
// Services and Tasks only ever see services carrying
// "<prefix>.managed=true"; callers pass the prefix. Every write names the
// service version it was read at: the manager refuses a stale one with an
// error wrapping ErrOutOfSequence, and the caller reads again and retries.
type Swarm interface {
	// SwarmInfo describes the swarm the engine belongs to. An engine that
	// is not a manager of an active swarm is ErrNotManager.
	SwarmInfo(ctx context.Context) (SwarmInfo, error)
	// Services returns every service labelled <prefix>.managed=true.
	Services(ctx context.Context, prefix string) ([]Service, error)
	// Tasks returns the tasks of the managed services of prefix whose
	// desired state is running or ready, and those that ended since
	// (Swarm keeps a few per slot): the running task of each slot, the
	// one beside it during a start-first update, and the last failures.
	Tasks(ctx context.Context, prefix string) ([]Task, error)
	// Nodes returns the swarm's nodes.
	Nodes(ctx context.Context) ([]Node, error)

	// CreateService creates a service and returns its ID. A name that
	// already exists is ErrConflict. A spec that ServiceSpec.Check refuses
	// is its *SpecError, for CreateService and UpdateService alike, and
	// reaches no manager.
	CreateService(ctx context.Context, spec ServiceSpec) (string, error)
	// UpdateService writes a service's whole spec at version (Service.Version
	// of the read it was made from). A stale version is ErrOutOfSequence.
	UpdateService(ctx context.Context, id string, version uint64, spec ServiceSpec) error
	// RemoveService removes a service and, through Swarm, its tasks.
	RemoveService(ctx context.Context, id string) error
}

// SwarmMutating names the Swarm methods that change the swarm. The
// read-only wrapper refuses exactly these.
var SwarmMutating = []string{"CreateService", "UpdateService", "RemoveService"}

// Typed errors of a swarm, for callers that branch on them.
var (
	// ErrNotManager: the engine is not a manager of an active swarm, so
	// `engine: swarm` cannot drive it.
	ErrNotManager = errors.New("not a swarm manager")
	// ErrOutOfSequence: a write named a service version that is no longer
	// the service's (Swarm's "update out of sequence"): read and retry.
	ErrOutOfSequence = errors.New("update out of sequence")
)

// StackLabel is the label `docker stack deploy` puts on a stack's
// services; rollcall puts it on its own, with the prefix as the stack's
// name, so `docker stack ps <prefix>` lists them.
const StackLabel = "com.docker.stack.namespace"

// StepLabel is the service label whose change advances a step-mode roll by
// one slot (DESIGN §13): a spec write outside the task template cancels
// Swarm's sleeping updater, which then updates the next dirty slot.
func StepLabel(prefix string) string { return prefix + ".step" }

// ServiceName is a workload's service: "<prefix>_<workload>", as
// `docker stack deploy` names a stack's services.
func ServiceName(prefix, workload string) string { return prefix + "_" + workload }

// SwarmInfo describes a swarm as seen from one manager.
type SwarmInfo struct {
	// ClusterID is the swarm's identity: what names it in locks and state
	// files, as EngineInfo.ID names an engine.
	ClusterID string
	NodeID    string // the manager rollcall talks to
	Managers  int
	Nodes     int
}

// ServiceSpec is what rollcall writes for a workload's service.
//
// A spec that passes Check reads back as it was written (Service.Spec), in
// its normal form: an empty list or map is nil, an alias list sits only
// under a network of Task.Networks, Task.Image is as ServiceImage names it
// ("web" is "web:latest"), and Task.Volumes follow the order of their
// mounts. What Check refuses, Swarm cannot honour or would store changed.
type ServiceSpec struct {
	Name string
	// Labels are the service's own labels: the managed label, the
	// workload, the stack namespace and the step counter (StepLabel).
	Labels map[string]string
	// Task is the task template, in a container's terms: image, command,
	// environment, labels (the spec hash among them, so every task shows
	// its revision), healthcheck, stop signal and grace, limits, mounts,
	// networks and their aliases. Task.Name stays empty: Swarm names tasks.
	Task     CreateSpec
	Replicas int
	// Update is how Swarm rolls a change of the task template out, and
	// Rollback how it rolls one back (FailureAction rollback, or a
	// rollback it is asked for). The zero UpdateConfig leaves Swarm's
	// defaults (one slot at a time, pause on a failure, a 5s monitor,
	// stop-first) and reads back zero.
	Update   UpdateConfig
	Rollback UpdateConfig
	// EndpointMode is "dnsrr" or "vip" ("": Swarm's default, vip, and
	// only without Ports: with them it reads back "vip").
	EndpointMode string
	// Ports are the service's published ports. A task template's own
	// (Task.Ports) are refused: a service publishes through its endpoint.
	Ports []ServicePort
	// Placement is where Swarm may place the tasks; the zero Placement
	// is anywhere.
	Placement Placement
	// Restart is the task restart policy. The zero SwarmRestart leaves
	// Swarm's default (any, 5s, no limit) and reads back zero; a non-zero
	// one names its Condition and is sent whole (a zero Delay is a
	// restart at once). Task.Limits.Restart, a container's policy, is
	// refused: a service's is this.
	Restart SwarmRestart
	// Reservations are what Swarm reserves on a node to place a task
	// there (Task.Limits holds the limits).
	Reservations Reservations
	// ResolveImage: the manager resolves Task.Image's tag to a digest at
	// each write (the CLI's default), so every node runs the same image
	// and a tag pushed again is pulled; the spec then reads back with the
	// digest. false sends the reference as written. Write-only: it reads
	// back false.
	ResolveImage bool
}

// Placement is a service's placement, as Swarm holds it.
type Placement struct {
	// Constraints are Swarm's expressions, "node.role == worker",
	// "node.labels.zone != b", stored as written.
	Constraints []string
	// Preferences are spread descriptors, "node.labels.zone", in order.
	Preferences []string
	// MaxReplicas is the most tasks of the service on one node; 0: no
	// limit.
	MaxReplicas int
}

// IsZero reports whether p places anywhere.
func (p Placement) IsZero() bool {
	return len(p.Constraints) == 0 && len(p.Preferences) == 0 && p.MaxReplicas == 0
}

// SwarmRestart is a task restart policy, as Swarm holds it.
type SwarmRestart struct {
	Condition   string        // RestartNone, RestartOnFailure or RestartAny
	Delay       time.Duration // between a task's end and its restart
	MaxAttempts int           // restarts before Swarm gives up; 0: no limit
	Window      time.Duration // the window MaxAttempts are counted in; 0: unbounded
}

// Conditions of a SwarmRestart, as Swarm names them.
const (
	RestartNone      = "none"
	RestartOnFailure = "on-failure"
	RestartAny       = "any"
)

// Reservations are the CPU (in billionths of a CPU) and memory (bytes)
// Swarm reserves for a task.
type Reservations struct {
	NanoCPUs int64
	Memory   int64
}

// ServicePort is one port a service publishes: on every node through
// Swarm's routing mesh (PublishIngress, not with EndpointMode dnsrr), or
// on the node a task runs on (PublishHost).
type ServicePort struct {
	Target    int    // the container's port
	Published int    // 0: Swarm picks one (ingress)
	Proto     string // "tcp", "udp" or "sctp"
	Mode      string // PublishIngress or PublishHost
}

// Publish modes of a ServicePort.
const (
	PublishIngress = "ingress"
	PublishHost    = "host"
)

// UpdateConfig is a service's update (and rollback) settings, as Swarm
// runs them.
//
// A non-zero UpdateConfig names its FailureAction and Order: Swarm stores
// "" as its default, and the spec would read back changed.
type UpdateConfig struct {
	Parallelism     int           // slots updated at once; 0: all
	Delay           time.Duration // after each slot is RUNNING
	Monitor         time.Duration // how long a new task must run before it counts (0: Swarm's 5s)
	FailureAction   string        // FailurePause, FailureRollback or FailureContinue
	Order           string        // OrderStartFirst or OrderStopFirst
	MaxFailureRatio float32       // failures over dirty slots above which FailureAction fires
}

// FailureActions and Orders of an UpdateConfig, as Swarm names them.
const (
	FailurePause    = "pause"
	FailureRollback = "rollback"
	FailureContinue = "continue"
	OrderStartFirst = "start-first"
	OrderStopFirst  = "stop-first"
)

// UpdateState is a service's update status as Swarm reports it.
type UpdateState string

const (
	UpdateNone              UpdateState = ""         // no update has run, or Swarm cleared it
	UpdateUpdating          UpdateState = "updating" // Swarm's updater is at work (or sleeping its Delay)
	UpdatePaused            UpdateState = "paused"   // stopped on a failure (FailureAction pause)
	UpdateCompleted         UpdateState = "completed"
	UpdateRollbackStarted   UpdateState = "rollback_started"
	UpdateRollbackPaused    UpdateState = "rollback_paused"
	UpdateRollbackCompleted UpdateState = "rollback_completed"
)

// Service is a managed service as the manager reports it.
type Service struct {
	ID      string
	Version uint64 // the version a write must name
	Spec    ServiceSpec
	// The update status: its state, Swarm's message (shown, never
	// matched) and when it began; UpdateNone when there is none.
	UpdateState   UpdateState
	UpdateMessage string
	UpdateStarted time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	// PreviousSpec is the spec before the last write, as Swarm keeps it
	// (one level deep, and lost at a rollback): shown, never rolled back
	// to (DESIGN §13). nil when there is none.
	PreviousSpec *ServiceSpec
}

// TaskState is a task's state as Swarm reports it (new … running, then
// complete, shutdown, failed, rejected, orphaned, remove).
type TaskState string

const (
	TaskNew       TaskState = "new"
	TaskAllocated TaskState = "allocated"
	TaskPending   TaskState = "pending"
	TaskAssigned  TaskState = "assigned"
	TaskAccepted  TaskState = "accepted"
	TaskPreparing TaskState = "preparing"
	TaskReady     TaskState = "ready"
	TaskStarting  TaskState = "starting" // created, not yet healthy: Swarm's RUNNING means healthy
	TaskRunning   TaskState = "running"
	TaskComplete  TaskState = "complete"
	TaskShutdown  TaskState = "shutdown"
	TaskFailed    TaskState = "failed"
	TaskRejected  TaskState = "rejected"
	TaskRemove    TaskState = "remove"
	TaskOrphaned  TaskState = "orphaned"
)

// Ended reports whether a task in state s is over for good.
func (s TaskState) Ended() bool {
	switch s {
	case TaskComplete, TaskShutdown, TaskFailed, TaskRejected, TaskRemove, TaskOrphaned:
		return true
	}
	return false
}

// Task is one task of a managed service.
type Task struct {
	ID          string
	ServiceID   string
	Workload    string // from the task template's workload label
	Slot        int
	NodeID      string
	Desired     TaskState // what Swarm wants of it: running, shutdown, …
	State       TaskState // what it is
	Message     string    // Swarm's words for the state, shown, never matched
	Err         string    // the error that ended it, shown, never matched
	Since       time.Time // when it entered State
	CreatedAt   time.Time
	ContainerID string // "" before its container exists
	ExitCode    int
	// Spec is the task template's spec hash label (SpecLabel): the
	// revision the task runs. Image is the template's image reference.
	Spec  string
	Image string
}

// NodeState is a node's state as Swarm reports it.
type NodeState string

const (
	NodeReady        NodeState = "ready"
	NodeDown         NodeState = "down"
	NodeDisconnected NodeState = "disconnected"
	NodeUnknown      NodeState = "unknown"
)

// Availabilities of a Node, as Swarm names them: an active node takes
// tasks, a paused one keeps its own but takes no new ones, a drained one
// has its tasks moved elsewhere.
const (
	NodeActive = "active"
	NodePause  = "pause"
	NodeDrain  = "drain"
)

// Node is one node of the swarm.
type Node struct {
	ID           string
	Hostname     string
	State        NodeState
	Availability string // NodeActive, NodePause or NodeDrain
	Manager      bool
	Leader       bool
	Addr         string
}
