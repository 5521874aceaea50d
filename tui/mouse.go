package tui

import (
	tea "charm.land/bubbletea/v2"
)

// The mouse: a click focuses the pane under it and selects the slot line
// (any container of a slot) or plan step it is on; the wheel moves the
// cursor of the pane under it, or scrolls the reader. A click selects, it
// never approves: enter does that.

// region is where a pane sits on the screen.
type region struct {
	pane       pane
	x, y, w, h int
}

func (r region) has(x, y int) bool { return x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h }

// regions are the panes' places on the screen, as render lays them out.
func (m *Model) regions() []region {
	f := m.frame()
	l := m.layout()
	if l.small {
		return nil
	}
	y0 := len(m.headerLines(f))
	y1 := y0 + l.slots.h
	gap := len(columnGap)
	if l.wide {
		return []region{
			{paneSlots, 0, y0, l.slots.w, l.slots.h},
			{panePlan, 0, y1, l.plan.w, l.plan.h},
			{paneDetail, l.plan.w + gap, y1, l.detail.w, l.detail.h},
			{paneEvents, l.plan.w + gap, y1 + l.detail.h, l.events.w, l.events.h},
		}
	}
	y2 := y1 + l.plan.h
	return []region{
		{paneSlots, 0, y0, l.slots.w, l.slots.h},
		{panePlan, 0, y1, l.plan.w, l.plan.h},
		{paneDetail, 0, y2, l.detail.w, l.detail.h},
		{paneEvents, l.detail.w + gap, y2, l.events.w, l.events.h},
	}
}

func (m *Model) regionAt(x, y int) (region, bool) {
	for _, r := range m.regions() {
		if r.has(x, y) {
			return r, true
		}
	}
	return region{}, false
}

func (m Model) onClick(msg tea.MouseClickMsg) (tea.Model, tea.Cmd) {
	if m.dialog != nil || m.filtering || m.reader.open || msg.Button != tea.MouseLeft {
		return m, nil
	}
	r, ok := m.regionAt(msg.X, msg.Y)
	if !ok {
		return m, nil
	}
	m.flash = ""
	m.setFocus(r.pane)
	b := &m.board
	var cmd tea.Cmd
	switch r.pane {
	case paneSlots:
		if m.slots.selectLine(b, msg.Y-r.y-2) { // under the title and column header
			cmd = m.followLogs()
		}
	case panePlan:
		_, idx := m.plan.drawn(m.frame(), r.w, r.h, true)
		y := msg.Y - r.y - 1
		if y < 0 || y >= len(idx) {
			break
		}
		line := idx[y]
		for i, li := range m.plan.steps {
			if li == line {
				m.plan.cursor = i
				m.plan.keep(b)
			}
		}
	}
	m.relayout()
	return m, cmd
}

func (m Model) onWheel(msg tea.MouseWheelMsg) (tea.Model, tea.Cmd) {
	delta := 0
	switch msg.Button {
	case tea.MouseWheelUp:
		delta = -1
	case tea.MouseWheelDown:
		delta = 1
	default:
		return m, nil
	}
	if m.dialog != nil || m.filtering {
		return m, nil // a question or the filter has the screen
	}
	if m.reader.open {
		m.reader.offset = max(m.reader.offset+3*delta, 0)
		m.reader.offset = m.reader.clamp(len(m.readerLines(m.width)), m.height)
		return m, nil
	}
	r, ok := m.regionAt(msg.X, msg.Y)
	if !ok {
		return m, nil
	}
	m.setFocus(r.pane)
	cmd := m.moveCursor(delta)
	m.relayout()
	return m, cmd
}
