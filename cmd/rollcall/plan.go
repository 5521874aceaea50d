package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

func newPlanCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	var asJSON bool
	c := &cobra.Command{
		Use:   "plan [-f FILE] [--json]",
		Short: "Print what it takes to converge; exit 0 converged, 2 changes pending, 1 error",
		Long: `Print the reconcile plan: one block per workload with its spec diff and its
steps, then a summary. Styled on a terminal, plain text when piped.

Exit status: 0 converged (nothing to do or wait for), 2 changes pending,
1 error (the file is missing or broken, the engine does not answer, or a
workload cannot be acted on, e.g. its image is missing; the plan is still
printed then).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			d, err := loadDesired(ctx, e, file, g.prefix)
			if err != nil {
				return err
			}
			client, closeClient, err := connect(ctx, e, g)
			if err != nil {
				return err
			}
			defer closeClient()
			p, err := currentPlan(ctx, client, d, observation{now: e.now(), holds: planHolds(ctx, client, g, d.Prefix, e.stderr)})
			if err != nil {
				return err
			}
			if asJSON {
				if err := writeJSON(e.stdout, newPlanDoc(d, p)); err != nil {
					return fmt.Errorf("write plan: %w", err)
				}
			} else {
				printWarnings(e.stderr, d)
				out := screenFor(e, g, e.stdout)
				out.printf("%s", out.plan(p))
			}
			switch {
			case len(p.Errors()) > 0:
				return fmt.Errorf("cannot converge: %s", strings.Join(p.Errors(), "; "))
			case !converged(p):
				return &exitError{code: exitPending}
			}
			return nil
		},
	}
	fileFlag(c, &file)
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON (a stable schema, see the package doc)")
	return c
}
