package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

const agentYAML = `prefix: rctest
workloads:
  web:
    image: demo:v1
    replicas: %d
    restart: "no"
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`

func agentFile(replicas int) string {
	return strings.Replace(agentYAML, "%d", string(rune('0'+replicas)), 1)
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// healthyRunning counts the running, healthy containers of prefix rctest.
func healthyRunning(f *docker.Fake) int {
	cs, err := f.List(context.Background(), "rctest")
	if err != nil {
		return -1
	}
	n := 0
	for _, c := range cs {
		if c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
			n++
		}
	}
	return n
}

// TestAgent: the agent converges, heals a killed container on its event,
// keeps the last good state (and the containers) when the file breaks,
// logging the error with its location, follows the file once it is fixed,
// journals every step, and exits 0 when its context ends (SIGTERM).
func TestAgent(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", docker.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr), []string{"--journal", h.journal, "agent", "-f", path})
	}()

	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })

	cs, _ := h.fake.List(context.Background(), "rctest")
	if err := h.fake.Kill(cs[0].ID, 137); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, "the killed container restarted", 5*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	t.Logf("killed container healthy again after %s", time.Since(killed).Round(time.Millisecond))

	if err := os.WriteFile(path, []byte("workloads:\n  web:\n    image: demo:v1\n    replicas: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken file logged", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), `"msg":"desired state broken: keeping the last good one"`)
	})
	mustContain(t, "agent log", stderr.String(), `"line":4`, `"col":15`, `"file":"`+path+`"`)
	if n := healthyRunning(h.fake); n != 2 {
		t.Errorf("%d healthy containers after the file broke, want 2 (last good state)", n)
	}

	if err := os.WriteFile(path, []byte(agentFile(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })

	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Errorf("agent exit %d on SIGTERM, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("agent did not stop on cancel")
	}
	log := stderr.String()
	mustContain(t, "agent log", log, `"msg":"agent started"`, `"msg":"step started"`, `"msg":"agent stopped"`)
	steps := strings.Count(log, `"msg":"step done"`) + strings.Count(log, `"msg":"step failed"`)
	entries := h.journalEntries()
	if steps < 4 || len(entries) != steps {
		t.Errorf("%d steps logged, %d journal lines; want equal, at least 4 (2 starts, a restart, a start)", steps, len(entries))
	}
	for _, e := range entries {
		if e.Mode != "agent" {
			t.Errorf("journal entry mode %q, want agent", e.Mode)
		}
	}
	if strings.Contains(log, "panic") || stdout.String() != "" {
		t.Errorf("stdout %q; log:\n%s", stdout.String(), log)
	}
}

// TestAgentNeedsAGoodFileToStart: with nothing good to keep, the agent
// refuses to start, with the file's error.
func TestAgentNeedsAGoodFileToStart(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "agent", "-f", h.dir+"/absent.yaml")
	if res.code != exitFailed || !strings.Contains(res.stderr, "no desired-state file at") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
	path := h.file("rollcall.yaml", "workloads: [\n")
	res = h.run("", "agent", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, path+":") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
}
