package session

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// TestDecide is "what runs next" as a table: each guard, in its order, and
// the marks the operator puts on steps.
func TestDecide(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	start := reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: 0, Container: "rc-web-0-new"}
	restart := reconcile.Step{Action: reconcile.ActRestart, Workload: "worker", Slot: 0, Container: "rc-worker-0-a", ContainerID: "w0"}
	roll := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 1, Container: "rc-web-1-old", ContainerID: "o1"}
	downtime := reconcile.Step{Action: reconcile.ActStop, Workload: "db", Slot: 0, Container: "rc-db-0-old", ContainerID: "d0", Downtime: true,
		Reason: "stop-first: slot down until the new container is healthy"}
	pull := reconcile.Step{Action: reconcile.ActPull, Workload: "api", Slot: reconcile.NoSlot, Container: "reg/api:v2"}
	rollback := reconcile.Step{Action: reconcile.ActStop, Workload: "web", Slot: 2, Container: "rc-web-2-new", ContainerID: "n2"}

	ready := func() gate {
		return gate{Now: now, Mode: ModeAuto, LockHeld: true, Connected: true, Fresh: true, Room: 16, Busy: map[string]bool{},
			Approved: map[string]bool{}, Skipped: map[string]bool{}, Confirmed: map[string]bool{},
			RetryAt: map[string]time.Time{}, RollingBack: map[string]bool{}}
	}
	tests := []struct {
		name  string
		steps []reconcile.Step
		gate  func(g *gate)
		run   []string // keys of the steps that run, in order
		ask   string   // key of the stop-first step asked about
		wait  string   // substring of why nothing runs
	}{
		{name: "auto runs every step, one per slot, at once", steps: []reconcile.Step{start, roll, restart},
			run: []string{start.Key(), roll.Key(), restart.Key()}},
		{name: "one step per slot", steps: []reconcile.Step{start, {Action: reconcile.ActRoll, Workload: "web", Slot: 0, ContainerID: "o0"}},
			run: []string{start.Key()}},
		{name: "nothing in a slot a running step acts on", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Busy["web/0"] = true }, run: []string{restart.Key()}},
		{name: "nothing in a slot whose step ended after the list", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Stale = map[string]bool{"web/0": true} }, run: []string{restart.Key()}},
		{name: "only stale slots: wait for the list", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Stale = map[string]bool{"web/0": true} }, wait: "fresh list"},
		{name: "an operator rollback waits for a list after its slot's step", steps: []reconcile.Step{restart},
			gate: func(g *gate) { g.Rollback, g.Stale = &rollback, map[string]bool{"web/2": true} }, wait: "rollback waits"},
		{name: "no room, no step", steps: []reconcile.Step{start}, gate: func(g *gate) { g.Room = 0 }, wait: "running"},
		{name: "room bounds the steps", steps: []reconcile.Step{start, roll, restart}, gate: func(g *gate) { g.Room = 2 },
			run: []string{start.Key(), roll.Key()}},
		{name: "watch never runs", steps: []reconcile.Step{start}, gate: func(g *gate) { g.Mode = ModeWatch }, wait: "watch"},
		{name: "no lock, no step", steps: []reconcile.Step{start}, gate: func(g *gate) { g.LockHeld = false }, wait: "lock"},
		{name: "halted journal, no step", steps: []reconcile.Step{start}, gate: func(g *gate) { g.Halted = true }, wait: "journal"},
		{name: "disconnected, no step", steps: []reconcile.Step{start}, gate: func(g *gate) { g.Connected = false }, wait: "not connected"},
		{name: "a stale plan never runs", steps: []reconcile.Step{start}, gate: func(g *gate) { g.Fresh = false }, wait: "fresh"},
		{name: "a settling desired state never runs", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.SettleLeft = time.Second }, wait: "settling"},
		{name: "a pause holds every step", steps: []reconcile.Step{start, restart}, gate: func(g *gate) { g.Paused = true }, wait: "paused"},
		{name: "a closed gate holds every step", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Gated = "wave 1 waits" }, wait: "gated: wave 1 waits"},
		{name: "a gate closed but for pulls runs the pulls only", steps: []reconcile.Step{start, pull, restart},
			gate: func(g *gate) { g.Gated, g.GatedPulls = "pulling", true }, run: []string{pull.Key()}},
		{name: "a gate closed but for pulls, with no pull left, holds", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Gated, g.GatedPulls = "pulling", true }, wait: "gated: pulling"},
		{name: "a closed gate holds a pull too", steps: []reconcile.Step{pull},
			gate: func(g *gate) { g.Gated = "wave 1 waits" }, wait: "gated: wave 1 waits"},
		{name: "a closed gate holds a step mode approval too", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Mode, g.Gated, g.Rollout = ModeStep, "wave 1 waits", true }, wait: "gated"},
		{name: "an operator rollback runs through a closed gate", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Gated, g.Rollback = "wave 1 waits", &rollback }, run: []string{rollback.Key()}},
		{name: "a pause holds a step mode approval too", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Mode, g.Paused, g.Approved[start.Key()] = ModeStep, true, true }, wait: "paused"},
		{name: "the blast radius holds every step", steps: []reconcile.Step{roll}, gate: func(g *gate) { g.Blast = true }, wait: "blast"},
		{name: "an operator rollback runs even while paused", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Paused, g.Rollback = true, &rollback }, run: []string{rollback.Key()}},
		{name: "an operator rollback runs even under the blast radius", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Blast, g.Rollback = true, &rollback }, run: []string{rollback.Key()}},
		{name: "an operator rollback waits for the engine", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.Connected, g.Rollback = false, &rollback }, wait: "not connected"},
		{name: "step mode runs nothing unapproved, a restart neither", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Mode = ModeStep }, wait: "approval"},
		{name: "step mode runs the approved step, not the first", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Mode, g.Approved[restart.Key()] = ModeStep, true }, run: []string{restart.Key()}},
		{name: "a skipped step is passed over", steps: []reconcile.Step{start, roll},
			gate: func(g *gate) { g.Skipped[start.Key()] = true }, run: []string{roll.Key()}},
		{name: "a workload being rolled back is passed over", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.RollingBack["web"] = true }, run: []string{restart.Key()}},
		{name: "auto waits out a failed step's retry", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.RetryAt[start.Key()] = now.Add(time.Second) }, run: []string{restart.Key()}},
		{name: "a rollout approval lets every step run in step mode", steps: []reconcile.Step{start, restart},
			gate: func(g *gate) { g.Mode, g.Rollout = ModeStep, true }, run: []string{start.Key(), restart.Key()}},
		{name: "an operator rollback waits for its busy slot", steps: []reconcile.Step{restart},
			gate: func(g *gate) { g.Rollback, g.Busy["web/2"] = &rollback, true }, wait: "rollback waits"},
		{name: "auto retries once the backoff is over", steps: []reconcile.Step{start},
			gate: func(g *gate) { g.RetryAt[start.Key()] = now.Add(-time.Millisecond) }, run: []string{start.Key()}},
		{name: "step mode: the approval is the retry", steps: []reconcile.Step{start},
			gate: func(g *gate) {
				g.Mode, g.Approved[start.Key()], g.RetryAt[start.Key()] = ModeStep, true, now.Add(time.Minute)
			}, run: []string{start.Key()}},
		{name: "stop-first asks in a console, and the next step runs", steps: []reconcile.Step{downtime, start},
			run: []string{start.Key()}, ask: downtime.Key()},
		{name: "stop-first asks in a console, alone", steps: []reconcile.Step{downtime}, ask: downtime.Key(), wait: "confirmation"},
		{name: "stop-first runs once confirmed", steps: []reconcile.Step{downtime},
			gate: func(g *gate) { g.Confirmed[downtime.Key()] = true }, run: []string{downtime.Key()}},
		{name: "stop-first runs unasked when unattended", steps: []reconcile.Step{downtime},
			gate: func(g *gate) { g.Unattended = true }, run: []string{downtime.Key()}},
		{name: "nothing to do", steps: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ready()
			if tt.gate != nil {
				tt.gate(&g)
			}
			d := decide(tt.steps, g)
			var got []string
			for _, s := range d.Run {
				got = append(got, s.Key())
			}
			if !slices.Equal(got, tt.run) {
				t.Errorf("runs %q, want %q (wait %q)", got, tt.run, d.Wait)
			}
			asked := ""
			if d.Ask != nil {
				asked = d.Ask.Key
			}
			if asked != tt.ask {
				t.Errorf("asks about %q, want %q", asked, tt.ask)
			}
			if tt.wait != "" && !strings.Contains(d.Wait, tt.wait) {
				t.Errorf("wait %q, want it to say %q", d.Wait, tt.wait)
			}
		})
	}
}
