package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
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

Exit status: 0 converged (every slot runs the desired spec, healthy:
nothing to do or wait for), 2 not converged (changes pending, a wait, or a
spec on hold that keeps slots off the desired spec: see rollcall retry), 1
error (the file is missing or broken, the engine does not answer, or a
workload cannot be acted on, e.g. its image is missing; the plan is still
printed then).

Holds (specs rolled back) are read from beside the journal, for this engine
and prefix, and shown after the plan with who put them and why.

Pins (rollcall rollback) are read from there too and applied as a session
applies them: a pinned workload's block rolls its revision in and says who
pinned it, when, and which revision; plan exits 2 while a pin keeps a
workload off its desired spec (rollcall retry lifts it).

With hosts: in the file (several engines), every host is reached at once
(ssh://, tcp:// with TLS, unix:// or a docker context, as the file says;
--docker-host does not apply) and planned from its own desired state (its
replica overrides applied): one block per host, headed by its name,
endpoint, engine ID and version, then the fleet: its waves, canary first,
and each host's state (converged, N steps, unreachable). Exit status: 1
when a host does not answer or cannot converge (the others are still
printed), else 2 when any host is not converged, else 0. Two hosts that
reach one engine (one engine ID), or a host the file gets wrong (a TLS
folder without ca.pem, cert.pem and key.pem), is an error at that host's
file:line:col. --json adds "hosts" and "waves".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			d, err := loadDesired(ctx, e, file, g.prefix)
			if err != nil {
				return err
			}
			if len(d.Hosts) > 0 {
				return runPlanHosts(ctx, e, g, d, asJSON)
			}
			client, closeClient, err := connect(ctx, e, g)
			if err != nil {
				return err
			}
			defer closeClient()
			client, sw, err := engineFor(ctx, client, d)
			if err != nil {
				return err
			}
			holds := listHolds(ctx, client, g, d.Prefix, e.stderr)
			pins := planPins(ctx, client, g, d.Prefix, e.stderr)
			p, err := currentPlan(ctx, client, d, observation{now: e.now(), holds: holdMap(holds), pins: pins, swarm: sw})
			if err != nil {
				return err
			}
			fields := staleFields(ctx, client, d, p)
			if asJSON {
				if err := writeJSON(e.stdout, newPlanDoc(d, p, fields, holds, pins)); err != nil {
					return fmt.Errorf("write plan: %w", err)
				}
			} else {
				printWarnings(e.stderr, d)
				out := screenFor(e, g, e.stdout)
				out.printf("%s", out.plan(withFieldChanges(p, fields), holds))
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

// listHolds reads the holds (rolled-back specs) kept beside the journal for
// the engine and prefix, with who put them and why, so a one-shot plan
// shows them as a session would. Holds that cannot be read are left out of
// the plan, with a warning.
func listHolds(ctx context.Context, c docker.Client, g *globals, prefix string, warn io.Writer) []session.Hold {
	info, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	holds, err := session.ListHolds(g.stateDir(), info, prefix)
	if err != nil {
		fmt.Fprintf(warn, "warning: %s\n", termSafe(err.Error()))
	}
	return holds
}

// holdMap is holds as Diff takes them: workload -> spec hashes.
func holdMap(holds []session.Hold) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, h := range holds {
		if out[h.Workload] == nil {
			out[h.Workload] = map[string]bool{}
		}
		out[h.Workload][h.Hash] = true
	}
	return out
}

// heldSlots is, by workload and spec hash, the slots the plan does not
// start because that spec is on hold (Diff's WorkloadPlan.Held).
func heldSlots(p reconcile.Plan) map[string]map[string][]int {
	out := map[string]map[string][]int{}
	for _, w := range p.Workloads {
		if len(w.Held) > 0 {
			out[w.Name] = map[string][]int{w.HeldSpec: w.Held}
		}
	}
	return out
}

func joinInts(ns []int) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// shortHash is a spec hash as the plan shows it.
func shortHash(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}
