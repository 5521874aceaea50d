package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// canaryFile is web on demo:<version>, 2 replicas, with update.canary of
// steps judged by analysis, behind the Caddy admin API at admin.
func canaryFile(version, admin, steps, analysis string) string {
	return fmt.Sprintf(revisionsYAML, version) + "    update:\n      canary:\n        steps: " + steps +
		"\n        analysis: " + analysis + "\nproxy: {caddy_admin: \"" + admin + "\"}\n"
}

// seedV1 brings web to 2 healthy demo:v1 containers, by apply, then moves
// the clock on a minute: what starts next is newer than them.
func seedV1(t *testing.T, h *harness) {
	t.Helper()
	h.fake.AddImage("demo:v1", imageV1, fake.Behaviour{})
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	v1 := h.file("v1.yaml", fmt.Sprintf(revisionsYAML, "v1"))
	if res := h.run("", "apply", "--yes", "-f", v1); res.code != exitOK {
		t.Fatalf("seed apply: exit %d\n%s", res.code, res.stderr)
	}
	h.clock.Advance(time.Minute)
	h.fake.ResetCalls()
}

// addCanary starts web/0's healthy new container of the desired file at
// path beside the old one, as the canary's start step would: the plan
// then holds the first canary step.
func addCanary(t *testing.T, h *harness, path, text string) {
	t.Helper()
	d, err := load.Parse(path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	web := spec.Resolve(context.Background(), d, h.fake).Workload("web")
	cs := reconcile.CreateSpec(d.Prefix, web, 0)
	now := h.clock.Now()
	if _, err := h.fake.AddContainer(docker.Container{
		ID: strings.Repeat("c0", 32), Name: cs.Name, Image: cs.Image, ImageID: web.ImageID, Labels: cs.Labels,
		State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true, Created: now, StartedAt: now, Limits: cs.Limits,
	}); err != nil {
		t.Fatal(err)
	}
}

const planCanarySteps = "[{share: 5%, for: 1m}, {share: 25%, for: 2m}]"
const planCanaryAnalysis = "{max_error_rate: 1%, max_error_rate_increase: 0.5%, max_p95_ratio: 1.5, min_requests: 200}"

// TestPlanShowsTheCanary (§9, §12): plan draws a canary's start, its
// steps and the waits it puts on the other slots, plain and styled alike
// (the styled one is the plain one with colour), and exits 2 while the
// canary's gate holds the roll; --json gives each canary step its canary
// object (step, of, share, length, spec, the analysis), null elsewhere.
func TestPlanShowsTheCanary(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	seedV1(t, h)
	text := canaryFile("v2", "http://127.0.0.1:1", planCanarySteps, planCanaryAnalysis)
	path := h.file("rollcall.yaml", text)

	res := h.run("", "plan", "-f", path)
	if res.code != exitPending {
		t.Fatalf("plan before the canary started: exit %d, want 2\n%s%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "plan before the canary started", res.stdout,
		"start   0   rctest-web-0-", "canary: image demo:v1 → demo:v2",
		"wait    1   rctest-web-1-", "canary first: no old container drains before its",
		"then canary  0   rctest-web-0-", "canary step 1/2: 5% of the traffic for 1m0s", "canary step 2/2: 25% of the traffic for 2m0s",
		"then canary")

	addCanary(t, h, path, text)
	res = h.run("", "plan", "-f", path)
	if res.code != exitPending {
		t.Fatalf("plan while the gate holds: exit %d, want 2 (not converged)\n%s%s", res.code, res.stdout, res.stderr)
	}
	plain := res.stdout
	var canaryLine, waitLine string
	for _, l := range strings.Split(plain, "\n") {
		switch {
		case strings.Contains(l, "─ canary  0   rctest-web-0-"):
			canaryLine = l
		case strings.Contains(l, "─ wait    1   rctest-web-1-"):
			waitLine = l
		}
	}
	if !strings.Contains(canaryLine, "canary step 1/2: 5% of the traffic for 1m0s, judged against the stable cohort every 10s") {
		t.Errorf("no line of the first canary step to run:\n%s", plain)
	}
	if !strings.Contains(waitLine, "canary first") {
		t.Errorf("no canary wait on slot 1:\n%s", plain)
	}
	mustContain(t, "plan while the gate holds", plain, "then canary  0", "canary step 2/2", "1 canary · 1 wait")

	h.terminal["stdout"] = true
	styledRes := h.run("", "plan", "-f", path)
	if styledRes.code != exitPending || !strings.Contains(styledRes.stdout, "\x1b[") {
		t.Fatalf("styled plan: exit %d, no styling:\n%s", styledRes.code, styledRes.stdout)
	}
	if got := ansi.Strip(styledRes.stdout); got != plain {
		t.Errorf("the styled plan is not the plain one with colour:\n--- styled, stripped\n%s\n--- plain\n%s", got, plain)
	}
	h.terminal["stdout"] = false

	res = h.run("", "plan", "--json", "-f", path)
	if res.code != exitPending {
		t.Fatalf("plan --json: exit %d, want 2\n%s", res.code, res.stderr)
	}
	doc := planDocOf(t, res.stdout)
	if doc.SchemaVersion != planSchemaVersion || doc.Converged {
		t.Errorf("schema %d converged %v, want %d and false", doc.SchemaVersion, doc.Converged, planSchemaVersion)
	}
	d, err := load.Parse(path, []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	hash := spec.Resolve(context.Background(), d, h.fake).Workload("web").Hash
	want := analysisDoc{IntervalMS: 10000, MaxErrorRate: 0.01, MaxErrorRateIncrease: 0.005, MaxP95Ratio: 1.5, MinRequests: 200, OnInsufficientTraffic: "hold"}
	if len(doc.Workloads) != 1 {
		t.Fatalf("workloads %+v", doc.Workloads)
	}
	w := doc.Workloads[0]
	var steps []stepDoc
	steps = append(steps, w.Steps...)
	steps = append(steps, w.Then...)
	var canaries []canaryDoc
	for _, s := range steps {
		switch {
		case s.Action == string(reconcile.ActCanary):
			if s.Canary == nil {
				t.Errorf("canary step without its canary object: %+v", s)
				continue
			}
			canaries = append(canaries, *s.Canary)
		case s.Canary != nil:
			t.Errorf("%s step with a canary object: %+v", s.Action, s)
		}
		if s.Action == string(reconcile.ActWait) && s.Wait != string(reconcile.WaitCanary) {
			t.Errorf("wait %q, want canary: %+v", s.Wait, s)
		}
	}
	wantSteps := []canaryDoc{
		{Step: 1, Of: 2, Share: 0.05, ForMS: 60000, Spec: hash, Analysis: want},
		{Step: 2, Of: 2, Share: 0.25, ForMS: 120000, Spec: hash, Analysis: want},
	}
	if fmt.Sprint(canaries) != fmt.Sprint(wantSteps) {
		t.Errorf("canary objects\n %+v\nwant\n %+v", canaries, wantSteps)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &raw); err != nil {
		t.Fatal(err)
	}
	step0 := raw["workloads"].([]any)[0].(map[string]any)["steps"].([]any)[0].(map[string]any)
	c, ok := step0["canary"].(map[string]any)
	if !ok {
		t.Fatalf("first step's canary: %v", step0["canary"])
	}
	for _, k := range []string{"step", "of", "share", "for_ms", "spec", "analysis"} {
		if _, ok := c[k]; !ok {
			t.Errorf("canary object lacks %q: %v", k, c)
		}
	}
	if muts := h.fake.Mutations(); len(muts) > 0 {
		t.Errorf("plan changed the engine: %q", muts)
	}
}

// cohortStandIn is Caddy's admin API as a canary step uses it: the split
// of web's traffic (PUT/DELETE /rollcall/cohorts/rctest/web) and the
// cohorts' counters (GET /rollcall/cohorts). Each GET, while a split with
// a share is set, counts traffic: 90 stable requests and 10 canary ones,
// canaryErrs of them failed, each answered within 5ms.
type cohortStandIn struct {
	*httptest.Server
	mu             sync.Mutex
	spec           string
	share          float64
	split          bool
	canaryErrs     int64
	stable, canary [2]int64 // requests, errors
	shares         []float64
}

func newCohortStandIn(t *testing.T, canaryErrs int64) *cohortStandIn {
	c := &cohortStandIn{canaryErrs: canaryErrs}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

func (c *cohortStandIn) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	bounds := []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}
	wire := func(n [2]int64) map[string]any {
		counts := make([]int64, len(bounds)+1)
		counts[2] = n[0]
		return map[string]any{"containers": []string{}, "requests": n[0], "errors": n[1], "dial_failures": 0,
			"latency_ms": map[string]any{"bounds": bounds, "counts": counts}, "latency_sum_ms": 0}
	}
	switch {
	case r.URL.Path == "/rollcall/cohorts" && r.Method == http.MethodGet:
		if c.split && c.share > 0 {
			c.stable[0] += 90
			c.canary[0] += 10
			c.canary[1] += c.canaryErrs
		}
		var split any
		if c.split {
			split = map[string]any{"spec": c.spec, "share": c.share, "since": "2026-03-01T12:00:00Z"}
		}
		_ = json.NewEncoder(w).Encode([]map[string]any{{"prefix": "rctest", "workload": "web", "split": split,
			"cohorts": map[string]any{"stable": wire(c.stable), "canary": wire(c.canary)}}})
	case r.URL.Path == "/rollcall/cohorts/rctest/web" && r.Method == http.MethodPut:
		var body struct {
			Spec  string  `json:"spec"`
			Share float64 `json:"share"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body.Spec != c.spec {
			c.stable, c.canary = [2]int64{}, [2]int64{}
		}
		c.spec, c.share, c.split = body.Spec, body.Share, true
		c.shares = append(c.shares, body.Share)
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/rollcall/cohorts/rctest/web" && r.Method == http.MethodDelete:
		c.split = false
		c.stable, c.canary = [2]int64{}, [2]int64{}
		fmt.Fprint(w, "{}")
	case r.URL.Path == "/reverse_proxy/upstreams":
		fmt.Fprint(w, "[]")
	default:
		http.NotFound(w, r)
	}
}

// canaryLines are apply's progress lines of canary steps.
func canaryLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, " canary  web/0 ") {
			out = append(out, l)
		}
	}
	return out
}

// canaryResults are apply --json's canary steps.
func canaryResults(t *testing.T, stdout string) []resultDoc {
	t.Helper()
	var doc applyDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout)
	}
	var out []resultDoc
	for _, s := range doc.Steps {
		if s.Action == string(reconcile.ActCanary) {
			out = append(out, s)
		} else if s.Judgement != nil || s.Canary != nil {
			t.Errorf("%s step with a canary's figures: %+v", s.Action, s)
		}
	}
	return out
}

// TestApplyCanaryPasses (§12): apply runs a good canary's steps through
// the proxy and then the roll; it prints a line as each step starts, its
// readings, and its end with the figures; --json gives each canary step
// its judgement.
func TestApplyCanaryPasses(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	seedV1(t, h)
	c := newCohortStandIn(t, 0)
	path := h.file("rollcall.yaml", canaryFile("v2", c.URL, "[{share: 10%, for: 500ms}, {share: 50%, for: 500ms}]",
		"{interval: 100ms, max_error_rate: 5%, max_p95_ratio: 2, min_requests: 10}"))
	res := h.run("", "apply", "--yes", "--json", "--timeout", "1m", "-f", path)
	if res.code != exitOK {
		t.Fatalf("apply: exit %d\n%s", res.code, res.stderr)
	}
	lines := canaryLines(res.stderr)
	kinds := map[string]int{}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "▸ ") && strings.Contains(l, "of the traffic for 500ms, compared with the stable cohort every 100ms"):
			kinds["start"]++
		case strings.HasPrefix(l, "… ") && strings.Contains(l, " left · canary ") && strings.Contains(l, " · stable "):
			kinds["reading"]++
		case strings.HasPrefix(l, "✓ ") && strings.Contains(l, " passed · canary ") && strings.Contains(l, " req 0% err"):
			kinds["passed"]++
		default:
			t.Errorf("unexpected canary line %q", l)
		}
	}
	// One reading each: the first; the rest come within minReadingGap.
	if kinds["start"] != 2 || kinds["reading"] != 2 || kinds["passed"] != 2 {
		t.Errorf("canary lines by kind %v, want a start, a reading and an end per step:\n%s", kinds, res.stderr)
	}
	mustContain(t, "progress", res.stderr, "step 1/2: 10% of the traffic", "step 2/2: 50% of the traffic", "step 2/2 passed · ", "; the roll goes on")
	if strings.Contains(strings.Join(lines, "\n"), "step 1/2 passed · canary 0 req") {
		t.Errorf("a step's end without its figures:\n%s", res.stderr)
	}

	rs := canaryResults(t, res.stdout)
	if len(rs) != 2 {
		t.Fatalf("%d canary steps in --json, want 2: %+v", len(rs), rs)
	}
	for i, r := range rs {
		if r.Result != journal.ResultOK || r.Canary == nil || r.Canary.Step != i+1 || r.Canary.Of != 2 || r.Judgement == nil {
			t.Fatalf("canary step %d: %+v", i+1, r)
		}
		j := r.Judgement
		if j.Verdict != reconcile.VerdictPass || j.Canary.Requests < 10 || j.Stable.Requests < 90 || j.Canary.Errors != 0 || j.WindowMS < 500 {
			t.Errorf("canary step %d's judgement %+v, want a pass over its 500ms with its figures", i+1, j)
		}
	}
}

// TestApplyCanaryFails (§12): a canary that answers 20% errors fails its
// first step; apply says which check failed, its measured figure beside
// its limit, with both cohorts' figures, and exits 1; --json's judgement
// names the check.
func TestApplyCanaryFails(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	seedV1(t, h)
	c := newCohortStandIn(t, 2)
	path := h.file("rollcall.yaml", canaryFile("v2", c.URL, "[{share: 10%, for: 10s}, {share: 50%, for: 10s}]",
		"{interval: 100ms, max_error_rate: 5%, min_requests: 10}"))
	res := h.run("", "apply", "--yes", "--json", "--timeout", "1m", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("apply: exit %d, want 1\n%s", res.code, res.stderr)
	}
	var failed []string
	for _, l := range canaryLines(res.stderr) {
		if strings.HasPrefix(l, "✗ ") {
			failed = append(failed, l)
		}
	}
	// The first judged reading: 10 canary requests, 2 failed.
	if len(failed) != 1 || !strings.Contains(failed[0], "step 1/2 failed: error rate 20% > max_error_rate 5% · canary 10 req 20% err") ||
		!strings.Contains(failed[0], " · stable 90 req 0% err") {
		t.Errorf("failed lines %q, want one naming the check beside its limit, with the figures:\n%s", failed, res.stderr)
	}
	if strings.Contains(res.stderr, "step 2/2") {
		t.Errorf("the second step ran after the first failed:\n%s", res.stderr)
	}
	rs := canaryResults(t, res.stdout)
	if len(rs) != 1 || rs[0].Result != journal.ResultFailed || rs[0].Judgement == nil {
		t.Fatalf("canary steps in --json %+v, want one failed with its judgement", rs)
	}
	j := rs[0].Judgement
	if j.Verdict != reconcile.VerdictFail || j.Check != reconcile.CheckErrorRate || j.Measured != 0.2 || j.Limit != 0.05 ||
		j.Canary.Requests != 10 || j.Canary.Errors != 2 || j.Stable.Requests != 90 {
		t.Errorf("judgement %+v, want max_error_rate 0.2 > 0.05 on 10 canary and 90 stable requests", j)
	}
}

// TestPlanSaysTheCanaryAbortHold: after a canary aborted by itself, plan
// and plan --json give its hold's cause as the canary's, from the hold's
// typed cause: never "rolled back by the operator".
func TestPlanSaysTheCanaryAbortHold(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	seedV1(t, h)
	c := newCohortStandIn(t, 2)
	path := h.file("rollcall.yaml", canaryFile("v2", c.URL, "[{share: 10%, for: 10s}]", "{interval: 100ms, max_error_rate: 5%, min_requests: 10}"))
	if res := h.run("", "apply", "--yes", "--timeout", "1m", "-f", path); res.code != exitFailed {
		t.Fatalf("apply: exit %d, want 1\n%s", res.code, res.stderr)
	}
	res := h.run("", "plan", "-f", path)
	mustContain(t, "plan", res.stdout, "on hold: web spec ", ": the canary failed its analysis and was rolled back: error rate 20% > max_error_rate 5%")
	if strings.Contains(res.stdout, "operator") {
		t.Errorf("plan names the operator for the canary's hold:\n%s", res.stdout)
	}
	res = h.run("", "plan", "--json", "-f", path)
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Holds         []struct {
			Cause  string `json:"cause"`
			Reason string `json:"reason"`
		} `json:"holds"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.stdout)
	}
	if doc.SchemaVersion != 8 || len(doc.Holds) != 1 || doc.Holds[0].Cause != "canary-abort" ||
		!strings.HasPrefix(doc.Holds[0].Reason, "the canary failed its analysis") {
		t.Errorf("plan --json: schema %d, holds %+v; want 8 and one hold of cause canary-abort", doc.SchemaVersion, doc.Holds)
	}
}

// progressOn is a progress that prints plain lines to b.
func progressOn(b *bytes.Buffer) *progress {
	return &progress{out: screen{w: b, st: theme.New(theme.Mono)}}
}

// TestCanaryProgressLines: what apply prints of a canary step, from the
// session's typed events alone: its start; at most one reading per
// interval (and per minReadingGap), with the time left, however often
// the same reading comes (a fleet's snapshots); not the last reading, nor
// one that could not read the proxy; the end: passed (on too little
// traffic too, when the analysis says pass), held, or failed, from a
// *reconcile.CanaryError or, for a fleet's host whose errors are text,
// from the step's last reading; and the judgement each ended step hands
// apply --json, a late last reading included.
func TestCanaryProgressLines(t *testing.T) {
	analysis := spec.Analysis{Interval: 10 * time.Second, MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked, MaxP95Ratio: 1.5,
		MinRequests: 200, OnInsufficientTraffic: spec.InsufficientHold}
	cs := reconcile.CanaryStep{Spec: "abc", Index: 0, Of: 2, Share: 0.05, For: time.Minute, Analysis: analysis}
	step := func(cs reconcile.CanaryStep) reconcile.Step {
		return reconcile.Step{Action: reconcile.ActCanary, Workload: "web", Slot: 0, Container: "rctest-web-0-c72bb0bf", Canary: &cs}
	}
	figures := func(window time.Duration, canaryReq, canaryErr, stableReq, stableErr int64) reconcile.Judgement {
		return reconcile.Judge(analysis, window,
			reconcile.CohortFigures{Requests: stableReq, Errors: stableErr, P50: 4 * time.Millisecond, P95: 8 * time.Millisecond},
			reconcile.CohortFigures{Requests: canaryReq, Errors: canaryErr, P50: 5 * time.Millisecond, P95: 9 * time.Millisecond}, window >= cs.For)
	}
	view := func(cs reconcile.CanaryStep, j reconcile.Judgement, ended bool) session.Fact {
		s := step(cs)
		return session.Fact{Kind: session.FactCanary, Step: s, Canary: &session.CanaryView{Workload: "web", Step: cs, Container: s.Container,
			Began: t0, Ends: t0.Add(cs.For), Judgement: j, Ended: ended}}
	}

	t.Run("a step that passes", func(t *testing.T) {
		var b bytes.Buffer
		p := progressOn(&b)
		p.event(session.Fact{Kind: session.FactStepStarted, Step: step(cs)})
		p.event(view(cs, figures(0, 0, 0, 0, 0), false)) // the start's reading: nothing measured
		p.event(view(cs, figures(10*time.Second+3*time.Millisecond, 120, 1, 2280, 2), false))
		p.event(view(cs, figures(10*time.Second+3*time.Millisecond, 120, 1, 2280, 2), false)) // the same again
		p.event(view(cs, figures(20*time.Second+9*time.Millisecond, 240, 1, 4560, 3), false))
		p.event(view(cs, figures(time.Minute, 720, 2, 13680, 6), true))
		p.event(session.Fact{Kind: session.FactStepDone, Step: step(cs), Duration: time.Minute})
		want := strings.Join([]string{
			"▸ canary  web/0    rctest-web-0-c72bb0bf  step 1/2: 5% of the traffic for 1m, compared with the stable cohort every 10s",
			"… canary  web/0    rctest-web-0-c72bb0bf  step 1/2: 50s left · canary 120 req 0.83% err p95 9ms · stable 2280 req 0.09% err p95 8ms · too little traffic yet: 120 of min_requests 200",
			"… canary  web/0    rctest-web-0-c72bb0bf  step 1/2: 40s left · canary 240 req 0.42% err p95 9ms · stable 4560 req 0.07% err p95 8ms",
			"✓ canary  web/0    rctest-web-0-c72bb0bf  step 1/2 passed · canary 720 req 0.28% err p95 9ms · stable 13680 req 0.04% err p95 8ms over 1m",
		}, "\n") + "\n"
		if b.String() != want {
			t.Errorf("lines\n%s\nwant\n%s", b.String(), want)
		}
		if j := p.canaryResult(step(cs)); j == nil || j.Verdict != "pass" || j.Canary.Requests != 720 || j.WindowMS != 60000 {
			t.Errorf("judgement for --json %+v, want the last reading's", j)
		}
		if j := p.canaryResult(step(cs)); j != nil {
			t.Errorf("a step's judgement taken twice: %+v", j)
		}
	})

	t.Run("readings a second apart print every minReadingGap", func(t *testing.T) {
		var b bytes.Buffer
		p := progressOn(&b)
		short := cs
		short.Analysis.Interval = time.Second
		p.event(session.Fact{Kind: session.FactStepStarted, Step: step(short)})
		for i := 1; i <= 12; i++ {
			p.event(view(short, figures(time.Duration(i)*time.Second+time.Millisecond, int64(i)*10, 0, int64(i)*190, 0), false))
		}
		var left []string
		for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[1:] {
			left = append(left, strings.SplitN(strings.SplitN(l, "step 1/2: ", 2)[1], " ", 2)[0])
		}
		if got := strings.Join(left, " "); got != "59s 55s 50s" {
			t.Errorf("readings printed with %s left, want 59s 55s 50s:\n%s", got, b.String())
		}
	})

	t.Run("the last reading comes after the step's end", func(t *testing.T) {
		var b bytes.Buffer
		p := progressOn(&b)
		p.event(session.Fact{Kind: session.FactStepStarted, Step: step(cs)})
		p.event(view(cs, figures(10*time.Second, 120, 0, 2280, 0), false))
		p.event(session.Fact{Kind: session.FactStepDone, Step: step(cs), Duration: time.Minute})
		next := cs
		next.Index = 1
		p.event(session.Fact{Kind: session.FactStepStarted, Step: step(next)})
		p.event(view(cs, figures(time.Minute, 720, 0, 13680, 0), true)) // step 1's, late
		if n := strings.Count(b.String(), "\n"); n != 4 {
			t.Errorf("%d lines, want 4 (a late reading prints nothing):\n%s", n, b.String())
		}
		if j := p.canaryResult(step(cs)); j == nil || j.Canary.Requests != 720 {
			t.Errorf("judgement for --json %+v, want the late last reading's", j)
		}
	})

	held := &reconcile.CanaryError{Step: step(cs), Judgement: figures(time.Minute, 12, 0, 2280, 0), Hold: true}
	failed := &reconcile.CanaryError{Step: step(cs), Judgement: figures(10*time.Second, 200, 20, 1800, 0)}
	for _, tc := range []struct {
		name   string
		last   *reconcile.Judgement // the step's last reading, if any
		err    error
		insuff string // the analysis's on_insufficient_traffic
		want   string
	}{
		{name: "held on too little traffic", err: held,
			want: "! canary  web/0    rctest-web-0-c72bb0bf  step 1/2 held: too little traffic: 12 of min_requests 200 · canary 12 req 0% err p95 9ms · stable 2280 req 0% err p95 8ms over 1m; no old container stops until the step is run again or rolled back"},
		{name: "failed on a check", err: failed,
			want: "✗ canary  web/0    rctest-web-0-c72bb0bf  step 1/2 failed: error rate 10% > max_error_rate 1% · canary 200 req 10% err p95 9ms · stable 1800 req 0% err p95 8ms over 10s; its share is 0, the canary is rolled back and its spec put on hold"},
		{name: "a fleet's host: failed, from its last reading", last: &failed.Judgement, err: errors.New(failed.Error()),
			want: "✗ canary  web/0    rctest-web-0-c72bb0bf  step 1/2 failed: error rate 10% > max_error_rate 1% · canary 200 req 10% err p95 9ms · stable 1800 req 0% err p95 8ms over 10s; its share is 0, the canary is rolled back and its spec put on hold"},
		{name: "a fleet's host: held, from its last reading", last: &held.Judgement, err: errors.New(held.Error()),
			want: "! canary  web/0    rctest-web-0-c72bb0bf  step 1/2 held: too little traffic: 12 of min_requests 200 · canary 12 req 0% err p95 9ms · stable 2280 req 0% err p95 8ms over 1m; no old container stops until the step is run again or rolled back"},
		{name: "the proxy could not be read", err: errors.New("canary web/0 step 1/2: connection refused"),
			want: "✗ canary  web/0    rctest-web-0-c72bb0bf  0s: canary web/0 step 1/2: connection refused"},
		{name: "passed on too little traffic", last: &held.Judgement, insuff: spec.InsufficientPass,
			want: "✓ canary  web/0    rctest-web-0-c72bb0bf  step 1/2 passed on too little traffic: 12 of min_requests 200 (on_insufficient_traffic: pass) · canary 12 req 0% err p95 9ms · stable 2280 req 0% err p95 8ms over 1m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := progressOn(&b)
			c := cs
			if tc.insuff != "" {
				c.Analysis.OnInsufficientTraffic = tc.insuff
			}
			if tc.last != nil {
				p.event(view(c, *tc.last, true))
			}
			kind := session.FactStepFailed
			if tc.err == nil {
				kind = session.FactStepDone
			}
			p.event(session.Fact{Kind: kind, Step: step(c), Err: tc.err})
			if got := strings.TrimSuffix(b.String(), "\n"); got != tc.want {
				t.Errorf("line\n%s\nwant\n%s", got, tc.want)
			}
			j := p.canaryResult(step(c))
			switch {
			case tc.name == "the proxy could not be read" && j != nil:
				t.Errorf("judgement for --json %+v of a step that measured nothing, want none", j)
			case tc.name != "the proxy could not be read" && j == nil:
				t.Error("no judgement for --json")
			}
		})
	}

	t.Run("a fleet's host, from its session's facts", func(t *testing.T) {
		var b bytes.Buffer
		fp := newFleetProgress(screen{w: &b, st: theme.New(theme.Mono)}, []string{"edge-1"})
		hp := fp.hosts["edge-1"]
		reading := view(cs, figures(10*time.Second, 120, 0, 2280, 0), false)
		reading.Seq = 2
		running := session.Snapshot{Seq: 1, Connected: true, RunningSteps: []session.StepRun{{Step: step(cs), Listed: t0}},
			Facts: []session.Fact{{Seq: 1, Kind: session.FactStepStarted, Step: step(cs)}, reading}}
		hp.see(running)
		hp.see(running) // the same snapshot again prints nothing new
		last := view(cs, failed.Judgement, true)
		last.Seq = 3
		ended := session.Snapshot{Seq: 2, Connected: true, Facts: append(running.Facts, last,
			session.Fact{Seq: 4, Kind: session.FactStepFailed, Step: step(cs), Err: failed, Duration: 10 * time.Second,
				Result: &session.StepResult{Step: step(cs), Began: t0, Duration: 10 * time.Second, Err: failed.Error()}})}
		hp.see(ended)
		hp.see(ended)
		want := strings.Join([]string{
			"edge-1  ▸ canary  web/0    rctest-web-0-c72bb0bf  step 1/2: 5% of the traffic for 1m, compared with the stable cohort every 10s",
			"edge-1  … canary  web/0    rctest-web-0-c72bb0bf  step 1/2: 50s left · canary 120 req 0% err p95 9ms · stable 2280 req 0% err p95 8ms · too little traffic yet: 120 of min_requests 200",
			"edge-1  ✗ canary  web/0    rctest-web-0-c72bb0bf  step 1/2 failed: error rate 10% > max_error_rate 1% · canary 200 req 10% err p95 9ms · stable 1800 req 0% err p95 8ms over 10s; its share is 0, the canary is rolled back and its spec put on hold",
		}, "\n") + "\n"
		if b.String() != want {
			t.Errorf("lines\n%s\nwant\n%s", b.String(), want)
		}
		if j := hp.p.canaryResult(step(cs)); j == nil || j.Check != reconcile.CheckErrorRate || j.Canary.Requests != 200 {
			t.Errorf("judgement for --json %+v, want the failed check's", j)
		}
	})
}

// TestHistoryShowsCanaryFigures (§12): history shows a canary step's
// verdict and both cohorts' figures from its journal line, the failed
// check beside its limit; --json keeps the journal's canary object.
func TestHistoryShowsCanaryFigures(t *testing.T) {
	h := newHarness(t, nil)
	j, err := journal.Open(h.journal, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	analysis := spec.Analysis{Interval: 10 * time.Second, MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked, MaxP95Ratio: spec.NotChecked,
		MinRequests: 100, OnInsufficientTraffic: spec.InsufficientHold}
	for i, tc := range []struct {
		index  int
		j      reconcile.Judgement
		failed bool
		held   bool
	}{
		{0, reconcile.Judge(analysis, time.Minute, reconcile.CohortFigures{Requests: 5400, Errors: 5, P95: 8 * time.Millisecond},
			reconcile.CohortFigures{Requests: 600, Errors: 3, P95: 9 * time.Millisecond}, true), false, false},
		{1, reconcile.Judge(analysis, 20*time.Second, reconcile.CohortFigures{Requests: 1500, P95: 8 * time.Millisecond},
			reconcile.CohortFigures{Requests: 500, Errors: 60, P95: 30 * time.Millisecond}, false), true, false},
		// on_insufficient_traffic: hold: the step holds, it did not fail
		{0, reconcile.Judge(analysis, time.Minute, reconcile.CohortFigures{Requests: 5400, P95: 8 * time.Millisecond},
			reconcile.CohortFigures{Requests: 12, P95: 9 * time.Millisecond}, true), false, true},
	} {
		cs := reconcile.CanaryStep{Spec: "abc", Index: tc.index, Of: 2, Share: []float64{0.05, 0.25}[tc.index], For: time.Minute, Analysis: analysis}
		s := reconcile.Step{Action: reconcile.ActCanary, Workload: "web", Slot: 0, Container: "rctest-web-0-c72bb0bf", Canary: &cs,
			Reason: fmt.Sprintf("canary step %d/2", tc.index+1)}
		r := reconcile.Result{Step: s, Duration: tc.j.Window}
		if tc.failed || tc.held {
			r.Err = &reconcile.CanaryError{Step: s, Judgement: tc.j, Hold: tc.held}
		}
		e := journal.FromResult(r, t0.Add(time.Duration(i)*time.Minute), "alice", "apply")
		e.Canary = journal.CanaryOf(s, tc.j)
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()

	res := h.run("", "history")
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header and 3 rows:\n%s", len(lines), res.stdout)
	}
	mustContain(t, "passed step", lines[1], "canary", "web/0", "✓ ok",
		"step 1/2 at 5%: within the analysis · canary 600 req 0.5% err p95 9ms · stable 5400 req 0.09% err p95 8ms over 1m")
	mustContain(t, "failed step", lines[2], "✗ failed",
		"step 2/2 at 25%: error rate 12% > max_error_rate 1% · canary 500 req 12% err p95 30ms · stable 1500 req 0% err p95 8ms over 20s")
	mustContain(t, "held step", lines[3], "held", "step 1/2 at 5%: too little traffic")
	if strings.Contains(lines[3], "failed") {
		t.Errorf("a held canary step shows as failed: %q", lines[3])
	}

	h.terminal["stdout"] = true
	styledRes := h.run("", "history")
	mustContain(t, "styled history", ansi.Strip(styledRes.stdout), "step 2/2 at 25%: error rate 12% > max_error_rate 1%")
	h.terminal["stdout"] = false

	res = h.run("", "history", "--json")
	var got []journal.Entry
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var e journal.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		got = append(got, e)
	}
	if len(got) != 3 || got[2].Result != journal.ResultHeld || got[1].Canary == nil || got[1].Canary.Check != reconcile.CheckErrorRate || got[1].Canary.Measured != 0.12 {
		t.Errorf("--json entries %+v, want the journal's canary objects", got)
	}
}

// TestCanaryViewsSayTheJudgement: apply's line of a canary step that
// failed and history's row of its journal record say the judgement with
// reconcile's finding and each figure as reconcile formats it, for the
// judgement the console and the webhook are tested with (issue 29).
func TestCanaryViewsSayTheJudgement(t *testing.T) {
	j := reconcile.Judgement{Verdict: reconcile.VerdictFail, Check: reconcile.CheckErrorRateIncrease, Measured: 5.0/120 - 3.0/2280, Limit: 0.02,
		Window: 18 * time.Second,
		Stable: reconcile.CohortFigures{Requests: 2280, Errors: 3, P95: 8 * time.Millisecond},
		Canary: reconcile.CohortFigures{Requests: 120, Errors: 5, P95: 9250 * time.Microsecond}}
	cs := reconcile.CanaryStep{Spec: "abc", Index: 0, Of: 2, Share: 0.125, For: time.Minute}
	s := reconcile.Step{Action: reconcile.ActCanary, Workload: "web", Slot: 0, Container: "rctest-web-0-c72bb0bf", Canary: &cs}
	var b bytes.Buffer
	p := progressOn(&b)
	end := p.canaryEnd(s, &reconcile.CanaryError{Step: s, Judgement: j})
	for name, got := range map[string]string{"apply": end.text, "history": canaryHistoryText(journal.CanaryOf(s, j))} {
		for _, want := range []string{j.Finding(), reconcile.Percent(j.Canary.ErrorRate()), reconcile.Percent(j.Stable.ErrorRate()),
			reconcile.Latency(j.Canary.P95), "4.17%", "0.13%", "9.3ms"} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: %q\nwant %q in it", name, got, want)
			}
		}
	}
	if got := canaryHistoryText(journal.CanaryOf(s, j)); !strings.Contains(got, "at "+reconcile.Percent(0.125)+":") {
		t.Errorf("history: %q, want the share as reconcile.Percent says it", got)
	}
}
