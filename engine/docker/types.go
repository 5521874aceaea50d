package docker

import "time"

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

	Limits Limits
	Ports  []PublishedPort
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
}

// Image is an image the engine has.
type Image struct {
	ID       string
	RepoTags []string
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
}

// Event is one engine event about a managed container.
type Event struct {
	Time        time.Time
	Action      string // create, start, die, stop, destroy, health_status: healthy, ...
	ContainerID string
	Name        string
	Attributes  map[string]string
}

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
