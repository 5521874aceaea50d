package tui

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// The console against a real session on the fake engine: what the keys
// shown in help do to the engine.

func desiredYAML(image string) string {
	return fmt.Sprintf("workloads:\n  web:\n    image: %s\n    replicas: 3\n"+
		"    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s}\n"+
		"    update:\n      health_deadline: 10s\n", image)
}

// textSource is a desired state held in memory.
type textSource struct{ text string }

func (s textSource) Name() string { return "mem.yaml" }
func (s textSource) Load(context.Context) (*spec.Desired, error) {
	return load.Parse("mem.yaml", []byte(s.text))
}
func (s textSource) Changes(context.Context) <-chan struct{} { return nil }

// rollEngine is a fake engine running web:v1 ×3, with web:v2 available.
func rollEngine(t *testing.T) (*fake.Engine, *fake.ManualClock) {
	t.Helper()
	clock := fake.NewManualClock(t0)
	f := fake.New(fake.Options{Clock: clock, Seed: 1})
	f.AddImage("web:v1", "sha256:1111", fake.Behaviour{ReadyAfter: time.Second})
	f.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Second})
	d, err := load.Parse("seed.yaml", []byte(desiredYAML("web:v1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reconciletest.Converge(context.Background(), f, d, reconciletest.Options{
		Now:       clock.Now,
		Sleep:     func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil },
		MaxRounds: 100,
	}); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	return f, clock
}

// startSession runs a session on f in mode, stopped when the test ends.
func startSession(t *testing.T, f *fake.Engine, clock *fake.ManualClock, mode session.Mode) *session.Session {
	s := session.New(session.Options{Client: f, Source: textSource{desiredYAML("web:v2")}, Mode: mode, User: "tester",
		Now: clock.Now, LockPath: filepath.Join(t.TempDir(), "rollcall.lock"), Coalesce: 2 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("session: %v", err)
		}
	})
	return s
}

// sessionConsole is a console on session s, driven as the program would.
func sessionConsole(t *testing.T, s *session.Session, w, h int) *console {
	c := &console{t: t, rec: &recorder{}}
	c.m = New(Options{Theme: theme.Mono, Do: func(i session.Intent) { c.rec.do(i); s.Do(i) }, Snapshots: s.Snapshots()})
	c.m, _ = update(c.m, tea.WindowSizeMsg{Width: w, Height: h})
	c.drive(c.m.Init())
	return c
}

// await settles the console until cond holds; while waiting it moves the
// clock half a second whenever nothing runs, as time passes on a host.
func (c *console) await(t *testing.T, f *fake.Engine, clock *fake.ManualClock, s *session.Session, what string, cond func(*board) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !c.m.has || !cond(&c.m.board) {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s; screen:\n%s", what, c.screen())
		}
		c.settle()
		if c.m.has && !c.m.board.busy {
			clock.Advance(500 * time.Millisecond)
			f.Tick()
			s.Do(session.Refresh{})
		}
	}
}

// TestConsoleRollsWithEnter: on a pending roll of 3 replicas in step mode,
// pressing enter for each next step (the key help shows) rolls every slot
// to v2 and nothing runs unapproved; the screen follows the roll.
func TestConsoleRollsWithEnter(t *testing.T) {
	f, clock := rollEngine(t)
	s := startSession(t, f, clock, session.ModeStep)
	c := sessionConsole(t, s, 80, 24)

	c.await(t, f, clock, s, "a plan with steps", func(b *board) bool { return b.next != "" })
	if !strings.Contains(c.screen(), "STEP") || !strings.Contains(c.screen(), "enter approve") {
		t.Fatalf("step mode screen:\n%s", c.screen())
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("steps ran before any approval: %q", m)
	}
	presses := 0
	for !(c.m.board.header.progress.Done() && len(c.m.board.blocks) == 0) {
		if presses > 30 {
			t.Fatalf("not converged after %d enters; screen:\n%s", presses, c.screen())
		}
		next := c.m.board.next
		if next == "" || c.m.board.busy {
			c.await(t, f, clock, s, "the next step", func(b *board) bool {
				return (b.next != "" && b.next != next && !b.busy) || (b.header.progress.Done() && len(b.blocks) == 0)
			})
			continue
		}
		c.keys("enter")
		presses++
		c.await(t, f, clock, s, "the approved step to run", func(b *board) bool { return b.next != next })
	}
	screen := c.screen()
	if !strings.Contains(screen, "converged: nothing to do") || !strings.Contains(screen, "3/3 slots up-to-date & healthy") {
		t.Errorf("converged screen:\n%s", screen)
	}
	running := 0
	for _, ct := range c.m.board.slots {
		for _, cv := range ct.cs {
			if cv.image != "web:v2" || cv.health != theme.Healthy {
				t.Errorf("slot %s: %s %s", ct.target, cv.image, cv.health)
			}
			running++
		}
	}
	if running != 3 {
		t.Errorf("%d containers at the end, want 3", running)
	}
	for _, i := range c.rec.take() {
		if _, ok := i.(session.ApproveStep); !ok {
			t.Errorf("the console sent %#v; only enter was pressed", i)
		}
	}
	if presses != 6 {
		t.Errorf("%d enters, want 6: a start and a roll per slot", presses)
	}
}

// TestConsoleWatchLeavesEngineAlone: in watch mode the same keys, and
// every other mutating key, change nothing on the engine.
func TestConsoleWatchLeavesEngineAlone(t *testing.T) {
	f, clock := rollEngine(t)
	s := startSession(t, f, clock, session.ModeWatch)
	c := sessionConsole(t, s, 120, 40)
	c.await(t, f, clock, s, "a plan with steps", func(b *board) bool { return b.next != "" })
	if !strings.Contains(c.screen(), "WATCH (read-only)") {
		t.Fatalf("watch screen:\n%s", c.screen())
	}
	for range 3 {
		c.keys("enter", "A", "space", "p", "s", "r", "y", "R", "y", "E", "y", "c", "y")
		c.await(t, f, clock, s, "time to pass", func(b *board) bool { return true })
		c.settle()
	}
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("watch mode sent intents %#v", got)
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Errorf("watch mode changed the engine: %q", m)
	}
}
