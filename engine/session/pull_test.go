package session

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// neverPull is a desired state of desiredYAML's with pull: never: an image
// the engine lacks is an error, not a pull.
func neverPull(desired string) string {
	return strings.Replace(desired, "    replicas:", "    pull: never\n    replicas:", 1)
}

const pullKeyV3 = "pull/web/-1/reg/web:v3"

// onImage: every container of the snapshot runs ref, n of them, and the
// plan is done.
func onImage(ref string, n int) func(Snapshot) bool {
	return func(s Snapshot) bool {
		if !s.Steady || len(s.Containers) != n {
			return false
		}
		for _, c := range s.Containers {
			if c.Image != ref || c.State != docker.StateRunning {
				return false
			}
		}
		return true
	}
}

// eventLog keeps a session's events (Options.Events), for a test to read.
type eventLog struct {
	mu sync.Mutex
	es []Fact
}

func (l *eventLog) add(e Fact) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.es = append(l.es, e)
}

func (l *eventLog) of(kind FactKind) []Fact {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Fact
	for _, e := range l.es {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// firstIndex is the index of the first call with prefix, -1 if none.
func firstIndex(calls []string, prefix string) int {
	return slices.IndexFunc(calls, func(c string) bool { return strings.HasPrefix(c, prefix) })
}

// The image of a new desired state is only in the registry: the session
// pulls it (beside the loop, its progress in the running step and in
// events, journaled) before it starts or stops anything, then rolls.
func TestSessionPullsBeforeItRolls(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 4)
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 2), ModeAuto)
	var events eventLog
	h.opts.Facts = events.add
	path := h.withJournal()
	h.start()
	h.drive("the roll to reg/web:v3", onImage("reg/web:v3", 2))

	m := f.Mutations()
	pull := firstIndex(m, "pull:reg/web:v3")
	if pull != 0 || m[pull] != "pull:reg/web:v3" {
		t.Fatalf("mutations %q: want the pull first", m)
	}
	if n := len(slices.DeleteFunc(slices.Clone(m), func(c string) bool { return !strings.HasPrefix(c, "pull:") })); n != 1 {
		t.Fatalf("mutations %q: want one pull", m)
	}
	progress := events.of(FactPulling)
	if len(progress) == 0 {
		t.Fatal("no pulling event")
	}
	last := progress[len(progress)-1].Pull
	if last.Step.Key() != pullKeyV3 || last.Layers != 4 || last.LayersDone != 4 || last.BytesDone != 4<<20 {
		t.Fatalf("last progress %+v, want 4 of 4 layers", last)
	}
	var lines []string
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if e.Action == string(reconcile.ActPull) {
			lines = append(lines, e.Container+" "+e.Result)
		}
	}
	if want := []string{"reg/web:v3 started", "reg/web:v3 ok"}; !slices.Equal(lines, want) {
		t.Fatalf("journal's pull lines %q, want %q", lines, want)
	}
}

// A pull that fails is a typed failure, retried with backoff, and touches
// nothing that serves: the old containers run on, untouched, until a pull
// succeeds.
func TestSessionPullFailureTouchesNothing(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 2)
	f.FailPulls("reg/web:v3", &docker.PullError{Kind: docker.PullUnauthorized, Status: 401, Detail: "no basic auth credentials"})
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 2), ModeAuto)
	h.start()
	snap := h.waitFor("the pull failed", func(s Snapshot) bool {
		st := s.Steps[pullKeyV3]
		return st.State == StepFailed && !st.RetryAt.IsZero()
	})
	i := slices.IndexFunc(snap.Recent, func(r StepResult) bool { return r.Step.Key() == pullKeyV3 })
	if i < 0 || snap.Recent[i].PullKind != docker.PullUnauthorized || !strings.Contains(snap.Recent[i].Err, "no basic auth credentials") {
		t.Fatalf("recent %+v: want the pull, unauthorized, with the registry's words", snap.Recent)
	}
	if !hasNote(snap, "pull web/- failed") {
		t.Errorf("no note of the failed pull:\n%s", describe(snap))
	}
	for _, c := range f.Mutations() {
		if !strings.HasPrefix(c, "pull:reg/web:v3!fail") {
			t.Fatalf("a failed pull touched something: %q", f.Mutations())
		}
	}
	for _, c := range snap.Containers {
		if c.Image != "web:v1" || c.State != docker.StateRunning {
			t.Fatalf("container %s: %s %s", c.Name, c.Image, c.State)
		}
	}
	f.FailPulls("reg/web:v3", nil)
	h.drive("the roll once the pull is retried", onImage("reg/web:v3", 2))
}

// A pull in flight whose image the desired state no longer runs is
// cancelled, journaled as such, and not retried; the new image is pulled
// and rolled to.
func TestSessionCancelsAPullNoLongerNeeded(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 4)
	f.Serve("reg/web:v4", "sha256:4444", fake.Behaviour{ReadyAfter: time.Second}, 4)
	release := f.HoldPulls("reg/web:v3")
	defer release()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 2), ModeAuto)
	path := h.withJournal()
	h.start()
	h.waitFor("the pull halfway", func(s Snapshot) bool {
		return slices.ContainsFunc(s.RunningSteps, func(r StepRun) bool {
			return r.Step.Key() == pullKeyV3 && r.Pull != nil && r.Pull.LayersDone == 2
		})
	})
	h.src.Set(desiredYAML("reg/web:v4", 2))
	snap := h.drive("the roll to reg/web:v4", onImage("reg/web:v4", 2))
	if _, err := f.ImageInspect(t.Context(), "reg/web:v3"); err == nil {
		t.Error("the cancelled pull left its image")
	}
	if !hasNote(snap, "no longer needs") {
		t.Errorf("no note of the cancelled pull:\n%s", describe(snap))
	}
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var v3 []string
	for _, e := range es {
		if e.Action == string(reconcile.ActPull) && e.Container == "reg/web:v3" {
			v3 = append(v3, e.Result+": "+e.Error)
		}
	}
	if len(v3) != 2 || !strings.HasPrefix(v3[1], journal.ResultInterrupted+": ") || !strings.Contains(v3[1], "no longer needs this image") {
		t.Fatalf("journal's reg/web:v3 pull lines %q: want started, then interrupted as no longer needed", v3)
	}
	if n := len(slices.DeleteFunc(f.Mutations(), func(c string) bool { return !strings.HasPrefix(c, "pull:reg/web:v3") })); n != 1 {
		t.Fatalf("the cancelled pull was tried again: %q", f.Mutations())
	}
}

// Watch mode shows the pull in its plan and never pulls: a pull is a
// mutating call.
func TestWatchNeverPulls(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 2)
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 2), ModeWatch)
	h.start()
	h.waitFor("the plan with the pull", func(s Snapshot) bool {
		return s.Fresh && slices.ContainsFunc(s.Plan.Steps(), func(st reconcile.Step) bool { return st.Key() == pullKeyV3 })
	})
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("watch mode called the engine to change it: %q", m)
	}
	if _, err := f.ImageInspect(t.Context(), "reg/web:v3"); err == nil {
		t.Fatal("watch mode pulled")
	}
}

// A session that ends (a signal, q) cancels its pull in flight at once,
// and journals it as interrupted: a pull touches nothing that serves, so
// nothing is waited for.
func TestEndingSessionCancelsItsPull(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 4)
	release := f.HoldPulls("reg/web:v3")
	defer release()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 2), ModeAuto)
	path := h.withJournal()
	h.s = New(h.opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- h.s.Run(ctx) }()
	h.waitFor("the pull halfway", func(s Snapshot) bool {
		return slices.ContainsFunc(s.RunningSteps, func(r StepRun) bool { return r.Step.Key() == pullKeyV3 && r.Pull != nil })
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("Run did not return while its pull was held: the ending session waited for it")
	}
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var why string
	for _, e := range es {
		if e.Action == string(reconcile.ActPull) {
			lines, why = append(lines, e.Result), e.Error
		}
	}
	if want := []string{journal.ResultStarted, journal.ResultInterrupted}; !slices.Equal(lines, want) {
		t.Fatalf("journal's pull lines %q, want %q", lines, want)
	}
	if !strings.Contains(why, "the session ended") {
		t.Fatalf("journal's interrupted pull says %q: want why (the session ended)", why)
	}
	if m := f.Mutations(); len(m) != 1 || m[0] != "pull:reg/web:v3!fail" {
		t.Fatalf("mutations %q, want the cancelled pull alone", m)
	}
}

// pullAlways is a desired state of desiredYAML's with pull: always.
func pullAlways(desired string) string {
	return strings.Replace(desired, "    replicas:", "    pull: always\n    replicas:", 1)
}

// onImageID: n containers run, every one the image id, and the plan is done.
func onImageID(id string, n int) func(Snapshot) bool {
	return func(s Snapshot) bool {
		if !s.Steady || len(s.Containers) != n {
			return false
		}
		for _, c := range s.Containers {
			if c.ImageID != id || c.State != docker.StateRunning {
				return false
			}
		}
		return true
	}
}

// registry_poll: a session whose workload follows a tag (pull: always)
// asks the registry again on its own, so a tag moved in the registry (no
// event on the engine) is pulled and rolled to; a registry that cannot
// answer is said, and asked again later.
func TestRegistryPollFollowsAMovedTag(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 2)
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, pullAlways(desiredYAML("reg/web:v3", 1)), ModeAuto)
	h.opts.RegistryPoll = 20 * time.Millisecond
	h.start()
	h.drive("the roll to v3", onImageID("sha256:3333", 1))

	f.Serve("reg/web:v3", "sha256:4444", fake.Behaviour{ReadyAfter: time.Second}, 2) // the tag moves in the registry
	h.drive("the roll to the moved tag", onImageID("sha256:4444", 1))

	f.FailPulls("reg/web:v3", &docker.PullError{Kind: docker.PullRateLimited, Status: 429, Detail: "toomanyrequests"})
	snap := h.waitFor("the registry's refusal said", func(s Snapshot) bool {
		return hasNote(s, "registry: reg/web:v3: rate limited by the registry; asked again in")
	})
	for _, c := range snap.Containers {
		if c.ImageID != "sha256:4444" || c.State != docker.StateRunning {
			t.Fatalf("a registry that cannot answer moved something: %s", describe(snap))
		}
	}
}

// The registry is asked once per poll, not at every relist: with a pull
// pending (which resolves the images at each relist), a followed tag is
// asked of the registry once until the next poll.
func TestRegistryAskedOncePerPoll(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 1)
	f.Serve("reg/api:v1", "sha256:a111", fake.Behaviour{ReadyAfter: time.Second}, 2)
	if _, err := f.Pull(t.Context(), "reg/web:v3", nil); err != nil {
		t.Fatal(err)
	}
	release := f.HoldPulls("reg/api:v1")
	defer release()
	h := newHarness(t, f, clock, "workloads:\n  web: {image: reg/web:v3, pull: always}\n  api: {image: reg/api:v1}\n", ModeAuto)
	h.opts.RegistryPoll = time.Hour
	h.start()
	h.waitFor("api's pull under way", func(s Snapshot) bool {
		return slices.ContainsFunc(s.RunningSteps, func(r StepRun) bool { return r.Step.Action == reconcile.ActPull })
	})
	for range 5 {
		clock.Advance(time.Millisecond)
		after := clock.Now()
		h.s.Do(Refresh{})
		h.waitFor("a relist", func(s Snapshot) bool { return !s.PlanAt.Before(after) })
	}
	asked := 0
	for _, c := range f.Calls() {
		if c == "distributioninspect:reg/web:v3" {
			asked++
		}
	}
	if asked != 1 {
		t.Fatalf("the registry was asked %d times for reg/web:v3 between two polls, want once: %q", asked, f.Calls())
	}
	// A new desired state asks its tags anew.
	h.src.Set("workloads:\n  web: {image: reg/web:v3, pull: always, replicas: 2}\n  api: {image: reg/api:v1}\n")
	h.waitFor("the new desired state asked of the registry", func(Snapshot) bool {
		n := 0
		for _, c := range f.Calls() {
			if c == "distributioninspect:reg/web:v3" {
				n++
			}
		}
		return n == 2
	})
}

// retry (`t`) sends a failed pull again at once, its backoff forgotten:
// the next failure waits the first backoff again.
func TestRetrySendsAFailedPullAgainNow(t *testing.T) {
	f, clock := newEngine()
	f.Serve("reg/web:v3", "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, 2)
	f.FailPulls("reg/web:v3", &docker.PullError{Kind: docker.PullNotFound, Status: 404, Detail: "manifest unknown"})
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("reg/web:v3", 1), ModeAuto)
	var events eventLog
	h.opts.Facts = events.add
	h.start()
	failed := func(n int) func(Snapshot) bool {
		return func(Snapshot) bool { return len(events.of(FactStepFailed)) >= n }
	}
	h.waitFor("the pull failed", failed(1))
	h.s.Do(Retry{Workload: "web"})
	h.waitFor("the pull tried again", failed(2))
	fs := events.of(FactStepFailed)
	if fs[0].RetryIn != retryMin || fs[1].RetryIn != retryMin {
		t.Fatalf("backoffs %s then %s: want %s twice (the retry forgot the first failure)", fs[0].RetryIn, fs[1].RetryIn, retryMin)
	}
	// The facts reach Options.Facts before the snapshot that has the note
	// is published: wait for it.
	h.waitFor("the retry's note", func(s Snapshot) bool {
		return hasNote(s, "its pull of reg/web:v3 goes again now")
	})
}
