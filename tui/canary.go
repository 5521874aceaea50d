package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// canaryRow is a canary step under way, or just ended, as the header shows
// it (DESIGN §12): each cohort's figures live, the step's countdown, and
// what the canary is compared with. Built from the session's CanaryView.
type canaryRow struct {
	workload  string // sanitized
	step      reconcile.CanaryStep
	ends      time.Time
	ended     bool
	judgement reconcile.Judgement
	err       string // sanitized: the proxy could not be read or set
}

// canaryLines are the header's lines of the canaries, one each.
func canaryLines(f frame, rows []canaryRow, w int) []string {
	st := f.st
	var out []string
	for _, r := range rows {
		lead := fmt.Sprintf("canary %s step %d/%d · %s", r.workload, r.step.Index+1, r.step.Of, sharePct(r.step.Share))
		j := r.judgement
		var text string
		switch {
		case r.err != "":
			out = append(out, fit(st.Bad.Render("✗ "+lead+": the proxy cannot tell: "+r.err+" · the canary's share is set to 0"), w))
			continue
		case r.ended && j.Verdict == reconcile.VerdictFail:
			out = append(out, fit(st.Bad.Render("✗ "+lead+" failed: "+j.String()), w))
			continue
		case r.ended && j.Verdict == reconcile.VerdictInsufficient:
			text = lead + " ended: too little traffic"
		case r.ended:
			text = lead + " passed"
		default:
			text = lead + " · ends " + countdown(f.now, r.ends)
		}
		figures := "canary " + cohortText(j.Canary) + " │ stable " + cohortText(j.Stable) + " │ vs " + limitsText(r.step.Analysis)
		out = append(out, fit(st.Warn.Render(text)+st.Muted.Render(" │ ")+figures, w))
	}
	return out
}

// cohortText is one cohort's figures: "120 req · 0.8% err · p50 4ms p95 9ms".
func cohortText(c reconcile.CohortFigures) string {
	return fmt.Sprintf("%d req · %.1f%% err · p50 %s p95 %s", c.Requests, 100*c.ErrorRate(), ms(c.P50), ms(c.P95))
}

// limitsText is what the canary is held to, in the file's words:
// "max_error_rate 1% · max_p95_ratio 1.5× stable · min_requests 100".
func limitsText(a spec.Analysis) string {
	var parts []string
	if a.MaxErrorRate != spec.NotChecked {
		parts = append(parts, "max_error_rate "+sharePct(a.MaxErrorRate))
	}
	if a.MaxErrorRateIncrease != spec.NotChecked {
		parts = append(parts, "max_error_rate_increase "+sharePct(a.MaxErrorRateIncrease))
	}
	if a.MaxP95Ratio != spec.NotChecked {
		parts = append(parts, fmt.Sprintf("max_p95_ratio %g× stable", a.MaxP95Ratio))
	}
	parts = append(parts, fmt.Sprintf("min_requests %d", a.MinRequests))
	return strings.Join(parts, " · ")
}

// sharePct is a fraction as a percentage without needless decimals.
func sharePct(f float64) string { return fmt.Sprintf("%g%%", float64(int64(f*10000+0.5))/100) }

// ms is a latency in whole milliseconds, or "–" for none measured.
func ms(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
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
