package demo

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
)

// The demo on the fake engine shows every kind of step, and reaches
// convergence when every step is approved, one at a time.
func TestDemoOnFakeConvergesStepByStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	f, lock, path := staged(t, 50*time.Millisecond)
	s := session.New(session.Options{Client: f, Source: source.File(path), Mode: session.ModeStep,
		Lock: lock, Resync: time.Second})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	seen := map[string]bool{}
	approved := ""
	converged := false
	for snap := range s.Snapshots() {
		for _, st := range snap.Plan.Steps() {
			seen[string(st.Action)] = true
		}
		if snap.Progress.Total > 0 && snap.Progress.Ready == snap.Progress.Total && snap.Plan.Empty() && snap.Running == nil {
			converged = true
			break
		}
		if snap.Next != "" && snap.Next != approved {
			approved = snap.Next
			s.Do(session.ApproveStep{Key: snap.Next})
		}
		if ctx.Err() != nil {
			t.Fatalf("not converged: %s", snap.Plan)
		}
	}
	if !converged {
		t.Fatal("the session ended before the demo converged")
	}
	cancel()
	<-done
	for _, a := range []string{"start", "roll", "restart", "update", "stop"} {
		if !seen[a] {
			t.Errorf("the demo never showed a %s step (saw %v)", a, seen)
		}
	}
	cs, _ := f.List(context.Background(), Prefix)
	if len(cs) != 5 {
		t.Fatalf("%d containers at the end, want 3 web + 2 worker", len(cs))
	}
	for _, c := range cs {
		if c.Image != ImageV2 || c.Labels[docker.WorkloadLabel(Prefix)] == "old-api" {
			t.Errorf("left over: %s %s", c.Name, c.Image)
		}
	}
}

func TestDemoFilesParse(t *testing.T) {
	for name, text := range map[string]string{"start": startYAML(Prefix, DefaultImages, DefaultImages), "desired": desiredYAML(Prefix, DefaultImages, DefaultImages)} {
		d, err := load.Parse(name, []byte(text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if d.Prefix != Prefix {
			t.Fatalf("%s: prefix %q", name, d.Prefix)
		}
	}
}

func TestCleanRemovesOnlyOurs(t *testing.T) {
	ctx := t.Context()
	f := NewFake(t.Context(), 0)
	dir := t.TempDir()
	info, _ := f.Info(ctx)
	lock, err := session.AcquireLock(info, Prefix, "tester")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	if _, err := Stage(ctx, f, StageOptions{Dir: dir, Lock: lock, Log: io.Discard}); err != nil {
		t.Fatal(err)
	}
	other := docker.Container{Name: "someone-else", Image: ImageV1, State: docker.StateRunning,
		Labels: map[string]string{"rollcall.managed": "true"}}
	if _, err := f.AddContainer(other); err != nil {
		t.Fatal(err)
	}
	// Carries the demo's label but not its name: listed, and still kept.
	lookalike := docker.Container{Name: "lookalike", Image: ImageV1, State: docker.StateRunning,
		Labels: map[string]string{docker.ManagedLabel(Prefix): "true"}}
	if _, err := f.AddContainer(lookalike); err != nil {
		t.Fatal(err)
	}
	out, err := Clean(ctx, f, CleanOptions{Dir: dir})
	if err != nil || out.Containers != 6 {
		t.Fatalf("removed %d, err %v; want the 6 demo containers", out.Containers, err)
	}
	if cs, _ := f.List(ctx, Prefix); len(cs) != 1 || cs[0].Name != "lookalike" {
		t.Fatalf("after clean %v, want only the lookalike left", cs)
	}
	if cs, _ := f.List(ctx, "rollcall"); len(cs) != 1 {
		t.Fatalf("touched a container of another prefix: %v", cs)
	}
	if _, err := os.Stat(filepath.Join(dir, "rollcall.yaml")); !os.IsNotExist(err) {
		t.Fatalf("desired file not removed: %v", err)
	}
	if slices.ContainsFunc(f.Mutations(), func(c string) bool {
		return strings.Contains(c, "someone-else") || strings.Contains(c, "lookalike")
	}) {
		t.Fatal("a mutating call named the other container")
	}
}

// One rollout approval (the console's `A`) takes the staged demo to
// converged: every step, those that follow the waits too, runs on it.
func TestDemoConvergesOnOneRolloutApproval(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	f, lock, path := staged(t, 50*time.Millisecond)
	s := session.New(session.Options{Client: f, Source: source.File(path), Mode: session.ModeStep,
		Lock: lock, Resync: time.Second})
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	approved := false
	ran := map[string]bool{}
	for snap := range s.Snapshots() {
		for _, r := range snap.Recent {
			ran[string(r.Step.Action)] = true
		}
		if !approved && snap.Fresh && len(snap.Plan.Executable()) > 0 {
			if n := len(snap.Plan.Executable()) + len(snap.Plan.Then()); n != 10 {
				t.Errorf("the staged demo shows %d steps, want 10", n)
			}
			s.Do(session.ApproveRollout{})
			approved = true
		}
		if approved && snap.Steady && snap.Progress.Done() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("not converged on one approval:\n%s", snap.Plan)
		}
	}
	cancel()
	<-done
	for _, a := range []string{"start", "roll", "restart", "update", "stop"} {
		if !ran[a] {
			t.Errorf("no %s step ran (ran %v)", a, ran)
		}
	}
}

// staged stages the demo on a fake engine whose containers turn healthy
// ready after they start, under the host lock (released at the end of t).
// It returns the engine, the lock and the desired file.
func staged(t *testing.T, ready time.Duration) (*fake.Engine, *session.Lock, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	f := NewFake(t.Context(), ready)
	info, err := f.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := session.AcquireLock(info, Prefix, "tester")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lock.Release)
	path, err := Stage(ctx, f, StageOptions{Dir: t.TempDir(), Lock: lock, Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	return f, lock, path
}
