package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
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
			fields := staleFields(ctx, client, d, p)
			if asJSON {
				if err := writeJSON(e.stdout, newPlanDoc(d, p, fields)); err != nil {
					return fmt.Errorf("write plan: %w", err)
				}
			} else {
				printWarnings(e.stderr, d)
				out := screenFor(e, g, e.stdout)
				out.printf("%s", out.plan(withFieldChanges(p, fields)))
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

// inspectPerWorkload bounds the stale containers plan inspects per workload.
const inspectPerWorkload = 3

// staleFields is the field-by-field diff of every workload whose containers
// are stale: the old containers the plan rolls, now or once its waits end
// (Diff's own classification), a few per workload, are inspected and their
// differences from the desired workload merged. Environment values stay
// out (they are secrets). A container that cannot be inspected is left
// out; the plan's own lines still say what changed.
func staleFields(ctx context.Context, c docker.Client, d *spec.Desired, p reconcile.Plan) map[string][]reconcile.FieldChange {
	resolved := spec.Resolve(ctx, d, c)
	out := map[string][]reconcile.FieldChange{}
	inspected := map[string]int{}
	seen := map[string]bool{}
	for _, s := range append(p.Steps(), p.Then()...) {
		w := resolved.Workload(s.Workload)
		if s.Action != reconcile.ActRoll || w == nil || w.Err != nil || inspected[s.Workload] == inspectPerWorkload {
			continue
		}
		inspected[s.Workload]++
		det, err := c.Inspect(ctx, s.ContainerID)
		if err != nil {
			continue
		}
		for _, fc := range reconcile.SpecDiff(d.Prefix, w, det, false) {
			if key := s.Workload + "\x00" + fc.String(); !seen[key] {
				seen[key] = true
				out[s.Workload] = append(out[s.Workload], fc)
			}
		}
	}
	return out
}

// withFieldChanges adds the field-by-field lines to each workload's spec
// diff in the tree. Image and version are there already.
func withFieldChanges(p reconcile.Plan, fields map[string][]reconcile.FieldChange) reconcile.Plan {
	ws := slices.Clone(p.Workloads)
	for i := range ws {
		lines := slices.Clone(ws[i].Changes)
		for _, fc := range fields[ws[i].Name] {
			switch fc.Field {
			case "image", "image ID", "version":
				continue
			}
			if l := fc.String(); !slices.Contains(lines, l) {
				lines = append(lines, l)
			}
		}
		ws[i].Changes = lines
	}
	p.Workloads = ws
	return p
}
