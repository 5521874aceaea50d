package session

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/rollcall/rollcall/engine/state"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/proxy"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// cohortStandIn is Caddy's admin API as the canary uses it: the split of
// a workload's traffic (PUT/DELETE /rollcall/cohorts/{prefix}/{workload})
// and the cohorts' counters (GET /rollcall/cohorts). Each GET, while a
// split with a share is set, counts traffic: 90 stable requests and 10
// canary ones, canaryErrs of them failed; every answer takes 5 ms, the
// canary's canaryMS.
type cohortStandIn struct {
	*httptest.Server
	f *fake.Engine

	mu         sync.Mutex
	spec       string
	share      float64
	split      bool
	canaryErrs int64
	canaryMS   int
	quiet      bool // no traffic comes
	stable     counters
	canary     counters
	shares     []float64 // every share PUT, in order
	runningAt0 int       // the canary's running containers when the share was set to 0
	deletes    int
	// existed is, for each PUT, how many containers of its spec existed
	// (in any state) as it came.
	existed []int
	// failPut, when set, fails the PUTs it says yes to (503);
	// failDeletes fails that many DELETEs, -1 every one.
	failPut     func(share float64) bool
	failDeletes int
	deleteTries int
	// loseAt loses the split (as a Caddy restarted: no split, counters
	// anew) at the GET of that number; gets counts them.
	loseAt, gets int
	// downAt cuts the admin API at the GET of that number: from then on
	// every call fails.
	downAt int
}

type counters struct {
	requests, errors int64
	buckets          [14]int64
}

// the module's bucket bounds, in ms
var standInBounds = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

func (c *counters) add(n, errs int64, ms int) {
	c.requests += n
	c.errors += errs
	i := len(standInBounds)
	for k, b := range standInBounds {
		if float64(ms) <= b {
			i = k
			break
		}
	}
	c.buckets[i] += n
}

func (c *counters) wire(containers []string) map[string]any {
	return map[string]any{"containers": containers, "requests": c.requests, "errors": c.errors, "dial_failures": 0,
		"latency_ms": map[string]any{"bounds": standInBounds, "counts": c.buckets}, "latency_sum_ms": 0}
}

func newCohortStandIn(t *testing.T, f *fake.Engine) *cohortStandIn {
	c := &cohortStandIn{f: f, canaryMS: 5}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *cohortStandIn) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r.URL.Path == "/rollcall/cohorts" && r.Method == http.MethodGet {
		c.gets++
	}
	if c.downAt > 0 && c.gets >= c.downAt {
		http.Error(w, "admin API cut", http.StatusServiceUnavailable)
		return
	}
	switch {
	case r.URL.Path == "/rollcall/cohorts" && r.Method == http.MethodGet:
		if c.gets == c.loseAt {
			c.split, c.stable, c.canary = false, counters{}, counters{}
		}
		if c.split && c.share > 0 && !c.quiet {
			c.stable.add(90, 0, 5)
			c.canary.add(10, c.canaryErrs, c.canaryMS)
		}
		var split any
		if c.split {
			split = map[string]any{"spec": c.spec, "share": c.share, "since": "2026-05-01T10:00:00Z"}
		}
		json.NewEncoder(w).Encode([]map[string]any{{"prefix": pfx, "workload": "web", "split": split,
			"cohorts": map[string]any{"stable": c.stable.wire([]string{}), "canary": c.canary.wire([]string{})}}})
	case r.URL.Path == "/rollcall/cohorts/"+pfx+"/web" && r.Method == http.MethodPut:
		var body struct {
			Spec  string  `json:"spec"`
			Share float64 `json:"share"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if c.failPut != nil && c.failPut(body.Share) {
			http.Error(w, "admin API cut", http.StatusServiceUnavailable)
			return
		}
		c.existed = append(c.existed, c.existingOf(body.Spec))
		if body.Spec != c.spec || !c.split {
			c.stable, c.canary = counters{}, counters{}
		}
		c.spec, c.share, c.split = body.Spec, body.Share, true
		c.shares = append(c.shares, body.Share)
		if body.Share == 0 {
			c.runningAt0 = c.runningOf(body.Spec)
		}
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/rollcall/cohorts/"+pfx+"/web" && r.Method == http.MethodDelete:
		c.deleteTries++
		if c.failDeletes != 0 {
			c.failDeletes--
			http.Error(w, "admin API cut", http.StatusServiceUnavailable)
			return
		}
		c.split, c.deletes = false, c.deletes+1
		c.stable, c.canary = counters{}, counters{}
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/reverse_proxy/upstreams":
		fmt.Fprint(w, "[]")
	default:
		http.NotFound(w, r)
	}
}

// existingOf counts the containers of spec hash, in any state.
func (c *cohortStandIn) existingOf(hash string) int {
	cs, _ := c.f.List(context.Background(), pfx)
	n := 0
	for _, ct := range cs {
		if ct.Labels[docker.SpecLabel(pfx)] == hash {
			n++
		}
	}
	return n
}

// runningOf counts the running containers of spec hash.
func (c *cohortStandIn) runningOf(hash string) int {
	cs, _ := c.f.List(context.Background(), pfx)
	n := 0
	for _, ct := range cs {
		if ct.State == docker.StateRunning && ct.Labels[docker.SpecLabel(pfx)] == hash {
			n++
		}
	}
	return n
}

func (c *cohortStandIn) set(f func(c *cohortStandIn)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

func (c *cohortStandIn) get(f func(c *cohortStandIn)) { c.set(f) }

// canaryYAML is web on image, 2 slots, behind the stand-in, with a canary
// of the given steps judged every 100ms on its error rate and p95.
func canaryYAML(image, admin, steps string) string {
	return withProxy(desiredYAML(image, 2,
		"canary: {steps: "+steps+", analysis: {interval: 100ms, max_error_rate: 5%, max_p95_ratio: 2, min_requests: 20}}"), admin)
}

// canaryEntries are the journal's lines of canary steps.
func canaryEntries(t *testing.T, path string) []journal.Entry {
	t.Helper()
	es, err := journal.Read(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Entry
	for _, e := range es {
		if e.Action == string(reconcile.ActCanary) && e.Canary != nil {
			out = append(out, e)
		}
	}
	return out
}

// A canary that answers too many errors is caught at its first step: its
// share goes to 0 while it still runs, its spec goes on hold, it is
// stopped, the old containers never stopped, and the journal names the
// error rate beside its threshold.
func TestCanaryFailureZeroesTheShareAndRollsBack(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.canaryErrs = 2 }) // 20%
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}, {share: 50%, for: 2s}]"), ModeAuto)
	path := h.withJournal()
	h.start()
	s := h.drive("the canary rolled back", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
	if n := running(s, "web:v1"); n != 2 {
		t.Errorf("%d web:v1 running after the canary failed, want 2 (nothing old stops)", n)
	}
	c.get(func(c *cohortStandIn) {
		if len(c.shares) < 3 || c.shares[0] != 0 || c.existed[0] != 0 || c.shares[1] != 0.1 || c.shares[len(c.shares)-1] != 0 {
			t.Errorf("shares set %v (containers of the spec at each: %v), want 0 before the canary existed, 10%%, then 0", c.shares, c.existed)
		}
		if c.runningAt0 != 1 {
			t.Errorf("%d canary containers running when the share went to 0, want 1: the share goes to 0 before the canary stops", c.runningAt0)
		}
		for _, sh := range c.shares {
			if sh == 0.5 {
				t.Errorf("the second step's share was set: shares %v", c.shares)
			}
		}
	})
	es := canaryEntries(t, path)
	if len(es) != 1 || es[0].Result != journal.ResultFailed || es[0].Canary.Check != reconcile.CheckErrorRate ||
		es[0].Canary.Measured < 0.05 || es[0].Canary.Limit != 0.05 || es[0].Canary.Canary.Requests < 20 {
		t.Fatalf("journal's canary lines %+v, want one failed on max_error_rate with its figures", es)
	}
	if !hasNote(s, "canary web failed at step 1/2") {
		t.Errorf("no note of the failed canary:\n%s", describe(s))
	}
}

// A good canary passes every step, the split is lifted, and the roll goes
// on to every slot.
func TestCanaryPassesEveryStepThenRolls(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 300ms}, {share: 50%, for: 300ms}]"), ModeAuto)
	path := h.withJournal()
	h.start()
	h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	c.get(func(c *cohortStandIn) {
		if !slices.Equal(c.shares, []float64{0, 0.1, 0.5}) || c.existed[0] != 0 || c.deletes != 1 {
			t.Errorf("shares %v (containers of the spec at each: %v), deletes %d; want 0 before the canary existed, 10%%, 50%%, then the split lifted once",
				c.shares, c.existed, c.deletes)
		}
	})
	es := canaryEntries(t, path)
	if len(es) != 2 || es[0].Canary.Verdict != reconcile.VerdictPass || es[1].Canary.Step != 2 || es[1].Result != journal.ResultOK {
		t.Fatalf("journal's canary lines %+v, want steps 1 and 2 passed", es)
	}
}

// A slow canary (p95 10× the stable cohort's) is caught on latency.
func TestCanarySlowIsCaughtOnLatency(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.canaryMS = 50 })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
	path := h.withJournal()
	h.start()
	h.drive("the canary rolled back", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
	if es := canaryEntries(t, path); len(es) != 1 || es[0].Canary.Check != reconcile.CheckP95Ratio {
		t.Fatalf("journal's canary lines %+v, want one failed on max_p95_ratio", es)
	}
}

// A canary with no traffic holds, says so, and runs nothing more; retry
// runs the step again, and with traffic it passes and the roll goes on.
func TestCanaryWithNoTrafficHolds(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.quiet = true })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 300ms}]"), ModeAuto)
	path := h.withJournal()
	h.start()
	canaryWait := func(s Snapshot) bool {
		for _, wp := range s.Plan.Workloads {
			for _, st := range wp.Steps {
				if st.Wait == reconcile.WaitCanary && st.Slot == 0 {
					return true
				}
			}
		}
		return false
	}
	s := h.drive("the canary held", func(s Snapshot) bool {
		return hasNote(s, "canary web holds at step 1/1") && canaryWait(s) && s.Running == nil
	})
	if !hasNote(s, "too little traffic") {
		t.Errorf("the hold does not say why:\n%s", describe(s))
	}
	if es := canaryEntries(t, path); len(es) != 1 || es[0].Result != journal.ResultHeld || es[0].Canary.Verdict != reconcile.VerdictInsufficient {
		t.Errorf("journal's canary lines %+v, want one held on too little traffic (it failed nothing)", es)
	}
	var waits int
	for _, wp := range s.Plan.Workloads {
		for _, st := range wp.Steps {
			if st.Executable() {
				t.Errorf("held canary: step %s planned", st.Key())
			}
			if st.Wait == reconcile.WaitCanary {
				waits++
			}
		}
	}
	if waits == 0 {
		t.Errorf("no canary wait in the plan:\n%s", describe(s))
	}
	if running(s, "web:v1") != 2 || running(s, "web:v2") != 1 {
		t.Errorf("held: %d v1, %d v2 running; want both old and the canary", running(s, "web:v1"), running(s, "web:v2"))
	}
	c.set(func(c *cohortStandIn) { c.quiet = false })
	h.s.Do(Retry{Workload: "web"})
	h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
}

// In step mode each canary step waits for its approval; A (ApproveRollout)
// approves the whole rollout, canary included.
func TestCanaryStepsAreApprovedInStepMode(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	// The approvals are under test, not the traffic: a step that saw too
	// little traffic in its 200ms (one reading, on a loaded machine)
	// passes rather than holds.
	text := withProxy(desiredYAML("web:v2", 2,
		"canary: {steps: [{share: 10%, for: 200ms}, {share: 50%, for: 200ms}], analysis: {interval: 100ms, max_error_rate: 5%, max_p95_ratio: 2, min_requests: 20, on_insufficient_traffic: pass}}"), c.URL)
	h := newHarness(t, f, clock, text, ModeStep)
	h.start()
	canaryStep := func(s Snapshot) *reconcile.Step {
		for _, wp := range s.Plan.Workloads {
			for i := range wp.Steps {
				if wp.Steps[i].Action == reconcile.ActCanary {
					return &wp.Steps[i]
				}
			}
		}
		return nil
	}
	s := h.waitFor("the canary's start", func(s Snapshot) bool { return len(s.Plan.Workloads) > 0 && len(s.Plan.Workloads[0].Steps) > 0 })
	h.s.Do(ApproveStep{Key: s.Plan.Workloads[0].Steps[0].Key()})
	s = h.drive("the first canary step planned", func(s Snapshot) bool { return canaryStep(s) != nil })
	h.settle()
	c.get(func(c *cohortStandIn) {
		// The canary exists and is healthy, and only its share-0 split,
		// set before it was created, is there (issue 26 row 1).
		if !slices.Equal(c.shares, []float64{0}) || !slices.Equal(c.existed, []int{0}) || c.runningOf(canaryStep(s).Canary.Spec) != 1 {
			t.Errorf("shares %v (containers of the spec at each: %v) before the canary step was approved, want 0 alone, set before the canary was created",
				c.shares, c.existed)
		}
	})
	h.s.Do(ApproveStep{Key: canaryStep(s).Key()})
	s = h.drive("the second canary step planned", func(s Snapshot) bool { st := canaryStep(s); return st != nil && st.Canary.Index == 1 })
	h.settle()
	c.get(func(c *cohortStandIn) {
		if !slices.Equal(c.shares, []float64{0, 0.1}) {
			t.Errorf("shares %v, want 0 then the first step's alone before the second is approved", c.shares)
		}
	})
	h.s.Do(ApproveRollout{})
	h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
}

// A failed canary posts an abort with its figures; a step that passed a
// canary_step.
func TestCanaryNoticesCarryTheFigures(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.canaryErrs = 3 })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
	seen := &noticeLog{}
	h.opts.Observer = seen
	h.start()
	h.drive("the canary rolled back", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
	var abort *notify.Event
	for _, n := range seen.all() {
		if n.Kind == notify.KindAbort {
			abort = &n
		}
	}
	if abort == nil || abort.Canary == nil || abort.Canary.Check != reconcile.CheckErrorRate || abort.Canary.Canary.Requests < 20 || abort.Workload != "web" {
		t.Fatalf("abort notice %+v, want one with the failed check and its figures", abort)
	}
}

// noticeLog is an Observer that keeps the notices.
type noticeLog struct {
	mu sync.Mutex
	ns []notify.Event
}

func (n *noticeLog) Fact(Fact)         {}
func (n *noticeLog) Standing(Standing) {}
func (n *noticeLog) Notice(e notify.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ns = append(n.ns, e)
}
func (n *noticeLog) all() []notify.Event {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]notify.Event(nil), n.ns...)
}

// A pin rolls its revision back in with no canary: it ran healthy on every
// slot before, and going back is the way out of a bad version.
func TestPinRollsInWithNoCanary(t *testing.T) {
	f, clock := newEngine()
	c := newCohortStandIn(t, f)
	canaried := func(image string) string {
		return withProxy(desiredYAML(image, 2, "drain: 300ms", "canary: {steps: [{share: 10%, for: 200ms}], analysis: {interval: 100ms, max_error_rate: 5%, min_requests: 20}}")+
			"    pre_stop: [\"/demoapp\", \"-drain\"]\n", c.URL)
	}
	seed(t, f, clock, revYAML("web:v1"))
	v1, v2 := resolvedWeb(t, f, revYAML("web:v1")), resolvedWeb(t, f, revYAML("web:v2"))
	h := newRevHarness(t, f, clock, canaried("web:v1"), ModeAuto)
	h.start()
	h.kept(1, v1.Hash)
	h.src.Set(canaried("web:v2"))
	h.kept(2, v2.Hash)
	canaries := 0
	for _, s := range h.steps() {
		if s.Action == reconcile.ActCanary {
			canaries++
		}
	}
	if canaries != 1 {
		t.Fatalf("%d canary steps rolling v2 in, want 1", canaries)
	}
	h.s.Do(Pin{Workload: "web"})
	h.drive("v1 back on every slot", func(s Snapshot) bool { return s.Steady && servingHash(s, v1.Hash, 2) && runsHash(s, v2.Hash) == 0 })
	for _, s := range h.steps() {
		if s.Action == reconcile.ActCanary {
			t.Errorf("the pinned revision rolled in through a canary step: %s", s.Key())
		}
	}
}

// An unattended run (apply) ends when a canary holds and nothing else can
// run: waiting out its timeout would tell the operator nothing more.
func TestUnattendedEndsOnAHeldCanary(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.quiet = true })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 200ms}]"), ModeAuto)
	h.start()
	s := h.drive("the canary held", func(s Snapshot) bool {
		_, done := judge(s.Standing, true)
		return done
	})
	why, _ := judge(s.Standing, true)
	if !strings.Contains(why, "canary web holds at step 1/1") || !strings.Contains(why, "rollcall retry web") {
		t.Errorf("judge says %q, want the held canary and what lifts it", why)
	}
}

// A step that passed posts canary_step with the step's own figures, and a
// held one says held; neither goes through the retry backoff of a failure.
func TestCanaryPassedStepNoticeCarriesItsFigures(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 300ms}, {share: 50%, for: 300ms}]"), ModeAuto)
	seen := &noticeLog{}
	h.opts.Observer = seen
	h.start()
	h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	var passed []notify.Event
	for _, n := range seen.all() {
		if n.Kind == notify.KindCanaryStep {
			passed = append(passed, n)
		}
	}
	if len(passed) != 2 {
		t.Fatalf("%d canary_step notices, want one per step: %+v", len(passed), passed)
	}
	for i, n := range passed {
		if n.Reason != "passed" || n.Canary == nil || n.Canary.Step != i+1 || n.Canary.Verdict != reconcile.VerdictPass ||
			n.Canary.Canary.Requests < 20 || n.Canary.Stable.Requests < 20 {
			t.Errorf("notice %d: %+v canary %+v, want step %d passed with both cohorts' figures", i, n, n.Canary, i+1)
		}
	}
}

// A split the proxy lost mid-step (a Caddy restarted: no split, counters
// anew) is set again and the step's window restarts from a fresh reading:
// the step never passes on the counters it lost, even with
// on_insufficient_traffic: pass, and the journal, the note and the
// judgement say so (issue 26 rows 2, 9).
func TestCanarySplitLostIsSetAgainAndItsWindowRestarts(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.loseAt = 3 }) // the step's start reading, one within the window, then lost
	yaml := withProxy(desiredYAML("web:v2", 2,
		"canary: {steps: [{share: 10%, for: 300ms}], analysis: {interval: 100ms, max_error_rate: 5%, min_requests: 20, on_insufficient_traffic: pass}}"), c.URL)
	h := newHarness(t, f, clock, yaml, ModeAuto)
	path := h.withJournal()
	h.start()
	s := h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	if !hasNote(s, "split lost at the proxy") || !hasNote(s, "set again, window restarted") {
		t.Errorf("no note of the lost split:\n%s", describe(s))
	}
	c.get(func(c *cohortStandIn) {
		if !slices.Equal(c.shares, []float64{0, 0.1, 0.1}) || c.deletes != 1 {
			t.Errorf("shares %v, deletes %d; want 0 before the create, 10%%, 10%% again once lost, then lifted", c.shares, c.deletes)
		}
	})
	es := canaryEntries(t, path)
	if len(es) != 1 || es[0].Result != journal.ResultOK || es[0].Canary.SplitLosses != 1 ||
		es[0].Canary.Verdict != reconcile.VerdictPass || es[0].Canary.Canary.Requests < 20 || es[0].Canary.WindowMS < 300 {
		t.Fatalf("journal's canary lines %+v, want one that passed on a whole window of its own (≥20 requests, 300ms) after one lost split", es)
	}
}

// A split that cannot be lifted after the last step is tried again; until
// it is lifted the roll does not go on, and the step's result says why
// (issue 26 row 2).
func TestCanaryClearSplitIsRetriedAndGatesTheRoll(t *testing.T) {
	saved := clearBackoff
	clearBackoff = []time.Duration{time.Millisecond, time.Millisecond}
	t.Cleanup(func() { clearBackoff = saved })
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.failDeletes = -1 })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 200ms}]"), ModeAuto)
	h.start()
	s := h.drive("the last step failed on its split", func(s Snapshot) bool {
		for _, r := range s.Recent {
			if r.Step.Action == reconcile.ActCanary && r.ProxyFault == reconcile.FaultSplitNotCleared {
				return true
			}
		}
		return false
	})
	if n := running(s, "web:v1"); n != 2 {
		t.Errorf("%d web:v1 running while the split could not be lifted, want 2: the roll must not go on", n)
	}
	for _, st := range s.Plan.Steps() {
		if st.Action == reconcile.ActRoll {
			t.Errorf("planned %s while the split is still set", st.Key())
		}
	}
	c.get(func(c *cohortStandIn) {
		if c.deleteTries < len(clearBackoff)+1 {
			t.Errorf("%d DELETEs tried before the step failed, want at least %d: the first and one after each backoff", c.deleteTries, len(clearBackoff)+1)
		}
		if c.shares[len(c.shares)-1] != 0 {
			t.Errorf("shares %v: a step that could not lift its split sends the share to 0", c.shares)
		}
		c.failDeletes = 1 // the next one fails, the one after it goes through
	})
	h.drive("rolled to v2 once the split could be lifted", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	c.get(func(c *cohortStandIn) {
		if c.deletes != 1 {
			t.Errorf("%d DELETEs went through, want 1", c.deletes)
		}
	})
}

// A canary that fails while its share can no longer be set to 0 (the
// admin API cut) is stopped through the engine, rolled back all the same,
// and nothing says its share is 0 (issue 26 row 10).
func TestCanaryShareNotZeroedStopsItThroughTheEngine(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) {
		c.canaryErrs = 2 // 20%
		c.failPut = func(share float64) bool { return share == 0 && c.share > 0 }
	})
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
	h.start()
	s := h.drive("the canary stopped and its spec held", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
	if !hasNote(s, "its share could not be set to 0 at the proxy") || !hasNote(s, "stopped through the engine") {
		t.Errorf("no note of the share that could not be set to 0 and the stop:\n%s", describe(s))
	}
	if hasNote(s, "its share is 0") {
		t.Errorf("a note says the share is 0 although the PUT failed:\n%s", describe(s))
	}
	if n := running(s, "web:v1"); n != 2 {
		t.Errorf("%d web:v1 running, want 2: nothing old stops", n)
	}
	var fault reconcile.ProxyFault
	for _, r := range s.Recent {
		if r.Step.Action == reconcile.ActCanary {
			fault = r.ProxyFault
		}
	}
	if fault != reconcile.FaultShareNotZeroed {
		t.Errorf("the canary step's result has proxy fault %q, want %q", fault, reconcile.FaultShareNotZeroed)
	}
}

// A canary step whose admin API is cut mid-step cannot measure and cannot
// set the share to 0: the canary is stopped through the engine by the step
// itself, the old containers untouched (issue 26 row 10).
func TestCanaryAdminCutStopsItThroughTheEngine(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.downAt = 2 }) // the step's start reading answers, the next is cut
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
	h.start()
	h.drive("the canary step failed with its share not 0", func(s Snapshot) bool {
		for _, r := range s.Recent {
			if r.Step.Action == reconcile.ActCanary && r.ProxyFault == reconcile.FaultShareNotZeroed {
				return true
			}
		}
		return false
	})
	s := h.drive("the canary stopped", func(s Snapshot) bool { return running(s, "web:v2") == 0 && s.Running == nil })
	if n := running(s, "web:v1"); n != 2 {
		t.Errorf("%d web:v1 running, want 2: nothing old stops", n)
	}
	if !hasNote(s, "its share could not be set to 0 at the proxy") {
		t.Errorf("no note of the share that could not be set to 0:\n%s", describe(s))
	}
	for _, r := range s.Recent {
		if r.Step.Action == reconcile.ActStop {
			t.Errorf("%s ran: the canary's stop is the failed step's own, not a plan's", r.Step.Key())
		}
	}
}

// A canary's start whose split cannot be set creates nothing: the start
// fails, saying why, and nothing that serves is touched (issue 26 row 1).
func TestCanaryStartNeedsItsSplit(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.failPut = func(float64) bool { return true } })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 200ms}]"), ModeAuto)
	h.start()
	s := h.drive("the canary's start failed", func(s Snapshot) bool {
		for _, r := range s.Recent {
			if r.Step.Action == reconcile.ActStart && r.ProxyFault == reconcile.FaultSplitFirst {
				return true
			}
		}
		return false
	})
	if n, old := len(s.Containers), running(s, "web:v1"); n != 2 || old != 2 {
		t.Errorf("%d containers, %d web:v1 running; want the two old ones alone", n, old)
	}
	if !hasNote(s, "could not be set in the proxy, nothing created") {
		t.Errorf("the failed start does not say why:\n%s", describe(s))
	}
}

// As a session ends, a canary that holds has its share set to 0; one
// whose share cannot be set to 0 is stopped through the engine (issue 26
// rows 10, 18).
func TestSessionEndZeroesOrStopsTheCanary(t *testing.T) {
	for _, cut := range []bool{false, true} {
		t.Run(map[bool]string{false: "share 0", true: "admin API cut"}[cut], func(t *testing.T) {
			f, clock := newEngine()
			seed(t, f, clock, desiredYAML("web:v1", 2))
			c := newCohortStandIn(t, f)
			c.set(func(c *cohortStandIn) { c.quiet = true })
			h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 200ms}]"), ModeAuto)
			h.s = New(h.opts)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- h.s.Run(ctx) }()
			t.Cleanup(cancel)
			h.drive("the canary held", func(s Snapshot) bool { return hasNote(s, "canary web holds at step 1/1") && s.Running == nil })
			var hash string
			c.get(func(c *cohortStandIn) {
				hash = c.spec
				if cut {
					c.failPut = func(float64) bool { return true }
				}
			})
			cancel()
			select {
			case <-done:
			case <-time.After(waitLimit):
				t.Fatal("Run did not return after cancel")
			}
			c.get(func(c *cohortStandIn) {
				switch {
				case !cut && c.shares[len(c.shares)-1] != 0:
					t.Errorf("shares %v: the session ended with the held canary's share not 0", c.shares)
				case !cut && c.runningOf(hash) != 1:
					t.Errorf("%d canaries running after the session ended with its share 0, want it left running", c.runningOf(hash))
				case cut && c.runningOf(hash) != 0:
					t.Errorf("%d canaries running after the session ended unable to set its share to 0, want it stopped through the engine", c.runningOf(hash))
				}
			})
		})
	}
}

// TestCanarySplitLossSaysTheShare: a split found lost says its shares as
// reconcile.Percent says every canary's share (issue 29).
func TestCanarySplitLossSaysTheShare(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l := SplitLoss{Want: proxy.Split{Spec: "1a2b3c4d5e6f", Share: 1.0 / 3, Since: at}, Saw: &proxy.Split{Spec: "1a2b3c4d5e6f", Share: 0.05, Since: at},
		Lost: 1500 * time.Millisecond}
	got := l.String()
	for _, want := range []string{"share " + reconcile.Percent(1.0/3) + " ", "share " + reconcile.Percent(0.05) + " ", "33.33%"} {
		if !strings.Contains(got, want) {
			t.Errorf("String() = %q, want %q in it", got, want)
		}
	}
}

// A canary that aborts by itself is no operator's rollback: no rollback
// is posted as the operator's, and its hold says the canary aborted
// (its typed cause), not "rolled back by the operator".
func TestCanaryAbortIsNoOperatorRollback(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f)
	c.set(func(c *cohortStandIn) { c.canaryErrs = 3 })
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 2s}]"), ModeAuto)
	seen := &noticeLog{}
	h.opts.Observer = seen
	h.start()
	h.drive("the canary rolled back", func(s Snapshot) bool { return len(s.Holds["web"]) > 0 && running(s, "web:v2") == 0 })
	h.settle()
	var hold *notify.Event
	for _, n := range seen.all() {
		switch n.Kind {
		case notify.KindRollback:
			t.Errorf("a canary's abort posted a rollback %+v: the abort says it, and no operator rolled back", n)
		case notify.KindHold:
			hold = &n
		}
	}
	if hold == nil || !strings.HasPrefix(hold.Reason, state.HoldByCanaryAbort.Said()) || hold.Workload != "web" {
		t.Errorf("hold notice %+v, want web's with the reason %q", hold, state.HoldByCanaryAbort.Said())
	}
}
