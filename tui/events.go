package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

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
	if len(rows) == 0 {
		lines = append(lines, st.Muted.Render("no events yet"))
	}
	// A note or a failure wraps, so it reads whole: its lines after the
	// first are indented under the text. The newest rows shown are those that
	// fill the pane up to end.
	k := f.ink
	var shown []string
	for i := end - 1; i >= 0 && len(shown) < body; i-- {
		shown = append(eventLines(k, rows[i], w), shown...)
	}
	if n := len(shown); n > body {
		shown = shown[n-body:]
	}
	lines = append(lines, shown...)
	return block(lines, w, h)
}

// eventLines is one row of the timeline: a note or a failure wrapped at
// w cells, any other row on one line (block cuts it to the width).
func eventLines(k *inks, r eventRow, w int) []string {
	var text string
	paint := func(s string) string { return s }
	switch r.kind {
	case kindNote:
		text, paint = "note "+r.text, k.note.paint
	case kindDone:
		text, paint = theme.Done.Glyph()+" "+r.text, k.ok.paint
	case kindFailed:
		text, paint = theme.Failed.Glyph()+" "+r.text, k.bad.paint
	default:
		text = r.text
	}
	at := clock(r.at)
	if r.kind != kindNote && r.kind != kindFailed {
		// an engine event or a step done is one line: the names in it are
		// in the slots pane whole
		return []string{k.muted.paint(at) + " " + paint(text)}
	}
	indent := strings.Repeat(" ", width(at)+1)
	room := max(w-len(indent), 10)
	ls := strings.Split(ansi.Wrap(text, room, " "), "\n")
	out := make([]string, len(ls))
	for i, l := range ls {
		if i == 0 {
			out[i] = k.muted.paint(at) + " " + paint(l)
		} else {
			out[i] = indent + paint(l)
		}
	}
	return out
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
