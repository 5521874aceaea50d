package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// TestApplyConverges: apply --yes takes the mixed state to the fixpoint,
// prints a line as each step starts and ends and a final line, writes one
// journal line per executed step, and plan then exits 0.
func TestApplyConverges(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d\nstderr:\n%s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	final := lines[len(lines)-1]
	if final != "✓ converged: 1 start · 1 roll · 1 restart · 2 stop" {
		t.Errorf("final line %q", final)
	}
	started, ended := 0, 0
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "▸ "):
			started++
		case strings.HasPrefix(l, "✓ ") && l != final:
			ended++
		}
	}
	if started != 5 || ended != 5 {
		t.Errorf("%d start lines and %d end lines, want 5 each:\n%s", started, ended, res.stderr)
	}

	entries := h.journalEntries()
	if len(entries) != 5 {
		t.Fatalf("journal has %d lines, want 5 (one per step): %+v", len(entries), entries)
	}
	var got []string
	for _, e := range entries {
		if e.Mode != "apply" || e.Result != journal.ResultOK || e.User == "" || e.Time.IsZero() {
			t.Errorf("journal entry %+v", e)
		}
		got = append(got, e.Action+" "+e.Container)
	}
	mustContain(t, "journal", strings.Join(got, "\n"),
		"start rctest-api-0-", "roll rctest-web-0-01234567", "restart rctest-web-1-", "stop rctest-web-2-", "stop rctest-worker-0-01234567")

	if res := h.run("", "plan", "-f", path); res.code != exitOK {
		t.Errorf("plan after apply: exit %d, want 0\n%s%s", res.code, res.stdout, res.stderr)
	}
	again := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if again.code != exitOK || !strings.Contains(again.stderr, "converged: nothing to do") {
		t.Errorf("apply on the fixpoint: exit %d\n%s", again.code, again.stderr)
	}
	if n := len(h.journalEntries()); n != 5 {
		t.Errorf("apply on the fixpoint wrote %d journal lines", n-5)
	}
}

// TestApplyJSON: --json prints the outcome document on stdout and nothing
// else; progress stays on stderr. Every executed step names its container
// by ID, a start the one it created.
func TestApplyJSON(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "--json", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	var doc applyDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, res.stdout)
	}
	if !doc.Converged || doc.Error != "" || len(doc.Steps) != 5 || len(doc.Pending) != 0 || doc.Rounds < 1 {
		t.Errorf("document: %+v", doc)
	}
	if st := doc.Standing; st == nil || st.Kind != session.StandingConverged || len(st.Causes) != 0 || doc.Missed != 0 {
		t.Errorf("standing %+v, missed %d: want converged, no cause, nothing missed", st, doc.Missed)
	}
	live, err := h.fake.List(context.Background(), "rctest")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, c := range live {
		byName[c.Name] = c.ID
	}
	starts := 0
	for _, s := range doc.Steps {
		if s.Result != "ok" || s.Action == "" || s.Container == "" || s.ContainerID == "" {
			t.Errorf("step %+v", s)
		}
		if s.Action == string(reconcile.ActStart) {
			starts++
			if id := byName[s.Container]; id == "" || s.ContainerID != id {
				t.Errorf("start of %s: container_id %q, want the created container's %q", s.Container, s.ContainerID, id)
			}
		}
	}
	if starts == 0 {
		t.Error("no start step in the document")
	}
}

// TestApplyConfirmation: without --yes, apply asks on a terminal (default
// No) and refuses without one; neither touches the engine unless told yes.
func TestApplyConfirmation(t *testing.T) {
	for _, tc := range []struct {
		name     string
		terminal bool
		answer   string
		code     int
		stderr   string
		acts     bool
	}{
		{"no terminal: refused", false, "y\n", exitFailed, "stdin is not a terminal (hint: pass --yes", false},
		{"terminal, enter: default No", true, "\n", exitFailed, "cancelled: nothing was changed", false},
		{"terminal, n", true, "n\n", exitFailed, "cancelled", false},
		{"terminal, closed stdin", true, "", exitFailed, "cancelled", false},
		{"terminal, yes", true, "yes\n", exitOK, "converged:", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fake.NewManualClock(t0))
			h.terminal["stdin"] = tc.terminal
			path := seedMixed(t, h)
			res := h.run(tc.answer, "apply", "--allow-mass-stop", "-f", path)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", res.code, tc.code, res.stderr)
			}
			mustContain(t, "stderr", res.stderr, tc.stderr)
			if tc.terminal {
				mustContain(t, "stderr", res.stderr, "1 start · 1 roll · 1 restart · 2 stop", "[y/N]")
			}
			if acted := len(h.fake.Mutations()) > 0; acted != tc.acts {
				t.Errorf("engine mutated: %v, want %v: %q", acted, tc.acts, h.fake.Mutations())
			}
		})
	}
}

// TestApplyTimeout: an image that never turns healthy makes apply give up
// at --timeout with exit 1 and say so, with what was left.
func TestApplyTimeout(t *testing.T) {
	h := newHarness(t, nil) // real time: the deadline is real
	h.fake.AddImage("stuck:v1", "", fake.Behaviour{ReadyAfter: time.Hour})
	path := h.file("rollcall.yaml", `prefix: rctest
workloads:
  web:
    image: stuck:v1
    replicas: 1
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`)
	res := h.run("", "apply", "--yes", "--timeout", "400ms", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "▸ start", "✗ failed: timed out after 400ms", "left: 1 wait", "… wait", "booting")
	if n := len(h.journalEntries()); n != 1 {
		t.Errorf("journal has %d lines, want 1 (the start)", n)
	}
}

// TestApplyStepFailure: a step the engine refuses is reported with its
// error, journaled as failed, and retried in the next round.
func TestApplyStepFailure(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	h.fake.FailNext("Create", nil)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "✗ start", "injected failure", "(1 failed step(s) retried)")
	var failed int
	for _, e := range h.journalEntries() {
		if e.Result == journal.ResultFailed {
			failed++
			if !strings.Contains(e.Error, "injected failure") {
				t.Errorf("failed entry without the engine's error: %+v", e)
			}
		}
	}
	if failed != 1 {
		t.Errorf("%d failed journal lines, want 1", failed)
	}
}

// TestApplyRecreate: --recreate rolls every container of a converged state,
// one new container per slot, and converges again.
func TestApplyRecreate(t *testing.T) {
	clock := fake.NewManualClock(t0)
	h := newHarness(t, clock)
	path := seedMixed(t, h)
	if res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path); res.code != exitOK {
		t.Fatalf("first apply: exit %d\n%s", res.code, res.stderr)
	}
	clock.Advance(time.Minute)
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "--recreate", "-f", path)
	if res.code != exitOK {
		t.Fatalf("recreate: exit %d\n%s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if final := lines[len(lines)-1]; !strings.HasSuffix(final, ": 3 start · 3 roll") {
		t.Errorf("final line %q, want 3 start · 3 roll", final)
	}
}

// TestApplySkipHealth: --skip-health says EMERGENCY and converges without
// waiting for health.
func TestApplySkipHealth(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("stuck:v1", "", fake.Behaviour{ReadyAfter: time.Hour})
	path := h.file("rollcall.yaml", "workloads:\n  web:\n    image: stuck:v1\n    healthcheck: {test: [\"CMD\", \"/x\"]}\n")
	res := h.run("", "apply", "--yes", "--skip-health", "--timeout", "10s", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, "EMERGENCY --skip-health", "converged:")
}

// TestApplyRefusesWhileTheHostLockIsHeld: apply never acts beside a console
// in step or auto mode (or an agent): it names the holder and touches
// nothing.
func TestApplyRefusesWhileTheHostLockIsHeld(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	info, err := h.fake.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	lock, err := session.AcquireLock(info, "rctest", "alice")
	if err != nil {
		t.Fatal(err)
	}
	h.fake.ResetCalls()
	res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, "held by alice") {
		t.Fatalf("exit %d, stderr %q: want a refusal naming alice", res.code, res.stderr)
	}
	if m := h.fake.Mutations(); len(m) != 0 {
		t.Fatalf("apply acted while the lock was held: %q", m)
	}
	lock.Release()
	if res := h.run("", "apply", "--yes", "--allow-mass-stop", "-f", path); res.code != exitOK {
		t.Fatalf("after release: exit %d\n%s", res.code, res.stderr)
	}
}

// removesFirstStart is an engine where someone removes the first
// container a start makes as soon as it is made (by hand, say): the
// session starts the slot again, under the same name.
type removesFirstStart struct {
	docker.Client
	mu  sync.Mutex
	ids []string // what Create answered, in order
}

func (c *removesFirstStart) Create(ctx context.Context, spec docker.CreateSpec) (string, error) {
	id, err := c.Client.Create(ctx, spec)
	if err != nil {
		return id, err
	}
	c.mu.Lock()
	first := len(c.ids) == 0
	c.ids = append(c.ids, id)
	c.mu.Unlock()
	if first {
		if err := c.Client.Stop(ctx, id, 0); err != nil {
			return "", err
		}
		if err := c.Client.Remove(ctx, id); err != nil {
			return "", err
		}
	}
	return id, nil
}

// TestApplyJSONStartIDIsTheCreatedOne: a start's container_id is the ID the
// engine gave the container it made, not whatever bears its name at the
// end: the first start's container was removed and the slot started again
// under the same name, and each start names its own.
func TestApplyJSONStartIDIsTheCreatedOne(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	engine := &removesFirstStart{Client: h.fake}
	var stdout, stderr syncBuffer
	e := h.env(strings.NewReader(""), &stdout, &stderr)
	e.connect = func(context.Context, string) (docker.Client, error) { return engine, nil }
	if code := run(context.Background(), e, []string{"--journal", h.journal, "apply", "--yes", "--allow-mass-stop", "--json", "-f", path}); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	var doc applyDoc
	if err := json.Unmarshal([]byte(stdout.String()), &doc); err != nil {
		t.Fatalf("stdout is not the JSON document: %v\n%s", err, stdout.String())
	}
	var got []string
	for _, s := range doc.Steps {
		if s.Action == string(reconcile.ActStart) {
			got = append(got, s.ContainerID)
		}
	}
	engine.mu.Lock()
	want := slices.Clone(engine.ids)
	engine.mu.Unlock()
	if len(want) != 2 || want[0] == want[1] {
		t.Fatalf("the engine made %v, want two containers (the first removed, the slot started again)", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the starts' container_id are %q, want the IDs the engine gave, in order: %q", got, want)
	}
}
