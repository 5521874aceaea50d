package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// `rollcall apply` of a file with hosts: (DESIGN §11): the fleet runtime
// (engine/fleet) in auto mode under the unattended policy, until the
// rollout is done and every host steady (exit 0), or something stops it
// that a human must see to (exit 1): a host that does not answer at
// preflight, two hosts on one engine, a lock held elsewhere, a failed
// host, a refusal, the journal, the timeout. The fleet decides and acts;
// this file asks for the go-ahead, renders its snapshots (fleet_progress.go)
// and reads the last one.

func runApplyHosts(ctx context.Context, e env, g *globals, o applyOpts, d *spec.Desired) error {
	if err := noDockerHost(g, d); err != nil {
		return err
	}
	if o.recreate || o.skipHealth {
		return usageErr(errors.New("--recreate and --skip-health act on one engine: a file with hosts: does not take them yet"))
	}
	out := screenFor(e, g, e.stderr)
	if err := checkHosts(d); err != nil {
		return err
	}
	if !o.yes {
		if err := confirmApplyHosts(ctx, e, g, out, d, o.skipUnreachable); err != nil {
			return err
		}
	}
	j, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return withHint(fmt.Errorf("open journal: %w", err), "pass --journal PATH to keep it elsewhere; apply does not act without its audit trail")
	}
	defer j.Close()

	runCtx := ctx
	if o.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	f := fleet.New(fleet.Options{
		Source: source.Static(d.Source, d), Dial: fleetDialer(e, baseDir(d.Source)), Mode: session.ModeAuto,
		SkipUnreachable: o.skipUnreachable, Journal: j, JournalMode: "apply", Now: e.now, StateDir: g.stateDir(),
		Unattended: &session.Unattended{AllowMassStop: o.allowMassStop},
	})
	prog := newFleetProgress(out, d.HostNames())
	var verdict fleetOutcome
	last, ended, err := driveFleet(runCtx, f, e.abandon, func(s fleet.Snapshot) bool {
		prog.see(s)
		if verdict.done {
			return false
		}
		verdict = applyVerdict(s)
		return verdict.done
	})
	if err != nil {
		return err
	}
	if !ended {
		verdict = fleetOutcome{done: true, why: "interrupted"}
		if runCtx.Err() == context.DeadlineExceeded {
			verdict.why = fmt.Sprintf("timed out after %s", o.timeout)
		}
		verdict.why += "; left: " + fleetLeft(last)
	}
	unstarted := unstartedPlans(ctx, e, g, d, last, prog)
	for _, hv := range last.Hosts {
		if hp := prog.hosts[hv.Name]; hp != nil {
			hp.p.print(hostFinal(hv, hp.results, unstarted))
		}
	}
	final := verdict.final(last)
	if verdict.ok() {
		out.printf("%s\n", out.render(out.st.OK, out.st.Glyphs.Done+" "+termSafe(final)))
	} else {
		out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Failed+" "+termSafe(final)))
	}
	if o.asJSON {
		if werr := writeJSON(e.stdout, newFleetApplyDoc(d, last, prog, verdict, final, unstarted)); werr != nil {
			return fmt.Errorf("write outcome: %w", werr)
		}
	}
	if len(verdict.errs) > 0 {
		return verdict.errs
	}
	if !verdict.ok() {
		return &exitError{code: exitFailed}
	}
	return nil
}

// driveFleet runs f until stop says so of a snapshot or ctx ends, then
// lets it wind down (every host's step in flight ends first; a second
// signal, abandon, cuts what they wait for short) and hands stop the
// snapshots of that too. It returns the last snapshot, and whether stop
// ended the run.
func driveFleet(ctx context.Context, f *fleet.Fleet, abandon <-chan struct{}, stop func(fleet.Snapshot) bool) (fleet.Snapshot, bool, error) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	defer abandonOn(abandon, f)()
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	var last fleet.Snapshot
	stopped := false
	for s := range f.Snapshots() {
		last = s
		if stop(s) && !stopped {
			stopped = true
			cancel()
		}
	}
	return last, stopped, <-done
}

// fleetOutcome is how an unattended fleet run ended: the fleet's typed
// outcome (fleet.Outcome), or the command's own end (a timeout, a signal).
type fleetOutcome struct {
	done bool
	out  fleet.Outcome
	why  string         // the end in words; "" when every host converged
	errs spec.ErrorList // hosts the file gets wrong (one engine twice), at their lines
}

// ok: the fleet's outcome is converged (apply exits 0); any other end,
// the command's own included, exits 1.
func (v fleetOutcome) ok() bool { return v.done && v.out.OK() && len(v.errs) == 0 }

// final is apply's last line.
func (v fleetOutcome) final(s fleet.Snapshot) string {
	if v.ok() {
		line := fmt.Sprintf("converged: %d %s", len(s.Hosts), plural(len(s.Hosts), "host", "hosts"))
		if s.RolloutID != "" {
			line += ", rollout " + s.RolloutID
		}
		return line
	}
	return "failed: " + v.failure()
}

// failure is why the run failed, as apply's last line says it after
// "failed: " and apply --json's error says it alone.
func (v fleetOutcome) failure() string {
	why := v.why
	if len(v.errs) > 0 {
		// The fleet's Blocked (why) names them already, as a rule: each
		// is said once.
		var msgs []string
		for _, e := range v.errs {
			if !strings.Contains(why, e.Msg) {
				msgs = append(msgs, e.Msg)
			}
		}
		why = strings.Join(append(msgs, why), "; ")
	}
	return strings.TrimSuffix(why, "; ")
}

// applyVerdict reads the fleet's outcome for apply: whether the run is
// over, and if so why it failed, in the words of the fleet (Blocked, which
// names the hosts on one engine) and of each host's standing. The fleet
// decides; this renders. A host left out with --skip-unreachable is not
// converged, so apply fails then.
func applyVerdict(s fleet.Snapshot) fleetOutcome {
	o := s.Outcome
	v := fleetOutcome{done: o.Over(), out: o, errs: s.HostErrors}
	switch o.Kind {
	case fleet.OutcomeBlocked:
		v.why = o.Why
	case fleet.OutcomeHostStuck:
		var why []string
		for _, h := range o.Hosts {
			if h.Stuck {
				why = append(why, h.Host+" "+h.Standing.Said())
			}
		}
		v.why = strings.Join(why, "; ")
	case fleet.OutcomeLeftOut:
		var left []string
		for _, h := range o.Hosts {
			if h.LeftOut {
				left = append(left, h.Host)
			}
		}
		v.why = fmt.Sprintf("every host converged but %s, left out (--skip-unreachable)", strings.Join(left, ", "))
	}
	return v
}

// fleetLeft is what each host had left when the run ended.
func fleetLeft(s fleet.Snapshot) string {
	var parts []string
	for _, hv := range s.Hosts {
		parts = append(parts, hv.Name+" "+hostLeft(hv))
	}
	return strings.Join(parts, ", ")
}

func hostLeft(hv fleet.HostView) string {
	switch {
	case hv.DialErr != "":
		return "does not answer"
	case hv.Session.Seq == 0:
		return "not listed"
	}
	// Counted from what ran: a step in flight at the end finished first.
	left := session.Left(hv.Session)
	if left.Empty() {
		return "nothing"
	}
	return left.Summary()
}

// unstarted is what a rollout that never began on some hosts knows of them.
type unstarted struct {
	down  []string                  // the hosts that did not answer
	plans map[string]reconcile.Plan // each answering host's plan, as plan works it out
}

// unstartedPlans works out, as plan does, what each host the rollout
// never started on and that answers had left: its session never listed
// it, so the snapshot cannot say. Its zero value when every host started,
// or the engines cannot be asked now (the command's context ended).
func unstartedPlans(ctx context.Context, e env, g *globals, d *spec.Desired, last fleet.Snapshot, prog *fleetProgress) unstarted {
	var u unstarted
	need := false
	for _, hv := range last.Hosts {
		if hv.DialErr != "" {
			u.down = append(u.down, hv.Name)
		}
		if hp := prog.hosts[hv.Name]; hp != nil && len(hp.results) == 0 && hostStatusWord(hv) == "not started" {
			need = true
		}
	}
	if !need || ctx.Err() != nil {
		return u
	}
	conns, closeAll, err := dialHosts(ctx, e, d)
	if err != nil {
		return u
	}
	defer closeAll()
	u.plans = map[string]reconcile.Plan{}
	for _, hp := range planHosts(ctx, e, g, d, conns) {
		if hp.reachable() {
			u.plans[hp.host.Name] = hp.plan
		}
	}
	return u
}

// hostFinal is a host's last line: what ran on it, and where it stands.
// A host the rollout never started on says why (the hosts that did not
// answer) and what it had left (u's plan of it).
func hostFinal(hv fleet.HostView, ran []session.StepResult, u unstarted) string {
	done, failed := ranSteps(ran)
	line := hostStatusWord(hv) + ": nothing ran"
	if len(done) > 0 {
		line = hostStatusWord(hv) + ": ran " + reconcile.SummaryOf(done)
	}
	if failed > 0 {
		line += fmt.Sprintf(" (%d failed %s)", failed, plural(failed, "step", "steps"))
	}
	p, planned := u.plans[hv.Name]
	switch {
	case len(ran) == 0 && hostStatusWord(hv) == "not started" && hv.DialErr == "" && hv.Err == nil:
		if len(u.down) > 0 {
			line = fmt.Sprintf("not started (%s %s not answer): nothing ran",
				strings.Join(u.down, ", "), plural(len(u.down), "does", "do"))
		}
		switch {
		case !planned:
			line += "; left: not known (the engine was not asked again)"
		case converged(p):
			line += "; left: nothing"
		default:
			line += "; left: " + p.Summary()
		}
	case hv.Verdict.Status != fleet.HostDone && hv.DialErr == "" && hv.Session.Seq > 0:
		line += "; left: " + hostLeft(hv)
	}
	if hv.DialErr != "" {
		line += "; " + hv.DialErr
	}
	if said := hv.Session.Standing.Said(); said != "" && hv.Session.Seq > 0 {
		// where its session stands, in its words: a hold, a failure, the
		// pins reached as asked
		line += "; " + said
	}
	return termSafe(line)
}

// hostStatusWord is a host's part in the rollout, in a word or two.
func hostStatusWord(hv fleet.HostView) string {
	if hv.Err != nil {
		return "not rolled (one engine twice)"
	}
	switch hv.Verdict.Status {
	case fleet.HostDone:
		return "converged"
	case fleet.HostRolling:
		return "not converged"
	case fleet.HostFailed:
		return "failed"
	case fleet.HostLost:
		return "lost"
	case fleet.HostLeftOut:
		return "left out"
	}
	if hv.DialErr != "" {
		return "does not answer"
	}
	return "not started"
}

// confirmApplyHosts shows every host's plan and the fleet's waves, and
// asks once for the whole rollout. It refuses when nobody can answer, and
// stops before anything acts when a host does not answer (unless skip
// leaves it out and it is no canary host).
func confirmApplyHosts(ctx context.Context, e env, g *globals, out screen, d *spec.Desired, skip bool) error {
	conns, closeAll, err := dialHosts(ctx, e, d)
	if err != nil {
		return err
	}
	defer closeAll()
	plans := planHosts(ctx, e, g, d, conns)
	waves := fleet.Waves(d.HostNames(), *d.Fleet)
	var down []string
	steps := 0
	for _, hp := range plans {
		if !hp.reachable() {
			if !skip || slices.Contains(waves[0], hp.host.Name) {
				down = append(down, hp.host.Name+": "+unreachableErr(hp.err))
			}
			continue
		}
		steps += len(hp.plan.Executable())
	}
	if len(down) > 0 {
		return withHint(fmt.Errorf("nothing was changed on any host: %s does not answer", strings.Join(down, "; ")),
			"--skip-unreachable leaves a host that does not answer out (never a canary host)")
	}
	if steps == 0 {
		return nil // nothing to agree to: converged, or only waiting
	}
	if !e.terminal(e.stdin) {
		return withHint(errors.New("refusing to apply without confirmation: stdin is not a terminal"),
			"pass --yes to apply without asking, or run `rollcall plan` to see the changes")
	}
	for _, hp := range plans {
		out.printf("%s\n", out.hostBlock(hp))
	}
	out.printf("%s", out.tree(fleetSummary(d, plans, waves)))
	out.printf("Apply %d %s across %d hosts, in %d waves (prefix %s)? [y/N] ", steps, plural(steps, "step", "steps"), len(plans), len(waves), d.Prefix)
	answer, err := readLine(ctx, e.stdin)
	if err != nil {
		out.printf("\n")
		return errors.New("cancelled: nothing was changed")
	}
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return nil
	}
	return errors.New("cancelled: nothing was changed")
}

// newFleetApplyDoc is apply --json of a file with hosts: the fleet at the
// top, each host with the steps it ran.
func newFleetApplyDoc(d *spec.Desired, s fleet.Snapshot, prog *fleetProgress, v fleetOutcome, final string, u unstarted) applyDoc {
	doc := applyDoc{Source: d.Source, Prefix: d.Prefix, Converged: v.ok(), Summary: final, Rollout: s.RolloutID,
		Steps: []resultDoc{}, Pending: []stepDoc{}, Hosts: []hostApplyDoc{}}
	if !v.ok() {
		doc.Error = oneLine(v.failure())
	}
	for _, hv := range s.Hosts {
		hd, _ := d.ForHost(hv.Name)
		var ran []session.StepResult
		var judged func(reconcile.Step) *judgementDoc
		if hp := prog.hosts[hv.Name]; hp != nil {
			ran, judged = hp.results, hp.p.canaryResult
		}
		line := hostFinal(hv, ran, u)
		res := session.Outcome{Converged: hv.Verdict.Status == fleet.HostDone, Reason: line, Steps: ran, Standing: hv.Session.Standing,
			Last: hv.Session, Left: session.Left(hv.Session)}
		hostDoc := newApplyDoc(hd, res, line, judged)
		hostDoc.Rounds = 0
		doc.Hosts = append(doc.Hosts, hostApplyDoc{Name: hv.Name, Endpoint: hv.Endpoint, EngineID: hv.EngineID,
			Status: hostStatusWord(hv), applyDoc: hostDoc})
	}
	return doc
}
