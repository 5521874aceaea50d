package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/metrics"
)

// metricsAddrOf is the address the agent logged its metrics on ("" until
// it has).
func metricsAddrOf(log string) string {
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var line struct{ Msg, Addr string }
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "metrics listening" {
			return line.Addr
		}
	}
	return ""
}

// waitMetricsAddr waits for the agent to log where its metrics are.
func waitMetricsAddr(t *testing.T, stderr *syncBuffer) string {
	t.Helper()
	waitFor(t, "the metrics address logged", 10*time.Second, func() bool { return metricsAddrOf(stderr.String()) != "" })
	return metricsAddrOf(stderr.String())
}

// scrape GETs addr's /metrics and returns every counter's and gauge's
// value by series, named as `name{k="v",...}` with the labels sorted.
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + metrics.Path)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// stepSeries is the rollcall_steps_total series of a step's action and
// outcome, of host (none when "").
func stepSeries(host, action, outcome string) string {
	if host == "" {
		return fmt.Sprintf(`rollcall_steps_total{action=%q,outcome=%q}`, action, outcome)
	}
	return fmt.Sprintf(`rollcall_steps_total{action=%q,host=%q,outcome=%q}`, action, host, outcome)
}

// journaledSteps counts the journal's step lines by host, action and
// outcome, as rollcall_steps_total names them (an interrupted step
// failed).
func journaledSteps(es []journal.Entry) map[string]float64 {
	n := map[string]float64{}
	for _, e := range es {
		outcome := metrics.OutcomeOK
		switch e.Result {
		case journal.ResultOK:
		case journal.ResultFailed, journal.ResultInterrupted:
			outcome = metrics.OutcomeFailed
		default:
			continue
		}
		n[stepSeries(e.Host, e.Action, outcome)]++
	}
	return n
}

// stepsOf is the rollcall_steps_total series of a scrape.
func stepsOf(got map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range got {
		if strings.HasPrefix(k, "rollcall_steps_total{") && v != 0 {
			out[k] = v
		}
	}
	return out
}

// TestAgentMetrics: with --metrics-addr 127.0.0.1:0 the agent logs the
// address it bound and serves Prometheus metrics there: once it has
// converged, rollcall_steps_total says each step the journal holds, by
// action and outcome (2 starts), a crash restart counts as a restart of its
// workload, the rollout is counted once, converged (the restart after it
// is no rollout), the engine never went away; the server ends with the
// agent.
func TestAgentMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr),
			[]string{"--journal", h.journal, "agent", "-f", path, "--metrics-addr", "127.0.0.1:0"})
	}()
	addr := waitMetricsAddr(t, &stderr)
	if host, port, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("metrics logged at %q, want 127.0.0.1 and the port bound", addr)
	}

	start := stepSeries("", "start", metrics.OutcomeOK)
	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	waitFor(t, "2 starts counted", 10*time.Second, func() bool { return scrape(t, addr)[start] == 2 })
	waitFor(t, "the rollout counted as converged", 10*time.Second, func() bool {
		return scrape(t, addr)[`rollcall_rollouts_total{outcome="converged"}`] == 1
	})
	// The session's standing reaches the gauge, as data (Observer.Standing).
	waitFor(t, "the standing converged", 10*time.Second, func() bool {
		got := scrape(t, addr)
		return got[`rollcall_standing{kind="converged"}`] == 1 && got[`rollcall_standing{kind="rolling"}`] == 0
	})

	cs, _ := h.fake.List(context.Background(), "rctest")
	if err := h.fake.Kill(cs[0].ID, 137); err != nil {
		t.Fatal(err)
	}
	restart := stepSeries("", "restart", metrics.OutcomeOK)
	waitFor(t, "the restart counted", 10*time.Second, func() bool { return scrape(t, addr)[restart] == 1 })
	waitFor(t, "2 healthy containers again", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })

	got := scrape(t, addr)
	want := journaledSteps(h.journalEntries())
	if want[start] != 2 || want[restart] != 1 {
		t.Fatalf("journal steps %v, want 2 starts and a restart", want)
	}
	if steps := stepsOf(got); !maps.Equal(steps, want) {
		t.Errorf("rollcall_steps_total %v, want the journal's %v", steps, want)
	}
	for series, v := range map[string]float64{
		stepSeries("", "start", metrics.OutcomeFailed):  0, // the series are there from the start
		`rollcall_restarts_total{workload="web"}`:       1,
		`rollcall_rollouts_started_total`:               1,
		`rollcall_rollouts_total{outcome="converged"}`:  1,
		`rollcall_rollouts_total{outcome="superseded"}`: 0,
		`rollcall_engine_disconnects_total`:             0,
	} {
		if g, ok := got[series]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", series, g, ok, v)
		}
	}
	if _, ok := got["go_goroutines"]; !ok {
		t.Error("no go_goroutines: the Go collector is not registered")
	}

	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Errorf("agent exit %d, want 0\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("agent did not stop on cancel")
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Error("the metrics server still listens after the agent ended")
	}
}

// TestAgentMetricsOffByDefault: without --metrics-addr the agent serves
// no metrics and says nothing of them.
func TestAgentMetricsOffByDefault(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(1))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr), []string{"--journal", h.journal, "agent", "-f", path})
	}()
	waitFor(t, "1 healthy container", 10*time.Second, func() bool { return healthyRunning(h.fake) == 1 })
	cancel()
	if code := <-exit; code != exitOK {
		t.Fatalf("agent exit %d\n%s", code, stderr.String())
	}
	mustContain(t, "agent log", stderr.String(), `"msg":"agent stopped"`)
	if strings.Contains(stderr.String(), `"msg":"metrics listening"`) {
		t.Errorf("metrics served without --metrics-addr:\n%s", stderr.String())
	}
}

// TestAgentMetricsAddressTaken: an address the agent cannot listen on is
// an error at start, exit 1, naming the flag, before anything acts.
func TestAgentMetricsAddressTaken(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = taken.Close() }()
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(1))
	for _, addr := range []string{taken.Addr().String(), "127.0.0.1"} {
		res := h.run("", "agent", "-f", path, "--metrics-addr", addr)
		if res.code != exitFailed || !strings.Contains(res.stderr, "--metrics-addr: ") {
			t.Errorf("--metrics-addr %s: exit %d\n%s", addr, res.code, res.stderr)
		}
	}
	if m := h.fake.Mutations(); len(m) != 0 {
		t.Errorf("the agent acted: %q", m)
	}
}

// TestAgentHostsMetrics: with hosts:, one /metrics serves every host's
// series, each with host=NAME, and each host's steps are the journal's
// steps of that host.
func TestAgentHostsMetrics(t *testing.T) {
	h := newHarness(t, nil)
	a, b := h.addHost("a"), h.addHost("b")
	a.AddImage("demo:v1", "", fake.Behaviour{})
	b.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentHostsFile(1))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr),
			[]string{"--journal", h.journal, "agent", "-f", path, "--metrics-addr", "127.0.0.1:0"})
	}()
	addr := waitMetricsAddr(t, &stderr)
	waitFor(t, "1 healthy container on each host", 20*time.Second, func() bool { return healthyRunning(a) == 1 && healthyRunning(b) == 1 })
	startA, startB := stepSeries("a", "start", metrics.OutcomeOK), stepSeries("b", "start", metrics.OutcomeOK)
	waitFor(t, "a start counted on each host", 10*time.Second, func() bool {
		got := scrape(t, addr)
		return got[startA] == 1 && got[startB] == 1
	})
	got := scrape(t, addr)
	want := journaledSteps(h.journalEntries())
	if steps := stepsOf(got); !maps.Equal(steps, want) {
		t.Errorf("rollcall_steps_total %v, want the journal's %v", steps, want)
	}
	for _, series := range []string{`rollcall_engine_disconnects_total{host="a"}`, `rollcall_engine_disconnects_total{host="b"}`} {
		if g, ok := got[series]; !ok || g != 0 {
			t.Errorf("%s = %v (present %v), want 0", series, g, ok)
		}
	}
	for series := range got {
		if strings.HasPrefix(series, "rollcall_") && !strings.Contains(series, `host="a"`) && !strings.Contains(series, `host="b"`) {
			t.Errorf("series %s has no host", series)
		}
	}
	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not end with its context")
	}
}
