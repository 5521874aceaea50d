package tui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// The console of several hosts (DESIGN §11): the console of one host,
// showing the host the operator selected, under the fleet's lines: the
// rollout, one row per host (its status in the rollout, k/N up to date
// and healthy, connection, lock, engine) and the wave plan with what each
// wave waits for.
//
//   - The selected host's session.Snapshot goes into the console as it
//     is (its slots, plan, detail and events panes, its header lines), and
//     what the console asks of that host goes out as fleet.ToHost. The
//     mode is the fleet's: space sends fleet.SetMode, for every host.
//   - [ and ] select the host before and after (tab still changes pane),
//     and so does a click on a host's row.
//   - w approves the next wave not yet approved (fleet.ApproveWave), in
//     step mode; A approves the whole fleet rollout (fleet.ApproveAll), as
//     A approves the whole rollout of one host.
//   - Watch mode across hosts: while the fleet watches, the console shows
//     every host read-only (the keys that act are off), and nothing that
//     acts leaves it, whatever a host's own snapshot says.
//   - Every status shown is a typed value of the fleet's decision or a
//     host's session; nothing reads their words.
//   - Cost: nothing runs while nothing changes; a soak countdown on
//     screen moves on the console's one timer.

// FleetRuntime is what the console of several hosts runs and talks to:
// engine/fleet's runtime, or a test's fake.
type FleetRuntime interface {
	Run(ctx context.Context) error
	Snapshots() <-chan fleet.Snapshot
	Do(fleet.Intent)
}

// FleetOptions configure the console of several hosts. Each host has its
// own engine, so what reads a container (its logs, inspect, a shell) is
// given per host, by its name in the file; a host not in a map has that
// off.
type FleetOptions struct {
	// Theme and Version: as Options.
	Theme   theme.Name
	Version string
	// Logs feeds the detail pane's log tail of each host's containers.
	Logs map[string]LogSource
	// Inspect reads one container of each host for the reader (i); it
	// must only read.
	Inspect map[string]func(ctx context.Context, id string) (docker.ContainerDetail, error)
	// Shell is the command x runs for a container of each host (off in
	// watch mode).
	Shell map[string]func(id string) *exec.Cmd
	// Abandon cuts the running steps short when the operator quits at
	// once (q, then q again). RunFleet sets it to the runtime's Abandon
	// method, when it has one.
	Abandon func()
	// Do receives the operator's intents, and Snapshots delivers the
	// fleet's state: RunFleet sets them to the runtime's; tests record
	// and feed them.
	Do        func(fleet.Intent)
	Snapshots <-chan fleet.Snapshot

	program []tea.ProgramOption // tests: a terminal of their own
}

// RunFleet runs fleet f and the console on the terminal until the
// operator quits or ctx ends, and returns once f's Run has returned (and
// so every host's session has stopped and released its lock). It returns
// an error only when the fleet or the terminal cannot start.
func RunFleet(ctx context.Context, f FleetRuntime, opts FleetOptions) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Do == nil {
		opts.Do = f.Do
	}
	if opts.Snapshots == nil {
		opts.Snapshots = f.Snapshots()
	}
	if a, ok := f.(interface{ Abandon() }); ok && opts.Abandon == nil {
		opts.Abandon = a.Abandon
	}
	var environ []string
	opts.Theme, environ = resolveTheme(opts.Theme, os.Environ())

	m := NewFleet(opts)
	m.c.ctx = ctx
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithEnvironment(environ), tea.WithFPS(rendererFPS)}, opts.program...)...)

	runErr := make(chan error, 1)
	go func() {
		err := f.Run(ctx)
		if err != nil {
			p.Send(sessionEndedMsg{})
		}
		runErr <- err
	}()

	_, err := p.Run()
	cancel()
	ferr := <-runErr
	switch {
	case ferr != nil:
		return fmt.Errorf("console: %w", ferr)
	case errors.Is(err, tea.ErrProgramPanic):
		return fmt.Errorf("console: %w", err)
	case err == nil, errors.Is(err, tea.ErrInterrupted), errors.Is(err, context.Canceled):
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("console: %w", err)
}

// FleetModel is the console of several hosts: the one tea.Model. It holds
// the fleet's latest snapshot and the console (Model) of the selected
// host, which it feeds that host's snapshots and whose intents it sends
// to that host. Update does no I/O, as Model's does not.
type FleetModel struct {
	opts FleetOptions
	c    Model // the console of the selected host

	has    bool
	snap   fleet.Snapshot
	view   *fleetView // snap's, before it is fitted to the screen
	sel    string     // the selected host (raw name)
	fed    fedKey     // what the console was last fed of it
	seen   map[string]time.Time
	height int
}

// fedKey is what the console was fed of the selected host: a new session
// snapshot, a new fleet note or a change of the fleet's mode feeds it
// again; anything else only redraws the fleet's lines.
type fedKey struct {
	seq   uint64
	notes int
	last  time.Time
	watch bool
}

// fleetSnapshotMsg is the fleet's next snapshot; ok false: it ended.
type fleetSnapshotMsg struct {
	snap fleet.Snapshot
	ok   bool
}

// NewFleet returns the console of several hosts. It reads the fleet's
// snapshots from opts.Snapshots (when set) and sends intents to opts.Do;
// RunFleet wires both to a fleet runtime.
func NewFleet(opts FleetOptions) FleetModel {
	c := New(Options{Theme: opts.Theme, Version: opts.Version, Abandon: opts.Abandon})
	c.keys.fleet = true
	m := FleetModel{opts: opts, c: c, view: &fleetView{version: sanitize(opts.Version)}}
	m.refit()
	return m
}

// Init waits for the fleet's first snapshot and asks the terminal for
// its background when the theme is auto.
func (m FleetModel) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.opts.Snapshots != nil {
		cmds = append(cmds, waitFleet(m.opts.Snapshots))
	}
	if m.c.autoTheme {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// waitFleet waits for the fleet's next snapshot; Update re-arms it after
// each, so exactly one wait is ever pending.
func waitFleet(ch <-chan fleet.Snapshot) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		s, ok := <-ch
		return fleetSnapshotMsg{snap: s, ok: ok}
	}
}

// Update takes the fleet's snapshots and its own keys ([, ], w, A, a
// click on a host's row), and hands everything else to the console.
func (m FleetModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case fleetSnapshotMsg:
		if !msg.ok {
			return m, tea.Quit
		}
		cmd := m.onFleet(msg.snap)
		return m, tea.Batch(cmd, waitFleet(m.opts.Snapshots))
	case tea.WindowSizeMsg:
		m.height = msg.Height
		m.refit()
	case tea.KeyPressMsg:
		if cmd, ok := m.onFleetKey(msg); ok {
			return m, tea.Batch(cmd, m.c.armClock())
		}
	case tea.MouseClickMsg:
		if cmd, ok := m.onFleetClick(msg); ok {
			return m, tea.Batch(cmd, m.c.armClock())
		}
	}
	return m.inner(msg)
}

// inner hands msg to the console.
func (m FleetModel) inner(msg tea.Msg) (tea.Model, tea.Cmd) {
	nm, cmd := m.c.Update(msg)
	c, ok := nm.(Model)
	if !ok {
		return nm, cmd
	}
	m.c = c
	m.syncKeys()
	m.refit() // the host's header or the help may have grown or shrunk
	m.c.relayout()
	return m, cmd
}

// View draws the console of the selected host, the fleet's lines on top.
func (m FleetModel) View() tea.View { return m.c.View() }

// onFleet takes the fleet's new state.
func (m *FleetModel) onFleet(s fleet.Snapshot) tea.Cmd {
	m.has, m.snap = true, s
	m.seen = maps.Clone(m.seen)
	if m.seen == nil {
		m.seen = map[string]time.Time{}
	}
	for _, h := range s.Hosts {
		if h.Session.Connected {
			m.seen[h.Name] = h.Session.At
		}
	}
	var switched tea.Cmd
	if m.index(m.sel) < 0 && len(s.Hosts) > 0 {
		// the first snapshot, or the selected host left the file
		switched = m.switchTo(s.Hosts[0].Name)
	}
	hostErr := false
	if i := m.index(m.sel); i >= 0 {
		hostErr = s.Hosts[i].Session.SourceErr != nil
	}
	m.view = newFleetView(s, m.opts.Version, hostErr)
	m.refit()
	return tea.Batch(switched, m.feed())
}

// index is the place of host name in the fleet's snapshot; -1 if none.
func (m *FleetModel) index(name string) int {
	return slices.IndexFunc(m.snap.Hosts, func(h fleet.HostView) bool { return h.Name == name })
}

// refit lays the fleet's lines out for the screen and the selected host:
// what the screen has left once the host's own header lines and the
// footer took theirs. Six lines at least (3 hosts at 80×24, with a pause);
// four while the full help is open, which wants the room for a moment.
func (m *FleetModel) refit() {
	c, sel := &m.c, m.index(m.sel)
	floor := 6
	if c.help.ShowAll {
		floor = 4
	}
	v := m.view.fit(sel, m.height, floor)
	c.header.fleet = v
	if m.height <= 0 {
		return
	}
	f := c.frame()
	if extra := c.header.height(f, c.width) - len(v.lines(f, 0)) - 1 + c.footerHeight() - 1; extra > 0 {
		c.header.fleet = m.view.fit(sel, m.height-extra, floor)
	}
}

// feed gives the console the selected host's snapshot when it is new to
// it, and keeps its layout and clock right for the fleet's lines.
func (m *FleetModel) feed() tea.Cmd {
	c := &m.c
	c.opts.Do = hostDo(m.opts.Do, m.sel, m.snap.Mode.Acting())
	i := m.index(m.sel)
	if i < 0 {
		c.relayout()
		return c.armClock()
	}
	hv := &m.snap.Hosts[i]
	key := fedKey{seq: hv.Session.Seq, notes: len(m.snap.Notes), watch: !m.snap.Mode.Acting()}
	if n := len(m.snap.Notes); n > 0 {
		key.last = m.snap.Notes[n-1].At
	}
	if m.snap.At.After(c.now) && c.has {
		c.now = m.snap.At
		c.ageBoard()
	}
	if key == m.fed {
		m.syncKeys()
		c.relayout()
		return c.armClock()
	}
	m.fed = key
	if hv.Session.Seq == 0 {
		// its session has sent nothing yet: nothing to show of it
		c.has, c.board = false, board{}
		c.slots.setRows(&c.board, c.filter)
		c.plan.setRows(&c.board, c.filter)
		c.keys.setActing(false, false)
		m.syncKeys()
		c.relayout()
		return c.armClock()
	}
	cmd := m.innerCmd(snapshotMsg{snap: m.hostSnapshot(i), ok: true})
	return cmd
}

// innerCmd hands msg to the console and keeps what it returns.
func (m *FleetModel) innerCmd(msg tea.Msg) tea.Cmd {
	nm, cmd := m.inner(msg)
	*m = nm.(FleetModel)
	return cmd
}

// hostSnapshot is host i's session snapshot as the console shows it: in
// watch mode while the fleet watches, and with the fleet's notes among
// its own (the events pane).
func (m *FleetModel) hostSnapshot(i int) session.Snapshot {
	s := m.snap.Hosts[i].Session
	if !m.snap.Mode.Acting() {
		s.Mode = session.ModeWatch
	}
	if len(m.snap.Notes) > 0 {
		notes := make([]session.Note, 0, len(s.Notes)+len(m.snap.Notes))
		notes = append(notes, s.Notes...)
		for _, n := range m.snap.Notes {
			notes = append(notes, session.Note{At: n.At, Text: "fleet: " + n.Text})
		}
		s.Notes = notes
	}
	return s
}

// hostDo is what the console of host sends through: its intents go to
// that host's session, but a mode is the fleet's, for every host. While
// the fleet watches (acting false), nothing but a mode leaves: the keys
// that act are off too; this is the second lock.
func hostDo(do func(fleet.Intent), host string, acting bool) func(session.Intent) {
	if do == nil {
		return nil
	}
	return func(i session.Intent) {
		switch i := i.(type) {
		case session.SetMode:
			do(fleet.SetMode{Mode: i.Mode})
		default:
			if acting {
				do(fleet.ToHost{Host: host, Intent: i})
			}
		}
	}
}

// syncKeys turns on the fleet's keys as the fleet's mode allows.
func (m *FleetModel) syncKeys() {
	k := &m.c.keys
	k.fleet = true
	k.Hosts.SetEnabled(len(m.snap.Hosts) > 1)
	acting := m.snap.Mode.Acting()
	k.ApproveWave.SetEnabled(acting && m.snap.Mode == session.ModeStep)
	k.ApprovePlan.SetEnabled(acting) // the fleet's rollout, whatever the host's session says
}

// switchTo selects host name: the console stops what it followed of the
// host before (its log tail) and takes the new host's readers.
func (m *FleetModel) switchTo(name string) tea.Cmd {
	c := &m.c
	stop := c.logs.follow(c.ctx, c.opts.Logs, "")
	m.sel, m.fed = name, fedKey{}
	c.opts.Logs, c.opts.Inspect, c.opts.Shell = m.opts.Logs[name], m.opts.Inspect[name], m.opts.Shell[name]
	c.logs.available = c.opts.Logs != nil
	c.answered = "" // a question answered on one host is not answered on another
	c.plan.moved = false
	c.detail.offset, c.events.back = 0, 0
	c.seenAt = m.seen[name]
	return stop
}

// selectHost shows host i.
func (m *FleetModel) selectHost(i int) tea.Cmd {
	name := m.snap.Hosts[i].Name
	if name == m.sel {
		return nil
	}
	stop := m.switchTo(name)
	m.refit()
	cmd := m.feed()
	m.c.flash = "host " + sanitize(name)
	return tea.Batch(stop, cmd)
}

// fleetKeys reports whether the console's state lets the fleet's keys
// through: not while a dialog, the filter or the reader has the keys.
func (m *FleetModel) fleetKeys() bool {
	c := &m.c
	return m.has && len(m.snap.Hosts) > 0 && c.dialog == nil && !c.filtering && !c.reader.open &&
		c.width >= minWidth && c.height >= minHeight
}

func (m *FleetModel) onFleetKey(msg tea.KeyPressMsg) (tea.Cmd, bool) {
	if !m.fleetKeys() {
		return nil, false
	}
	c, k := &m.c, &m.c.keys
	pressed := msg.String()
	switch {
	case key.Matches(msg, k.Hosts):
		c.flash = ""
		if c.quitting {
			c.flash = "quitting once the step ends (q quits at once)"
			return nil, true
		}
		delta := 1
		if pressed == "[" {
			delta = -1
		}
		n := len(m.snap.Hosts)
		return m.selectHost((m.index(m.sel) + delta + n) % n), true
	case slices.Contains(k.ApproveWave.Keys(), pressed):
		return m.approveWave(), true
	case slices.Contains(k.ApprovePlan.Keys(), pressed):
		return m.approveAll(), true
	}
	return nil, false
}

func (m *FleetModel) onFleetClick(msg tea.MouseClickMsg) (tea.Cmd, bool) {
	if !m.fleetKeys() || msg.Button != tea.MouseLeft {
		return nil, false
	}
	i, ok := m.c.header.fleet.hostAt(msg.Y)
	if !ok {
		return nil, false
	}
	m.c.flash = ""
	return m.selectHost(i), true
}

// send hands an intent to the fleet, as a Cmd.
func (m *FleetModel) send(i fleet.Intent) tea.Cmd {
	do := m.opts.Do
	if do == nil {
		return nil
	}
	return func() tea.Msg { do(i); return nil }
}

// approveWave is w: it approves the first wave not started and not yet
// approved, in step mode.
func (m *FleetModel) approveWave() tea.Cmd {
	c, s := &m.c, &m.snap
	switch {
	case !s.Mode.Acting():
		c.flash = "read-only: watch mode"
		return nil
	case s.Mode != session.ModeStep:
		c.flash = "auto mode: each wave starts by itself"
		return nil
	case s.ApprovedAll:
		c.flash = "the whole rollout is approved: every wave starts by itself"
		return nil
	}
	for _, w := range s.Decision.Waves {
		if w.Status != fleet.WavePending || s.Approved[w.Index] {
			continue
		}
		c.flash = fmt.Sprintf("approved wave %d: %s", w.Index+1, sanitize(strings.Join(w.Hosts, ", ")))
		return m.send(fleet.ApproveWave{Index: w.Index})
	}
	c.flash = "no wave waits for approval"
	return nil
}

// approveAll is A: it approves the whole fleet rollout, every wave, as A
// approves the whole rollout of one host.
func (m *FleetModel) approveAll() tea.Cmd {
	c, s := &m.c, &m.snap
	switch {
	case !s.Mode.Acting():
		c.flash = "read-only: watch mode"
		return nil
	case s.Outcome.Kind == fleet.OutcomeConverged || s.Outcome.Kind == fleet.OutcomeLeftOut:
		c.flash = "nothing to approve: converged"
		return nil
	case s.ApprovedAll && s.Mode == session.ModeStep:
		c.flash = "the whole rollout is approved already"
		return nil
	}
	c.plan.moved = false // follow the roll again
	c.flash = "approved the whole fleet rollout"
	return m.send(fleet.ApproveAll{})
}
