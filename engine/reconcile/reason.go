package reconcile

import (
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// ReasonKind is why Diff planned a step, or why a new container failed.
// Each kind names the Reason fields its words are made of.
type ReasonKind string

const (
	// Starts.
	ReasonMissing     ReasonKind = "missing"      // the slot has no container: Slot of Replicas
	ReasonRoll        ReasonKind = "roll"         // the new container of a rolling slot, beside the old: Drift, Serving
	ReasonBlueGreen   ReasonKind = "blue-green"   // a blue-green new container, beside the old: Drift, Serving
	ReasonCanaryStart ReasonKind = "canary-start" // the canary's new container, beside the old: Drift, Serving

	// Rolls and stops.
	ReasonStopFirst    ReasonKind = "stop-first"    // the old container goes before its new one starts (Downtime): Drift
	ReasonReplaced     ReasonKind = "replaced"      // the old container's replacement is healthy (Pending: once it is): Drift, Serving
	ReasonDuplicate    ReasonKind = "duplicate"     // another up-to-date container serves the slot: Serving
	ReasonSurplus      ReasonKind = "surplus"       // slot index ≥ replicas: Slot, Replicas
	ReasonCold         ReasonKind = "cold"          // replicas 0
	ReasonOrphan       ReasonKind = "orphan"        // no readable slot label
	ReasonExtra        ReasonKind = "extra"         // the workload is not desired: Workload
	ReasonRollback     ReasonKind = "rollback"      // a new container missed its deadline, failure_action rollback: Deadline, Serving
	ReasonRolledBack   ReasonKind = "rolled-back"   // its spec is rolled back and on hold (Observed.RollingBack): Spec, Serving
	ReasonNeverStarted ReasonKind = "never-started" // a new container whose start was lost: made again

	// Pulls.
	ReasonPull ReasonKind = "pull" // the image is not on the engine, or (Digest set) the registry's tag moved: Image, Digest

	// Restarts, updates and canary steps.
	ReasonCrashed    ReasonKind = "crashed"     // restart in place: Crash
	ReasonOldDown    ReasonKind = "old-down"    // an old container went down while no new one serves its slot: Crash
	ReasonLimits     ReasonKind = "limits"      // update in place: Have, Want
	ReasonCanaryStep ReasonKind = "canary-step" // the canary's next step: Canary

	// Waits.
	ReasonQueued        ReasonKind = "queued"          // other slots roll first: Parallelism, RollingFirst
	ReasonDelay         ReasonKind = "delay"           // update.delay after the last slot finished rolling: Delay
	ReasonDependency    ReasonKind = "dependency"      // a cold start waits for its depends_on, or a roll for its dependency's roll (DependRoll): Dependency, DependCondition
	ReasonBlueGreenWait ReasonKind = "blue-green-wait" // old containers drain once every slot is healthy: Replicas
	ReasonCanaryFirst   ReasonKind = "canary-first"    // no old container drains before the canary passed: CanarySteps
	ReasonCanaryHeld    ReasonKind = "canary-held"     // a canary step ended with too little traffic: Canary, Judgement
	ReasonStarting      ReasonKind = "starting"        // the engine is starting it: Deadline
	ReasonBooting       ReasonKind = "booting"         // not yet healthy since its start: Deadline, Healthcheck, Unhealthy
	ReasonReady         ReasonKind = "ready"           // no healthcheck: counted healthy at min_ready: MinReady
	ReasonRestarting    ReasonKind = "restarting"      // the engine restarts it (rule 12): RestartPolicy
	ReasonPaused        ReasonKind = "paused"          // paused on the engine, left alone
	ReasonBackoff       ReasonKind = "backoff"         // a crash's restart backoff: Crash, Backoff
	ReasonRestartQueued ReasonKind = "restart-queued"  // a workload-wide health failure restarts Parallelism at a time: Crash

	// A Failure.
	ReasonHealthDeadline ReasonKind = "health-deadline" // not healthy within health_deadline: Condition, Deadline
)

// Reason is why a step is in the plan (Step.Why) or a new container
// failed (Failure.Why), as data: its kind and the facts its words are
// made of. String renders the words; a view that must tell reasons apart
// reads Kind and the fields, never the words. Only the fields of the
// kind are set (ReasonKind says which).
type Reason struct {
	Kind ReasonKind

	Slot     int // missing: the slot; surplus: its index
	Replicas int // missing, surplus, blue-green wait: the workload's replicas

	// Drift is what makes the old container stale, Image the desired
	// image (a rebuilt tag names it).
	Drift []Drift
	Image string
	// Serving is the container that keeps serving the slot (a start
	// beside the old, a rollback) or that serves it (replaced,
	// duplicate).
	Serving string
	// Pending: a then row's roll, whose replacement is not healthy yet.
	Pending bool

	Parallelism  int           // queued, restart-queued: update.parallelism
	RollingFirst []string      // queued: the slots mid-roll, as "web/0"
	Delay        time.Duration // delay: update.delay

	// Dependency is the workload a cold start waits for (depends_on), and
	// DependCondition what it waits for: started, healthy or completed.
	Dependency      string
	DependCondition string
	// DependRoll: a roll waits for its dependency to finish rolling
	// (rather than a cold start for its condition).
	DependRoll bool

	Deadline    time.Duration     // starting, booting, rollback, health deadline: health_deadline
	Healthcheck *spec.Healthcheck // booting: the probe it waits on (retries, start period); nil without one
	Unhealthy   bool              // booting: the engine reads it unhealthy (a slow starter)
	MinReady    time.Duration     // ready: update.min_ready
	Condition   Condition         // health deadline: what the container was at its deadline

	RestartPolicy string        // restarting: as the engine applies it
	Crash         Crash         // crashed, backoff, restart-queued
	Backoff       time.Duration // backoff: how long

	Have, Want docker.Limits // limits: as applied, as desired

	// Digest is, for a pull with `pull: always`, the manifest digest the
	// registry's tag moved to; "" for an image the engine lacks.
	Digest string

	// StopFirst is, for a stop-first roll, why the slot goes down, and
	// StopFirstWhat what it is about: the volume or bind that one replica
	// writes ("volume pgdata"), the target of the slot's own volume.
	StopFirst     spec.StopFirstCause
	StopFirstWhat string
	// LastDown is how long the workload's slot was down the last time a
	// stop-first roll took one down; 0 when it has not this session.
	LastDown time.Duration

	Workload string // extra: the workload no longer desired
	Spec     string // rolled back: the spec hash on hold

	// Canary is the canary step planned (canary step) or the one that
	// holds (canary held, with Judgement); CanarySteps is how many steps
	// the canary has (canary first).
	Canary      *CanaryStep
	Judgement   *Judgement
	CanarySteps int

	// A Swarm's (swarmreason.go). TaskState is a task's state, TaskErr
	// the error that ended it and Message Swarm's words for a task or an
	// update, all as Swarm reports them: shown, never matched. Node is a
	// task's node (its hostname), NodeDown whether that node is down.
	TaskState docker.TaskState
	TaskErr   string
	Message   string
	Node      string
	NodeDown  bool
	From      int    // scale: the replicas the service has
	Order     string // rollout, settings, queued: start-first or stop-first
	Done      int    // step: the desired slots on the desired spec before this step
	Left      int    // settings, resume: the slots Swarm is yet to update; retiring: the tasks it retires
	Paced     bool   // a step-mode roll (a wait's words say what the next step waits for); settings: the service had paced settings
	Switch    bool   // step: a roll under way with other settings goes on one slot per approval from here
}

// String is the reason in words: "missing: slot 1 of 3", "crashed: exit
// 137 (OOM)", "surplus: index 3 ≥ replicas 3".
func (r Reason) String() string {
	switch r.Kind {
	case ReasonMissing:
		return fmt.Sprintf("missing: slot %d of %d", r.Slot, r.Replicas)
	case ReasonRoll:
		return fmt.Sprintf("roll: %s; %s keeps serving", staleWhy(r.Drift, r.Image), r.Serving)
	case ReasonBlueGreen:
		return fmt.Sprintf("blue-green: %s; %s keeps serving", staleWhy(r.Drift, r.Image), r.Serving)
	case ReasonCanaryStart:
		return fmt.Sprintf("canary: %s; %s keeps serving until the canary passed", staleWhy(r.Drift, r.Image), r.Serving)
	case ReasonStopFirst:
		last := ""
		if r.LastDown > 0 {
			last = " (" + r.LastDown.String() + " last time)"
		}
		return "stop-first" + stopFirstWhy(r.StopFirst, r.StopFirstWhat) + ": slot down until the new container is healthy" + last + "; " + staleWhy(r.Drift, r.Image)
	case ReasonReplaced:
		if r.Pending {
			return staleWhy(r.Drift, r.Image) + "; once " + r.Serving + " is healthy"
		}
		return staleWhy(r.Drift, r.Image) + "; " + r.Serving + " is healthy"
	case ReasonDuplicate:
		return "duplicate: " + r.Serving + " serves slot"
	case ReasonSurplus:
		return fmt.Sprintf("surplus: index %d ≥ replicas %d", r.Slot, r.Replicas)
	case ReasonCold:
		return "cold: replicas 0"
	case ReasonOrphan:
		return "orphan: no readable slot label"
	case ReasonExtra:
		return "extra: workload " + r.Workload + " is not in the desired state"
	case ReasonRollback:
		return fmt.Sprintf("rollback: not healthy within health_deadline %s; %s keeps serving", r.Deadline, r.Serving)
	case ReasonRolledBack:
		return fmt.Sprintf("rollback: spec %s rolled back and on hold; %s keeps serving", short(r.Spec), r.Serving)
	case ReasonNeverStarted:
		return "never started: its start was lost; removed, to be created again"
	case ReasonPull:
		if r.Digest != "" {
			return fmt.Sprintf("pull: the registry moved %s to %s; nothing of this workload starts or stops before", r.Image, shortDigest(r.Digest))
		}
		return fmt.Sprintf("pull: %s is not on the engine; nothing of this workload starts or stops before", r.Image)
	case ReasonCrashed:
		return r.Crash.String()
	case ReasonOldDown:
		return "old container down (" + r.Crash.String() + ") and no up-to-date one serves the slot: restarted to serve it"
	case ReasonLimits:
		return "limits " + LimitsText(r.Have) + " → " + LimitsText(r.Want)
	case ReasonCanaryStep:
		c := r.Canary
		if c == nil {
			return "canary step"
		}
		return fmt.Sprintf("canary step %d/%d: %s of the traffic for %s, judged against the stable cohort every %s",
			c.Index+1, c.Of, Percent(c.Share), c.For, c.Interval())
	case ReasonQueued:
		return fmt.Sprintf("queued: parallelism %d, rolling first: %s", r.Parallelism, strings.Join(r.RollingFirst, ", "))
	case ReasonDependency:
		if r.DependRoll {
			return fmt.Sprintf("depends on %s: rolls once %s has rolled and is healthy", r.Dependency, r.Dependency)
		}
		what := map[string]string{spec.DependHealthy: "healthy", spec.DependCompleted: "completed (exit 0)"}[r.DependCondition]
		if what == "" {
			what = "running"
		}
		return fmt.Sprintf("depends on %s: starts once a container of it is %s", r.Dependency, what)
	case ReasonDelay:
		return fmt.Sprintf("delay: update.delay %s after the last slot finished rolling", r.Delay)
	case ReasonBlueGreenWait:
		return fmt.Sprintf("blue-green: old containers drain once all %d slots are healthy", r.Replicas)
	case ReasonCanaryFirst:
		return fmt.Sprintf("canary first: no old container drains before its %s pass", plural(r.CanarySteps, "step"))
	case ReasonCanaryHeld:
		var index, of int
		if r.Canary != nil {
			index, of = r.Canary.Index, r.Canary.Of
		}
		var j Judgement
		if r.Judgement != nil {
			j = *r.Judgement
		}
		return fmt.Sprintf("canary holds at step %d/%d: %s (on_insufficient_traffic hold: retry or roll back)", index+1, of, j)
	case ReasonStarting:
		return fmt.Sprintf("starting: the engine is starting it, deadline %s", r.Deadline)
	case ReasonBooting:
		hc := r.Healthcheck
		if hc == nil {
			return fmt.Sprintf("booting: waiting for healthy, deadline %s", r.Deadline)
		}
		if r.Unhealthy {
			return fmt.Sprintf("booting: unhealthy, not yet healthy since it started (a slow starter; retries %d, start_period %s), deadline %s",
				hc.Retries, hc.StartPeriod, r.Deadline)
		}
		return fmt.Sprintf("booting: waiting for healthy (retries %d, start_period %s), deadline %s", hc.Retries, hc.StartPeriod, r.Deadline)
	case ReasonReady:
		return fmt.Sprintf("booting: no healthcheck, healthy (unverified) after min_ready %s", r.MinReady)
	case ReasonRestarting:
		return fmt.Sprintf("the engine is restarting it (restart policy %s)", r.RestartPolicy)
	case ReasonPaused:
		return "paused on the engine: left alone"
	case ReasonBackoff:
		return fmt.Sprintf("%s: restart backoff %s", r.Crash, r.Backoff)
	case ReasonRestartQueued:
		return fmt.Sprintf("%s; workload-wide health failure: restarting %s at a time", r.Crash, atATime(r.Parallelism))
	case ReasonHealthDeadline:
		return fmt.Sprintf("%s, not healthy within health_deadline %s", r.Condition, r.Deadline)
	}
	if words, ok := r.swarmWords(); ok {
		return words
	}
	return string(r.Kind)
}

// CrashCause is how a container crashed (DESIGN §1).
type CrashCause string

const (
	CrashUnhealthy    CrashCause = "unhealthy"     // running, unhealthy after it was healthy since its start
	CrashDeadline     CrashCause = "deadline"      // running, not healthy within Deadline of its start
	CrashOOM          CrashCause = "oom"           // exited, killed out of memory: ExitCode
	CrashNeverStarted CrashCause = "never-started" // created, never started
	CrashExit         CrashCause = "exit"          // exited or dead: ExitCode
)

// Crash is how a crashed container crashed, as data.
type Crash struct {
	Cause    CrashCause
	ExitCode int
	Deadline time.Duration // deadline: the workload's health_deadline
}

// String is the crash in words: "crashed: exit 137 (OOM)".
func (c Crash) String() string {
	switch c.Cause {
	case CrashUnhealthy:
		return "crashed: unhealthy after it was healthy"
	case CrashDeadline:
		return fmt.Sprintf("crashed: not healthy within health_deadline %s of its start", c.Deadline)
	case CrashOOM:
		return fmt.Sprintf("crashed: exit %d (OOM)", c.ExitCode)
	case CrashNeverStarted:
		return "crashed: created but never started"
	}
	return fmt.Sprintf("crashed: exit %d", c.ExitCode)
}

// crashOf is how c of w crashed.
func crashOf(w *spec.Resolved, c *docker.Container) Crash {
	switch {
	case c.State == docker.StateRunning && c.HealthySinceStart:
		return Crash{Cause: CrashUnhealthy}
	case c.State == docker.StateRunning:
		return Crash{Cause: CrashDeadline, Deadline: w.Update.HealthDeadline}
	case c.OOMKilled:
		return Crash{Cause: CrashOOM, ExitCode: c.ExitCode}
	case c.State == docker.StateCreated:
		return Crash{Cause: CrashNeverStarted}
	}
	return Crash{Cause: CrashExit, ExitCode: c.ExitCode}
}

// bootWhy is what a booting container c of w waits for, with the
// healthcheck's retries and start period, so the operator can tell a slow
// starter from a probe that will never pass. The countdown is the step's
// Until.
func bootWhy(w *spec.Resolved, c *docker.Container) Reason {
	if c.Starting {
		return Reason{Kind: ReasonStarting, Deadline: w.Update.HealthDeadline}
	}
	r := Reason{Kind: ReasonBooting, Deadline: w.Update.HealthDeadline}
	if w.Healthcheck != nil && c.HasHealthcheck {
		r.Healthcheck, r.Unhealthy = w.Healthcheck, c.Health == docker.HealthUnhealthy
	}
	return r
}

// explain writes the step's words from its Why: the one place a step's
// Reason is written.
func (s *Step) explain() { s.Reason = s.Why.String() }

// explain writes the failure's words from its Why.
func (f *Failure) explain() { f.Reason = f.Why.String() }

// stopFirstWhy is why a roll is stop-first, in words: " (one replica
// writes volume pgdata)"; "" when the file chose it or says nothing.
func stopFirstWhy(c spec.StopFirstCause, what string) string {
	switch c {
	case spec.StopFirstHostPort:
		return " (a fixed host port)"
	case spec.StopFirstHostNetwork:
		return " (network_mode: host)"
	case spec.StopFirstData:
		return " (one replica writes " + what + ")"
	case spec.StopFirstSlotVolume:
		return " (the slot keeps its volume at " + what + ")"
	}
	return ""
}
