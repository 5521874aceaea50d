package reconcile

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// ConditionOf is Diff's judgement: a slow starter the engine calls
// unhealthy is booting until its health_deadline, crashed after it, and
// crashed at once when it had been healthy since its start.
func TestConditionOfIsDiffsJudgement(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	w := &spec.Workload{Update: spec.UpdatePolicy{MinReady: 5 * time.Second, HealthDeadline: 2 * time.Minute}}
	slow := func(up time.Duration, healthyBefore bool) *docker.Container {
		return &docker.Container{State: docker.StateRunning, HasHealthcheck: true, Health: docker.HealthUnhealthy,
			HealthySinceStart: healthyBefore, Created: now.Add(-up - time.Second), StartedAt: now.Add(-up)}
	}
	tests := []struct {
		name string
		c    *docker.Container
		w    *spec.Workload
		skip bool
		want Condition
	}{
		{"slow starter before its deadline", slow(90*time.Second, false), w, false, ConditionBooting},
		{"slow starter past its deadline", slow(3*time.Minute, false), w, false, ConditionCrashed},
		{"unhealthy after it was healthy", slow(90*time.Second, true), w, false, ConditionCrashed},
		{"emergency", slow(3*time.Minute, false), w, true, ConditionHealthy},
		{"no workload: the default deadline", slow(30*time.Second, false), nil, false, ConditionBooting},
		{"healthy", &docker.Container{State: docker.StateRunning, HasHealthcheck: true, Health: docker.HealthHealthy}, w, false, ConditionHealthy},
		{"paused", &docker.Container{State: docker.StatePaused}, w, false, ConditionPaused},
		{"exited", &docker.Container{State: docker.StateExited, ExitCode: 1}, w, false, ConditionCrashed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ConditionOf(tc.c, tc.w, now, tc.skip); got != tc.want {
				t.Fatalf("ConditionOf = %s, want %s", got, tc.want)
			}
			var minReady, deadline = spec.DefaultMinReady, spec.DefaultHealthDeadline
			if tc.w != nil {
				minReady, deadline = tc.w.Update.MinReady, tc.w.Update.HealthDeadline
			}
			if cond, _ := conditionOf(tc.c, minReady, deadline, now, tc.skip); Condition(cond) != tc.want {
				t.Fatalf("conditionOf = %s: ConditionOf is not Diff's judgement", cond)
			}
		})
	}
}
