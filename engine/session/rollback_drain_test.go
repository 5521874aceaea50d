package session

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// TestOperatorRollbackDrainsThroughDiffsStop: the operator's rollback stops
// the new container with the stop step Diff plans, so with its pre_stop
// exec'd in it and the workload's drain, as every other stop; never a bare
// stop that cuts the requests it has in flight. It runs at once, in step
// mode and in auto (paused), without an approval.
func TestOperatorRollbackDrainsThroughDiffsStop(t *testing.T) {
	for _, mode := range []Mode{ModeStep, ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			const drain = 300 * time.Millisecond
			withPreStop := func(text string) string { return text + "    pre_stop: [\"/demoapp\", \"-drain\"]\n" }
			f, clock := newEngine()
			seed(t, f, clock, withPreStop(desiredYAML("web:v1", 2, "drain: 300ms")))
			v2 := withPreStop(desiredYAML("web:v2", 2, "drain: 300ms"))
			d, err := load.Parse("v2.yaml", []byte(v2))
			if err != nil {
				t.Fatal(err)
			}
			r := spec.Resolve(context.Background(), d, f)
			// Slot 1 mid-roll: its v2 container runs beside the v1 one.
			if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 1)); err != nil {
				t.Fatal(err)
			}
			f.ResetCalls()
			var mu sync.Mutex
			var launched []reconcile.Step
			h := newHarness(t, f, clock, v2, mode)
			var logged syncBuffer
			h.opts.Log = slog.New(slog.NewJSONHandler(&logged, nil))
			h.opts.OnStep = func(s reconcile.Step, _ time.Time) {
				mu.Lock()
				defer mu.Unlock()
				launched = append(launched, s)
			}
			h.start()
			if mode == ModeAuto {
				h.s.Do(Pause{})
				h.waitFor("the pause", func(s Snapshot) bool { return s.Pause != nil && s.Fresh })
			} else {
				h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
			}
			h.s.Do(Rollback{Workload: "web"})
			h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
			h.settle()

			newName := reconcile.ContainerName(pfx, "web", 1, r.Workload("web").Hash)
			if m := f.Mutations(); !slices.Equal(m, []string{"exec:" + newName, "stop:" + newName, "remove:" + newName}) {
				t.Fatalf("mutations %q, want only the new container of slot 1 drained and stopped", m)
			}
			if e := f.Execs(); !slices.Equal(e, []string{newName + ": /demoapp -drain"}) {
				t.Errorf("execs %q, want the new container's pre_stop exec'd in it before its stop", e)
			}
			// The stop waited on its drain: it began, and it ended.
			var began, ended bool
			for _, line := range strings.Split(logged.String(), "\n") {
				var e struct{ Msg, Container, Until, Ended string }
				if json.Unmarshal([]byte(line), &e) != nil || e.Container != newName {
					continue
				}
				began = began || (e.Msg == "draining" && e.Until != "")
				ended = ended || (e.Msg == "drained" && e.Ended != "")
			}
			if !began || !ended {
				t.Errorf("drain began %v, ended %v; want both logged for %s:\n%s", began, ended, newName, logged.String())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(launched) != 1 {
				t.Fatalf("steps launched %+v, want the rollback's one stop", launched)
			}
			s := launched[0]
			if s.Action != reconcile.ActStop || s.Container != newName || !slices.Equal(s.PreStop, []string{"/demoapp", "-drain"}) ||
				s.Drain != drain || s.Hold != r.Workload("web").Hash {
				t.Errorf("the rollback's stop %+v: want the stop of %s with its pre_stop, drain %s and the hold of its spec", s, newName, drain)
			}
		})
	}
}
