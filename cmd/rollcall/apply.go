package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

type applyOpts struct {
	file          desiredFlags
	yes           bool
	timeout       time.Duration
	asJSON        bool
	recreate      bool
	skipHealth    bool
	allowMassStop bool
	// skipUnreachable leaves a host of hosts: that does not answer out.
	skipUnreachable bool
}

const defaultApplyTimeout = 5 * time.Minute

func newApplyCmd(e env, g *globals) *cobra.Command {
	o := applyOpts{}
	c := &cobra.Command{
		Use:   "apply [-f FILE] [--yes] [--timeout D] [--json] [--recreate] [--skip-health] [--skip-unreachable]",
		Short: "Converge now, headless; exit 0 converged, 1 failed or timed out",
		Long: `Converge the engine towards the desired-state file and return once it is
steady: observe, plan, run the steps, and again, until nothing is left to do
or wait for. Progress goes to stderr, one line per step as it starts and as
it ends, then a final line; a canary step (update.canary) also prints both
cohorts' figures at most once per analysis interval, and ends passed, held
on too little traffic, or failed on a check, its measured figure beside its
limit. Every executed step is written to the journal.

Without --yes, apply shows the plan and asks first (default No); when stdin
is not a terminal it refuses instead.

apply is a session in auto mode with the unattended policy: a desired
state that would stop or roll more than half of the running containers is
refused (exit 1, naming the count) unless --allow-mass-stop; stop-first
steps the file asks for run and are logged as downtime. On SIGINT or
SIGTERM the step in flight is finished first; a second signal cuts short
what it waits for (its pre_stop and drain), never an engine call it made.

Exit status: 0 converged (the plan is empty, or what is left is kept by a
pin the operator set: "pinned to revision N, as asked"); 1 failed: paused (a new
container missed its health deadline with failure_action pause), rolled
back or on hold, refused, a workload that cannot be acted on, the journal
cannot be written, timed out, cancelled or refused.

With hosts: in the file (several engines), apply runs the rollout across
them (the README's "Several hosts"): every host must answer and every host's lock is taken,
sorted by engine ID, all or nothing, before anything acts; then the waves
run, the canary host(s) first, each wave once the one before is converged
and healthy (and fleet.wait has passed); a failed host stops the later
waves and fleet.on_failure decides the rest. Without --yes it shows every
host's plan and the waves, and asks once. Progress lines are each host's,
after its name, and the fleet's (its waves, a failed host). Exit 0 only
when every host converged; 1 when a host does not answer at preflight
(nothing changed anywhere; --skip-unreachable leaves it out, never a
canary host, and apply still exits 1), two hosts reach one engine (at the
second's file:line:col), a lock is held elsewhere, a host failed, or the
timeout passed. --recreate and --skip-health are for one engine only.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runApply(cmd.Context(), e, g, o) },
	}
	fileFlag(c, &o.file)
	f := c.Flags()
	f.BoolVarP(&o.yes, "yes", "y", false, "apply without asking")
	f.DurationVar(&o.timeout, "timeout", defaultApplyTimeout, "give up when not converged by then (0: never)")
	f.BoolVar(&o.asJSON, "json", false, "print the outcome as JSON on stdout (progress stays on stderr)")
	f.BoolVar(&o.recreate, "recreate", false, "rolling restart: every container created before now counts as stale")
	f.BoolVar(&o.skipHealth, "skip-health", false, "EMERGENCY: count every up-to-date running container as healthy at once")
	f.BoolVar(&o.allowMassStop, "allow-mass-stop", false, "let a desired change stop or roll more than half of the running containers (refused otherwise; --yes does not allow it)")
	f.BoolVar(&o.skipUnreachable, "skip-unreachable", false, "with hosts: leave a host that does not answer out of the rollout, journaled (never a canary host); apply still exits 1")
	return c
}

func runApply(ctx context.Context, e env, g *globals, o applyOpts) error {
	d, err := loadDesired(ctx, e, o.file, g.prefix)
	if err != nil {
		return err
	}
	printWarnings(e.stderr, d)
	if len(d.Hosts) > 0 {
		return runApplyHosts(ctx, e, g, o, d)
	}
	// apply acts on the desired state it read once, the one the operator
	// confirmed: a file edited meanwhile is not applied unseen.
	source := source.Static(d.Source, d)
	client, closeClient, err := connect(ctx, e, g)
	if err != nil {
		return err
	}
	defer closeClient()
	client, sw, err := engineFor(ctx, client, d)
	if err != nil {
		return err
	}

	out := screenFor(e, g, e.stderr)
	obs := observation{now: e.now(), skipHealth: o.skipHealth, swarm: sw}
	if o.recreate {
		obs.recreateBefore = map[string]time.Time{}
		for _, name := range d.Names() {
			obs.recreateBefore[name] = obs.now
		}
	}
	if o.skipHealth {
		out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Warning+" EMERGENCY --skip-health: up-to-date running containers count as healthy at once"))
	}
	if !o.yes {
		if err := confirmApply(ctx, e, g, out, client, d, obs); err != nil {
			return err
		}
	}
	lock, err := hostLock(ctx, client, d.Prefix)
	if err != nil {
		return err
	}
	defer lock.Release()
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
	prog := &progress{out: out}
	if liveTerminal(e, out) {
		prog.live = &liveLines{} // one line per pull, rewritten in place
	}
	s := session.New(session.Options{
		Client: client, Swarm: sw, Source: source, Mode: session.ModeAuto, Prefix: g.prefix,
		Journal: j, JournalMode: "apply", Lock: lock, Now: e.now, StateDir: g.stateDir(),
		SkipHealth: o.skipHealth, Recreate: o.recreate,
		Unattended: &session.Unattended{AllowMassStop: o.allowMassStop},
		Log:        slog.New(prog),
		Facts:      prog.event,
	})
	defer abandonOn(e.abandon, s)() // a second signal cuts the step in flight short
	res := session.Converge(runCtx, s)
	final := applyFinal(res, o.timeout)
	prog.endLive()
	if res.Converged {
		out.printf("%s\n", out.render(out.st.OK, out.st.Glyphs.Done+" "+termSafe(final)))
	} else {
		out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Failed+" "+termSafe(final)))
	}
	if o.asJSON {
		doc := newApplyDoc(d, res, final, prog.canaryResult)
		prog.pullDocs(&doc)
		if werr := writeJSON(e.stdout, doc); werr != nil {
			return fmt.Errorf("write outcome: %w", werr)
		}
	}
	if !res.Converged {
		return &exitError{code: exitFailed}
	}
	return nil
}

// applyFinal is the last line: "converged: 2 start · 1 roll", or
// "failed: ..." saying why and what was left.
func applyFinal(res session.Outcome, timeout time.Duration) string {
	ran, failed := ranSteps(res.Steps)
	if res.Converged {
		s := "converged: " + reconcile.SummaryOf(ran)
		if failed > 0 {
			s += fmt.Sprintf(" (%d failed step(s) retried)", failed)
		}
		if said := res.Standing.Said(); said != "" && res.Standing.Kind == session.StandingConverged { // the pins reached, as asked
			s += "; " + said
		}
		return s
	}
	if res.TimedOut {
		return fmt.Sprintf("failed: timed out after %s; left: %s", timeout, res.Left.Summary())
	}
	return "failed: " + res.Reason
}

// ranSteps splits the steps that ran into those that ended well and a
// count of those that failed.
func ranSteps(results []session.StepResult) (ok []reconcile.Step, failed int) {
	for _, r := range results {
		if r.Err == "" {
			ok = append(ok, r.Step)
		} else {
			failed++
		}
	}
	return ok, failed
}

// confirmApply shows the plan and asks. It refuses when nobody can answer.
func confirmApply(ctx context.Context, e env, g *globals, out screen, c docker.Client, d *spec.Desired, obs observation) error {
	obs.holds = planHolds(ctx, c, g, d.Prefix, e.stderr)
	obs.pins = planPins(ctx, c, g, d.Prefix, e.stderr)
	p, err := currentPlan(ctx, c, d, obs)
	if err != nil {
		return err
	}
	if len(p.Executable()) == 0 {
		return nil // nothing to agree to: converged, or only waiting
	}
	if !e.terminal(e.stdin) {
		return withHint(errors.New("refusing to apply without confirmation: stdin is not a terminal"),
			"pass --yes to apply without asking, or run `rollcall plan` to see the changes")
	}
	out.printf("%s", out.plan(p, nil))
	for _, s := range p.Executable() {
		if s.Downtime {
			out.printf("%s\n", out.render(out.st.Warn, out.st.Glyphs.Warning+" stop-first: some slots are down until their new container is healthy"))
			break
		}
	}
	where := "the engine"
	if info, err := c.Info(ctx); err == nil {
		where = info.Endpoint
	}
	out.printf("Apply %d step(s) to %s (prefix %s)? [y/N] ", len(p.Executable()), where, d.Prefix)
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

// readLine reads one answer, or gives up when ctx ends (Ctrl-C at the prompt).
func readLine(ctx context.Context, r io.Reader) (string, error) {
	type read struct {
		line string
		err  error
	}
	got := make(chan read, 1)
	go func() {
		line, err := bufio.NewReader(r).ReadString('\n')
		if errors.Is(err, io.EOF) {
			err = nil
		}
		got <- read{line, err}
	}()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case r := <-got:
		return r.line, r.err
	}
}

// progress renders what the session reports for a human: a line per step
// as it starts, drains and ends, and its waits, from the typed events; then
// whatever else the session logs (refusals, the engine going away). Every
// value may come from a container's labels or the engine, so each passes
// termSafe.
type progress struct {
	out screen
	mu  sync.Mutex
	// prefix goes before every line: a host's name, with several hosts.
	prefix string

	cmu sync.Mutex
	// canary is each workload's canary step under way or last ended
	// (canaryRun); canaryEnded are those ended, in order, for apply --json.
	canary      map[string]*canaryRun
	canaryEnded []*canaryRun

	// live is the pulls in flight as lines rewritten in place, on a
	// terminal; nil prints a line per progress event (apply_pull.go).
	// Under mu, with lastPull (each pull's last progress) and pullEnds.
	live     *liveLines
	lastPull map[string]docker.PullProgress
	pullEnds []pullEnd
}

func (p *progress) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs: the session logs every attribute with its record.
func (p *progress) WithAttrs([]slog.Attr) slog.Handler { return p }

func (p *progress) WithGroup(string) slog.Handler { return p }

// event renders one of the session's typed events as a line.
func (p *progress) event(e session.Fact) {
	st := p.out.st
	s := e.Step
	line := func(glyph, text string) string {
		return fmt.Sprintf("%s %s %-8s %s  %s", glyph, p.out.render(st.Action(string(s.Action)), fmt.Sprintf("%-7s", termSafe(string(s.Action)))),
			termSafe(s.Target()), p.out.render(st.Muted, termSafe(s.Container)), text)
	}
	var text string
	isCanary := s.Action == reconcile.ActCanary && s.Canary != nil
	switch e.Kind {
	case session.FactStepStarted:
		if isCanary {
			p.canaryStarted(s)
			text = line(st.Glyphs.Running, canaryStepText(*s.Canary))
			break
		}
		reason := termSafe(s.Reason)
		if s.Downtime {
			reason = p.out.render(st.Warn, reason)
		}
		text = line(st.Glyphs.Running, reason)
	case session.FactCanary:
		reading, ok := p.canaryReading(*e.Canary)
		if !ok {
			return
		}
		text = line(st.Glyphs.Waiting, p.out.render(st.Muted, termSafe(reading)))
	case session.FactStepDone:
		if isCanary {
			text = line(p.out.render(st.OK, st.Glyphs.Done), termSafe(p.canaryEnd(s, nil).text))
			break
		}
		text = line(p.out.render(st.OK, st.Glyphs.Done), e.Duration.Round(time.Millisecond).String())
	case session.FactWaiting:
		text = line(st.Glyphs.Waiting, p.out.render(st.Muted, termSafe(s.Reason)))
	case session.FactPulling:
		p.pulling(s, *e.Pull, line(st.Glyphs.Running, p.out.render(st.Muted, pullText(*e.Pull))))
		return
	case session.FactDraining, session.FactDrained:
		d := e.Drain
		what := "draining"
		if d.PreStopRan {
			what = "draining: pre_stop ran"
		}
		if d.PreStopErr != nil {
			what = "draining: pre_stop failed (" + d.PreStopErr.Error() + "); stopping after the drain anyway"
		}
		if e.Kind == session.FactDrained {
			what = "drained: " + d.Ended
		}
		text = line(st.Glyphs.Waiting, p.out.render(st.Muted, termSafe(what)))
	case session.FactStepFailed:
		if isCanary {
			if end := p.canaryEnd(s, e.Err); end.verdict {
				if end.held {
					text = line(p.out.render(st.Warn, st.Glyphs.Warning), p.out.render(st.Warn, termSafe(end.text)))
				} else {
					text = line(p.out.render(st.Bad, st.Glyphs.Failed), p.out.render(st.Bad, termSafe(end.text)))
				}
				break
			}
		}
		text = line(p.out.render(st.Bad, st.Glyphs.Failed), p.out.render(st.Bad, e.Duration.Round(time.Millisecond).String()+": "+termSafe(e.Err.Error())))
	default:
		p.print(p.sessionFact(e))
		return
	}
	if s.Action == reconcile.ActPull && (e.Kind == session.FactStepDone || e.Kind == session.FactStepFailed) {
		p.pullEnded(s)
	}
	p.print(text)
}

// sessionFact is a fact of the session's own (not a step's) as a line: the
// session's words for it (Fact.Text), in the tone its kind calls for.
func (p *progress) sessionFact(e session.Fact) string {
	st := p.out.st
	msg := termSafe(e.Text())
	switch e.Kind {
	case session.FactRefused, session.FactRolledBack, session.FactHalted, session.FactEngineDown,
		session.FactDesiredError, session.FactLockRefused, session.FactHealthFailed, session.FactUnsplit,
		session.FactStateError:
		return p.out.render(st.Bad, st.Glyphs.Warning+" "+msg)
	case session.FactPaused, session.FactHoldSet, session.FactStepNotRun, session.FactSplitLost, session.FactProxyDown,
		session.FactWriteSlow, session.FactNoticeFailed, session.FactRegistryMiss:
		return p.out.render(st.Warn, st.Glyphs.Warning+" "+msg)
	}
	return p.out.render(st.Muted, st.Glyphs.Waiting+" "+msg)
}

// Handle renders any other line the session logs: its message, its
// attributes but those that name the session, at its level.
func (p *progress) Handle(_ context.Context, r slog.Record) error {
	var rest []string
	r.Attrs(func(at slog.Attr) bool {
		if at.Key != "prefix" && at.Key != "engine" {
			rest = append(rest, at.Key+"="+at.Value.String())
		}
		return true
	})
	st := p.out.st
	msg := termSafe(r.Message)
	if len(rest) > 0 {
		msg += ": " + termSafe(strings.Join(rest, " "))
	}
	switch {
	case r.Level >= slog.LevelError:
		p.print(p.out.render(st.Bad, st.Glyphs.Warning+" "+msg))
	case r.Level >= slog.LevelWarn:
		p.print(p.out.render(st.Warn, st.Glyphs.Warning+" "+msg))
	default:
		p.print(p.out.render(st.Muted, st.Glyphs.Waiting+" "+msg))
	}
	return nil
}

func (p *progress) print(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil && p.live.drawn > 0 { // above the pulls' lines
		erase := p.live.erase()
		p.out.printf("%s%s%s\n%s", erase, p.prefix, text, p.live.draw())
		return
	}
	p.out.printf("%s%s\n", p.prefix, text)
}

// A canary step (DESIGN §12) is shown in three parts, each from the
// session's typed events: a line as it starts, with its share, length and
// interval; a line of both cohorts' figures at most once per reading
// interval (and never more than one per minReadingGap), with the time
// left; and a line as it ends: passed, held on too little traffic, or
// failed on a check, its measured figure beside its limit.

// minReadingGap bounds how often a canary's readings are printed, however
// short its analysis interval: the figures cover the whole window so far,
// so a reading left out loses nothing.
const minReadingGap = 5 * time.Second

// canaryRun is one canary step as apply shows it.
type canaryRun struct {
	workload string
	step     reconcile.CanaryStep
	// judgement is the last reading's, or the step's own once it failed
	// (final); measured says there is one.
	judgement reconcile.Judgement
	measured  bool
	final     bool
	// shown is the last reading printed, as its window over the gap
	// between printed readings (readings drift late, never early, so
	// comparing whole gaps keeps one per interval); shownAny: one was.
	shown    int64
	shownAny bool
	ended    bool
	used     bool // taken by apply --json
}

// same reports whether c, of workload, is the step of the run.
func (r *canaryRun) same(workload string, c reconcile.CanaryStep) bool {
	return r.workload == workload && r.step.Spec == c.Spec && r.step.Index == c.Index
}

// runs is p.canary, made on first use; p.cmu is held.
func (p *progress) runs() map[string]*canaryRun {
	if p.canary == nil {
		p.canary = map[string]*canaryRun{}
	}
	return p.canary
}

// canaryStarted begins a run for canary step s.
func (p *progress) canaryStarted(s reconcile.Step) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	p.runs()[s.Workload] = &canaryRun{workload: s.Workload, step: *s.Canary}
}

// canaryReading takes a reading of a canary step, and says whether it is
// to be printed, and how: "step 1/2: 40s left · canary 120 req 0.8% err
// p95 9ms · stable 2280 req 0.1% err p95 8ms". The first reading (nothing
// measured yet), the last (the step's end says it) and one that could not
// read the proxy (the step's failure says it) are not printed.
func (p *progress) canaryReading(v session.CanaryView) (string, bool) {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	r := p.runs()[v.Workload]
	if r == nil || !r.same(v.Workload, v.Step) {
		r = p.endedRun(v.Workload, v.Step)
	}
	if r == nil {
		// Its start was not seen (a fleet's snapshot passed it by).
		r = &canaryRun{workload: v.Workload, step: v.Step}
		p.canary[v.Workload] = r
	}
	if v.Err != nil {
		return "", false
	}
	j := v.Judgement
	if j.Window <= 0 {
		return "", false // the step's start: nothing measured yet
	}
	if !r.final {
		r.judgement, r.measured = j, true
	}
	if r.ended || v.Ended {
		return "", false
	}
	n := int64(j.Window / max(v.Step.Interval(), minReadingGap))
	if r.shownAny && n <= r.shown {
		return "", false
	}
	r.shown, r.shownAny = n, true
	text := fmt.Sprintf("step %d/%d: %s left · %s", v.Step.Index+1, v.Step.Of, clockText(max(v.Step.For-j.Window, 0)),
		cohortsText(j))
	if j.Verdict == reconcile.VerdictMeasuring {
		text += " · " + j.Finding()
	}
	return text, true
}

// endedRun is the last ended run of step c of workload, or nil: a
// step's last reading may come after its end.
func (p *progress) endedRun(workload string, c reconcile.CanaryStep) *canaryRun {
	for i := len(p.canaryEnded) - 1; i >= 0; i-- {
		if r := p.canaryEnded[i]; r.same(workload, c) {
			return r
		}
	}
	return nil
}

// canaryEndLine is how a canary step ended, in words. verdict is false
// when it ended on no judgement (the proxy could not be read): the step's
// plain failed line says why.
type canaryEndLine struct {
	text    string
	verdict bool
	held    bool
}

// canaryEnd takes the end of canary step s, which failed with err (nil:
// it passed). A *reconcile.CanaryError carries the step's judgement and
// says whether it holds; a fleet's host reports its errors as text, so
// then the step's last reading says it, by the analysis.
func (p *progress) canaryEnd(s reconcile.Step, err error) canaryEndLine {
	p.cmu.Lock()
	defer p.cmu.Unlock()
	cs := *s.Canary
	r := p.runs()[s.Workload]
	if r == nil || !r.same(s.Workload, cs) || r.ended {
		r = &canaryRun{workload: s.Workload, step: cs}
		p.canary[s.Workload] = r
	}
	r.ended = true
	p.canaryEnded = append(p.canaryEnded, r)
	j := r.judgement
	held, failed := false, err != nil
	var ce *reconcile.CanaryError
	switch {
	case err == nil:
	case errors.As(err, &ce):
		j, held = ce.Judgement, ce.Hold
		r.judgement, r.measured, r.final = j, true, true
	case r.measured && (j.Verdict == reconcile.VerdictFail || j.Verdict == reconcile.VerdictInsufficient || j.Verdict == reconcile.VerdictMeasuring):
		held = j.Verdict != reconcile.VerdictFail && cs.Analysis.OnInsufficientTraffic != spec.InsufficientFail
	default:
		// It ended on something else than its verdict: the journal has
		// no figures of it, and nor has apply --json.
		r.measured, r.final = false, true
		return canaryEndLine{}
	}
	figures := ""
	if r.measured {
		figures = " · " + cohortsText(j) + " over " + clockText(j.Window)
	}
	at := fmt.Sprintf("step %d/%d", cs.Index+1, cs.Of)
	switch {
	case held:
		return canaryEndLine{verdict: true, held: true,
			text: fmt.Sprintf("%s held: %s%s; no old container stops until the step is run again or rolled back", at, j.Finding(), figures)}
	case failed:
		return canaryEndLine{verdict: true,
			text: fmt.Sprintf("%s failed: %s%s; its share is 0, the canary is rolled back and its spec put on hold", at, j.Finding(), figures)}
	}
	text := at + " passed"
	if r.measured && j.Verdict != reconcile.VerdictPass {
		text += " on " + j.Finding() + " (on_insufficient_traffic: pass)"
	}
	text += figures
	if cs.Last() {
		text += "; the roll goes on"
	}
	return canaryEndLine{verdict: true, text: text}
}

// canaryResult is the judgement of canary step s, which ended, for apply
// --json: each ended run is taken once, in order; nil when none was
// measured (the proxy could not be read).
func (p *progress) canaryResult(s reconcile.Step) *judgementDoc {
	if s.Canary == nil {
		return nil
	}
	p.cmu.Lock()
	defer p.cmu.Unlock()
	for _, r := range p.canaryEnded {
		if r.used || !r.same(s.Workload, *s.Canary) {
			continue
		}
		r.used = true
		if !r.measured {
			return nil
		}
		return newJudgementDoc(r.step, r.judgement)
	}
	return nil
}
