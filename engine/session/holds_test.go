package session

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// heldWeb seeds web/0 on web:v1 and puts web:v2, the desired spec, on hold
// in a holds file of a fresh state directory, as a rollback would have. It
// returns the directory, the engine's identity and the held hash.
func heldWeb(t *testing.T, f *fake.Engine, clock *fake.ManualClock) (string, docker.EngineInfo, string) {
	t.Helper()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hash := spec.Resolve(context.Background(), d, f).Workload("web").Hash
	info, err := notSimulated{f}.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	since := time.Date(2026, 4, 30, 3, 12, 0, 0, time.UTC)
	recs := state.Holds{}
	recs.Add(Hold{Workload: "web", Hash: hash, Since: since, By: "night-shift", Reason: "web/0: rollback: not healthy"})
	if err := state.WriteHoldsFile(state.HoldsPath(dir, info, pfx), recs); err != nil {
		t.Fatal(err)
	}
	return dir, info, hash
}

// startsWeb reports whether the plan starts web/0 or has started it.
func startsWeb(s Snapshot) bool {
	for _, st := range s.Plan.Executable() {
		if st.Action == reconcile.ActStart && st.Workload == "web" {
			return true
		}
	}
	return running(s, "web:v2") > 0
}

// TestRetryLiftsTheHold (§6): Retry lifts the hold of a workload, journaled
// as the operator's decision, and written down; the held spec is then in
// the plan again, and runs once approved.
func TestRetryLiftsTheHold(t *testing.T) {
	f, clock := newEngine()
	dir, info, hash := heldWeb(t, f, clock)
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeStep)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	jpath := h.withJournal()
	h.start()
	snap := h.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh && len(s.Holds["web"]) == 1 })
	if startsWeb(snap) {
		t.Fatalf("the held spec is in the plan:\n%s", describe(snap))
	}

	h.s.Do(Retry{Workload: "web"})
	snap = h.waitFor("the hold lifted", func(s Snapshot) bool { return s.Fresh && len(s.Holds) == 0 && startsWeb(s) })
	if !hasNote(snap, "hold on web spec "+short(hash)+" lifted by tester") {
		t.Errorf("no note of the lift:\n%s", describe(snap))
	}
	if hs, err := ListHolds(dir, info, pfx); err != nil || len(hs) != 0 {
		t.Errorf("holds file after the retry: %v %v, want none", hs, err)
	}
	es, err := journal.Read(jpath, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range es {
		if e.Result == journal.ResultDecision && e.Action == "retry" {
			found = e.Workload == "web" && e.User == "tester" && strings.Contains(e.Reason, short(hash)) && e.Prefix == pfx
		}
	}
	if !found {
		t.Errorf("no retry decision for web in the journal: %+v", es)
	}

	// The spec starts again once approved.
	for _, st := range snap.Plan.Executable() {
		h.s.Do(ApproveStep{Key: st.Key()})
	}
	h.drive("the held spec running", func(s Snapshot) bool { return running(s, "web:v2") == 1 })

	// Nothing on hold any more: a second retry says so and journals nothing.
	h.s.Do(Retry{Workload: "web"})
	h.waitFor("the second retry refused", func(s Snapshot) bool { return hasNote(s, "retry web: no spec of it is on hold") })
}

// TestRetryRefusedInWatchMode: watch is read-only; a hold stays.
func TestRetryRefusedInWatchMode(t *testing.T) {
	f, clock := newEngine()
	dir, info, _ := heldWeb(t, f, clock)
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeWatch)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.start()
	h.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh && len(s.Holds["web"]) == 1 })
	h.s.Do(Retry{Workload: "web"})
	snap := h.waitFor("the refusal", func(s Snapshot) bool { return hasNote(s, "read-only: cannot lift a hold") })
	if len(snap.Holds["web"]) != 1 {
		t.Errorf("watch mode lifted the hold: %v", snap.Holds)
	}
	if hs, _ := ListHolds(dir, info, pfx); len(hs) != 1 {
		t.Errorf("holds file after a refused retry: %v", hs)
	}
}

// TestHoldLiftedOutsideTheSession: `rollcall retry` (LiftHolds) while a
// session runs in auto: the session reads the holds file again beside its
// next relist (here the resync, with no event), lifts the hold and starts
// the spec.
func TestHoldLiftedOutsideTheSession(t *testing.T) {
	f, clock := newEngine()
	dir, info, hash := heldWeb(t, f, clock)
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeAuto)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.opts.Resync = 20 * time.Millisecond
	h.start()
	h.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh && len(s.Holds["web"]) == 1 })
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("the held spec was started: %q", m)
	}

	lifted, err := LiftHolds(dir, info, pfx, "web")
	if err != nil {
		t.Fatal(err)
	}
	if len(lifted) != 1 || lifted[0].Hash != hash || lifted[0].By != "night-shift" || lifted[0].Since.IsZero() {
		t.Fatalf("lifted %+v, want the one hold with its record", lifted)
	}
	snap := h.waitFor("the hold lifted in the session", func(s Snapshot) bool { return len(s.Holds) == 0 })
	if !hasNote(snap, "lifted outside this session") {
		t.Errorf("no note of the lift:\n%s", describe(snap))
	}
	h.drive("the held spec running", func(s Snapshot) bool { return running(s, "web:v2") == 1 })
}

// holdsLoop is a bare loop with its holds worker, for the bookkeeping of
// the holds file alone: a relist it asks for only counts as asked.
func holdsLoop(t *testing.T) *loop {
	l := &loop{ctx: context.Background(), opts: Options{User: "tester", Now: time.Now}, clocks: clocks{wallNow: time.Now, engineNow: time.Now}, guards: guards{holds: map[string]map[string]bool{}},
		runner: runner{rollbacks: map[string]string{}}, observer: observer{infoOK: true, fetching: true}, disk: disk{slowSaid: map[string]time.Time{}}}
	l.holdsW = loopkit.StartWorker(doHolds)
	t.Cleanup(l.holdsW.Close)
	return l
}

// awaitHolds takes in the holds writes under way, as the loop would.
func (l *loop) awaitHolds(t *testing.T) {
	t.Helper()
	for l.hs.writing != nil {
		select {
		case <-l.holdsW.Ready():
			for _, w := range l.holdsW.Take() {
				l.onHoldsWritten(w)
			}
		case <-time.After(waitLimit):
			t.Fatal("the holds write did not end")
		}
	}
}

// TestASessionWriteKeepsALiftMadeOutside: a session that writes its holds
// (a new hold) after `rollcall retry` lifted one and before it read the
// file again writes only what it changed: the lifted hold stays lifted,
// in the file and in the session.
func TestASessionWriteKeepsALiftMadeOutside(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := state.HoldsPath(dir, info, pfx)
	recs := state.Holds{}
	recs.Add(Hold{Workload: "web", Hash: "aaaa1111"})
	if err := state.WriteHoldsFile(path, recs); err != nil {
		t.Fatal(err)
	}
	l := holdsLoop(t)
	l.onHoldsRead(&holdsRead{path: path, recs: recs})
	if !l.holds["web"]["aaaa1111"] {
		t.Fatalf("holds %v after the first read", l.holds)
	}

	if _, err := LiftHolds(dir, info, pfx, "web"); err != nil {
		t.Fatal(err)
	}
	l.guards.hold("api", "bbbb2222", holdWhy{cause: state.HoldByOperator}) // a rollback of api
	l.saveHolds()
	l.awaitHolds(t)
	if l.holds["web"]["aaaa1111"] || !l.holds["api"]["bbbb2222"] {
		t.Errorf("session holds %v, want api's only", l.holds)
	}
	got, err := ListHolds(dir, info, pfx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Workload != "api" || got[0].By != "tester" || got[0].Since.IsZero() || got[0].Cause != state.HoldByOperator {
		t.Errorf("holds file %+v, want api's hold with who, when and why", got)
	}
	// A read that began before that write is older than it: not taken.
	l.onHoldsRead(&holdsRead{gen: l.hs.gen - 1, path: path, recs: recs})
	if l.holds["web"]["aaaa1111"] {
		t.Errorf("a read from before the write put the lifted hold back: %v", l.holds)
	}
	if !l.refetch {
		t.Error("no relist asked for after the write: the plan in hand predates it")
	}
}

// TestHoldsChangedWhileAWriteIsUnderWay: the session's holds change while
// its write of the holds file waits on the disk (here: on the file's lock,
// held by another rollcall). The write in flight is not taken for a change
// made outside, and the change follows it: a hold lifted meanwhile ends
// lifted in the session and in the file, one put meanwhile ends held.
func TestHoldsChangedWhileAWriteIsUnderWay(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := state.HoldsPath(dir, info, pfx)
	l := holdsLoop(t)
	l.onHoldsRead(&holdsRead{path: path, recs: state.Holds{}})

	release, held := make(chan struct{}), make(chan struct{})
	other := make(chan error, 1)
	go func() {
		_, err := state.UpdateHoldsFile(path, state.HoldsLockWait, func(state.Holds) bool { close(held); <-release; return false })
		other <- err
	}()
	<-held
	l.holds["web"] = map[string]bool{"aaaa1111": true} // a rollback
	l.saveHolds()
	if l.hs.writing == nil {
		t.Fatal("no write under way")
	}
	l.unhold("web", "aaaa1111")                        // a retry, while it waits
	l.holds["api"] = map[string]bool{"bbbb2222": true} // and another rollback
	l.saveHolds()
	close(release)
	if err := <-other; err != nil {
		t.Fatal(err)
	}
	l.awaitHolds(t)
	if l.holds["web"]["aaaa1111"] || !l.holds["api"]["bbbb2222"] {
		t.Errorf("session holds %v, want api's only", l.holds)
	}
	got, err := ListHolds(dir, info, pfx)
	if err != nil || len(got) != 1 || got[0].Workload != "api" {
		t.Errorf("holds file %+v %v, want api's only", got, err)
	}
}

// TestHoldKeptWhileTheImageCannotBeResolved (§6): a workload whose image
// cannot be resolved keeps its hold ("cannot tell" is not "changed"), so
// once the image is back the held spec is still not started.
func TestHoldKeptWhileTheImageCannotBeResolved(t *testing.T) {
	clock := fake.NewManualClock(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clock, Seed: 1})
	f.AddImage("web:v1", "sha256:1111", fake.Behaviour{ReadyAfter: time.Second})
	seed(t, f, clock, desiredYAML("web:v1", 1))
	// The held spec's hash, as resolved where web:v2 exists.
	other := fake.New(fake.Options{Clock: clock, Seed: 1})
	other.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Second})
	d, err := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hash := spec.Resolve(context.Background(), d, other).Workload("web").Hash
	info, _ := notSimulated{f}.Info(context.Background())
	dir := t.TempDir()
	recs := state.Holds{}
	recs.Add(Hold{Workload: "web", Hash: hash})
	if err := state.WriteHoldsFile(state.HoldsPath(dir, info, pfx), recs); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t, f, clock, neverPull(desiredYAML("web:v2", 1)), ModeAuto) // a missing image is not pulled: it cannot be resolved
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.start()
	h.waitFor("the plan with web:v2 missing", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Errors()) > 0 })
	h.settle()
	if len(h.last.Holds["web"]) != 1 {
		t.Fatalf("the hold was lifted while web:v2 could not be resolved: %v\n%s", h.last.Holds, describe(h.last))
	}
	f.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Second})
	h.waitFor("web:v2 resolved", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Errors()) == 0 })
	h.settle()
	if n := countPrefix(f.Mutations(), "create"); n != 0 {
		t.Fatalf("the held spec started once its image was back: %q", f.Mutations())
	}
	if hs, _ := ListHolds(dir, info, pfx); len(hs) != 1 {
		t.Errorf("holds file %v, want the hold kept", hs)
	}
}
