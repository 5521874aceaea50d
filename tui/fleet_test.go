package tui

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// TestFleetGolden renders the console of three hosts at 80×24 and 120×40
// in each state, and compares it with its golden file. Each state is drawn
// twice: two renders of one state must be identical.
func TestFleetGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		theme theme.Name
		snap  fleet.Snapshot
		keys  []string
	}{
		{name: "midroll", theme: theme.Dark, snap: fleetMidRoll()},
		{name: "midroll_second_host", theme: theme.Dark, snap: fleetMidRoll(), keys: []string{"]"}},
		{name: "soak", theme: theme.Dark, snap: fleetSoak(), keys: []string{"[", "tab"}},
		{name: "paused_lost", theme: theme.Dark, snap: fleetPaused(), keys: []string{"]"}},
		{name: "watch", theme: theme.Mono, snap: fleetWatching(), keys: []string{"]"}},
		{name: "full_help", theme: theme.Dark, snap: fleetMidRoll(), keys: []string{"?"}},
	} {
		for _, sz := range [][2]int{{80, 24}, {120, 40}} {
			t.Run(fmt.Sprintf("%s_%dx%d", tc.name, sz[0], sz[1]), func(t *testing.T) {
				m := fsized(tc.theme, sz[0], sz[1], tc.snap)
				for _, k := range tc.keys {
					m = fpress(m, k)
				}
				first := m.View().Content
				if second := m.View().Content; first != second {
					t.Fatalf("two renders of one state differ:\n%s\n---\n%s", first, second)
				}
				if n := strings.Count(first, "\n") + 1; n != sz[1] {
					t.Errorf("the screen has %d lines, want %d", n, sz[1])
				}
				requireGolden(t, first)
			})
		}
	}
}

// screenOf is the fleet console's screen as plain text.
func screenOf(m FleetModel) string { return ansi.Strip(m.View().Content) }

// hostLine is the line of host name's row on the screen.
func hostLine(t *testing.T, m FleetModel, name string) string {
	t.Helper()
	for _, l := range strings.Split(screenOf(m), "\n") {
		// a host's row says its connection; the waves and the host's own
		// header line do not
		if strings.Contains(l, " "+name+" ") && (strings.Contains(l, "connect") || strings.Contains(l, "not reached")) {
			return l
		}
	}
	t.Fatalf("no row for %s:\n%s", name, screenOf(m))
	return ""
}

// [ and ] select the host the panes show: the slots and plan are the
// other host's, and what the console asks of a host goes to that host.
func TestFleetSwitchesHosts(t *testing.T) {
	rec := &fleetRecorder{}
	m := fsized(theme.Mono, 120, 40, fleetMidRoll(), func(o *FleetOptions) { o.Do = rec.do })
	if s := screenOf(m); !strings.Contains(s, "▸ edge-1 · wave 1, done") || strings.Contains(s, "web-0-1111aaaa") {
		t.Fatalf("the first host's panes are not shown:\n%s", s)
	}
	m = fpress(m, "]")
	s := screenOf(m)
	for _, want := range []string{"▸ edge-2 · wave 2, acting", "web-0-1111aaaa", "restart worker/0"} {
		if !strings.Contains(s, want) {
			t.Fatalf("after ] the screen lacks %q:\n%s", want, s)
		}
	}
	roll := fleetMidRoll().Hosts[1].Session.Plan.Workloads[0].Steps[0]
	m = fpress(m, "enter")
	if got, want := rec.take(), []fleet.Intent{fleet.ToHost{Host: "edge-2", Intent: session.ApproveStep{Key: roll.Key()}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("enter on edge-2 sent %#v, want %#v", got, want)
	}
	m = fpress(m, "p")
	if got, want := rec.take(), []fleet.Intent{fleet.ToHost{Host: "edge-2", Intent: session.Pause{}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("p on edge-2 sent %#v, want %#v", got, want)
	}

	m = fpress(m, "]")
	if s := screenOf(m); !strings.Contains(s, "▸ edge-3 · wave 3, not started") || !strings.Contains(s, "held by the fleet: its wave has not started") {
		t.Fatalf("after ] ] the screen is not edge-3's:\n%s", s)
	}
	stop := fleetMidRoll().Hosts[2].Session.Plan.Workloads[0].Steps[0]
	m = fpress(m, "enter")
	if got, want := rec.take(), []fleet.Intent{fleet.ToHost{Host: "edge-3", Intent: session.ApproveStep{Key: stop.Key()}}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("enter on edge-3 sent %#v, want %#v", got, want)
	}
	// ] wraps round to the first, [ back to the last
	m = fpress(m, "]")
	if !strings.Contains(screenOf(m), "▸ edge-1 ·") {
		t.Fatalf("] after the last host did not wrap round:\n%s", screenOf(m))
	}
	m = fpress(m, "[")
	if !strings.Contains(screenOf(m), "▸ edge-3 ·") {
		t.Fatalf("[ from the first host did not go to the last:\n%s", screenOf(m))
	}
	// The mode is the fleet's: space switches every host.
	m = fpress(m, "space")
	if got, want := rec.take(), []fleet.Intent{fleet.SetMode{Mode: session.ModeAuto}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("space sent %#v, want %#v", got, want)
	}
	// tab still changes the pane, and leaves the host where it is.
	m = fpress(m, "tab")
	if m.c.focus != panePlan || m.sel != "edge-3" {
		t.Errorf("tab: focus %s on %s, want the plan pane on edge-3", m.c.focus, m.sel)
	}

	// A click on a host's row selects it.
	for y, l := range strings.Split(screenOf(m), "\n") {
		if strings.Contains(l, "edge-2") && strings.Contains(l, "rolling") {
			m, _ = fupdate(m, tea.MouseClickMsg{X: 4, Y: y, Button: tea.MouseLeft})
			break
		}
	}
	if m.sel != "edge-2" || !strings.Contains(screenOf(m), "▸ edge-2 ·") {
		t.Errorf("a click on edge-2's row selected %s", m.sel)
	}
}

// Switching hosts stops the tail of the host before and follows the new
// host's container through that host's own log source: each host has its
// own engine.
func TestFleetLogsPerHost(t *testing.T) {
	var mu sync.Mutex
	streams := map[string]context.Context{}
	source := func(host string) LogSource {
		return func(ctx context.Context, id string) (<-chan docker.LogLine, error) {
			mu.Lock()
			defer mu.Unlock()
			streams[host] = ctx
			return make(chan docker.LogLine), nil
		}
	}
	m := fsized(theme.Mono, 120, 40, fleetMidRoll(), func(o *FleetOptions) {
		o.Logs = map[string]LogSource{"edge-1": source("edge-1"), "edge-2": source("edge-2")}
	})
	m = fpressFeed(m, "l") // the log tail of edge-1's selected container
	m = fpressFeed(m, "]")
	mu.Lock()
	defer mu.Unlock()
	if streams["edge-1"] == nil || streams["edge-2"] == nil {
		t.Fatalf("log streams opened: %v, want edge-1's then edge-2's", streams)
	}
	if streams["edge-1"].Err() == nil {
		t.Error("edge-1's tail still runs after switching to edge-2")
	}
	if streams["edge-2"].Err() != nil || m.c.logs.id == "" {
		t.Error("edge-2's tail is not followed")
	}
}

// fpressFeed is fpress that feeds the console what its commands answer
// at once (a log stream that opened), as the program would.
func fpressFeed(m FleetModel, k string) FleetModel {
	m, cmd := fupdate(m, keyMsg(k))
	for range 5 {
		msgs := run(cmd)
		if len(msgs) == 0 {
			break
		}
		var cmds []tea.Cmd
		for _, msg := range msgs {
			var c tea.Cmd
			m, c = fupdate(m, msg)
			cmds = append(cmds, c)
		}
		cmd = tea.Batch(cmds...)
	}
	return m
}

// w approves the next wave not yet approved; A approves the whole
// fleet rollout; neither acts in auto or watch mode as it would in step.
func TestFleetApprovals(t *testing.T) {
	rec := &fleetRecorder{}
	do := func(o *FleetOptions) { o.Do = rec.do }

	m := fsized(theme.Mono, 80, 24, fleetSoak(), do)
	m = fpress(m, "w")
	if got, want := rec.take(), []fleet.Intent{fleet.ApproveWave{Index: 2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("w sent %#v, want %#v", got, want)
	}
	if s := screenOf(m); !strings.Contains(s, "approved wave 3: edge-3") {
		t.Errorf("w does not say what it approved:\n%s", s)
	}
	m = fpress(m, "A")
	if got, want := rec.take(), []fleet.Intent{fleet.ApproveAll{}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("A sent %#v, want %#v", got, want)
	}
	if s := screenOf(m); !strings.Contains(s, "approved the whole fleet rollout") {
		t.Errorf("A does not say what it approved:\n%s", s)
	}

	// The next wave is approved already: nothing more to approve.
	s := fleetSoak()
	s.Approved = map[int]bool{0: true, 1: true, 2: true}
	m = fsized(theme.Mono, 80, 24, s, do)
	m = fpress(m, "w")
	if got := rec.take(); len(got) != 0 || !strings.Contains(screenOf(m), "no wave waits for approval") {
		t.Errorf("w with every wave approved sent %#v:\n%s", got, screenOf(m))
	}
	// The whole rollout is approved: w has nothing to add, A neither.
	s.ApprovedAll = true
	m = fsized(theme.Mono, 80, 24, s, do)
	m = fpress(fpress(m, "w"), "A")
	if got := rec.take(); len(got) != 0 || !strings.Contains(screenOf(m), "approved already") {
		t.Errorf("w and A with the rollout approved sent %#v", got)
	}
	// Auto mode: the waves start by themselves.
	s = fleetSoak()
	s.Mode = session.ModeAuto
	m = fpress(fsized(theme.Mono, 80, 24, s, do), "w")
	if got := rec.take(); len(got) != 0 || !strings.Contains(screenOf(m), "auto mode") {
		t.Errorf("w in auto mode sent %#v", got)
	}
	// Converged: A approves nothing.
	m = fsized(theme.Mono, 80, 24, fleetConverged(7), do)
	m = fpress(m, "A")
	if got := rec.take(); len(got) != 0 || !strings.Contains(screenOf(m), "nothing to approve") {
		t.Errorf("A on a converged fleet sent %#v:\n%s", got, screenOf(m))
	}

	// The help says the fleet's keys, and only in the fleet's console.
	m = fsized(theme.Mono, 80, 24, fleetMidRoll(), do)
	if foot := lastLine(screenOf(m)); !strings.Contains(foot, "w wave") || !strings.Contains(foot, "[/] host") || !strings.Contains(foot, "? help") {
		t.Errorf("the fleet's help line lacks its keys: %q", foot)
	}
	one := sized(theme.Mono, 80, 24, midRoll())
	if foot := lastLine(ansi.Strip(one.View().Content)); strings.Contains(foot, "wave") || strings.Contains(foot, "host") {
		t.Errorf("the one-host console offers the fleet's keys: %q", foot)
	}
}

func lastLine(s string) string { return s[strings.LastIndex(s, "\n")+1:] }

// Watch mode across hosts: while the fleet watches, no key sends anything
// that acts, on any host, even when a host's own snapshot still says step
// mode; the keys say read-only.
func TestFleetWatchSendsNothing(t *testing.T) {
	rec := &fleetRecorder{}
	s := fleetWatching()
	for i := range s.Hosts { // a host's snapshot from before the fleet's mode change
		s.Hosts[i].Session.Mode = session.ModeStep
		s.Hosts[i].Session.Lock = session.LockInfo{Held: true}
	}
	m := fsized(theme.Mono, 120, 40, s, func(o *FleetOptions) { o.Do = rec.do })
	for _, host := range []string{"[", "]", "]"} {
		m = fpress(m, host)
		for _, k := range []string{"enter", "A", "w", "space", "p", "s", "r", "y", "t", "R", "y", "E", "y", "c", "x", "u", "enter", "esc"} {
			m = fpress(m, k)
		}
		m = fpress(m, "tab")
	}
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("watch mode sent %#v", got)
	}
	screen := screenOf(m)
	if !strings.Contains(screen, "WATCH (read-only)") {
		t.Errorf("the host's line does not say watch:\n%s", screen)
	}
	m = fpress(m, "w")
	if !strings.Contains(screenOf(m), "read-only: watch mode") {
		t.Errorf("w in watch mode does not say read-only:\n%s", screenOf(m))
	}

	// The second lock: what a host's console sends while the fleet
	// watches leaves nothing that acts.
	send := hostDo(rec.do, "edge-2", false)
	for _, i := range []session.Intent{session.ApproveStep{Key: "k"}, session.ApproveRollout{}, session.Rollback{Workload: "web"},
		session.Pause{}, session.Skip{Key: "k"}, session.Confirm{Yes: true}, session.Emergency{On: true}, session.Recreate{}} {
		send(i)
	}
	if got := rec.take(); len(got) != 0 {
		t.Errorf("a host's console in watch mode let through %#v", got)
	}
}

// Every status in a host's row is the fleet's verdict or the host's
// session state, as typed values: the session's words do not move it.
func TestFleetRowsFromTypedValues(t *testing.T) {
	words := map[fleet.HostStatus]string{fleet.HostPending: "… pending", fleet.HostRolling: "▶ rolling", fleet.HostDone: "✔ done",
		fleet.HostFailed: "✘ failed", fleet.HostLost: "✗ lost", fleet.HostLeftOut: "⤼ left out"}
	for status, want := range words {
		s := fleetMidRoll()
		// edge-1's session is converged, 4/4: only the verdict says otherwise
		s.Decision.Hosts[0].Status = status
		s.Hosts[0].Verdict.Status = status
		s.Hosts[0].Session.Waiting = "done failed lost rolling left out pending"
		s.Hosts[0].Session.Notes = []session.Note{{At: t0, Text: "edge-1 lost, failed"}}
		row := hostLine(t, fsized(theme.Mono, 120, 40, s), "edge-1")
		if !strings.Contains(row, want) {
			t.Errorf("verdict %d: row %q lacks %q", status, row, want)
		}
		for other, w := range words {
			if other != status && strings.Contains(row, w) {
				t.Errorf("verdict %d: row %q says %q too", status, row, w)
			}
		}
	}

	s := fleetMidRoll()
	e3 := &s.Hosts[2].Session
	e3.Lock = session.LockInfo{Holder: &session.LockHolder{User: "bob", PID: 77, Since: t0}}
	e3.Connected = false
	e3.EngineErr = "connected fine" // words: the typed Connected says otherwise
	s.Hosts[1].Session.Lock = session.LockInfo{Err: "host lock: permission denied"}
	m := fsized(theme.Mono, 120, 40, s)
	for host, want := range map[string][]string{
		"edge-1": {"4/4 up-to-date & healthy", "connected", "lock held"},
		"edge-2": {"1/4 up-to-date & healthy", "✗ lock: host lock: permission denied"},
		"edge-3": {"1/3 up-to-date & healthy", "✗ disconnected", "lock held by bob (pid 77)"},
	} {
		row := hostLine(t, m, host)
		for _, w := range want {
			if !strings.Contains(row, w) {
				t.Errorf("%s's row %q lacks %q", host, row, w)
			}
		}
	}
	if row := hostLine(t, fsized(theme.Mono, 120, 40, fleetMidRoll()), "edge-1"); !strings.Contains(row, "ssh://deploy@edge-1 27.3.1") {
		t.Errorf("edge-1's row %q lacks its engine", row)
	}
	// At 80 columns a row is still one line: the engine gives way, with
	// an ellipsis; the progress is shorter.
	s = fleetMidRoll()
	s.Hosts[1].Endpoint = "ssh://deploy@edge-2.eu-west-1.compute.internal.example.com"
	m = fsized(theme.Mono, 80, 24, s)
	row := hostLine(t, m, "edge-2")
	if !strings.HasSuffix(strings.TrimRight(row, " "), "…") || !strings.Contains(row, "1/4 healthy") {
		t.Errorf("edge-2's row at 80 columns: %q", row)
	}
}

// The wave plan says what each wave waits for, from the typed Waits: a
// host's health gate, the soak countdown, the approval, a failed host, a
// preflight problem.
func TestFleetWavesSayWhatTheyWaitFor(t *testing.T) {
	cases := []struct {
		name string
		snap fleet.Snapshot
		want []string
	}{
		{"health gate", fleetMidRoll(), []string{"edge-2 at 1/4 healthy", "then approval (w)", "✔ complete", "▶ rolling"}},
		{"soak and approval", fleetSoak(), []string{"soak ends in 40s", "approval (w approves it, A the whole rollout)"}},
		{"lost host", fleetPaused(), []string{"FLEET PAUSED: edge-2 lost", "edge-2 lost"}},
		{"watch", fleetWatching(), []string{"watch mode: nothing starts"}},
	}
	pre := fleetMidRoll()
	pre.Decision = decideRounds(session.ModeStep, round{t0, nil, []fleet.Host{
		{Name: "edge-1", EngineID: "a", Reachable: true, LockHeld: true, Plan: fleet.PlanRolling, Slots: 4},
		{Name: "edge-2", EngineID: "a", Reachable: true, LockHeld: true, Plan: fleet.PlanRolling, Slots: 4},
		{Name: "edge-3", Reachable: false}}})
	cases = append(cases, struct {
		name string
		snap fleet.Snapshot
		want []string
	}{"preflight", pre, []string{"preflight", "edge-2 is the engine of edge-1", "edge-3 does not answer"}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := screenOf(fsized(theme.Mono, 120, 40, tc.snap))
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("screen lacks %q:\n%s", w, s)
				}
			}
		})
	}
	// 80×24: the waves on one line, the soak's countdown on it.
	s := screenOf(fsized(theme.Mono, 80, 24, fleetSoak()))
	if !strings.Contains(s, "soak in 40s") {
		t.Errorf("80×24 lacks the soak:\n%s", s)
	}
}

// The soak countdown moves on the console's one timer: armed for the next
// second while it shows, and nothing is armed for a fleet at rest sooner
// than its ages change.
func TestFleetSoakTicks(t *testing.T) {
	m := fsized(theme.Mono, 80, 24, soakAtRest())
	if next := m.c.nextChange(); next.IsZero() || next.Sub(m.c.now) > time.Second {
		t.Errorf("with a soak on screen the clock is armed for %v after now, want within 1s", next.Sub(m.c.now))
	}
	before := screenOf(m)
	m, _ = fupdate(m, clockMsg{due: m.c.tickAt, at: m.c.now.Add(time.Second)})
	if after := screenOf(m); after == before || !strings.Contains(after, "soak in 9s") {
		t.Errorf("a second on, the soak countdown did not move:\n%s", after)
	}
	idle := fsized(theme.Mono, 80, 24, fleetConverged(3))
	if next := idle.c.nextChange(); !next.IsZero() && next.Sub(idle.c.now) < 29*time.Second {
		t.Errorf("an idle fleet arms the clock %v on", next.Sub(idle.c.now))
	}
}

// fleetViews counts View calls of the fleet console.
type fleetViews struct {
	FleetModel
	n   *atomic.Int64
	seq *atomic.Uint64
}

func (v fleetViews) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := v.FleetModel.Update(msg)
	return fleetViews{m.(FleetModel), v.n, v.seq}, cmd
}

func (v fleetViews) View() tea.View {
	v.n.Add(1)
	v.seq.Store(v.snap.Seq)
	return v.FleetModel.View()
}

// TestFleetIdleRendersNothing: a fleet at rest renders and writes
// nothing, as one host's console does; a soak countdown on screen moves
// once a second, and nothing else does.
func TestFleetIdleRendersNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 4s")
	}
	out := newCounter()
	ch := make(chan fleet.Snapshot, 1)
	var n atomic.Int64
	var seq atomic.Uint64
	m := NewFleet(FleetOptions{Theme: theme.Dark, Snapshots: ch, Do: func(fleet.Intent) {}})
	p := tea.NewProgram(fleetViews{m, &n, &seq}, tea.WithOutput(out), tea.WithInput(nil), tea.WithWindowSize(120, 40),
		tea.WithoutSignalHandler(), tea.WithColorProfile(colorprofile.TrueColor), tea.WithEnvironment([]string{"TERM=xterm-256color"}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := p.Run(); err != nil {
			t.Errorf("program: %v", err)
		}
	}()
	defer func() { p.Quit(); <-done }()

	ch <- fleetConverged(40)
	drawn(t, &seq, 40, out)
	views0, bytes0 := n.Load(), out.n.Load()
	const idle = 2 * time.Second
	time.Sleep(idle)
	if renders, written := n.Load()-views0, out.n.Load()-bytes0; renders != 0 || written != 0 {
		t.Errorf("an idle fleet console rendered %d times and wrote %d bytes in %s, want none", renders, written, idle)
	}

	soak := soakAtRest() // only the countdown moves
	ch <- soak
	drawn(t, &seq, soak.Seq, out)
	views0 = n.Load()
	time.Sleep(idle)
	renders := n.Load() - views0
	t.Logf("a soak on screen: %d renders in %s", renders, idle)
	if renders < 1 || renders > 4 { // a second apart: 2, give or take the edges
		t.Errorf("a soak countdown gave %d renders in %s, want about one a second", renders, idle)
	}
}

// fakeFleet is a FleetRuntime: Run waits for its context (or fails at
// once), snapshots come from ch, and intents are recorded.
type fakeFleet struct {
	ch      chan fleet.Snapshot
	fail    error
	rec     fleetRecorder
	stopped atomic.Bool
}

func (f *fakeFleet) Run(ctx context.Context) error {
	if f.fail != nil {
		return f.fail
	}
	<-ctx.Done()
	f.stopped.Store(true)
	return nil
}
func (f *fakeFleet) Snapshots() <-chan fleet.Snapshot { return f.ch }
func (f *fakeFleet) Do(i fleet.Intent)                { f.rec.do(i) }

// RunFleet runs the fleet beside the program and returns once both ended;
// a fleet that cannot start ends it with its error.
func TestRunFleet(t *testing.T) {
	f := &fakeFleet{ch: make(chan fleet.Snapshot, 1)}
	f.ch <- fleetMidRoll()
	var out bytes.Buffer
	var mu sync.Mutex
	in, keys, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	defer keys.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- RunFleet(ctx, f, FleetOptions{Theme: theme.Mono, program: []tea.ProgramOption{
			// a plain reader, not the *os.File: cancelreader's epoll reader
			// races its own Close under -race
			tea.WithInput(struct{ io.Reader }{in}), tea.WithOutput(lockedWriter{&mu, &out}), tea.WithWindowSize(80, 24), tea.WithoutSignalHandler()}})
	}()
	waitFor := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			shown := bytes.Contains(out.Bytes(), []byte(what))
			mu.Unlock()
			if shown {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the console never showed %q", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("edge-3")
	if _, err := keys.Write([]byte("w")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for f.rec.count() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got, want := f.rec.take(), []fleet.Intent{fleet.ApproveWave{Index: 2}}; !reflect.DeepEqual(got, want) {
		t.Errorf("w through the program sent %#v, want %#v", got, want)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunFleet: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("RunFleet did not return after its context ended")
	}
	if !f.stopped.Load() {
		t.Error("RunFleet returned before the fleet's Run did")
	}

	bad := &fakeFleet{ch: make(chan fleet.Snapshot), fail: errors.New("hosts: none answers")}
	err = RunFleet(context.Background(), bad, FleetOptions{Theme: theme.Mono, program: []tea.ProgramOption{
		tea.WithInput(nil), tea.WithOutput(lockedWriter{&mu, &out}), tea.WithWindowSize(80, 24), tea.WithoutSignalHandler()}})
	if err == nil || !strings.Contains(err.Error(), "none answers") {
		t.Errorf("RunFleet = %v, want the fleet's error", err)
	}
}

// Eight hosts at 80×24: the strip keeps to its lines, the rows that do
// not fit are counted, and the selected host's row stays in view.
func TestFleetManyHostsFit(t *testing.T) {
	var names []string
	var ss []session.Snapshot
	var hosts []fleet.Host
	for i := range 8 {
		name := fmt.Sprintf("edge-%d", i+1)
		s := onHost(name, uint64(10+i), staged())
		names, ss, hosts = append(names, name), append(ss, s), append(hosts, facts(name, s))
	}
	snap := fleetOf(5, session.ModeStep, decideRounds(session.ModeStep, round{t0, nil, hosts}), nil, names, ss...)
	m := fsized(theme.Mono, 80, 24, snap)
	for i := range 8 {
		screen := screenOf(m)
		if n := strings.Count(screen, "\n") + 1; n != 24 {
			t.Fatalf("host %d: the screen has %d lines, want 24:\n%s", i+1, n, screen)
		}
		name := fmt.Sprintf("edge-%d", i+1)
		if row := hostLine(t, m, name); !strings.HasPrefix(row, "▸") {
			t.Errorf("the selected %s's row is not marked: %q", name, row)
		}
		if !strings.Contains(screen, "more hosts: [ and ] move between them") {
			t.Errorf("the hosts not shown are not counted:\n%s", screen)
		}
		m = fpress(m, "]")
	}
}

// A host's row says where its session stands as the standing says it, not
// as the row would judge it again: held (a spec on hold) or paused (by
// the operator or failure_action pause); a host that rolls, or waits for
// approval, has neither.
func TestFleetRowsReadTheHostsStanding(t *testing.T) {
	hold := session.Standing{Kind: session.StandingHeld, Causes: []session.Cause{{Kind: session.CauseHold, Workload: "web", Hash: hashV2}}}
	pause := session.Standing{Kind: session.StandingHeld, Causes: []session.Cause{{Kind: session.CauseOperatorPause, Pause: &session.PauseInfo{Reason: "paused by alice", ByOperator: true}}}}
	for _, c := range []struct {
		name     string
		standing session.Standing
		want     string // the flag on edge-2's row; "" none
	}{
		{"a spec on hold", hold, "⚠ held"},
		{"the operator's pause", pause, "⏸ paused"},
		{"rolling", session.Standing{Kind: session.StandingRolling}, ""},
		{"awaiting approval", staged().Standing, ""},
	} {
		s := fleetMidRoll()
		s.Hosts[1].Session.Standing = c.standing
		line := hostLine(t, fsized(theme.Mono, 120, 40, s), "edge-2")
		for _, flag := range []string{"⚠ held", "⏸ paused"} {
			if strings.Contains(line, flag) != (flag == c.want) {
				t.Errorf("%s: edge-2's row %q; want the flag %q", c.name, line, c.want)
			}
		}
	}
}
