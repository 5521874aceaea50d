package tui

import (
	"strings"

	"charm.land/lipgloss/v2"

	"github.com/rollcall/rollcall/engine/session"
)

// dialog is a yes/no question over the screen. No is selected first, so
// enter on a dialog nobody read declines: destructive confirms default to No.
type dialog struct {
	kind     dialogKind
	title    string
	body     string // sanitized
	yes      session.Intent
	no       session.Intent // nil: declining sends nothing
	answer   string         // the session confirmation it answers; "" for the operator's own
	choice   bool           // Yes selected
	declined string         // the flash after a no: what did not happen
}

type dialogKind int

const (
	dialogIntent dialogKind = iota // yes sends an intent
	dialogQuit                     // q with a step running: quit after it ends?
)

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
		st.Muted.Render(clip(d.keysHelp(), inner)),
	}
	return c.Modal.Width(bw).Render(strings.Join(parts, "\n"))
}

func (d *dialog) keysHelp() string {
	if d.kind == dialogQuit {
		return "y quit after the step · n/esc stay · q quit now"
	}
	return "y yes · n/esc no · ←/→ choose · enter answers"
}
