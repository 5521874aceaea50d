package tui

import (
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/rollcall/rollcall/engine/session"
)

// dialog is a yes/no question over the screen. No is selected first, so
// enter on a dialog nobody read declines: destructive confirms default to No.
type dialog struct {
	title  string
	body   string // sanitized
	yes    session.Intent
	no     session.Intent // nil: declining sends nothing
	answer string         // the session confirmation it answers; "" for the operator's own
	choice bool           // Yes selected
}

// Render draws the dialog box, at most w cells wide.
func (d *dialog) Render(f frame, w int) string {
	st, c := f.st, f.st.Console
	bw := min(64, w-4)
	inner := bw - 4 // border and padding
	no, yes := c.ModalChoice.Render("No"), c.ModalOther.Render("Yes")
	if d.choice {
		no, yes = c.ModalOther.Render("No"), c.ModalChoice.Render("Yes")
	}
	body := lipgloss.NewStyle().Width(inner).Render(d.body)
	parts := []string{
		st.Heading.Render(clip(d.title, inner)),
		"",
		body,
		"",
		no + "  " + yes,
		st.Muted.Render(clip("y yes · n/esc no · ←/→ choose · enter answers", inner)),
	}
	return c.Modal.Width(bw).Render(strings.Join(parts, "\n"))
}
