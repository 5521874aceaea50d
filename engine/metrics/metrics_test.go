package metrics

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

func step(a reconcile.Action, workload string) reconcile.Step {
	return reconcile.Step{Action: a, Workload: workload, Slot: 0, Container: workload + "-0-abcd"}
}

func done(a reconcile.Action, workload string, d time.Duration) session.Fact {
	return session.Fact{Kind: session.FactStepDone, Step: step(a, workload), Duration: d}
}

func failed(a reconcile.Action, workload string, d time.Duration) session.Fact {
	return session.Fact{Kind: session.FactStepFailed, Step: step(a, workload), Duration: d, Err: errors.New("engine said no")}
}

// compare checks the exposition of the named metrics against want (the
// text format, HELP and TYPE lines included).
func compare(t *testing.T, m *Metrics, want string, names ...string) {
	t.Helper()
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

const stepsHead = `# HELP rollcall_steps_total Steps that ended, by action and outcome (ok, failed).
# TYPE rollcall_steps_total counter
`

const restartsHead = `# HELP rollcall_restarts_total Crash restarts rollcall did, by workload.
# TYPE rollcall_restarts_total counter
`

// TestStepsCountedByActionAndOutcome: every step that ended counts once,
// by its action and whether it failed; a step's start, a wait and a
// drain count nothing; a crash restart done counts for its workload (a
// failed one does not); the series of the engine's actions are there at 0
// before any step.
func TestStepsCountedByActionAndOutcome(t *testing.T) {
	zero := stepsHead + `rollcall_steps_total{action="restart",outcome="failed"} 0
rollcall_steps_total{action="restart",outcome="ok"} 0
rollcall_steps_total{action="roll",outcome="failed"} 0
rollcall_steps_total{action="roll",outcome="ok"} 0
rollcall_steps_total{action="start",outcome="failed"} 0
rollcall_steps_total{action="start",outcome="ok"} 0
rollcall_steps_total{action="stop",outcome="failed"} 0
rollcall_steps_total{action="stop",outcome="ok"} 0
rollcall_steps_total{action="update",outcome="failed"} 0
rollcall_steps_total{action="update",outcome="ok"} 0
`
	cases := []struct {
		name                string
		events              []session.Fact
		wantSteps, restarts string
	}{
		{name: "nothing yet", wantSteps: zero},
		{
			name: "a roll: two starts, a failed start tried again, two rolls",
			events: []session.Fact{
				{Kind: session.FactStepStarted, Step: step(reconcile.ActStart, "web")},
				done(reconcile.ActStart, "web", time.Second),
				failed(reconcile.ActStart, "web", 2*time.Second),
				done(reconcile.ActStart, "web", time.Second),
				{Kind: session.FactWaiting, Step: step(reconcile.ActWait, "web")},
				{Kind: session.FactDraining, Step: step(reconcile.ActRoll, "web"), Drain: &reconcile.DrainProgress{}},
				{Kind: session.FactDrained, Step: step(reconcile.ActRoll, "web"), Drain: &reconcile.DrainProgress{Ended: "idle"}},
				done(reconcile.ActRoll, "web", 3*time.Second),
				done(reconcile.ActRoll, "web", 3*time.Second),
			},
			wantSteps: strings.NewReplacer(
				`{action="start",outcome="failed"} 0`, `{action="start",outcome="failed"} 1`,
				`{action="start",outcome="ok"} 0`, `{action="start",outcome="ok"} 2`,
				`{action="roll",outcome="ok"} 0`, `{action="roll",outcome="ok"} 2`,
			).Replace(zero),
		},
		{
			name: "crash restarts: done ones count by workload, a failed one does not",
			events: []session.Fact{
				done(reconcile.ActRestart, "web", time.Second),
				done(reconcile.ActRestart, "web", time.Second),
				done(reconcile.ActRestart, "worker", time.Second),
				failed(reconcile.ActRestart, "worker", time.Second),
			},
			wantSteps: strings.NewReplacer(
				`{action="restart",outcome="failed"} 0`, `{action="restart",outcome="failed"} 1`,
				`{action="restart",outcome="ok"} 0`, `{action="restart",outcome="ok"} 3`,
			).Replace(zero),
			restarts: restartsHead + `rollcall_restarts_total{workload="web"} 2
rollcall_restarts_total{workload="worker"} 1
`,
		},
		{
			name:   "an action of its own (a canary step) gets its series when it ends",
			events: []session.Fact{done(reconcile.ActCanary, "web", time.Minute)},
			wantSteps: strings.Replace(zero, `rollcall_steps_total{action="restart",outcome="failed"} 0`,
				`rollcall_steps_total{action="canary",outcome="ok"} 1
rollcall_steps_total{action="restart",outcome="failed"} 0`, 1),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := New(Options{})
			for _, e := range c.events {
				m.Fact(e)
			}
			compare(t, m, c.wantSteps, "rollcall_steps_total")
			compare(t, m, c.restarts, "rollcall_restarts_total")
		})
	}
}

// TestStepDurations: each step that ended is observed once in its
// action's histogram, with its duration.
func TestStepDurations(t *testing.T) {
	m := New(Options{})
	m.Fact(done(reconcile.ActStart, "web", 1500*time.Millisecond))
	m.Fact(failed(reconcile.ActStart, "web", 500*time.Millisecond))
	m.Fact(done(reconcile.ActRoll, "web", 4*time.Second))
	m.Fact(session.Fact{Kind: session.FactStepStarted, Step: step(reconcile.ActStart, "web")})
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]float64{}
	for _, f := range fams {
		if f.GetName() != "rollcall_step_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			h := s.GetHistogram()
			got[s.GetLabel()[0].GetValue()] = [2]float64{float64(h.GetSampleCount()), h.GetSampleSum()}
		}
	}
	want := map[string][2]float64{"start": {2, 2}, "roll": {1, 4}}
	if len(got) != len(want) || got["start"] != want["start"] || got["roll"] != want["roll"] {
		t.Errorf("step durations (count, sum) by action: %v, want %v", got, want)
	}
}

// TestNoticesCounted: the session's notices count rollouts begun and
// ended (by outcome), holds and rollbacks (by workload) and the engine
// going away; the kinds counted elsewhere or not at all (a failed step is
// a step, a pin is its hold, the engine's return is no disconnect) leave
// every counter as it was.
func TestNoticesCounted(t *testing.T) {
	m := New(Options{})
	for _, n := range []notify.Event{
		{Kind: notify.KindRolloutStarted},
		{Kind: notify.KindStepFailed, Workload: "web", Action: "start"},
		{Kind: notify.KindHealthFailed, Workload: "web", Action: "rollback"},
		{Kind: notify.KindRollback, Workload: "web"},
		{Kind: notify.KindHold, Workload: "web", Spec: "abc"},
		{Kind: notify.KindRolloutEnded, Outcome: notify.OutcomeHeld},
		{Kind: notify.KindRolloutStarted},
		{Kind: notify.KindEngineLost},
		{Kind: notify.KindEngineBack},
		{Kind: notify.KindRolloutEnded, Outcome: notify.OutcomeSuperseded},
		{Kind: notify.KindRolloutStarted},
		{Kind: notify.KindPin, Workload: "api"},
		{Kind: notify.KindHold, Workload: "api", Spec: "def"},
		{Kind: notify.KindRolloutEnded, Outcome: notify.OutcomeConverged},
		{Kind: notify.KindEngineLost},
	} {
		m.Notice(n)
	}
	compare(t, m, `# HELP rollcall_rollouts_started_total Rollouts begun: the first step towards a desired state not yet reached.
# TYPE rollcall_rollouts_started_total counter
rollcall_rollouts_started_total 3
# HELP rollcall_rollouts_total Rollouts that ended, by outcome (converged, held, failed, superseded, stopped).
# TYPE rollcall_rollouts_total counter
rollcall_rollouts_total{outcome="converged"} 1
rollcall_rollouts_total{outcome="failed"} 0
rollcall_rollouts_total{outcome="held"} 1
rollcall_rollouts_total{outcome="stopped"} 0
rollcall_rollouts_total{outcome="superseded"} 1
# HELP rollcall_holds_total Specs put on hold while the agent ran (by failure_action rollback, an operator's rollback or pin, another process), by workload.
# TYPE rollcall_holds_total counter
rollcall_holds_total{workload="api"} 1
rollcall_holds_total{workload="web"} 1
# HELP rollcall_rollbacks_total Rollbacks: failure_action rollback's stop done, or an operator's rollback begun, by workload.
# TYPE rollcall_rollbacks_total counter
rollcall_rollbacks_total{workload="web"} 1
# HELP rollcall_engine_disconnects_total Times the engine stopped answering after it had answered.
# TYPE rollcall_engine_disconnects_total counter
rollcall_engine_disconnects_total 2
`, "rollcall_rollouts_started_total", "rollcall_rollouts_total", "rollcall_holds_total", "rollcall_rollbacks_total", "rollcall_engine_disconnects_total")
	compare(t, m, stepsHead+`rollcall_steps_total{action="restart",outcome="failed"} 0
rollcall_steps_total{action="restart",outcome="ok"} 0
rollcall_steps_total{action="roll",outcome="failed"} 0
rollcall_steps_total{action="roll",outcome="ok"} 0
rollcall_steps_total{action="start",outcome="failed"} 0
rollcall_steps_total{action="start",outcome="ok"} 0
rollcall_steps_total{action="stop",outcome="failed"} 0
rollcall_steps_total{action="stop",outcome="ok"} 0
rollcall_steps_total{action="update",outcome="failed"} 0
rollcall_steps_total{action="update",outcome="ok"} 0
`, "rollcall_steps_total")
}

const canaryHead = `# HELP rollcall_canary_errors Failed requests (5xx, failed dials) of a cohort over the canary step's window so far.
# TYPE rollcall_canary_errors gauge
%errors%# HELP rollcall_canary_latency_p50_seconds A cohort's median latency over the canary step's window so far.
# TYPE rollcall_canary_latency_p50_seconds gauge
%p50%# HELP rollcall_canary_latency_p95_seconds A cohort's 95th percentile latency over the canary step's window so far.
# TYPE rollcall_canary_latency_p95_seconds gauge
%p95%# HELP rollcall_canary_requests Requests a cohort answered over the canary step's window so far.
# TYPE rollcall_canary_requests gauge
%requests%`

var canaryNames = []string{"rollcall_canary_requests", "rollcall_canary_errors", "rollcall_canary_latency_p50_seconds", "rollcall_canary_latency_p95_seconds"}

// TestCanaryFigures: a cohort's figures are those of its last window (a
// later call replaces them), by workload and cohort; a canary that ended
// takes its workload's figures away and leaves the others'.
func TestCanaryFigures(t *testing.T) {
	m := New(Options{})
	m.Canary("web", "canary", 40, 9, 10*time.Millisecond, 90*time.Millisecond)
	m.Canary("web", "canary", 120, 12, 12*time.Millisecond, 250*time.Millisecond)
	m.Canary("web", "stable", 1080, 0, 8*time.Millisecond, 20*time.Millisecond)
	m.Canary("api", "canary", 5, 0, 3*time.Millisecond, 7*time.Millisecond)
	compare(t, m, strings.NewReplacer(
		"%requests%", `rollcall_canary_requests{cohort="canary",workload="api"} 5
rollcall_canary_requests{cohort="canary",workload="web"} 120
rollcall_canary_requests{cohort="stable",workload="web"} 1080
`,
		"%errors%", `rollcall_canary_errors{cohort="canary",workload="api"} 0
rollcall_canary_errors{cohort="canary",workload="web"} 12
rollcall_canary_errors{cohort="stable",workload="web"} 0
`,
		"%p50%", `rollcall_canary_latency_p50_seconds{cohort="canary",workload="api"} 0.003
rollcall_canary_latency_p50_seconds{cohort="canary",workload="web"} 0.012
rollcall_canary_latency_p50_seconds{cohort="stable",workload="web"} 0.008
`,
		"%p95%", `rollcall_canary_latency_p95_seconds{cohort="canary",workload="api"} 0.007
rollcall_canary_latency_p95_seconds{cohort="canary",workload="web"} 0.25
rollcall_canary_latency_p95_seconds{cohort="stable",workload="web"} 0.02
`).Replace(canaryHead), canaryNames...)

	m.CanaryEnded("web")
	compare(t, m, strings.NewReplacer(
		"%requests%", `rollcall_canary_requests{cohort="canary",workload="api"} 5
`,
		"%errors%", `rollcall_canary_errors{cohort="canary",workload="api"} 0
`,
		"%p50%", `rollcall_canary_latency_p50_seconds{cohort="canary",workload="api"} 0.003
`,
		"%p95%", `rollcall_canary_latency_p95_seconds{cohort="canary",workload="api"} 0.007
`).Replace(canaryHead), canaryNames...)
}

// TestHostsLabelEverySeries: with Options.Hosts, one registry holds every
// host's series, each with host=NAME, fed through Host(name); a host's
// series exist at 0 from Host on, and a canary that ended on one host
// leaves the same workload's figures of another.
func TestHostsLabelEverySeries(t *testing.T) {
	m := New(Options{Hosts: true})
	a, b := m.Host("a"), m.Host("b")
	a.Fact(done(reconcile.ActStart, "web", time.Second))
	b.Fact(done(reconcile.ActStart, "web", time.Second))
	b.Fact(done(reconcile.ActStart, "web", time.Second))
	b.Notice(notify.Event{Kind: notify.KindEngineLost, Host: "b"})
	a.Canary("web", "canary", 10, 1, time.Millisecond, 2*time.Millisecond)
	b.Canary("web", "canary", 20, 2, time.Millisecond, 2*time.Millisecond)
	a.CanaryEnded("web")
	if got := testutil.ToFloat64(m.c.steps.WithLabelValues("a", "start", OutcomeOK)); got != 1 {
		t.Errorf("host a starts %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.c.steps.WithLabelValues("b", "start", OutcomeOK)); got != 2 {
		t.Errorf("host b starts %v, want 2", got)
	}
	compare(t, m, `# HELP rollcall_engine_disconnects_total Times the engine stopped answering after it had answered.
# TYPE rollcall_engine_disconnects_total counter
rollcall_engine_disconnects_total{host="a"} 0
rollcall_engine_disconnects_total{host="b"} 1
# HELP rollcall_canary_requests Requests a cohort answered over the canary step's window so far.
# TYPE rollcall_canary_requests gauge
rollcall_canary_requests{cohort="canary",host="b",workload="web"} 20
`, "rollcall_engine_disconnects_total", "rollcall_canary_requests")
	// 2 hosts × 5 actions × 2 outcomes: no series of a host "" (New's own
	// Metrics is not fed with hosts).
	if n := testutil.CollectAndCount(m.c.steps); n != 20 {
		t.Errorf("%d step series, want 20 (hosts a and b only)", n)
	}
}

// TestMetricsFollowTheConventions: promlint finds nothing to say of the
// names, types and help of every series (once each has a value).
func TestMetricsFollowTheConventions(t *testing.T) {
	m := New(Options{})
	m.Fact(done(reconcile.ActRestart, "web", time.Second))
	m.Notice(notify.Event{Kind: notify.KindHold, Workload: "web"})
	m.Notice(notify.Event{Kind: notify.KindRollback, Workload: "web"})
	m.Canary("web", "canary", 1, 0, time.Millisecond, time.Millisecond)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

// TestTwoMetricsDoNotClash: each Metrics has a registry of its own (not
// the global one), so two in one process count apart.
func TestTwoMetricsDoNotClash(t *testing.T) {
	one, two := New(Options{}), New(Options{})
	one.Fact(done(reconcile.ActStart, "web", time.Second))
	if got := testutil.ToFloat64(two.c.steps.WithLabelValues("start", OutcomeOK)); got != 0 {
		t.Errorf("the second Metrics counted the first's step: %v", got)
	}
	if got := testutil.ToFloat64(one.c.steps.WithLabelValues("start", OutcomeOK)); got != 1 {
		t.Errorf("starts %v, want 1", got)
	}
}

// TestListenServesMetrics: Listen on port 0 serves the registry at
// /metrics on the address it says, 404 elsewhere; Close stops listening.
func TestListenServesMetrics(t *testing.T) {
	m := New(Options{})
	m.Fact(done(reconcile.ActStart, "web", time.Second))
	s, err := Listen("127.0.0.1:0", m)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + s.Addr().String()
	if err := testutil.ScrapeAndCompare(url+Path, strings.NewReader(stepsHead+`rollcall_steps_total{action="restart",outcome="failed"} 0
rollcall_steps_total{action="restart",outcome="ok"} 0
rollcall_steps_total{action="roll",outcome="failed"} 0
rollcall_steps_total{action="roll",outcome="ok"} 0
rollcall_steps_total{action="start",outcome="failed"} 0
rollcall_steps_total{action="start",outcome="ok"} 1
rollcall_steps_total{action="stop",outcome="failed"} 0
rollcall_steps_total{action="stop",outcome="ok"} 0
rollcall_steps_total{action="update",outcome="failed"} 0
rollcall_steps_total{action="update",outcome="ok"} 0
`), "rollcall_steps_total"); err != nil {
		t.Error(err)
	}
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / answered %d, want 404", resp.StatusCode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", s.Addr().String()); err == nil {
		_ = c.Close()
		t.Error("still listening after Close")
	}
}

// TestListenRefusesABadAddress: an address without a port, or one taken,
// is an error that says where.
func TestListenRefusesABadAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	for _, addr := range []string{"127.0.0.1", taken.Addr().String()} {
		s, err := Listen(addr, New(Options{}))
		if err == nil {
			_ = s.Close()
			t.Errorf("Listen(%q) served", addr)
			continue
		}
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "listen" {
			t.Errorf("Listen(%q): %v, want a listen error", addr, err)
		}
	}
}

// TestAClientThatSendsNoHeaderIsCutOff: the server bounds how long a
// request's header may take (ReadHeaderTimeout), so a connection that
// never sends one does not hold a goroutine forever.
func TestAClientThatSendsNoHeaderIsCutOff(t *testing.T) {
	was := readHeaderTimeout
	readHeaderTimeout = 50 * time.Millisecond
	defer func() { readHeaderTimeout = was }()
	s, err := Listen("127.0.0.1:0", New(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	c, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	_, _ = c.Write([]byte("GET /metrics HTTP/1.1\r\n")) // and never the rest
	// The guard, well short of the whole request's bound (readTimeout):
	// without the header's own bound the read waits past it and fails.
	_ = c.SetReadDeadline(time.Now().Add(readTimeout / 2))
	line, err := bufio.NewReader(c).ReadString('\n')
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the server never cut off a client that sent no header")
	}
	// The server closes the connection, after a 408 or without a word.
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("read: %v", err)
	}
	if line != "" && !strings.Contains(line, "408") {
		t.Errorf("the server answered %q, want 408 or nothing", line)
	}
}

// The session's canary readings (EventCanary) set the cohorts' figures,
// each in its own gauge; an abort or the last step passed takes them away.
func TestCanaryReadingsFeedTheFigures(t *testing.T) {
	m := New(Options{})
	v := &session.CanaryView{Workload: "web", Judgement: reconcile.Judgement{
		Canary: reconcile.CohortFigures{Requests: 120, Errors: 12, P50: 12 * time.Millisecond, P95: 250 * time.Millisecond},
		Stable: reconcile.CohortFigures{Requests: 1080, Errors: 1, P50: 8 * time.Millisecond, P95: 20 * time.Millisecond},
	}}
	m.Fact(session.Fact{Kind: session.FactCanary, Canary: v})
	compare(t, m, strings.NewReplacer(
		"%requests%", `rollcall_canary_requests{cohort="canary",workload="web"} 120
rollcall_canary_requests{cohort="stable",workload="web"} 1080
`,
		"%errors%", `rollcall_canary_errors{cohort="canary",workload="web"} 12
rollcall_canary_errors{cohort="stable",workload="web"} 1
`,
		"%p50%", `rollcall_canary_latency_p50_seconds{cohort="canary",workload="web"} 0.012
rollcall_canary_latency_p50_seconds{cohort="stable",workload="web"} 0.008
`,
		"%p95%", `rollcall_canary_latency_p95_seconds{cohort="canary",workload="web"} 0.25
rollcall_canary_latency_p95_seconds{cohort="stable",workload="web"} 0.02
`).Replace(canaryHead), canaryNames...)

	// A step passed that is not the last: the figures stay.
	m.Notice(notify.Event{Kind: notify.KindCanaryStep, Workload: "web", Canary: &journal.Canary{Step: 1, Of: 2, Verdict: "pass"}})
	if n := testutil.CollectAndCount(m.Registry(), "rollcall_canary_requests"); n != 2 {
		t.Errorf("after step 1 of 2 passed: %d canary request series, want 2", n)
	}
	for _, end := range []notify.Event{
		{Kind: notify.KindCanaryStep, Workload: "web", Canary: &journal.Canary{Step: 2, Of: 2, Verdict: "pass"}},
		{Kind: notify.KindAbort, Workload: "web", Canary: &journal.Canary{Step: 1, Of: 2, Verdict: "fail"}},
	} {
		m.Fact(session.Fact{Kind: session.FactCanary, Canary: v})
		m.Notice(end)
		if n := testutil.CollectAndCount(m.Registry(), canaryNames...); n != 0 {
			t.Errorf("after %s: %d canary series left, want none: a figure that no longer moves must not read as live", end.Kind, n)
		}
	}
}

// TestListenHoldsAtMostMaxConns (issue 26, row 12): the server holds at
// most maxConns connections; past them it waits (the newcomers wait in the
// kernel's backlog, taking no descriptor of the agent), and once one
// closes the next is served.
func TestListenHoldsAtMostMaxConns(t *testing.T) {
	full := make(chan int, 1)
	was := onConnLimit
	onConnLimit = func() {
		select {
		case full <- 0:
		default:
		}
	}
	defer func() { onConnLimit = was }()
	s, err := Listen("127.0.0.1:0", New(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Close() }()
	lim := s.ln.(*limitListener)
	var held []net.Conn
	defer func() {
		for _, c := range held {
			_ = c.Close()
		}
	}()
	for range maxConns + 8 { // idle: they send nothing
		c, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	select {
	case <-full:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server never waited for a free slot: %d connections held, bound %d", len(lim.sem), maxConns)
	}
	if n := len(lim.sem); n != maxConns {
		t.Fatalf("%d connections held at the bound, want %d", n, maxConns)
	}

	// One more asks for the metrics; it is served once every held
	// connection but one is closed (their slots free, the 8 waiting ones
	// come first and are cut off once they send nothing: ReadHeaderTimeout).
	extra, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = extra.Close() }()
	if _, err := extra.Write([]byte("GET " + Path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	for _, c := range held {
		_ = c.Close()
	}
	held = nil
	line, err := bufio.NewReader(extra).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Fatalf("after the held connections closed: %q %v, want 200", line, err)
	}
}

const standingHead = `# HELP rollcall_standing Where the session stands: 1 for its standing's kind (starting, converged, rolling, awaiting-approval, held, failed, blocked), 0 for the others.
# TYPE rollcall_standing gauge
`

// standingSeries is rollcall_standing with kind at 1 and every other kind
// at 0, for host (none when "").
func standingSeries(host string, kind session.StandingKind) string {
	var b strings.Builder
	kinds := []string{}
	for _, k := range session.StandingKinds() {
		kinds = append(kinds, k.String())
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		v := "0"
		if k == kind.String() {
			v = "1"
		}
		labels := `kind="` + k + `"`
		if host != "" {
			labels = `host="` + host + `",` + labels
		}
		b.WriteString("rollcall_standing{" + labels + "} " + v + "\n")
	}
	return b.String()
}

// TestStandingGauge: rollcall_standing is 1 for the kind the session last
// stood at (starting before it said any) and 0 for every other, fed as
// data (Observer.Standing); with hosts, each host's on its own series.
func TestStandingGauge(t *testing.T) {
	m := New(Options{})
	compare(t, m, standingHead+standingSeries("", session.StandingStarting), "rollcall_standing")
	m.Standing(session.Standing{Kind: session.StandingRolling})
	m.Standing(session.Standing{Kind: session.StandingHeld, Causes: []session.Cause{{Kind: session.CauseHold, Workload: "web"}}})
	compare(t, m, standingHead+standingSeries("", session.StandingHeld), "rollcall_standing")

	f := New(Options{Hosts: true})
	a, b := f.Host("a"), f.Host("b")
	a.Standing(session.Standing{Kind: session.StandingConverged})
	b.Standing(session.Standing{Kind: session.StandingBlocked})
	compare(t, f, standingHead+standingSeries("a", session.StandingConverged)+standingSeries("b", session.StandingBlocked), "rollcall_standing")
}
