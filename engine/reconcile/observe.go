package reconcile

import (
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Observed is everything Diff looks at besides the desired state: the
// containers and everything time-dependent, so Diff stays pure.
type Observed struct {
	Now        time.Time
	Containers []docker.Container
	// Holds are specs rolled back (rule 9), keyed by workload then spec hash.
	Holds map[string]map[string]bool
	// RollingBack holds the operator rollbacks under way (DESIGN §6):
	// workload -> the spec hash the operator rolled back (and put on hold).
	// While any of its containers has one to stop, such a workload's plan is
	// only those stops: each container of that spec in a slot where an older
	// container still runs, with Hold set and drained like every stop; a
	// slot with no older one running keeps its new container. With none
	// left, its plan is as without the rollback, and the caller ends it.
	RollingBack map[string]string
	// RecreateBefore forces a rolling restart of a workload (rule 10):
	// containers created before the time count as stale.
	RecreateBefore map[string]time.Time
	// SkipHealth is emergency mode (rule 11).
	SkipHealth bool
	// Restarts counts the restarts rollcall issued, by container ID, for the
	// crash backoff of rule 4 (the engine counts only its own).
	Restarts map[string]int
	// Restarting holds the containers, by ID, whose restart rollcall has
	// in flight: a list taken meanwhile may show one exited, but it is a
	// running container being restarted, and counts against rule 4's
	// limit on restarts at once.
	Restarting map[string]bool
	// Draining holds the containers, by ID, whose pre_stop ran in a stop
	// or roll in flight: they are leaving (drained, DESIGN §1), serve
	// nothing and never count as healthy in the slot states.
	Draining map[string]bool
	// Canary says, by workload, how far the canary of a spec has got
	// (DESIGN §12; canary.go): while the desired spec's canary has steps
	// left, one slot rolls and the next step is planned.
	Canary map[string]CanaryProgress
	// Downtime is, by workload, how long its slot was down the last time a
	// stop-first roll took one down (measured by the session, from the
	// step to the slot's ready again): what its next stop-first step says.
	Downtime map[string]time.Duration
}

// Held reports whether workload's spec hash is on hold.
func (o *Observed) Held(workload, hash string) bool { return o.Holds[workload][hash] }

// condition is what rollcall makes of an up-to-date container.
type condition int

const (
	condHealthy condition = iota
	condBooting
	condRestarting // the engine is restarting it (rule 12)
	condPaused
	condCrashed
)

var conditionWord = [...]string{"healthy", "booting", "restarting", "paused", "crashed"}

func (c condition) String() string { return conditionWord[c] }

// conditionOf judges one container. until is when a booting container without
// a healthcheck counts healthy (min_ready), zero otherwise.
//
// A running container that has not been healthy since it last started is
// booting until deadline (its workload's health_deadline) after that start,
// whatever the engine's health says: docker reads a slow starter
// "unhealthy" once its probes fail past their retries, long before the app
// is due (DESIGN §1, a slow starter is not a crash). It is crashed when it
// turns unhealthy after it had been healthy since its start, or is still
// unhealthy at its deadline.
func conditionOf(c *docker.Container, minReady, deadline time.Duration, now time.Time, skipHealth bool) (cond condition, until time.Time) {
	switch c.State {
	case docker.StateRunning:
		if skipHealth {
			return condHealthy, time.Time{}
		}
		if c.HasHealthcheck {
			switch c.Health {
			case docker.HealthHealthy:
				return condHealthy, time.Time{}
			case docker.HealthUnhealthy:
				if !c.HealthySinceStart && now.Before(bootDeadline(c, deadline)) {
					return condBooting, time.Time{}
				}
				return condCrashed, time.Time{}
			default:
				return condBooting, time.Time{}
			}
		}
		ready := c.StartedAt.Add(minReady)
		if !now.Before(ready) {
			return condHealthy, time.Time{}
		}
		return condBooting, ready
	case docker.StateRestarting:
		return condRestarting, time.Time{}
	case docker.StatePaused:
		return condPaused, time.Time{}
	case docker.StateRemoving:
		return condRestarting, time.Time{}
	case docker.StateCreated:
		if c.Starting {
			return condBooting, time.Time{} // its start is in flight
		}
		return condCrashed, time.Time{}
	default: // exited, dead
		return condCrashed, time.Time{}
	}
}

// jobCondition is the condition of a one-shot job's container: one that
// exited 0 is done, which counts as healthy (it runs once per spec hash
// and is never restarted); anything else is judged as any container.
func jobCondition(job bool, c *docker.Container, cond condition) condition {
	if job && cond == condCrashed && c.State == docker.StateExited && c.ExitCode == 0 && !c.OOMKilled {
		return condHealthy
	}
	return cond
}

// Healthy reports whether a container counts as healthy for a workload with
// min_ready minReady: the engine says healthy, or, without a healthcheck, it
// has been running that long. Exported for invariant checks and the console.
func Healthy(c *docker.Container, minReady time.Duration, now time.Time, skipHealth bool) bool {
	cond, _ := conditionOf(c, minReady, 0, now, skipHealth) // the deadline only tells booting from crashed
	return cond == condHealthy
}

// bootDeadline is when a container that has not been healthy since its last
// start stops counting as booting: health_deadline after that start.
func bootDeadline(c *docker.Container, deadline time.Duration) time.Time {
	start := c.StartedAt
	if start.IsZero() {
		start = c.Created
	}
	return start.Add(deadline)
}

// crashBackoff is the wait before restarting a container that crashed n
// times before: none the first time, then 1s, 2s, 4s … capped at 1m. The
// first restart is immediate so a lone crash heals at once; the backoff only
// slows a crash loop.
func crashBackoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	return Backoff(n, time.Second, time.Minute)
}

// Backoff is rollcall's one backoff: the wait before the n-th try again
// (n >= 1) is base, doubling with each try, capped at max. The crash
// restarts of rule 4, a step that failed at the engine, the event stream
// and a relist that failed all back off with it.
func Backoff(n int, base, max time.Duration) time.Duration {
	if n <= 1 {
		return min(base, max)
	}
	d := base
	for range n - 1 {
		if d >= max/2 {
			return max
		}
		d *= 2
	}
	return d
}

// slotOf reads the slot label; ok is false for an orphan.
func slotOf(c *docker.Container, prefix string) (int, bool) {
	return slotIndex(c, docker.SlotLabel(prefix))
}

func slotIndex(c *docker.Container, key string) (int, bool) {
	v, present := c.Labels[key]
	if !present {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// ContainerName is the name of a workload's container in a slot (DESIGN §4):
// <prefix>-<workload>-<slot>-<hash[:8]>. When an old container of the slot
// holds that name already (a forced recreate, a limit to lift), Diff adds a
// suffix of the old container's ID.
func ContainerName(prefix, workload string, slot int, hash string) string {
	return prefix + "-" + workload + "-" + strconv.Itoa(slot) + "-" + short(hash)
}

func short(hash string) string {
	if len(hash) > 8 {
		return hash[:8]
	}
	return hash
}

// CreateSpec is what a START step creates for a workload's slot.
func CreateSpec(prefix string, w *spec.Resolved, slot int) *docker.CreateSpec {
	c := createSpecOf(prefix, w, strconv.Itoa(slot))
	c.Name = ContainerName(prefix, w.Name, slot, w.Hash)
	return c
}

// createSpecOf is CreateSpec without a name, for the slot as text: an
// index, or a Swarm's placeholder for the task's slot (swarmSlot), which
// its nodes expand in the hostname and the mounts' sources.
func createSpecOf(prefix string, w *spec.Resolved, slot string) *docker.CreateSpec {
	labels := make(map[string]string, len(w.Labels)+5)
	for k, v := range w.Labels {
		labels[k] = v
	}
	labels[docker.ManagedLabel(prefix)] = "true"
	labels[docker.WorkloadLabel(prefix)] = w.Name
	labels[docker.SlotLabel(prefix)] = slot
	labels[docker.SpecLabel(prefix)] = w.Hash
	labels[docker.VersionLabel(prefix)] = w.Version
	if v := preStopLabel(w.Workload); v != "" {
		labels[docker.PreStopLabel(prefix)] = v
	}
	env := make([]string, 0, len(w.Environment))
	for k, v := range w.Environment {
		env = append(env, k+"="+v)
	}
	sortStrings(env)
	ports := make([]docker.PortSpec, len(w.Ports))
	for i, p := range w.Ports {
		ports[i] = docker.PortSpec{HostIP: p.HostIP, HostPort: p.HostPort, ContainerPort: p.ContainerPort, Proto: p.Proto}
	}
	var hc *docker.Healthcheck
	if w.Healthcheck != nil {
		hc = &docker.Healthcheck{
			Test: append([]string(nil), w.Healthcheck.Test...), Interval: w.Healthcheck.Interval,
			Timeout: w.Healthcheck.Timeout, Retries: w.Healthcheck.Retries, StartPeriod: w.Healthcheck.StartPeriod,
		}
	}
	mounts, volumes := createMounts(prefix, w, slot)
	return &docker.CreateSpec{
		Mounts:      mounts,
		Volumes:     volumes,
		ReadOnly:    w.ReadOnly,
		Image:       w.Image,
		Command:     append([]string(nil), w.Command...),
		Env:         env,
		Labels:      labels,
		Ports:       ports,
		Healthcheck: hc,
		StopSignal:  w.StopSignal,
		StopTimeout: w.StopGrace,
		Limits:      DesiredLimits(w.Workload),
		Networks:    append([]string(nil), w.Networks...),
		Aliases:     networkAliases(w.Workload),
		Options:     containerOptions(w.Workload, slot), // options.go
	}
}

// DesiredLimits are the limits and restart policy a workload asks for, as the
// engine reports them.
func DesiredLimits(w *spec.Workload) docker.Limits {
	return docker.Limits{NanoCPUs: w.Resources.NanoCPUs, Memory: w.Resources.Memory, Restart: normRestart(w.Restart)}
}

// NormRestart is a restart policy as the engine applies it: none is "no".
func NormRestart(p string) string { return normRestart(p) }

func normRestart(p string) string {
	if p == "" {
		return "no"
	}
	return p
}

// LimitsEqual compares limits as the engine applies them (no restart
// policy is "no").
func LimitsEqual(a, b docker.Limits) bool {
	return a.NanoCPUs == b.NanoCPUs && a.Memory == b.Memory && normRestart(a.Restart) == normRestart(b.Restart)
}
