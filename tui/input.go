package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// onKey handles a key press.
func (m Model) onKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	m.flash = ""
	k := &m.keys
	if msg.String() == "ctrl+c" { // always; q is a letter in the filter and an answer-less key in a dialog
		return m, m.quit(false)
	}
	if m.dialog != nil {
		return m.onDialogKey(msg)
	}
	if m.filtering {
		return m.onFilterKey(msg)
	}
	if m.reader.open {
		return m.onReaderKey(msg)
	}
	if key.Matches(msg, k.Quit) {
		return m.onQuit()
	}
	if m.width < minWidth || m.height < minHeight {
		return m, nil
	}
	b := &m.board
	if key.Matches(msg, k.TakeLock) {
		m.flash = "taking the lock: step mode"
		return m, m.send(session.SetMode{Mode: session.ModeStep})
	}
	if k.readOnly(msg.String()) {
		m.flash = "read-only: watch mode"
		if b.header.lockFree {
			m.flash += " (space takes the lock)"
		}
		return m, nil
	}
	var cmd tea.Cmd
	switch {
	case key.Matches(msg, k.Help):
		m.help.ShowAll = !m.help.ShowAll
	case key.Matches(msg, k.Close):
		switch {
		case m.help.ShowAll:
			m.help.ShowAll = false
		case m.filter != "":
			m.setFilter("")
		}
	case key.Matches(msg, k.NextPane):
		m.setFocus((m.focus + 1) % paneCount)
	case key.Matches(msg, k.PrevPane):
		m.setFocus((m.focus + paneCount - 1) % paneCount)
	case key.Matches(msg, k.Up):
		cmd = m.moveCursor(-1)
	case key.Matches(msg, k.Down):
		cmd = m.moveCursor(1)
	case key.Matches(msg, k.Top):
		cmd = m.moveCursor(-1 << 30)
	case key.Matches(msg, k.Bottom):
		cmd = m.moveCursor(1 << 30)

	case key.Matches(msg, k.Approve):
		cmd = m.approveSelected()
	case key.Matches(msg, k.ApprovePlan):
		if b.converged() {
			// Nothing to roll: the approval would only end at once (a
			// journal line and a note that approve nothing).
			m.flash = "nothing to approve: converged"
			break
		}
		m.plan.moved = false // follow the roll again
		cmd = m.send(session.ApproveRollout{})
	case key.Matches(msg, k.Auto):
		switch b.mode {
		case session.ModeStep:
			cmd = m.send(session.SetMode{Mode: session.ModeAuto})
		case session.ModeAuto:
			cmd = m.send(session.SetMode{Mode: session.ModeStep})
		}
	case key.Matches(msg, k.Pause):
		if b.pause != nil {
			cmd = m.send(session.Resume{})
		} else {
			cmd = m.send(session.Pause{})
		}
	case key.Matches(msg, k.Skip):
		cmd = m.toggleSkip()
	case key.Matches(msg, k.Rollback):
		w, shown := m.selectedWorkload()
		if w == "" {
			m.flash = "select a slot or step of the workload to roll back"
			break
		}
		if m.board.undesired(w) {
			m.flash = shown + " is no longer desired: no roll to abort"
			break
		}
		m.dialog = &dialog{title: "Roll back " + shown + "?",
			body: "Puts " + shown + "'s current spec on hold and stops its new containers wherever an older one still serves the slot, at once, even while paused. A slot that finished its roll keeps its new container.",
			yes:  session.Rollback{Workload: w}, declined: "declined: " + shown + " is not rolled back"}
	case key.Matches(msg, k.Retry):
		cmd = m.retrySelected()
	case key.Matches(msg, k.Pin):
		w, shown := m.selectedWorkload()
		if w == "" {
			m.flash = "select a slot or step of the workload to pin to its previous revision"
			break
		}
		if m.board.undesired(w) {
			m.flash = shown + " is no longer desired: nothing to pin"
			break
		}
		m.dialog = &dialog{title: "Pin " + shown + " to its previous revision?",
			body: "Holds " + shown + "'s desired spec and rolls its revision before it back in, slot by slot under the usual rules, drains included, until the desired spec changes or t lifts the pin. Journaled.",
			yes:  session.Pin{Workload: w}, declined: "declined: " + shown + " is not pinned"}
	case key.Matches(msg, k.Recreate):
		w, shown := m.selectedWorkload()
		if w == "" {
			m.flash = "select a slot or step of the workload to recreate"
			break
		}
		m.dialog = &dialog{title: "Recreate " + shown + "?",
			body: "A rolling restart: every container of " + shown + " created before now is replaced, slot by slot, under the usual rules.",
			yes:  session.Recreate{Workload: w}, declined: "declined: " + shown + " is not recreated"}
	case key.Matches(msg, k.Emergency):
		if b.header.skipHealth {
			cmd = m.send(session.Emergency{On: false}) // back to safety needs no question
			break
		}
		m.dialog = &dialog{title: "Turn EMERGENCY mode on?",
			body: "skip-health: an up-to-date running container counts as healthy at once, so rolls stop waiting for health checks. It stays on, in red, until E turns it off.",
			yes:  session.Emergency{On: true}, declined: "declined: emergency mode stays off"}
	case key.Matches(msg, k.Answer):
		if q := b.confirm; q != nil {
			m.dialog = sessionDialog(q)
		}
	case key.Matches(msg, k.Logs):
		m.detail.mode, m.detail.offset = detailLogs, 0
		cmd = m.followLogs()
	case key.Matches(msg, k.Diff):
		m.detail.mode, m.detail.offset = detailDiff, 0
		cmd = m.followLogs()
	case key.Matches(msg, k.Inspect):
		cmd = m.openReader()
	case key.Matches(msg, k.Copy):
		cmd = m.copyID()
	case key.Matches(msg, k.Shell):
		cmd = m.shell()
	case key.Matches(msg, k.Filter):
		m.filtering = true
		m.input.SetValue(m.filter)
		m.input.CursorEnd()
		cmd = m.input.Focus()
	}
	m.keys.Answer.SetEnabled(b.mode.Acting() && b.confirm != nil && m.dialog == nil)
	m.relayout()
	return m, cmd
}

// setFocus focuses pane p. Focusing the slots or the plan pane says
// which of them the detail pane follows.
func (m *Model) setFocus(p pane) {
	m.focus = p
	switch p {
	case paneSlots:
		m.stepDetail = false
	case panePlan:
		m.stepDetail = true
	}
}

// detailStep is the step the detail pane shows while it follows the plan
// (its cursor), nil while it follows the slots.
func (m *Model) detailStep() *stepRow {
	if !m.stepDetail {
		return nil
	}
	return m.plan.selected(&m.board)
}

// detailSlot is the slot the detail pane shows: the selected step's while
// it follows the plan, else the selected slot.
func (m *Model) detailSlot() *slotRow {
	if s := m.detailStep(); s != nil {
		r, _ := stepSlot(&m.board, s)
		return r
	}
	return m.slots.selected(&m.board)
}

// selectedContainer is the container the keys that read or act on one
// (l, i, y, x) mean: the selected step's while the detail pane follows
// the plan, else the one selected in the slots pane.
func (m *Model) selectedContainer() *containerRow {
	if s := m.detailStep(); s != nil {
		r, j := stepSlot(&m.board, s)
		if r == nil || j < 0 {
			return nil
		}
		return &r.cs[j]
	}
	return m.slots.container(&m.board)
}

// approveSelected approves the step under the plan's cursor: only a step
// the operator can see (the filter hides the others from the cursor), and
// only one that acts. The cursor then rests on the next step that acts.
func (m *Model) approveSelected() tea.Cmd {
	b := &m.board
	s := m.plan.selected(b)
	switch {
	case s == nil && b.next == "":
		m.flash = "nothing to approve"
		return nil
	case s == nil:
		m.flash = "no step selected (the filter hides them)"
		return nil
	case s.then:
		m.flash = "not yet: " + s.action + " " + s.target + " comes once the wait before it ends (A approves the whole rollout)"
		return nil
	case !s.executable:
		m.flash = "a wait is not approved: it ends by itself"
		return nil
	case s.status == theme.Done || s.status == theme.Running:
		m.flash = s.action + " " + s.target + " is " + string(s.status)
		return nil
	}
	key := s.key
	m.plan.restAfter(b, key)
	return m.send(session.ApproveStep{Key: key})
}

// retrySelected asks to lift the hold of the selected workload (t): the
// spec a rollback put on hold starts again under the usual rules. A
// failed pull, waiting out its backoff, is tried again at once, unasked
// (a pull touches nothing that serves). A workload with nothing on hold
// is told so, and nothing is asked.
func (m *Model) retrySelected() tea.Cmd {
	w, shown := m.selectedWorkload()
	if w == "" {
		m.flash = "select a slot or step of the workload whose hold to lift"
		return nil
	}
	hashes := m.board.header.held[w]
	if _, pinned := m.board.header.pinned[w]; len(hashes) == 0 && !pinned && m.board.pullFailed(w) {
		m.flash = "retry " + shown + ": its pull goes again now"
		return m.send(session.Retry{Workload: w})
	}
	if rev, pinned := m.board.header.pinned[w]; pinned && len(hashes) == 0 {
		m.dialog = &dialog{title: "Retry " + shown + "?",
			body: "Lifts the pin of " + shown + " to revision " + strconv.Itoa(rev) + ": its desired spec rolls in again under the usual rules, in step mode once approved. Journaled.",
			yes:  session.Retry{Workload: w}, declined: "declined: " + shown + " stays pinned"}
		return nil
	}
	if len(hashes) == 0 && m.retryCanary(w, shown) {
		return nil
	}
	if len(hashes) == 0 {
		m.flash = shown + " has no spec on hold: nothing to retry"
		return nil
	}
	specs := make([]string, len(hashes))
	for i, h := range hashes {
		specs[i] = shortHash(h)
	}
	spec := sanitize(strings.Join(specs, ", "))
	m.dialog = &dialog{title: "Retry " + shown + "?",
		body: "Lifts the hold on " + shown + " spec " + spec + " (rolled back): it starts again under the usual rules, in step mode once approved. Journaled.",
		yes:  session.Retry{Workload: w}, declined: "declined: " + shown + " stays on hold"}
	return nil
}

// toggleSkip skips the selected step, or un-skips it when skipped.
func (m *Model) toggleSkip() tea.Cmd {
	b := &m.board
	s := m.plan.selected(b)
	switch {
	case s == nil:
		m.flash = "no step to skip"
		return nil
	case !s.executable:
		m.flash = "a wait or a step to come cannot be skipped"
		return nil
	case s.status == theme.Skipped:
		m.flash = "un-skipped " + s.action + " " + s.target
		return m.send(session.Unskip{Key: s.key})
	}
	m.flash = "skipped " + s.action + " " + s.target + " (s again un-skips it)"
	m.plan.keep(b)
	return m.send(session.Skip{Key: s.key})
}

// onQuit is q: at once, unless a step of this console runs; then it asks
// first. q again on that question quits at once, abandoning the step.
func (m Model) onQuit() (tea.Model, tea.Cmd) {
	if m.quitting {
		return m, m.quit(true)
	}
	// (too small for the question, q quits as ctrl+c does: the session
	// still carries the running step to its end)
	if m.board.busy && m.board.mode.Acting() && m.width >= minWidth && m.height >= minHeight {
		m.dialog = &dialog{kind: dialogQuit, step: m.board.doing, title: "A step is running: " + m.board.doing,
			body:     "Quit after it ends? q again quits at once and abandons the step (the journal marks it interrupted).",
			declined: "not quitting"}
		return m, nil
	}
	return m, m.quit(false)
}

// quit ends the program; abandon cuts the running step short first.
func (m *Model) quit(abandon bool) tea.Cmd {
	cancel, ab := m.logs.cancel, m.opts.Abandon
	if !abandon || !m.board.busy {
		ab = nil
	}
	// one command, so the step is abandoned before the program ends
	return func() tea.Msg {
		if ab != nil {
			ab()
		}
		if cancel != nil {
			cancel()
		}
		return tea.Quit()
	}
}

// moveCursor moves within the focused pane; delta may be huge (g, G).
func (m *Model) moveCursor(delta int) tea.Cmd {
	b := &m.board
	switch m.focus {
	case paneSlots:
		switch {
		case delta < -1:
			m.slots.top(b)
		case delta > 1:
			m.slots.bottom(b)
		default:
			m.slots.move(b, delta)
		}
		return m.followLogs()
	case panePlan:
		switch {
		case delta < -1:
			m.plan.top(b)
		case delta > 1:
			m.plan.bottom(b)
		default:
			m.plan.move(b, delta)
		}
		return m.followLogs()
	case paneDetail:
		switch {
		case delta < -1 && m.detail.mode == detailDiff, delta > 1 && m.detail.mode == detailLogs:
			m.detail.offset = 0
		case delta < -1 || delta > 1:
			m.detail.offset = 1 << 20 // clamped when drawn
		default:
			m.detail.move(delta)
		}
		if m.detail.mode == detailLogs {
			m.detail.offset = min(m.detail.offset, max(len(m.logs.lines)-1, 0))
		}
	case paneEvents:
		n := len(filterEvents(b.events, m.filter))
		switch {
		case delta < -1:
			m.events.back = max(n-1, 0)
		case delta > 1:
			m.events.back = 0
		default:
			m.events.move(n, delta)
		}
	}
	return nil
}

// selectedWorkload is the workload of the selected step (plan pane
// focused) or slot: raw for the intent, sanitized for the question.
func (m *Model) selectedWorkload() (raw, shown string) {
	if m.focus == panePlan {
		if s := m.plan.selected(&m.board); s != nil {
			return s.workload, sanitize(s.workload)
		}
	}
	if s := m.slots.selected(&m.board); s != nil {
		return s.workload, sanitize(s.workload)
	}
	return "", ""
}

func (m Model) onDialogKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	d, k := m.dialog, &m.keys
	if d.stale != "" {
		// Its question went away: its own keys close it, sending nothing;
		// every other key stays with it.
		if key.Matches(msg, k.Yes, k.No, k.Choose) {
			m.dialog, m.flash = nil, "nothing sent: "+d.stale
			m.syncDialog(m.board.mode.Acting())
			m.keys.Answer.SetEnabled(m.board.mode.Acting() && m.board.confirm != nil && m.dialog == nil)
		}
		return m, nil
	}
	if d.kind == dialogQuit {
		switch {
		case msg.String() == "q":
			return m, m.quit(true)
		case key.Matches(msg, k.Yes), key.Matches(msg, k.Choose) && d.choice:
			m.dialog, m.quitting = nil, true
			if !m.board.busy {
				return m, m.quit(false)
			}
			m.flash = "quitting once the step ends (q quits at once)"
			return m, nil
		case key.Matches(msg, k.No), key.Matches(msg, k.Choose):
			m.dialog, m.flash = nil, d.declined
			return m, nil
		}
	}
	answer := func(yes bool) (tea.Model, tea.Cmd) {
		m.dialog = nil
		if d.answer != "" {
			m.answered = d.answer
		}
		i := d.no
		if yes {
			i = d.yes
		} else {
			m.flash = d.declined
		}
		m.keys.Answer.SetEnabled(m.board.mode.Acting() && m.board.confirm != nil && !yes)
		if i == nil {
			return m, nil
		}
		return m, m.send(i)
	}
	switch {
	case key.Matches(msg, k.Yes):
		return answer(true)
	case key.Matches(msg, k.No):
		return answer(false)
	case key.Matches(msg, k.Choose):
		return answer(d.choice)
	case key.Matches(msg, k.Toggle):
		nd := *d
		nd.choice = !nd.choice
		m.dialog = &nd
	}
	return m, nil
}

func (m Model) onFilterKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch {
	case key.Matches(msg, m.keys.Apply):
		m.filtering = false
		m.input.Blur()
		return m, nil
	case key.Matches(msg, m.keys.Clear):
		m.filtering = false
		m.input.Blur()
		m.setFilter("")
		return m, nil
	}
	var cmd tea.Cmd
	m.input, cmd = m.input.Update(msg)
	m.setFilter(m.input.Value())
	return m, cmd
}

// setFilter applies a filter (as typed) to the slots, the plan and the
// events.
func (m *Model) setFilter(f string) {
	m.filter = strings.ToLower(strings.TrimSpace(f))
	if f == "" {
		m.input.SetValue("")
	}
	m.slots.setRows(&m.board, m.filter)
	m.plan.setRows(&m.board, m.filter)
	m.events.back = 0
	m.relayout()
}
