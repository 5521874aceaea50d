package session

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// revYAML is web on image with 2 replicas, a pre_stop and a drain, so
// every roll drains.
func revYAML(image string) string {
	return desiredYAML(image, 2, "drain: 300ms") + "    pre_stop: [\"/demoapp\", \"-drain\"]\n"
}

// resolvedWeb is web of text as resolved on f.
func resolvedWeb(t *testing.T, f *fake.Engine, text string) *spec.Resolved {
	t.Helper()
	d, err := load.Parse("web.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	w := spec.Resolve(context.Background(), d, f).Workload("web")
	if w.Err != nil {
		t.Fatal(w.Err)
	}
	return w
}

// revHarness is a session in mode with a state directory and a journal on
// the fake engine standing in for a real one, logging to a buffer and
// recording every step it launches.
type revHarness struct {
	*harness
	dir     string
	info    docker.EngineInfo
	journal string
	logged  *syncBuffer

	mu       sync.Mutex
	launched []reconcile.Step
}

func newRevHarness(t *testing.T, f *fake.Engine, clock *fake.ManualClock, text string, mode Mode) *revHarness {
	h := &revHarness{harness: newHarness(t, f, clock, text, mode), dir: t.TempDir(), logged: &syncBuffer{}}
	info, err := notSimulated{f}.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.info = info
	h.opts.StateDir, h.opts.Client = h.dir, notSimulated{f}
	h.opts.Log = slog.New(slog.NewJSONHandler(h.logged, nil))
	h.opts.OnStep = func(s reconcile.Step, _ time.Time) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.launched = append(h.launched, s)
	}
	h.journal = h.withJournal()
	return h
}

// steps are the steps launched so far, and forgets them.
func (h *revHarness) steps() []reconcile.Step {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.launched
	h.launched = nil
	return out
}

// revisions are web's revisions kept on disk.
func (h *revHarness) revisions() []Revision {
	h.t.Helper()
	revs, err := ListRevisions(h.dir, h.info, pfx)
	if err != nil {
		h.t.Fatal(err)
	}
	return revs["web"]
}

// kept waits (moving the clock) until web has n revisions kept, the
// newest of hash, with the desired state reached.
func (h *revHarness) kept(n int, hash string) []Revision {
	h.t.Helper()
	var revs []Revision
	h.drive("the revision kept", func(s Snapshot) bool {
		revs = h.revisions()
		return s.Steady && len(revs) == n && revs[n-1].Hash == hash
	})
	return revs
}

// decisions are the journal's decisions of action.
func (h *revHarness) decisions(action string) []journal.Entry {
	h.t.Helper()
	es, err := journal.Read(h.journal, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []journal.Entry
	for _, e := range es {
		if e.Result == journal.ResultDecision && e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// servingHash reports whether every desired slot of web is served, ready,
// by a container of spec hash.
func servingHash(s Snapshot, hash string, replicas int) bool {
	n := 0
	for _, v := range s.Slots {
		if v.Workload != "web" || v.Desired == nil {
			continue
		}
		if !v.Ready || len(v.Containers) == 0 || v.Containers[0].Labels[docker.SpecLabel(pfx)] != hash {
			return false
		}
		n++
	}
	return n == replicas
}

// runsHash counts the running containers of spec hash.
func runsHash(s Snapshot, hash string) int {
	n := 0
	for _, c := range s.Containers {
		if c.State == docker.StateRunning && c.Labels[docker.SpecLabel(pfx)] == hash {
			n++
		}
	}
	return n
}

// TestRevisionsRecordedAsRollsConverge (§12): in auto, the spec running on
// every slot as the session starts is kept as revision 1, and v2 as
// revision 2 once its roll reached every slot healthy, with its whole
// spec, image ID and when; each is recorded once in the session, not on
// every list.
func TestRevisionsRecordedAsRollsConverge(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v1"))
	v1, v2 := resolvedWeb(t, f, revYAML("web:v1")), resolvedWeb(t, f, revYAML("web:v2"))
	h := newRevHarness(t, f, clock, revYAML("web:v1"), ModeAuto)
	began := time.Now()
	h.start()
	h.kept(1, v1.Hash)

	h.src.Set(revYAML("web:v2"))
	revs := h.kept(2, v2.Hash)
	for i, want := range []*spec.Resolved{v1, v2} {
		r := revs[i]
		if r.Number != i+1 || r.Hash != want.Hash || r.ImageID != want.ImageID || r.Image != want.Image || r.Spec == nil ||
			r.Spec.Image != want.Image || !slices.Equal(r.Spec.PreStop, want.PreStop) || r.Spec.Replicas != 2 || r.At.Before(began.Add(-time.Second)) {
			t.Errorf("revision %d: %+v, want %s (%s) numbered %d with its spec and when", i, r, want.Image, short(want.Hash), i+1)
		}
	}
	// More lists record nothing more.
	h.settle()
	h.settle()
	if n := strings.Count(h.logged.String(), `"msg":"revision kept"`); n != 2 {
		t.Errorf("%d revisions recorded, want 2 (one per spec reached):\n%s", n, h.logged.String())
	}
	if len(h.revisions()) != 2 {
		t.Errorf("revisions %+v, want 2", h.revisions())
	}
}

// TestRevisionNotKeptForASpecNotReached: a spec whose slots are not all
// served by it, healthy, is no revision: a held desired spec (its slots
// run the older one, and the plan has no step) is not recorded; neither
// does a watching session record anything.
func TestRevisionNotKeptForASpecNotReached(t *testing.T) {
	f, clock := newEngine()
	dir, info, hash := heldWeb(t, f, clock)
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1), ModeAuto)
	h.opts.StateDir, h.opts.Client = dir, notSimulated{f}
	h.start()
	h.waitFor("the held plan", func(s Snapshot) bool { return s.Fresh && len(s.Holds["web"]) == 1 })
	h.settle()
	revs, err := ListRevisions(dir, info, pfx)
	if err != nil || len(revs) != 0 {
		t.Errorf("revisions %+v %v with spec %s held on every slot, want none", revs, err, short(hash))
	}

	f2, clock2 := newEngine()
	seed(t, f2, clock2, desiredYAML("web:v1", 1))
	w := newRevHarness(t, f2, clock2, desiredYAML("web:v1", 1), ModeWatch)
	w.start()
	w.waitFor("the steady state", func(s Snapshot) bool { return s.Steady })
	w.settle()
	if revs := w.revisions(); len(revs) != 0 {
		t.Errorf("a watching session kept revisions: %+v", revs)
	}
}

// TestPinRollsBackWithDrains (§12): Pin (u in the console) with no
// revision named pins the one before the desired spec: journaled, it
// rolls v1 back in under the rules of §5 (each v2 container drained:
// pre_stop and drain, as Diff's roll steps carry them), the desired v2 is
// held (never started again), the plan says so and keeps the desired
// state unreached, and the pin ends, journaled, once the desired file
// changes (to v3, which then rolls in).
func TestPinRollsBackWithDrains(t *testing.T) {
	f, clock := newEngine()
	f.AddImage("web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second})
	seed(t, f, clock, revYAML("web:v1"))
	v1, v2, v3 := resolvedWeb(t, f, revYAML("web:v1")), resolvedWeb(t, f, revYAML("web:v2")), resolvedWeb(t, f, revYAML("web:v3"))
	h := newRevHarness(t, f, clock, revYAML("web:v1"), ModeAuto)
	h.start()
	h.kept(1, v1.Hash)
	h.src.Set(revYAML("web:v2"))
	h.kept(2, v2.Hash)
	h.steps()
	f.ResetCalls()
	execsBefore := len(f.Execs())

	h.s.Do(Pin{Workload: "web"})
	snap := h.drive("v1 back on every slot", func(s Snapshot) bool {
		return s.Steady && servingHash(s, v1.Hash, 2) && runsHash(s, v2.Hash) == 0
	})
	if len(snap.Pins) != 1 || !snap.Pins[0].Standing || snap.Pins[0].Revision.Number != 1 || snap.Pins[0].By != "tester" ||
		snap.Pins[0].Against != v2.Hash || snap.Pins[0].Desired != v2.Hash || snap.Pins[0].Err != "" {
		t.Fatalf("pins %+v, want web pinned to revision 1 by tester against v2", snap.Pins)
	}
	if ds := h.decisions("pin"); len(ds) != 1 || ds[0].Workload != "web" || !strings.Contains(ds[0].Reason, "revision 1") || ds[0].User != "tester" {
		t.Errorf("pin decisions %+v, want one for web's revision 1", ds)
	}
	// Every v2 container left through a roll step that drained it.
	var rolls []reconcile.Step
	for _, s := range h.steps() {
		switch s.Action {
		case reconcile.ActStart:
			if s.Create.Image != "web:v1" || s.Create.Labels[docker.SpecLabel(pfx)] != v1.Hash {
				t.Errorf("start %s: image %s spec %s, want web:v1's", s.Target(), s.Create.Image, short(s.Create.Labels[docker.SpecLabel(pfx)]))
			}
		case reconcile.ActRoll, reconcile.ActStop:
			rolls = append(rolls, s)
			if !slices.Equal(s.PreStop, []string{"/demoapp", "-drain"}) || s.Drain != 300*time.Millisecond {
				t.Errorf("%s %s: pre_stop %q drain %s, want the drain Diff gives every roll", s.Action, s.Target(), s.PreStop, s.Drain)
			}
		}
	}
	if len(rolls) != 2 {
		t.Errorf("%d v2 containers rolled, want 2", len(rolls))
	}
	v2Names := []string{reconcile.ContainerName(pfx, "web", 0, v2.Hash), reconcile.ContainerName(pfx, "web", 1, v2.Hash)}
	if e := f.Execs()[execsBefore:]; !slices.Equal(e, []string{v2Names[0] + ": /demoapp -drain", v2Names[1] + ": /demoapp -drain"}) {
		t.Errorf("execs %q, want each v2 container's pre_stop, slot by slot", e)
	}
	// The desired v2 is held: not started, the plan says so, the desired
	// state is not reached.
	h.settle()
	if n := countPrefix(f.Mutations(), "create:"+reconcile.ContainerName(pfx, "web", 0, v2.Hash)); n != 0 || runsHash(h.last, v2.Hash) != 0 {
		t.Errorf("the held v2 was started again: %q", f.Mutations())
	}
	i := slices.IndexFunc(h.last.Plan.Workloads, func(w reconcile.WorkloadPlan) bool { return w.Name == "web" })
	if i < 0 || !slices.Equal(h.last.Plan.Workloads[i].Held, []int{0, 1}) || h.last.Plan.Workloads[i].HeldSpec != v2.Hash ||
		!strings.Contains(strings.Join(h.last.Plan.Workloads[i].Notes, "\n"), "pinned to revision 1") {
		t.Fatalf("the plan does not hold v2 off both slots for the pin:\n%s", describe(h.last))
	}
	// v1, reached again, is the newest revision, under the number the
	// pin showed: a number shown never changes.
	if revs := h.kept(2, v1.Hash); revs[0].Hash != v2.Hash || revs[1].Number != 1 {
		t.Errorf("revisions %+v, want v2 (2) then v1 again (still 1)", revs)
	}

	// The desired file changes: the pin ends, journaled, and v3 rolls in.
	h.src.Set(revYAML("web:v3"))
	h.drive("v3 on every slot", func(s Snapshot) bool { return s.Steady && servingHash(s, v3.Hash, 2) && len(s.Pins) == 0 })
	if ds := h.decisions("unpin"); len(ds) != 1 || !strings.Contains(ds[0].Reason, "the desired spec changed") {
		t.Errorf("unpin decisions %+v, want one: the desired spec changed", ds)
	}
	if pins, err := ListPins(h.dir, h.info, pfx); err != nil || len(pins) != 0 {
		t.Errorf("pins file %+v %v, want the pin gone", pins, err)
	}
	if !hasNote(h.last, "pin of web to revision 1 lifted as the desired spec changed") {
		t.Errorf("no note of the pin's end:\n%s", describe(h.last))
	}
}

// TestPinWithTheImageGone (§12): a pin whose revision's image is no longer
// on the engine is an error on that workload, in the plan as a missing
// image is, and nothing of it is started or stopped.
func TestPinWithTheImageGone(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v2"))
	h := newRevHarness(t, f, clock, revYAML("web:v2"), ModeAuto)
	// Revision 1 ran web:v0, long since removed from the engine.
	d, err := load.Parse("v0.yaml", []byte(revYAML("web:v0")))
	if err != nil {
		t.Fatal(err)
	}
	gone := state.Revision{Workload: "web", Hash: spec.Hash(d.Workloads["web"], "sha256:0000"), Image: "web:v0", ImageID: "sha256:0000",
		At: time.Now(), Spec: d.Workloads["web"]}
	if _, err := state.RecordRevision(state.RevisionsPath(h.dir, h.info, pfx), state.RevisionsLockWait, gone); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.kept(2, resolvedWeb(t, f, revYAML("web:v2")).Hash)
	f.ResetCalls()

	h.s.Do(Pin{Workload: "web"})
	snap := h.waitFor("the pin's error in the plan", func(s Snapshot) bool {
		return s.Fresh && len(s.Pins) == 1 && s.Pins[0].Err != "" && len(s.Plan.Errors()) > 0
	})
	if errs := snap.Plan.Errors(); !strings.Contains(strings.Join(errs, ";"), "image web:v0 (sha256:0000) is gone from the engine") {
		t.Errorf("plan errors %q, want the pinned image named as gone", errs)
	}
	h.settle()
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("a pin whose image is gone started or stopped something: %q", m)
	}
	if running(h.last, "web:v2") != 2 {
		t.Errorf("web:v2 stopped serving:\n%s", describe(h.last))
	}
}

// TestRetryLiftsThePin (§12): a pin set outside the session (`rollcall
// rollback`) is taken in at the next relist and rolled in; Retry lifts
// it, journaled, and the desired spec rolls back in.
func TestRetryLiftsThePin(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v1"))
	v1, v2 := resolvedWeb(t, f, revYAML("web:v1")), resolvedWeb(t, f, revYAML("web:v2"))
	h := newRevHarness(t, f, clock, revYAML("web:v1"), ModeAuto)
	h.start()
	h.kept(1, v1.Hash)
	h.src.Set(revYAML("web:v2"))
	revs := h.kept(2, v2.Hash)

	if _, err := SetPin(h.dir, h.info, pfx, PinRecord{Workload: "web", Revision: revs[0], Against: v2.Hash, By: "night-shift", Since: time.Now()}); err != nil {
		t.Fatal(err)
	}
	snap := h.drive("v1 pinned back", func(s Snapshot) bool { return s.Steady && servingHash(s, v1.Hash, 2) && len(s.Pins) == 1 })
	if !hasNote(snap, "pinned to revision 1") || snap.Pins[0].By != "night-shift" {
		t.Errorf("the pin set outside is not said, or not its author's:\n%s %+v", describe(snap), snap.Pins)
	}

	h.s.Do(Retry{Workload: "web"})
	snap = h.drive("v2 back", func(s Snapshot) bool { return s.Steady && servingHash(s, v2.Hash, 2) && len(s.Pins) == 0 })
	if ds := h.decisions("unpin"); len(ds) != 1 || !strings.Contains(ds[0].Reason, "lifted") || ds[0].User != "tester" {
		t.Errorf("unpin decisions %+v, want the retry's", ds)
	}
	if pins, err := ListPins(h.dir, h.info, pfx); err != nil || len(pins) != 0 {
		t.Errorf("pins file %+v %v after the retry, want none", pins, err)
	}
	if hasNote(snap, "retry web: no spec of it is on hold") {
		t.Errorf("the retry that lifted a pin says there was nothing to lift")
	}
}

// TestPinRefused: watch mode pins nothing; a revision not kept, or the
// desired spec itself, is not pinned.
func TestPinRefused(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v1"))
	h := newRevHarness(t, f, clock, revYAML("web:v1"), ModeAuto)
	h.start()
	revs := h.kept(1, resolvedWeb(t, f, revYAML("web:v1")).Hash)
	h.s.Do(Pin{Workload: "web"})
	h.waitFor("the default refused", func(s Snapshot) bool { return hasNote(s, "no revision of web before the desired spec") })
	h.s.Do(Pin{Workload: "web", Revision: revs[0].Number})
	h.waitFor("the desired spec refused", func(s Snapshot) bool { return hasNote(s, "is the desired spec: nothing to pin") })
	h.s.Do(Pin{Workload: "web", Revision: 7})
	h.waitFor("revision 7 refused", func(s Snapshot) bool { return hasNote(s, "no revision 7 of web is kept (kept: 1)") })
	h.s.Do(SetMode{Mode: ModeWatch})
	h.s.Do(Pin{Workload: "web", Revision: 1})
	h.waitFor("watch refused", func(s Snapshot) bool { return hasNote(s, "read-only: cannot pin a revision") })
	h.settle()
	if len(h.decisions("pin")) != 0 || len(h.last.Pins) != 0 {
		t.Errorf("a refused pin was journaled or set: %+v", h.last.Pins)
	}
}

// TestPinnedRevisionThatFailsIsHeld (§5 rule 9 under a pin): a pinned
// revision whose new container misses its health deadline is rolled back
// by failure_action and put on hold like any new spec; the hold stands
// though it is not the desired spec (the pin rolls it in), so it is not
// started again in a loop.
func TestPinnedRevisionThatFailsIsHeld(t *testing.T) {
	f, clock := newEngine()
	f.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	// A deadline off the harness's 500ms clock steps: at exactly the
	// deadline Diff reads the container crashed, not failed.
	yaml := func(image string) string {
		return strings.Replace(desiredYAML(image, 1, "failure_action: rollback"), "health_deadline: 10s", "health_deadline: 3250ms", 1)
	}
	text := yaml("web:v2")
	seed(t, f, clock, text)
	h := newRevHarness(t, f, clock, text, ModeAuto)
	bad := resolvedWeb(t, f, yaml("web:bad"))
	rev := state.Revision{Workload: "web", Hash: bad.Hash, Image: bad.Image, ImageID: bad.ImageID, At: time.Now(), Spec: bad.Workload}
	if _, err := state.RecordRevision(state.RevisionsPath(h.dir, h.info, pfx), state.RevisionsLockWait, rev); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.kept(2, resolvedWeb(t, f, text).Hash)
	clock.Advance(time.Second) // the pinned container is created after the one it replaces: it is new
	h.s.Do(Pin{Workload: "web"})
	h.drive("the pinned revision rolled back", func(s Snapshot) bool { return slices.Contains(s.Holds["web"], bad.Hash) && s.Fresh })
	created := countPrefix(f.Calls(), "create:")
	for range 5 {
		h.clock.Advance(2 * time.Second)
		h.settle()
	}
	if n := countPrefix(f.Calls(), "create:"); n != created || !slices.Contains(h.last.Holds["web"], bad.Hash) {
		t.Fatalf("the failed pinned revision was started again (%d creates, then %d), holds %v:\n%s", created, n, h.last.Holds, describe(h.last))
	}
	if running(h.last, "web:v2") != 1 {
		t.Errorf("web:v2 stopped serving:\n%s", describe(h.last))
	}
}

// TestPinOfARebuiltTag: a pinned revision whose tag names another image
// now (web:v1 rebuilt) is created from its image ID, so what runs is the
// revision's image, not the tag's; it is kept again under its tag.
func TestPinOfARebuiltTag(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v1"))
	old := resolvedWeb(t, f, revYAML("web:v1"))
	h := newRevHarness(t, f, clock, revYAML("web:v1"), ModeAuto)
	h.start()
	h.kept(1, old.Hash)
	f.AddImage("web:v1", "sha256:1112", fake.Behaviour{ReadyAfter: time.Second}) // rebuilt: an image event
	rebuilt := resolvedWeb(t, f, revYAML("web:v1"))
	h.kept(2, rebuilt.Hash)
	h.steps()

	h.s.Do(Pin{Workload: "web"})
	snap := h.drive("the old image back on every slot", func(s Snapshot) bool { return s.Steady && servingHash(s, old.Hash, 2) })
	for _, c := range snap.Containers {
		if c.State == docker.StateRunning && c.ImageID != "sha256:1111" {
			t.Errorf("%s runs image %s, want the revision's sha256:1111", c.Name, c.ImageID)
		}
	}
	for _, s := range h.steps() {
		if s.Action == reconcile.ActStart && s.Create.Image != "sha256:1111" {
			t.Errorf("start %s from %q, want the revision's image ID (the tag names another image)", s.Target(), s.Create.Image)
		}
	}
	if len(snap.Pins) != 1 || !snap.Pins[0].FromImageID || !strings.Contains(snap.Pins[0].Line(), "created from sha256:1111") {
		t.Errorf("pins %+v, want the pin saying it creates from the image ID", snap.Pins)
	}
	revs := h.kept(2, old.Hash) // kept beside the loop: once written
	if r := revs[1]; r.Number != 1 || r.Image != "web:v1" || r.Spec.Image != "web:v1" {
		t.Errorf("revisions %+v, want the old one kept again (still 1), under its tag", revs)
	}
}
