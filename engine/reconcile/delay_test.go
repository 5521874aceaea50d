package reconcile

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

func withDelay(d time.Duration) func(*spec.Workload) {
	return func(w *spec.Workload) { w.Update.Delay = d }
}

// startedAgo makes a container started (and created) that long before t0.
func startedAgo(ago time.Duration) func(*docker.Container) {
	return func(c *docker.Container) { c.Created, c.StartedAt = t0.Add(-ago), t0.Add(-ago) }
}

// delayWait checks that slot waits for update.delay until until.
func delayWait(t *testing.T, p Plan, slot int, until time.Time, delay time.Duration) {
	t.Helper()
	for _, s := range p.Steps() {
		if s.Slot != slot {
			continue
		}
		want := "delay: update.delay " + delay.String() + " after the last slot finished rolling"
		if s.Action != ActWait || s.Wait != WaitDelay || !s.Until.Equal(until) || s.Why.Kind != ReasonDelay || s.Reason != want {
			t.Fatalf("slot %d: %s wait %q until %s, reason %q; want a delay until %s", slot, brief(s), s.Wait, s.Until, s.Reason, until)
		}
		for _, st := range p.Slots {
			if st.Slot == slot && (st.Wait != WaitDelay || !st.Until.Equal(until)) {
				t.Fatalf("slot state %d: wait %q until %s", slot, st.Wait, st.Until)
			}
		}
		return
	}
	t.Fatalf("no step for slot %d", slot)
}

// Rule 8 with update.delay: a slot starts rolling only Delay after the last
// slot of its workload finished, its replacement ready (its start plus
// min_ready); the first slot of a roll, first starts and blue-green are not
// delayed, and parallelism still applies.
func TestRule8UpdateDelay(t *testing.T) {
	const delay = 30 * time.Second
	// Slot 0's replacement started 10s ago: ready at t0-5s (min_ready 5s),
	// so the next slot rolls at t0+25s.
	until := t0.Add(-10*time.Second + spec.DefaultMinReady + delay)
	runRules(t, []ruleCase{
		{name: "next slots wait for the delay after the last finished", desired: []*spec.Workload{workload("web", 3, withDelay(delay))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(10*time.Second)), stale(d, "web", 1), stale(d, "web", 2))
			},
			want: []string{"wait web/1", "wait web/2"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				delayWait(t, p, 1, until, delay)
				delayWait(t, p, 2, until, delay)
			}},
		{name: "no delay set: the next slot rolls at once", desired: []*spec.Workload{workload("web", 3)},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(10*time.Second)), stale(d, "web", 1), stale(d, "web", 2))
			},
			want: []string{"start web/1", "wait web/2"}},
		{name: "delay over: the next slot rolls, parallelism queues the rest", desired: []*spec.Workload{workload("web", 3, withDelay(delay))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(time.Minute)), stale(d, "web", 1), stale(d, "web", 2))
			},
			want: []string{"start web/1", "wait web/2"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[1]; s.Wait != WaitQueue || s.Why.Kind != ReasonQueued {
					t.Fatalf("web/2: %s %q, want queued", brief(s), s.Wait)
				}
			}},
		{name: "the first slot of a roll is not delayed", desired: []*spec.Workload{workload("web", 2, withDelay(delay))},
			build: func(d *spec.ResolvedDesired) *Observed { return observed(stale(d, "web", 0), stale(d, "web", 1)) },
			want:  []string{"start web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				if s := p.Steps()[1]; s.Wait != WaitQueue {
					t.Fatalf("web/1: %s %q, want queued", brief(s), s.Wait)
				}
			}},
		{name: "the finished slot's old container rolls; the next slot waits", desired: []*spec.Workload{workload("web", 2, withDelay(2*time.Minute))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))
			},
			want: []string{"roll web/0", "wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) {
				delayWait(t, p, 1, t0.Add(-time.Minute+spec.DefaultMinReady+2*time.Minute), 2*time.Minute)
			}},
		{name: "first starts are not delayed", desired: []*spec.Workload{workload("web", 3, withDelay(delay))},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(time.Second)))
			},
			want: []string{"start web/1", "start web/2"}},
		{name: "stop-first waits before stopping the next old container", desired: []*spec.Workload{workload("web", 2, withDelay(delay),
			func(w *spec.Workload) { w.Update.Order, w.Update.OrderSet = spec.OrderStopFirst, true; w.Mounts = nil })},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(10*time.Second)), stale(d, "web", 1))
			},
			want:  []string{"wait web/1"},
			check: func(t *testing.T, p Plan, _ *spec.ResolvedDesired) { delayWait(t, p, 1, until, delay) }},
		{name: "blue-green is not delayed", desired: []*spec.Workload{workload("web", 2, withDelay(delay),
			func(w *spec.Workload) { w.Update.Strategy = spec.StrategyBlueGreen })},
			build: func(d *spec.ResolvedDesired) *Observed {
				return observed(fresh(d, "web", 0, startedAgo(10*time.Second)), stale(d, "web", 1))
			},
			want: []string{"start web/1"}},
	})
}

// The then rows go past a delay: the whole roll shows, each slot after
// its delay.
func TestUpdateDelayThen(t *testing.T) {
	d := resolved(workload("web", 2, withDelay(30*time.Second)))
	p := diffThen(d, observed(fresh(d, "web", 0, startedAgo(10*time.Second)), stale(d, "web", 1)))
	equalStrings(t, actions(p), []string{"wait web/1"})
	var then []string
	for _, s := range p.Then() {
		then = append(then, string(s.Action)+" "+s.Target())
	}
	equalStrings(t, then, []string{"start web/1", "roll web/1"})
}
