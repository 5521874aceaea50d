// Package theme holds rollcall's Lip Gloss styles, palettes and glyphs, and
// nothing else: no rendering of engine data, no I/O, no terminal queries.
//
// There are three looks: dark and light (a palette for each background) and
// mono (no colour at all, only bold, faint, underline and reverse). Status is always carried by a
// glyph and a word too, never by colour alone, so mono loses nothing but
// colour. Choose picks one for "auto": mono when NO_COLOR is set, otherwise
// dark or light by the terminal's background, which the caller detects.
//
// It must not import anything of rollcall's: the engine never imports theme,
// and theme knows engine words (actions, states) only as plain strings.
package theme

import (
	"fmt"
	"image/color"
	"strings"

	"charm.land/lipgloss/v2"
)

// Name is a theme's name, as given to --theme.
type Name string

const (
	Auto  Name = "auto" // mono under NO_COLOR, else dark or light by the terminal's background
	Dark  Name = "dark"
	Light Name = "light"
	Mono  Name = "mono"
)

// Names lists the values --theme accepts, in the order help shows them.
var Names = []Name{Auto, Dark, Light, Mono}

// ParseName checks a --theme value.
func ParseName(s string) (Name, error) {
	for _, n := range Names {
		if string(n) == s {
			return n, nil
		}
	}
	all := make([]string, len(Names))
	for i, n := range Names {
		all[i] = string(n)
	}
	return "", fmt.Errorf("unknown theme %q: want one of %s", s, strings.Join(all, ", "))
}

// Choose resolves n to a concrete theme. Auto becomes Mono when noColor is
// set (NO_COLOR, https://no-color.org), else Dark or Light by
// hasDarkBackground, which is only called then. An explicit theme wins over
// NO_COLOR, as a per-invocation flag should.
func Choose(n Name, noColor bool, hasDarkBackground func() bool) Name {
	if n != Auto {
		return n
	}
	if noColor {
		return Mono
	}
	if hasDarkBackground == nil || hasDarkBackground() {
		return Dark
	}
	return Light
}

// Palette is the colours of one theme. Nil colours mean "the terminal's own".
type Palette struct {
	Accent  color.Color // headings, the running step
	Muted   color.Color // tree lines, container names, times
	OK      color.Color // done, healthy
	Warn    color.Color // waiting, spec changes, downtime
	Bad     color.Color // failed, errors
	Start   color.Color
	Roll    color.Color
	Restart color.Color
	Update  color.Color
	Stop    color.Color
	Wait    color.Color
	// The console's
	Select color.Color // background of the selected row
	Ink    color.Color // text on a coloured banner
	BadBg  color.Color // background of the red lines (emergency, halted), under white text
	// Background is the terminal background the palette is made for; the
	// contrast test measures every colour against it.
	Background color.Color
}

var palettes = map[Name]Palette{
	Dark: {
		Accent: lipgloss.Color("#82AAFF"), Muted: lipgloss.Color("#7F8794"),
		OK: lipgloss.Color("#7FD88F"), Warn: lipgloss.Color("#E5C07B"), Bad: lipgloss.Color("#FF6B6B"),
		Start: lipgloss.Color("#7FD88F"), Roll: lipgloss.Color("#82AAFF"), Restart: lipgloss.Color("#E5C07B"),
		Update: lipgloss.Color("#C792EA"), Stop: lipgloss.Color("#FF9E64"), Wait: lipgloss.Color("#7F8794"),
		Select: lipgloss.Color("#2E3440"), Ink: lipgloss.Color("#1B1D23"), BadBg: lipgloss.Color("#C62828"),
		Background: lipgloss.Color("#1B1D23"),
	},
	Light: {
		Accent: lipgloss.Color("#1D4ED8"), Muted: lipgloss.Color("#6B7280"),
		OK: lipgloss.Color("#15803D"), Warn: lipgloss.Color("#A16207"), Bad: lipgloss.Color("#B91C1C"),
		Start: lipgloss.Color("#15803D"), Roll: lipgloss.Color("#1D4ED8"), Restart: lipgloss.Color("#A16207"),
		Update: lipgloss.Color("#7E22CE"), Stop: lipgloss.Color("#C2410C"), Wait: lipgloss.Color("#6B7280"),
		Select: lipgloss.Color("#E2E8F0"), Ink: lipgloss.Color("#FFFFFF"), BadBg: lipgloss.Color("#B91C1C"),
		Background: lipgloss.Color("#FFFFFF"),
	},
	Mono: {},
}

// PaletteOf is the palette of a theme (Mono's is empty: no colour).
func PaletteOf(n Name) Palette { return palettes[n] }

// Glyphs are the symbols of the plan tree and the headless output. The
// console's status glyphs are Status.Glyph.
type Glyphs struct {
	Branch  string // a tree item with more below it
	Last    string // the last tree item
	Running string // a step that started
	Done    string // a step that succeeded
	Failed  string // a step that failed, an error
	Waiting string // a wait
	Warning string // downtime, a warning
	Sep     string // between summary items
}

// DefaultGlyphs are the glyphs of every theme. The tree glyphs match
// reconcile.Plan.String, so a styled plan reads like the plain one.
var DefaultGlyphs = Glyphs{
	Branch: "├─ ", Last: "└─ ",
	Running: "▸", Done: "✓", Failed: "✗", Waiting: "…", Warning: "!", Sep: " · ",
}

// Styles is every style rollcall's output uses. Take it from New.
type Styles struct {
	Name   Name
	Glyphs Glyphs

	Heading lipgloss.Style // a workload's name, a table header
	Muted   lipgloss.Style // tree lines, container names, times
	Change  lipgloss.Style // a spec diff line
	OK      lipgloss.Style
	Warn    lipgloss.Style
	Bad     lipgloss.Style
	Summary lipgloss.Style
	Note    lipgloss.Style

	Console Console // the console's own styles

	actions map[string]lipgloss.Style
}

// New returns the styles of a concrete theme (Dark, Light or Mono; Auto and
// unknown names give Mono: resolve Auto with Choose first).
func New(n Name) Styles {
	p, ok := palettes[n]
	if !ok {
		n, p = Mono, palettes[Mono]
	}
	base := lipgloss.NewStyle()
	fg := func(c color.Color) lipgloss.Style {
		if c == nil {
			return base
		}
		return base.Foreground(c)
	}
	s := Styles{
		Name:    n,
		Glyphs:  DefaultGlyphs,
		Heading: fg(p.Accent).Bold(true),
		Muted:   fg(p.Muted),
		Change:  fg(p.Warn),
		OK:      fg(p.OK),
		Warn:    fg(p.Warn),
		Bad:     fg(p.Bad).Bold(true),
		Summary: base.Bold(true),
		Note:    fg(p.Muted).Italic(true),
		actions: map[string]lipgloss.Style{
			"start":   fg(p.Start).Bold(true),
			"roll":    fg(p.Roll).Bold(true),
			"restart": fg(p.Restart).Bold(true),
			"update":  fg(p.Update).Bold(true),
			"stop":    fg(p.Stop).Bold(true),
			"canary":  fg(p.Roll).Bold(true),   // a phase of the roll
			"pull":    fg(p.Accent).Bold(true), // fetches, touches nothing that serves
			"wait":    fg(p.Wait),
		},
	}
	if n == Mono {
		// Without colour, faint is what sets the secondary text apart.
		s.Muted = base.Faint(true)
		s.Note = base.Faint(true)
		s.Change = base
		s.actions["wait"] = base.Faint(true)
	}
	s.Console = newConsole(p, n == Mono)
	return s
}

// Action is the style of a step's action word ("start", "roll", ...); an
// unknown word gets the plain style.
func (s Styles) Action(action string) lipgloss.Style {
	if st, ok := s.actions[action]; ok {
		return st
	}
	return lipgloss.NewStyle()
}
