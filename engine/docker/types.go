package docker

import (
	"cmp"
	"slices"
	"time"
)

// State is the engine's container state.
type State string

const (
	StateCreated    State = "created"
	StateRunning    State = "running"
	StateRestarting State = "restarting"
	StatePaused     State = "paused"
	StateExited     State = "exited"
	StateDead       State = "dead"
	StateRemoving   State = "removing"
)

// Health is the engine's health status. HealthNone means no healthcheck.
type Health string

const (
	HealthNone      Health = ""
	HealthStarting  Health = "starting"
	HealthHealthy   Health = "healthy"
	HealthUnhealthy Health = "unhealthy"
)

// Limits are the settings that change in place, without a restart: CPU,
// memory and the restart policy. They are what the engine actually applies.
type Limits struct {
	NanoCPUs int64  // 1e9 = one CPU; 0 = unlimited
	Memory   int64  // bytes; 0 = unlimited
	Restart  string // "no", "always", "unless-stopped", "on-failure"
}

// Container is one container as the engine reports it.
type Container struct {
	ID      string
	Name    string // without the leading slash
	Image   string // the reference it was created from
	ImageID string
	Labels  map[string]string

	State          State
	Health         Health // HealthNone when the container has no healthcheck
	HasHealthcheck bool
	ExitCode       int
	OOMKilled      bool
	Error          string // the engine's error for the last start, if any

	Created      time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	RestartCount int
	// HealthySinceStart says the engine found the container healthy at
	// least once since it last started (a probe passed after StartedAt).
	// One that has not been is booting until its health_deadline, whatever
	// its health reads now: a slow starter is not a crash (DESIGN §1).
	HealthySinceStart bool
	// Starting says the container is created and its start is in flight
	// (this adapter's own): it is booting, not a container that never
	// started.
	Starting bool

	Limits Limits
	Ports  []PublishedPort
	// Networks are the container's IPv4 addresses by network name, as the
	// engine reports them: what a proxy on that network dials. An address
	// is "" where the engine gave none (a stopped container); nil when the
	// engine told nothing.
	Networks map[string]string
	// Node is, on a Swarm, the hostname of the node a task runs on (a
	// task shown as a container); "" on a plain engine.
	Node string
}

// PublishedPort is one container port published on the host.
type PublishedPort struct {
	ContainerPort int
	Proto         string // "tcp" or "udp"
	HostIP        string
	HostPort      int
}

// HealthResult is one health probe as the engine recorded it.
type HealthResult struct {
	Start    time.Time
	End      time.Time
	ExitCode int
	Output   string
}

// ContainerDetail is a container plus what only inspect tells.
type ContainerDetail struct {
	Container
	HealthLog []HealthResult // oldest first, as the engine keeps them
	Config    ContainerConfig
}

// ContainerConfig is how a container was created, as the engine keeps it:
// what the field-by-field diff compares with the desired state.
type ContainerConfig struct {
	Cmd         []string
	Entrypoint  []string
	Env         []string     // KEY=value as the engine holds it: the image's environment with the create's over it
	Healthcheck *Healthcheck // nil: none, or the image's disabled (["NONE"])
	StopSignal  string
	Ports       []PortSpec // the bindings asked for at create (HostPort 0: ephemeral), sorted
	Networks    []string   // sorted
	// Mounts are the mounts asked for at create, as the engine keeps
	// them; ReadOnly the read-only root.
	Mounts   []Mount
	ReadOnly bool

	// The defaults of the image the container was created from, to tell
	// what the create set from what the image supplies. ImageKnown is false
	// when that image could not be inspected (removed since).
	ImageKnown      bool
	ImageCmd        []string
	ImageEntrypoint []string
	ImageEnv        []string
	ImageLabels     map[string]string // the image's own labels, which every container of it carries
}

// Image is an image the engine has.
type Image struct {
	ID       string
	RepoTags []string
	// RepoDigests are the registry digests the image is known by
	// ("repo@sha256:…"): what a `pull: always` compares with the registry's.
	RepoDigests []string
	// Volumes are the targets the image declares VOLUME at, sorted.
	Volumes []string
	// OS, Architecture and Variant are the image's platform ("linux",
	// "amd64", ""); "" when the engine does not say.
	OS, Architecture, Variant string
}

// EngineInfo describes the engine a client talks to.
type EngineInfo struct {
	// ID is the engine's identity (the ID of `docker info`): the same for
	// every endpoint that reaches one engine, so it, not Endpoint, names the
	// engine in host locks and state files. "" when the engine did not say.
	ID         string
	Endpoint   string // e.g. unix:///var/run/docker.sock, or "fake"
	Version    string // e.g. 20.10.24
	APIVersion string // negotiated, e.g. 1.41
	Simulated  bool   // true for the in-memory fake engine
	// Swarm says the engine is a swarm manager that rollcall drives as a
	// swarm (engine: swarm): ID is then the swarm's cluster ID.
	Swarm bool
}

// PortSpec asks for a container port to be published. HostPort 0 is an
// ephemeral port; HostIP "" means 127.0.0.1.
type PortSpec struct {
	HostIP        string
	HostPort      int
	ContainerPort int
	Proto         string
}

// Healthcheck is a container healthcheck. Every field is set explicitly, so
// nothing is inherited from the image.
type Healthcheck struct {
	Test        []string // exec form: ["CMD", ...]; ["NONE"] disables the image's
	Interval    time.Duration
	Timeout     time.Duration
	Retries     int
	StartPeriod time.Duration
}

// SortPortSpecs orders ports by container port, protocol, host IP and host
// port, the order ContainerConfig keeps them in.
func SortPortSpecs(ps []PortSpec) {
	slices.SortFunc(ps, func(a, b PortSpec) int {
		return cmp.Or(cmp.Compare(a.ContainerPort, b.ContainerPort), cmp.Compare(a.Proto, b.Proto),
			cmp.Compare(a.HostIP, b.HostIP), cmp.Compare(a.HostPort, b.HostPort))
	})
}

// CreateSpec is everything needed to create one container.
type CreateSpec struct {
	Name        string
	Image       string // reference; the engine must already have it
	Command     []string
	Env         []string // KEY=value, sorted
	Labels      map[string]string
	Ports       []PortSpec
	Healthcheck *Healthcheck // nil: no healthcheck of ours (and the image's is disabled)
	StopSignal  string
	StopTimeout time.Duration
	Limits      Limits
	Networks    []string
	// Aliases are the container's DNS aliases on each network, by network
	// name. The engine's default bridge takes none.
	Aliases map[string][]string
	Options ContainerOptions // options.go
	// Mounts are the container's binds, volumes and tmpfs; Volumes the
	// named volumes among them that are created first when missing (with
	// their labels) or, external, must exist. ReadOnly mounts the root
	// filesystem read-only.
	Mounts   []Mount
	Volumes  []VolumeSpec
	ReadOnly bool
}

// Mount is one mount of a container.
type Mount struct {
	Type     string // MountBind, MountVolume or MountTmpfs
	Source   string // bind: the host path (which must exist); volume: its name
	Target   string
	ReadOnly bool
	Size     int64 // tmpfs: bytes; 0: the engine's default
}

// Mount types of Mount.Type, as the engine names them.
const (
	MountBind   = "bind"
	MountVolume = "volume"
	MountTmpfs  = "tmpfs"
)

// VolumeSpec is a named volume a container needs.
type VolumeSpec struct {
	Name       string
	Driver     string
	DriverOpts map[string]string
	Labels     map[string]string
	// External: made outside rollcall; a missing one is an error, never created.
	External bool
}

// Event is one engine event about a managed container.
type Event struct {
	Time        time.Time
	Type        string // "" for a container's event, EventImage for an image's
	Action      string // create, start, die, stop, destroy, health_status: healthy, ...; an image's: tag, untag, delete, load, import, pull
	ContainerID string // "" for an image's event
	Name        string // the container's name; an image's reference ("web:v2") or ID
	Attributes  map[string]string
}

// EventImage is the Type of an image's event: a tag that may now point at
// another image, so the desired images are resolved again.
const EventImage = "image"

// LogOptions selects log lines.
type LogOptions struct {
	Tail   int // lines from the end; 0 = all
	Follow bool
}

// LogLine is one line of a container's output.
type LogLine struct {
	Time   time.Time
	Stream string // "stdout" or "stderr"
	Text   string
}

// Herald reports whether a container event only announces another: a kill
// or an OOM that ends the process is followed by "die", and a kill that does
// not changes nothing. Acting on the herald would look at a container while
// it still runs, and the engine answers an inspect of it only once it is
// down.
func Herald(action string) bool { return action == "kill" || action == "oom" }
