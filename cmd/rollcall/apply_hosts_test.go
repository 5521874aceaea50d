package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
)

// noSoak is threeHosts with no soak between the waves: the fake engines'
// clock stands still.
func noSoak(t *testing.T, h *harness) string {
	t.Helper()
	threeHosts(t, h)
	return h.file("fleet.yaml", strings.Replace(hostsYAML, "wait: 30s", "wait: 0s", 1))
}

// TestApplyHosts: apply --yes across three hosts converges each from its
// own desired state, wave by wave, the canary first: each host's progress
// lines carry its name, the fleet's lines its waves; every journal line of
// the steps carries its host and the one rollout ID; plan then exits 0 and
// a second apply changes nothing.
func TestApplyHosts(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := noSoak(t, h)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "--timeout", "1m", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if final := lines[len(lines)-1]; !strings.HasPrefix(final, "✓ converged: 3 hosts, rollout ") {
		t.Errorf("final line %q\n%s", final, res.stderr)
	}
	mustContain(t, "progress", res.stderr, "fleet   wave 1 started: edge-2", "fleet   wave 3 started: edge-3",
		"edge-2  ▸ roll", "edge-2  ✓ roll", "edge-3  ▸ start", "edge-1  converged: nothing ran", "edge-3  converged: ran 2 start")
	if strings.Contains(res.stderr, "edge-1  ▸") {
		t.Errorf("edge-1, converged already, ran a step:\n%s", res.stderr)
	}
	// The canary's steps all end before edge-3 starts any.
	lastCanary, firstLater := -1, len(lines)
	for i, l := range lines {
		if strings.HasPrefix(l, "edge-2  ✓") {
			lastCanary = i
		}
		if strings.HasPrefix(l, "edge-3  ▸") && i < firstLater {
			firstLater = i
		}
	}
	if lastCanary < 0 || lastCanary > firstLater {
		t.Errorf("edge-3 started (line %d) before the canary edge-2 was done (line %d):\n%s", firstLater, lastCanary, res.stderr)
	}

	rollouts := map[string]bool{}
	byHost := map[string]int{}
	for _, e := range h.journalEntries() {
		if e.Action == "" || e.Result == journal.ResultDecision {
			continue
		}
		rollouts[e.Rollout] = true
		byHost[e.Host]++
	}
	if len(rollouts) != 1 || rollouts[""] {
		t.Errorf("the steps' journal lines carry rollouts %v, want one ID", rollouts)
	}
	if byHost["edge-2"] != 5 || byHost["edge-3"] != 2 || byHost["edge-1"] != 0 {
		t.Errorf("journal lines by host %v, want edge-2 5, edge-3 2", byHost)
	}

	if res := h.run("", "plan", "-f", path); res.code != exitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	before := len(h.journalEntries())
	again := h.run("", "apply", "--yes", "--json", "-f", path)
	if again.code != exitOK {
		t.Fatalf("apply on the fixpoint: exit %d\n%s", again.code, again.stderr)
	}
	var doc applyDoc
	if err := json.Unmarshal([]byte(again.stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, again.stdout)
	}
	var names []string
	for _, hd := range doc.Hosts {
		names = append(names, hd.Name)
		if !hd.Converged || hd.Status != "converged" || len(hd.Steps) != 0 {
			t.Errorf("host %+v", hd)
		}
	}
	if !doc.Converged || !slices.Equal(names, []string{"edge-1", "edge-2", "edge-3"}) {
		t.Errorf("--json: %+v", doc)
	}
	for _, e := range h.journalEntries()[before:] {
		if e.Action != "" && e.Result != journal.ResultDecision {
			t.Errorf("apply on the fixpoint ran %+v", e)
		}
	}
}

// TestApplyHostsUnreachable: a host that does not answer at preflight
// stops the rollout before anything changes on any host; exit 1, naming
// it. --skip-unreachable leaves it out: the others converge, and apply
// still exits 1, the host left out not being converged.
func TestApplyHostsUnreachable(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := noSoak(t, h)
	e3 := h.hosts["edge-3"]
	h.setHost("edge-3", nil)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "edge-3 does not answer")
	// A host that answers says why nothing ran on it, and what it had
	// left, as plan lists it. (edge-1, converged already, says so if its
	// session listed it before the end, else that nothing was left.)
	mustContain(t, "stderr", res.stderr,
		"edge-2  not started (edge-3 does not answer): nothing ran; left: 1 start · 1 roll · 1 restart · 2 stop\n")
	if !strings.Contains(res.stderr, "edge-1  converged: nothing ran\n") &&
		!strings.Contains(res.stderr, "edge-1  not started (edge-3 does not answer): nothing ran; left: nothing\n") {
		t.Errorf("edge-1's line says neither converged nor nothing left\n%s", res.stderr)
	}
	for _, name := range []string{"edge-1", "edge-2"} {
		if muts := h.hosts[name].(*fake.Engine).Mutations(); len(muts) > 0 {
			t.Errorf("%s changed though edge-3 did not answer: %q", name, muts)
		}
	}
	if muts := e3.(*fake.Engine).Mutations(); len(muts) > 0 {
		t.Errorf("edge-3 changed: %q", muts)
	}

	res = h.run("", "apply", "--yes", "--allow-mass-stop", "--skip-unreachable", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("--skip-unreachable: exit %d, want 1 (edge-3 is not converged)\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "edge-3 left out", "every host converged but edge-3")
	if muts := h.hosts["edge-2"].(*fake.Engine).Mutations(); len(muts) == 0 {
		t.Errorf("--skip-unreachable: edge-2 did not roll\n%s", res.stderr)
	}
}

// TestApplyHostsOneEngineTwice: two hosts on one engine stop apply before
// anything acts, at the second host's file:line:col.
func TestApplyHostsOneEngineTwice(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	h.setHost("edge-3", h.hosts["edge-1"])
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, path+":"+hostLine(t, hostsYAML, "edge-3")+": hosts.edge-3: reaches the engine of edge-1")
	// The last line says it once, not once from the file's errors and
	// again from the fleet's reason.
	for _, line := range strings.Split(res.stderr, "\n") {
		if strings.Contains(line, "failed:") && strings.Count(line, "reaches the engine of edge-1") != 1 {
			t.Errorf("the final line says it %d times: %q", strings.Count(line, "reaches the engine of edge-1"), line)
		}
	}
	for _, name := range []string{"edge-1", "edge-2"} {
		if muts := h.hosts[name].(*fake.Engine).Mutations(); len(muts) > 0 {
			t.Errorf("%s changed: %q", name, muts)
		}
	}
}

// agentHostsFile is agentFile(replicas) on hosts a and b.
func agentHostsFile(replicas int) string {
	return strings.Replace(agentFile(replicas), "workloads:\n", "hosts:\n  a: {endpoint: \"ssh://a\"}\n  b: {endpoint: \"ssh://b\"}\nworkloads:\n", 1)
}

// TestAgentHosts: the agent converges every host, follows a changed file
// as a new rollout across them, logs each host's lines with its name, and
// exits 0 when its context ends.
func TestAgentHosts(t *testing.T) {
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
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr), []string{"--journal", h.journal, "agent", "-f", path})
	}()
	waitFor(t, "1 healthy container on each host", 20*time.Second, func() bool { return healthyRunning(a) == 1 && healthyRunning(b) == 1 })
	h.file("rollcall.yaml", agentHostsFile(2))
	waitFor(t, "2 healthy containers on each host", 30*time.Second, func() bool { return healthyRunning(a) == 2 && healthyRunning(b) == 2 })
	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the agent did not end with its context")
	}
	mustContain(t, "log", stderr.String(), `"msg":"agent started"`, `"host":"a"`, `"host":"b"`, `"msg":"step done"`, `"msg":"agent stopped"`)
	rollouts := map[string]bool{}
	for _, e := range h.journalEntries() {
		if e.Result != journal.ResultDecision && e.Action != "" {
			rollouts[e.Rollout] = true
		}
	}
	if len(rollouts) != 2 || rollouts[""] {
		t.Errorf("steps journaled under rollouts %v, want two (one per desired state)", rollouts)
	}
}

// TestAgentHostsUnreachable: a host that does not answer at start ends
// the agent, exit 1, before anything acts on the other.
func TestAgentHostsUnreachable(t *testing.T) {
	h := newHarness(t, nil)
	a := h.addHost("a")
	a.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentHostsFile(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := h.runCtx(ctx, "", "agent", "-f", path)
	if res.code != exitFailed || ctx.Err() != nil {
		t.Fatalf("exit %d (context %v), want 1 at once\n%s", res.code, ctx.Err(), res.stderr)
	}
	mustContain(t, "log", res.stderr, "b does not answer")
	if muts := a.Mutations(); len(muts) > 0 {
		t.Errorf("a changed though b did not answer: %q", muts)
	}
}

// TestApplyHostsLockHeldElsewhere: one host's lock held by another rollcall
// (a console on that engine, say) stops apply across the hosts before
// anything acts on any of them, naming who holds it; once it is let go,
// apply converges them all.
func TestApplyHostsLockHeldElsewhere(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := noSoak(t, h)
	info, err := h.hosts["edge-3"].Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lock, err := session.AcquireLock(info, "rctest", "alice")
	if err != nil {
		t.Fatal(err)
	}
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, "held by alice") {
		t.Fatalf("exit %d: want a refusal naming alice\n%s", res.code, res.stderr)
	}
	for name, c := range h.hosts {
		if muts := c.(*fake.Engine).Mutations(); len(muts) > 0 {
			t.Errorf("%s changed while edge-3's lock was held elsewhere: %q", name, muts)
		}
	}
	lock.Release()
	if res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path); res.code != exitOK {
		t.Fatalf("after release: exit %d\n%s", res.code, res.stderr)
	}
}

// TestApplyHostsAsksOnce: without --yes apply shows every host's plan and
// the waves and asks once: refused when stdin is no terminal, and "y" at a
// terminal rolls the fleet.
func TestApplyHostsAsksOnce(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := noSoak(t, h)
	res := h.run("", "apply", "--allow-mass-stop", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, "refusing to apply without confirmation") {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for name, c := range h.hosts {
		if muts := c.(*fake.Engine).Mutations(); len(muts) > 0 {
			t.Errorf("%s changed without confirmation: %q", name, muts)
		}
	}
	h.terminal["stdin"] = true
	res = h.run("y\n", "apply", "--allow-mass-stop", "-f", path)
	if res.code != exitOK {
		t.Fatalf("answered y: exit %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "prompt", res.stderr, "host edge-2  tcp://edge-2:2376", "1 canary  edge-2", "Apply 7 steps across 3 hosts, in 3 waves (prefix rctest)? [y/N]")
}
