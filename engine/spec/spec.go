// Package spec is rollcall's desired state: the types of a rollcall.yaml
// document (and of a compose file mapped onto it), their defaults and
// bounds, the spec hash, the rules that need no file (a host's share of a
// fleet, host access, stop-first), and resolving image references to the
// image IDs the engine has. Reading a document is engine/source/load's.
//
// It imports nothing of rollcall's but the plain data types of engine/docker
// (for resolving images); never reconcile, session, tui or theme, and no
// YAML or compose-go package, so that reconcile, which reads these types,
// links neither (internal/links checks it).
package spec

import (
	"time"
)

// DefaultPrefix is the label prefix when the file names none.
const DefaultPrefix = "rollcall"

// Strategy values of update.strategy.
const (
	StrategyRolling   = "rolling"
	StrategyBlueGreen = "blue-green"
)

// Order values of update.order.
const (
	OrderStartFirst = "start-first"
	OrderStopFirst  = "stop-first"
)

// Pull policies (pull:): when an image is pulled through the engine. The
// policy is not in the spec hash: changing it changes no container.
const (
	PullMissing = "missing" // pull an image the engine lacks (the default)
	PullAlways  = "always"  // ask the registry where the tag points; pull what moved
	PullNever   = "never"   // never pull: an image the engine lacks is an error
)

// FailureAction values of update.failure_action.
const (
	FailurePause    = "pause"
	FailureRollback = "rollback"
	FailureContinue = "continue"
)

// Desired is a whole desired-state document.
type Desired struct {
	Source    string // file path or URL it came from, for messages
	Prefix    string
	Workloads map[string]*Workload
	// Proxy is the reverse proxy in front, when the file names one
	// (proxy.caddy_admin); nil otherwise.
	Proxy *Proxy
	// Hosts are the engines a rollout crosses, in file order (hosts.go);
	// nil: the one engine of --docker-host / DOCKER_HOST. Fleet is set,
	// with its defaults, whenever Hosts is.
	Hosts []*Host
	Fleet *Fleet
	// Notify are the webhooks a session posts its rollouts' events to,
	// in file order (notify.go); nil for none.
	Notify []Webhook
	// RegistryPoll is how often a session asks the registry where its
	// `pull: always` tags point (registry_poll); 0: DefaultRegistryPoll.
	RegistryPoll time.Duration
	// Host names the host this desired state is for, in the copy ForHost
	// makes; "" otherwise.
	Host string
	// Volumes are the named volumes the workloads mount, by the key the
	// file gives them (mounts.go); nil for none.
	Volumes map[string]*Volume
	// Engine is what the workloads run on (engine:): EngineDocker, the
	// default, or EngineSwarm (swarm.go), where every workload's Swarm is
	// set and Hosts is nil.
	Engine Engine
	// Warnings are findings that do not stop a load but deserve a look,
	// e.g. a CMD-SHELL healthcheck, which a scratch image cannot run.
	Warnings []*Error
}

// Names returns the workload names in sorted order.
func (d *Desired) Names() []string {
	names := make([]string, 0, len(d.Workloads))
	for n := range d.Workloads {
		names = append(names, n)
	}
	sortStrings(names)
	return names
}

// Workload is one named service. After load.Load, every default is filled in.
type Workload struct {
	Name        string
	Image       string
	Version     string
	Replicas    int
	Command     []string
	Environment map[string]string
	Labels      map[string]string
	Ports       []Port
	Healthcheck *Healthcheck // nil: none
	Resources   Resources
	StopSignal  string
	StopGrace   time.Duration
	Restart     string
	Networks    []string
	// Aliases are the DNS aliases a container takes on a network beyond the
	// workload name, which it takes on every network it joins (as compose
	// does with service names), by network name.
	Aliases map[string][]string
	// PreStop is the command (argv) exec'd in a container before it is
	// stopped; nil: none. It is kept in a label at create, so an old
	// container runs the one it was created with.
	PreStop []string
	// Pull is the pull policy: PullMissing, PullAlways or PullNever.
	Pull string
	// BuildFirst says the image is built, never pulled: a compose service
	// with build: and no image: (its image is compose's <project>-<service>)
	// or with pull_policy: build. An image the engine lacks is then an
	// error wrapping ErrBuildFirst, not a pull. Not in the spec hash.
	BuildFirst bool
	Update     UpdatePolicy
	// Mounts are the workload's volumes and tmpfs (mounts.go), in file
	// order; ReadOnly mounts the image's filesystem read-only.
	Mounts   []Mount
	ReadOnly bool
	// Platform is the platform the image must be of ("linux/amd64",
	// "linux/arm64/v8"); "" for any. Checked against the image at
	// resolve (platform.go).
	Platform string
	// Options are the create options beyond these (options.go).
	Options Options
	// DependsOn are the workloads whose condition a cold start of this
	// one waits for (depends.go), in file order; nil for none. Not in
	// the spec hash.
	DependsOn []Dependency
	// Job says another workload waits for this one to complete
	// (depends_on condition completed, compose's
	// service_completed_successfully): a one-shot job, such as a
	// migration. Its container that exited 0 is done, not crashed: it runs
	// once per spec hash, never restarted. Set by engine/source/load; not in the
	// hash.
	Job bool
	// Swarm is what the workload has only as a Swarm service (swarm.go):
	// set on every workload of a desired state with `engine: swarm`, nil
	// on plain engines.
	Swarm *SwarmService
}

// Port is one published port, from "[[HOST_IP:]HOST_PORT:]CONTAINER_PORT[/PROTO]".
// HostPort 0 is ephemeral. HostIP defaults to 127.0.0.1; on a swarm it is
// "", every interface of every node (Swarm's routing mesh publishes the
// port, HostPort 0 being one Swarm picks).
type Port struct {
	HostIP        string
	HostPort      int
	ContainerPort int
	Proto         string
}

// Healthcheck in compose vocabulary.
type Healthcheck struct {
	Test        []string
	Interval    time.Duration
	Timeout     time.Duration
	Retries     int
	StartPeriod time.Duration
}

// Resources are the limits changed in place.
type Resources struct {
	NanoCPUs int64 // cpus * 1e9
	Memory   int64 // bytes
}

// UpdatePolicy says how a workload rolls.
type UpdatePolicy struct {
	Strategy    string
	Parallelism int
	Order       string
	// OrderSet says the file wrote update.order: a stop-first rule for
	// data (Workload.StopFirst) gives way to an explicit start-first.
	OrderSet       bool
	MinReady       time.Duration
	HealthDeadline time.Duration
	FailureAction  string
	// Drain is how long a stop waits after pre_stop, cut short once the
	// container reports unhealthy (or the proxy lets it go).
	Drain time.Duration
	// Delay is how long a slot waits, after the last slot of the workload
	// finished rolling (its replacement became ready), before it starts
	// rolling itself (update.delay, compose's update_config.delay); 0: no
	// wait. First starts are not delayed.
	Delay time.Duration
	// RollbackParallelism is how many slots an operator's rollback takes
	// back at once (update.rollback_parallelism, compose's
	// rollback_config.parallelism); 0: all at once.
	RollbackParallelism int
	// MaxFailureRatio is, on a swarm, the share of the new tasks that may
	// fail before FailureAction applies (update.max_failure_ratio,
	// compose's update_config.max_failure_ratio), 0..1; 0: the first
	// failure. Always 0 on plain engines, where the first failure counts.
	MaxFailureRatio float64
	// Canary is update.canary (canary.go); nil when the workload has none.
	// A canary needs the proxy (Desired.Proxy is then set).
	Canary *Canary
}

// Canary is update.canary (DESIGN §12): before any old container drains, one
// new container takes a share of the traffic for each step, measured by the
// proxy against the stable cohort; after the last step the roll goes on.
// Steps holds at least one step, with shares that never decrease.
type Canary struct {
	Steps    []CanaryStep
	Analysis Analysis
}

// CanaryStep is one step: the canary's share of the workload's requests, for a time.
type CanaryStep struct {
	Share float64 // a fraction: 0.05 for "5%"; 0 < Share <= 1
	For   time.Duration
}

// Analysis is how a step is judged, the canary against the stable cohort
// over the same window. A threshold left out of the file is NotChecked
// (-1); any value >= 0 is checked. At least one of the three is checked.
type Analysis struct {
	// Interval is how often the figures are compared during a step:
	// DefaultCanaryInterval unless given, always > 0. It may be longer than
	// a step; the consumer clamps it to the step's For.
	Interval time.Duration
	// MaxErrorRate is the highest error rate the canary may show: a
	// fraction, (5xx answers + failed upstream dials) / requests, in
	// 0..1; NotChecked when left out.
	MaxErrorRate float64
	// MaxErrorRateIncrease is how far the canary's error rate may rise
	// above the stable cohort's, in fraction points (0.005 for "0.5%"),
	// in 0..1; NotChecked when left out.
	MaxErrorRateIncrease float64
	// MaxP95Ratio is the highest ratio of the canary's p95 latency to the
	// stable cohort's, >= 1; NotChecked when left out.
	MaxP95Ratio float64
	// MinRequests is how many requests the canary must see in a step for
	// the step to be judged, >= 1; DefaultMinRequests unless given.
	MinRequests int
	// OnInsufficientTraffic is what a step that saw fewer than MinRequests
	// does: InsufficientHold (the default), InsufficientFail or
	// InsufficientPass.
	OnInsufficientTraffic string
}

// Defaults, applied by load.Load to anything left unset.
var (
	DefaultRestart        = "unless-stopped"
	DefaultStopSignal     = "SIGTERM"
	DefaultStopGrace      = 10 * time.Second
	DefaultParallelism    = 1
	DefaultMinReady       = 5 * time.Second
	DefaultHealthDeadline = 60 * time.Second
)

// FixedHostPort reports whether the workload publishes any fixed host port,
// which forces order stop-first on a plain engine (two containers cannot
// bind one port); not on a swarm (StopFirst).
func (w *Workload) FixedHostPort() bool {
	for _, p := range w.Ports {
		if p.HostPort != 0 {
			return true
		}
	}
	return false
}

// EffectiveOrder is the order the file's workload rolls in: stop-first
// when StopFirst gives a cause.
func (w *Workload) EffectiveOrder() string {
	if c, _ := w.StopFirst(); c != "" {
		return OrderStopFirst
	}
	return OrderStartFirst
}
