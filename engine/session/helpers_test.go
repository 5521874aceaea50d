package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/spec"
)

const pfx = "rollcall"

// waitLimit bounds every wait of a test; a passing test takes a fraction.
const waitLimit = 5 * time.Second

// desiredYAML is a one-workload desired state: web on image, replicas
// slots, a 1s healthcheck, and extra lines under update.
func desiredYAML(image string, replicas int, update ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workloads:\n  web:\n    image: %s\n    replicas: %d\n", image, replicas)
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s}\n")
	b.WriteString("    update:\n      health_deadline: 10s\n")
	for _, u := range update {
		b.WriteString("      " + u + "\n")
	}
	return b.String()
}

// memSource is a desired source held in memory, changed with Set.
type memSource struct {
	mu   sync.Mutex
	text string
	ch   chan struct{}
}

func newMemSource(text string) *memSource { return &memSource{text: text, ch: make(chan struct{}, 1)} }

func (m *memSource) Name() string { return "mem.yaml" }

func (m *memSource) Load(context.Context) (*spec.Desired, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return load.Parse("mem.yaml", []byte(m.text))
}

func (m *memSource) Changes(context.Context) <-chan struct{} { return m.ch }

func (m *memSource) Set(text string) {
	m.mu.Lock()
	m.text = text
	m.mu.Unlock()
	loopkit.Signal(m.ch)
}

// newEngine is a fake engine on a manual clock with web:v1 and web:v2,
// both healthy one second after start.
func newEngine() (*fake.Engine, *fake.ManualClock) {
	clock := fake.NewManualClock(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	f := fake.New(fake.Options{Clock: clock, Seed: 1})
	f.AddImage("web:v1", "sha256:1111", fake.Behaviour{ReadyAfter: time.Second})
	f.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Second})
	return f, clock
}

// seed converges the fake engine to text with the clock moving as needed,
// then forgets the calls it took.
func seed(t *testing.T, f *fake.Engine, clock *fake.ManualClock, text string) {
	t.Helper()
	d, err := load.Parse("seed.yaml", []byte(text))
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	_, err = reconciletest.Converge(context.Background(), f, d, reconciletest.Options{
		Now:       clock.Now,
		Sleep:     func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil },
		MaxRounds: 100,
	})
	if err != nil {
		t.Fatalf("seed: %v", err)
	}
	f.ResetCalls()
}

// harness runs one session on a fake engine.
type harness struct {
	t     *testing.T
	fake  *fake.Engine
	clock *fake.ManualClock
	src   *memSource
	opts  Options
	s     *Session
	last  Snapshot
	done  chan error
}

func newHarness(t *testing.T, f *fake.Engine, clock *fake.ManualClock, text string, mode Mode) *harness {
	src := newMemSource(text)
	return &harness{t: t, fake: f, clock: clock, src: src, opts: Options{
		Client: f, Source: src, Mode: mode, User: "tester", Now: clock.Now,
		LockPath: filepath.Join(t.TempDir(), "rollcall.lock"),
		Coalesce: 2 * time.Millisecond, Settle: -1,
	}}
}

// withJournal makes the session journal to a file and returns its path.
func (h *harness) withJournal() string {
	path := filepath.Join(h.t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { j.Close() })
	h.opts.Journal = j
	return path
}

func (h *harness) start() *harness {
	h.t.Helper()
	h.s = New(h.opts)
	return h.run()
}

// run runs h.s until the test ends, and checks that it returns then.
func (h *harness) run() *harness {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.done = make(chan error, 1)
	go func() { h.done <- h.s.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-h.done:
			if err != nil {
				h.t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			h.t.Errorf("Run did not return after cancel")
		}
	})
	return h
}

// waitFor reads snapshots until cond holds, without moving the clock.
func (h *harness) waitFor(what string, cond func(Snapshot) bool) Snapshot {
	h.t.Helper()
	return h.await(what, cond, false)
}

// drive reads snapshots until cond holds; whenever the session is idle it
// moves the clock 500ms, lets the fake engine catch up and asks for a relist.
func (h *harness) drive(what string, cond func(Snapshot) bool) Snapshot {
	h.t.Helper()
	return h.await(what, cond, true)
}

func (h *harness) await(what string, cond func(Snapshot) bool, move bool) Snapshot {
	h.t.Helper()
	if h.last.Seq > 0 && cond(h.last) {
		return h.last
	}
	deadline := time.After(waitLimit)
	for {
		idle := time.After(20 * time.Millisecond)
		select {
		case snap, ok := <-h.s.Snapshots():
			if !ok {
				h.t.Fatalf("waiting for %s: the session ended", what)
			}
			h.last = snap
			if cond(snap) {
				return snap
			}
			continue
		case <-idle:
		case <-deadline:
			h.t.Fatalf("waiting for %s: gave up; last snapshot:\n%s", what, describe(h.last))
		}
		if move && h.last.Running == nil {
			h.clock.Advance(500 * time.Millisecond)
			h.fake.Tick()
			h.s.Do(Refresh{})
		}
	}
}

// settle gives the session time to act on everything asked so far: three
// times, it moves the clock a millisecond, asks for a relist and waits for
// a plan listed after that with no step running.
func (h *harness) settle() Snapshot {
	h.t.Helper()
	for range 3 {
		h.clock.Advance(time.Millisecond)
		after := h.clock.Now()
		h.s.Do(Refresh{})
		h.waitFor("the session to settle", func(s Snapshot) bool { return s.Running == nil && !s.PlanAt.Before(after) })
	}
	return h.last
}

// describe renders a snapshot for failure messages.
func describe(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq %d mode %s connected %v progress %s source err %v standing %v\n", s.Seq, s.Mode, s.Connected, s.Progress, s.SourceErr, s.Standing)
	if s.Pause != nil {
		fmt.Fprintf(&b, "paused: %s\n", s.Pause.Reason)
	}
	if s.Confirm != nil {
		fmt.Fprintf(&b, "confirm: %s %s\n", s.Confirm.Kind, s.Confirm.Prompt)
	}
	b.WriteString(s.Plan.String())
	for _, st := range s.Plan.Executable() {
		fmt.Fprintf(&b, "  status %s: %+v\n", st.Key(), s.Steps[st.Key()])
	}
	for _, c := range s.Containers {
		fmt.Fprintf(&b, "  container %s %s %s %s %s\n", c.Name, c.State, c.Health, c.Image, c.Node)
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "  reply: %s\n", n.Text)
	}
	for _, f := range s.Facts {
		fmt.Fprintf(&b, "  fact %d %s: %s\n", f.Seq, f.Kind, f.Text())
	}
	return b.String()
}

// hasNote reports whether s says substr to the operator: in a fact's
// words (Fact.Text), or in a reply to an intent (Notes).
func hasNote(s Snapshot, substr string) bool {
	for _, f := range s.Facts {
		if strings.Contains(f.Text(), substr) {
			return true
		}
	}
	for _, n := range s.Notes {
		if strings.Contains(n.Text, substr) {
			return true
		}
	}
	return false
}

// running counts the running containers of image.
func running(s Snapshot, image string) int {
	n := 0
	for _, c := range s.Containers {
		if c.State == docker.StateRunning && (image == "" || c.Image == image) {
			n++
		}
	}
	return n
}

func countPrefix(calls []string, prefix string) int {
	n := 0
	for _, c := range calls {
		if strings.HasPrefix(c, prefix) {
			n++
		}
	}
	return n
}

// stepEntries are the journal's steps, one entry each (journal.Fold),
// without the operator's decisions.
func stepEntries(entries []journal.Entry) []journal.Entry {
	var out []journal.Entry
	for _, e := range journal.Fold(entries) {
		if e.Result != journal.ResultDecision {
			out = append(out, e)
		}
	}
	return out
}
