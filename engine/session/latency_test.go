package session

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// TestMain sweeps what a real-engine test of the package left, and removes
// the images it built (engine/docker/dockertest).
func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// TestReactionLatency measures, on the real engine, how fast an auto-mode
// session reacts to `docker kill`: 20 trials, round robin over 10 replicas
// (so each container's crash backoff has started over between its kills).
// The containers have no healthcheck (healthy after min_ready), so no probe
// execs load the engine while it is timed.
// It is slow (a minute or more) and needs an engine, so it runs only with
// ROLLCALL_BENCH_LATENCY=1:
//
//	ROLLCALL_BENCH_LATENCY=1 go test -run TestReactionLatency -v ./engine/session/
//
// Per trial, from just before `docker kill` runs:
//   - detect:  until a snapshot's plan holds the crash (the restart, or its
//     backoff wait);
//   - restart: until the restart step turns running (Options.OnStep).
//
// And, to tell the session's share from the engine's: from the exit the
// engine recorded (FinishedAt) to the detection, and from the moment the
// crash backoff of §5 rule 4 lets the restart go (1s after the exit for a
// first crash) to the restart: how late the session is on its own
// schedule. The exit is split at the engine's "die" event, to tell how long
// the engine takes to announce an exit from how long the session takes to
// act on the announcement. The engine's list calls are timed too.
func TestReactionLatency(t *testing.T) {
	if os.Getenv("ROLLCALL_BENCH_LATENCY") != "1" {
		t.Skip("set ROLLCALL_BENCH_LATENCY=1 to measure the reaction latency on the real engine")
	}
	const replicas, trials = 10, 20
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()
	m := dockertest.Engine(t)
	run := dockertest.Prefix(t)
	tag, _ := dockertest.DemoappImage(t, "1")

	desired := fmt.Sprintf(`prefix: %s
workloads:
  web:
    image: %s
    replicas: %d
    restart: "no"
    stop_grace_period: 1s
    update: {min_ready: 500ms}
`, run, tag, replicas)
	src := newMemSource(desired)

	type mark struct {
		id string
		at time.Time
	}
	restarts := make(chan mark, 64)
	timed := &timedLists{Client: m}
	s := New(Options{
		Client: timed, Source: src, Mode: ModeAuto, User: "bench",
		LockPath: filepath.Join(t.TempDir(), "rollcall.lock"),
		OnStep: func(st reconcile.Step, at time.Time) {
			if st.Action == reconcile.ActRestart {
				select {
				case restarts <- mark{st.ContainerID, at}:
				default:
				}
			}
		},
	})
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	defer func() { scancel(); <-done }()

	var last Snapshot
	await := func(what string, limit time.Duration, cond func(Snapshot) bool) Snapshot {
		t.Helper()
		deadline := time.After(limit)
		for {
			select {
			case snap, ok := <-s.Snapshots():
				if !ok {
					t.Fatalf("waiting for %s: the session ended", what)
				}
				last = snap
				if cond(snap) {
					return snap
				}
			case <-deadline:
				t.Fatalf("waiting for %s: gave up\n%s", what, describe(last))
			}
		}
	}
	converged := func(s Snapshot) bool {
		return s.Connected && s.Plan.Empty() && s.Progress.Done() && s.Progress.Total == replicas && len(s.Containers) == replicas
	}
	await("the first convergence", 2*time.Minute, converged)

	var detect, restart, exitToDetect, exitToDie, dieToDetect, over []time.Duration
	for i := range trials {
		snap := await("convergence", time.Minute, converged)
		c := snap.Slots[i%replicas].Containers[0]
		drain(restarts)

		before := time.Now()
		if out, err := exec.Command("docker", "kill", c.ID).CombinedOutput(); err != nil {
			t.Fatalf("docker kill: %v: %s", err, out)
		}
		crash := await("the crash in the plan", 30*time.Second, func(s Snapshot) bool {
			return crashStep(s, c.ID) != nil
		})
		seen := crash.At
		var exited time.Time
		for _, cc := range crash.Containers {
			if cc.ID == c.ID && !cc.FinishedAt.IsZero() {
				exited = cc.FinishedAt
				exitToDetect = append(exitToDetect, seen.Sub(exited))
			}
		}
		for _, ev := range crash.Events {
			if ev.ContainerID == c.ID && ev.Action == "die" && !ev.Time.Before(before) {
				dieToDetect = append(dieToDetect, seen.Sub(ev.Time))
				if !exited.IsZero() {
					exitToDie = append(exitToDie, ev.Time.Sub(exited))
				}
			}
		}
		var due time.Time // when rule 4's backoff lets the restart go
		if st := crashStep(crash, c.ID); st.Action == reconcile.ActWait {
			due = st.Until
		}
		var ran mark
		for ran.id != c.ID {
			select {
			case ran = <-restarts:
			case <-time.After(30 * time.Second):
				t.Fatalf("trial %d: no restart of %s\n%s", i, c.Name, describe(last))
			}
		}
		detect = append(detect, seen.Sub(before))
		restart = append(restart, ran.at.Sub(before))
		if !due.IsZero() {
			over = append(over, ran.at.Sub(due))
		}
		t.Logf("trial %2d %s: detect %v, restart %v, backoff due %v after kill", i, c.Name,
			seen.Sub(before).Round(time.Millisecond), ran.at.Sub(before).Round(time.Millisecond), due.Sub(before).Round(time.Millisecond))
	}
	t.Logf("reaction latency over %d trials (median / p95):", trials)
	t.Logf("  kill → crash in the plan:     %v / %v", median(detect), p95(detect))
	t.Logf("  kill → restart issued:        %v / %v", median(restart), p95(restart))
	t.Logf("  exit (FinishedAt) → crash in the plan: %v / %v", median(exitToDetect), p95(exitToDetect))
	t.Logf("    of which exit → engine's die event: %v / %v", median(exitToDie), p95(exitToDie))
	t.Logf("    and die event → crash in the plan:  %v / %v", median(dieToDetect), p95(dieToDetect))
	t.Logf("  backoff due → restart issued: %v / %v (%d trials saw the backoff wait)", median(over), p95(over), len(over))
	lists, images, dies := timed.durations(&timed.lists), timed.durations(&timed.images), timed.durations(&timed.dies)
	t.Logf("  engine list (list + inspect %d): %v / %v over %d lists", replicas, median(lists), p95(lists), len(lists))
	t.Logf("  engine image inspect:            %v / %v over %d", median(images), p95(images), len(images))
	t.Logf("  die event time → received:       %v / %v over %d", median(dies), p95(dies), len(dies))
}

// timedLists times the engine's List and ImageInspect calls, and how late
// its "die" events reach the session.
type timedLists struct {
	docker.Client
	mu     sync.Mutex
	lists  []time.Duration
	images []time.Duration
	dies   []time.Duration
}

func (c *timedLists) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	began := time.Now()
	cs, err := c.Client.List(ctx, prefix)
	c.add(&c.lists, time.Since(began))
	return cs, err
}

func (c *timedLists) ImageInspect(ctx context.Context, ref string) (docker.Image, error) {
	began := time.Now()
	img, err := c.Client.ImageInspect(ctx, ref)
	c.add(&c.images, time.Since(began))
	return img, err
}

func (c *timedLists) Events(ctx context.Context, prefix string, since time.Time) (<-chan docker.Event, <-chan error) {
	in, errc := c.Client.Events(ctx, prefix, since)
	out := make(chan docker.Event)
	go func() {
		defer close(out)
		for ev := range in {
			if ev.Action == "die" {
				c.add(&c.dies, time.Since(ev.Time))
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

func (c *timedLists) add(to *[]time.Duration, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*to = append(*to, d)
}

func (c *timedLists) durations(of *[]time.Duration) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(*of)
}

// crashStep is the plan's restart or backoff wait for the container.
func crashStep(s Snapshot, id string) *reconcile.Step {
	for _, st := range s.Plan.Steps() {
		if st.Action == reconcile.ActRestart && st.ContainerID == id {
			return &st
		}
		if st.Action == reconcile.ActWait && strings.HasPrefix(st.Reason, "crashed") && containerID(s, st.Container) == id {
			return &st
		}
	}
	return nil
}

func containerID(s Snapshot, name string) string {
	for _, c := range s.Containers {
		if c.Name == name {
			return c.ID
		}
	}
	return ""
}

func drain[T any](c chan T) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}

func median(ds []time.Duration) time.Duration { return quantile(ds, 0.5) }
func p95(ds []time.Duration) time.Duration    { return quantile(ds, 0.95) }

// quantile by the nearest-rank method.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))].Round(time.Millisecond)
}
