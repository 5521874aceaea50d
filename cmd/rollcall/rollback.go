package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// rollbackMode names `rollcall rollback` in the journal's mode field.
const rollbackMode = "rollback"

func newRollbackCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	var to int
	c := &cobra.Command{
		Use:   "rollback WORKLOAD [--to REV] [-f FILE]",
		Short: "Pin a workload to an earlier revision until the desired spec changes, journaled",
		Long: `Pin WORKLOAD to one of its revisions (the README's "Canary and rollback"):
the specs that ran healthy on every slot, kept beside the journal per
engine and prefix (rollcall history --revisions lists them). By default the revision before the desired
spec; --to REV picks one by its number.

While the pin stands, the desired spec of WORKLOAD is held (not started)
and the pinned revision is what rolls in, under the usual rules: one slot
at a time, each old container drained (pre_stop, update.drain) once its
replacement is healthy. Replicas, resources and the update policy stay the
desired state's. The pin lasts until the desired spec changes, or until
rollcall retry WORKLOAD lifts it. The pin is journaled (action "pin")
before it is written; a session ending it journals "unpin".

It works whether or not a console or agent runs: a running session takes
the pin in at its next relist (within 30s, at once on any engine event),
the next session starts with it. rollcall plan shows it, and exits 2 while
it keeps the workload off its desired spec. In the console, u does the
same for the selected workload.

Exit status: 0 pinned; 1 error (no such workload or revision, the revision
is the desired spec itself, its image is gone from the engine, the desired
image cannot be resolved, or the journal cannot be written: then nothing
is pinned).`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || args[0] == "" {
				return usageErr(fmt.Errorf("rollback takes one workload name, got %d argument(s)", len(args)))
			}
			if c.Flags().Changed("to") && to < 1 { // --to 0 is no revision, not the default
				return usageErr(fmt.Errorf("--to %d: revisions are numbered from 1", to))
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
			if _, ok := d.Workloads[workload]; !ok {
				return withHint(fmt.Errorf("no workload %q in %s (prefix %s)", workload, termSafe(d.Source), d.Prefix),
					"workloads: "+termSafe(knownWorkloads(d)))
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
			resolved := spec.Resolve(ctx, d, client)
			desired := resolved.Workload(workload)
			if desired.Err != nil {
				return withHint(fmt.Errorf("pin %s: the desired spec is not resolved: %w", termSafe(workload), desired.Err),
					"a pin is set against the desired spec; make its image available first")
			}
			revs, err := session.ListRevisions(g.stateDir(), info, d.Prefix)
			if err != nil {
				return withHint(err, "the revisions file beside the journal could not be read; fix or remove it (its revisions are lost then)")
			}
			rev, err := session.PickRevision(revs, workload, to, desired.Hash)
			if err != nil {
				return withHint(err, "rollcall history --revisions "+workload+" lists them")
			}
			p := session.PinRecord{Workload: workload, Revision: rev, Against: desired.Hash, By: journal.CurrentUser(), Since: time.Now().UTC()}
			if _, views := session.Pinned(ctx, client, resolved, []session.PinRecord{p}); len(views) == 1 && views[0].Err != "" {
				return withHint(fmt.Errorf("pin %s: %s", termSafe(workload), termSafe(views[0].Err)), "load the image again (docker load), or pick another revision with --to")
			}

			// No audit, no action: the decision is journaled first.
			jr, err := journal.Open(g.journal, journal.Options{})
			if err != nil {
				return withHint(err, "nothing is pinned: a decision that cannot be journaled is not taken")
			}
			defer jr.Close()
			entry := journal.Entry{Time: time.Now(), User: p.By, Mode: rollbackMode, Action: "pin", Workload: workload, Slot: -1,
				Reason: session.PinAbout(p), Result: journal.ResultDecision, Engine: engineName(info), Prefix: d.Prefix}
			if err := jr.Append(entry); err != nil {
				return withHint(err, "nothing is pinned: a decision that cannot be journaled is not taken")
			}
			was, err := session.SetPin(g.stateDir(), info, d.Prefix, p)
			if err != nil {
				return withHint(err, "nothing is pinned; the journal has the pin, run it again")
			}
			out := screenFor(e, g, e.stdout)
			if was != nil {
				out.printf("%s\n", termSafe(fmt.Sprintf("replaced the pin of %s to revision %d", workload, was.Revision.Number)))
			}
			out.printf("%s\n", termSafe(fmt.Sprintf("pinned %s to revision %d (spec %s, %s); the desired spec %s is held",
				workload, rev.Number, shortHash(rev.Hash), rev.Image, shortHash(desired.Hash))))
			out.printf("a running rollcall rolls it in at its next relist (a console in step mode once approved); `rollcall plan` shows the steps; `rollcall retry %s` lifts the pin\n", termSafe(workload))
			return nil
		},
	}
	fileFlag(c, &file)
	c.Flags().IntVar(&to, "to", 0, "the revision to pin (`REV`), by its number in rollcall history --revisions (default: the one before the desired spec)")
	return c
}

// knownWorkloads names the workloads of d for a hint.
func knownWorkloads(d *spec.Desired) string {
	if names := d.Names(); len(names) > 0 {
		return strings.Join(names, ", ")
	}
	return "none"
}

// engineName is how the journal names an engine: its identity where it
// has one, else its endpoint.
func engineName(info docker.EngineInfo) string {
	if info.ID != "" {
		return info.ID
	}
	return info.Endpoint
}

// liftPinOnRetry is `rollcall retry`'s part for a pin: WORKLOAD's pin, if
// it has one, is journaled as lifted ("unpin"), then removed. It reports
// whether there was one.
func liftPinOnRetry(info docker.EngineInfo, g *globals, prefix, workload string, out screen) (bool, error) {
	pins, err := session.ListPins(g.stateDir(), info, prefix)
	if err != nil {
		return false, withHint(err, "the pins file beside the journal could not be read; fix or remove it (its pins are lost then)")
	}
	i := slices.IndexFunc(pins, func(p session.PinRecord) bool { return p.Workload == workload })
	if i < 0 {
		return false, nil
	}
	p := pins[i]
	jr, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return true, withHint(err, "the pin stays: a decision that cannot be journaled is not taken")
	}
	defer jr.Close()
	entry := journal.Entry{Time: time.Now(), User: journal.CurrentUser(), Mode: retryMode, Action: "unpin", Workload: workload, Slot: -1,
		Reason: fmt.Sprintf("pin to revision %d (spec %s) lifted: the desired spec %s rolls in again", p.Revision.Number, shortHash(p.Revision.Hash), shortHash(p.Against)),
		Result: journal.ResultDecision, Engine: engineName(info), Prefix: prefix}
	if err := jr.Append(entry); err != nil {
		return true, withHint(err, "the pin stays: a decision that cannot be journaled is not taken")
	}
	lifted, err := session.LiftPin(g.stateDir(), info, prefix, workload)
	if err != nil {
		return true, withHint(err, "the pin stays; the journal has the retry, run it again")
	}
	if lifted == nil {
		out.printf("%s: the pin was lifted meanwhile\n", termSafe(workload))
		return true, nil
	}
	out.printf("%s\n", termSafe(fmt.Sprintf("lifted the pin of %s to revision %d (set by %s since %s UTC)",
		workload, lifted.Revision.Number, lifted.By, lifted.Since.UTC().Format(time.DateTime))))
	return true, nil
}

// planPins reads the pins kept beside the journal for the engine and
// prefix, so a one-shot plan applies them as a session would. Pins that
// cannot be read are left out of the plan, with a warning.
func planPins(ctx context.Context, c docker.Client, g *globals, prefix string, warn io.Writer) []session.PinRecord {
	info, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	pins, err := session.ListPins(g.stateDir(), info, prefix)
	if err != nil {
		fmt.Fprintf(warn, "warning: %s\n", termSafe(err.Error()))
	}
	return pins
}

// revisionDoc is one revision as `history --revisions --json` prints it,
// one JSON object per line, newest first.
type revisionDoc struct {
	Workload string    `json:"workload"`
	Revision int       `json:"revision"`
	Hash     string    `json:"hash"`
	Image    string    `json:"image"`
	ImageID  string    `json:"image_id"`
	Version  string    `json:"version"`
	At       time.Time `json:"at"`
	Rollout  string    `json:"rollout"`
	Pinned   bool      `json:"pinned"` // the workload is pinned to it now
}

var revisionsHeader = []string{"WORKLOAD", "REV", "SPEC", "IMAGE", "VERSION", "WHEN", "ROLLOUT", "PIN"}

// printRevisions is `history --revisions [WORKLOAD]`: the revisions kept
// for the engine and prefix, newest first, of one workload or all.
func printRevisions(ctx context.Context, e env, g *globals, file desiredFlags, workload string, limit int, asJSON bool) error {
	prefix := g.prefix
	d, derr := loadDesired(ctx, e, file, "")
	if prefix == "" {
		prefix = spec.DefaultPrefix
		if derr == nil {
			prefix = d.Prefix
		}
	}
	client, closeClient, err := connect(ctx, e, g)
	if err != nil {
		return err
	}
	defer closeClient()
	if derr == nil { // on a swarm, its revisions (swarm.go)
		if client, _, err = engineFor(ctx, client, d); err != nil {
			return err
		}
	}
	info, err := client.Info(ctx)
	if err != nil {
		return withHint(err, engineHint)
	}
	revs, err := session.ListRevisions(g.stateDir(), info, prefix)
	if err != nil {
		return withHint(err, "the revisions file beside the journal could not be read; fix or remove it (its revisions are lost then)")
	}
	pins, err := session.ListPins(g.stateDir(), info, prefix)
	if err != nil {
		fmt.Fprintf(e.stderr, "warning: %s\n", termSafe(err.Error()))
	}
	var list []session.Revision
	for _, r := range revs.List() {
		if workload == "" || r.Workload == workload {
			list = append(list, r)
		}
	}
	slices.SortStableFunc(list, func(a, b session.Revision) int { return b.At.Compare(a.At) }) // newest first
	// -n N: the newest N only.
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	pinned := func(r session.Revision) *session.PinRecord {
		for _, p := range pins {
			if p.Workload == r.Workload && p.Revision.Same(r) {
				return &p
			}
		}
		return nil
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetEscapeHTML(false)
		for _, r := range list {
			doc := revisionDoc{Workload: r.Workload, Revision: r.Number, Hash: r.Hash, Image: r.Image, ImageID: r.ImageID,
				Version: r.Version, At: r.At.UTC(), Rollout: r.Rollout, Pinned: pinned(r) != nil}
			if err := enc.Encode(doc); err != nil {
				return fmt.Errorf("write revisions: %w", err)
			}
		}
		return nil
	}
	if len(list) == 0 {
		what := "no revisions kept"
		if workload != "" {
			what += " for " + workload
		}
		fmt.Fprintf(e.stderr, "%s yet (prefix %s on this engine): a revision is kept once a spec runs healthy on every slot\n", termSafe(what), termSafe(prefix))
		return nil
	}
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(revisionsHeader, "\t"))
	for _, r := range list {
		pin := ""
		if p := pinned(r); p != nil {
			pin = "pinned by " + p.By
		}
		cells := []string{r.Workload, fmt.Sprint(r.Number), shortHash(r.Hash), r.Image, r.Version,
			r.At.Local().Format(time.DateTime), r.Rollout, pin}
		for i := range cells {
			cells[i] = termSafe(cells[i])
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	tw.Flush()
	screenFor(e, g, e.stdout).printf("%s", boundLines(b.String()))
	return nil
}
