package session

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
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
	switch {
	case r.URL.Path == "/rollcall/cohorts" && r.Method == http.MethodGet:
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
		if body.Spec != c.spec {
			c.stable, c.canary = counters{}, counters{}
		}
		c.spec, c.share, c.split = body.Spec, body.Share, true
		c.shares = append(c.shares, body.Share)
		if body.Share == 0 {
			c.runningAt0 = c.runningOf(body.Spec)
		}
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/rollcall/cohorts/"+pfx+"/web" && r.Method == http.MethodDelete:
		c.split, c.deletes = false, c.deletes+1
		c.stable, c.canary = counters{}, counters{}
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/reverse_proxy/upstreams":
		fmt.Fprint(w, "[]")
	default:
		http.NotFound(w, r)
	}
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
		if len(c.shares) < 2 || c.shares[0] != 0.1 || c.shares[len(c.shares)-1] != 0 {
			t.Errorf("shares set %v, want 10%% then 0", c.shares)
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
	if len(es) != 1 || es[0].Result != journal.ResultFailed || es[0].Canary.Check != string(reconcile.CheckErrorRate) ||
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
		if len(c.shares) != 2 || c.shares[0] != 0.1 || c.shares[1] != 0.5 || c.deletes != 1 {
			t.Errorf("shares %v, deletes %d; want 10%%, 50%%, then the split lifted once", c.shares, c.deletes)
		}
	})
	es := canaryEntries(t, path)
	if len(es) != 2 || es[0].Canary.Verdict != string(reconcile.VerdictPass) || es[1].Canary.Step != 2 || es[1].Result != journal.ResultOK {
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
	if es := canaryEntries(t, path); len(es) != 1 || es[0].Canary.Check != string(reconcile.CheckP95Ratio) {
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
	h := newHarness(t, f, clock, canaryYAML("web:v2", c.URL, "[{share: 10%, for: 200ms}, {share: 50%, for: 200ms}]"), ModeStep)
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
		if len(c.shares) != 0 {
			t.Errorf("shares %v set before the canary step was approved", c.shares)
		}
	})
	h.s.Do(ApproveStep{Key: canaryStep(s).Key()})
	s = h.drive("the second canary step planned", func(s Snapshot) bool { st := canaryStep(s); return st != nil && st.Canary.Index == 1 })
	h.settle()
	c.get(func(c *cohortStandIn) {
		if len(c.shares) != 1 {
			t.Errorf("shares %v, want the first step's alone before the second is approved", c.shares)
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
	if abort == nil || abort.Canary == nil || abort.Canary.Check != string(reconcile.CheckErrorRate) || abort.Canary.Canary.Requests < 20 || abort.Workload != "web" {
		t.Fatalf("abort notice %+v, want one with the failed check and its figures", abort)
	}
}

// noticeLog is an Observer that keeps the notices.
type noticeLog struct {
	mu sync.Mutex
	ns []notify.Event
}

func (n *noticeLog) Event(Event) {}
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
		_, done := judge(s, true)
		return done
	})
	why, _ := judge(s, true)
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
		if n.Reason != "passed" || n.Canary == nil || n.Canary.Step != i+1 || n.Canary.Verdict != string(reconcile.VerdictPass) ||
			n.Canary.Canary.Requests < 20 || n.Canary.Stable.Requests < 20 {
			t.Errorf("notice %d: %+v canary %+v, want step %d passed with both cohorts' figures", i, n, n.Canary, i+1)
		}
	}
}
