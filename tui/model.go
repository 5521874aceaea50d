package tui

import (
	"context"
	"strings"
	"time"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/spinner"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// Model is the console: the one tea.Model. It holds the latest snapshot
// (as a board) and the operator's view of it; its panes are plain structs
// it draws. Update does no I/O: intents, the snapshot wait and the log tail
// are tea.Cmds that report back with messages.
type Model struct {
	opts      Options
	ctx       context.Context
	st        theme.Styles
	ink       inks // st, compiled for the panes
	autoTheme bool // the background has not answered yet

	keys     KeyMap
	help     help.Model
	spin     spinner.Model
	spinning bool // a spinner tick is on its way
	input    textinput.Model

	filtering bool   // the filter input has the keys
	filter    string // the filter in force, lower case

	has   bool // a snapshot has arrived
	board board

	width, height int
	focus         pane
	// stepDetail: the plan pane was focused last of the two lists, so the
	// detail pane shows its selected step (its whole reason) and that
	// step's slot, and l, i, y and x mean the step's container; else the
	// selected slot and container.
	stepDetail bool

	header header
	slots  slotsPane
	plan   planPane
	detail detailPane
	events eventsPane
	logs   logTail

	reader reader // the full-screen view of one container

	dialog   *dialog
	answered string // the session question last answered or dismissed
	flash    string // one line of feedback, until the next key
	quitting bool   // quit once the running step ends

	resolved *spec.ResolvedDesired // the snapshot's: what the reader's field-by-field diff compares with
	prefix   string

	now      time.Time          // the latest of the snapshot's time and the clock's (clock.go)
	agedTo   time.Time          // the time the board's ages are measured at
	seenAt   time.Time          // the last snapshot taken while the engine answered
	tickAt   time.Time          // the clock's timer is armed for then; zero: none is
	tickStop context.CancelFunc // stops it

	themeName theme.Name
	cache     *renderCache // the parts of the screen drawn last (cache.go)
}

// Messages from the session.
type (
	snapshotMsg struct {
		snap session.Snapshot
		ok   bool // false: the session ended
	}
	sessionEndedMsg struct{} // the session could not start
)

// New returns the console model. It reads snapshots from opts.Snapshots
// (when set) and sends intents to opts.Do; Run wires both to a session.
func New(opts Options) Model {
	name := opts.Theme
	auto := name == "" || name == theme.Auto
	if auto {
		name = theme.Dark // until the terminal says otherwise
	}
	m := Model{
		opts: opts, ctx: context.Background(), autoTheme: auto,
		keys: DefaultKeyMap(), help: help.New(),
		spin:   spinner.New(spinner.WithSpinner(spinner.MiniDot)),
		input:  textinput.New(),
		header: header{version: opts.Version},
		cache:  &renderCache{},
	}
	m.input.Prompt = "/"
	m.input.Placeholder = "filter slots and steps"
	m.input.CharLimit = 64
	m.logs.available = opts.Logs != nil
	m.keys.setActing(false, false) // read-only until a snapshot says otherwise
	m.setTheme(name)
	return m
}

func (m *Model) setTheme(n theme.Name) {
	m.st, m.themeName = theme.New(n), n
	m.ink = inksOf(&m.st)
	c := m.st.Console
	m.help.Styles = help.Styles{ShortKey: c.HelpKey, ShortDesc: c.HelpDesc, ShortSeparator: c.HelpSep,
		FullKey: c.HelpKey, FullDesc: c.HelpDesc, FullSeparator: c.HelpSep, Ellipsis: c.HelpSep}
	m.spin.Style = c.Spinner
	is := textinput.DefaultStyles(n != theme.Light)
	is.Focused.Prompt, is.Blurred.Prompt = c.HelpKey, c.HelpKey
	is.Focused.Placeholder, is.Blurred.Placeholder = m.st.Muted, m.st.Muted
	is.Focused.Text, is.Blurred.Text = m.st.Summary.UnsetBold(), m.st.Summary.UnsetBold()
	is.Cursor.Blink = false // a blinking cursor would tick while nothing changes
	is.Cursor.Color = c.HelpKey.GetForeground()
	m.input.SetStyles(is)
}

// Init waits for the first snapshot and asks the terminal for its
// background when the theme is auto.
func (m Model) Init() tea.Cmd {
	var cmds []tea.Cmd
	if m.opts.Snapshots != nil {
		cmds = append(cmds, waitSnapshot(m.opts.Snapshots))
	}
	if m.autoTheme {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	return tea.Batch(cmds...)
}

// waitSnapshot waits for the session's next snapshot. Update re-arms it
// after each, so exactly one wait is ever pending.
func waitSnapshot(ch <-chan session.Snapshot) tea.Cmd {
	if ch == nil {
		return nil
	}
	return func() tea.Msg {
		s, ok := <-ch
		return snapshotMsg{snap: s, ok: ok}
	}
}

// send hands an intent to the session, as a Cmd.
func (m *Model) send(i session.Intent) tea.Cmd {
	do := m.opts.Do
	if do == nil {
		return nil
	}
	return func() tea.Msg { do(i); return nil }
}

// Update handles one message, then points the log tail at the container
// shown and arms the clock for the next change of a figure on screen: the
// message may have brought either into view.
func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	next, cmd := m.handle(msg)
	nm, ok := next.(Model)
	if !ok {
		return next, cmd
	}
	// The log tail follows the container the detail pane or the reader
	// shows, whichever pane's cursor moved it (a key, a click, a snapshot).
	return nm, tea.Batch(cmd, nm.followLogs(), nm.armClock())
}

func (m Model) handle(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.help.SetWidth(msg.Width)
		m.input.SetWidth(max(msg.Width-20, 10))
		m.relayout()
		return m, nil
	case tea.BackgroundColorMsg:
		if m.autoTheme {
			m.autoTheme = false
			m.setTheme(theme.Choose(theme.Auto, false, msg.IsDark))
		}
		return m, nil
	case snapshotMsg:
		if !msg.ok {
			return m, tea.Quit
		}
		return m.onSnapshot(msg.snap)
	case sessionEndedMsg:
		return m, tea.Quit
	case spinner.TickMsg:
		if !m.board.busy {
			m.spinning = false // let the tick chain end: nothing runs
			return m, nil
		}
		var cmd tea.Cmd
		m.spin, cmd = m.spin.Update(msg)
		return m, cmd
	case logStartedMsg:
		return m, m.logs.onStarted(msg)
	case logLinesMsg:
		return m, m.logs.onLines(msg)
	case clockMsg:
		return m.onClock(msg)
	case inspectMsg:
		m.reader.onInspect(msg, m.specDiff(msg))
		return m, nil
	case shellDoneMsg:
		m.flash = msg.text()
		return m, nil
	case tea.MouseClickMsg:
		return m.onClick(msg)
	case tea.MouseWheelMsg:
		return m.onWheel(msg)
	case tea.KeyPressMsg:
		return m.onKey(msg)
	}
	return m, nil
}

// onSnapshot takes the session's new state.
func (m Model) onSnapshot(s session.Snapshot) (tea.Model, tea.Cmd) {
	m.has = true
	m.board = newBoard(s)
	m.resolved, m.prefix = s.Resolved, s.Prefix
	if s.At.After(m.now) || m.now.IsZero() {
		m.now = s.At
	}
	m.agedTo = m.board.at
	m.ageBoard() // the clock may have moved past the snapshot's time
	if s.Connected {
		m.seenAt = s.At
	}
	if d := m.dialog; d != nil && d.kind == dialogQuit && !m.board.busy && !d.ended {
		// The question stays until the operator answers it (a y typed for
		// it must not reach another key); it now says what y does.
		nd := *d
		nd.ended, nd.title = true, "The step ended: quit now?"
		nd.body = "The step you were waiting on (" + d.step + ") has ended. y quits now; n or esc keeps the console."
		m.dialog = &nd
	}
	acting := s.Mode.Acting()
	m.syncDialog(acting)
	pending := m.board.confirm != nil && m.dialog == nil
	m.keys.setActing(acting, pending)
	if m.board.pause != nil {
		m.keys.Pause.SetHelp("p", "resume")
	} else {
		m.keys.Pause.SetHelp("p", "pause")
	}
	if s.Mode == session.ModeAuto {
		m.keys.Auto.SetHelp("space", "step mode")
	} else {
		m.keys.Auto.SetHelp("space", "auto")
	}
	if s.SkipHealth {
		m.keys.Emergency.SetHelp("E", "emergency off")
	} else {
		m.keys.Emergency.SetHelp("E", "emergency")
	}
	m.keys.TakeLock.SetEnabled(!acting && s.Lock.Free)
	m.slots.setRows(&m.board, m.filter)
	m.plan.setRows(&m.board, m.filter)
	m.relayout()
	if m.quitting && s.Running == nil {
		// the step the operator waited for ended; the panes are laid out
		// from this snapshot first, as the program draws once more on
		// the way out
		return m, m.quit(false)
	}

	cmds := []tea.Cmd{waitSnapshot(m.opts.Snapshots)}
	if m.board.busy && !m.spinning {
		m.spinning = true
		cmds = append(cmds, m.spin.Tick)
	}
	cmds = append(cmds, m.followLogs(), m.reinspect(s.Connected))
	return m, tea.Batch(cmds...)
}

// syncDialog opens the dialog for a question the session asks. A dialog
// never closes by itself: one whose question went away (the session no
// longer asks it, or the console turned read-only) stays, marked stale,
// until a key of its own dismisses it, so a key typed for it never
// reaches another binding (y would copy an ID). The operator's own
// dialog (r, R, E) stays in front; watch mode asks nothing.
func (m *Model) syncDialog(acting bool) {
	q := m.board.confirm
	if q == nil {
		m.answered = ""
	}
	switch d := m.dialog; {
	case d != nil && (d.stale != "" || d.kind == dialogQuit):
		// answered by the operator only
	case d != nil && !acting:
		m.dialog = d.staled("the console is read-only now (watch mode): nothing will be sent")
	case d != nil && d.answer == "":
		// the operator's own question first
	case d != nil && (q == nil || q.id != d.answer):
		m.dialog = d.staled("the session no longer asks this question: nothing will be sent")
	case d != nil, !acting, q == nil || q.declined || q.id == m.answered:
		// its question stands, or nothing to ask
	default:
		m.dialog = sessionDialog(q)
	}
}

func sessionDialog(q *confirmInfo) *dialog {
	return &dialog{title: q.title, body: q.prompt, yes: session.Confirm{Yes: true}, no: session.Confirm{Yes: false}, answer: q.id,
		declined: "declined: " + q.title}
}

// followLogs points the log tail at the container the reader shows, or
// the selected container (the selected step's while the detail pane
// follows the plan) while the detail pane shows logs, and at nothing
// otherwise.
func (m *Model) followLogs() tea.Cmd {
	id := ""
	switch {
	case m.reader.open:
		id = m.reader.id
	case m.detail.mode == detailLogs:
		if c := m.selectedContainer(); c != nil {
			id = c.id
		}
	}
	return m.logs.follow(m.ctx, m.opts.Logs, id)
}

// frame is what the panes draw from.
type frame struct {
	st     *theme.Styles
	ink    *inks
	b      *board
	has    bool
	filter string
	spin   string // the spinner's frame while a step runs
	asking bool   // a dialog is open
	now    time.Time
	// lastSeen is "last seen 12s ago" while the engine is disconnected:
	// every pane says it, so nothing reads as the present.
	lastSeen string
}

func (m *Model) frame() frame {
	f := frame{st: &m.st, ink: &m.ink, b: &m.board, has: m.has, filter: m.filter, asking: m.dialog != nil, now: m.now}
	if m.has && !m.board.header.connected {
		if m.seenAt.IsZero() {
			f.lastSeen = "never seen"
		} else {
			f.lastSeen = "last seen " + age(m.now.Sub(m.seenAt)) + " ago"
		}
	}
	if m.board.busy {
		f.spin = m.spin.View()
	}
	return f
}

func (m *Model) footerHeight() int {
	if m.help.ShowAll && !m.filtering {
		n := strings.Count(m.help.View(m.keys), "\n") + 1
		if m.flash != "" || m.filter != "" {
			n++ // the line footer puts above the full help
		}
		return n
	}
	return 1
}

func (m *Model) layout() layout {
	f := m.frame()
	lines := 0
	for _, r := range m.slots.rows {
		lines += rowHeight(&m.board.slots[r])
		if lines > m.height {
			break // more than any screen holds
		}
	}
	return computeLayout(m.width, m.height, len(m.headerLines(f)), m.footerHeight(), lines)
}

// relayout keeps each pane's cursor in view after anything moved.
func (m *Model) relayout() {
	if m.width == 0 {
		return
	}
	l := m.layout()
	if l.small {
		return
	}
	m.slots.scroll(&m.board, l.slots.h)
	m.plan.scroll(l.plan.h)
}
