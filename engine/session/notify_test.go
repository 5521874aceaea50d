package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rollcall/rollcall/engine/source/load"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// webhook is a test server for notify:: it keeps every event posted, in
// order, and answers status (200 when 0); with hang, it answers nothing
// until the test ends.
type webhook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []notify.Event
	status int
	hang   chan struct{}
}

func newWebhook(t *testing.T, status int, hang bool) *webhook {
	t.Helper()
	w := &webhook{status: status}
	if hang {
		w.hang = make(chan struct{})
	}
	w.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e notify.Event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("webhook: %v\n%s", err, body)
		}
		w.mu.Lock()
		w.events = append(w.events, e)
		w.mu.Unlock()
		if w.hang != nil {
			select {
			case <-w.hang:
			case <-r.Context().Done():
			}
		}
		if w.status != 0 {
			rw.WriteHeader(w.status)
		}
	}))
	t.Cleanup(w.srv.Close)
	if hang {
		t.Cleanup(func() { close(w.hang) }) // before the server closes
	}
	return w
}

// url is the webhook's URL, with a path standing in for a secret.
func (w *webhook) url() string { return w.srv.URL + "/hooks/s3cret" }

// notifyLine is the desired state's notify: naming w.
func (w *webhook) notifyLine() string { return fmt.Sprintf("notify: [%q]\n", w.url()) }

func (w *webhook) posted() []notify.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// kinds are the kinds posted, in order.
func (w *webhook) kinds() []notify.Kind {
	var out []notify.Kind
	for _, e := range w.posted() {
		out = append(out, e.Kind)
	}
	return out
}

// waitKind waits for an event of kind and returns it.
func (w *webhook) waitKind(t *testing.T, kind notify.Kind) notify.Event {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		for _, e := range w.posted() {
			if e.Kind == kind {
				return e
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %s posted; got %v", kind, w.kinds())
	return notify.Event{}
}

// A rollout on the engine posts its start, with what it changes, and its
// end, with the figures, under one rollout ID.
func TestRolloutPostsItsStartAndEnd(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2)+hook.notifyLine(), ModeAuto)
	jpath := h.withJournal()
	h.start()
	done := h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	ended := hook.waitKind(t, notify.KindRolloutEnded)
	started := hook.waitKind(t, notify.KindRolloutStarted)
	// The rollout's journal lines carry its ID, as its posts do.
	es, err := journal.Read(jpath, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range stepEntries(es) {
		if e.Rollout != started.Rollout {
			t.Errorf("journal line %s %s: rollout %q, want the posts' %q", e.Action, e.Container, e.Rollout, started.Rollout)
		}
	}

	if k := hook.kinds(); k[0] != notify.KindRolloutStarted || k[len(k)-1] != notify.KindRolloutEnded || len(k) != 2 {
		t.Errorf("posted %v, want the rollout's start and end only", k)
	}
	want := []notify.Change{{Workload: "web", FromImages: []string{"web:v1"}, ToImage: "web:v2", Replicas: 2}}
	if !slices.EqualFunc(started.Workloads, want, changeEqual) || !slices.EqualFunc(ended.Workloads, want, changeEqual) {
		t.Errorf("workloads: started %+v, ended %+v; want %+v", started.Workloads, ended.Workloads, want)
	}
	if started.Rollout == "" || started.Rollout != ended.Rollout {
		t.Errorf("rollout IDs %q and %q, want one, not empty", started.Rollout, ended.Rollout)
	}
	if started.SchemaVersion != notify.SchemaVersion || started.User != "tester" || started.Prefix != pfx || started.Engine == "" {
		t.Errorf("started %+v: want who and where", started)
	}
	if started.Counts.Steps == 0 || started.Counts.Total != 2 {
		t.Errorf("started counts %+v, want the steps planned and 2 slots", started.Counts)
	}
	steps := 0
	for _, r := range done.Recent {
		if r.Err == "" {
			steps++
		}
	}
	if ended.Outcome != notify.OutcomeConverged || ended.Counts != (notify.Counts{Steps: steps, Ready: 2, Total: 2}) {
		t.Errorf("ended %+v %+v, want converged after %d steps, 2/2 ready", ended.Outcome, ended.Counts, steps)
	}
}

func changeEqual(a, b notify.Change) bool {
	return a.Workload == b.Workload && slices.Equal(a.FromImages, b.FromImages) && a.ToImage == b.ToImage && a.Replicas == b.Replicas
}

// A desired state already reached is no rollout: nothing is posted until a
// desired change rolls.
func TestReachedStateIsNoRollout(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1)+hook.notifyLine(), ModeAuto)
	h.start()
	h.waitFor("steady", func(s Snapshot) bool { return s.Steady })
	h.settle()
	if k := hook.kinds(); len(k) != 0 {
		t.Fatalf("posted %v with nothing to do", k)
	}
	h.src.Set(desiredYAML("web:v2", 1) + hook.notifyLine())
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 1 })
	hook.waitKind(t, notify.KindRolloutEnded)
	if k := hook.kinds(); !slices.Equal(k, []notify.Kind{notify.KindRolloutStarted, notify.KindRolloutEnded}) {
		t.Errorf("posted %v, want the one rollout", k)
	}
}

// The engine going away and coming back is posted, by a session that acts
// only: a console watching beside the agent does not post it a second time.
func TestEngineLostAndBackArePostedByTheActingSession(t *testing.T) {
	for _, mode := range []Mode{ModeAuto, ModeWatch} {
		t.Run(string(mode), func(t *testing.T) {
			hook := newWebhook(t, 0, false)
			f, clock := newEngine()
			seed(t, f, clock, desiredYAML("web:v1", 1))
			h := newHarness(t, f, clock, desiredYAML("web:v1", 1)+hook.notifyLine(), mode).start()
			h.waitFor("a connection", func(s Snapshot) bool { return s.Connected && s.Steady && (mode == ModeWatch || s.Lock.Held) })
			f.FailNext("List", errors.New("connection refused"))
			f.FailNext("Info", errors.New("connection refused"))
			f.BreakEvents(errors.New("unexpected EOF"))
			h.waitFor("the disconnect", func(s Snapshot) bool { return !s.Connected })
			h.waitFor("the reconnect", func(s Snapshot) bool { return s.Connected })
			h.settle()
			if mode == ModeWatch {
				time.Sleep(50 * time.Millisecond) // a post would have come by now
				if k := hook.kinds(); len(k) != 0 {
					t.Errorf("a watching session posted %v", k)
				}
				return
			}
			lost := hook.waitKind(t, notify.KindEngineLost)
			hook.waitKind(t, notify.KindEngineBack)
			if !strings.Contains(lost.Error, "engine disconnected") || lost.Engine == "" {
				t.Errorf("engine_lost %+v, want the engine and why", lost)
			}
			if k := hook.kinds(); !slices.Equal(k, []notify.Kind{notify.KindEngineLost, notify.KindEngineBack}) {
				t.Errorf("posted %v, want one loss and one return", k)
			}
		})
	}
}

// failure_action rollback: the rollout posts the new container's failure,
// its rollback and the hold, and ends held.
func TestRollbackPostsTheFailureTheRollbackAndTheHold(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	f.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	yaml := func(image string) string {
		// A deadline off the harness's 500ms clock steps: at exactly the
		// deadline Diff reads the container crashed, not failed.
		return strings.Replace(desiredYAML(image, 1, "failure_action: rollback"), "health_deadline: 10s", "health_deadline: 3250ms", 1)
	}
	seed(t, f, clock, yaml("web:v1"))
	h := newHarness(t, f, clock, yaml("web:bad")+hook.notifyLine(), ModeAuto)
	h.start()
	h.drive("the rollback", func(s Snapshot) bool { return len(s.RolledBack) == 1 && s.Steady })
	ended := hook.waitKind(t, notify.KindRolloutEnded)
	rb := hook.waitKind(t, notify.KindRollback)
	hold := hook.waitKind(t, notify.KindHold)
	failed := hook.waitKind(t, notify.KindHealthFailed)
	spec := h.last.RolledBack[0].Hash
	if rb.Workload != "web" || rb.Slot != 0 || rb.Spec != spec || rb.ToImage != "web:bad" || rb.FromImage != "web:v1" || rb.Operator {
		t.Errorf("rollback %+v", rb)
	}
	if hold.Spec != spec || hold.Workload != "web" {
		t.Errorf("hold %+v, want spec %s", hold, spec)
	}
	if failed.Action != "rollback" || failed.Container != h.last.RolledBack[0].Container || failed.Reason == "" {
		t.Errorf("health_failed %+v", failed)
	}
	// The health failure is a fact of the session's record, once, typed:
	// what health_failed is posted from.
	var health []Fact
	for _, x := range h.last.Facts {
		if x.Kind == FactHealthFailed {
			health = append(health, x)
		}
	}
	if len(health) != 1 || health[0].Failure.Action != "rollback" || health[0].Failure.Container != failed.Container {
		t.Errorf("health facts %+v, want the one failure, with its failure_action", health)
	}
	if ended.Outcome != notify.OutcomeHeld || ended.Counts.Held != 1 || ended.Rollout != rb.Rollout {
		t.Errorf("ended %+v, want held with 1 slot held, in the rollout of the rollback", ended)
	}
	if k := hook.kinds(); k[0] != notify.KindRolloutStarted || k[len(k)-1] != notify.KindRolloutEnded {
		t.Errorf("posted %v: want the rollout's start first and its end last", k)
	}
}

// A post that fails is journaled (and noted); the roll goes on.
func TestFailedPostIsJournaled(t *testing.T) {
	hook := newWebhook(t, http.StatusInternalServerError, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1)+hook.notifyLine(), ModeAuto)
	h.opts.Notify = notify.Options{Tries: 2, Backoff: time.Millisecond}
	path := h.withJournal()
	h.start()
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 1 })
	h.waitFor("the failures noted", func(s Snapshot) bool { return hasNote(s, "notification rollout_ended") })
	h.settle()
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var lines []journal.Entry
	for _, e := range es {
		if e.Action == "notify-failed" {
			lines = append(lines, e)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("journal has %d notify-failed lines, want the start's and the end's:\n%+v", len(lines), es)
	}
	for _, e := range lines {
		if e.Result != journal.ResultDecision || !strings.Contains(e.Error, "500") || !strings.Contains(e.Reason, "(2 tries)") {
			t.Errorf("line %+v, want a decision with the answer and the tries", e)
		}
		if strings.Contains(e.Reason+e.Error, "s3cret") {
			t.Errorf("line %+v shows the URL's path", e)
		}
	}
	if n := len(hook.posted()); n != 4 {
		t.Errorf("%d posts, want 2 events × 2 tries", n)
	}
}

// A webhook that hangs delays no step: the roll ends long before one
// post's bound.
func TestHangingWebhookDelaysNoStep(t *testing.T) {
	hook := newWebhook(t, 0, true)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2)+hook.notifyLine(), ModeAuto)
	const bound = 3 * time.Second // the session's end waits up to one bound
	h.opts.Notify = notify.Options{Timeout: bound}
	began := time.Now()
	h.start()
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 2 })
	if took := time.Since(began); took >= bound {
		t.Errorf("the roll took %s while the webhook hung: the posts held it up", took)
	}
	hook.waitKind(t, notify.KindRolloutStarted) // it was posted, and hangs
}

// The holds kept from before the session are no news: nothing is posted
// for them. A retry that lifts one and rolls the spec is a rollout.
func TestHoldsFromBeforeAreNotPostedAndARetryRolls(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	dir, _, _ := heldWeb(t, f, clock)
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1)+hook.notifyLine(), ModeAuto)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.start()
	h.waitFor("the held state", func(s Snapshot) bool { return s.Steady && len(s.Holds["web"]) == 1 })
	h.settle()
	time.Sleep(50 * time.Millisecond) // a post would have come by now
	if k := hook.kinds(); len(k) != 0 {
		t.Fatalf("posted %v for a hold kept from before", k)
	}
	h.s.Do(Retry{Workload: "web"})
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && len(s.Holds) == 0 && running(s, "web:v2") == 1 })
	ended := hook.waitKind(t, notify.KindRolloutEnded)
	if k := hook.kinds(); !slices.Equal(k, []notify.Kind{notify.KindRolloutStarted, notify.KindRolloutEnded}) || ended.Outcome != notify.OutcomeConverged {
		t.Errorf("posted %v (%s), want the retry's rollout, converged", k, ended.Outcome)
	}
}

// TestPinPostsThePinAndItsRollout (§12: "a rollout's start, end, failure,
// rollback, hold and pin are posted"): a pin posts a pin event (the held
// desired spec, from the image that runs to the pinned one, the
// operator's act), and the roll back to the pinned revision is a rollout
// of its own, posted as it starts and ends.
func TestPinPostsThePinAndItsRollout(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, revYAML("web:v1"))
	v1, v2 := resolvedWeb(t, f, revYAML("web:v1")), resolvedWeb(t, f, revYAML("web:v2"))
	h := newRevHarness(t, f, clock, revYAML("web:v1")+hook.notifyLine(), ModeAuto)
	h.start()
	h.kept(1, v1.Hash)
	h.src.Set(revYAML("web:v2") + hook.notifyLine())
	h.kept(2, v2.Hash)
	h.waitFor("v2 steady", func(s Snapshot) bool { return s.Steady && servingHash(s, v2.Hash, 2) })
	hook.waitKind(t, notify.KindRolloutEnded)
	before := len(hook.posted())

	h.s.Do(Pin{Workload: "web"})
	h.drive("v1 back on every slot", func(s Snapshot) bool {
		return s.Steady && servingHash(s, v1.Hash, 2) && runsHash(s, v2.Hash) == 0
	})
	deadline := time.Now().Add(waitLimit)
	var after []notify.Event
	for time.Now().Before(deadline) {
		after = hook.posted()[before:]
		if len(after) >= 3 && after[len(after)-1].Kind == notify.KindRolloutEnded {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	var kinds []notify.Kind
	var pin, started, ended *notify.Event
	for i := range after {
		kinds = append(kinds, after[i].Kind)
		switch after[i].Kind {
		case notify.KindPin:
			pin = &after[i]
		case notify.KindRolloutStarted:
			started = &after[i]
		case notify.KindRolloutEnded:
			ended = &after[i]
		}
	}
	if pin == nil || started == nil || ended == nil {
		t.Fatalf("after the pin posted %v, want pin, rollout_started and rollout_ended", kinds)
	}
	if pin.Workload != "web" || pin.Spec != v2.Hash || pin.ToImage != "web:v1" || pin.FromImage != "web:v2" || !pin.Operator ||
		!strings.Contains(pin.Reason, "revision 1") || !strings.Contains(pin.Reason, "by tester") {
		t.Errorf("pin event %+v, want web pinned to revision 1 (web:v2 → web:v1) by tester, v2 held", *pin)
	}
	if started.Rollout == "" || started.Rollout != ended.Rollout {
		t.Errorf("the pin's rollout IDs: started %q, ended %q", started.Rollout, ended.Rollout)
	}
	if kinds[0] != notify.KindPin {
		t.Errorf("posted %v, want the pin first, then the rollout it sets off", kinds)
	}
	want := []notify.Change{{Workload: "web", FromImages: []string{"web:v2"}, ToImage: "web:v1", Replicas: 2}}
	if !slices.EqualFunc(started.Workloads, want, changeEqual) || !slices.EqualFunc(ended.Workloads, want, changeEqual) {
		t.Errorf("the pin's rollout changes: started %+v, ended %+v; want %+v (to the pinned image)", started.Workloads, ended.Workloads, want)
	}
	if ended.Counts.Steps == 0 {
		t.Errorf("rollout_ended of the pin ran no steps: %+v", ended.Counts)
	}
	// Steady on the pinned revision, more turns post nothing more.
	n := len(hook.posted())
	h.settle()
	if got := hook.posted(); len(got) != n {
		t.Errorf("posted again once steady: %v", hook.kinds()[n:])
	}
}

// What the notifier drops or fails as the session ends (its Close) is
// journaled before Run returns, so a caller that closes the journal right
// after Run (as the commands do) loses none of it (DESIGN §12: failed
// notifications are journaled).
func TestNoticesAtTheEndAreJournaled(t *testing.T) {
	const hooks = 8 // 16 lines at the end: a race with the journal's close is lost often
	var urls []string
	var first *webhook
	for i := range hooks {
		hook := newWebhook(t, 0, true)
		if i == 0 {
			first = hook
		}
		urls = append(urls, fmt.Sprintf("%q", hook.url()))
	}
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	notifyLine := "notify: [" + strings.Join(urls, ", ") + "]\n"
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1)+notifyLine, ModeAuto)
	h.opts.Notify = notify.Options{Timeout: 200 * time.Millisecond, Tries: 1}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h.opts.Journal = j
	h.s = New(h.opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.s.Run(ctx) }()
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 1 })
	first.waitKind(t, notify.KindRolloutStarted) // posted, and hangs
	cancel()
	for range h.s.Snapshots() { // until Run closes them
	}
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	j.Close() // as the commands do once Run returned
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{} // by kind and URL
	for _, e := range es {
		if e.Action == "notify-dropped" || e.Action == "notify-failed" {
			f := strings.Fields(e.Reason)
			lines[f[0]+" "+f[2]]++
		}
	}
	for _, u := range urls {
		host := strings.TrimSuffix(strings.Trim(u, `"`), "/hooks/s3cret") + "/…"
		for _, k := range []notify.Kind{notify.KindRolloutStarted, notify.KindRolloutEnded} {
			if n := lines[string(k)+" "+host]; n != 1 {
				t.Errorf("%s to %s was not delivered; %d lines in the journal say so, want 1", k, host, n)
			}
		}
	}
}

// standingLog is an Observer that keeps the standings it is told.
type standingLog struct {
	noticeLog
	smu sync.Mutex
	st  []Standing
}

func (o *standingLog) Standing(s Standing) {
	o.smu.Lock()
	defer o.smu.Unlock()
	o.st = append(o.st, s)
}

func (o *standingLog) kinds() []StandingKind {
	o.smu.Lock()
	defer o.smu.Unlock()
	var out []StandingKind
	for _, s := range o.st {
		out = append(out, s.Kind)
	}
	return out
}

// Options.Observer is told the standing each time its kind changes, from
// the first snapshot on, and not again while it stays: a roll is starting,
// rolling, then converged, each once (the agent's rollcall_standing).
func TestObserverIsToldTheStandingAsItsKindChanges(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2), ModeAuto)
	seen := &standingLog{}
	h.opts.Observer = seen
	h.start()
	last := h.drive("web on v2", func(s Snapshot) bool {
		return s.Standing.Kind == StandingConverged && running(s, "web:v2") == 2 && running(s, "web:v1") == 0
	})
	h.settle()
	got := seen.kinds()
	if len(got) == 0 || got[0] != StandingStarting || got[len(got)-1] != StandingConverged || !slices.Contains(got, StandingRolling) {
		t.Fatalf("told %v, want starting first, rolling, and converged last", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i] == got[i-1] {
			t.Errorf("told %v: %s twice in a row", got, got[i])
		}
	}
	if last.Standing.Kind != got[len(got)-1] {
		t.Errorf("the last snapshot stands %s, the observer was last told %s", last.Standing.Kind, got[len(got)-1])
	}
}

// A hold another process put (the holds file, while the session runs) is
// posted with its typed cause's words, not as the operator's rollback:
// nobody rolled back in this session.
func TestHoldPutElsewhereIsPostedWithItsCause(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	info, err := notSimulated{f}.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d, err := load.Parse("v1.yaml", []byte(desiredYAML("web:v1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	hash := spec.Resolve(context.Background(), d, f).Workload("web").Hash // the desired spec's: a hold of another is stale
	dir := t.TempDir()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1)+hook.notifyLine(), ModeAuto)
	h.opts.StateDir = dir
	h.opts.Client = notSimulated{f}
	h.start()
	h.waitFor("steady, holding the lock", func(s Snapshot) bool { return s.Steady && s.Lock.Held })
	h.settle()
	recs := state.Holds{}
	recs.Add(Hold{Workload: "web", Hash: hash, By: "night-shift", Reason: "rolled back elsewhere"})
	if err := state.WriteHoldsFile(state.HoldsPath(dir, info, pfx), recs); err != nil {
		t.Fatal(err)
	}
	h.s.Do(Refresh{})
	h.waitFor("the hold read", func(s Snapshot) bool { return len(s.Holds["web"]) == 1 })
	hold := hook.waitKind(t, notify.KindHold)
	if hold.Workload != "web" || hold.Spec != hash || hold.Reason != (state.Hold{Reason: "rolled back elsewhere"}).Why() || hold.Operator {
		t.Errorf("hold %+v, want web's spec, put by another rollcall", hold)
	}
	h.settle()
	if k := hook.kinds(); !slices.Equal(k, []notify.Kind{notify.KindHold}) {
		t.Errorf("posted %v, want the hold alone (no rollback: none ran here)", k)
	}
}

// A step that fails, and fails again on auto's retry, is posted once
// (step_failed at its first failure); the rollout's end counts both.
func TestStepFailedIsPostedOncePerRunOfFailures(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1)+hook.notifyLine(), ModeAuto)
	f.FailNext("Create", errors.New("no space left on device"))
	f.FailNext("Create", errors.New("no space left on device"))
	h.start()
	h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 1 })
	ended := hook.waitKind(t, notify.KindRolloutEnded)
	var failed []notify.Event
	for _, e := range hook.posted() {
		if e.Kind == notify.KindStepFailed {
			failed = append(failed, e)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0].Error, "no space left") || failed[0].Workload != "web" || failed[0].Rollout != ended.Rollout {
		t.Errorf("step_failed posted %+v, want one, in the rollout, at the first failure", failed)
	}
	if ended.Counts.Failed != 2 || ended.Outcome != notify.OutcomeConverged {
		t.Errorf("ended %s %+v, want converged with the 2 failures counted", ended.Outcome, ended.Counts)
	}
}

// A new container that missed its health deadline is one fact and one
// health_failed post while it stays failed, however many plans list it
// (failure_action pause: it stays, the session pauses).
func TestHealthFailedOnceWhileItStaysFailed(t *testing.T) {
	hook := newWebhook(t, 0, false)
	h := failurePaused(t, hook)
	for range 3 { // more plans that list the failure
		h.s.Do(Refresh{})
		h.settle()
	}
	hook.waitKind(t, notify.KindHealthFailed)
	var facts []Fact
	for _, x := range h.last.Facts {
		if x.Kind == FactHealthFailed {
			facts = append(facts, x)
		}
	}
	posts := 0
	for _, e := range hook.posted() {
		if e.Kind == notify.KindHealthFailed {
			posts++
		}
	}
	if len(facts) != 1 || facts[0].Failure.Action != "pause" || posts != 1 {
		t.Errorf("health facts %+v and %d health_failed posts, want one of each, failure_action pause", facts, posts)
	}
	if len(h.last.Plan.Failures()) != 1 {
		t.Errorf("the plan lists %d failures, want the one still failed", len(h.last.Plan.Failures()))
	}
}

// The rollout's end is read off the standing: converged, failed and held
// end it; an operator's pause, a wait for approval or a question, a roll
// under way, a blocked session and a standing not decided afresh do not.
func TestRolloutEndsOnTheStandingNotOnAPause(t *testing.T) {
	cause := func(k CauseKind) []Cause { return []Cause{{Kind: k, Pause: &PauseInfo{}}} }
	for _, c := range []struct {
		name string
		st   Standing
		want notify.Outcome // "": the rollout goes on
	}{
		{"converged", Standing{Kind: StandingConverged}, notify.OutcomeConverged},
		{"failure pause", Standing{Kind: StandingFailed, Causes: cause(CauseFailurePause)}, notify.OutcomeFailed},
		{"cannot converge", Standing{Kind: StandingFailed, Causes: cause(CauseCannotConverge)}, notify.OutcomeFailed},
		{"a spec on hold", Standing{Kind: StandingHeld, Causes: cause(CauseHold)}, notify.OutcomeHeld},
		{"a canary that holds", Standing{Kind: StandingHeld, Causes: cause(CauseCanaryHeld)}, notify.OutcomeHeld},
		{"the operator's pause", Standing{Kind: StandingHeld, Causes: cause(CauseOperatorPause)}, ""},
		{"awaiting approval", Standing{Kind: StandingAwaitingApproval, Causes: cause(CauseApproval)}, ""},
		{"a question", Standing{Kind: StandingAwaitingApproval, Causes: cause(CauseConfirm)}, ""},
		{"rolling", Standing{Kind: StandingRolling}, ""},
		{"blocked on the engine", Standing{Kind: StandingBlocked, Causes: cause(CauseEngine)}, ""},
		{"converged, not decided afresh", Standing{Kind: StandingConverged, Pending: true}, ""},
	} {
		got, ends := rolloutEnd(c.st)
		if ends != (c.want != "") || got != c.want {
			t.Errorf("%s: ends %v with %q, want %q", c.name, ends, got, c.want)
		}
	}
}

// An operator who pauses while the roll's last step runs has not ended
// the rollout, though nothing is left to do: it ends, converged, once
// they resume. A failure pause ends it, failed.
func TestRolloutEndPassesOverAnOperatorsPause(t *testing.T) {
	hook := newWebhook(t, 0, false)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 1)+hook.notifyLine(), ModeAuto)
	var paused sync.Once
	h.opts.OnStep = func(s reconcile.Step, _ time.Time) {
		if s.Action == reconcile.ActStop || s.Action == reconcile.ActRoll { // the roll's last step: the old container goes
			paused.Do(func() { h.s.Do(Pause{}) })
		}
	}
	h.start()
	h.drive("nothing left, paused", func(s Snapshot) bool {
		return s.Pause != nil && s.Steady && running(s, "web:v2") == 1 && running(s, "web:v1") == 0
	})
	h.settle()
	if k := hook.kinds(); slices.Contains(k, notify.KindRolloutEnded) {
		t.Fatalf("posted %v while the operator's pause stands: the rollout ended on the pause", k)
	}
	h.s.Do(Resume{})
	ended := hook.waitKind(t, notify.KindRolloutEnded)
	if ended.Outcome != notify.OutcomeConverged {
		t.Errorf("rollout ended %s after the resume, want converged", ended.Outcome)
	}

	hook2 := newWebhook(t, 0, false)
	failurePaused(t, hook2)
	if ended := hook2.waitKind(t, notify.KindRolloutEnded); ended.Outcome != notify.OutcomeFailed {
		t.Errorf("rollout ended %s on failure_action pause, want failed", ended.Outcome)
	}
}

// failurePaused is an auto session posting to hook whose roll to web:bad
// (never healthy, failure_action pause) has paused on its failure.
func failurePaused(t *testing.T, hook *webhook) *harness {
	t.Helper()
	f, clock := newEngine()
	f.AddImage("web:bad", "sha256:bad0", fake.Behaviour{ReadyAfter: time.Second, Unhealthy: true})
	yaml := func(image string) string {
		return strings.Replace(desiredYAML(image, 1, "failure_action: pause"), "health_deadline: 10s", "health_deadline: 3250ms", 1)
	}
	seed(t, f, clock, yaml("web:v1"))
	h := newHarness(t, f, clock, yaml("web:bad")+hook.notifyLine(), ModeAuto)
	h.start()
	h.drive("the failure pause", func(s Snapshot) bool { return s.Pause != nil })
	return h
}
