package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
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

// The plan tree is built once (planTree) and rendered either way
// (screen.tree): plain when piped, styled on a terminal, where styling only
// colours the same words and glyphs. So the styled tree, stripped of its
// escape sequences, is the plain one, line for line.

// span is a piece of a tree line and the style it takes on a terminal.
type span struct {
	text  string
	style func(theme.Styles) lipgloss.Style // nil: unstyled
}

// item is one line of the tree: a top-level line, or, nested, an item
// under the workload before it, drawn with a branch glyph.
type item struct {
	spans  []span
	nested bool
}

func plainSpan(text string) span { return span{text: text} }

func styled(style func(theme.Styles) lipgloss.Style, text string) span {
	return span{text: text, style: style}
}

func heading(st theme.Styles) lipgloss.Style { return st.Heading }
func muted(st theme.Styles) lipgloss.Style   { return st.Muted }
func change(st theme.Styles) lipgloss.Style  { return st.Change }
func bad(st theme.Styles) lipgloss.Style     { return st.Bad }
func warn(st theme.Styles) lipgloss.Style    { return st.Warn }
func note(st theme.Styles) lipgloss.Style    { return st.Note }
func summary(st theme.Styles) lipgloss.Style { return st.Summary }

func actionStyle(a reconcile.Action) func(theme.Styles) lipgloss.Style {
	return func(st theme.Styles) lipgloss.Style { return st.Action(string(a)) }
}

// plan renders p as a tree, styled when s is: one block per workload with
// its spec diff, failures, steps, then rows and notes nested under it, the
// plan's notes, the summary, and then the holds (specs rolled back) with
// the slots they keep back. Every word of it may come from a container's
// labels or the holds file, so each passes termSafe, and no line is longer
// than maxLineWidth.
func (s screen) plan(p reconcile.Plan, holds []session.Hold) string {
	return s.tree(planTree(p, holds))
}

// tree renders items, styled when s is.
func (s screen) tree(items []item) string {
	var b strings.Builder
	for i, it := range items {
		if it.nested {
			glyph := s.st.Glyphs.Branch
			if i == len(items)-1 || !items[i+1].nested {
				glyph = s.st.Glyphs.Last
			}
			b.WriteString("  " + s.render(s.st.Muted, glyph))
		}
		for _, sp := range it.spans {
			text := termSafe(sp.text)
			if sp.style != nil {
				text = s.render(sp.style(s.st), text)
			}
			b.WriteString(text)
		}
		b.WriteByte('\n')
	}
	return boundLines(b.String())
}

// planTree is the tree of p (reconcile's Plan.Tree) and then holds, as
// data: the same tree Plan.String draws plain.
func planTree(p reconcile.Plan, holds []session.Hold) []item {
	var items []item
	top := func(spans ...span) { items = append(items, item{spans: spans}) }
	for _, l := range p.Tree() {
		it := item{nested: l.Nested}
		for _, sp := range l.Spans {
			it.spans = append(it.spans, span{text: sp.Text, style: toneStyle(sp)})
		}
		items = append(items, it)
	}
	held := heldSlots(p)
	for _, h := range holds {
		top(styled(warn, holdLine(h)))
		var next string
		if slots := held[h.Workload][h.Hash]; len(slots) > 0 {
			next = fmt.Sprintf("%s %s not started; lift the hold with `rollcall retry %s` (or change the desired spec)",
				plural(len(slots), "slot", "slots"), joinInts(slots), h.Workload)
		} else {
			next = "keeps no slot off the desired spec now (lifted by the next session if the desired spec changed)"
		}
		top(plainSpan("  "), styled(muted, next))
	}
	return items
}

// toneStyle is the style of a tree span's tone on a terminal.
func toneStyle(sp reconcile.Span) func(theme.Styles) lipgloss.Style {
	switch sp.Tone {
	case reconcile.ToneHeading:
		return heading
	case reconcile.ToneMuted:
		return muted
	case reconcile.ToneChange:
		return change
	case reconcile.ToneBad:
		return bad
	case reconcile.ToneWarn:
		return warn
	case reconcile.ToneNote:
		return note
	case reconcile.ToneSummary:
		return summary
	case reconcile.ToneAction:
		return actionStyle(sp.Action)
	}
	return nil
}

// holdLine is a hold's heading: its spec, since when, by whom and why.
func holdLine(h session.Hold) string {
	line := "on hold: " + h.Workload + " spec " + shortHash(h.Hash)
	if !h.Since.IsZero() {
		line += " since " + h.Since.UTC().Format(time.DateTime) + " UTC"
	}
	if h.By != "" {
		line += " by " + h.By
	}
	return line + ": " + h.Why()
}

func slotText(slot int) string {
	if slot == reconcile.NoSlot {
		return "-"
	}
	return fmt.Sprint(slot)
}

// A canary step's figures in words, for apply's lines and history's rows:
// rendered from the typed fields (reconcile's Judgement, the journal's
// Canary), never from a message.

// cohortText is one cohort's figures: "canary 120 req 0.83% err p95
// 9.3ms"; no p95 without requests. The figures are reconcile's (Percent,
// Latency), as every view says them.
func cohortText(name string, c reconcile.CohortFigures) string {
	s := fmt.Sprintf("%s %d req %s err", name, c.Requests, reconcile.Percent(c.ErrorRate()))
	if c.Requests > 0 && c.P95 > 0 {
		s += " p95 " + reconcile.Latency(c.P95)
	}
	return s
}

// cohortsText is both cohorts of judgement j: "canary 120 req 0.83% err
// p95 9.3ms · stable 2280 req 0.13% err p95 8ms".
func cohortsText(j reconcile.Judgement) string {
	return cohortText("canary", j.Canary) + " · " + cohortText("stable", j.Stable)
}

// shortDuration is d without its trailing zero units: "1m", "1h30m",
// "1m30s", "500ms".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// clockText is a time left or a window to a precision that reads: whole
// seconds from 10s on, tenths below, milliseconds under a second.
func clockText(d time.Duration) string {
	switch {
	case d >= 10*time.Second:
		d = d.Round(time.Second)
	case d >= time.Second:
		d = d.Round(100 * time.Millisecond)
	default:
		d = d.Round(time.Millisecond)
	}
	return shortDuration(d)
}

// canaryStepText is a canary step's plan in words: "step 1/2: 5% of the
// traffic for 1m, compared with the stable cohort every 10s".
func canaryStepText(c reconcile.CanaryStep) string {
	return fmt.Sprintf("step %d/%d: %s of the traffic for %s, compared with the stable cohort every %s",
		c.Index+1, c.Of, reconcile.Percent(c.Share), shortDuration(c.For), shortDuration(c.Interval()))
}
