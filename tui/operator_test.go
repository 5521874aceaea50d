package tui

import (
	"context"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// Issue 11: the keys an operator relies on in a rollout do what they say,
// on what is selected and visible.

func keyOf(s session.Snapshot, workload, action string) string { return stepKey(s, workload, action) }

func (c *console) selectedStep() *stepRow { return c.m.plan.selected(&c.m.board) }

// TestEnterApprovesTheSelectedStep: enter approves the step under the
// cursor, not the next one, and the cursor then rests on the next step
// that can be approved.
func TestEnterApprovesTheSelectedStep(t *testing.T) {
	s := staged()
	stop, start, update := keyOf(s, "old", "stop"), keyOf(s, "web", "start"), keyOf(s, "worker", "update")
	for _, tc := range []struct {
		name string
		keys []string
		want []session.Intent
		rest string // the step the cursor rests on after
	}{
		{"enter on the next step", []string{"enter"}, []session.Intent{session.ApproveStep{Key: stop}}, start},
		{"enter on a step below", []string{"tab", "j", "enter"}, []session.Intent{session.ApproveStep{Key: start}}, update},
		{"enter on the last step", []string{"tab", "G", "enter"}, []session.Intent{session.ApproveStep{Key: update}}, update},
		{"enter twice walks down the plan", []string{"enter", "enter"},
			[]session.Intent{session.ApproveStep{Key: stop}, session.ApproveStep{Key: start}}, update},
		{"enter on a wait approves nothing", []string{"tab", "j", "j", "enter"}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, s).keys(tc.keys...)
			if got := c.rec.take(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("keys %q sent %#v, want %#v", tc.keys, got, tc.want)
			}
			if tc.rest != "" {
				if sel := c.selectedStep(); sel == nil || sel.key != tc.rest {
					t.Errorf("the cursor rests on %v, want %s", sel, tc.rest)
				}
				// and stays there when the next snapshot comes
				c.snapshot(s)
				if sel := c.selectedStep(); sel == nil || sel.key != tc.rest {
					t.Errorf("after a snapshot the cursor is on %v, want %s", sel, tc.rest)
				}
			} else if !strings.Contains(c.screen(), "a wait is not approved") {
				t.Errorf("no word on the wait:\n%s", c.screen())
			}
		})
	}
}

// TestHiddenStepsCannotBeApproved: with a filter, enter approves only a
// step the operator sees; with every step hidden it approves nothing.
func TestHiddenStepsCannotBeApproved(t *testing.T) {
	s := staged()
	update := keyOf(s, "worker", "update")
	c := newConsole(t, s).keys("/", "w", "o", "r", "k", "e", "r", "enter", "enter")
	if got := c.rec.take(); !reflect.DeepEqual(got, []session.Intent{session.ApproveStep{Key: update}}) {
		t.Errorf("filter /worker then enter sent %#v, want only the worker's update", got)
	}
	c = newConsole(t, s).keys("/", "n", "o", "p", "e", "enter", "enter")
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("a filter that hides every step: enter sent %#v", got)
	}
	if !strings.Contains(c.screen(), "no step selected") {
		t.Errorf("no word on the hidden steps:\n%s", c.screen())
	}
}

// TestSkipToggles: s skips the selected step, and s on a skipped step
// un-skips it.
func TestSkipToggles(t *testing.T) {
	s := staged()
	start := keyOf(s, "web", "start")
	c := newConsole(t, s).keys("tab", "j", "s")
	if got := c.rec.take(); !reflect.DeepEqual(got, []session.Intent{session.Skip{Key: start}}) {
		t.Fatalf("s sent %#v", got)
	}
	skipped := staged()
	skipped.Steps[start] = session.StepStatus{State: session.StepSkipped}
	skipped.Next = keyOf(s, "old", "stop")
	c.snapshot(skipped)
	if sel := c.selectedStep(); sel == nil || sel.key != start {
		t.Fatalf("after the skip the cursor left the skipped step: %v", sel)
	}
	c.keys("s")
	if got := c.rec.take(); !reflect.DeepEqual(got, []session.Intent{session.Unskip{Key: start}}) {
		t.Errorf("s on a skipped step sent %#v, want Unskip", got)
	}
	// A skipped step leaves the plan undone: the header does not say converged.
	skipped.Progress = session.Progress{Ready: 3, Total: 3}
	c.snapshot(skipped)
	if scr := c.screen(); strings.Contains(scr, "✓ converged") || !strings.Contains(scr, "1 skipped: not converged") {
		t.Errorf("header with a skipped step:\n%s", scr)
	}
}

// TestApproveRolloutHeader: A sends ApproveRollout; while it stands the
// header says so, with the steps left.
func TestApproveRolloutHeader(t *testing.T) {
	s := staged()
	c := newConsole(t, s).keys("A")
	if got := c.rec.take(); !reflect.DeepEqual(got, []session.Intent{session.ApproveRollout{}}) {
		t.Fatalf("A sent %#v", got)
	}
	s.Rollout = &session.RolloutInfo{By: "alice", Since: t0, Left: 7}
	c.snapshot(s)
	if !strings.Contains(c.screen(), "rollout approved, 7 steps left") {
		t.Errorf("header:\n%s", c.screen())
	}
}

// TestWatchModeSaysReadOnly: a mutating key in watch mode sends nothing
// and says why.
func TestWatchModeSaysReadOnly(t *testing.T) {
	for _, k := range []string{"enter", "A", "s", "p", "r", "x", "space"} {
		c := newConsole(t, watching(), func(o *Options) { o.Shell = func(string) *exec.Cmd { return exec.Command("true") } }).keys(k)
		if got := c.rec.take(); len(got) != 0 {
			t.Errorf("watch: %q sent %#v", k, got)
		}
		if !strings.Contains(c.screen(), "read-only: watch mode") {
			t.Errorf("watch: %q gave no read-only flash:\n%s", k, c.screen())
		}
	}
}

// TestFreeLockTakenWithOneKey: a console that fell back to watch says when
// the lock comes free, and space takes it.
func TestFreeLockTakenWithOneKey(t *testing.T) {
	w := watching()
	c := newConsole(t, w).keys("space")
	if got := c.rec.take(); len(got) != 0 {
		t.Fatalf("space with the lock held elsewhere sent %#v", got)
	}
	w.Lock = session.LockInfo{Path: "/run/lock/rollcall.lock", Free: true}
	c.snapshot(w)
	if !strings.Contains(c.screen(), "the lock came free: space takes it") {
		t.Errorf("no word of the free lock:\n%s", c.screen())
	}
	c.keys("space")
	if got := c.rec.take(); !reflect.DeepEqual(got, []session.Intent{session.SetMode{Mode: session.ModeStep}}) {
		t.Errorf("space on a free lock sent %#v", got)
	}
}

// TestQuitMidStepAsksFirst: q while a step runs asks; y quits once the
// step ends; q again quits at once and abandons the step.
func TestQuitMidStepAsksFirst(t *testing.T) {
	quits := func(msgs []tea.Msg) bool {
		return slices.ContainsFunc(msgs, func(m tea.Msg) bool { _, ok := m.(tea.QuitMsg); return ok })
	}
	var abandoned atomic.Int32
	ab := func(o *Options) { o.Abandon = func() { abandoned.Add(1) } }

	c := newConsole(t, midRoll(), ab)
	m, cmd := press(c.m, "q")
	if quits(run(cmd)) || m.dialog == nil || !strings.Contains(ansi.Strip(m.View().Content), "A step is running") {
		t.Fatalf("q mid-step did not ask:\n%s", ansi.Strip(m.View().Content))
	}
	m, cmd = press(m, "y")
	if quits(run(cmd)) || !m.quitting {
		t.Fatal("y quit before the step ended")
	}
	done := midRoll()
	done.Running = nil
	_, cmd = update(m, snapshotMsg{snap: done, ok: true})
	if !quits(run(cmd)) {
		t.Error("the console did not quit once the step ended")
	}
	if abandoned.Load() != 0 {
		t.Error("quitting after the step abandoned it")
	}

	m, _ = press(newConsole(t, midRoll(), ab).m, "q")
	_, cmd = press(m, "q")
	if !quits(run(cmd)) || abandoned.Load() != 1 {
		t.Errorf("q q: quit %v, abandoned %d times", quits(run(cmd)), abandoned.Load())
	}

	m, _ = press(newConsole(t, midRoll(), ab).m, "q")
	m, cmd = press(m, "n")
	if quits(run(cmd)) || m.dialog != nil || !strings.Contains(ansi.Strip(m.View().Content), "not quitting") {
		t.Error("n did not keep the console")
	}

	_, cmd = press(newConsole(t, converged(), ab).m, "q")
	if !quits(run(cmd)) {
		t.Error("q with nothing running does not quit at once")
	}
}

// TestDeclinedConfirmSaysSo: a no leaves a note of what did not happen.
func TestDeclinedConfirmSaysSo(t *testing.T) {
	c := newConsole(t, midRoll()).keys("r", "n")
	if !strings.Contains(c.screen(), "declined: web is not rolled back") {
		t.Errorf("no note after a declined rollback:\n%s", c.screen())
	}
	c = newConsole(t, downtime()).keys("esc")
	if !strings.Contains(c.screen(), "declined: Downtime: web/0") {
		t.Errorf("no note after a declined downtime:\n%s", c.screen())
	}
}

// TestEscClosesHelp: esc leaves the full help.
func TestEscClosesHelp(t *testing.T) {
	c := newConsole(t, midRoll()).keys("?")
	if !c.m.help.ShowAll {
		t.Fatal("? showed no help")
	}
	c.keys("esc")
	if c.m.help.ShowAll {
		t.Error("esc did not close the help")
	}
}

// TestFilterFiltersEvents: / filters the events pane too.
func TestFilterFiltersEvents(t *testing.T) {
	c := newConsole(t, midRoll()).keys("/", "o", "o", "m", "enter")
	scr := c.screen()
	events := scr[strings.Index(scr, "Events"):]
	if !strings.Contains(events, "oom rollcall-worker-0") || strings.Contains(events, "health_status") {
		t.Errorf("events under /oom:\n%s", scr)
	}
}

// TestOldContainerSelectable: j walks through a slot's containers, so the
// old one can be selected and its logs read.
func TestOldContainerSelectable(t *testing.T) {
	logs := newFakeLogs()
	snap := midRoll()
	c := newConsole(t, snap, func(o *Options) { o.Logs = logs.source }).keys("j", "l")
	old := snap.Slots[0].Containers[1]
	if got := c.m.slots.container(&c.m.board); got == nil || got.id != old.ID {
		t.Fatalf("j selected %v, want the old container of web/0", got)
	}
	if !slices.Equal(logs.asked, []string{old.ID}) {
		t.Errorf("l followed %q, want the old container", logs.asked)
	}
	c.keys("j")
	if r := c.m.slots.selected(&c.m.board); r.target != "web/1" {
		t.Errorf("j past the last container selected %s", r.target)
	}
	c.keys("k")
	if got := c.m.slots.container(&c.m.board); got.id != old.ID {
		t.Errorf("k went back to %s", got.name)
	}
}

// TestCopyID: y puts the selected container's ID on the clipboard.
func TestCopyID(t *testing.T) {
	snap := midRoll()
	c := newConsole(t, snap)
	m, cmd := press(c.m, "y")
	want := tea.SetClipboard(snap.Slots[0].Containers[0].ID)()
	if got := run(cmd); len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("y: %#v, want %#v", got, want)
	}
	if !strings.Contains(ansi.Strip(m.View().Content), "copied the container ID") {
		t.Error("no word of the copy")
	}
}

// TestShell: x runs the configured command for the selected container;
// without one it says so.
func TestShell(t *testing.T) {
	var asked string
	c := newConsole(t, midRoll(), func(o *Options) {
		o.Shell = func(id string) *exec.Cmd { asked = id; return exec.Command("true") }
	})
	_, cmd := press(c.m, "x")
	if cmd == nil || asked != midRoll().Slots[0].Containers[0].ID {
		t.Errorf("x: cmd %v, asked for %q", cmd != nil, asked)
	}
	c = newConsole(t, midRoll()).keys("x")
	if !strings.Contains(c.screen(), "no shell") {
		t.Errorf("x with no shell command:\n%s", c.screen())
	}
	if got := (shellDoneMsg{name: "web-0", err: &exec.ExitError{}}).text(); !strings.Contains(got, "web-0") {
		t.Errorf("shell end: %q", got)
	}
}

// TestReaderShowsItWhole: i opens the full-screen reader; the health
// output and a log line too long for any pane are there whole, wrapped;
// esc closes it.
func TestReaderShowsItWhole(t *testing.T) {
	long := "GET http://127.0.0.1:8080/healthz: dial tcp 127.0.0.1:8080: connect: connection refused " + strings.Repeat("x", 90) + " END-OF-PROBE"
	logs := newFakeLogs()
	inspect := func(_ context.Context, id string) (docker.ContainerDetail, error) {
		return docker.ContainerDetail{
			HealthLog: []docker.HealthResult{{Start: t0, End: t0.Add(3 * time.Millisecond), ExitCode: 1, Output: long}},
			Config:    docker.ContainerConfig{Cmd: []string{"-listen", ":8080"}, Env: []string{"SECRET=hunter2", "PATH=/bin"}},
		}, nil
	}
	snap := midRoll()
	c := newConsole(t, snap, func(o *Options) { o.Logs, o.Inspect = logs.source, inspect })
	c.m, _ = update(c.m, tea.WindowSizeMsg{Width: 80, Height: 24})
	c.keys("i")
	id := snap.Slots[0].Containers[0].ID
	logs.streams[id] <- docker.LogLine{Time: t0, Stream: "stdout", Text: "a log line " + strings.Repeat("y", 100) + " END-OF-LOG"}
	c.settle()
	scr := c.screen()
	if !c.m.reader.open || !strings.Contains(scr, "Inspect rollcall-web-0-2222bbbb") {
		t.Fatalf("i opened no reader:\n%s", scr)
	}
	c.keys("G")
	scr = c.screen()
	for _, want := range []string{"END-OF-LOG"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the reader lacks %q:\n%s", want, scr)
		}
	}
	c.keys("g")
	all := strings.Join(c.m.readerLines(80), "\n")
	for _, want := range []string{"END-OF-PROBE", "-listen :8080", "SECRET PATH"} {
		if !strings.Contains(ansi.Strip(all), want) {
			t.Errorf("the reader lacks %q:\n%s", want, ansi.Strip(all))
		}
	}
	if strings.Contains(all, "hunter2") {
		t.Error("the reader shows an environment value")
	}
	c.keys("esc")
	if c.m.reader.open || !strings.Contains(c.screen(), "Slots") {
		t.Errorf("esc did not close the reader:\n%s", c.screen())
	}
}

// TestMouse: a click selects the plan step or slot line under it, and
// never approves; the wheel moves the cursor of the pane under it.
func TestMouse(t *testing.T) {
	s := staged()
	c := newConsole(t, s)
	var planY, slotY int = -1, -1
	for y, l := range strings.Split(c.screen(), "\n") {
		if planY < 0 && strings.Contains(l, "update ") && strings.Contains(l, "worker/0") {
			planY = y
		}
		if slotY < 0 && strings.Contains(l, "web/1") && strings.Contains(l, "web-1-1111aaaa") {
			slotY = y
		}
	}
	if planY < 0 || slotY < 0 {
		t.Fatalf("rows not found:\n%s", c.screen())
	}
	c.m, _ = update(c.m, tea.MouseClickMsg{X: 10, Y: planY, Button: tea.MouseLeft})
	if sel := c.selectedStep(); sel == nil || sel.key != keyOf(s, "worker", "update") || c.m.focus != panePlan {
		t.Errorf("a click on the update selected %v (focus %s)", sel, c.m.focus)
	}
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("a click sent %#v", got)
	}
	c.m, _ = update(c.m, tea.MouseClickMsg{X: 10, Y: slotY, Button: tea.MouseLeft})
	if r := c.m.slots.selected(&c.m.board); r.target != "web/1" || c.m.focus != paneSlots {
		t.Errorf("a click on web/1 selected %s", r.target)
	}
	c.m, _ = update(c.m, tea.MouseWheelMsg{X: 10, Y: slotY, Button: tea.MouseWheelDown})
	if r := c.m.slots.selected(&c.m.board); r.target != "worker/0" {
		t.Errorf("the wheel moved to %s", r.target)
	}
	if c.m.View().MouseMode != tea.MouseModeCellMotion {
		t.Error("the mouse is off")
	}
}

// TestIncidentFacts: uptime counts from the last start, not creation, and
// the restart count, last exit code and OOM show.
func TestIncidentFacts(t *testing.T) {
	s := converged()
	v := &s.Slots[0].Containers[0]
	v.StartedAt, v.RestartCount, v.ExitCode, v.OOMKilled = t0.Add(-25*time.Second), 3, 137, true
	scr := newConsole(t, s).screen()
	for _, want := range []string{"up 25s", "restarts 3", "last exit 137 OOM", "created 10m ago"} {
		if !strings.Contains(scr, want) {
			t.Errorf("detail lacks %q:\n%s", want, scr)
		}
	}
	if !strings.Contains(scr, "last 137 OOM") {
		t.Errorf("the slots pane does not show the last exit:\n%s", scr)
	}
}

// TestDisconnectedIsLastSeen: once the engine is gone, every pane says the
// state is as last seen, and nothing says converged.
func TestDisconnectedIsLastSeen(t *testing.T) {
	c := newConsole(t, converged())
	gone := converged()
	gone.Connected, gone.Fresh, gone.Steady = false, false, false
	gone.Standing.Pending = true
	gone.At = t0.Add(12 * time.Second)
	c.snapshot(gone)
	scr := c.screen()
	if n := strings.Count(scr, "last seen 12s ago"); n < 5 {
		t.Errorf("last seen %d times, want the header and every pane:\n%s", n, scr)
	}
	if strings.Contains(scr, "converged") {
		t.Errorf("a disconnected screen says converged:\n%s", scr)
	}
	c.m, _ = update(c.m, clockMsg{at: t0.Add(40 * time.Second)})
	if !strings.Contains(c.screen(), "last seen 40s ago") {
		t.Errorf("the clock does not move last seen:\n%s", c.screen())
	}
}

// TestCountdowns: a time to come is a countdown, in front of the reason.
func TestCountdowns(t *testing.T) {
	s := paused()
	s.Plan.Workloads[0].Steps[0].Until = t0.Add(41 * time.Second)
	scr := newConsole(t, s).screen()
	if !strings.Contains(scr, "deadline in 41s · booting") {
		t.Errorf("no countdown:\n%s", scr)
	}
	// 41s to go: "in 41s" becomes "in 40s" once 40.5s are left
	if got, want := newConsole(t, s).m.tickAt, t0.Add(500*time.Millisecond+time.Nanosecond); !got.Equal(want) {
		t.Errorf("a countdown on screen arms the clock for %s, want %s", got, want)
	}
}

// TestImageTagSurvives80Columns: at 80×24 a long image keeps its tag, and
// the help line keeps q.
func TestImageTagSurvives80Columns(t *testing.T) {
	s := midRoll()
	for i := range s.Slots {
		if d := s.Slots[i].Desired; d != nil && d.Image == "web:v2" {
			dd := *d
			dd.Image = "registry.example.com/team/rollcall-demoapp:v2"
			s.Slots[i].Desired = &dd
		}
	}
	scr := ansi.Strip(sized(theme.Mono, 80, 24, s).View().Content)
	lines := strings.Split(scr, "\n")
	if !strings.Contains(scr, ":v2 (2)") {
		t.Errorf("the tag is lost at 80 columns:\n%s", scr)
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "q quit") {
		t.Errorf("the help line lost q: %q", last)
	}
	m := sized(theme.Mono, 80, 24, s)
	m, _ = press(m, "/")
	for _, k := range "web" {
		m, _ = press(m, string(k))
	}
	m, _ = press(m, "enter")
	m, _ = press(m, "enter")
	lines = strings.Split(ansi.Strip(m.View().Content), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, "q quit") {
		t.Errorf("with a flash and a filter the help line lost q: %q", last)
	}
}

// TestHeaderWarnings: a broken journal, an automatic rollback and holds
// show in the header, compactly.
func TestHeaderWarnings(t *testing.T) {
	s := midRoll()
	s.Halted = "journal /var/lib/rollcall/journal.jsonl: no space left on device"
	s.RolledBack = []session.RollbackInfo{{Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb", Hash: hashV2,
		Reason: "not healthy within health_deadline 1m0s", At: t0}}
	s.Holds = map[string][]string{"web": {hashV1, hashV2}, "worker": {hashW}}
	scr := newConsole(t, s).screen()
	for _, want := range []string{
		"HALTED: journal /var/lib/rollcall/journal.jsonl: no space left on device",
		"rolled back web/0: rollcall-web-0-2222bbbb stopped, web-0-1111aaaa keeps serving; spec 2222bbbb on hold",
		"on hold: web ×2, worker 3333cccc",
	} {
		if !strings.Contains(scr, want) {
			t.Errorf("header lacks %q:\n%s", want, scr)
		}
	}
}

// TestThenRows: the steps that follow once a wait ends show as "then"
// rows; selecting one and pressing enter or s sends nothing.
func TestThenRows(t *testing.T) {
	c := newConsole(t, midRoll())
	scr := c.screen()
	// (the columns are as wide as the steps need: issue 26 row 5)
	for _, want := range []string{`then\s+start\s+web/1`, `then\s+roll\s+web/2`, `then 2 start · 2 roll`} {
		if !regexp.MustCompile(want).MatchString(scr) {
			t.Errorf("plan lacks %q:\n%s", want, scr)
		}
	}
	c.keys("tab", "j", "j", "j")
	if sel := c.selectedStep(); sel == nil || !sel.then {
		t.Fatalf("the cursor is not on a then row: %v", sel)
	}
	c.keys("enter")
	if !strings.Contains(c.screen(), "not yet: start web/1") {
		t.Errorf("enter on a then row says nothing:\n%s", c.screen())
	}
	c.keys("s")
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("enter and s on a then row sent %#v", got)
	}
}

// TestQuitQuestionGoesWithTheStep: once the step ends, the question of q
// mid-step stays (issue 26 row 3: a dialog never closes on its own) and
// says the step ended; n keeps the console.
func TestQuitQuestionGoesWithTheStep(t *testing.T) {
	c := newConsole(t, midRoll()).keys("q")
	if c.m.dialog == nil {
		t.Fatal("q mid-step did not ask")
	}
	done := midRoll()
	done.Running = nil
	c.snapshot(done)
	if c.m.dialog == nil || !strings.Contains(c.screen(), "The step ended: quit now?") {
		t.Errorf("the question does not say the step ended:\n%s", c.screen())
	}
	c.keys("n")
	if c.m.dialog != nil || c.m.quitting {
		t.Errorf("n did not keep the console:\n%s", c.screen())
	}
}
