package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// header is the top of the screen: engine, desired source, the mode banner,
// the lock, progress, and the lines that must not be missed (paused,
// emergency, a question waiting).
type header struct {
	version string // rollcall's, from Options
	// fleet is set in the console of several hosts (fleet.go): the
	// fleet's lines (its rollout, one row per host, the waves) take the
	// place of the title line, and the selected host's name leads its
	// mode line.
	fleet *fleetView
}

// Render draws the header at width w; its height is the number of lines.
func (h header) Render(f frame, w int) string {
	return strings.Join(h.lines(f, w), "\n")
}

// height is how many lines Render draws at width w.
func (h header) height(f frame, w int) int { return len(h.lines(f, w)) }

func (h header) lines(f frame, w int) []string {
	st, b, c := f.st, f.b, f.st.Console
	name := "rollcall"
	if h.version != "" {
		name += " " + sanitize(h.version)
	}
	if !f.has && h.fleet != nil {
		return append(h.fleet.lines(f, w), h.fleet.waitingLine(f, w))
	}
	if !f.has {
		return []string{
			fit(c.Title.Render(name)+"  "+st.Muted.Render("waiting for the session…"), w),
			fit(c.Watch.Render("…"), w),
		}
	}
	hi := b.header

	var engine string
	switch {
	case !hi.connected:
		engine = st.Bad.Render("✗ engine disconnected")
	case hi.simulated:
		engine = st.Warn.Render("engine simulated (in-memory fake engine)")
	default:
		engine = c.Label.Render("docker ") + hi.engine
	}
	var source string
	switch {
	case hi.sourceErr != "":
		source = hi.source + " " + st.Bad.Render("✗ does not load")
	case hi.loaded:
		source = hi.source + " " + st.OK.Render("✓ parsed")
	default:
		source = hi.source + " " + st.Muted.Render("… loading")
	}
	sep := c.Rule.Render(" │ ")
	lead := c.Title.Render(name) + sep
	if w > 0 {
		// the engine gives way first: the source and its state matter more
		room := w - ansi.StringWidth(lead) - ansi.StringWidth(sep) - ansi.StringWidth(source)
		engine = clip(engine, max(room, 12))
	}
	line1 := lead + engine + sep + source

	var banner string
	switch {
	case b.mode == session.ModeWatch:
		banner = c.Watch.Render("WATCH (read-only)")
	case b.pause != nil:
		banner = c.Paused.Render("PAUSED") + st.Muted.Render(" "+string(b.mode))
	case b.mode == session.ModeAuto:
		banner = c.Auto.Render("AUTO")
	default:
		banner = c.Step.Render("STEP")
	}
	var parts []string
	// The progress is a badge with colours of its own: it reads the same on
	// any terminal background, and it says converged only when it is.
	progress := hi.progress.String() + " slots up-to-date & healthy"
	switch {
	case !hi.connected:
		parts = append(parts, c.Stale.Render("? "+progress+", as last seen"))
	case b.converged() && hi.progress.Done():
		parts = append(parts, c.ProgressDone.Render(theme.Healthy.Glyph()+" converged · "+progress))
	case b.settled(): // a hold, a pin or an error keeps a slot off its desired spec
		parts = append(parts, c.Progress.Render(theme.Booting.Glyph()+" "+progress+", nothing more to do"))
	default:
		text := theme.Booting.Glyph() + " " + progress
		if b.skipped > 0 {
			text += fmt.Sprintf(", %d skipped: not converged", b.skipped)
		}
		parts = append(parts, c.Progress.Render(text))
	}
	if r := b.rollout; r != nil {
		parts = append(parts, st.Heading.Render(fmt.Sprintf("rollout approved, %d %s left", r.left, plural(r.left, "step", "steps"))))
	}
	switch {
	case hi.lockHolder != "" || hi.lockFree:
	case hi.lockErr != "":
		parts = append(parts, st.Bad.Render("lock: "+hi.lockErr))
	case hi.lockHeld:
		parts = append(parts, c.Label.Render("lock held"))
	}
	if len(hi.holds) > 0 {
		parts = append(parts, st.Warn.Render("on hold: "+strings.Join(hi.holds, ", ")))
	}
	if len(hi.pins) > 0 {
		parts = append(parts, st.Warn.Render("pinned: "+strings.Join(hi.pins, ", ")))
	}
	line2 := banner + " " + strings.Join(parts, st.Muted.Render(" · "))

	out := []string{fit(line1, w), fit(line2, w)}
	if h.fleet != nil {
		out = append(h.fleet.lines(f, w), fit(h.fleet.hostLead(f)+line2, w))
	}
	out = append(out, canaryLines(f, hi.canaries, w)...)
	if b.halted != "" {
		out = append(out, c.Halted.Render(fit(" ✗ HALTED: "+b.halted+" · nothing runs until rollcall restarts with a working journal", w)))
	}
	if !hi.connected {
		text := "✗ engine disconnected · " + f.lastSeen + ": the screen shows the last state seen, nothing runs until it is back"
		if f.lastSeen == "never seen" {
			text = "✗ engine disconnected · never seen: nothing is known of it yet, nothing runs until it answers"
		}
		if hi.engineErr != "" {
			text += ": " + hi.engineErr
		}
		for _, l := range wrapped(text, w, 3) {
			out = append(out, st.Bad.Render(l))
		}
	}
	if hi.sourceErr != "" {
		text := "✗ " + hi.sourceErr
		switch {
		case hi.loaded && hi.stateAge != "":
			text += " (the last good desired state, " + hi.stateAge + " old, stays in force)"
		case hi.loaded:
			text += " (the last good desired state stays in force)"
		}
		// wrapped, not cut: where the file broke and that the last good
		// state stays in force are both what the operator needs
		for _, l := range wrapped(text, w, 3) {
			out = append(out, st.Bad.Render(l))
		}
		if hi.sourceHint != "" {
			for _, l := range wrapped("  hint: "+hi.sourceHint, w, 2) {
				out = append(out, st.Muted.Render(l))
			}
		}
	}
	if hi.proxyErr != "" {
		out = append(out, fit(st.Warn.Render("✗ proxy not answering: "+hi.proxyErr+" · drains end on unhealthy"), w))
	}
	switch {
	case hi.lockFree:
		out = append(out, fit(st.OK.Render("✓ the lock came free: space takes it (step mode)"), w))
	case hi.lockHolder != "":
		out = append(out, fit(st.Warn.Render("lock held by "+hi.lockHolder+": this console only watches"), w))
	}
	if n := len(b.rolled); n > 0 {
		r := b.rolled[n-1]
		text := " ↩ rolled back " + r.target + ": " + r.container + " stopped"
		if r.serving != "" {
			text += ", " + r.serving + " keeps serving"
		}
		text += "; spec " + r.hash + " on hold"
		if r.reason != "" {
			text += " (" + r.reason + ")"
		}
		if n > 1 {
			text += fmt.Sprintf(" · %d rollbacks in all", n)
		}
		out = append(out, c.RolledBack.Render(fit(text, w)))
	}
	if b.refusal != "" {
		out = append(out, fit(st.Bad.Render("✗ "+b.refusal), w))
	}
	if p := b.pause; p != nil {
		text := "⏸ paused: " + p.reason
		if p.operator {
			text += " · p resumes"
		} else {
			text += " · see detail; p resumes"
		}
		out = append(out, fit(st.Warn.Render(text), w))
	}
	if hi.skipHealth {
		text := " ⚠ EMERGENCY skip-health: up-to-date running containers count as healthy at once · E turns it off"
		out = append(out, c.Emergency.Render(fit(text, w)))
	}
	if q := b.confirm; q != nil && b.mode.Acting() && !f.asking {
		text := "⚠ waiting for an answer (c answers): " + q.title + ": " + q.prompt
		if q.declined {
			text = "⚠ declined, still waiting (c answers): " + q.title + ": " + q.prompt
		}
		out = append(out, fit(st.Warn.Render(text), w))
	}
	if w == 0 {
		return out
	}
	for i, l := range out {
		if ansi.StringWidth(l) > w {
			out[i] = clip(l, w)
		}
	}
	return out
}

// wrapped is text in lines of at most w cells, at most n of them (the
// last cut with an ellipsis if more were needed); continuation lines are
// indented by two cells. w 0: one line, as is.
func wrapped(text string, w, n int) []string {
	if w <= 0 || width(text) <= w {
		return []string{text}
	}
	ls := wrapWords(text, w)
	out := []string{ls[0]}
	if len(ls) > 1 {
		for _, l := range wrapWords(strings.Join(ls[1:], " "), w-2) {
			out = append(out, "  "+l)
		}
	}
	if len(out) > n {
		out[n-1] = clip(out[n-1]+" "+strings.Join(out[n:], " "), w)
		out = out[:n]
	}
	for i := range out {
		out[i] = fit(out[i], w)
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
