package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// `rollcall plan` of a file with hosts: (DESIGN §9, §11): one block per
// host, in file order (its heading, then its plan tree exactly as the plan
// of one host draws it, from its own desired state, spec.ForHost), then
// the fleet: its waves as fleet.Waves makes them, and each host's state.
// Exit 1 when a host does not answer (or cannot converge), else 2 when a
// host has anything left to do, else 0.

// hostPlan is one host's part of the plan.
type hostPlan struct {
	hostConn
	desired *spec.Desired // the host's own (ForHost)
	plan    reconcile.Plan
	fields  map[string][]reconcile.FieldChange
	holds   []session.Hold
	pins    []session.PinRecord
	warn    string // what reading its holds had to say
}

// converged reports whether the host answers and has nothing left.
func (hp hostPlan) converged() bool { return hp.reachable() && converged(hp.plan) }

func runPlanHosts(ctx context.Context, e env, g *globals, d *spec.Desired, asJSON bool) error {
	if err := noDockerHost(g, d); err != nil {
		return err
	}
	conns, closeAll, err := dialHosts(ctx, e, d)
	if err != nil {
		return err
	}
	defer closeAll()
	plans := planHosts(ctx, e, g, d, conns)
	waves := fleet.Waves(d.HostNames(), *d.Fleet)
	for _, hp := range plans {
		if hp.warn != "" {
			fmt.Fprintf(e.stderr, "host %s: %s", termSafe(hp.host.Name), hp.warn)
		}
	}
	if asJSON {
		if err := writeJSON(e.stdout, newFleetPlanDoc(d, plans, waves)); err != nil {
			return fmt.Errorf("write plan: %w", err)
		}
	} else {
		printWarnings(e.stderr, d)
		out := screenFor(e, g, e.stdout)
		for _, hp := range plans {
			out.printf("%s\n", out.hostBlock(hp))
		}
		out.printf("%s", out.tree(fleetSummary(d, plans, waves)))
	}
	return planHostsVerdict(plans)
}

// planHosts plans every host that answers, a few at a time, from its own
// desired state; a host whose list fails is one that does not answer.
func planHosts(ctx context.Context, e env, g *globals, d *spec.Desired, conns []hostConn) []hostPlan {
	plans := make([]hostPlan, len(conns))
	sem := make(chan struct{}, dialParallel)
	var wg sync.WaitGroup
	for i, c := range conns {
		hd, _ := d.ForHost(c.host.Name)
		plans[i] = hostPlan{hostConn: c, desired: hd}
		if !c.reachable() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			hp := &plans[i]
			var warn bytes.Buffer
			hp.holds = listHolds(ctx, c.client, g, hd.Prefix, &warn)
			hp.pins = planPins(ctx, c.client, g, hd.Prefix, &warn)
			p, err := currentPlan(ctx, c.client, hd, observation{now: e.now(), holds: holdMap(hp.holds), pins: hp.pins})
			hp.warn = warn.String()
			if err != nil {
				hp.err = err
				return
			}
			hp.plan = p
			hp.fields = staleFields(ctx, c.client, hd, p)
		}()
	}
	wg.Wait()
	return plans
}

// planHostsVerdict is the exit of a fleet plan: 1 when a host does not
// answer or cannot converge (saying which), 2 when one is not converged,
// 0 when every host is.
func planHostsVerdict(plans []hostPlan) error {
	var failed []string
	pending := false
	for _, hp := range plans {
		switch {
		case !hp.reachable():
			failed = append(failed, hp.host.Name+" does not answer: "+unreachableErr(hp.err))
		case len(hp.plan.Errors()) > 0:
			failed = append(failed, hp.host.Name+" cannot converge: "+strings.Join(hp.plan.Errors(), "; "))
		case !converged(hp.plan):
			pending = true
		}
	}
	switch {
	case len(failed) > 0:
		return errors.New(strings.Join(failed, "; "))
	case pending:
		return &exitError{code: exitPending}
	}
	return nil
}

// hostBlock is one host's block: its heading, then its plan tree as the
// plan of one host draws it, or why it does not answer.
func (s screen) hostBlock(hp hostPlan) string {
	h := hp.host
	head := []span{styled(heading, "host "+h.Name), styled(muted, "  "+hostWhere(h))}
	if hp.info.ID != "" {
		head = append(head, styled(muted, "  engine "+hp.info.ID))
	}
	if hp.info.Version != "" {
		head = append(head, styled(muted, "  docker "+hp.info.Version+" (API "+hp.info.APIVersion+")"))
	}
	items := []item{{spans: head}}
	if !hp.reachable() {
		items = append(items, item{spans: []span{styled(bad, "  ! unreachable: "+unreachableErr(hp.err))}})
		return s.tree(items)
	}
	return s.tree(items) + s.plan(withFieldChanges(hp.plan, hp.fields), hp.holds)
}

// hostState is a host's one line in the fleet summary, and its style.
func hostState(hp hostPlan) (string, func(theme.Styles) lipgloss.Style) {
	p := hp.plan
	switch {
	case !hp.reachable():
		return "unreachable: " + unreachableErr(hp.err), bad
	case len(p.Errors()) > 0:
		return "cannot converge: " + strings.Join(p.Errors(), "; "), bad
	case converged(p):
		return "converged", good
	case !p.Empty():
		n := len(p.Steps())
		return fmt.Sprintf("%d %s: %s", n, plural(n, "step", "steps"), p.SummaryLine()), change
	}
	held := 0
	for _, w := range heldSlots(p) {
		for _, slots := range w {
			held += len(slots)
		}
	}
	return fmt.Sprintf("not converged: %d %s on hold (see rollcall retry)", held, plural(held, "slot", "slots")), warn
}

func good(st theme.Styles) lipgloss.Style { return st.OK }

// fleetSummary is what follows the blocks: the waves, canary first, with
// the fleet's policy; each host's state; and a count of the states.
func fleetSummary(d *spec.Desired, plans []hostPlan, waves [][]string) []item {
	fl := d.Fleet
	policy := fmt.Sprintf("batch %s · wait %s · on_failure %s", fl.Batch, fl.Wait, fl.OnFailure)
	if fl.OnFailure == spec.OnFailureContinue {
		policy += fmt.Sprintf(" (max_failed_hosts %d)", fl.MaxFailedHosts)
	}
	items := []item{{spans: []span{styled(heading, "waves"), styled(muted, "  "+policy)}}}
	for i, w := range waves {
		label := fmt.Sprintf("%d", i+1)
		if i == 0 {
			label += " canary"
		}
		items = append(items, item{nested: true, spans: []span{styled(muted, fmt.Sprintf("%-10s", label)), plainSpan(strings.Join(w, ", "))}})
	}
	items = append(items, item{spans: []span{styled(heading, "hosts")}})
	width := 0
	for _, hp := range plans {
		width = max(width, len(hp.host.Name))
	}
	var converged, pending, down int
	for _, hp := range plans {
		text, style := hostState(hp)
		items = append(items, item{nested: true, spans: []span{plainSpan(fmt.Sprintf("%-*s  ", width, hp.host.Name)), styled(style, text)}})
		switch {
		case !hp.reachable():
			down++
		case hp.converged():
			converged++
		default:
			pending++
		}
	}
	return append(items, item{spans: []span{styled(summary, fleetCount(len(plans), converged, pending, down))}})
}

// fleetCount is the fleet summary's last line: "3 hosts: 1 converged · 1
// not converged · 1 unreachable".
func fleetCount(hosts, converged, pending, down int) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{converged, "converged"}, {pending, "not converged"}, {down, "unreachable"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return fmt.Sprintf("%d %s: %s", hosts, plural(hosts, "host", "hosts"), strings.Join(parts, " · "))
}

// newFleetPlanDoc is plan --json of a file with hosts: the fleet at the
// top level, and each host with its own plan document.
func newFleetPlanDoc(d *spec.Desired, plans []hostPlan, waves [][]string) planDoc {
	doc := newPlanDoc(d, reconcile.Plan{}, nil, nil, nil)
	doc.Converged = true
	waveOf := map[string]int{}
	for i, w := range waves {
		doc.Waves = append(doc.Waves, append([]string{}, w...))
		for _, h := range w {
			waveOf[h] = i
		}
	}
	var converged, pending, down int
	for _, hp := range plans {
		hd := hostDoc{Name: hp.host.Name, Endpoint: hostWhere(hp.host), Wave: waveOf[hp.host.Name],
			EngineID: hp.info.ID, EngineVersion: hp.info.Version, Reachable: hp.reachable()}
		switch {
		case !hp.reachable():
			hd.Error = unreachableErr(hp.err)
			down++
		case hp.converged():
			converged++
		default:
			pending++
		}
		if hp.reachable() {
			p := newPlanDoc(hp.desired, hp.plan, hp.fields, hp.holds, hp.pins)
			hd.Plan = &p
		}
		doc.Converged = doc.Converged && hp.converged()
		doc.Hosts = append(doc.Hosts, hd)
	}
	doc.Summary = fleetCount(len(plans), converged, pending, down)
	return doc
}
