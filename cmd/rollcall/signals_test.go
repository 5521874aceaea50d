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
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
)

// stopGate is an engine whose first Stop takes until release closes, as a
// stop does whose container ignores its stop signal (the whole grace
// passes). As on the real engine, the stop goes on at the engine once asked
// for: the end of the caller's context makes the call return at once, and
// the container still stops at release. stopped closes once it has.
type stopGate struct {
	docker.Client
	entered chan struct{} // closed as the first Stop begins
	release chan struct{}
	stopped chan struct{}
	once    sync.Once
}

func newStopGate(c docker.Client) *stopGate {
	return &stopGate{Client: c, entered: make(chan struct{}), release: make(chan struct{}), stopped: make(chan struct{})}
}

func (g *stopGate) Stop(ctx context.Context, id string, grace time.Duration) error {
	first := false
	g.once.Do(func() { first = true })
	if !first {
		return g.Client.Stop(ctx, id, grace)
	}
	close(g.entered)
	done := make(chan error, 1)
	go func() {
		<-g.release
		done <- g.Client.Stop(context.Background(), id, grace)
		close(g.stopped)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", id, ctx.Err())
	}
}

// signalRun starts apply on h's fake engine behind a stopGate, with the
// scale-down from 2 web replicas to 1 to do (a stop of web/1), and returns
// once began says the stop is under way. extra goes under web in the
// desired file. cancel is the first signal, abandon the second.
func signalRun(t *testing.T, h *harness, extra string, began func(gate *stopGate, stderr *syncBuffer) <-chan struct{}) (gate *stopGate, cancel context.CancelFunc, abandon chan struct{}, stderr *syncBuffer, exit chan int) {
	t.Helper()
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2)+extra)
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("2 replicas: exit %d\n%s", res.code, res.stderr)
	}
	h.file("rollcall.yaml", agentFile(1)+extra)

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
	case <-began(gate, stderr):
	case code := <-exit:
		t.Fatalf("apply ended (exit %d) before its stop began\n%s", code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the stop never began\n%s", stderr.String())
	}
	return gate, cancel, abandon, stderr, exit
}

// atTheEngine: the stop has reached the engine.
func atTheEngine(gate *stopGate, _ *syncBuffer) <-chan struct{} { return gate.entered }

// draining: the stop drains (the session said so), so the engine has not
// been asked to stop anything yet.
func draining(_ *stopGate, stderr *syncBuffer) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		for !strings.Contains(stderr.String(), "draining") {
			time.Sleep(10 * time.Millisecond)
		}
		close(c)
	}()
	return c
}

// drain30s gives web a drain longer than any test waits: only the end of
// the step's context ends it.
const drain30s = "    update: {drain: 30s}\n"

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
	gate, cancel, _, stderr, exit := signalRun(t, h, "", atTheEngine)
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
	// What was left is counted from what ran: the stop in flight at the
	// signal finished, so nothing was left (not "left: 1 stop").
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); !strings.HasSuffix(lines[len(lines)-1], "failed: interrupted; left: nothing to do") {
		t.Errorf("final line %q, want it to say nothing was left\n%s", lines[len(lines)-1], stderr.String())
	}
	if n := healthyRunning(h.fake); n != 1 {
		t.Fatalf("%d healthy containers, want 1 (the stop took effect)", n)
	}
	if cs, _ := h.fake.List(context.Background(), "rctest"); len(cs) != 1 {
		t.Fatalf("%d containers left, want 1 (stopped and removed): %+v", len(cs), cs)
	}
}

// TestApplySecondSignalAbandonsTheStepInFlight: a second signal cuts the
// step in flight short while it only waits (here its drain): the journal
// says interrupted (not failed), the old container still runs, and apply
// exits 1 at once.
func TestApplySecondSignalAbandonsTheStepInFlight(t *testing.T) {
	h := newHarness(t, nil)
	gate, cancel, abandon, stderr, exit := signalRun(t, h, drain30s, draining)
	cancel()
	waitFor(t, "the session letting the step finish", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "letting the running step finish")
	})
	close(abandon) // the drain never ends by itself: only the abandon ends the step
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
	select {
	case <-gate.entered:
		t.Fatal("the abandoned drain went on to the stop")
	default:
	}
	if n := healthyRunning(h.fake); n != 2 {
		t.Fatalf("%d healthy containers, want 2 (the abandoned stop never reached the engine)", n)
	}
}

// TestApplySecondSignalMidStopLeavesNoExitedContainer (issue 18 row 7): a
// second signal while the engine stops a container that ignores its stop
// signal does not cut the stop short: the engine would go on stopping it,
// and with the step gone nothing would remove it. apply waits for the stop,
// removes the container, journals the step ok and exits 1; nothing is left
// Exited.
func TestApplySecondSignalMidStopLeavesNoExitedContainer(t *testing.T) {
	h := newHarness(t, nil)
	gate, cancel, abandon, stderr, exit := signalRun(t, h, "", atTheEngine)
	cancel()
	waitFor(t, "the session letting the step finish", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), "letting the running step finish")
	})
	close(abandon)
	// The grace runs out a while after the second signal. (Cut short, the
	// step lets apply exit first; carried, apply waits for it.)
	var code int
	select {
	case code = <-exit:
		close(gate.release)
	case <-time.After(300 * time.Millisecond):
		close(gate.release)
		code = waitExit(t, exit, stderr)
	}
	<-gate.stopped
	if cs, _ := h.fake.List(context.Background(), "rctest"); len(cs) != 1 || cs[0].State != docker.StateRunning {
		t.Fatalf("after the second signal mid-stop: %+v; want the one running container, nothing Exited\n%s", cs, stderr.String())
	}
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s", code, stderr.String())
	}
	mustContain(t, "stderr", stderr.String(), "interrupted")
	if e := stopEntry(t, h); e.Result != journal.ResultOK {
		t.Fatalf("the stop carried to its end is journaled %q (%s), want ok", e.Result, e.Error)
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
