package main

// The canary by traffic, on the real engine through real Caddy (issue 21,
// DESIGN §12): Caddy built with rollcall's modules (`dynamic rollcall` with
// its cohort split, the `rollcall_cohorts` handler that counts each
// cohort) in front of two demoapp replicas; the real rollcall binary rolls
// them with `apply` while clients send POSTs back to back through Caddy.
// Each answer names the version that gave it, so a failure is put down to
// the canary or to the stable cohort.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/proxy"
)

// canaryWorkload is the desired file of one phase: web, two slots, behind
// Caddy, drained, with the canary given (YAML flow text, "" for none).
type canaryWorkload struct {
	prefix, image, network, admin string
	version                       string
	args                          []string // demoapp's, after -listen, -version
	canary                        string
	notify                        string // a webhook's URL, or ""
}

func (w canaryWorkload) yaml() string {
	args := []string{`"-listen"`, `":8080"`, `"-version"`, `"` + w.version + `"`}
	for _, a := range w.args {
		args = append(args, `"`+a+`"`)
	}
	canary := ""
	if w.canary != "" {
		canary = ", canary: " + w.canary
	}
	notify := ""
	if w.notify != "" {
		notify = `notify: ["` + w.notify + `"]
`
	}
	return `prefix: ` + w.prefix + `
` + notify + `proxy: {caddy_admin: "` + w.admin + `"}
workloads:
  web:
    image: ` + w.image + `
    version: "` + w.version + `"
    replicas: 2
    command: [` + strings.Join(args, ", ") + `]
    networks: [` + w.network + `]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 1s, retries: 2, start_period: 1s}
    pre_stop: ["CMD", "/demoapp", "-drain"]
    stop_grace_period: 10s
    resources: {memory: 64M}
    update: {parallelism: 1, order: start-first, health_deadline: 30s, failure_action: rollback, drain: 5s` + canary + `}
`
}

// cohortTally is what the clients saw, by the version that answered.
type cohortTally struct {
	mu      sync.Mutex
	ok      map[string]int // answered 200, by version
	failed  map[string]int // answered by a version with another status
	other   int            // no answer from any version: Caddy's own error, a cut connection
	samples []string       // the first few failures not put down to a version
}

func (c *cohortTally) total() (n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.ok {
		n += k
	}
	for _, k := range c.failed {
		n += k
	}
	return n + c.other
}

func (c *cohortTally) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("answered %v, failed by version %v, failed with no version %d", c.ok, c.failed, c.other)
}

// sendPOSTs runs clients sending POSTs to url back to back until stop is
// closed or ctx ends; wait waits for them to end.
func sendPOSTs(ctx context.Context, url string, clients int, stop <-chan struct{}) (tally *cohortTally, wait func()) {
	t := &cohortTally{ok: map[string]int{}, failed: map[string]int{}}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &http.Client{Timeout: 15 * time.Second}
			for range maxPerClient {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				version, status, err := postVersion(ctx, c, url)
				if err != nil && ctx.Err() != nil {
					return // the phase's deadline, not the service
				}
				t.mu.Lock()
				switch {
				case err == nil && status == http.StatusOK:
					t.ok[version]++
				case err == nil && version != "":
					t.failed[version]++
				default:
					t.other++
					if len(t.samples) < 5 {
						t.samples = append(t.samples, fmt.Sprintf("%s: %d %v", time.Now().Format("15:04:05.000"), status, err))
					}
				}
				t.mu.Unlock()
			}
		}()
	}
	return t, wg.Wait
}

// postVersion sends one POST and returns the version that answered (from
// the body's first word, "v2 host…", whatever the status), and the status.
func postVersion(ctx context.Context, c *http.Client, url string) (string, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("ping"))
	if err != nil {
		return "", 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", resp.StatusCode, err
	}
	version, _, _ := strings.Cut(strings.TrimSpace(string(body)), " ")
	if !strings.HasPrefix(version, "v") {
		return "", resp.StatusCode, fmt.Errorf("%s: %q", resp.Status, strings.TrimSpace(string(body)))
	}
	return version, resp.StatusCode, nil
}

// splitWatch follows Caddy's split of web while a phase runs: when the
// canary's first error was counted, and when its share went to 0.
type splitWatch struct {
	mu        sync.Mutex
	shares    []float64 // each share seen, in order, once per change
	firstErr  time.Time
	zeroAt    time.Time
	lastShare float64
}

func watchSplit(ctx context.Context, admin, prefix string, stop <-chan struct{}) *splitWatch {
	w := &splitWatch{lastShare: -1}
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			all, err := proxy.Cohorts(ctx, nil, admin)
			if err != nil {
				continue
			}
			now := time.Now()
			for _, c := range all {
				if c.Prefix != prefix || c.Workload != "web" || c.Split == nil {
					continue
				}
				w.mu.Lock()
				if c.Split.Share != w.lastShare {
					w.shares = append(w.shares, c.Split.Share)
					// A share of 0 before any step's is the canary's split
					// set before its create (issue 26 row 1), not its end.
					if c.Split.Share == 0 && w.lastShare > 0 && w.zeroAt.IsZero() {
						w.zeroAt = now
					}
					w.lastShare = c.Split.Share
				}
				if c.Canary.Errors > 0 && w.firstErr.IsZero() {
					w.firstErr = now
				}
				w.mu.Unlock()
			}
		}
	}()
	return w
}

// TestRealEngineCanaryThroughCaddy: see the file comment. Phases, in order,
// on one Caddy: v1 with no canary; a v2 that answers 500 to one request in
// ten, caught at its first step; a v3 slow on p95, caught on latency; a v4
// whose canary sees no traffic, which holds; a good v5, promoted through
// both steps and rolled; rollcall rollback, back to v1; retry, which lifts
// the pin; then the control: the 500 version rolled with no canary, whose
// failures the clients see.
func TestRealEngineCanaryThroughCaddy(t *testing.T) {
	dockertest.Engine(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	caddy := caddyImage(t, ctx)
	prefix := dockertest.Prefix(t)
	image, _ := dockertest.DemoappImage(t, "v1")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	network, url, admin := startCaddy(t, ctx, caddy, prefix)

	file := filepath.Join(dir, "rollcall.yaml")
	journalPath := filepath.Join(dir, "journal.jsonl")
	base := canaryWorkload{prefix: prefix, image: image, network: network, admin: admin, args: []string{"-latency", demoLatency}}
	write := func(w canaryWorkload) {
		t.Helper()
		if err := os.WriteFile(file, []byte(w.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) binResult {
		t.Helper()
		return runBinary(t, ctx, bin, append([]string{"--journal", journalPath}, args...)...)
	}
	apply := func(w canaryWorkload, extra ...string) binResult {
		t.Helper()
		write(w)
		return run(append([]string{"apply", "--yes", "--timeout", "3m", "-f", file}, extra...)...)
	}
	// during runs fn with clients sending POSTs, and the split watched.
	during := func(clients int, fn func()) (*cohortTally, *splitWatch) {
		t.Helper()
		stop := make(chan struct{})
		pctx, pcancel := context.WithTimeout(ctx, proxyPhaseDeadline)
		defer pcancel()
		tally, wait := sendPOSTs(pctx, url, clients, stop)
		watch := watchSplit(pctx, admin, prefix, stop)
		time.Sleep(300 * time.Millisecond)
		fn()
		time.Sleep(time.Second)
		close(stop)
		wait()
		return tally, watch
	}
	lastCanaryEntry := func() *journal.Entry {
		t.Helper()
		es, err := journal.Read(journalPath, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(es) - 1; i >= 0; i-- {
			if es[i].Action == "canary" && es[i].Canary != nil && es[i].Result != journal.ResultInterrupted {
				return &es[i]
			}
		}
		return nil
	}
	noStableFailures := func(phase, canaryVersion string, tally *cohortTally) {
		t.Helper()
		tally.mu.Lock()
		defer tally.mu.Unlock()
		for v, n := range tally.failed {
			if v != canaryVersion && n > 0 {
				t.Errorf("%s: %d requests failed in the stable cohort (%s); want 0", phase, n, v)
			}
		}
		if tally.other > 0 {
			t.Errorf("%s: %d requests failed with no version answering (%q); want 0", phase, tally.other, tally.samples)
		}
	}
	answering := func(phase, want string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			v, status, err := postVersion(ctx, http.DefaultClient, url)
			if err == nil && status == http.StatusOK && v == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %s %d %v through Caddy, want %s answering", phase, v, status, err, want)
			}
		}
	}

	v1 := base
	v1.version = "v1"
	if res := apply(v1); res.code != exitOK {
		t.Fatalf("first apply: exit %d\n%s", res.code, res.stderr)
	}
	answering("after the first apply", "v1")

	// A canary answering 500 to one request in ten: caught at its first step.
	const analysis = "{interval: 2s, max_error_rate: 2%, max_p95_ratio: 2, min_requests: 30}"
	bad := base
	bad.version, bad.args = "v2", append(bad.args, "-fail-every", "10")
	bad.canary = "{steps: [{share: 20%, for: 20s}, {share: 50%, for: 20s}], analysis: " + analysis + "}"
	var res binResult
	tally, watch := during(proxyClients, func() { res = apply(bad) })
	t.Logf("500 canary: apply exit %d; clients %s; shares %v", res.code, tally, watch.shares)
	if res.code != exitFailed {
		t.Errorf("apply of a canary that fails: exit %d, want %d\n%s", res.code, exitFailed, res.stderr)
	}
	noStableFailures("500 canary", "v2", tally)
	if e := lastCanaryEntry(); e == nil || e.Result != journal.ResultFailed || e.Canary.Check != "max_error_rate" || e.Canary.Step != 1 {
		t.Errorf("journal: last canary line %+v, want step 1 failed on max_error_rate", e)
	} else {
		t.Logf("500 canary: journaled error rate %.1f%% (limit %.1f%%) over %d canary requests, stable %d at %.1f%%",
			100*e.Canary.Measured, 100*e.Canary.Limit, e.Canary.Canary.Requests, e.Canary.Stable.Requests, 100*e.Canary.Stable.ErrorRate)
	}
	if watch.zeroAt.IsZero() || watch.firstErr.IsZero() {
		t.Errorf("500 canary: the split was not seen going to 0 after an error (shares %v)", watch.shares)
	} else {
		t.Logf("500 canary: from the first canary error counted to a share of 0: %s (interval 2s)", watch.zeroAt.Sub(watch.firstErr).Round(10*time.Millisecond))
	}
	answering("after the failed canary", "v1")
	if r := run("plan", "-f", file); r.code != exitPending || !strings.Contains(r.stdout+r.stderr, "hold") {
		t.Errorf("plan after the failed canary: exit %d, want %d with the hold shown\n%s%s", r.code, exitPending, r.stdout, r.stderr)
	}

	// A slow canary: p95 forty times the stable cohort's at rest. It must
	// stay above max_p95_ratio (2) on a loaded machine too, where the
	// scheduler adds to every answer: beside a second suite (load average
	// 20) the stable cohort's p95 rose from 5 to 34 ms, and a 25 ms canary
	// measured 49 ms, a ratio of 1.44 that passed.
	slow := base
	slow.version, slow.args = "v3", []string{"-latency", "200ms"}
	slow.canary = "{steps: [{share: 20%, for: 20s}], analysis: " + analysis + "}"
	tally, _ = during(proxyClients, func() { res = apply(slow) })
	t.Logf("slow canary: apply exit %d; clients %s", res.code, tally)
	if res.code != exitFailed {
		t.Errorf("apply of a slow canary: exit %d, want %d\n%s", res.code, exitFailed, res.stderr)
	}
	noStableFailures("slow canary", "v3", tally)
	if e := lastCanaryEntry(); e == nil || e.Canary.Check != "max_p95_ratio" {
		t.Errorf("journal: last canary line %+v, want a failure on max_p95_ratio", e)
	} else {
		t.Logf("slow canary: journaled p95 %.1fms against stable %.1fms: ratio %.2f (limit %.2f)", e.Canary.Canary.P95MS, e.Canary.Stable.P95MS, e.Canary.Measured, e.Canary.Limit)
	}
	answering("after the slow canary", "v1")

	// A canary with no traffic holds, and says so.
	quiet := base
	quiet.version = "v4"
	quiet.canary = "{steps: [{share: 20%, for: 3s}], analysis: " + analysis + "}"
	write(quiet)
	res = run("apply", "--yes", "--timeout", "20s", "-f", file)
	t.Logf("quiet canary: apply exit %d", res.code)
	if res.code == exitOK || !strings.Contains(res.stderr, "too little traffic") {
		t.Errorf("apply of a canary with no traffic: exit %d, want a hold that says too little traffic\n%s", res.code, res.stderr)
	}
	if e := lastCanaryEntry(); e == nil || e.Canary.Verdict != "insufficient" {
		t.Errorf("journal: last canary line %+v, want the step ended with too little traffic", e)
	}
	// The session ended with the canary held: its share is 0, so nobody's
	// traffic goes to a canary nobody measures.
	if all, err := proxy.Cohorts(ctx, nil, admin); err != nil {
		t.Errorf("cohorts after the held canary: %v", err)
	} else {
		for _, c := range all {
			if c.Prefix == prefix && c.Workload == "web" && (c.Split == nil || c.Split.Share != 0) {
				t.Errorf("after apply ended with the canary held: split %+v, want a share of 0", c.Split)
			}
		}
	}

	// A good canary is promoted through both steps, then rolled, with a
	// webhook that takes every post and never answers: posting never
	// holds up a step.
	var hookMu sync.Mutex
	var hooked []string
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e struct{ Kind string }
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&e)
		hookMu.Lock()
		hooked = append(hooked, e.Kind)
		hookMu.Unlock()
		<-r.Context().Done() // hangs until rollcall gives up on it
	}))
	defer hook.Close()
	good := base
	good.version, good.notify = "v5", hook.URL
	good.canary = "{steps: [{share: 20%, for: 5s}, {share: 50%, for: 5s}], analysis: " + analysis + "}"
	tally, watch = during(proxyClients, func() { res = apply(good) })
	t.Logf("good canary: apply exit %d; clients %s; shares %v", res.code, tally, watch.shares)
	if res.code != exitOK {
		t.Errorf("apply of a good canary: exit %d, want 0\n%s", res.code, res.stderr)
	}
	noStableFailures("good canary", "", tally)
	if n := tally.total(); n < minPerScenario {
		t.Errorf("good canary: %d requests, want at least %d", n, minPerScenario)
	}
	shares := watch.shares
	for len(shares) > 0 && shares[0] == 0 {
		shares = shares[1:] // the held canary's split, zeroed as its session ended
	}
	if len(shares) < 2 || shares[0] != 0.2 || shares[1] != 0.5 {
		t.Errorf("good canary: shares seen %v, want 20%% then 50%%", watch.shares)
	}
	answering("after the good canary", "v5")
	hookMu.Lock()
	posted := strings.Join(hooked, " ")
	hookMu.Unlock()
	// Posts to one URL go in order, each bounded and retried: the hanging
	// webhook holds its own queue at the first post, and nothing else.
	t.Logf("good canary: the hanging webhook got %q while the rollout ran to its end", posted)
	if posted == "" {
		t.Errorf("the hanging webhook got nothing: the test cannot tell whether posting holds a step up")
	}
	if es, err := journal.Read(journalPath, 0); err == nil {
		for _, e := range es {
			if e.Action == "canary" && e.Canary != nil && e.Result == journal.ResultOK {
				t.Logf("good canary: step %d/%d at %.0f%% took %d ms for a 5 s step, the webhook hanging", e.Canary.Step, e.Canary.Of, 100*e.Canary.Share, e.DurationMS)
			}
		}
	}

	// rollcall rollback: back to v1, with no failure; retry lifts the pin.
	if r := run("rollback", "web", "-f", file); r.code != exitOK {
		t.Fatalf("rollback: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	tally, _ = during(proxyClients, func() { res = apply(good) })
	t.Logf("rollback: apply exit %d; clients %s", res.code, tally)
	// The pin rolled in, as asked: apply succeeds and names it (issue 29).
	if out := res.stdout + res.stderr; res.code != exitOK || !strings.Contains(out, "web pinned to revision 1, as asked") || !strings.Contains(out, "drained: released") {
		t.Errorf("apply of the pin: exit %d, want %d: the pin rolled in, drained, as asked\n%s%s", res.code, exitOK, res.stdout, res.stderr)
	}
	noStableFailures("rollback", "", tally)
	answering("after the rollback", "v1")
	if r := run("plan", "-f", file); r.code != exitPending || !strings.Contains(r.stdout+r.stderr, "pin") {
		t.Errorf("plan while pinned: exit %d, want %d with the pin shown\n%s%s", r.code, exitPending, r.stdout, r.stderr)
	}
	if r := run("retry", "web", "-f", file); r.code != exitOK {
		t.Errorf("retry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := run("plan", "-f", file); strings.Contains(r.stdout, "pinned") {
		t.Errorf("plan after retry still shows the pin:\n%s", r.stdout)
	}

	// The control: the 500 version rolled with no canary; clients see it.
	control := bad
	control.version, control.canary = "v6", ""
	tally, _ = during(proxyClients, func() { res = apply(control) })
	t.Logf("control (the 500 version, no canary): apply exit %d; clients %s", res.code, tally)
	tally.mu.Lock()
	failed := tally.failed["v6"]
	tally.mu.Unlock()
	if failed == 0 {
		t.Errorf("control: no request failed with the 500 version rolled in and no canary; the test cannot tell (%s)", tally)
	}
	out, _ := json.Marshal(map[string]any{"took": time.Since(began).Round(time.Second).String()})
	t.Logf("the test %s", out)
}
