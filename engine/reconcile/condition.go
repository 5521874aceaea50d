package reconcile

import (
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// Condition is what Diff makes of a container's health: healthy, booting,
// restarting, paused or crashed (DESIGN §1). Views read it from
// ConditionOf rather than judging the engine's health themselves, so a
// slow starter that Diff waits for is booting everywhere.
type Condition int

// The conditions, best first (the order Diff ranks a slot's containers in).
const (
	ConditionHealthy    = Condition(condHealthy)
	ConditionBooting    = Condition(condBooting)
	ConditionRestarting = Condition(condRestarting) // the engine restarts it, or removes it
	ConditionPaused     = Condition(condPaused)
	ConditionCrashed    = Condition(condCrashed)
	// ConditionUnverified: counted healthy without a healthcheck's word
	// (no healthcheck, past min_ready; or emergency mode).
	ConditionUnverified = Condition(condCrashed + 1)
	// ConditionDrained: an old container whose pre_stop ran: it is
	// leaving, gets no traffic and never counts as healthy.
	ConditionDrained = Condition(condCrashed + 2)
)

func (c Condition) String() string {
	switch c {
	case ConditionUnverified:
		return "unverified"
	case ConditionDrained:
		return "drained"
	}
	return condition(c).String()
}

// Healthy reports whether the condition counts as healthy: healthy, or
// unverified.
func (c Condition) Healthy() bool { return c == ConditionHealthy || c == ConditionUnverified }

// ConditionOf is Diff's judgement of container c of workload w at now:
// a running container that has not been healthy since its start is
// booting until w's health_deadline after that start, whatever the
// engine's health says. w nil (a container of no desired workload) is
// judged by the default min_ready and health_deadline.
func ConditionOf(c *docker.Container, w *spec.Workload, now time.Time, skipHealth bool) Condition {
	minReady, deadline := spec.DefaultMinReady, spec.DefaultHealthDeadline
	if w != nil {
		minReady, deadline = w.Update.MinReady, w.Update.HealthDeadline
	}
	cond, _ := conditionOf(c, minReady, deadline, now, skipHealth)
	return Condition(cond)
}
