package fleet

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/state"
)

var abc = []string{"a", "b", "c"}

// done reports a fleet snapshot whose rollout is done, every host steady.
func doneAll(s Snapshot) bool { return s.Steady && s.Decision.Phase == PhaseDone }

// A 3-host rollout in auto: the canary host is all healthy on the new
// version before any other host gets a new container, and each later
// wave waits for the ones before it; at the end every host runs it.
func TestRolloutCanaryFirst(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.expectWaves("web:v2", 2, []string{"a"}, []string{"b"}, []string{"c"})
	r := w.fleet(fleetYAML("web:v2", 2, abc, "batch: 1"), session.ModeAuto).start()

	snap := r.drive("the rollout to finish", doneAll)
	for _, m := range w.mutations() {
		if !m.earlierReady {
			t.Errorf("%s on %s before the earlier waves were all healthy on web:v2", m.call, m.host)
		}
	}
	if got := w.mutated(); !slices.Equal(got, abc) {
		t.Errorf("hosts mutated in the order %v, want %v", got, abc)
	}
	for _, h := range abc {
		if got := w.engineImages(h); got["web:v2"] != 2 || len(got) != 1 {
			t.Errorf("%s runs %v, want 2 web:v2", h, got)
		}
	}
	if snap.RolloutID == "" || snap.Blocked != "" {
		t.Errorf("rollout %q, blocked %q", snap.RolloutID, snap.Blocked)
	}

	// A new desired state is a new rollout: a new ID, the canary first
	// again, though the canary is the slowest to see it: until its session
	// has a plan of it, what it had (nothing to do) counts for nothing.
	first := snap.RolloutID
	w.expectWaves("web:v1", 2, []string{"a"}, []string{"b"}, []string{"c"})
	n := len(w.mutations())
	w.engines["a"].slowList.Store(int64(300 * time.Millisecond))
	r.noRefresh = true
	r.src.Set(fleetYAML("web:v1", 2, abc, "batch: 1"))
	r.drive("a's first new container", func(Snapshot) bool { return len(w.mutations()) > n })
	w.engines["a"].slowList.Store(0)
	r.noRefresh = false
	snap = r.drive("the second rollout to finish", func(s Snapshot) bool {
		return doneAll(s) && s.RolloutID != first && s.RolloutID != ""
	})
	second := w.mutations()[n:]
	if len(second) == 0 || second[0].host != "a" {
		t.Fatalf("the second rollout began with %+v, want the canary", second)
	}
	for _, m := range second {
		if !m.earlierReady {
			t.Errorf("second rollout: %s on %s before the earlier waves were all healthy on web:v1", m.call, m.host)
		}
	}
}

// A host that does not answer at preflight stops the rollout before any
// change anywhere, and the snapshot says why.
func TestPreflightUnreachableStopsAll(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.engines["c"].dead.Store(true)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto).start()

	r.waitFor("a and b observed", func(s Snapshot) bool {
		return len(s.Hosts) == 3 && s.Hosts[0].Session.Connected && s.Hosts[1].Session.Connected && s.Hosts[2].DialErr != ""
	})
	snap := r.quiet(20 * time.Second)
	if m := w.mutations(); len(m) != 0 {
		t.Fatalf("a host that does not answer let the rollout change something: %+v", m)
	}
	if snap.Decision.Phase != PhasePreflight || snap.RolloutID != "" {
		t.Errorf("phase %s, rollout %q: want preflight, none begun", PhaseName(snap.Decision.Phase), snap.RolloutID)
	}
	waits := snap.Decision.Waves[0].Waits
	if !slices.ContainsFunc(waits, func(w Wait) bool { return w.Host == "c" && w.Problem == ProblemUnreachable }) {
		t.Errorf("the first wave's waits %+v do not name c as unreachable", waits)
	}
	if !strings.Contains(snap.Blocked, "c does not answer") {
		t.Errorf("Blocked %q does not say c does not answer", snap.Blocked)
	}
}

// With SkipUnreachable a host that does not answer is left out (and
// journaled), and the others roll.
func TestSkipUnreachable(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.engines["c"].dead.Store(true)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto)
	r.opts.SkipUnreachable = true
	path := r.withJournal()
	r.start()

	snap := r.drive("the rollout to finish without c", doneAll)
	if v := snap.Hosts[2].Verdict; v.Status != HostLeftOut {
		t.Errorf("c's verdict %+v, want left out", v)
	}
	if got := w.mutated(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("hosts mutated %v, want a then b", got)
	}
	entries, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(entries, func(e journal.Entry) bool {
		return e.Action == lineLeftOut && e.Host == "c" && e.Rollout == snap.RolloutID
	}) {
		t.Errorf("no journal line says c was left out of rollout %s", snap.RolloutID)
	}
}

// With SkipUnreachable a canary host that does not answer is not left
// out: nothing changes anywhere, and the snapshot says why the flag did
// not apply.
func TestSkipUnreachableNeverTheCanary(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.engines["a"].dead.Store(true)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto)
	r.opts.SkipUnreachable = true
	r.start()

	r.waitFor("b and c observed", func(s Snapshot) bool {
		return len(s.Hosts) == 3 && s.Hosts[0].DialErr != "" && s.Hosts[1].Session.Connected && s.Hosts[2].Session.Connected &&
			len(s.Decision.Hosts) == 3
	})
	snap := r.quiet(20 * time.Second)
	if m := w.mutations(); len(m) != 0 {
		t.Fatalf("the canary does not answer, yet the rollout changed something: %+v", m)
	}
	if v := snap.Decision.Hosts[0]; v.Status == HostLeftOut {
		t.Errorf("the canary a was left out: %+v", v)
	}
	if !strings.Contains(snap.Blocked, "a does not answer") || !strings.Contains(snap.Blocked, "canary") {
		t.Errorf("Blocked %q does not say the canary a does not answer and why it is not left out", snap.Blocked)
	}
}

// A host whose engine goes away mid-roll is lost: the rollout pauses
// loudly, no later wave starts, and the others keep serving.
func TestLostHostPauses(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc, "batch: 1"), session.ModeAuto).start()

	r.drive("b's first new container", func(Snapshot) bool { return slices.Contains(w.mutated(), "b") })
	w.engines["b"].goAway()
	snap := r.drive("the pause", func(s Snapshot) bool { return s.Decision.Phase == PhasePaused })
	if v := snap.Hosts[1].Verdict; v.Status != HostLost {
		t.Errorf("b's verdict %+v, want lost", v)
	}
	snap = r.quiet(30 * time.Second)
	if slices.Contains(w.mutated(), "c") {
		t.Errorf("c was changed after b was lost: %+v", w.mutations())
	}
	if got := w.engineImages("a"); got["web:v2"] != 2 {
		t.Errorf("a runs %v, want its 2 web:v2 still serving", got)
	}
	if got := w.engineImages("c"); got["web:v1"] != 2 {
		t.Errorf("c runs %v, want its 2 web:v1 still serving", got)
	}
	if !strings.Contains(snap.Blocked, "b lost") || !hasNote(snap, "HOST FAILED: b") {
		t.Errorf("blocked %q; the pause must say b is lost, loudly:\n%s", snap.Blocked, describe(snap))
	}
}

// A blip (the engine away for less than LostGrace) is not a lost host:
// the rollout goes on once it answers again.
func TestBlipIsNotLost(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc, "batch: 1"), session.ModeAuto).start()

	r.drive("b's first new container", func(Snapshot) bool { return slices.Contains(w.mutated(), "b") })
	w.engines["b"].goAway()
	r.waitFor("b disconnected", func(s Snapshot) bool { return !s.Hosts[1].Session.Connected })
	w.clock.Advance(2 * time.Second)
	w.engines["b"].comeBack()
	snap := r.drive("the rollout to finish", doneAll)
	if len(snap.Decision.Record.Failed) != 0 {
		t.Errorf("failed hosts %+v after a blip", snap.Decision.Record.Failed)
	}
}

// The lost-host grace is 5 s by the fleet's clock (README: a host that
// stops answering for more than 5 s is lost; issue 26 row 18): a host away
// 4.9 s is not lost yet, nor the rollout paused; away 5.1 s it is lost,
// and the rollout pauses. The clock moves only by hand here, and each
// reading is of a decision made at that moment or after.
func TestLostGraceIsFiveSeconds(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc, "batch: 1"), session.ModeAuto).start()

	r.drive("b's first new container", func(Snapshot) bool { return slices.Contains(w.mutated(), "b") })
	w.engines["b"].goAway()
	r.waitFor("b disconnected", func(s Snapshot) bool { return !s.Hosts[1].Session.Connected })
	away := w.clock.Now()
	at := func(d time.Duration) Snapshot {
		t.Helper()
		w.clock.Set(away.Add(d))
		r.f.Do(ToHost{Host: "a", Intent: session.Refresh{}}) // any intent has the fleet decide again
		return r.waitFor("a decision "+d.String()+" after b went away", func(s Snapshot) bool { return !s.At.Before(away.Add(d)) })
	}
	snap := at(4900 * time.Millisecond)
	if v := snap.Hosts[1].Verdict; v.Status == HostLost || snap.Decision.Phase == PhasePaused {
		t.Fatalf("b is lost 4.9 s after it went away, within the 5 s grace: verdict %+v\n%s", v, describe(snap))
	}
	snap = at(5100 * time.Millisecond)
	if v := snap.Hosts[1].Verdict; v.Status != HostLost || snap.Decision.Phase != PhasePaused {
		t.Fatalf("b is not lost 5.1 s after it went away, past the 5 s grace: verdict %+v\n%s", v, describe(snap))
	}
}

// Step mode: nothing runs before the first wave is approved; an approved
// wave runs and the next waits for its approval; ApproveAll runs the rest.
func TestStepModeApprovesWaves(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc, "batch: 1"), session.ModeStep).start()

	r.waitFor("the first wave waiting for approval", func(s Snapshot) bool {
		return len(s.Decision.Waves) == 3 && slices.ContainsFunc(s.Decision.Waves[0].Waits, func(w Wait) bool { return w.Kind == WaitApproval })
	})
	r.quiet(10 * time.Second)
	if m := w.mutations(); len(m) != 0 {
		t.Fatalf("step mode ran before any wave was approved: %+v", m)
	}
	r.f.Do(ApproveWave{Index: 0})
	r.drive("the canary done, wave 2 waiting for approval", func(s Snapshot) bool {
		return s.Decision.Waves[0].Status == WaveComplete &&
			slices.ContainsFunc(s.Decision.Waves[1].Waits, func(w Wait) bool { return w.Kind == WaitApproval })
	})
	r.quiet(10 * time.Second)
	if got := w.mutated(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("hosts mutated %v after wave 1's approval, want a only", got)
	}
	r.f.Do(ApproveAll{})
	snap := r.drive("the rollout to finish", doneAll)
	if got := w.mutated(); !slices.Equal(got, abc) {
		t.Errorf("hosts mutated %v, want %v", got, abc)
	}
	if !snap.Approved[0] || !snap.ApprovedAll {
		t.Errorf("approved %v, all %v: want wave 1 and the whole rollout", snap.Approved, snap.ApprovedAll)
	}
}

// A rerun with every host converged does nothing: no change, no rollout.
func TestRerunConvergedDoesNothing(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v2", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto)
	path := r.withJournal()
	r.start()
	r.drive("done", doneAll)
	r.quiet(10 * time.Second)
	// quiet returns the snapshot seen as the clock passed, which may be
	// one of a relist under way (not fresh, so not steady): read the
	// next steady one. A rollout begun meanwhile would still show.
	snap := r.drive("steady after 10s", doneAll)
	if m := w.mutations(); len(m) != 0 {
		t.Errorf("a converged fleet changed something: %+v", m)
	}
	if snap.RolloutID != "" || !snap.Steady {
		t.Errorf("rollout %q steady %v: want none begun, steady", snap.RolloutID, snap.Steady)
	}
	if entries, _ := journal.Read(path, 0); len(entries) != 0 {
		t.Errorf("journal lines for a rollout that did nothing: %+v", entries)
	}
}

// One rollout ID is on every journal line of every host, each with its
// host, and on the fleet's own lines.
func TestOneRolloutIDOnEveryLine(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto)
	path := r.withJournal()
	r.start()
	snap := r.drive("the rollout to finish", doneAll)

	entries, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]int{}
	actions := map[string]bool{}
	for _, e := range entries {
		if e.Rollout != snap.RolloutID || snap.RolloutID == "" {
			t.Errorf("line %+v: rollout %q, want %q", e, e.Rollout, snap.RolloutID)
		}
		actions[e.Action] = true
		if e.Result != journal.ResultDecision {
			steps[e.Host]++
			if e.Engine != "engine-"+e.Host {
				t.Errorf("step line of host %q names engine %q", e.Host, e.Engine)
			}
		}
	}
	for _, h := range abc {
		if steps[h] == 0 {
			t.Errorf("no step line of host %s: %v", h, steps)
		}
	}
	for _, a := range []string{lineBegan, linePreflight, lineWave, linePhase} {
		if !actions[a] {
			t.Errorf("no %s line of the fleet's own", a)
		}
	}
}

// Two fleets on overlapping host sets (one lock folder, as on one
// machine): exactly one acts. The other takes no lock at all (all or
// nothing), watches, and says who holds the one it could not take.
func TestTwoFleetsOneActs(t *testing.T) {
	w := newWorld(t, "a", "b", "c")
	w.seed("web:v1", 2)
	one := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}), session.ModeAuto)
	two := w.fleet(fleetYAML("web:v2", 2, []string{"b", "c"}), session.ModeAuto)
	two.opts.User = "other"
	// two is first to the lock of b, the host both share; one, which
	// takes a's lock before b's (LockOrder), must then let a's go.
	two.start()
	two.waitFor("two's sessions", func(s Snapshot) bool { return len(s.Hosts) == 2 && s.Hosts[0].Session.Seq > 0 })
	runs := []*fleetRun{one.start(), two}
	latest := make([]atomic.Pointer[Snapshot], 2)
	for i, r := range runs {
		go func() {
			for s := range r.f.Snapshots() {
				latest[i].Store(&s)
			}
		}()
	}
	snap := func(i int) Snapshot {
		if s := latest[i].Load(); s != nil {
			return *s
		}
		return Snapshot{}
	}
	deadline := time.Now().Add(waitLimit)
	for !doneAll(snap(0)) && !doneAll(snap(1)) {
		if time.Now().After(deadline) {
			t.Fatalf("neither fleet finished:\n%s\n%s", describe(snap(0)), describe(snap(1)))
		}
		time.Sleep(20 * time.Millisecond)
		w.clock.Advance(500 * time.Millisecond)
		for _, e := range w.engines {
			e.fake.Tick()
		}
		for i, r := range runs {
			for _, h := range snap(i).Hosts {
				r.f.Do(ToHost{Host: h.Name, Intent: session.Refresh{}})
			}
		}
	}
	acting, watching := 1, 0
	if doneAll(snap(0)) {
		t.Fatalf("one acted, though two held b's lock first:\n%s", describe(snap(0)))
	}
	a, b := snap(acting), snap(watching)
	if b.Mode != session.ModeWatch || !strings.Contains(b.LockErr, "held by") || !strings.Contains(b.Blocked, "held by") {
		t.Errorf("the other fleet: mode %s, lock error %q, blocked %q: want watch, naming the holder", b.Mode, b.LockErr, b.Blocked)
	}
	own := map[int]string{0: "a", 1: "c"} // each fleet's host the other does not share
	if slices.Contains(w.mutated(), own[watching]) {
		t.Errorf("the watching fleet's own host %s was changed: %+v", own[watching], w.mutations())
	}
	for _, h := range b.Hosts {
		if h.Lock.Held || h.Session.Lock.Held {
			t.Errorf("the watching fleet holds %s's lock", h.Name)
		}
	}
	// All or nothing: the lock of its own host is free, though it took it
	// before it found b's held.
	path := lockPath(w.lockDir, docker.EngineInfo{ID: "engine-" + own[watching], Simulated: true}, "rollcall")
	if h := state.ReadLockHolder(path); h != nil {
		t.Errorf("the lock of %s, which the watching fleet does not share, names %s", own[watching], h)
	}
	lk, _, err := state.TakeLock(path, "probe", time.Now())
	if err != nil {
		t.Errorf("the lock of %s, which the watching fleet does not share: %v", own[watching], err)
	} else {
		lk.Release()
	}
	if a.Mode != session.ModeAuto || a.LockErr != "" {
		t.Errorf("the acting fleet: mode %s, lock error %q", a.Mode, a.LockErr)
	}

	// The acting fleet ends and lets go; the other, asked to act again,
	// takes every lock and rolls its hosts.
	two.stop()
	one.f.Do(SetMode{Mode: session.ModeAuto})
	one.last = snap(0)
	s2 := one.drive("the other fleet to roll", doneAll)
	if s2.LockErr != "" || !s2.Hosts[0].Lock.Held || !s2.Hosts[1].Lock.Held {
		t.Errorf("lock error %q, held a %v b %v: want every lock taken", s2.LockErr, s2.Hosts[0].Lock.Held, s2.Hosts[1].Lock.Held)
	}
	if !w.ready("a", "web:v2", 2) {
		t.Errorf("a runs %v, want 2 web:v2", w.engineImages("a"))
	}
}

// Watch mode acts on nothing and takes no lock; switched to auto, the
// fleet takes every lock and rolls.
func TestWatchThenAuto(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}), session.ModeWatch).start()
	snap := r.quiet(10 * time.Second)
	if m := w.mutations(); len(m) != 0 {
		t.Fatalf("watch mode changed something: %+v", m)
	}
	if snap.Decision.Phase != PhaseWatching || snap.Hosts[0].Lock.Held || snap.Hosts[1].Session.Lock.Held {
		t.Errorf("phase %s, locks held %v %v: want watching, no lock", PhaseName(snap.Decision.Phase), snap.Hosts[0].Lock.Held, snap.Hosts[1].Session.Lock.Held)
	}
	r.f.Do(SetMode{Mode: session.ModeAuto})
	snap = r.drive("the rollout to finish", doneAll)
	if !w.ready("a", "web:v2", 2) || !w.ready("b", "web:v2", 2) {
		t.Errorf("a runs %v, b %v: want web:v2", w.engineImages("a"), w.engineImages("b"))
	}
	r.f.Do(SetMode{Mode: session.ModeWatch})
	snap = r.drive("the locks let go", func(s Snapshot) bool { return !s.Hosts[0].Lock.Held && !s.Hosts[1].Lock.Held })
	if snap.Mode != session.ModeWatch {
		t.Errorf("mode %s, want watch", snap.Mode)
	}
}

// rollback_all: a host that fails sends every rolled host back to the
// desired state it ran before this rollout; the hosts of later waves are
// never touched.
func TestRollbackAll(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	// web:v2 never turns healthy on b.
	w.engines["b"].fake.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Hour})
	r := w.fleet(fleetYAML("web:v1", 2, abc, "batch: 1", "on_failure: rollback_all"), session.ModeAuto)
	path := r.withJournal()
	r.start()
	r.drive("converged on v1", doneAll)

	r.src.Set(fleetYAML("web:v2", 2, abc, "batch: 1", "on_failure: rollback_all"))
	r.drive("a on v2", func(s Snapshot) bool { return w.ready("a", "web:v2", 2) })
	snap := r.drive("the rollback to end", func(s Snapshot) bool {
		return s.Decision.Phase == PhaseRollingBack && strings.Contains(s.Blocked, "rolled back")
	})
	for _, h := range abc {
		if !w.ready(h, "web:v1", 2) {
			t.Errorf("%s runs %v, want 2 web:v1, healthy", h, w.engineImages(h))
		}
	}
	if slices.Contains(w.mutated(), "c") {
		t.Errorf("c, of a later wave, was changed: %+v", w.mutations())
	}
	if !snap.Hosts[0].RolledBack || !snap.Hosts[1].RolledBack || snap.Hosts[2].RolledBack {
		t.Errorf("rolled back: a %v b %v c %v, want a and b", snap.Hosts[0].RolledBack, snap.Hosts[1].RolledBack, snap.Hosts[2].RolledBack)
	}
	entries, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"a", "b"} {
		if !slices.ContainsFunc(entries, func(e journal.Entry) bool {
			return e.Action == lineRollback && e.Host == h && e.Rollout == snap.RolloutID
		}) {
			t.Errorf("no journal line of rollout %s says %s rolls back", snap.RolloutID, h)
		}
	}
}

// rollback_all with no earlier converged desired state to return to (the
// fleet began on the new one): the host holds, and says so.
func TestRollbackAllWithoutEarlierStateHolds(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.seed("web:v1", 2)
	w.engines["b"].fake.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Hour})
	r := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}, "on_failure: rollback_all"), session.ModeAuto).start()
	snap := r.drive("the rollback to end", func(s Snapshot) bool { return strings.Contains(s.Blocked, "rolled back") })
	if !hasNote(snap, "no earlier converged desired state") {
		t.Errorf("no note says there is nothing to return to:\n%s", describe(snap))
	}
	if !w.ready("a", "web:v2", 2) {
		t.Errorf("a runs %v: with nothing to return to it holds where it is", w.engineImages("a"))
	}
}

// rollback_all in a process that never saw the hosts converged (apply
// starts cold): each rolled host's changed workloads are pinned to their
// revision before the rollout, kept in the state directory by the run
// that converged them, and roll back to it.
func TestRollbackAllColdPinsTheRevisionBefore(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.seed("web:v1", 2)
	w.engines["b"].fake.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Hour})
	state := t.TempDir()
	first := w.fleet(fleetYAML("web:v1", 2, []string{"a", "b"}, "on_failure: rollback_all"), session.ModeAuto)
	first.opts.StateDir = state
	first.start()
	first.drive("converged on v1, its revisions kept", doneAll)
	first.quiet(time.Second) // the revisions' writes land beside the loop
	first.stop()

	r := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}, "on_failure: rollback_all"), session.ModeAuto)
	r.opts.StateDir = state
	r.start()
	r.drive("a on v2", func(s Snapshot) bool { return w.ready("a", "web:v2", 2) })
	snap := r.drive("a back on v1", func(s Snapshot) bool {
		return s.Decision.Phase == PhaseRollingBack && w.ready("a", "web:v1", 2)
	})
	if !hasNote(snap, "pins web to the revision before this rollout") {
		t.Errorf("no note says a's web is pinned back:\n%s", describe(snap))
	}
}

// Two hosts that reach one engine are an error at the second's line in
// the file; it gets no session, and nothing acts.
func TestSameEngineTwice(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.seed("web:v1", 2)
	w.engines["b"] = w.engines["a"] // b's endpoint reaches a's engine
	r := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}), session.ModeAuto).start()
	snap := r.waitFor("the host error", func(s Snapshot) bool { return len(s.HostErrors) == 1 })
	snap = r.quiet(5 * time.Second)
	e := snap.HostErrors[0]
	if e.Line != 11 || !strings.Contains(e.Msg, "hosts.b") || !strings.Contains(e.Msg, "engine of a") {
		t.Errorf("host error %v: want line 11 (b), naming b and a", e)
	}
	if snap.Hosts[1].Session.Seq != 0 {
		t.Errorf("b got a session")
	}
	if m := w.mutations(); len(m) != 0 {
		t.Errorf("two hosts on one engine let the rollout act: %+v", m)
	}
}

// failingLines is a journal's disk that refuses the fleet's own lines
// and takes the sessions'.
type failingLines struct{}

func (failingLines) Write(p []byte) (int, error) {
	if strings.Contains(string(p), `"action":"fleet-`) {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// No audit, no action: a line of the fleet's own that cannot be written
// halts the fleet, and no host's gate opens.
func TestJournalFailureHaltsFleet(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, abc), session.ModeAuto)
	r.opts.Journal = journal.NewWriter(failingLines{})
	r.start()
	r.drive("the halt", func(s Snapshot) bool { return s.Halted != "" })
	snap := r.quiet(10 * time.Second)
	if m := w.mutations(); len(m) != 0 {
		t.Errorf("the fleet acted without its journal: %+v", m)
	}
	if !strings.Contains(snap.Blocked, "halted") || snap.Hosts[0].Gate == "" {
		t.Errorf("blocked %q, canary gate %q: want halted, the gate closed", snap.Blocked, snap.Hosts[0].Gate)
	}
}

// fleet.wait is the soak between waves: the next wave's first change
// comes no sooner than that after the wave before last changed anything.
func TestSoakBetweenWaves(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.seed("web:v1", 2)
	r := w.fleet(fleetYAML("web:v2", 2, []string{"a", "b"}, "wait: 30s"), session.ModeAuto).start()
	snap := r.drive("the soak", func(s Snapshot) bool {
		return len(s.Decision.Waves) == 2 && slices.ContainsFunc(s.Decision.Waves[1].Waits, func(w Wait) bool { return w.Kind == WaitSoak })
	})
	r.drive("the rollout to finish", doneAll)
	var lastA, firstB time.Time
	for _, m := range w.mutations() {
		switch {
		case m.host == "a":
			lastA = m.at
		case m.host == "b" && firstB.IsZero():
			firstB = m.at
		}
	}
	if firstB.Sub(lastA) < 30*time.Second {
		t.Errorf("b's first change %s after a's last: want the 30s soak between (waits %+v)", firstB.Sub(lastA), snap.Decision.Waves[1].Waits)
	}
}
