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
	// stale says why the question no longer applies (its question went
	// away, or the console turned read-only): the dialog stays until a
	// key of its own dismisses it, and sends nothing.
	stale string
	// The quit question: the step it waits on, and whether it ended.
	step  string
	ended bool
}

// staled is d marked stale: why its question no longer applies.
func (d *dialog) staled(why string) *dialog {
	nd := *d
	nd.stale = why
	return &nd
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
	choices := no + "  " + yes
	if d.stale != "" {
		choices = st.Warn.Render(lipgloss.NewStyle().Width(inner).Render("This question no longer applies: " + d.stale))
	}
	parts := []string{
		st.Heading.Render(clip(d.title, inner)),
		"",
		body,
		"",
		choices,
		st.Muted.Render(clip(d.keysHelp(), inner)),
	}
	return c.Modal.Width(bw).Render(strings.Join(parts, "\n"))
}

func (d *dialog) keysHelp() string {
	switch {
	case d.stale != "":
		return "y, n, esc or enter closes this"
	case d.kind == dialogQuit && d.ended:
		return "y quit · n/esc stay"
	case d.kind == dialogQuit:
		return "y quit after the step · n/esc stay · q quit now"
	}
	return "y yes · n/esc no · ←/→ choose · enter answers"
}
