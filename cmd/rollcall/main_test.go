package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// t0 is the frozen time of the fixed fake-engine states.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// harness runs command lines against a fake engine, in a temporary
// directory that holds the desired file and the journal.
type harness struct {
	t       *testing.T
	fake    *fake.Engine
	now     func() time.Time
	dir     string
	journal string
	// unreachable makes connecting fail, as a stopped engine does.
	unreachable bool
	// terminal names the streams that pretend to be terminals: "stdin".
	terminal map[string]bool
	// environ is added to the environment the commands see.
	environ []string
	// hosts are the engines of a hosts: file, by host name (addHost); a
	// host not there does not answer.
	hosts map[string]docker.Client
	// clock is the fake engines' clock; nil is real time.
	clock *fake.ManualClock

	dialMu sync.Mutex
	dialed map[string]moby.Endpoint // the endpoint each host was last dialled at
}

// newHarness returns a harness over an empty fake engine. A nil clock is
// real time.
func newHarness(t *testing.T, clock *fake.ManualClock) *harness {
	t.Helper()
	now := time.Now
	if clock != nil {
		now = clock.Now
	}
	dir := t.TempDir()
	return &harness{t: t, fake: newTestFake(t, clock, ""), now: now, dir: dir, clock: clock,
		journal: filepath.Join(dir, "state", "journal.jsonl"), terminal: map[string]bool{},
		hosts: map[string]docker.Client{}, dialed: map[string]moby.Endpoint{}}
}

// newTestFake is a fake engine with an engine ID of the test's own (named
// after what, if given): the host lock is one file per engine ID (with the
// pid, for a simulated engine) and prefix in /run/lock, so every test of
// this binary had the same lock for a prefix, and a test could find it
// still held by an earlier test's session winding down (seen once with two
// suites running side by side).
func newTestFake(t *testing.T, clock *fake.ManualClock, what string) *fake.Engine {
	t.Helper()
	var id [6]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	engineID := "fake-test-" + what + hex.EncodeToString(id[:])
	t.Cleanup(func() {
		// The fake is a simulated engine: its key has this process's pid.
		for _, info := range []docker.EngineInfo{{ID: engineID}, {ID: engineID, Simulated: true}} {
			locks, _ := filepath.Glob(session.DefaultLockPath(info, "*"))
			for _, l := range locks {
				_ = os.Remove(l)
			}
		}
	})
	opts := fake.Options{Seed: 1, EngineID: engineID}
	if clock != nil {
		opts.Clock = clock
	}
	return fake.New(opts)
}

// addHost gives host name of a hosts: file an engine of its own, with its
// own engine ID, on the harness's clock.
func (h *harness) addHost(name string) *fake.Engine {
	h.t.Helper()
	f := newTestFake(h.t, h.clock, name+"-")
	h.setHost(name, f)
	return f
}

// setHost makes c the engine of host name; nil: the host does not answer.
func (h *harness) setHost(name string, c docker.Client) {
	h.dialMu.Lock()
	defer h.dialMu.Unlock()
	if c == nil {
		delete(h.hosts, name)
		return
	}
	h.hosts[name] = c
}

// dialedAt is the endpoint host name was last dialled at.
func (h *harness) dialedAt(name string) (moby.Endpoint, bool) {
	h.dialMu.Lock()
	defer h.dialMu.Unlock()
	ep, ok := h.dialed[name]
	return ep, ok
}

// file writes the desired-state file and returns its path.
func (h *harness) file(name, content string) string {
	h.t.Helper()
	path := filepath.Join(h.dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs one command line with stdin and waits for it.
func (h *harness) run(stdin string, args ...string) result {
	h.t.Helper()
	return h.runCtx(context.Background(), stdin, args...)
}

func (h *harness) runCtx(ctx context.Context, stdin string, args ...string) result {
	h.t.Helper()
	var stdout, stderr syncBuffer
	code := run(ctx, h.env(strings.NewReader(stdin), &stdout, &stderr), append([]string{"--journal", h.journal}, args...))
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func (h *harness) env(stdin *strings.Reader, stdout, stderr *syncBuffer) env {
	return env{
		stdin: stdin, stdout: stdout, stderr: stderr,
		connect: func(context.Context, string) (docker.Client, error) {
			if h.unreachable {
				return nil, errors.New("connect to docker engine unix:///nonexistent.sock: connection refused")
			}
			return h.fake, nil
		},
		dialHost: func(_ context.Context, name string, ep moby.Endpoint) (docker.Client, error) {
			h.dialMu.Lock()
			h.dialed[name] = ep
			c, ok := h.hosts[name]
			h.dialMu.Unlock()
			if !ok {
				return nil, fmt.Errorf("connect to docker engine %s: connection refused", ep)
			}
			return c, nil
		},
		now:     h.now,
		environ: append([]string{"USER=tester", "TERM=xterm-256color"}, h.environ...),
		terminal: func(f any) bool {
			switch f {
			case stdin:
				return h.terminal["stdin"]
			case stdout:
				return h.terminal["stdout"]
			case stderr:
				return h.terminal["stderr"]
			}
			return false
		},
		darkBackground: func() bool { return true },
	}
}

// journalEntries are the journal's steps, one entry each (its "started"
// line folded into the end), without the operator's decisions.
func (h *harness) journalEntries() []journal.Entry {
	h.t.Helper()
	es, err := journal.Read(h.journal, 0)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []journal.Entry
	for _, e := range journal.Fold(es) {
		if e.Result != journal.ResultDecision {
			out = append(out, e)
		}
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the agent's concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// golden compares got with testdata/name, rewriting it under -update. On a
// mismatch it writes testdata/name.got beside it for a diff.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		_ = os.WriteFile(path+".got", []byte(got), 0o644)
		t.Fatalf("%s differs from the golden file (got written to %s.got):\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
	_ = os.Remove(path + ".got")
}

func mustContain(t *testing.T, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s lacks %q:\n%s", what, sub, s)
		}
	}
}
