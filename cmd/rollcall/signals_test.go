package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
)

// stopGate is an engine whose first Stop blocks until release closes, or
// until the step's context ends, as a slow engine call does.
type stopGate struct {
	docker.Client
	entered chan struct{} // closed as the first Stop begins
	release chan struct{}
	once    sync.Once
}

func newStopGate(c docker.Client) *stopGate {
	return &stopGate{Client: c, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *stopGate) Stop(ctx context.Context, id string, grace time.Duration) error {
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", id, ctx.Err())
	}
	return g.Client.Stop(ctx, id, grace)
}

// signalRun starts apply on h's fake engine behind a stopGate, with the
// scale-down from 2 web replicas to 1 to do (a stop of web/1). cancel is the
// first signal, abandon the second.
func signalRun(t *testing.T, h *harness) (gate *stopGate, cancel context.CancelFunc, abandon chan struct{}, stderr *syncBuffer, exit chan int) {
	t.Helper()
	h.fake.AddImage("demo:v1", "", docker.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("2 replicas: exit %d\n%s", res.code, res.stderr)
	}
	h.file("rollcall.yaml", agentFile(1))

	gate = newStopGate(h.fake)
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	t.Cleanup(cancel)
	abandon = make(chan struct{})
	stderr = &syncBuffer{}
	e := h.env(strings.NewReader(""), &syncBuffer{}, stderr)
	e.connect = func(context.Context, string) (docker.Client, error) { return gate, nil }
	e.abandon = abandon
	exit = make(chan int, 1)
	go func() {
		exit <- run(ctx, e, []string{"--journal", h.journal, "apply", "--yes", "--timeout", "20s", "-f", path})
	}()
	select {
	case <-gate.entered:
	case code := <-exit:
		t.Fatalf("apply ended (exit %d) before its stop began\n%s", code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the stop never began\n%s", stderr.String())
	}
	return gate, cancel, abandon, stderr, exit
}

// stopEntry is the journal's one entry for the stop of web/1.
func stopEntry(t *testing.T, h *harness) journal.Entry {
	t.Helper()
	var found []journal.Entry
	for _, e := range h.journalEntries() {
		if e.Action == "stop" {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("journal: %d stop entries, want 1: %+v", len(found), found)
	}
	return found[0]
}

func waitExit(t *testing.T, exit chan int, stderr *syncBuffer) int {
	t.Helper()
	select {
	case code := <-exit:
		return code
	case <-time.After(15 * time.Second):
		t.Fatalf("apply did not exit\n%s", stderr.String())
		return -1
	}
}

// TestApplySignalFinishesTheStepInFlight: the first SIGINT or SIGTERM ends
// apply's context mid-step; the engine call goes on to its end (it is not
// cancelled), the step is journaled ok, not failed, and apply exits 1
// saying it was interrupted.
func TestApplySignalFinishesTheStepInFlight(t *testing.T) {
	h := newHarness(t, nil)
	gate, cancel, _, stderr, exit := signalRun(t, h)
	cancel()
	waitFor(t, "the session letting the step finish", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "letting the running step finish")
	})
	close(gate.release)
	if code := waitExit(t, exit, stderr); code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	mustContain(t, "stderr", stderr.String(), "interrupted")
	if e := stopEntry(t, h); e.Result != journal.ResultOK {
		t.Fatalf("the stop finished after the signal is journaled %q (%s), want ok", e.Result, e.Error)
	}
	if n := healthyRunning(h.fake); n != 1 {
		t.Fatalf("%d healthy containers, want 1 (the stop took effect)", n)
	}
	if cs, _ := h.fake.List(context.Background(), "rctest"); len(cs) != 1 {
		t.Fatalf("%d containers left, want 1 (stopped and removed): %+v", len(cs), cs)
	}
}

// TestApplySecondSignalAbandonsTheStepInFlight: a second signal cuts the
// step in flight short: the engine call is cancelled, the journal says
// interrupted (not failed), the old container still runs, and apply exits
// 1 at once.
func TestApplySecondSignalAbandonsTheStepInFlight(t *testing.T) {
	h := newHarness(t, nil)
	_, cancel, abandon, stderr, exit := signalRun(t, h)
	cancel()
	waitFor(t, "the session letting the step finish", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "letting the running step finish")
	})
	close(abandon) // the gate is never released: only the abandon ends the stop
	if code := waitExit(t, exit, stderr); code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	mustContain(t, "stderr", stderr.String(), "interrupted")
	if strings.Contains(stderr.String(), "did not finish in time") {
		t.Fatalf("the step ran out its grace and slack: the second signal did not abandon it\n%s", stderr.String())
	}
	if e := stopEntry(t, h); e.Result != journal.ResultInterrupted {
		t.Fatalf("the abandoned stop is journaled %q (%s), want interrupted", e.Result, e.Error)
	}
	if n := healthyRunning(h.fake); n != 2 {
		t.Fatalf("%d healthy containers, want 2 (the abandoned stop never reached the engine)", n)
	}
}

// TestNotifySignals: the first signal ends the context, the second closes
// abandon. (The third gets the default handler back and would kill the test
// process, so it is proven with the real binary only.)
func TestNotifySignals(t *testing.T) {
	ctx, abandon, stop := notifySignals(context.Background(), syscall.SIGUSR1)
	defer stop()
	raise := func() {
		if err := syscall.Kill(syscall.Getpid(), syscall.SIGUSR1); err != nil {
			t.Fatal(err)
		}
	}
	raise()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the first signal did not end the context")
	}
	select {
	case <-abandon:
		t.Fatal("the first signal abandoned the step")
	case <-time.After(100 * time.Millisecond):
	}
	raise()
	select {
	case <-abandon:
	case <-time.After(5 * time.Second):
		t.Fatal("the second signal did not abandon")
	}
}
