package tui

import (
	"strings"

	"charm.land/bubbles/v2/progress"
	"charm.land/lipgloss/v2"

	"github.com/rollcall/rollcall/theme"
)

// ink is a style compiled to the escape sequences around its text.
// lipgloss's Render does much more than a span of colour needs (wrapping,
// padding, borders, per-space styling), and the panes paint thousands of
// spans a second on a large host; an ink paints the same bytes for a
// fraction of the cost. Styles an ink cannot reproduce (underline,
// strikethrough, padding, width: anything lipgloss treats space by space or
// as a block) fall back to Render.
type ink struct {
	open, close string
	style       *lipgloss.Style // fallback
}

const inkMark = "\uE000"

func inkOf(s lipgloss.Style) ink {
	if s.GetUnderline() || s.GetStrikethrough() || s.GetReverse() || s.GetHorizontalFrameSize() > 0 ||
		s.GetVerticalFrameSize() > 0 || s.GetWidth() > 0 || s.GetTransform() != nil {
		return ink{style: &s}
	}
	r := s.Render(inkMark)
	i := strings.Index(r, inkMark)
	if i < 0 {
		return ink{style: &s}
	}
	return ink{open: r[:i], close: r[i+len(inkMark):]}
}

// paint renders text in the ink's style.
func (k ink) paint(text string) string {
	switch {
	case text == "":
		return ""
	case k.style != nil:
		return k.style.Render(text)
	}
	return k.open + text + k.close
}

// inks are the theme's styles the panes paint with, compiled.
type inks struct {
	muted, ok, warn, bad, heading, change, note, rule, next, column ink
	status                                                          map[theme.Status]ink
	action                                                          map[string]ink
	// bar is a pull's progress bar in the theme's colours (Bubbles'
	// progress, drawn with ViewAs: static, no animation frames).
	bar progress.Model
}

func inksOf(st *theme.Styles) inks {
	k := inks{
		muted: inkOf(st.Muted), ok: inkOf(st.OK), warn: inkOf(st.Warn), bad: inkOf(st.Bad),
		heading: inkOf(st.Heading), change: inkOf(st.Change), note: inkOf(st.Note),
		rule: inkOf(st.Console.Rule), next: inkOf(st.Console.Next), column: inkOf(st.Console.ColumnHeader),
		status: map[theme.Status]ink{}, action: map[string]ink{},
	}
	for _, s := range []theme.Status{theme.Healthy, theme.Unverified, theme.Booting, theme.Crashed, theme.Restarting,
		theme.Paused, theme.Stopped, theme.Missing, theme.Queued, theme.Planned, theme.Approved, theme.Running, theme.Done,
		theme.Failed, theme.Skipped, theme.Waiting} {
		k.status[s] = inkOf(st.StatusStyle(s))
	}
	for _, a := range []string{"start", "stop", "roll", "restart", "update", "wait", "canary", "pull"} {
		k.action[a] = inkOf(st.Action(a))
	}
	k.bar = progress.New(progress.WithoutPercentage(), progress.WithFillCharacters('█', '░'),
		progress.WithColors(st.Action("pull").GetForeground()))
	k.bar.EmptyColor = st.Muted.GetForeground()
	return k
}

func (k *inks) statusInk(s theme.Status) ink {
	if i, ok := k.status[s]; ok {
		return i
	}
	return k.muted
}

func (k *inks) actionInk(a string) ink {
	if i, ok := k.action[a]; ok {
		return i
	}
	return ink{}
}
