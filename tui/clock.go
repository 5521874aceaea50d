package tui

import (
	"context"
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/theme"
)

// The console counts up (a container "up 36s", "created 3m ago", "last
// seen 12s ago") and down ("deadline in 41s"). No ticker moves them: after
// every message the console works out the next moment a figure on screen
// changes ("36s" becomes "37s" a second on, "3m" becomes "4m" at the next
// minute, "in 41s" becomes "in 40s") and arms one timer for it. While no
// figure is shown, or none will change, nothing is armed (DESIGN §8, cost).

// clockMsg is the console's one-shot timer firing: due is the moment it
// was armed for, at the console's time it brings (due, or later when the
// timer fired late).
type clockMsg struct{ due, at time.Time }

// armClock arms the timer for the next change of a shown figure. A timer
// armed for another moment (the figures moved, by a snapshot or a key) is
// stopped first: it ends without a message, so it draws nothing.
func (m *Model) armClock() tea.Cmd {
	next := m.nextChange()
	if next.Equal(m.tickAt) {
		return nil // armed for it already, or nothing to arm
	}
	m.stopClock()
	if next.IsZero() {
		return nil
	}
	ctx, cancel := context.WithCancel(m.ctx)
	m.tickAt, m.tickStop = next, cancel
	from, wait := m.now, next.Sub(m.now)
	return func() tea.Msg {
		began := time.Now()
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil
		}
		// The console's time moves by what the wall clock did: the
		// snapshot's clock need not be the wall's (a test's, a demo's).
		return clockMsg{due: next, at: from.Add(max(time.Since(began), wait))}
	}
}

// stopClock stops the armed timer, if any.
func (m *Model) stopClock() {
	if m.tickStop != nil {
		m.tickStop()
	}
	m.tickAt, m.tickStop = time.Time{}, nil
}

func (m Model) onClock(msg clockMsg) (tea.Model, tea.Cmd) {
	if msg.due.Equal(m.tickAt) {
		m.stopClock() // it fired: Update arms the next
	}
	if msg.at.After(m.now) {
		m.now = msg.at
	}
	m.ageBoard()
	return m, nil
}

// ageBoard brings the board's ages, measured at the time of its snapshot,
// to the console's time. The board is shared with the model it came from,
// so its rows are moved on a copy.
func (m *Model) ageBoard() {
	d := m.now.Sub(m.agedTo)
	if d <= 0 {
		return
	}
	m.agedTo = m.now
	slots := slices.Clone(m.board.slots)
	for i := range slots {
		cs := slices.Clone(slots[i].cs)
		for j := range cs {
			cs[j].up += d
			cs[j].age += d
		}
		slots[i].cs = cs
	}
	m.board.slots = slots
}

// nextChange is the next moment a figure on screen changes, or zero when
// none will.
func (m *Model) nextChange() time.Time {
	if !m.has || m.width <= 0 || m.height <= 0 {
		return time.Time{}
	}
	l := m.layout()
	if l.small {
		return time.Time{}
	}
	var next time.Duration // from m.now; 0: no change to come
	soonest := func(d time.Duration) {
		if d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	// the ages of a container, as the detail pane and the reader show them
	both := func(c *containerRow) {
		soonest(ageNext(c.up))
		soonest(ageNext(c.age))
	}
	if !m.board.header.connected && !m.seenAt.IsZero() {
		soonest(ageNext(m.now.Sub(m.seenAt))) // "last seen 12s ago", in every pane
	}
	if m.reader.open {
		if _, c := m.readerContainer(); c != nil {
			both(c)
		}
		return m.after(next)
	}
	// the fleet's soak countdown (fleet.go), in the header
	soonest(m.header.fleet.nextChange(m.now))
	// a canary step's countdown (canary.go), in the header
	soonest(canaryNext(m.board.header.canaries, m.now))
	// the slots pane's rows in view: each container's uptime
	rows := m.slots.rows[min(m.slots.offset, len(m.slots.rows)):]
	for lines, i := 0, 0; i < len(rows) && lines < l.slots.h-2; i++ {
		r := &m.board.slots[rows[i]]
		for j := range r.cs {
			if r.cs[j].running || l.wide { // below 120 columns a stopped one reads "down", no figure
				soonest(ageNext(r.cs[j].up))
			}
		}
		lines += rowHeight(r)
	}
	// the detail pane's slot: its containers' uptime and age
	if m.detail.mode == detailDiff {
		if r := m.detailSlot(); r != nil {
			for j := range r.cs {
				both(&r.cs[j])
			}
		}
	}
	// the plan's countdowns
	for i := range m.board.blocks {
		for _, s := range m.board.blocks[i].steps {
			if !s.until.IsZero() {
				soonest(countdownNext(m.now, s.until))
			}
			if !s.retryAt.IsZero() && s.status == theme.Failed {
				soonest(countdownNext(m.now, s.retryAt))
			}
		}
	}
	return m.after(next)
}

func (m *Model) after(d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return m.now.Add(d)
}

// ageNext is how long until age(d) shows another figure as d grows.
func ageNext(d time.Duration) time.Duration {
	var unit time.Duration
	switch {
	case d < 0:
		return time.Second - d // "0s" until 1s
	case d < time.Minute:
		unit = time.Second
	case d < time.Hour:
		unit = time.Minute
	case d < 48*time.Hour:
		unit = time.Hour
	default:
		unit = 24 * time.Hour
	}
	return (d/unit+1)*unit - d
}

// countdownNext is how long until countdown(now, t) shows another figure,
// or 0 once it says "now" (it stays so).
func countdownNext(now, t time.Time) time.Duration {
	const half = time.Second / 2
	r := t.Sub(now)
	if r < half {
		return 0
	}
	// countdown shows r rounded to the second, in seconds below an hour,
	// then as age does: the figure drops once the rounded r falls under
	// its whole unit, that is once r < q - half.
	rounded := r.Round(time.Second)
	unit := time.Second
	switch {
	case rounded >= 48*time.Hour:
		unit = 24 * time.Hour
	case rounded >= time.Hour:
		unit = time.Hour
	}
	q := rounded / unit * unit
	return r - (q - half) + time.Nanosecond
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
