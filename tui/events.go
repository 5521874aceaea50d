package tui

import (
	"fmt"

	"github.com/rollcall/rollcall/theme"
)

// eventsPane is the timeline of engine events for managed containers,
// the session's notes and the steps it ran, newest at the bottom. It
// follows the newest until scrolled back.
type eventsPane struct {
	back int // lines scrolled back from the newest
}

func (p *eventsPane) move(n, delta int) { p.back = min(max(p.back-delta, 0), max(n-1, 0)) }

// Render draws the pane in w×h cells.
func (p *eventsPane) Render(f frame, w, h int, focused bool) string {
	st, rows := f.st, filterEvents(f.b.events, f.filter)
	info := fmt.Sprintf("%d", len(rows))
	if f.filter != "" {
		info = fmt.Sprintf("%d of %d match /%s", len(rows), len(f.b.events), f.filter)
	}
	if p.back > 0 {
		info += fmt.Sprintf(" · scrolled back %d (G follows)", p.back)
	}
	lines := []string{title(st, "Events", info, focused, w, f.lastSeen)}
	body := h - 1
	end := max(len(rows)-p.back, min(body, len(rows)))
	start := max(end-body, 0)
	if len(rows) == 0 {
		lines = append(lines, st.Muted.Render("no events yet"))
	}
	k := f.ink
	for _, r := range rows[start:end] {
		at := k.muted.paint(clock(r.at))
		switch r.kind {
		case kindNote:
			lines = append(lines, at+" "+k.note.paint("note "+r.text))
		case kindDone:
			lines = append(lines, at+" "+k.ok.paint(theme.Done.Glyph()+" "+r.text))
		case kindFailed:
			lines = append(lines, at+" "+k.bad.paint(theme.Failed.Glyph()+" "+r.text))
		default:
			lines = append(lines, at+" "+r.text)
		}
	}
	return block(lines, w, h)
}

// filterEvents is the events whose text holds the filter.
func filterEvents(rows []eventRow, filter string) []eventRow {
	if filter == "" {
		return rows
	}
	var out []eventRow
	for _, r := range rows {
		if containsFold(r.text, filter) {
			out = append(out, r)
		}
	}
	return out
}
