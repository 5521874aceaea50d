package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// View draws the whole screen. It changes nothing, so two calls on one
// state draw the same bytes.
func (m Model) View() tea.View {
	v := tea.NewView(m.render())
	v.AltScreen = true
	v.WindowTitle = "rollcall"
	v.MouseMode = tea.MouseModeCellMotion
	return v
}

func (m *Model) render() string {
	if m.width <= 0 || m.height <= 0 {
		return ""
	}
	f := m.frame()
	l := m.layout()
	if l.small {
		return tooSmall(f.st, m.width, m.height)
	}
	w := m.width
	if m.reader.open {
		screen := m.renderReader(f)
		if m.dialog != nil {
			screen = overlay(screen, m.dialog.Render(f, w), w)
		}
		return screen
	}
	sep := f.st.Console.Rule.Render("│") + " "
	selected := m.slots.selected(&m.board)

	var body string
	slots := m.slots.Render(f, l.slots.w, l.slots.h, m.focus == paneSlots)
	plan := m.renderPlan(f, l.plan.w, l.plan.h)
	var step *stepRow
	if m.stepDetail {
		step = m.plan.selected(&m.board)
	}
	detail := m.detail.Render(f, selected, m.slots.sub, step, &m.logs, l.detail.w, l.detail.h, m.focus == paneDetail)
	events := m.renderEvents(f, l.events.w, l.events.h)
	if l.wide {
		body = slots + "\n" + joinColumns(sep, plan, detail+"\n"+events)
	} else {
		body = slots + "\n" + plan + "\n" + joinColumns(sep, detail, events)
	}

	screen := strings.Join(m.headerLines(f), "\n") + "\n" + body + "\n" + m.footer(w)
	if m.dialog != nil {
		screen = overlay(screen, m.dialog.Render(f, w), w)
	}
	return screen
}

// renderPlan is the plan pane, drawn again only when what it shows
// changed: its board, filter, size, focus, cursor and scroll, the
// spinner's frame, and the time while a countdown shows.
func (m *Model) renderPlan(f frame, w, h int) string {
	focused := m.focus == panePlan
	p := &m.plan
	if m.cache == nil {
		return p.Render(f, w, h, focused)
	}
	key := fmt.Sprintf("%d|%s|%d|%d|%t|%d|%d|%t|%s|%q|%s|%t", m.board.gen, m.themeName, w, h, focused, p.offset, p.cursor, f.has, f.spin, f.filter, f.lastSeen, m.stepDetail)
	if m.board.planTicks {
		key += "|" + f.now.String()
	}
	return m.cache.plan.get(key, func() string { return p.Render(f, w, h, focused) })
}

// renderEvents is the events pane, drawn again only when what it shows
// changed.
func (m *Model) renderEvents(f frame, w, h int) string {
	focused := m.focus == paneEvents
	if m.cache == nil {
		return m.events.Render(f, w, h, focused)
	}
	key := fmt.Sprintf("%d|%s|%d|%d|%t|%d|%q|%s", m.board.gen, m.themeName, w, h, focused, m.events.back, f.filter, f.lastSeen)
	return m.cache.events.get(key, func() string { return m.events.Render(f, w, h, focused) })
}

// footer is the help line (or the full help, or the filter input), with
// the filter in force and the last key's feedback in front.
func (m *Model) footer(w int) string {
	if m.cache == nil || m.filtering {
		return m.drawFooter(w)
	}
	key := fmt.Sprintf("%s|%d|%q|%q|%t|%s", m.themeName, w, m.flash, m.filter, m.help.ShowAll, keysKey(&m.keys))
	return m.cache.footer.get(key, func() string { return m.drawFooter(w) })
}

func (m *Model) drawFooter(w int) string {
	st := &m.st
	if m.filtering {
		return fit(m.input.View()+"  "+st.Muted.Render("enter keeps · esc clears"), w)
	}
	var lead []string
	if m.flash != "" {
		lead = append(lead, st.Warn.Render(m.flash))
	}
	if m.filter != "" {
		lead = append(lead, st.Warn.Render("/"+m.filter)+st.Muted.Render(" (esc clears)"))
	}
	prefix := ""
	if len(lead) > 0 {
		prefix = strings.Join(lead, " ") + "  "
	}
	h := m.help
	quit := h.ShortHelpView([]key.Binding{m.keys.Quit})
	h.SetWidth(max(w-ansi.StringWidth(prefix)-ansi.StringWidth(quit)-3, 10))
	if m.help.ShowAll {
		h.SetWidth(w) // the full help has the whole width: quit is in it
		full := h.View(m.keys)
		if prefix != "" {
			full = prefix + "\n" + full
		}
		ls := strings.Split(full, "\n")
		for i := range ls {
			ls[i] = fit(ls[i], w)
		}
		return strings.Join(ls, "\n")
	}
	// quit is drawn apart, last, so a narrow screen never loses it
	return fit(prefix+shortHelp(h, m.keys.shortHelp(), h.Width())+m.st.Console.HelpSep.Render(" • ")+quit, w)
}

// shortHelp is the help line of the bindings that fit in w cells, whole:
// help.Model lets the last item overflow when its ellipsis does not fit.
func shortHelp(h help.Model, bs []key.Binding, w int) string {
	var shown []key.Binding
	for _, b := range bs {
		if !b.Enabled() {
			continue
		}
		if ansi.StringWidth(h.ShortHelpView(append(shown, b))) > w {
			break
		}
		shown = append(shown, b)
	}
	return h.ShortHelpView(shown)
}
