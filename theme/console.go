package theme

import (
	"image/color"

	"charm.land/lipgloss/v2"
)

// Console is the styles of the console (tui) that the plain output does not
// need. Mono draws every distinction with reverse, bold, underline or faint.
type Console struct {
	Title lipgloss.Style // "rollcall" in the header
	Label lipgloss.Style // "engine", "desired", "lock" in the header

	// Mode banners. Each also carries its word, so mono loses nothing.
	Watch     lipgloss.Style
	Step      lipgloss.Style
	Auto      lipgloss.Style
	Paused    lipgloss.Style
	Emergency lipgloss.Style // the whole line while skip-health is on
	Halted    lipgloss.Style // the whole line while the journal is broken

	// Progress badges in the header: text on a background of their own,
	// so they read the same on any terminal background.
	Progress     lipgloss.Style // under way
	ProgressDone lipgloss.Style // converged
	Stale        lipgloss.Style // disconnected: as last seen
	RolledBack   lipgloss.Style // an automatic rollback's banner

	PaneTitle        lipgloss.Style
	PaneTitleFocused lipgloss.Style
	Rule             lipgloss.Style // the line after a pane title, the column divider
	ColumnHeader     lipgloss.Style

	Selected lipgloss.Style // the selected row of the focused pane
	Next     lipgloss.Style // in step mode, the step enter approves

	Modal       lipgloss.Style // the confirm dialog's box
	ModalChoice lipgloss.Style // its selected answer
	ModalOther  lipgloss.Style // its other answer

	HelpKey  lipgloss.Style
	HelpDesc lipgloss.Style
	HelpSep  lipgloss.Style

	Spinner lipgloss.Style
}

func newConsole(p Palette, mono bool) Console {
	base := lipgloss.NewStyle()
	fg := func(c color.Color) lipgloss.Style {
		if c == nil {
			return base
		}
		return base.Foreground(c)
	}
	banner := func(bg color.Color) lipgloss.Style {
		return base.Bold(true).Foreground(p.Ink).Background(bg).Padding(0, 1)
	}
	if mono {
		rev := base.Reverse(true).Bold(true).Padding(0, 1)
		return Console{
			Title: base.Bold(true), Label: base.Faint(true),
			Watch: rev, Step: rev, Auto: rev, Paused: rev, Emergency: base.Reverse(true).Bold(true),
			Halted:   base.Reverse(true).Bold(true),
			Progress: base.Bold(true).Padding(0, 1), ProgressDone: base.Bold(true).Padding(0, 1),
			Stale: base.Reverse(true).Padding(0, 1), RolledBack: base.Reverse(true),
			PaneTitle: base.Bold(true), PaneTitleFocused: base.Reverse(true).Bold(true),
			Rule: base.Faint(true), ColumnHeader: base.Faint(true),
			Selected: base.Reverse(true), Next: base.Bold(true).Underline(true),
			Modal: base.Border(lipgloss.DoubleBorder()).Padding(0, 1), ModalChoice: base.Reverse(true).Bold(true).Padding(0, 1),
			ModalOther: base.Padding(0, 1),
			HelpKey:    base.Bold(true), HelpDesc: base.Faint(true), HelpSep: base.Faint(true),
			Spinner: base.Bold(true),
		}
	}
	return Console{
		Title: fg(p.Accent).Bold(true), Label: fg(p.Muted),
		Watch: banner(p.Muted), Step: banner(p.Accent), Auto: banner(p.OK), Paused: banner(p.Warn),
		Emergency: base.Bold(true).Foreground(lipgloss.Color("#FFFFFF")).Background(p.BadBg),
		Halted:    base.Bold(true).Foreground(lipgloss.Color("#FFFFFF")).Background(p.BadBg),
		Progress:  banner(p.Warn), ProgressDone: banner(p.OK), Stale: banner(p.Muted),
		RolledBack: base.Bold(true).Foreground(p.Ink).Background(p.Warn),
		PaneTitle:  fg(p.Muted).Bold(true), PaneTitleFocused: fg(p.Accent).Bold(true).Underline(true),
		Rule: fg(p.Muted), ColumnHeader: fg(p.Muted),
		Selected: base.Background(p.Select), Next: fg(p.Accent).Bold(true),
		Modal:       base.Border(lipgloss.DoubleBorder()).BorderForeground(p.Warn).Padding(0, 1),
		ModalChoice: banner(p.Warn), ModalOther: fg(p.Muted).Padding(0, 1),
		HelpKey: fg(p.Accent), HelpDesc: fg(p.Muted), HelpSep: fg(p.Muted),
		Spinner: fg(p.Accent).Bold(true),
	}
}
