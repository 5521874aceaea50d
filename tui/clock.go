package tui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"
)

// The console counts down to times to come ("deadline in 41s") and up
// from the last time the engine answered ("last seen 12s ago"). Those
// change every second, so while one is on screen a clock ticks once a
// second; while none is, nothing ticks (DESIGN §8, cost).

// clockMsg is one tick of the clock, with the time it fired.
type clockMsg struct{ at time.Time }

// armClock starts the clock when something on screen counts and no tick
// is on its way.
func (m *Model) armClock() tea.Cmd {
	if m.ticking || !m.counting() {
		return nil
	}
	m.ticking = true
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return clockMsg{at: t} })
}

func (m Model) onClock(msg clockMsg) (tea.Model, tea.Cmd) {
	m.ticking = false
	if msg.at.After(m.now) {
		m.now = msg.at
	}
	return m, m.armClock()
}

// counting reports whether anything on screen counts with the clock.
func (m *Model) counting() bool {
	b := &m.board
	if !m.has {
		return false
	}
	if !b.header.connected || b.settling > 0 {
		return true
	}
	for i := range b.blocks {
		for _, s := range b.blocks[i].steps {
			if s.until.After(m.now) || s.retryAt.After(m.now) {
				return true
			}
		}
	}
	return false
}

// countdown is how long until t, for a line: "41s", "2m".
func countdown(now, t time.Time) string {
	d := t.Sub(now).Round(time.Second)
	switch {
	case d < time.Second:
		return "now"
	case d < time.Minute:
		return fmt.Sprintf("in %ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("in %dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return "in " + age(d)
}
