package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// canaryRow is a canary step under way, or just ended, as the header shows
// it (DESIGN §12): each cohort's figures live, the step's countdown, and
// what the canary is compared with. Built from the session's CanaryView.
type canaryRow struct {
	name      string // raw: what an intent names
	workload  string // sanitized
	step      reconcile.CanaryStep
	ends      time.Time
	ended     bool
	judgement reconcile.Judgement
	err       string // sanitized: the proxy could not be read or set
}

// held reports whether the step ended on too little traffic and holds
// there until the operator retries it or rolls it back.
func (r *canaryRow) held() bool {
	return r.ended && r.err == "" && r.judgement.Verdict == reconcile.VerdictInsufficient &&
		r.step.Analysis.OnInsufficientTraffic != spec.InsufficientFail && r.step.Analysis.OnInsufficientTraffic != spec.InsufficientPass
}

// canaryHeld is the held canary of workload w (raw), or nil.
func (h *headerInfo) canaryHeld(w string) *canaryRow {
	for i := range h.canaries {
		if r := &h.canaries[i]; r.name == w && r.held() {
			return r
		}
	}
	return nil
}

// canarySegment is one part of a canary's text (what the step is and does,
// a cohort's figures, the thresholds), in one ink: its pieces joined by
// " · ". A line breaks between segments, or between pieces of a segment
// too long for a line of its own.
type canarySegment struct {
	pieces []string
	ink    ink
}

// canaryLines are the header's lines of the canaries. Every figure must
// read at 80 columns as at 200: each canary's segments fill as few lines
// of w cells as hold them whole, the lines after its first indented. At
// w 0 (no width) each canary is one line.
func canaryLines(f frame, rows []canaryRow, w int) []string {
	k := f.ink
	var out []string
	for i := range rows {
		out = append(out, layoutCanary(canarySegments(k, &rows[i], f.now), k.muted, w)...)
	}
	return out
}

// canarySegments are what one canary says: a headline in the tone of its
// state, then (unless the proxy could not be read) each cohort's figures
// over the window so far, and while the step runs the thresholds they are
// held to. A step that ended names in its headline the figure that
// decided it beside its threshold.
func canarySegments(k *inks, r *canaryRow, now time.Time) []canarySegment {
	j := r.judgement
	step := fmt.Sprintf("canary %s step %d/%d", r.workload, r.step.Index+1, r.step.Of)
	share := reconcile.Percent(r.step.Share)
	var head canarySegment
	switch {
	case r.err != "":
		return []canarySegment{{pieces: []string{"✗ " + step, share + " cannot measure: " + r.err}, ink: k.bad}}
	case r.ended && (j.Verdict == reconcile.VerdictFail ||
		j.Verdict == reconcile.VerdictInsufficient && r.step.Analysis.OnInsufficientTraffic == spec.InsufficientFail):
		head = canarySegment{pieces: []string{"✗ " + step, share + " failed: " + j.Finding(), "share 0, rolling back"}, ink: k.bad}
	case r.held():
		head = canarySegment{pieces: []string{step, share + " holds: " + j.Finding(), "t retries the step, r rolls it back"}, ink: k.warn}
	case r.ended && j.Verdict == reconcile.VerdictInsufficient:
		head = canarySegment{pieces: []string{step, share + " passed on " + j.Finding()}, ink: k.warn}
	case r.ended:
		head = canarySegment{pieces: []string{"✓ " + step, share + " passed"}, ink: k.ok}
	default:
		return []canarySegment{{pieces: []string{step, share, "ends " + countdown(now, r.ends)}, ink: k.warn},
			{pieces: limitsPieces(r.step.Analysis)},
			{pieces: cohortPieces("canary", j.Canary, j.Window)},
			{pieces: cohortPieces("stable", j.Stable, j.Window)}}
	}
	return []canarySegment{head, {pieces: cohortPieces("canary", j.Canary, j.Window)}, {pieces: cohortPieces("stable", j.Stable, j.Window)}}
}

// cohortPieces are one cohort's figures over window: "canary 120 req in
// 18s", "0.8% err", "p50 4ms p95 9ms".
func cohortPieces(name string, c reconcile.CohortFigures, window time.Duration) []string {
	count := fmt.Sprintf("%s %d req", name, c.Requests)
	if window >= time.Second {
		count += " in " + window.Round(time.Second).String()
	}
	return []string{count, reconcile.Percent(c.ErrorRate()) + " err",
		"p50 " + reconcile.Latency(c.P50) + " p95 " + reconcile.Latency(c.P95)}
}

// limitsPieces are what the canary is held to, in the file's words:
// "held to max_error_rate 1%", "max_p95_ratio 1.5× stable", "min_requests 100".
func limitsPieces(a spec.Analysis) []string {
	var parts []string
	if a.MaxErrorRate != spec.NotChecked {
		parts = append(parts, "max_error_rate "+reconcile.Percent(a.MaxErrorRate))
	}
	if a.MaxErrorRateIncrease != spec.NotChecked {
		parts = append(parts, "max_error_rate_increase "+reconcile.Percent(a.MaxErrorRateIncrease)+" over stable")
	}
	if a.MaxP95Ratio != spec.NotChecked {
		parts = append(parts, "max_p95_ratio "+reconcile.Ratio(a.MaxP95Ratio)+" stable")
	}
	parts = append(parts, fmt.Sprintf("min_requests %d", a.MinRequests))
	parts[0] = "held to " + parts[0]
	return parts
}

// layoutCanary lays one canary's segments out in lines of at most w cells,
// the lines after the first indented: a segment goes on the line in hand
// when it fits there whole, else on a line of its own; one longer than a
// line breaks between its pieces, and a piece longer than a line between
// its words. sep paints the " │ " between segments. At w 0 it is one line.
func layoutCanary(segs []canarySegment, sep ink, w int) []string {
	const indent = "  "
	var out []string
	var line strings.Builder
	used := 0 // cells on the line in hand, past its indent; 0: nothing on it yet
	room := func() int {
		if len(out) == 0 {
			return w
		}
		return w - len(indent)
	}
	flush := func() {
		if used > 0 {
			out = append(out, line.String())
		}
		line.Reset()
		used = 0
	}
	fits := func(text, gap string) bool {
		if used == 0 {
			gap = ""
		}
		return w <= 0 || used+ansi.StringWidth(gap)+ansi.StringWidth(text) <= room()
	}
	// alone reports whether text fits a continuation line of its own.
	alone := func(text string) bool { return ansi.StringWidth(text) <= w-len(indent) }
	put := func(text, gap string, k, gapInk ink) {
		switch {
		case used > 0:
			line.WriteString(gapInk.paint(gap))
			used += ansi.StringWidth(gap)
		case len(out) > 0:
			line.WriteString(indent)
		}
		line.WriteString(k.paint(text))
		used += ansi.StringWidth(text)
	}
	// place puts text on the line in hand if it fits there, else on a
	// new line if it fits one, and reports whether it did.
	place := func(text, gap string, k, gapInk ink) bool {
		switch {
		case fits(text, gap):
		case used > 0 && alone(text):
			flush()
		default:
			return false
		}
		put(text, gap, k, gapInk)
		return true
	}
	for _, s := range segs {
		if place(strings.Join(s.pieces, " · "), " │ ", s.ink, sep) {
			continue
		}
		for i, p := range s.pieces {
			gap, gapInk := " · ", s.ink
			if i == 0 {
				gap, gapInk = " │ ", sep
			}
			if place(p, gap, s.ink, gapInk) {
				continue
			}
			// longer than a line of its own: break it between its words,
			// and a word longer than a line where the line ends
			for j, word := range strings.Split(p, " ") {
				if j > 0 {
					gap, gapInk = " ", s.ink
				}
				if place(word, gap, s.ink, gapInk) {
					continue
				}
				flush()
				parts := strings.Split(ansi.Hardwrap(word, max(room(), 1), true), "\n")
				for n, part := range parts {
					put(part, "", s.ink, gapInk)
					if n < len(parts)-1 {
						flush()
					}
				}
			}
		}
	}
	flush()
	return out
}

// canaryNext is when the soonest countdown shown next changes, from now;
// 0 when none runs.
func canaryNext(rows []canaryRow, now time.Time) time.Duration {
	var next time.Duration
	for _, r := range rows {
		if r.ended || r.err != "" {
			continue
		}
		if d := countdownNext(now, r.ends); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

// retryCanary asks to run the held canary step of workload w (raw) again
// (t), and reports whether there was one to ask about.
func (m *Model) retryCanary(w, shown string) bool {
	r := m.board.header.canaryHeld(w)
	if r == nil {
		return false
	}
	m.dialog = &dialog{title: "Retry " + shown + "?",
		body: fmt.Sprintf("Runs the canary's step %d/%d of %s again: it held on too little traffic (%s). Journaled.",
			r.step.Index+1, r.step.Of, shown, r.judgement.Finding()),
		yes: session.Retry{Workload: w}, declined: "declined: the canary of " + shown + " stays held"}
	return true
}
