package main

// Signals and crashes in the middle of a roll, on the real engine with the
// built binary (issue 10): a SIGTERM lets the step in flight finish, a
// second one abandons what it only waits for, and a kill -9 at random moments leaves nothing
// the next apply cannot finish, while every slot keeps a healthy container.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
)

// journalLines reads the rig's journal; a line half-written as it is read
// is left out.
func (r *realRig) journalLines() []journal.Entry {
	r.t.Helper()
	es, err := journal.Read(r.journal, 0)
	if err != nil {
		return nil
	}
	return es
}

// steps are the journal's steps, folded (journal.Fold, as history shows
// them), without the decisions.
func (r *realRig) steps() []journal.Entry {
	var out []journal.Entry
	for _, e := range journal.Fold(r.journalLines()) {
		if e.Result != journal.ResultDecision {
			out = append(out, e)
		}
	}
	return out
}

// leftovers are the containers neither running nor gone: an old one left
// Exited, or a new one Created and never started.
func leftovers(prefix string, cs []docker.Container) string {
	var bad []docker.Container
	for _, c := range cs {
		if c.State != docker.StateRunning {
			bad = append(bad, c)
		}
	}
	if len(bad) == 0 {
		return ""
	}
	return describe(prefix, bad)
}

// TestRealEngineSignalMidRoll: SIGTERM to apply while a roll's stop is in
// flight. With one signal the step is carried to its end and journaled ok.
// With two it is abandoned at once while it only waits (its drain, 10s
// here, so the signals land in it) and journaled interrupted; but once the
// engine stops the container (here one that ignores its stop signal, so
// the stop takes its whole grace) the stop and its remove are carried to
// their end however many signals come, and journaled ok (issue 18 row 7).
// Either way apply exits 1 saying it was interrupted, no container is left
// Exited or Created, and a second apply converges (plan then exits 0).
func TestRealEngineSignalMidRoll(t *testing.T) {
	const ignoresStop = "stop_signal: SIGUSR1" // the demoapp, PID 1, has no handler for it
	tests := []struct {
		name    string
		signals int
		extra   string
		want    string // the journal's result for the step in flight
	}{
		{"1-in-drain", 1, "update: {drain: 3s}", journal.ResultOK},
		{"2-in-drain", 2, "update: {drain: 10s}", journal.ResultInterrupted},
		{"1-in-stop", 1, ignoresStop, journal.ResultOK},
		{"2-in-stop", 2, ignoresStop, journal.ResultOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			signals := tt.signals
			r := newRealRig(t)
			path := r.write("rollcall.yaml", realWorkload(t, "web", "v1", 2, tt.extra))
			r.mustApply(path)
			r.write("rollcall.yaml", realWorkload(t, "web", "v2", 2, tt.extra))

			p := r.start(r.journal, "apply", "--yes", "--allow-mass-stop", "--timeout", "2m", "-f", path)
			var inFlight journal.Entry
			r.waitUntil("a roll's stop in flight", time.Minute, func() bool {
				es := r.journalLines()
				if len(es) == 0 {
					return false
				}
				last := es[len(es)-1]
				// Journaled first, the step runs only then: a signal
				// between the two ends the session before it runs
				// ("not run: the session is ending"). In flight is
				// journaled and begun (apply's ▸ line for it).
				if last.Result == journal.ResultStarted && (last.Action == "roll" || last.Action == "stop") && begun(p.stderr.String(), last.Action, last.Container) {
					inFlight = last
					return true
				}
				if p.exited() {
					t.Fatalf("apply ended before a stop ran: exit %d\n%s", p.code, p.stderr.String())
				}
				return false
			})
			p.signal(t, syscall.SIGTERM)
			r.waitUntil("apply letting the step finish", 10*time.Second, func() bool {
				return strings.Contains(p.stderr.String(), "letting the running step finish")
			})
			if signals == 2 {
				p.signal(t, syscall.SIGTERM)
			}
			if code := p.wait(t, 30*time.Second); code != exitFailed {
				t.Fatalf("apply after %d SIGTERM: exit %d, want 1\n%s", signals, code, p.stderr.String())
			}
			out := p.stderr.String()
			mustContain(t, "apply stderr", out, "failed: interrupted")
			if strings.Contains(out, "did not finish in time") {
				t.Errorf("the step ran out its grace and slack:\n%s", out)
			}
			// The engine goes on with a call whose caller has gone: a stop
			// cut short shows as Exited only once its grace has passed,
			// so the engine is watched past the grace (2s), not only at
			// the exit.
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
				if bad := leftovers(r.prefix, r.list()); bad != "" {
					t.Errorf("after the signal(s): left behind %s\n%s", bad, out)
					break
				}
			}
			for _, e := range r.steps() {
				if e.Result == journal.ResultFailed {
					t.Errorf("journal: %s %s/%d failed: %s", e.Action, e.Workload, e.Slot, e.Error)
				}
				if e.Time.Equal(inFlight.Time) && e.Container == inFlight.Container && e.Result != tt.want {
					t.Errorf("the step in flight (%s %s) is journaled %q, want %q (%s)", e.Action, e.Container, e.Result, tt.want, e.Error)
				}
			}
			t.Logf("apply after %d signal(s):\n%s", signals, out)

			r.mustApply(path, "--allow-mass-stop")
			if res := r.run("plan", "-f", path); res.code != exitOK {
				t.Fatalf("plan after the second apply: exit %d\n%s%s", res.code, res.stdout, res.stderr)
			}
			if cs := r.list(); len(cs) != 2 || len(r.healthy("web")) != 2 {
				t.Fatalf("end state: %s; want 2 healthy web containers", describe(r.prefix, cs))
			}
		})
	}
}

// slotWatch samples the engine every 100ms and records every moment a slot
// of web had no running, healthy container.
type slotWatch struct {
	samples    int
	violations []string
}

func watchSlots(ctx context.Context, r *realRig, slots int) (stop func() slotWatch) {
	done := make(chan slotWatch, 1)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		var w slotWatch
		for ctx.Err() == nil {
			cs, err := r.m.List(ctx, r.prefix)
			if err == nil {
				w.samples++
				served := map[string]bool{}
				for _, c := range cs {
					if c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
						served[c.Labels[docker.SlotLabel(r.prefix)]] = true
					}
				}
				for i := range slots {
					if !served[strconv.Itoa(i)] {
						w.violations = append(w.violations, fmt.Sprintf("%s: slot %d has no healthy container: %s",
							time.Now().Format("15:04:05.000"), i, describe(r.prefix, cs)))
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
		done <- w
	}()
	return func() slotWatch { cancel(); return <-done }
}

// TestRealEngineKillMidRoll: apply is killed with SIGKILL at a random
// moment of a roll of 3 replicas, at least 5 times, and started again each
// time (when a roll ends before a kill, the next goes the other way). All
// along, every slot keeps a healthy container; the last apply converges to
// exactly one container per slot with no leftovers; and history shows the
// steps cut short as interrupted, never failed.
func TestRealEngineKillMidRoll(t *testing.T) {
	r := newRealRig(t)
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("seed %d", seed)
	versions := []string{"v1", "v2"}
	cur := 0
	path := r.write("rollcall.yaml", realWorkload(t, "web", versions[cur], 3))
	r.mustApply(path)
	r.waitUntil("3 healthy containers", time.Minute, func() bool { return len(r.healthy("web")) == 3 })

	stopWatch := watchSlots(r.ctx, r, 3)
	flip := func() {
		cur = 1 - cur
		r.write("rollcall.yaml", realWorkload(t, "web", versions[cur], 3))
	}
	flip()
	started := func() int {
		n := 0
		for _, e := range r.journalLines() {
			if e.Result == journal.ResultStarted {
				n++
			}
		}
		return n
	}
	kills, runs := 0, 0
	for kills < 5 {
		if runs++; runs > 30 {
			t.Fatalf("%d runs of apply and only %d kills", runs, kills)
		}
		before := started()
		p := r.start(r.journal, "apply", "--yes", "--allow-mass-stop", "--timeout", "2m", "-f", path)
		for !p.exited() && started() == before {
			time.Sleep(20 * time.Millisecond)
		}
		if !p.exited() {
			time.Sleep(time.Duration(rng.Int64N(int64(1500 * time.Millisecond))))
		}
		if p.exited() { // the roll ended before the kill: roll back the other way
			if p.code != exitOK {
				t.Fatalf("apply run %d: exit %d\n%s", runs, p.code, p.stderr.String())
			}
			flip()
			continue
		}
		p.signal(t, syscall.SIGKILL)
		p.wait(t, 10*time.Second)
		kills++
	}
	final := r.mustApply(path, "--allow-mass-stop")
	w := stopWatch()
	t.Logf("%d kills in %d runs of apply; %d samples of the engine; final apply:\n%s", kills, runs, w.samples, final.stderr)
	if len(w.violations) > 0 {
		t.Errorf("%d samples with an empty slot, the first:\n%s", len(w.violations), strings.Join(w.violations[:min(5, len(w.violations))], "\n"))
	}

	cs := r.list()
	slots := map[string]int{}
	for _, c := range cs {
		if c.State == docker.StateRunning && c.Health == docker.HealthHealthy && c.Labels[docker.VersionLabel(r.prefix)] == versions[cur] {
			slots[c.Labels[docker.SlotLabel(r.prefix)]]++
		}
	}
	if len(cs) != 3 || slots["0"] != 1 || slots["1"] != 1 || slots["2"] != 1 {
		t.Errorf("end state: %s; want one healthy %s container in each of slots 0, 1, 2 and nothing else", describe(r.prefix, cs), versions[cur])
	}
	if res := r.run("plan", "-f", path); res.code != exitOK {
		t.Errorf("plan after the final apply: exit %d\n%s", res.code, res.stdout)
	}

	interrupted := 0
	for _, e := range r.steps() {
		switch e.Result {
		case journal.ResultFailed:
			t.Errorf("journal: %s %s/%d %s failed: %s", e.Action, e.Workload, e.Slot, e.Container, e.Error)
		case journal.ResultInterrupted:
			interrupted++
		}
	}
	hist := r.run("history", "-n", "0")
	if hist.code != exitOK {
		t.Fatalf("history: exit %d\n%s", hist.code, hist.stderr)
	}
	if got := strings.Count(hist.stdout, "interrupted"); got < interrupted {
		t.Errorf("history shows %d interrupted, the journal folds to %d:\n%s", got, interrupted, hist.stdout)
	}
	if slices.ContainsFunc(strings.Split(hist.stdout, "\n"), func(l string) bool { return strings.Contains(l, " failed ") }) {
		t.Errorf("history shows a failed step:\n%s", hist.stdout)
	}
	t.Logf("%d step(s) cut short, shown as interrupted:\n%s", interrupted, hist.stdout)
}

// begun reports whether apply's output says the step action on container
// began: its "▸ ACTION" line.
func begun(out, action, container string) bool {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "▸ "+action+" ") && strings.Contains(line, container) {
			return true
		}
	}
	return false
}
