package tui

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// One truth (DESIGN §5): for random desired and actual states, every
// status the console shows (each slot row's containers, their relation and
// health, the header's count, each plan row with its wait) is Diff's, as
// the session passes it on; nothing is classified again on the way.
func TestEveryViewShowsDiffsClassification(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		d, cs, o := drawState(rt)
		plan := reconcile.Diff(d, o)
		reconcile.AddThen(d, o, &plan)
		s := base(1)
		s.Resolved, s.Containers, s.Plan, s.SkipHealth = d, cs, plan, o.SkipHealth
		s.Slots, s.Progress = session.SlotViews(d, &plan, cs)
		b := newBoard(s)

		if len(b.slots) != len(plan.Slots) {
			rt.Fatalf("%d slot rows for Diff's %d slots", len(b.slots), len(plan.Slots))
		}
		ready, total := plan.Progress()
		if p := b.header.progress; p.Ready != ready || p.Total != total {
			rt.Fatalf("the header counts %s, Diff %d/%d", p, ready, total)
		}
		for i, st := range plan.Slots {
			row := &b.slots[i]
			if row.workload != st.Workload || row.slot != st.Slot || (row.desired != nil) != st.Desired || row.upToDate() != st.Ready {
				rt.Fatalf("row %s/%d desired %v up to date %v; Diff's slot %s/%d desired %v ready %v",
					row.workload, row.slot, row.desired != nil, row.upToDate(), st.Workload, st.Slot, st.Desired, st.Ready)
			}
			if len(row.cs) != len(st.Containers) {
				rt.Fatalf("%s/%d shows %d containers, Diff has %d", st.Workload, st.Slot, len(row.cs), len(st.Containers))
			}
			for k, want := range st.Containers {
				got := row.cs[k]
				if got.id != want.ID || got.relation != want.Relation || got.serves != want.Serves || !shows(got.health, want.Condition) {
					rt.Fatalf("%s/%d container %d: shown %s %s %s serves %v; Diff: %s %s %s serves %v",
						st.Workload, st.Slot, k, got.id, got.relation, got.health, got.serves, want.ID, want.Relation, want.Condition, want.Serves)
				}
			}
		}

		var steps []reconcile.Step
		for _, w := range plan.Workloads {
			steps = append(steps, w.Steps...)
			steps = append(steps, w.Then...)
		}
		var rows []stepRow
		for _, blk := range b.blocks {
			rows = append(rows, blk.steps...)
		}
		if len(rows) != len(steps) {
			rt.Fatalf("%d plan rows for %d steps", len(rows), len(steps))
		}
		for i, st := range steps {
			r := rows[i]
			if r.action != string(st.Action) || r.key != st.Key() || r.then != st.Then || r.wait != st.Wait || !r.until.Equal(st.Until) {
				rt.Fatalf("plan row %d: %s %s then %v wait %q until %s; Diff: %s %s then %v wait %q until %s",
					i, r.action, r.key, r.then, r.wait, r.until, st.Action, st.Key(), st.Then, st.Wait, st.Until)
			}
		}
	})
}

// shows reports whether the console's word for a container is the one for
// Diff's condition; only a crashed one that exited cleanly, and a removal
// in progress, read "stopped".
func shows(got theme.Status, cond reconcile.Condition) bool {
	want := map[reconcile.Condition][]theme.Status{
		reconcile.ConditionHealthy:    {theme.Healthy},
		reconcile.ConditionUnverified: {theme.Unverified},
		reconcile.ConditionBooting:    {theme.Booting},
		reconcile.ConditionPaused:     {theme.Paused},
		reconcile.ConditionDrained:    {theme.Drained},
		reconcile.ConditionRestarting: {theme.Restarting, theme.Stopped},
		reconcile.ConditionCrashed:    {theme.Crashed, theme.Stopped},
	}[cond]
	for _, w := range want {
		if got == w {
			return true
		}
	}
	return false
}

// drawState draws a desired state of up to two workloads and containers
// around it: up to date, stale, legacy, orphans, surplus, an extra
// workload's, in any state and health, some of them draining.
func drawState(rt *rapid.T) (*spec.ResolvedDesired, []docker.Container, *reconcile.Observed) {
	d := &spec.ResolvedDesired{Prefix: pfx}
	for _, name := range []string{"api", "web"} {
		if !rapid.Bool().Draw(rt, name+" desired") {
			continue
		}
		w := &spec.Workload{Name: name, Image: name + ":v2", Version: "2", Replicas: rapid.IntRange(0, 3).Draw(rt, name+" replicas"),
			Restart: "unless-stopped",
			Update: spec.UpdatePolicy{Strategy: rapid.SampledFrom([]string{spec.StrategyRolling, spec.StrategyBlueGreen}).Draw(rt, name+" strategy"),
				Order:       rapid.SampledFrom([]string{spec.OrderStartFirst, spec.OrderStopFirst}).Draw(rt, name+" order"),
				Parallelism: rapid.IntRange(1, 2).Draw(rt, name+" parallelism"), MinReady: 5 * time.Second, HealthDeadline: time.Minute,
				FailureAction: rapid.SampledFrom([]string{spec.FailurePause, spec.FailureRollback, spec.FailureContinue}).Draw(rt, name+" failure")}}
		if rapid.Bool().Draw(rt, name+" healthcheck") {
			w.Healthcheck = &spec.Healthcheck{Retries: 3}
		}
		r := spec.Resolved{Workload: w, ImageID: "sha256:" + name + "2", Hash: name + "-hash-2"}
		if rapid.IntRange(0, 9).Draw(rt, name+" unresolved") == 0 {
			r.Err = fmt.Errorf("image %s not found", w.Image)
		}
		d.Workloads = append(d.Workloads, r)
	}
	o := &reconcile.Observed{Now: t0, SkipHealth: rapid.IntRange(0, 9).Draw(rt, "emergency") == 0}
	var cs []docker.Container
	for _, name := range []string{"api", "web", "gone"} {
		for n := rapid.IntRange(0, 5).Draw(rt, name+" containers"); n > 0; n-- {
			cs = append(cs, drawContainer(rt, name, len(cs)))
		}
	}
	for i := range cs {
		if rapid.IntRange(0, 9).Draw(rt, "draining") == 0 {
			if o.Draining == nil {
				o.Draining = map[string]bool{}
			}
			o.Draining[cs[i].ID] = true
		}
	}
	o.Containers = cs
	return d, cs, o
}

func drawContainer(rt *rapid.T, workload string, i int) docker.Container {
	version := rapid.SampledFrom([]string{"1", "2", "2"}).Draw(rt, "version")
	slot := fmt.Sprint(rapid.IntRange(0, 3).Draw(rt, "slot"))
	if rapid.IntRange(0, 9).Draw(rt, "orphan") == 0 {
		slot = "x"
	}
	c := docker.Container{ID: fmt.Sprintf("c%02d", i), Name: fmt.Sprintf("%s-%s-%s-%02d", pfx, workload, slot, i),
		Image: workload + ":v" + version, ImageID: "sha256:" + workload + version,
		Labels: map[string]string{docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): workload, docker.SlotLabel(pfx): slot,
			docker.SpecLabel(pfx): workload + "-hash-" + version, docker.VersionLabel(pfx): version},
		Limits: docker.Limits{Restart: "unless-stopped"},
		State: rapid.SampledFrom([]docker.State{docker.StateRunning, docker.StateRunning, docker.StateRunning, docker.StateExited,
			docker.StateRestarting, docker.StateCreated, docker.StatePaused, docker.StateDead}).Draw(rt, "state"),
		HasHealthcheck: rapid.Bool().Draw(rt, "has healthcheck"),
	}
	if rapid.IntRange(0, 7).Draw(rt, "legacy") == 0 {
		delete(c.Labels, docker.SpecLabel(pfx))
	}
	if rapid.IntRange(0, 5).Draw(rt, "limits drift") == 0 {
		c.Limits.Restart = "always"
	}
	if c.HasHealthcheck {
		c.Health = rapid.SampledFrom([]docker.Health{docker.HealthHealthy, docker.HealthStarting, docker.HealthUnhealthy}).Draw(rt, "health")
		c.HealthySinceStart = c.Health == docker.HealthHealthy || rapid.Bool().Draw(rt, "healthy since start")
	}
	age := time.Duration(rapid.IntRange(0, 180).Draw(rt, "age")) * time.Second
	c.Created, c.StartedAt = t0.Add(-age), t0.Add(-age)
	if c.State != docker.StateRunning {
		c.FinishedAt = t0.Add(-age / 2)
		c.ExitCode = rapid.SampledFrom([]int{0, 1, 137}).Draw(rt, "exit")
	}
	return c
}
