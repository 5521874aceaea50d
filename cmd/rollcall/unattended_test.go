package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
)

// The guards of an unattended session, as apply and agent meet them on the
// fake engine. The same guards on the real engine are in
// unattended_real_test.go.

// TestApplyRefusesAMassStop: a desired state that stops or rolls more than
// half of the running containers is refused, naming the count; --yes does
// not let it through, --allow-mass-stop does.
func TestApplyRefusesAMassStop(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	h.fake.ResetCalls()
	res := h.run("", "apply", "--yes", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "refused", "stops or rolls 3 of 4 running containers", "--allow-mass-stop")
	if m := h.fake.Mutations(); len(m) != 0 {
		t.Fatalf("apply acted on a refused desired state: %q", m)
	}
	if res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path); res.code != exitOK {
		t.Fatalf("with --allow-mass-stop: exit %d\n%s", res.code, res.stderr)
	}
}

const rollbackYAML = `prefix: rctest
workloads:
  web:
    image: demo:%s
    replicas: 2
    restart: "no"
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
    update: {health_deadline: 1s, failure_action: rollback}
`

// TestApplyFailsAfterARollbackAndKeepsTheHold: a version that never turns
// healthy is rolled back; apply says so and exits 1, and the hold outlives
// it: plan shows it, and a second apply neither tries that version again
// nor reports success.
func TestApplyFailsAfterARollbackAndKeepsTheHold(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	h.fake.AddImage("demo:v3", "", fake.Behaviour{ReadyAfter: time.Hour})
	path := h.file("rollcall.yaml", strings.Replace(rollbackYAML, "%s", "v1", 1))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("v1: exit %d\n%s", res.code, res.stderr)
	}
	h.file("rollcall.yaml", strings.Replace(rollbackYAML, "%s", "v3", 1))
	res := h.run("", "apply", "--yes", "--json", "--timeout", "20s", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("v3: exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "rolled back web/")
	mustContain(t, "json", res.stdout, `"converged": false`, "on hold")

	plan := h.run("", "plan", "-f", path)
	mustContain(t, "plan", plan.stdout, "on hold")

	h.fake.ResetCalls()
	again := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path)
	if again.code != exitFailed {
		t.Fatalf("second apply: exit %d, want 1\n%s", again.code, again.stderr)
	}
	mustContain(t, "second apply", again.stderr, "on hold")
	for _, m := range h.fake.Mutations() {
		if strings.HasPrefix(m, "create:") {
			t.Fatalf("the second apply tried the held version again: %q", h.fake.Mutations())
		}
	}
}

// TestApplyStopsWhenTheJournalCannotBeWritten: no audit, no action.
func TestApplyStopsWhenTheJournalCannotBeWritten(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	h := newHarness(t, nil)
	h.journal = "/dev/full"
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2))
	res := h.run("", "apply", "--yes", "--timeout", "10s", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "halted", "journal")
	if m := h.fake.Mutations(); len(m) != 0 {
		t.Fatalf("steps ran without a journal: %q", m)
	}
}

// agentRun runs the agent on path until stop is called; it returns the
// agent's log and exit code.
func agentRun(t *testing.T, h *harness, path string, args ...string) (stop func() (string, int), log *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout syncBuffer
	log = &syncBuffer{}
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, log), append([]string{"--journal", h.journal, "agent", "-f", path}, args...))
	}()
	stopped := false
	stop = func() (string, int) {
		if !stopped {
			stopped = true
			cancel()
		}
		select {
		case code := <-exit:
			return log.String(), code
		case <-time.After(10 * time.Second):
			t.Fatal("the agent did not stop")
			return "", -1
		}
	}
	t.Cleanup(func() {
		if !stopped {
			stop()
		}
	})
	return stop, log
}

// TestAgentRefusesAMassStop: `workloads: {}` under the agent stops
// nothing; it is refused and logged, and the agent acts again on the next
// desired change.
func TestAgentRefusesAMassStop(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(3))
	stop, log := agentRun(t, h, path)
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })

	h.file("rollcall.yaml", "prefix: rctest\nworkloads: {}\n")
	waitFor(t, "the refusal logged", 10*time.Second, func() bool {
		return strings.Contains(log.String(), `"msg":"refused: blast radius"`)
	})
	time.Sleep(500 * time.Millisecond)
	if n := healthyRunning(h.fake); n != 3 {
		t.Fatalf("%d healthy containers after the refused change, want 3", n)
	}
	mustContain(t, "agent log", log.String(), `"stops":3`, `"running":3`)

	// The next desired change is weighed anew, and acted on.
	h.file("rollcall.yaml", agentFile(2))
	waitFor(t, "2 containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	if out, code := stop(); code != exitOK {
		t.Fatalf("agent exit %d\n%s", code, out)
	}
}

// TestAgentNeverActsOnAHalfWrittenFile: a writer saves a valid first half
// (web only), pauses, then writes the rest. The agent waits for the file to
// settle, so the api containers are never stopped.
func TestAgentNeverActsOnAHalfWrittenFile(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	whole := agentFile(1) + `  api:
    image: demo:v1
    replicas: 2
    restart: "no"
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`
	path := h.file("rollcall.yaml", whole)
	stop, log := agentRun(t, h, path)
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })
	h.fake.ResetCalls()

	// The first half parses: it has no api. Then, a second later, the rest,
	// with one more web replica so the file differs from the first.
	h.file("rollcall.yaml", agentFile(2))
	time.Sleep(time.Second)
	h.file("rollcall.yaml", strings.Replace(whole, "replicas: 1", "replicas: 2", 1))
	waitFor(t, "4 healthy containers", 15*time.Second, func() bool { return healthyRunning(h.fake) == 4 })
	for _, m := range h.fake.Mutations() {
		if strings.HasPrefix(m, "stop:") || strings.HasPrefix(m, "remove:") {
			t.Fatalf("the agent acted on the half-written file: %q\n%s", h.fake.Mutations(), log.String())
		}
	}
	if out, code := stop(); code != exitOK {
		t.Fatalf("agent exit %d\n%s", code, out)
	}
}
