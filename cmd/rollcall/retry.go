package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
)

// retryMode names `rollcall retry` in the journal's mode field.
const retryMode = "retry"

func newRetryCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	c := &cobra.Command{
		Use:   "retry WORKLOAD [-f FILE]",
		Short: "Lift the hold on a rolled-back workload, and its pin, journaled",
		Long: `Lift the hold(s) of WORKLOAD: a spec that failed and was rolled back is put
on hold, kept from starting again until it changes or is retried; retry
lifts it, so the spec rolls again under the usual rules. The decision is
journaled (action "retry") before the hold is lifted.

The holds are kept beside the journal, per engine and prefix; the desired
state (-f, as plan reads it) gives the prefix and the workloads. It works
whether or not a console or agent runs: a running session lifts the hold
at its next relist (within 30s, at once on any engine event), the next
session starts without it. In the console, t does the same.

A pin (rollcall rollback) of WORKLOAD is lifted too, journaled ("unpin"):
the desired spec rolls in again under the usual rules.

Exit status: 0 the hold is lifted, or WORKLOAD had none (nothing to do);
1 error (WORKLOAD is not in the desired state and has no hold, the file
or the engine cannot be read, or the journal cannot be written: then the
hold stays).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usageErr(fmt.Errorf("retry takes one workload name, got %d argument(s)", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			workload := args[0]
			d, err := loadDesired(ctx, e, file, g.prefix)
			if err != nil {
				return err
			}
			client, closeClient, err := connect(ctx, e, g)
			if err != nil {
				return err
			}
			defer closeClient()
			client, _, err = engineFor(ctx, client, d)
			if err != nil {
				return err
			}
			info, err := client.Info(ctx)
			if err != nil {
				return withHint(err, engineHint)
			}
			holds, err := session.ListHolds(g.stateDir(), info, d.Prefix)
			if err != nil {
				return withHint(err, "the holds file beside the journal could not be read; fix or remove it (its holds are lost then)")
			}
			var mine []session.Hold
			for _, h := range holds {
				if h.Workload == workload {
					mine = append(mine, h)
				}
			}
			out := screenFor(e, g, e.stdout)
			pinned, err := liftPinOnRetry(info, g, d.Prefix, workload, out) // and its pin (rollback.go)
			if err != nil {
				return err
			}
			if len(mine) == 0 {
				if pinned {
					return nil
				}
				if _, ok := d.Workloads[workload]; !ok {
					names := d.Names()
					known := "none"
					if len(names) > 0 {
						known = strings.Join(names, ", ")
					}
					return withHint(fmt.Errorf("no workload %q in %s (prefix %s), and no hold on it", workload, termSafe(d.Source), d.Prefix),
						"workloads: "+termSafe(known))
				}
				out.printf("%s: no spec on hold for prefix %s on this engine; nothing to lift\n", termSafe(workload), d.Prefix)
				return nil
			}

			// No audit, no action: the decision is journaled first.
			lifted, err := session.RetryHolds(g.stateDir(), g.journal, info, d.Prefix, workload, journal.CurrentUser(), retryMode, mine)
			var re *session.RetryError
			switch {
			case errors.As(err, &re) && re.Stage == session.RetryNotLifted:
				return withHint(err, "the hold stays; the journal has the retry, run it again")
			case err != nil:
				return withHint(err, "the hold stays: a decision that cannot be journaled is not taken")
			}
			if len(lifted) == 0 { // lifted meanwhile: the desired spec changed, or another retry
				out.printf("%s: the hold was lifted meanwhile; nothing more to lift\n", termSafe(workload))
				return nil
			}
			for _, h := range lifted {
				line := "lifted the hold on " + h.Workload + " spec " + shortHash(h.Hash)
				var about []string
				if !h.Since.IsZero() {
					about = append(about, "since "+h.Since.UTC().Format(time.DateTime)+" UTC")
				}
				if h.By != "" {
					about = append(about, "by "+h.By)
				}
				if len(about) > 0 {
					line += " (held " + strings.Join(about, " ") + ")"
				}
				out.printf("%s\n", termSafe(line))
			}
			if _, ok := d.Workloads[workload]; ok {
				out.printf("%s starts again under the usual rules: a running rollcall at its next relist (a console in step mode once approved); `rollcall plan` shows the steps\n", termSafe(workload))
			}
			return nil
		},
	}
	fileFlag(c, &file)
	return c
}
