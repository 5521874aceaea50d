package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"charm.land/lipgloss/v2"
	"charm.land/lipgloss/v2/table"
	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

const defaultHistory = 20

func newHistoryCmd(e env, g *globals) *cobra.Command {
	var n int
	var asJSON, revisions bool
	var file desiredFlags
	c := &cobra.Command{
		Use:   "history [-n N] [--json] [--revisions [WORKLOAD]]",
		Short: "Show the journal of executed steps, newest last",
		Long: `Show the last N steps executed against the engine, by any console, apply or
agent that wrote to this journal, and the operators' decisions (approve,
skip, confirm, rollback ...), newest last. A step is one row: its result
(ok, failed, held: a canary step held on too little traffic, or
interrupted when no end was journaled: still running, or cut short by a
crash); a canary step's row shows its verdict and both cohorts' figures.
A table on a terminal, tab-aligned plain text when piped; --json prints the journal's own last N lines, a "started" line
before each step's end (one JSON object per line, the schema of
engine/journal.Entry).

The journal is read in bounded time and memory: a regular file only (a
FIFO or a device is refused), each line at most 1 MiB (a longer one is
skipped and named by its line number), at most the last 256 MiB of each
file, and with -n N only the newest lines N steps need. SIGINT or SIGTERM
ends the read.

--revisions lists the revisions kept instead (the README's "Canary and
rollback"): the specs that
ran healthy on every slot, the last 10 per workload, for this engine and
prefix (--prefix, else the desired state's: -f as plan reads it, else
rollcall), newest first: workload, revision number (what rollcall rollback
--to takes), spec hash, image, version, when, the rollout it was reached
in, and the pin that holds it now. Of one workload with WORKLOAD; with -n N
the newest N only (by default all that are kept); --json prints one JSON
object per line (workload, revision, hash, image, image_id, version, at,
rollout, pinned).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) > 1 || (len(args) == 1 && !revisions) {
				return usageErr(fmt.Errorf("history takes no argument (a workload only with --revisions), got %d", len(args)))
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if revisions { // rollback.go
				limit := 0 // every revision kept, unless -n is given
				if c.Flags().Changed("lines") {
					limit = n
				}
				return printRevisions(c.Context(), e, g, file, strings.Join(args, ""), limit, asJSON)
			}
			// A step is at most two lines (its "started" line and its end,
			// which follows it), so the newest n steps are within the
			// newest 2n lines: only those are read (journal.ScanContext
			// bounds the rest).
			limit := n
			if !asJSON {
				limit = 2 * n
			}
			// c's context ends on the first SIGINT or SIGTERM, and with it the read.
			r, err := journal.ScanContext(c.Context(), g.journal, limit)
			if err != nil {
				return withHint(err, "pass --journal PATH to read another journal")
			}
			for _, name := range r.Partial {
				fmt.Fprintf(e.stderr, "rollcall: %s: over %d MiB: only its last %d MiB read\n", termSafe(name), journal.MaxFileBytes>>20, journal.MaxFileBytes>>20)
			}
			for _, l := range r.Long {
				at := fmt.Sprintf("line %d", l.Number)
				if l.Number == 0 {
					at = fmt.Sprintf("the line at byte %d", l.Offset)
				}
				fmt.Fprintf(e.stderr, "rollcall: %s: %s is longer than the %d MiB limit of a journal line: skipped\n", termSafe(l.File), at, journal.MaxLineBytes>>20)
			}
			if skipped := r.Skipped - len(r.Long); skipped > 0 {
				fmt.Fprintf(e.stderr, "rollcall: %s: skipped %d unreadable line(s)\n", termSafe(g.journal), skipped)
			}
			entries := r.Entries
			if asJSON {
				enc := json.NewEncoder(e.stdout)
				enc.SetEscapeHTML(false)
				for _, en := range entries {
					if err := enc.Encode(en); err != nil {
						return fmt.Errorf("write history: %w", err)
					}
				}
				return nil
			}
			entries = journal.Fold(entries)
			if n > 0 && len(entries) > n {
				entries = entries[len(entries)-n:]
			}
			if len(entries) == 0 {
				fmt.Fprintf(e.stderr, "no steps in the journal yet (%s)\n", termSafe(g.journal))
				return nil
			}
			printHistory(screenFor(e, g, e.stdout), entries)
			return nil
		},
	}
	c.Flags().IntVarP(&n, "lines", "n", defaultHistory, "how many entries, newest last (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the entries as JSON lines")
	c.Flags().BoolVar(&revisions, "revisions", false, "list the revisions kept (of WORKLOAD, if given), newest first")
	fileFlag(c, &file)
	return c
}

var historyHeader = []string{"TIME", "USER", "MODE", "ACTION", "TARGET", "CONTAINER", "RESULT", "TOOK", "REASON / ERROR"}

// historyRow is the cells of one entry. The journal keeps what the engine
// and the operator gave it, raw, so every cell passes termSafe: a
// container's name or an engine error never replays control sequences.
func historyRow(s screen, en journal.Entry) []string {
	target := termSafe(en.Workload) + "/" + slotText(en.Slot)
	result := s.render(s.st.OK, s.st.Glyphs.Done+" "+termSafe(en.Result))
	detail := termSafe(en.Reason)
	switch en.Result {
	case journal.ResultOK:
	case journal.ResultDecision:
		result = s.render(s.st.Muted, "· "+termSafe(en.Result))
		target = termSafe(en.Workload)
	case journal.ResultStarted:
		result = s.render(s.st.Muted, s.st.Glyphs.Running+" "+termSafe(en.Result))
	case journal.ResultInterrupted, journal.ResultHeld:
		result = s.render(s.st.Warn, s.st.Glyphs.Warning+" "+termSafe(en.Result))
		detail = s.render(s.st.Warn, termSafe(oneLine(en.Error)))
	default:
		result = s.render(s.st.Bad, s.st.Glyphs.Failed+" "+termSafe(en.Result))
		detail = s.render(s.st.Bad, termSafe(oneLine(en.Error)))
	}
	if c := en.Canary; c != nil && en.Result != journal.ResultStarted {
		// A canary step's verdict and figures, from the journal's typed
		// record: its error repeats them as a sentence.
		detail = termSafe(canaryHistoryText(c))
		switch {
		case en.Result == journal.ResultInterrupted, en.Result == journal.ResultHeld:
			detail = s.render(s.st.Warn, detail)
		case en.Result != journal.ResultOK:
			detail = s.render(s.st.Bad, detail)
		}
	}
	return []string{
		en.Time.Local().Format(time.DateTime), termSafe(en.User), termSafe(en.Mode),
		s.render(s.st.Action(en.Action), termSafe(en.Action)), target,
		s.render(s.st.Muted, termSafe(en.Container)), result,
		(time.Duration(en.DurationMS) * time.Millisecond).String(), detail,
	}
}

func printHistory(s screen, entries []journal.Entry) {
	header, body := historyHeader, rows(s, entries)
	if slices.ContainsFunc(entries, func(en journal.Entry) bool { return en.Host != "" || en.Rollout != "" }) {
		// several hosts (DESIGN §11): which host and which rollout, after the time
		header = slices.Insert(slices.Clone(historyHeader), 1, "HOST", "ROLLOUT")
		for i, en := range entries {
			body[i] = slices.Insert(body[i], 1, termSafe(cmp.Or(en.Host, "-")), termSafe(cmp.Or(en.Rollout, "-")))
		}
	}
	if !s.styled {
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, cells := range append([][]string{header}, body...) {
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
		s.printf("%s", boundLines(b.String()))
		return
	}
	t := table.New().
		Headers(header...).
		Rows(body...).
		BorderTop(false).BorderBottom(false).BorderLeft(false).BorderRight(false).
		BorderColumn(false).BorderHeader(false).
		StyleFunc(func(row, _ int) lipgloss.Style {
			if row == table.HeaderRow {
				return s.st.Heading.PaddingRight(2)
			}
			return lipgloss.NewStyle().PaddingRight(2)
		})
	s.printf("%s\n", boundLines(t.Render()))
}

func rows(s screen, entries []journal.Entry) [][]string {
	out := make([][]string, len(entries))
	for i, en := range entries {
		out[i] = historyRow(s, en)
	}
	return out
}

// canaryHistoryText is a canary step's journal record in words, as apply
// said it live: "step 1/2 at 5%: error rate 10% > max_error_rate 1% ·
// canary 120 req 10% err p95 9ms · stable 1080 req 0% err p95 8ms over
// 10s".
func canaryHistoryText(c *journal.Canary) string {
	j := c.Judgement()
	return fmt.Sprintf("step %d/%d at %s: %s · %s over %s", c.Step, c.Of, reconcile.Percent(c.Share),
		j.Finding(), cohortsText(j), clockText(j.Window))
}
