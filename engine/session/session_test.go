package session

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// Watch mode is read-only: whatever the operator asks, no mutating call
// reaches the engine, and no lock is taken.
func TestWatchNeverMutates(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 3))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 3, "order: stop-first"), ModeWatch).start()

	snap := h.waitFor("a plan", func(s Snapshot) bool { return len(s.Plan.Executable()) > 0 })
	key := snap.Plan.Executable()[0].Key()
	for _, i := range []Intent{ApproveRollout{}, ApproveStep{Key: key}, Rollback{Workload: "web"}, Recreate{},
		Confirm{Yes: true}, Emergency{On: true}, Resume{}} {
		h.s.Do(i)
	}
	h.settle()
	snap = h.drive("several rounds of the clock", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 3*time.Second })
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("watch mode called the engine: %q", m)
	}
	if snap.Mode != ModeWatch || snap.Lock.Held {
		t.Errorf("mode %s, lock held %v; want watch without the lock", snap.Mode, snap.Lock.Held)
	}
	if !hasNote(snap, "watch mode is read-only") {
		t.Errorf("no note says the intents were refused:\n%s", describe(snap))
	}
	if _, err := os.Stat(h.opts.LockPath); err == nil {
		t.Errorf("watch mode created the lock file")
	}
}

// Step mode runs exactly the steps approved, and nothing before approval.
func TestStepRunsOnlyApproved(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 3), ModeStep).start()

	snap := h.waitFor("three starts", func(s Snapshot) bool { return len(s.Plan.Executable()) == 3 })
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("step mode ran unapproved steps: %q", m)
	}
	if snap.Next != snap.Plan.Executable()[0].Key() {
		t.Errorf("Next = %q, want the first step %q", snap.Next, snap.Plan.Executable()[0].Key())
	}
	approved := snap.Plan.Executable()[1]
	h.s.Do(ApproveStep{Key: approved.Key()})
	h.waitFor("the approved start to run", func(s Snapshot) bool {
		return len(s.Recent) == 1 && s.Running == nil
	})
	h.drive("the clock to move on", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 3*time.Second })
	h.settle()
	want := []string{"create:" + approved.Container}
	if m := f.Mutations(); !slices.Equal(m, want) {
		t.Fatalf("mutations %q, want exactly %q", m, want)
	}
	if len(h.last.Plan.Executable()) != 2 {
		t.Errorf("plan:\n%s\nwant the two unapproved starts left", h.last.Plan)
	}
}

// Auto converges a 3-replica roll v1 → v2, never dropping below three
// healthy containers on the way (start-first).
func TestAutoConvergesRoll(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 3))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 3), ModeAuto)
	jpath := h.withJournal()
	h.start()

	minHealthy := 3
	snap := h.drive("the roll to finish", func(s Snapshot) bool {
		healthy := 0
		for _, v := range s.Slots {
			for _, c := range v.Containers {
				if c.Condition.Healthy() {
					healthy++
				}
			}
		}
		if s.Resolved != nil { // listed
			minHealthy = min(minHealthy, healthy)
		}
		return s.Steady && s.Progress.Done() && s.Progress.Total == 3 && running(s, "web:v2") == 3 && len(s.Containers) == 3
	})
	if minHealthy < 3 {
		t.Errorf("healthy containers dropped to %d during the roll", minHealthy)
	}
	m := f.Mutations()
	if countPrefix(m, "create:") != 3 || countPrefix(m, "stop:") != 3 || countPrefix(m, "remove:") != 3 {
		t.Errorf("mutations %q: want 3 creates and 3 stop+remove", m)
	}
	for _, v := range snap.Slots {
		if !v.Ready || v.Desired == nil || v.Desired.Image != "web:v2" || len(v.Containers) != 1 || v.Containers[0].Relation != reconcile.RelUpToDate {
			t.Errorf("slot %s/%d: %+v", v.Workload, v.Slot, v)
		}
	}

	// A journal line per executed step.
	entries, skipped, err := journal.Scan(jpath, 0)
	entries = stepEntries(entries)
	if err != nil || skipped != 0 {
		t.Fatalf("journal: %v (%d skipped)", err, skipped)
	}
	if len(entries) != 6 {
		t.Fatalf("%d journal entries, want 6 (3 start, 3 roll): %+v", len(entries), entries)
	}
	actions := map[string]int{}
	for _, e := range entries {
		actions[e.Action]++
		if e.Result != journal.ResultOK || e.User != "tester" || e.Mode != "auto" || e.Workload != "web" || e.Container == "" || e.Reason == "" {
			t.Errorf("journal entry %+v", e)
		}
	}
	if actions["start"] != 3 || actions["roll"] != 3 {
		t.Errorf("journal actions %v, want 3 start and 3 roll", actions)
	}
}

// Each failure_action behaves as DESIGN §6 says.
func TestFailureActions(t *testing.T) {
	setup := func(t *testing.T, action string, replicas int) *harness {
		f, clock := newEngine()
		seed(t, f, clock, desiredYAML("web:v1", replicas))
		f.AddImage("web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Hour}) // never healthy in time
		h := newHarness(t, f, clock, desiredYAML("web:v3", replicas, "failure_action: "+action), ModeAuto)
		h.withJournal()
		return h.start()
	}
	deadlinePassed := func(h *harness) {
		h.waitFor("the new container", func(s Snapshot) bool { return running(s, "web:v3") == 1 })
		h.clock.Advance(11 * time.Second)
		h.fake.Tick()
		h.s.Do(Refresh{})
	}

	t.Run("pause", func(t *testing.T) {
		h := setup(t, spec.FailurePause, 1)
		deadlinePassed(h)
		snap := h.waitFor("a pause with details", func(s Snapshot) bool { return s.Pause != nil && len(s.Pause.Logs) > 0 })
		p := snap.Pause
		if !strings.Contains(p.Reason, "health_deadline") || !strings.Contains(p.Reason, "failure_action pause") || p.ByOperator {
			t.Errorf("pause reason %q", p.Reason)
		}
		if !strings.Contains(p.Health, "connection refused") {
			t.Errorf("pause health output %q, want the last probe's", p.Health)
		}
		if snap.Mode != ModeAuto {
			t.Errorf("mode %s, want auto (paused)", snap.Mode)
		}
		h.settle()
		if m := h.fake.Mutations(); len(m) != 1 || !strings.HasPrefix(m[0], "create:") {
			t.Errorf("mutations %q, want only the create before the pause", m)
		}
		if running(h.last, "web:v1") != 1 {
			t.Errorf("the old container stopped serving")
		}
		// Resume: the failure was seen, so it does not pause again.
		h.s.Do(Resume{})
		snap = h.settle()
		if snap.Pause != nil {
			t.Errorf("paused again after Resume: %s", snap.Pause.Reason)
		}
	})

	t.Run("rollback", func(t *testing.T) {
		h := setup(t, spec.FailureRollback, 1)
		deadlinePassed(h)
		snap := h.waitFor("the rollback", func(s Snapshot) bool { return len(s.Holds["web"]) == 1 && running(s, "web:v3") == 0 })
		h.drive("more rounds", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 5*time.Second })
		snap = h.settle()
		m := h.fake.Mutations()
		if countPrefix(m, "create:") != 1 || countPrefix(m, "stop:") != 1 || countPrefix(m, "remove:") != 1 {
			t.Errorf("mutations %q: want one create, then its stop and remove, and no restart", m)
		}
		if running(snap, "web:v1") != 1 || len(snap.Containers) != 1 {
			t.Errorf("the old container should keep serving alone:\n%s", describe(snap))
		}
		if snap.Pause != nil {
			t.Errorf("rollback paused: %s", snap.Pause.Reason)
		}
		if !strings.Contains(snap.Plan.String(), "on hold") {
			t.Errorf("plan does not say the spec is on hold:\n%s", snap.Plan)
		}
	})

	t.Run("continue", func(t *testing.T) {
		h := setup(t, spec.FailureContinue, 2)
		deadlinePassed(h)
		snap := h.waitFor("the second slot to start", func(s Snapshot) bool { return running(s, "web:v3") == 2 })
		if snap.Pause != nil {
			t.Errorf("continue paused: %s", snap.Pause.Reason)
		}
		if running(snap, "web:v1") != 2 {
			t.Errorf("old containers stopped:\n%s", describe(snap))
		}
	})
}

// A desired file broken mid-run keeps the last good state and the
// containers; the snapshot shows the error with its line. Fixing the file
// clears it.
func TestBrokenDesiredFileKeepsRunning(t *testing.T) {
	f, clock := newEngine()
	path := filepath.Join(t.TempDir(), "rollcall.yaml")
	good := desiredYAML("web:v1", 2)
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, f, clock, "", ModeAuto)
	h.opts.Source = source.File(path)
	h.start()
	h.drive("convergence", func(s Snapshot) bool { return s.Plan.Empty() && s.Progress.Done() && s.Progress.Total == 2 })
	before := f.Mutations()

	// Invalid YAML, as a half-saved file may be.
	broken := "workloads:\n  web:\n    image: web:v1\n    replicas: 2\n    update: {order: start-first\n"
	if err := os.WriteFile(path, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := h.waitFor("the parse error", func(s Snapshot) bool { return s.SourceErr != nil })
	var list spec.ErrorList
	// The parser finds the unclosed { at the end of the file; the hint
	// names where it was opened.
	if !errors.As(snap.SourceErr, &list) || list[0].Line != 6 || !strings.Contains(snap.SourceErr.Error(), path+":6:") ||
		!strings.Contains(list[0].Hint, "line 5") {
		t.Fatalf("source error %v: want a spec error at %s:6 whose hint names line 5", snap.SourceErr, path)
	}
	if snap.Desired == nil || snap.Desired.Workloads["web"].Replicas != 2 {
		t.Fatalf("the last good desired state is gone")
	}
	h.drive("some rounds", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 3*time.Second })
	snap = h.settle()
	if running(snap, "web:v1") != 2 || !slices.Equal(f.Mutations(), before) {
		t.Fatalf("containers changed after the file broke: %q\n%s", f.Mutations()[len(before):], describe(snap))
	}

	// Valid YAML, invalid desired state: the same, with the value's column.
	if err := os.WriteFile(path, []byte(strings.Replace(good, "replicas: 2", "replicas: -1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	snap = h.waitFor("the validation error", func(s Snapshot) bool {
		return s.SourceErr != nil && strings.Contains(s.SourceErr.Error(), path+":4:15: web.replicas")
	})
	if running(snap, "web:v1") != 2 || snap.Desired.Workloads["web"].Replicas != 2 {
		t.Fatalf("a bad replica count reached the engine:\n%s", describe(snap))
	}

	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the error to clear", func(s Snapshot) bool { return s.SourceErr == nil })
}

// A desired change that stops more than half of the running containers
// waits for a yes, even in auto; no keeps waiting.
func TestBlastRadiusGuard(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 4))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 4), ModeAuto).start()
	h.waitFor("a converged plan", func(s Snapshot) bool { return s.Connected && s.Plan.Empty() && s.Progress.Total == 4 })

	h.src.Set(desiredYAML("web:v1", 1))
	snap := h.waitFor("the guard", func(s Snapshot) bool { return s.Confirm != nil })
	if snap.Confirm.Kind != ConfirmBlast || !strings.Contains(snap.Confirm.Prompt, "3 of 4") {
		t.Fatalf("confirmation %+v, want the blast radius, 3 of 4", snap.Confirm)
	}
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("auto acted before the confirmation: %q", m)
	}

	h.s.Do(Confirm{Yes: false})
	h.waitFor("the declined guard", func(s Snapshot) bool { return s.Confirm != nil && s.Confirm.Declined })
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("auto acted after no: %q", m)
	}

	h.s.Do(Confirm{Yes: true})
	h.drive("scale down", func(s Snapshot) bool { return len(s.Containers) == 1 && s.Plan.Empty() })
	if m := f.Mutations(); countPrefix(m, "stop:") != 3 {
		t.Errorf("mutations %q, want 3 stops", m)
	}
}

// A change that stops half or fewer goes ahead unasked.
func TestBlastRadiusSmallChangeRuns(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 4))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 4), ModeAuto).start()
	h.waitFor("a converged plan", func(s Snapshot) bool { return s.Connected && s.Plan.Empty() && s.Progress.Total == 4 })
	h.src.Set(desiredYAML("web:v1", 2))
	snap := h.drive("scale down", func(s Snapshot) bool { return len(s.Containers) == 2 && s.Plan.Empty() })
	if hasNote(snap, "holding") {
		t.Errorf("the guard held a change of 2 of 4")
	}
}

// A stop-first step needs a yes in every mode, auto included.
func TestDowntimeStepNeedsConfirm(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 3))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 3, "order: stop-first"), ModeAuto).start()
	snap := h.waitFor("the question", func(s Snapshot) bool { return s.Confirm != nil })
	if snap.Confirm.Kind != ConfirmDowntime || !snap.Confirm.Step.Downtime || !snap.Steps[snap.Confirm.Key].NeedsConfirm {
		t.Fatalf("confirmation %+v", snap.Confirm)
	}
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("ran a stop-first step unconfirmed: %q", m)
	}
	h.s.Do(Confirm{Yes: true})
	h.drive("the first slot to roll", func(s Snapshot) bool { return running(s, "web:v2") == 1 && running(s, "web:v1") == 2 })
	// Every slot asks again, and says how long the last slot was down.
	for want := 2; want <= 3; want++ {
		snap := h.drive("the next question", func(s Snapshot) bool { return s.Confirm != nil && s.Confirm.Kind == ConfirmDowntime })
		if st := snap.Confirm.Step; st.Why.LastDown <= 0 || !strings.Contains(st.Reason, " last time)") {
			t.Errorf("question %d: last downtime %s, reason %q", want, st.Why.LastDown, st.Reason)
		}
		h.s.Do(Confirm{Yes: true})
		h.drive("the next slot", func(s Snapshot) bool { return running(s, "web:v2") == want })
	}
	h.drive("the end of the roll", func(s Snapshot) bool { return running(s, "web:v1") == 0 && s.Plan.Empty() })
}

// A second acting session on the same host lock falls back to watch and
// names the holder; once the first lets go, it can act.
func TestSecondSessionFallsBackToWatch(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	first := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	first.opts.User = "alice@10.0.0.5"
	first.start()
	first.waitFor("the lock", func(s Snapshot) bool { return s.Lock.Held })

	second := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep)
	second.opts.LockPath, second.opts.User = first.opts.LockPath, "bob"
	second.start()
	snap := second.waitFor("the fall back", func(s Snapshot) bool { return s.Mode == ModeWatch && s.Lock.Holder != nil })
	if h := snap.Lock.Holder; h.User != "alice@10.0.0.5" || h.PID != os.Getpid() || h.Since.IsZero() || snap.Lock.Held {
		t.Errorf("holder %+v, held %v", h, snap.Lock.Held)
	}
	if !hasNote(snap, "alice@10.0.0.5") {
		t.Errorf("no note names the holder:\n%s", describe(snap))
	}

	first.s.Do(SetMode{Mode: ModeWatch})
	first.waitFor("the release", func(s Snapshot) bool { return !s.Lock.Held && s.Mode == ModeWatch })
	second.s.Do(SetMode{Mode: ModeStep})
	second.waitFor("the lock", func(s Snapshot) bool { return s.Lock.Held && s.Mode == ModeStep && s.Lock.Holder == nil })
	first.s.Do(Refresh{})
	first.waitFor("the new holder", func(s Snapshot) bool { return s.Lock.Holder != nil && s.Lock.Holder.User == "bob" })
}

// An approved step that a fresh diff no longer holds is dropped with a note.
func TestApprovedStepVanishedIsDropped(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	snap := h.waitFor("a start", func(s Snapshot) bool { return len(s.Plan.Executable()) == 1 })
	st := snap.Plan.Executable()[0]

	// Someone else starts the container behind the session's back (no event).
	c := st.Create
	if _, err := f.AddContainer(docker.Container{Name: c.Name, Image: c.Image, ImageID: "sha256:1111", Labels: c.Labels,
		HasHealthcheck: true, Health: docker.HealthHealthy, Limits: c.Limits}); err != nil {
		t.Fatal(err)
	}
	h.s.Do(ApproveStep{Key: st.Key()})
	snap = h.waitFor("the drop", func(s Snapshot) bool { return hasNote(s, "no longer in the plan") })
	if !hasNote(snap, st.Key()) {
		t.Errorf("the note does not name the step:\n%s", describe(snap))
	}
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("a dropped step ran: %q", m)
	}
}

// A step that fails at the engine shows its error, is journaled as
// failed, and auto tries it again after a backoff.
func TestFailedStepIsShownJournaledAndRetried(t *testing.T) {
	f, clock := newEngine()
	f.FailNext("Create", errors.New("no space left on device"))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	jpath := h.withJournal()
	h.start()
	snap := h.waitFor("the failure", func(s Snapshot) bool {
		for _, st := range s.Steps {
			if st.State == StepFailed && strings.Contains(st.Err, "no space left") {
				return true
			}
		}
		return false
	})
	if len(snap.Recent) != 1 || !strings.Contains(snap.Recent[0].Err, "no space left") {
		t.Errorf("recent %+v", snap.Recent)
	}
	h.waitFor("the retry", func(s Snapshot) bool { return running(s, "web:v1") == 1 })
	// The engine can show the container before the step's end is journaled.
	var entries []journal.Entry
	var err error
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if entries, err = journal.Read(jpath, 0); err == nil && len(stepEntries(entries)) >= 2 &&
			stepEntries(entries)[1].Result != journal.ResultInterrupted { // its end line is written
			entries = stepEntries(entries)
			break
		}
	}
	if err != nil || len(entries) != 2 || entries[0].Result != journal.ResultFailed || !strings.Contains(entries[0].Error, "no space left") ||
		entries[1].Result != journal.ResultOK {
		t.Fatalf("journal %+v, %v: want the failed start, then the retry", entries, err)
	}
	if gap := entries[1].Time.Sub(entries[0].Time); gap < 900*time.Millisecond {
		t.Errorf("retried %s after the failure, want the 1s backoff", gap)
	}
}

// The operator's rollback stops the new container where an old one still
// serves, keeps the slot that finished rolling, and holds the spec.
func TestOperatorRollback(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	// Slot 1 has its v2 container beside the v1 one, mid-roll.
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 2)))
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Resolve(context.Background(), d, f)
	if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 1)); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2), ModeStep).start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Connected && s.Resolved != nil })
	h.s.Do(Rollback{Workload: "web"})
	snap := h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
	h.drive("more rounds", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 3*time.Second })
	snap = h.settle()
	want := []string{"stop:" + reconcile.ContainerName(pfx, "web", 1, r.Workload("web").Hash),
		"remove:" + reconcile.ContainerName(pfx, "web", 1, r.Workload("web").Hash)}
	if m := f.Mutations(); !slices.Equal(m, want) {
		t.Errorf("mutations %q, want %q", m, want)
	}
	if running(snap, "web:v1") != 2 || running(snap, "web:v2") != 0 {
		t.Errorf("after the rollback:\n%s", describe(snap))
	}
	if hs := snap.Holds["web"]; len(hs) != 1 || hs[0] != r.Workload("web").Hash {
		t.Errorf("holds %v", snap.Holds)
	}
}

// A broken event stream and a failing engine show as disconnected; the
// session reconnects by itself.
func TestEngineDisconnectIsReported(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch).start()
	snap := h.waitFor("a connection", func(s Snapshot) bool { return s.Connected && s.Engine.Simulated && len(s.Containers) == 1 })
	name := snap.Containers[0].Name
	f.FailNext("List", errors.New("connection refused"))
	f.FailNext("Info", errors.New("connection refused"))
	f.BreakEvents(errors.New("unexpected EOF"))
	snap = h.waitFor("the disconnect", func(s Snapshot) bool { return !s.Connected && strings.Contains(s.EngineErr, "connection refused") })
	if !strings.Contains(snap.EngineErr, "engine disconnected") {
		t.Errorf("engine error %q", snap.EngineErr)
	}
	h.waitFor("the reconnect", func(s Snapshot) bool { return s.Connected && s.EngineErr == "" })
	// The new stream delivers.
	if err := f.Kill(name, 137); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the die event", func(s Snapshot) bool {
		return slices.ContainsFunc(s.Events, func(e docker.Event) bool { return e.Action == "die" && e.Name == name })
	})
}

// A reader that does not read never holds the loop up, and then gets the
// latest state, not a backlog.
func TestSnapshotsLatestWins(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	h.s.Do(Pause{})
	for range 5 {
		n := countPrefix(f.Calls(), "list:")
		h.s.Do(Refresh{})
		deadline := time.Now().Add(waitLimit)
		for countPrefix(f.Calls(), "list:") == n {
			if time.Now().After(deadline) {
				t.Fatal("the loop stopped relisting while nobody read its snapshots")
			}
			time.Sleep(time.Millisecond)
		}
	}
	snap := <-h.s.Snapshots()
	if snap.Pause == nil || !snap.Pause.ByOperator || !strings.Contains(snap.Pause.Reason, "tester") {
		t.Errorf("pause %+v", snap.Pause)
	}
	if snap.Seq < 6 {
		t.Errorf("seq %d: want a late snapshot, older ones replaced", snap.Seq)
	}
}

// TestRebuiltTagRollsFromTheImageEvent: a tag rebuilt in place (the same
// reference, a new image) is noticed from the engine's image event, not at
// the next resync, and the containers of the old image roll. A resync is a
// list alone: it resolves no image.
func TestRebuiltTagRollsFromTheImageEvent(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 2), ModeAuto)
	h.opts.Resync = 20 * time.Millisecond
	h.start()
	h.drive("converged on web:v1", func(s Snapshot) bool {
		return s.Resolved != nil && s.Steady && s.Plan.Empty() && running(s, "web:v1") == 2
	})
	// Several resyncs, and not one image inspect.
	f.ResetCalls()
	time.Sleep(150 * time.Millisecond)
	calls := f.Calls()
	if countPrefix(calls, "list:") < 2 || countPrefix(calls, "imageinspect:") != 0 {
		t.Fatalf("calls over several resyncs: %q; want lists alone", calls)
	}

	// Resyncs resolve nothing: only the image event can tell.
	f.AddImage("web:v1", "sha256:1b1b", fake.Behaviour{ReadyAfter: time.Second})
	h.drive("both slots rolled to the rebuilt image", func(s Snapshot) bool {
		n := 0
		for _, c := range s.Containers {
			if c.ImageID == "sha256:1b1b" && c.State == docker.StateRunning {
				n++
			}
		}
		return n == 2 && len(s.Containers) == 2 && s.Steady
	})
}
