package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// waitLimit bounds every wait of a test; a passing test takes a fraction.
const waitLimit = 5 * time.Second

// hook is a test webhook: it records every request, and answers as its
// answer func says (200 when nil).
type hook struct {
	srv *httptest.Server

	mu       sync.Mutex
	requests []request
	answer   func(n int, r *http.Request) int // n counts requests from 1
	got      chan request
}

type request struct {
	header http.Header
	body   []byte
	path   string
}

func newHook(t *testing.T, answer func(n int, r *http.Request) int) *hook {
	t.Helper()
	h := &hook{answer: answer, got: make(chan request, 100)}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := request{header: r.Header.Clone(), body: body, path: r.URL.Path}
		h.mu.Lock()
		h.requests = append(h.requests, req)
		n := len(h.requests)
		h.mu.Unlock()
		h.got <- req
		status := http.StatusOK
		if h.answer != nil {
			status = h.answer(n, r)
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) target() Target { return Target{URL: h.srv.URL + "/hooks/s3cret-path?key=k3y"} }

// next waits for the next request.
func (h *hook) next(t *testing.T) request {
	t.Helper()
	select {
	case r := <-h.got:
		return r
	case <-time.After(waitLimit):
		t.Fatal("no request")
	}
	return request{}
}

func (h *hook) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.requests)
}

// reports collects a notifier's reports.
type reports struct {
	mu  sync.Mutex
	all []Report
	c   chan Report
}

func newReports() *reports { return &reports{c: make(chan Report, 1000)} }

func (r *reports) add(rep Report) {
	r.mu.Lock()
	r.all = append(r.all, rep)
	r.mu.Unlock()
	r.c <- rep
}

// next waits for the next report.
func (r *reports) next(t *testing.T) Report {
	t.Helper()
	select {
	case rep := <-r.c:
		return rep
	case <-time.After(waitLimit):
		t.Fatal("no report")
	}
	return Report{}
}

func fast(r *reports) Options {
	return Options{Timeout: time.Second, Backoff: 5 * time.Millisecond, Report: r.add}
}

func newNotifier(t *testing.T, o Options, ts ...Target) *Notifier {
	t.Helper()
	n := New(o)
	n.SetTargets(ts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		n.Close(ctx)
	})
	return n
}

// sample is an event with every field set.
func sample() Event {
	return Event{Kind: KindRolloutEnded, Time: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC), Rollout: "r-1", Host: "edge-1",
		Engine: "ENGINE", Prefix: "rollcall", User: "tester", Workload: "web", Slot: -1, Outcome: OutcomeConverged,
		DurationMS: 1500, Counts: Counts{Steps: 6, Ready: 3, Total: 3},
		Workloads: []Change{{Workload: "web", FromImages: []string{"web:v1"}, ToImage: "web:v2", Replicas: 3}}}
}

// schemaKeys are the keys the package doc lists, every one always present.
var schemaKeys = []string{"schema_version", "kind", "time", "text", "rollout", "host", "engine", "prefix", "user",
	"workload", "slot", "container", "action", "from_image", "to_image", "spec", "operator", "outcome", "reason",
	"error", "duration_ms", "canary", "counts", "workloads", "missed"}

// A post is one JSON object with every key of the schema, as documented,
// and the figures the caller gave.
func TestPostCarriesTheDocumentedJSON(t *testing.T) {
	h := newHook(t, nil)
	rs := newReports()
	n := newNotifier(t, fast(rs), h.target())
	n.Send(sample())
	if r := rs.next(t); r.Result != Delivered || r.Tries != 1 || r.Status != 200 || r.Err != nil {
		t.Fatalf("report %+v, want delivered at the first try", r)
	}
	req := h.next(t)
	if ct := req.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if req.path != "/hooks/s3cret-path" {
		t.Errorf("posted to %q", req.path)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req.body, &m); err != nil {
		t.Fatalf("body is not one JSON object: %v\n%s", err, req.body)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := slices.Clone(schemaKeys)
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v\nwant %v", keys, want)
	}
	var got struct {
		SchemaVersion int    `json:"schema_version"`
		Kind          string `json:"kind"`
		Time          string `json:"time"`
		Text          string `json:"text"`
		Outcome       string `json:"outcome"`
		Slot          int    `json:"slot"`
		Counts        struct{ Steps, Ready, Total int }
		Workloads     []struct {
			Workload   string   `json:"workload"`
			FromImages []string `json:"from_images"`
			ToImage    string   `json:"to_image"`
		}
	}
	if err := json.Unmarshal(req.body, &got); err != nil {
		t.Fatal(err)
	}
	if got.SchemaVersion != SchemaVersion || got.Kind != "rollout_ended" || got.Time != "2026-05-01T10:00:00Z" ||
		got.Outcome != "converged" || got.Slot != -1 || got.Counts.Steps != 6 || got.Counts.Ready != 3 || got.Counts.Total != 3 {
		t.Errorf("event %+v", got)
	}
	if len(got.Workloads) != 1 || got.Workloads[0].Workload != "web" || !slices.Equal(got.Workloads[0].FromImages, []string{"web:v1"}) || got.Workloads[0].ToImage != "web:v2" {
		t.Errorf("workloads %+v", got.Workloads)
	}
	if !strings.Contains(got.Text, "rollout_ended on edge-1: converged") || !strings.Contains(got.Text, "web web:v1 → web:v2") {
		t.Errorf("text %q", got.Text)
	}
}

// A zero event still has every key: [] for no workloads, never null.
func TestEmptyListsAreEmptyNotNull(t *testing.T) {
	b, err := json.Marshal(Event{Kind: KindHold, Workloads: []Change{{Workload: "web"}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"from_images":[]`) {
		t.Errorf("no empty from_images: %s", b)
	}
	b, _ = json.Marshal(Event{Kind: KindHold})
	if !strings.Contains(string(b), `"workloads":[]`) {
		t.Errorf("no empty workloads: %s", b)
	}
}

// A server that does not answer within the bound is cut there, and the
// event is tried again.
func TestSlowPostIsCutAtTheBoundAndRetried(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	h := newHook(t, func(n int, r *http.Request) int {
		if n == 1 {
			select { // hangs past the bound
			case <-release:
			case <-r.Context().Done():
			}
		}
		return http.StatusOK
	})
	rs := newReports()
	o := fast(rs)
	o.Timeout = 200 * time.Millisecond
	n := newNotifier(t, o, h.target())
	began := time.Now()
	n.Send(sample())
	r := rs.next(t)
	took := time.Since(began)
	if r.Result != Delivered || r.Tries != 2 {
		t.Fatalf("report %+v, want delivered at the second try", r)
	}
	if took < o.Timeout || took > o.Timeout+2*time.Second {
		t.Errorf("delivered after %s: the first try should have been cut at %s", took, o.Timeout)
	}
	if h.count() != 2 {
		t.Errorf("%d requests, want 2", h.count())
	}
}

// A server that fails three times and then takes the event gets it once,
// at the fourth try, after backoffs that double.
func TestFailingServerGetsTheEventOnceAfterRetries(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	h := newHook(t, func(n int, _ *http.Request) int {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	rs := newReports()
	o := fast(rs)
	o.Backoff = 40 * time.Millisecond
	n := newNotifier(t, o, h.target())
	n.Send(sample())
	r := rs.next(t)
	if r.Result != Delivered || r.Tries != 4 || r.Status != http.StatusNoContent {
		t.Fatalf("report %+v, want delivered at the fourth try", r)
	}
	time.Sleep(50 * time.Millisecond) // nothing more comes
	if h.count() != 4 {
		t.Fatalf("%d requests, want 4", h.count())
	}
	mu.Lock()
	defer mu.Unlock()
	for i, want := range []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 160 * time.Millisecond} {
		if gap := at[i+1].Sub(at[i]); gap < want {
			t.Errorf("try %d came %s after the one before, want at least %s (backoff doubling)", i+2, gap, want)
		}
	}
	if len(rs.all) != 1 {
		t.Errorf("%d reports, want 1: %+v", len(rs.all), rs.all)
	}
}

// The tries are bounded: a server that always fails gets Tries posts, and
// the failure is reported with the last answer.
func TestTriesAreBoundedAndTheFailureReported(t *testing.T) {
	h := newHook(t, func(int, *http.Request) int { return http.StatusBadGateway })
	rs := newReports()
	o := fast(rs)
	o.Tries = 3
	n := newNotifier(t, o, h.target())
	n.Send(sample())
	r := rs.next(t)
	if r.Result != Failed || r.Tries != 3 || r.Status != http.StatusBadGateway || r.Err == nil {
		t.Fatalf("report %+v, want failed after 3 tries", r)
	}
	if !strings.Contains(r.Err.Error(), "502") {
		t.Errorf("error %q does not say the answer", r.Err)
	}
	time.Sleep(30 * time.Millisecond)
	if h.count() != 3 {
		t.Errorf("%d requests, want 3", h.count())
	}
}

// An answer a retry cannot change fails at once: a 4xx but 408 and 429,
// and a redirect, which is not followed.
func TestClientErrorsAreNotRetried(t *testing.T) {
	for _, tt := range []struct {
		status int
		tries  int
	}{
		{http.StatusBadRequest, 1}, {http.StatusUnauthorized, 1}, {http.StatusNotFound, 1}, {http.StatusFound, 1},
		{http.StatusTooManyRequests, 2}, {http.StatusRequestTimeout, 2}, {http.StatusInternalServerError, 2},
	} {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			h := newHook(t, func(int, *http.Request) int { return tt.status })
			rs := newReports()
			o := fast(rs)
			o.Tries = 2
			n := newNotifier(t, o, h.target())
			n.Send(sample())
			if r := rs.next(t); r.Result != Failed || r.Tries != tt.tries || r.Status != tt.status {
				t.Fatalf("report %+v, want failed after %d tries", r, tt.tries)
			}
		})
	}
}

// Send returns at once while the server hangs: posting happens beside the
// caller, however many events come.
func TestSendNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	h := newHook(t, func(_ int, r *http.Request) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK
	})
	defer close(release)
	rs := newReports()
	o := Options{Timeout: time.Minute, Queue: 4, Report: rs.add} // the bound is far away
	n := newNotifier(t, o, h.target())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			n.Send(sample())
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Send blocked while the server hangs")
	}
	select {
	case <-h.got: // the first event is in flight
	case <-time.After(waitLimit):
		t.Fatal("nothing posted")
	}
}

// A full queue drops its oldest event, says so in a report, and the next
// event the URL gets counts what it missed.
func TestFullQueueDropsTheOldestAndReportsIt(t *testing.T) {
	release := make(chan struct{})
	h := newHook(t, func(n int, r *http.Request) int {
		if n == 1 {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		return http.StatusOK
	})
	rs := newReports()
	o := fast(rs)
	o.Queue = 2
	o.Timeout = waitLimit
	n := newNotifier(t, o, h.target())
	ev := func(reason string) Event { e := sample(); e.Reason = reason; return e }
	n.Send(ev("e1"))
	h.next(t) // e1 is in flight, out of the queue
	n.Send(ev("e2"))
	n.Send(ev("e3"))
	n.Send(ev("e4")) // the queue holds e2, e3: e2 goes
	r := rs.next(t)
	if r.Result != Dropped || r.Event.Reason != "e2" || r.Err == nil {
		t.Fatalf("report %+v, want e2 dropped", r)
	}
	close(release)
	var delivered []string
	for range 3 {
		r := rs.next(t)
		if r.Result != Delivered {
			t.Fatalf("report %+v, want delivered", r)
		}
		delivered = append(delivered, r.Event.Reason)
	}
	if !slices.Equal(delivered, []string{"e1", "e3", "e4"}) {
		t.Errorf("delivered %v, want e1 e3 e4 in order", delivered)
	}
	var missed []int
	for range 2 { // e1's request was read above
		var e Event
		if err := json.Unmarshal(h.next(t).body, &e); err != nil {
			t.Fatal(err)
		}
		missed = append(missed, e.Missed)
	}
	if !slices.Equal(missed, []int{1, 0}) {
		t.Errorf("missed %v, want e3 to count the one dropped before it and e4 none", missed)
	}
}

// A URL that hangs holds up only its own events: another URL gets them.
func TestOneHangingURLDelaysNoOther(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	slow := newHook(t, func(_ int, r *http.Request) int {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		return http.StatusOK
	})
	good := newHook(t, nil)
	rs := newReports()
	o := fast(rs)
	o.Timeout = time.Minute
	n := newNotifier(t, o, slow.target(), good.target())
	for range 3 {
		n.Send(sample())
	}
	for range 3 {
		select {
		case <-good.got:
		case <-time.After(waitLimit):
			t.Fatal("the good URL did not get its events while the other hangs")
		}
	}
}

// No report, error or name shows a URL's path or query, or the token.
func TestNoSecretInReports(t *testing.T) {
	h := newHook(t, func(int, *http.Request) int { return http.StatusInternalServerError })
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("t0k3n-s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL + "/hooks/s3cret-path?key=k3y"
	closed.Close()
	rs := newReports()
	o := fast(rs)
	o.Tries = 1
	tgt := h.target()
	tgt.TokenFile = tokenFile
	n := newNotifier(t, o, tgt, Target{URL: closedURL})
	n.Send(sample())
	for range 2 {
		r := rs.next(t)
		if r.Result != Failed || r.Err == nil {
			t.Fatalf("report %+v, want failed", r)
		}
		for _, s := range []string{r.Err.Error(), r.Target} {
			for _, secret := range []string{"s3cret-path", "k3y", "t0k3n-s3cret"} {
				if strings.Contains(s, secret) {
					t.Errorf("%q shows %q", s, secret)
				}
			}
		}
		if !strings.HasSuffix(r.Target, "/…") || !strings.HasPrefix(r.Target, "http://127.0.0.1:") {
			t.Errorf("target named %q, want scheme://host/…", r.Target)
		}
	}
	if got := h.next(t).header.Get("Authorization"); got != "Bearer t0k3n-s3cret" {
		t.Errorf("Authorization %q", got)
	}
}

// The token file is read at each post: a rotated token is sent from the
// next post on; one that cannot be read fails the post, naming the file.
func TestTokenFileIsReadAtEachPost(t *testing.T) {
	h := newHook(t, nil)
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	rs := newReports()
	o := fast(rs)
	o.Tries = 1
	tgt := h.target()
	tgt.TokenFile = tokenFile
	n := newNotifier(t, o, tgt)
	n.Send(sample())
	rs.next(t)
	if err := os.WriteFile(tokenFile, []byte("two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Send(sample())
	rs.next(t)
	for i, want := range []string{"Bearer one", "Bearer two"} {
		if got := h.next(t).header.Get("Authorization"); got != want {
			t.Errorf("post %d: Authorization %q, want %q", i+1, got, want)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "absent"), fifo, dir} {
		tgt.TokenFile = bad
		r := Post(context.Background(), tgt, sample(), o)
		if r.Result != Failed || r.Err == nil || !strings.Contains(r.Err.Error(), bad) {
			t.Errorf("token file %s: report %+v, want failed naming the file", bad, r)
		}
	}
}

// Close sends what is queued; once its context ends it cuts what is in
// flight and reports the rest dropped, and returns with every report made.
func TestCloseFlushesThenCuts(t *testing.T) {
	h := newHook(t, nil)
	rs := newReports()
	n := New(fast(rs))
	n.SetTargets([]Target{h.target()})
	for range 3 {
		n.Send(sample())
	}
	n.Close(context.Background())
	if len(rs.all) != 3 || h.count() != 3 {
		t.Fatalf("after Close: %d reports, %d posts; want 3 delivered", len(rs.all), h.count())
	}

	hang := newHook(t, func(_ int, r *http.Request) int {
		select {
		case <-r.Context().Done():
		case <-time.After(waitLimit): // a broken Close still lets the test end
		}
		return 200
	})
	rs = newReports()
	o := fast(rs)
	o.Timeout = time.Minute
	n = New(o)
	n.SetTargets([]Target{hang.target()})
	for range 3 {
		n.Send(sample())
	}
	hang.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	closed := make(chan struct{})
	go func() { n.Close(ctx); close(closed) }()
	select {
	case <-closed:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return once its context ended")
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.all) != 3 {
		t.Fatalf("%d reports, want 3: %+v", len(rs.all), rs.all)
	}
	for _, r := range rs.all {
		if r.Result != Dropped || !strings.Contains(r.Err.Error(), "ended first") {
			t.Errorf("report %+v, want dropped as the session ended", r)
		}
	}
	n.Send(sample()) // after Close: nothing, and no panic
}

// A URL that leaves the list stops; later events go to the ones listed.
func TestSetTargetsFollowsTheList(t *testing.T) {
	a, b := newHook(t, nil), newHook(t, nil)
	rs := newReports()
	n := newNotifier(t, fast(rs), a.target())
	n.Send(sample())
	rs.next(t)
	n.SetTargets([]Target{b.target(), b.target()}) // listed twice: posted once
	n.Send(sample())
	rs.next(t)
	time.Sleep(30 * time.Millisecond)
	if a.count() != 1 || b.count() != 1 {
		t.Errorf("posts: a %d, b %d; want 1 each", a.count(), b.count())
	}
	if got := n.Targets(); len(got) != 1 || got[0] != b.target() {
		t.Errorf("targets %v", got)
	}
}

func TestTargetsOfReadsATokenFileBesideTheDesiredFile(t *testing.T) {
	d := &spec.Desired{Source: "/etc/rollcall/rollcall.yaml", Notify: []spec.Webhook{
		{URL: "https://a.example/h", TokenFile: "hook.token"},
		{URL: "https://b.example/h", TokenFile: "/run/secrets/b"},
		{URL: "https://c.example/h"},
	}}
	want := []Target{{"https://a.example/h", "/etc/rollcall/hook.token"}, {"https://b.example/h", "/run/secrets/b"}, {"https://c.example/h", ""}}
	if got := TargetsOf(d); !slices.Equal(got, want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	d.Source = "https://control.example/rollcall.yaml"
	if got := TargetsOf(d); got[0].TokenFile != "hook.token" {
		t.Errorf("URL source: token file %q, want it as written (the working directory)", got[0].TokenFile)
	}
	if TargetsOf(&spec.Desired{}) != nil || TargetsOf(nil) != nil {
		t.Error("targets without notify")
	}
}

func TestTargetName(t *testing.T) {
	for url, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/XXXX": "https://hooks.slack.com/…",
		"http://127.0.0.1:9000":                       "http://127.0.0.1:9000",
		"http://127.0.0.1:9000/":                      "http://127.0.0.1:9000",
		"https://a.example?key=1":                     "https://a.example/…",
	} {
		if got := (Target{URL: url}).Name(); got != want {
			t.Errorf("Name(%s) = %q, want %q", url, got, want)
		}
	}
}

// A canary notice's line says the share and the judgement in reconcile's
// words and figures (Finding, Percent, Ratio, Latency), as every view says
// them (issue 29).
func TestCanarySummary(t *testing.T) {
	e := Event{Kind: KindAbort, Workload: "web", Slot: 0, Reason: "failed", Canary: &journal.Canary{Step: 1, Of: 2, Share: 0.07,
		Verdict: reconcile.VerdictFail, Check: reconcile.CheckErrorRate, Measured: 0.1, Limit: 0.01,
		Canary: journal.Cohort{Requests: 100, Errors: 10, ErrorRate: 0.1, P95MS: 9.25}, Stable: journal.Cohort{Requests: 900, P95MS: 8}}}
	want := "rollcall abort: web/0 (step 1/2 at 7% failed; error rate 10% > max_error_rate 1%; canary 100 requests, 10% errors, p95 9.3ms; stable 900, 0%, p95 8ms)"
	if got := e.Summary(); got != want {
		t.Errorf("Summary() = %q\nwant        %q", got, want)
	}
	e.Canary.Check, e.Canary.Measured, e.Canary.Limit = reconcile.CheckP95Ratio, 3.1, 1.5
	if got := e.Summary(); !strings.Contains(got, "; p95 3.1× stable > max_p95_ratio 1.5×; ") {
		t.Errorf("Summary() = %q, want the p95 ratio", got)
	}
}

// TestCanarySummarySaysTheJudgement: the webhook's line holds the
// judgement's finding and each figure as reconcile formats them, for a
// judgement every view is tested with (issue 29).
func TestCanarySummarySaysTheJudgement(t *testing.T) {
	j := reconcile.Judgement{Verdict: reconcile.VerdictFail, Check: reconcile.CheckErrorRateIncrease, Measured: 5.0/120 - 3.0/2280, Limit: 0.02,
		Window: 18 * time.Second,
		Stable: reconcile.CohortFigures{Requests: 2280, Errors: 3, P95: 8 * time.Millisecond},
		Canary: reconcile.CohortFigures{Requests: 120, Errors: 5, P95: 9250 * time.Microsecond}}
	s := reconcile.Step{Action: reconcile.ActCanary, Workload: "web", Canary: &reconcile.CanaryStep{Index: 0, Of: 2, Share: 0.125}}
	got := Event{Kind: KindAbort, Workload: "web", Reason: "failed", Canary: journal.CanaryOf(s, j)}.Summary()
	for _, want := range []string{j.Finding(), reconcile.Percent(0.125), reconcile.Percent(j.Canary.ErrorRate()),
		reconcile.Percent(j.Stable.ErrorRate()), reconcile.Latency(j.Canary.P95), "4.17%", "0.13%", "9.3ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("Summary() = %q\nwant %q in it", got, want)
		}
	}
}
