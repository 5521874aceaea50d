package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/theme"
)

// screen is a writer for humans: styled when it is a terminal, plain text
// when piped. Plain output is exactly what the styled one shows, minus the
// escape sequences.
type screen struct {
	w      io.Writer
	styled bool
	st     theme.Styles
}

// screenFor picks the look for w: plain unless w is a terminal; on one, the
// --theme (auto: NO_COLOR, then the terminal's background) and the colour
// profile the terminal supports.
func screenFor(e env, g *globals, w io.Writer) screen {
	if !e.terminal(w) {
		return screen{w: w, st: theme.New(theme.Mono)}
	}
	name, err := theme.ParseName(g.theme)
	if err != nil {
		name = theme.Auto
	}
	noColor := e.getenv("NO_COLOR") != ""
	chosen := theme.Choose(name, noColor, e.darkBackground)
	environ := e.environ
	if noColor && name != theme.Auto && chosen != theme.Mono {
		// An explicit colour theme overrides NO_COLOR, as no-color.org asks
		// of per-invocation flags; colorprofile would strip it otherwise.
		environ = withoutVar(environ, "NO_COLOR")
	}
	profile := colorprofile.Detect(w, environ)
	if profile <= colorprofile.NoTTY {
		// w is a terminal (e.terminal says so) that Detect cannot query:
		// go by the environment alone.
		profile = colorprofile.Env(environ)
	}
	return screen{
		w:      &colorprofile.Writer{Forward: w, Profile: profile},
		styled: true,
		st:     theme.New(chosen),
	}
}

func withoutVar(environ []string, key string) []string {
	var out []string
	for _, kv := range environ {
		if k, _, ok := cutEnv(kv); ok && k == key {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// render applies st on a terminal and returns s unchanged otherwise.
func (s screen) render(st lipgloss.Style, text string) string {
	if !s.styled || text == "" {
		return text
	}
	return st.Render(text)
}

func (s screen) printf(format string, args ...any) { fmt.Fprintf(s.w, format, args...) }

// plan renders p as the tree of reconcile.Plan.String, styled when s is.
// Every word of it may come from a container's labels, so each passes
// termSafe, and no line is longer than maxLineWidth.
func (s screen) plan(p reconcile.Plan) string {
	if !s.styled {
		return termSafeLines(p.String())
	}
	st := s.st
	var b strings.Builder
	for _, w := range p.Workloads {
		b.WriteString(s.render(st.Heading, termSafe(w.Name)))
		if w.Error != "" {
			b.WriteString(s.render(st.Bad, "  ! "+termSafe(w.Error)))
		}
		b.WriteByte('\n')
		var lines []string
		for _, c := range w.Changes {
			lines = append(lines, s.render(st.Change, termSafe(c)))
		}
		for _, f := range w.Failures {
			lines = append(lines, s.render(st.Bad, termSafe(fmt.Sprintf("! %s/%d %s: %s (failure_action %s)", f.Workload, f.Slot, f.Container, f.Reason, f.Action))))
		}
		for _, step := range w.Steps {
			lines = append(lines, s.step(step))
		}
		for _, step := range w.Then {
			lines = append(lines, s.render(st.Muted, "then ")+s.step(step))
		}
		for _, n := range w.Notes {
			lines = append(lines, s.render(st.Note, termSafe(n)))
		}
		for i, l := range lines {
			glyph := st.Glyphs.Branch
			if i == len(lines)-1 {
				glyph = st.Glyphs.Last
			}
			b.WriteString("  " + s.render(st.Muted, glyph) + l + "\n")
		}
	}
	for _, n := range p.Notes {
		b.WriteString(s.render(st.Note, "note: "+termSafe(n)) + "\n")
	}
	summary := p.Summary()
	if t := p.ThenSummary(); t != "" {
		summary += " · then " + t
	}
	b.WriteString(s.render(st.Summary, termSafe(summary)) + "\n")
	return boundLines(b.String())
}

// step is one step line of the tree, laid out as Plan.String lays it out.
func (s screen) step(step reconcile.Step) string {
	st := s.st
	reason := termSafe(step.Reason)
	if step.Downtime {
		reason = s.render(st.Warn, reason)
	}
	line := s.render(st.Action(string(step.Action)), termSafe(fmt.Sprintf("%-7s", step.Action))) + " " +
		fmt.Sprintf("%-3s", slotText(step.Slot)) + " " +
		s.render(st.Muted, termSafe(step.Container)) + "  " +
		reason
	if step.Action == reconcile.ActWait && !step.Until.IsZero() {
		line += s.render(st.Muted, " (until "+step.Until.UTC().Format(time.TimeOnly)+")")
	}
	return line
}

func slotText(slot int) string {
	if slot == reconcile.NoSlot {
		return "-"
	}
	return fmt.Sprint(slot)
}
