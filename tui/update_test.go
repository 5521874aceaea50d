package tui

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// console is a model under test with the intents it sent.
type console struct {
	t       *testing.T
	m       Model
	rec     *recorder
	pending []chan tea.Msg // commands still running
}

func newConsole(t *testing.T, snap session.Snapshot, opts ...func(*Options)) *console {
	rec := &recorder{}
	opts = append([]func(*Options){func(o *Options) { o.Do = rec.do }}, opts...)
	return &console{t: t, m: sized(theme.Mono, 120, 40, snap, opts...), rec: rec}
}

// keys presses each key and runs the commands that follow, feeding their
// messages back, as the program would.
func (c *console) keys(ks ...string) *console {
	for _, k := range ks {
		var cmd tea.Cmd
		c.m, cmd = press(c.m, k)
		c.drive(cmd)
	}
	return c
}

func (c *console) drive(cmd tea.Cmd) {
	msgs, pending := runPending(cmd)
	c.pending = append(c.pending, pending...)
	c.feed(msgs)
}

func (c *console) feed(msgs []tea.Msg) {
	for _, msg := range msgs {
		if _, quit := msg.(tea.QuitMsg); quit {
			continue
		}
		var next tea.Cmd
		c.m, next = update(c.m, msg)
		c.drive(next)
	}
}

// settle feeds the messages of the commands that finished since.
func (c *console) settle() {
	time.Sleep(20 * time.Millisecond)
	var still []chan tea.Msg
	var msgs []tea.Msg
	for _, p := range c.pending {
		select {
		case m := <-p:
			if b, ok := m.(tea.BatchMsg); ok {
				for _, cmd := range b {
					o, more := runPending(cmd)
					msgs, still = append(msgs, o...), append(still, more...)
				}
			} else if m != nil {
				msgs = append(msgs, m)
			}
		default:
			still = append(still, p)
		}
	}
	c.pending = still
	c.feed(msgs)
}

func (c *console) snapshot(s session.Snapshot) *console {
	var cmd tea.Cmd
	c.m, cmd = update(c.m, snapshotMsg{snap: s, ok: true})
	_ = cmd // the snapshot wait and the spinner: not this test's business
	return c
}

func (c *console) screen() string { return ansi.Strip(c.m.View().Content) }

func stepKey(s session.Snapshot, workload string, action string) string {
	for _, st := range s.Plan.Executable() {
		if st.Workload == workload && string(st.Action) == action {
			return st.Key()
		}
	}
	panic("no such step")
}

// TestKeysSendIntents: each key sends exactly the intent of DESIGN §8, and
// the destructive ones only after a yes.
func TestKeysSendIntents(t *testing.T) {
	mid := midRoll()
	roll := stepKey(mid, "web", "roll")
	restart := stepKey(mid, "worker", "restart")
	blast := midRoll()
	blast.Running = nil
	blast.Confirm = &session.Confirmation{Kind: session.ConfirmBlast, Prompt: "this change stops 3 of 4 running containers", Declined: true}

	for _, tc := range []struct {
		name string
		snap session.Snapshot
		keys []string
		want []session.Intent
	}{
		{"enter approves the next step", mid, []string{"enter"}, []session.Intent{session.ApproveStep{Key: roll}}},
		{"A approves the plan", mid, []string{"A"}, []session.Intent{session.ApproveRollout{}}},
		{"space switches step to auto", mid, []string{"space"}, []session.Intent{session.SetMode{Mode: session.ModeAuto}}},
		{"space switches auto to step", emergency(), []string{"space"}, []session.Intent{session.SetMode{Mode: session.ModeStep}}},
		{"p pauses", mid, []string{"p"}, []session.Intent{session.Pause{}}},
		{"p resumes a pause", paused(), []string{"p"}, []session.Intent{session.Resume{}}},
		{"s skips the next step", mid, []string{"s"}, []session.Intent{session.Skip{Key: roll}}},
		{"s skips the step selected in the plan", mid, []string{"tab", "G", "s"}, []session.Intent{session.Skip{Key: restart}}},
		{"s on a wait skips nothing", mid, []string{"tab", "j", "s"}, nil},
		{"r y rolls back the selected workload", mid, []string{"r", "y"}, []session.Intent{session.Rollback{Workload: "web"}}},
		{"r in the plan rolls back the step's workload", mid, []string{"tab", "G", "r", "y"}, []session.Intent{session.Rollback{Workload: "worker"}}},
		{"r enter: the answer starts on No", mid, []string{"r", "enter"}, nil},
		{"r n declines", mid, []string{"r", "n"}, nil},
		{"r esc declines", mid, []string{"r", "esc"}, nil},
		{"r right enter says yes", mid, []string{"r", "right", "enter"}, []session.Intent{session.Rollback{Workload: "web"}}},
		{"r right left enter says no", mid, []string{"r", "right", "left", "enter"}, nil},
		{"R y recreates the selected workload", mid, []string{"G", "R", "y"}, []session.Intent{session.Recreate{Workload: "worker"}}},
		{"R enter declines", mid, []string{"R", "enter"}, nil},
		{"E y turns emergency on", mid, []string{"E", "y"}, []session.Intent{session.Emergency{On: true}}},
		{"E enter declines", mid, []string{"E", "enter"}, nil},
		{"E turns emergency off at once", emergency(), []string{"E"}, []session.Intent{session.Emergency{On: false}}},
		{"downtime y confirms", downtime(), []string{"y"}, []session.Intent{session.Confirm{Yes: true}}},
		{"downtime n declines", downtime(), []string{"n"}, []session.Intent{session.Confirm{Yes: false}}},
		{"downtime esc declines", downtime(), []string{"esc"}, []session.Intent{session.Confirm{Yes: false}}},
		{"downtime enter: the answer starts on No", downtime(), []string{"enter"}, []session.Intent{session.Confirm{Yes: false}}},
		{"downtime tab enter confirms", downtime(), []string{"tab", "enter"}, []session.Intent{session.Confirm{Yes: true}}},
		{"a dialog swallows other keys", downtime(), []string{"A", "p", "q", "y"}, []session.Intent{session.Confirm{Yes: true}}},
		{"a declined blast radius asks again on c", blast, []string{"c", "y"}, []session.Intent{session.Confirm{Yes: true}}},
		{"a declined blast radius opens no dialog by itself", blast, []string{"y", "enter"}, []session.Intent{session.ApproveStep{Key: roll}}},
		{"moving sends nothing", mid, []string{"j", "k", "down", "up", "g", "G", "tab", "shift+tab", "l", "d", "?", "?"}, nil},
		{"the filter takes the keys", mid, []string{"/", "A", "p", "s", "enter", "esc"}, nil},
		{"ctrl+c quits, sending nothing", mid, []string{"ctrl+c"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, tc.snap).keys(tc.keys...)
			if got := c.rec.take(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys %q sent %#v, want %#v", tc.keys, got, tc.want)
			}
		})
	}
}

// TestWatchKeysSendNothing: in watch mode the mutating keys are disabled:
// they send no intent, open no dialog, and help does not offer them.
func TestWatchKeysSendNothing(t *testing.T) {
	w := watching()
	w.Confirm = &session.Confirmation{Kind: session.ConfirmBlast, Prompt: "stops 3 of 4"}
	for _, k := range []string{"enter", "A", "space", "p", "s", "r", "R", "E", "c", "y"} {
		c := newConsole(t, w).keys(k, "y", "enter")
		if got := c.rec.take(); len(got) != 0 {
			t.Errorf("watch: %q sent %#v", k, got)
		}
		if c.m.dialog != nil {
			t.Errorf("watch: %q opened a dialog %q", k, c.m.dialog.title)
		}
	}
	c := newConsole(t, w).keys("?")
	screen := c.screen()
	for _, word := range []string{"approve", "auto", "pause", "skip", "roll back", "recreate", "emergency", "answer"} {
		if strings.Contains(screen[strings.LastIndex(screen, "↑↓/kj"):], word) {
			t.Errorf("watch: full help offers %q:\n%s", word, screen)
		}
	}
	if !strings.Contains(screen, "WATCH (read-only)") {
		t.Errorf("watch: no WATCH banner:\n%s", screen)
	}
	for _, b := range (&c.m.keys).mutating() {
		if b.Enabled() {
			t.Errorf("watch: binding %q is enabled", b.Help().Key)
		}
	}
	// Back to an acting mode, the keys come back.
	c.snapshot(midRoll())
	c.keys("enter")
	if got := c.rec.take(); len(got) != 1 {
		t.Errorf("step mode after watch: enter sent %#v", got)
	}
}

// TestNavigationKeys: j/k/arrows, g/G and tab move the selection and focus.
func TestNavigationKeys(t *testing.T) {
	c := newConsole(t, midRoll())
	sel := func() string { return c.m.slots.selected(&c.m.board).target }
	for _, tc := range []struct {
		key   string
		slot  string
		focus pane
	}{
		{"j", "web/0", paneSlots}, {"j", "web/1", paneSlots}, {"down", "web/2", paneSlots}, {"k", "web/1", paneSlots},
		{"up", "web/0", paneSlots}, {"up", "web/0", paneSlots},
		{"G", "worker/0", paneSlots}, {"g", "web/0", paneSlots},
		{"tab", "web/0", panePlan}, {"tab", "web/0", paneDetail}, {"tab", "web/0", paneEvents}, {"tab", "web/0", paneSlots},
		{"shift+tab", "web/0", paneEvents},
	} {
		c.keys(tc.key)
		if sel() != tc.slot || c.m.focus != tc.focus {
			t.Errorf("after %q: slot %s focus %s, want %s %s", tc.key, sel(), c.m.focus, tc.slot, tc.focus)
		}
	}
	// In the plan the cursor moves over steps, and stays on its step when
	// a new snapshot comes.
	c.keys("tab", "tab", "G")
	if s := c.m.plan.selected(&c.m.board); s.target != "worker/0" {
		t.Errorf("plan G selected %s", s.target)
	}
	c.snapshot(midRoll())
	if s := c.m.plan.selected(&c.m.board); s.target != "worker/0" {
		t.Errorf("after a snapshot the plan cursor moved to %s", s.target)
	}
	// ? toggles the full help.
	c.keys("?")
	if !c.m.help.ShowAll || !strings.Contains(c.screen(), "tab/⇧tab") {
		t.Error("? did not show the full help")
	}
	c.keys("?")
	if c.m.help.ShowAll {
		t.Error("? did not hide the full help")
	}
	// q and ctrl+c quit; in the filter input q is a letter, ctrl+c still quits.
	quits := func(m Model, k string) bool {
		_, cmd := press(m, k)
		return slices.ContainsFunc(run(cmd), func(m tea.Msg) bool { _, ok := m.(tea.QuitMsg); return ok })
	}
	if quits(c.m, "q") || !quits(c.m, "ctrl+c") {
		t.Error("with a step running, q quits without asking, or ctrl+c does not quit")
	}
	c.snapshot(converged())
	if !quits(c.m, "q") {
		t.Error("q does not quit")
	}
	c.keys("/")
	if quits(c.m, "q") || !quits(c.m, "ctrl+c") {
		t.Error("in the filter, q quits or ctrl+c does not")
	}
	// In a dialog, q is no answer and does not quit; ctrl+c does.
	d := newConsole(t, downtime())
	if quits(d.m, "q") || !quits(d.m, "ctrl+c") {
		t.Error("in a dialog, q quits or ctrl+c does not")
	}
}

// TestFilter: / filters the slots and the plan by substring; enter keeps
// it, esc clears it.
func TestFilter(t *testing.T) {
	c := newConsole(t, midRoll()).keys("/", "w", "o", "r", "k")
	if !c.m.filtering || c.m.filter != "work" {
		t.Fatalf("filtering %v filter %q", c.m.filtering, c.m.filter)
	}
	c.keys("enter")
	screen := c.screen()
	if c.m.filtering || !strings.Contains(screen, "worker/0") || strings.Contains(screen, "web/1") {
		t.Errorf("filter work:\n%s", screen)
	}
	if n := len(c.m.slots.rows); n != 1 {
		t.Errorf("filter work: %d slots", n)
	}
	if s := c.m.slots.selected(&c.m.board); s == nil || s.target != "worker/0" {
		t.Errorf("filter work: selection %v", s)
	}
	c.keys("esc")
	if c.m.filter != "" || len(c.m.slots.rows) != 4 {
		t.Errorf("esc left filter %q, %d slots", c.m.filter, len(c.m.slots.rows))
	}
	c.keys("/", "x", "y", "z", "esc")
	if c.m.filter != "" || c.m.filtering {
		t.Errorf("esc while typing left filter %q", c.m.filter)
	}
}

// fakeLogs is a LogSource that hands out channels the test feeds.
type fakeLogs struct {
	mu      sync.Mutex
	asked   []string
	streams map[string]chan docker.LogLine
	ctxs    map[string]context.Context
}

func newFakeLogs() *fakeLogs {
	return &fakeLogs{streams: map[string]chan docker.LogLine{}, ctxs: map[string]context.Context{}}
}

func (f *fakeLogs) source(ctx context.Context, id string) (<-chan docker.LogLine, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, id)
	ch := make(chan docker.LogLine, 16)
	f.streams[id], f.ctxs[id] = ch, ctx
	return ch, nil
}

// TestLogsAndDiffKeys: l follows the selected slot's container, moving the
// selection follows the new one, d stops the tail.
func TestLogsAndDiffKeys(t *testing.T) {
	logs := newFakeLogs()
	snap := midRoll()
	c := newConsole(t, snap, func(o *Options) { o.Logs = logs.source })
	first := snap.Slots[0].Containers[0].ID
	c.keys("l")
	if c.m.detail.mode != detailLogs || !slices.Equal(logs.asked, []string{first}) {
		t.Fatalf("l: mode %v, asked %q", c.m.detail.mode, logs.asked)
	}
	// A line arrives: the tail reads it through its Cmd and shows it.
	logs.streams[first] <- docker.LogLine{Time: t0, Stream: "stdout", Text: "GET /healthz 200"}
	c.settle()
	if !strings.Contains(c.screen(), "GET /healthz 200") {
		t.Errorf("log line not shown:\n%s", c.screen())
	}
	c.keys("j", "j") // web/0's old container, then web/1
	second := snap.Slots[1].Containers[0].ID
	if !slices.Equal(logs.asked, []string{first, snap.Slots[0].Containers[1].ID, second}) {
		t.Errorf("j in logs mode asked %q", logs.asked)
	}
	if logs.ctxs[first].Err() == nil {
		t.Error("the first stream was not cancelled")
	}
	c.keys("d")
	if c.m.detail.mode != detailDiff || logs.ctxs[second].Err() == nil {
		t.Errorf("d: mode %v, second stream cancelled: %v", c.m.detail.mode, logs.ctxs[second].Err())
	}
	if !strings.Contains(c.screen(), "plan diff:") {
		t.Errorf("d: no diff:\n%s", c.screen())
	}
}

// TestDialogFollowsTheSession: the session's question opens a dialog; once
// answered it is not asked again for the same question; once the session
// stops asking it says so, and stays until a key of its own closes it
// (issue 26 row 3: a dialog never closes on its own).
func TestDialogFollowsTheSession(t *testing.T) {
	c := newConsole(t, downtime())
	if c.m.dialog == nil || !strings.Contains(c.screen(), "Downtime: web/0") {
		t.Fatalf("no dialog for the downtime question:\n%s", c.screen())
	}
	c.keys("n")
	c.snapshot(downtime()) // the same question, before the session took the answer
	if c.m.dialog != nil {
		t.Error("the answered question was asked again")
	}
	if !c.m.keys.Answer.Enabled() || !strings.Contains(c.screen(), "c answers") {
		t.Errorf("an unanswered question is not offered on c:\n%s", c.screen())
	}
	c.snapshot(midRoll()) // the session no longer asks
	c.snapshot(downtime())
	if c.m.dialog == nil {
		t.Error("a new question opened no dialog")
	}
	c.snapshot(midRoll())
	if c.m.dialog == nil || c.m.dialog.stale == "" || !strings.Contains(c.screen(), "no longer applies") {
		t.Errorf("the dialog did not stay, marked stale, after the session stopped asking:\n%s", c.screen())
	}
	c.rec.take() // the n above
	c.keys("esc")
	if c.m.dialog != nil || len(c.rec.take()) != 0 {
		t.Error("esc did not close the stale dialog, or it sent an answer")
	}
}

// TestTooSmallOnlyQuits: below 80×24 the console shows a notice and only q
// does anything.
func TestTooSmallOnlyQuits(t *testing.T) {
	rec := &recorder{}
	m := sized(theme.Mono, 79, 30, midRoll(), func(o *Options) { o.Do = rec.do })
	for _, k := range []string{"enter", "A", "p", "j"} {
		var cmd tea.Cmd
		m, cmd = press(m, k)
		run(cmd)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("too small: keys sent %#v", got)
	}
	if s := ansi.Strip(m.View().Content); !strings.Contains(s, "terminal too small (need 80×24, have 79×30)") {
		t.Errorf("too small screen:\n%s", s)
	}
	_, quit := press(m, "q")
	if !slices.ContainsFunc(run(quit), func(msg tea.Msg) bool { _, ok := msg.(tea.QuitMsg); return ok }) {
		t.Error("q does not quit on the too-small screen")
	}
	m, _ = update(m, tea.WindowSizeMsg{Width: 80, Height: 24})
	if s := ansi.Strip(m.View().Content); strings.Contains(s, "too small") || !strings.Contains(s, "Slots") {
		t.Errorf("80×24 screen:\n%s", s)
	}
}

// TestSpinnerTicksOnlyWhileAStepRuns: a tick arriving while nothing runs
// is not re-armed, so an idle console stops ticking.
func TestSpinnerTicksOnlyWhileAStepRuns(t *testing.T) {
	m := sized(theme.Mono, 120, 40, converged())
	if m.spinning {
		t.Fatal("spinning with nothing running")
	}
	m, cmd := update(m, snapshotMsg{snap: midRoll(), ok: true})
	if !m.spinning || cmd == nil {
		t.Fatal("a running step did not start the spinner")
	}
	tick := m.spin.Tick()
	m, cmd = update(m, tick)
	if cmd == nil {
		t.Fatal("the spinner did not re-arm while the step runs")
	}
	m, _ = update(m, snapshotMsg{snap: converged(), ok: true})
	m, cmd = update(m, m.spin.Tick())
	if cmd != nil || m.spinning {
		t.Error("the spinner re-armed with nothing running")
	}
}

// TestAgesShareTheSnapshotsTime: "created 5m ago" and "up 1m" are both
// read against the snapshot's time, so a container is never shown up
// longer than it has existed (the created age once came from the time of
// the last list, the uptime from the snapshot's).
func TestAgesShareTheSnapshotsTime(t *testing.T) {
	at := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := session.ContainerView{Container: docker.Container{ID: "abc", Name: "rollcall-web-0-1", State: docker.StateRunning,
		Created: at.Add(-5 * time.Minute), StartedAt: at.Add(-time.Minute)}}
	cr := containerOf(c, "rollcall", at)
	if cr.age != 5*time.Minute || cr.up != time.Minute {
		t.Errorf("age %s, up %s; want 5m0s and 1m0s at the snapshot's time", cr.age, cr.up)
	}
}
