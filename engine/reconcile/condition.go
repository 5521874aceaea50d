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
)

func (c Condition) String() string { return condition(c).String() }

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
