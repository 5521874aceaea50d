package main

// End-to-end test of the console (issue 5, item 3): the built binary runs in
// a real pseudo-terminal (tmux) against the real Docker engine. Keys go in
// with send-keys, the screen comes out with capture-pane, and the engine is
// checked beside it. It skips, like the other real-engine tests, only when
// no engine (or no tmux) is there and ROLLCALL_REQUIRE_DOCKER is not "1".

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
)

// e2ePhase bounds each phase of the test: the CI machine may be loaded.
const e2ePhase = 60 * time.Second

// tmuxTerm is one tmux server on a per-run socket, with the console in its
// one session.
type tmuxTerm struct {
	t      *testing.T
	tmux   string
	socket string
	last   string            // the last screen captured, for failure messages
	stderr string            // the file the program's stderr goes to (the last opened)
	status map[string]string // by session: the file its exit status goes to
}

// needTmux finds tmux, or skips (fails with ROLLCALL_REQUIRE_DOCKER=1).
func needTmux(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("tmux")
	if err != nil {
		dockertest.Skip(t, fmt.Errorf("no tmux: %w", err))
	}
	return path
}

func newTmuxTerm(t *testing.T, tmux, socket string) *tmuxTerm {
	x := &tmuxTerm{t: t, tmux: tmux, socket: socket}
	t.Cleanup(func() {
		_, _ = x.run("kill-server")
		if dir := os.Getenv("TMUX_TMPDIR"); dir == "" {
			_ = os.Remove(filepath.Join("/tmp", fmt.Sprintf("tmux-%d", os.Getuid()), socket))
		}
	})
	return x
}

func (x *tmuxTerm) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, x.tmux, append([]string{"-L", x.socket, "-f", "/dev/null"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// open starts argv in dir in a new 100×30 session. Its stderr goes to
// dir/<session>.stderr and, once it exits, its exit status to
// dir/<session>.status: tmux's own pane_dead_status can lag the exit by
// seconds. The pane stays after the program exits, for a last capture.
func (x *tmuxTerm) open(session, dir string, argv ...string) {
	x.t.Helper()
	base := filepath.Join(dir, session)
	if x.status == nil {
		x.status = map[string]string{}
	}
	x.stderr, x.status[session] = base+".stderr", base+".status"
	args := []string{"start-server", ";", "set-option", "-g", "remain-on-exit", "on", ";",
		"new-session", "-d", "-s", session, "-x", "100", "-y", "30", "-c", dir,
		"sh", "-c", `env TERM=xterm-256color NO_COLOR=1 "$@" 2>"$0.stderr"; echo $? >"$0.status"`, base}
	if _, err := x.run(append(args, argv...)...); err != nil {
		x.t.Fatal(err)
	}
}

// keys sends tmux key names (Enter, Space) or, with literal, the text as typed.
func (x *tmuxTerm) keys(session string, literal bool, keys ...string) {
	x.t.Helper()
	args := []string{"send-keys", "-t", session}
	if literal {
		args = append(args, "-l")
	}
	if _, err := x.run(append(args, keys...)...); err != nil {
		x.fail("%v", err)
	}
}

func (x *tmuxTerm) capture(session string) string {
	x.t.Helper()
	out, err := x.run("capture-pane", "-p", "-t", session)
	if err != nil {
		x.fail("%v", err)
	}
	x.last = out
	return out
}

// dead reports whether the program in session has exited, and its exit status.
func (x *tmuxTerm) dead(session string) (bool, string) {
	b, err := os.ReadFile(x.status[session])
	if err != nil || !strings.HasSuffix(string(b), "\n") {
		return false, ""
	}
	return true, strings.TrimSpace(string(b))
}

// fail logs the last screen and the program's stderr, and fails the test now.
func (x *tmuxTerm) fail(format string, args ...any) {
	x.t.Helper()
	x.t.Logf("last screen:\n%s", x.last)
	if b, err := os.ReadFile(x.stderr); err == nil && len(b) > 0 {
		x.t.Logf("stderr:\n%s", b)
	}
	x.t.Fatalf(format, args...)
}

// waitScreen polls the screen until ok says so, or fails after e2ePhase.
func (x *tmuxTerm) waitScreen(session, what string, ok func(string) bool) string {
	x.t.Helper()
	deadline := time.Now().Add(e2ePhase)
	for {
		s := x.capture(session)
		if ok(s) {
			return s
		}
		if dead, status := x.dead(session); dead {
			x.fail("waiting for %s: the console exited (status %s)", what, status)
		}
		if time.Now().After(deadline) {
			x.fail("waiting for %s: not there after %s", what, e2ePhase)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// quit presses q and waits for the program to exit with status 0.
func (x *tmuxTerm) quit(session string) {
	x.t.Helper()
	x.keys(session, true, "q")
	deadline := time.Now().Add(15 * time.Second)
	for {
		dead, status := x.dead(session)
		if dead {
			if status != "0" {
				x.capture(session)
				x.fail("the console exited with status %s after q", status)
			}
			return
		}
		if time.Now().After(deadline) {
			x.capture(session)
			// a goroutine dump into stderr, for the failure message: the
			// program is the child of the pane's shell
			if out, err := x.run("display-message", "-p", "-t", session, "#{pane_pid}"); err == nil {
				sh := strings.TrimSpace(out)
				if kids, err := os.ReadFile("/proc/" + sh + "/task/" + sh + "/children"); err == nil {
					for _, pid := range strings.Fields(string(kids)) {
						_ = exec.Command("kill", "-QUIT", pid).Run()
					}
					time.Sleep(time.Second)
				}
			}
			x.fail("the console still runs 15s after q")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

var (
	// plan step lines: [cursor][next] glyph status action target
	nextQueuedRE = regexp.MustCompile(`→ \S+ queued +(start|roll) +(web/\d)`)
	runningRE    = regexp.MustCompile(`\S running +(start|stop|roll|restart|update) +web/\d`)
	rollSeenRE   = regexp.MustCompile(`\S (running|done) +roll +web/\d`)
	pendingRE    = regexp.MustCompile(`\S queued +start +web/0 `)
	// watchPendingRE is the same step in watch mode, where it never runs:
	// planned, not queued.
	watchPendingRE = regexp.MustCompile(`\S planned +start +web/0 `)
)

// e2eWorkload is the desired state: 3 replicas of the demoapp at tag.
func e2eWorkload(prefix, tag, version string) string {
	return `prefix: ` + prefix + `
workloads:
  web:
    image: ` + tag + `
    version: "` + version + `"
    replicas: 3
    command: ["-listen", ":8080", "-version", "` + version + `"]
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 3s, retries: 3}
    resources: {memory: 64M}
    stop_grace_period: 2s
    update: {parallelism: 1, health_deadline: 60s}
`
}

// TestConsoleEndToEnd: on a pending roll of 3 replicas, the console in step
// mode runs the whole roll with enter alone, and the screen and the engine
// both show it; in --watch the same keys leave the engine untouched.
func TestConsoleEndToEnd(t *testing.T) {
	m := dockertest.Engine(t)
	tmux := needTmux(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	info, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := dockertest.Prefix(t)
	t.Cleanup(func() { _ = os.Remove(session.DefaultLockPath(info, prefix)) })
	tagV1, idV1 := dockertest.DemoappImage(t, "v1")
	tagV2, idV2 := dockertest.DemoappImage(t, "v2")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	v1, v2 := filepath.Join(dir, "v1.yaml"), filepath.Join(dir, "v2.yaml")
	for path, text := range map[string]string{v1: e2eWorkload(prefix, tagV1, "v1"), v2: e2eWorkload(prefix, tagV2, "v2")} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	applyJournal := filepath.Join(dir, "apply.jsonl")
	apply := func(file string) {
		t.Helper()
		res := runBinary(t, ctx, bin, "--journal", applyJournal, "apply", "--yes", "--timeout", "2m", "-f", file)
		if res.code != exitOK {
			t.Fatalf("apply %s: exit %d\nstdout:\n%s\nstderr:\n%s", filepath.Base(file), res.code, res.stdout, res.stderr)
		}
	}
	// all3 reports whether the engine holds exactly 3 running, healthy
	// containers of image id, and returns them.
	all3 := func(id string) ([]docker.Container, bool) {
		t.Helper()
		cs, err := m.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			if c.ImageID != id || c.State != docker.StateRunning || c.Health != docker.HealthHealthy {
				return cs, false
			}
		}
		return cs, len(cs) == 3
	}

	// same reports whether cs are exactly the containers of before, none
	// restarted, all running image id.
	same := func(what string, before, cs []docker.Container, id string) bool {
		t.Helper()
		was := map[string]docker.Container{}
		for _, c := range before {
			was[c.ID] = c
		}
		ok := len(cs) == len(before)
		if !ok {
			t.Errorf("%s: %d containers, %d before", what, len(cs), len(before))
		}
		for _, c := range cs {
			b, found := was[c.ID]
			switch {
			case !found:
				t.Errorf("%s: a new container %s", what, c.Name)
				ok = false
			case !c.StartedAt.Equal(b.StartedAt) || c.State != docker.StateRunning || c.ImageID != id:
				t.Errorf("%s: container %s changed: started %s → %s, state %s, image %s", what, c.Name, b.StartedAt, c.StartedAt, c.State, c.ImageID)
				ok = false
			}
		}
		return ok
	}

	// 1. v1, converged headless.
	apply(v1)
	initial, ok := all3(idV1)
	if !ok {
		t.Fatalf("after apply v1: want 3 healthy v1 containers, got %+v", initial)
	}
	t.Logf("setup (images, build, apply v1) took %s", time.Since(began).Round(time.Millisecond))

	// 2. The console in step mode on v2: a pending roll.
	term := newTmuxTerm(t, tmux, prefix)
	consoleJournal := filepath.Join(dir, "journal.jsonl")
	term.open("step", dir, bin, "-f", "v2.yaml", "--journal", consoleJournal)
	phase := time.Now()
	term.waitScreen("step", "the pending roll in STEP mode", func(s string) bool {
		return strings.Contains(s, "STEP") && strings.Contains(s, "v2.yaml ✓ parsed") && pendingRE.MatchString(s)
	})
	t.Logf("console showed the pending roll after %s", time.Since(phase).Round(time.Millisecond))
	// step mode does nothing unasked
	time.Sleep(2 * time.Second)
	if cs, err := m.List(ctx, prefix); err != nil || !same("step mode before any key", initial, cs, idV1) {
		term.capture("step")
		term.fail("step mode acted before enter (list error: %v)", err)
	}

	// 3. enter, step by step, until the engine and the screen both show 3/3
	// on v2. Each step has e2ePhase to show up.
	phase = time.Now()
	deadline := phase.Add(e2ePhase)
	var (
		presses   int
		approved  []string // what each press approved: "start web/0", ...
		lastNext  string
		lastPress time.Time
		rollFrame string // a frame with a roll step running or done
		midFrame  string // web/1's roll about to be approved: the slot holds old and new
		final     string
	)
	for {
		s := term.capture("step")
		if rollFrame == "" && rollSeenRE.MatchString(s) {
			rollFrame = s
		}
		if strings.Contains(s, "3/3 slots up-to-date & healthy") && strings.Contains(s, "converged: nothing to do") {
			if _, done := all3(idV2); done {
				final = s
				break
			}
		}
		if dead, status := term.dead("step"); dead {
			term.fail("mid-roll: the console exited (status %s)", status)
		}
		if time.Now().After(deadline) {
			cs, _ := all3(idV2)
			term.fail("no next step nor the end of the roll within %s: %d presses %v; engine: %+v", e2ePhase, presses, approved, cs)
		}
		if next := nextQueuedRE.FindStringSubmatch(s); next != nil && !runningRE.MatchString(s) {
			step := next[1] + " " + next[2]
			// once per step, or again if it still waits after 3s
			if step != lastNext || time.Since(lastPress) > 3*time.Second {
				if step == "roll web/1" && midFrame == "" {
					midFrame = s
				}
				term.keys("step", false, "Enter")
				presses++
				if step != lastNext {
					approved = append(approved, step)
				}
				lastNext, lastPress = step, time.Now()
				deadline = lastPress.Add(e2ePhase)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("roll went through in %s with %d enter presses: %v", time.Since(phase).Round(time.Millisecond), presses, approved)
	want := []string{"start web/0", "roll web/0", "start web/1", "roll web/1", "start web/2", "roll web/2"}
	if strings.Join(approved, ",") != strings.Join(want, ",") {
		t.Errorf("approved in order %v, want %v", approved, want)
	}
	if rollFrame == "" {
		t.Errorf("no frame showed a roll step running or done")
	} else {
		t.Logf("a frame of the roll:\n%s", rollFrame)
	}
	t.Logf("the final frame:\n%s", final)
	for _, w := range []string{"STEP", "3/3 slots up-to-date & healthy", "✔ roll web/2"} {
		if !strings.Contains(final, w) {
			t.Errorf("final screen lacks %q:\n%s", w, final)
		}
	}
	rolled, ok := all3(idV2)
	if !ok {
		t.Errorf("engine after the roll: want exactly 3 running, healthy v2 containers, got %+v", rolled)
	}
	// enter with nothing to approve is harmless
	term.keys("step", false, "Enter")
	term.waitScreen("step", "the nothing-to-approve flash", func(s string) bool {
		return strings.Contains(s, "nothing to approve")
	})
	time.Sleep(time.Second)
	if cs, err := m.List(ctx, prefix); err != nil || !same("enter when converged", rolled, cs, idV2) {
		t.Errorf("enter when converged touched the engine (list error: %v)", err)
	}
	entries := readJournal(t, consoleJournal)
	counts := map[string]int{}
	for _, e := range entries {
		if e.Result != journal.ResultOK || e.Mode != "step" || e.Workload != "web" {
			t.Errorf("journal entry: %+v", e)
		}
		counts[e.Action]++
	}
	if len(entries) != 6 || counts["start"] != 3 || counts["roll"] != 3 {
		t.Errorf("journal: %d entries %v, want 3 start and 3 roll", len(entries), counts)
	}
	if midFrame == "" {
		midFrame = rollFrame
	}
	if os.Getenv("ROLLCALL_E2E_CAPTURE") == "1" && midFrame != "" {
		if err := os.WriteFile(filepath.Join("testdata", "e2e-screen.txt"), []byte(midFrame), 0o644); err != nil {
			t.Error(err)
		}
	}
	term.quit("step")
	if _, err := term.run("kill-session", "-t", "step"); err != nil {
		t.Fatal(err)
	}

	// 4. --watch on the same pending roll: the keys must not touch the engine.
	phase = time.Now()
	apply(v1)
	before, ok := all3(idV1)
	if !ok {
		t.Fatalf("after apply v1 again: want 3 healthy v1 containers, got %+v", before)
	}
	watchJournal := filepath.Join(dir, "watch.jsonl")
	term.open("watch", dir, bin, "--watch", "-f", "v2.yaml", "--journal", watchJournal)
	term.waitScreen("watch", "the pending roll in WATCH mode", func(s string) bool {
		return strings.Contains(s, "WATCH (read-only)") && watchPendingRE.MatchString(s)
	})
	for _, k := range []struct {
		literal bool
		key     string
	}{{false, "Enter"}, {true, "A"}, {false, "Space"}, {true, "r"}, {true, "y"}, {true, "R"}, {true, "y"}, {true, "p"}, {true, "s"}, {true, "E"}, {true, "y"}} {
		term.keys("watch", k.literal, k.key)
		time.Sleep(150 * time.Millisecond)
	}
	time.Sleep(5 * time.Second)
	s := term.capture("watch")
	if !strings.Contains(s, "WATCH (read-only)") || !watchPendingRE.MatchString(s) || strings.Contains(s, "Roll back") || strings.Contains(s, "Recreate") {
		term.fail("watch screen after the keys: want WATCH, the pending start, and no dialog")
	}
	t.Logf("the watch frame after the keys:\n%s", s)
	after, err := m.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	same("watch mode after the keys", before, after, idV1)
	if _, err := os.Stat(watchJournal); err == nil {
		t.Errorf("watch mode wrote a journal: %v", readJournal(t, watchJournal))
	}
	t.Logf("watch phase (apply v1, keys, 5s) took %s", time.Since(phase).Round(time.Millisecond))

	// 5. q quits.
	term.quit("watch")
	t.Logf("whole test took %s", time.Since(began).Round(time.Millisecond))
}

func readJournal(t *testing.T, path string) []journal.Entry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []journal.Entry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e journal.Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("journal %s: %v: %s", path, err, sc.Text())
		}
		out = append(out, e)
	}
	// One entry per step (its "started" line folded in), and no decisions.
	folded := out[:0:0]
	for _, e := range journal.Fold(out) {
		if e.Result != journal.ResultDecision {
			folded = append(folded, e)
		}
	}
	out = folded
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// e2eTwo is a desired state of two workloads of one replica each (at most
// three containers at any time): web on webTag, worker on workerTag with a
// memory limit.
func e2eTwo(prefix, webTag, workerTag, memory string) string {
	w := func(name, tag string, mem string) string {
		return `  ` + name + `:
    image: ` + tag + `
    replicas: 1
    command: ["-listen", ":8080"]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 3s, retries: 3}
    resources: {memory: ` + mem + `}
    stop_grace_period: 2s
    update: {health_deadline: 60s}
`
	}
	return "prefix: " + prefix + "\nworkloads:\n" + w("web", webTag, "64M") + w("worker", workerTag, memory)
}

// TestConsoleOperatorEndToEnd (issue 11), on the real engine and the built
// binary in tmux, at most three containers:
//  1. enter on a selected step (the worker's update, not the next step)
//     runs that step and no other;
//  2. a skip is undone with s;
//  3. one A takes the rest from staged to converged;
//  4. a second console falls back to watch, says when the lock comes free
//     once the first quits, and takes it with one key;
//  5. an operator rollback while paused stops the new container at once.
func TestConsoleOperatorEndToEnd(t *testing.T) {
	m := dockertest.Engine(t)
	tmux := needTmux(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	info, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prefix := dockertest.Prefix(t)
	t.Cleanup(func() { _ = os.Remove(session.DefaultLockPath(info, prefix)) })
	tagV1, idV1 := dockertest.DemoappImage(t, "v1")
	tagV2, idV2 := dockertest.DemoappImage(t, "v2")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("base.yaml", e2eTwo(prefix, tagV1, tagV1, "64M"))
	write("next.yaml", e2eTwo(prefix, tagV2, tagV1, "32M"))
	res := runBinary(t, ctx, bin, "--journal", filepath.Join(dir, "apply.jsonl"), "apply", "--yes", "--timeout", "2m", "-f", filepath.Join(dir, "base.yaml"))
	if res.code != exitOK {
		t.Fatalf("apply base: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	list := func() []docker.Container {
		t.Helper()
		cs, err := m.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	running := func(workload, imageID string) []docker.Container {
		var out []docker.Container
		for _, c := range list() {
			if c.Labels[docker.WorkloadLabel(prefix)] == workload && c.ImageID == imageID && c.State == docker.StateRunning {
				out = append(out, c)
			}
		}
		return out
	}
	// the files are read relative to dir: copy next.yaml to the console's file
	write("console.yaml", e2eTwo(prefix, tagV2, tagV1, "32M"))

	term := newTmuxTerm(t, tmux, prefix)
	j1 := filepath.Join(dir, "one.jsonl")
	term.open("one", dir, bin, "-f", "console.yaml", "--journal", j1)
	updateQueued := regexp.MustCompile(`queued +update +worker/0`)
	term.waitScreen("one", "the staged plan", func(s string) bool {
		return strings.Contains(s, "STEP") && updateQueued.MatchString(s) && regexp.MustCompile(`→ \S+ queued +start +web/0`).MatchString(s)
	})

	// 1. Select the worker's update (the last step of the plan) and approve it.
	term.keys("one", false, "Tab")
	term.keys("one", true, "G")
	term.waitScreen("one", "the cursor on the update", func(s string) bool {
		return regexp.MustCompile(`› +\S+ queued +update +worker/0`).MatchString(s)
	})
	term.keys("one", false, "Enter")
	steps := func() []journal.Entry {
		if _, err := os.Stat(j1); err != nil {
			return nil
		}
		return readJournal(t, j1)
	}
	deadline := time.Now().Add(e2ePhase)
	for len(steps()) < 1 {
		if time.Now().After(deadline) {
			term.capture("one")
			term.fail("the approved update never ran")
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // anything else that would run, would run now
	if got := steps(); len(got) != 1 || got[0].Action != "update" || got[0].Workload != "worker" {
		t.Errorf("enter on the update ran %+v, want the update alone", got)
	}
	if n := len(running("web", idV2)); n != 0 {
		t.Errorf("enter on the update started %d web v2 container(s)", n)
	}

	// 2. Skip the next step (start web/0), then undo the skip.
	term.keys("one", true, "g")
	term.waitScreen("one", "the cursor on start web/0", func(s string) bool {
		return regexp.MustCompile(`› ?\S* +\S+ queued +start +web/0`).MatchString(s)
	})
	term.keys("one", true, "s")
	term.waitScreen("one", "the skipped start", func(s string) bool {
		return regexp.MustCompile(`skipped +start +web/0`).MatchString(s)
	})
	term.keys("one", true, "s")
	term.waitScreen("one", "the skip undone", func(s string) bool {
		return regexp.MustCompile(`queued +start +web/0`).MatchString(s) && !regexp.MustCompile(`⤼ skipped +start`).MatchString(s)
	})
	if got := steps(); len(got) != 1 {
		t.Errorf("skip and unskip ran steps: %+v", got)
	}

	// 3. One A: the rest of the roll runs to converged.
	term.keys("one", true, "A")
	term.waitScreen("one", "converged after one A", func(s string) bool {
		return strings.Contains(s, "converged · 2/2 slots up-to-date & healthy") && strings.Contains(s, "converged: nothing to do")
	})
	if n, all := len(running("web", idV2)), len(list()); n != 1 || all != 2 {
		t.Errorf("after A: %d web v2 container(s), %d in all; want 1 and 2", n, all)
	}
	got := map[string]int{}
	for _, e := range steps() {
		got[e.Action]++
	}
	if got["update"] != 1 || got["start"] != 1 || got["roll"] != 1 {
		t.Errorf("journal after A: %v, want 1 update, 1 start, 1 roll", got)
	}

	// 4. A second console falls back to watch; it takes the lock with one
	// key once the first quits.
	j2 := filepath.Join(dir, "two.jsonl")
	term.open("two", dir, bin, "-f", "console.yaml", "--journal", j2)
	term.waitScreen("two", "the fallback to watch", func(s string) bool {
		return strings.Contains(s, "WATCH (read-only)") && strings.Contains(s, "lock held by")
	})
	term.keys("two", false, "Enter")
	term.waitScreen("two", "the read-only flash", func(s string) bool { return strings.Contains(s, "read-only: watch mode") })
	term.quit("one")
	term.waitScreen("two", "the lock came free", func(s string) bool {
		return strings.Contains(s, "the lock came free: space takes it")
	})
	term.keys("two", false, "Space")
	term.waitScreen("two", "the lock taken", func(s string) bool {
		return strings.Contains(s, "STEP") && strings.Contains(s, "lock held") && !strings.Contains(s, "WATCH")
	})

	// 5. Back to v1 for web: approve its start, pause, then roll back: the
	// new container stops at once, though paused.
	write("console.yaml", e2eTwo(prefix, tagV1, tagV1, "32M"))
	term.waitScreen("two", "the start of web v1", func(s string) bool {
		return regexp.MustCompile(`→ \S+ queued +start +web/0`).MatchString(s)
	})
	term.keys("two", false, "Enter")
	deadline = time.Now().Add(e2ePhase)
	for len(running("web", idV1)) != 1 {
		if time.Now().After(deadline) {
			term.capture("two")
			term.fail("the approved start of web v1 never ran")
		}
		time.Sleep(200 * time.Millisecond)
	}
	term.keys("two", true, "p")
	term.waitScreen("two", "PAUSED", func(s string) bool { return strings.Contains(s, "PAUSED") })
	term.keys("two", true, "r")
	term.waitScreen("two", "the rollback question", func(s string) bool { return strings.Contains(s, "Roll back web?") })
	term.keys("two", true, "y")
	deadline = time.Now().Add(e2ePhase)
	for len(running("web", idV1)) != 0 {
		if time.Now().After(deadline) {
			term.capture("two")
			term.fail("the rollback while paused did not stop the new container")
		}
		time.Sleep(200 * time.Millisecond)
	}
	s := term.capture("two")
	if !strings.Contains(s, "PAUSED") {
		t.Errorf("the rollback lifted the pause:\n%s", s)
	}
	if n := len(running("web", idV2)); n != 1 {
		t.Errorf("after the rollback %d web v2 container(s) serve, want 1", n)
	}
	term.waitScreen("two", "the rollback's step ended", func(s string) bool {
		return strings.Contains(s, "rollback of web done") && !regexp.MustCompile(`running +stop`).MatchString(s)
	})
	term.quit("two")
}
