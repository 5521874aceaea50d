package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

type applyOpts struct {
	file       desiredFlags
	yes        bool
	timeout    time.Duration
	asJSON     bool
	recreate   bool
	skipHealth bool
}

const defaultApplyTimeout = 5 * time.Minute

func newApplyCmd(e env, g *globals) *cobra.Command {
	o := applyOpts{}
	c := &cobra.Command{
		Use:   "apply [-f FILE] [--yes] [--timeout D] [--json] [--recreate] [--skip-health]",
		Short: "Converge now, headless; exit 0 converged, 1 failed or timed out",
		Long: `Converge the engine towards the desired-state file and return once it is
steady: observe, plan, run the steps, and again, until nothing is left to do
or wait for. Progress goes to stderr, one line per step as it starts and as
it ends, then a final line. Every executed step is written to the journal.

Without --yes, apply shows the plan and asks first (default No); when stdin
is not a terminal it refuses instead.

Exit status: 0 converged; 1 failed, paused (a new container missed its
health deadline with failure_action pause), timed out, cancelled or refused.`,
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
	return c
}

func runApply(ctx context.Context, e env, g *globals, o applyOpts) error {
	d, err := loadDesired(ctx, e, o.file, g.prefix)
	if err != nil {
		return err
	}
	printWarnings(e.stderr, d)
	client, closeClient, err := connect(ctx, e, g)
	if err != nil {
		return err
	}
	defer closeClient()

	out := screenFor(e, g, e.stderr)
	obs := observation{now: e.now(), skipHealth: o.skipHealth}
	if o.recreate {
		// One instant for every workload, so that the plan shown and the
		// steps run name the new containers alike.
		obs.recreateBefore = map[string]time.Time{}
		for _, name := range d.Names() {
			obs.recreateBefore[name] = obs.now
		}
	}
	if o.skipHealth {
		out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Warning+" EMERGENCY --skip-health: up-to-date running containers count as healthy at once"))
	}
	if !o.yes {
		if err := confirmApply(ctx, e, out, client, d, obs); err != nil {
			return err
		}
	}

	release, err := hostLock(ctx, client, d.Prefix)
	if err != nil {
		return err
	}
	defer release()
	j, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return withHint(fmt.Errorf("open journal: %w", err), "pass --journal PATH to keep it elsewhere; apply does not act without its audit trail")
	}
	defer j.Close()

	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	prog := &progress{out: out, journal: j, user: journal.CurrentUser(), now: e.now, mode: "apply"}
	rep, err := reconcile.Converge(ctx, client, d, reconcile.ConvergeOptions{
		Now:            e.now,
		SkipHealth:     o.skipHealth,
		RecreateBefore: obs.recreateBefore,
		OnPlan:         prog.plan,
		Apply:          reconcile.ApplyOptions{OnStart: prog.start, OnDone: prog.done},
	})
	final := prog.final(ctx, rep, err, o.timeout)
	if err == nil {
		out.printf("%s\n", out.render(out.st.OK, out.st.Glyphs.Done+" "+final))
	} else {
		out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Failed+" "+final))
	}
	if o.asJSON {
		if werr := writeJSON(e.stdout, newApplyDoc(d, rep, err, final, prog.results())); werr != nil {
			return fmt.Errorf("write outcome: %w", werr)
		}
	}
	if err != nil {
		return &exitError{code: exitFailed}
	}
	return nil
}

// confirmApply shows the plan and asks. It refuses when nobody can answer.
func confirmApply(ctx context.Context, e env, out screen, c docker.Client, d *spec.Desired, obs observation) error {
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
	out.printf("%s", out.plan(p))
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

// progress reports a converge as it goes: one line per step as it starts
// and as it ends, waits when they change, and a journal line per executed
// step.
type progress struct {
	out     screen
	journal *journal.Journal
	user    string
	mode    string
	now     func() time.Time

	mu       sync.Mutex
	began    time.Time
	waits    map[string]string // wait key → reason, as last shown
	finished []reconcile.Result
}

func (p *progress) plan(_ int, plan reconcile.Plan) {
	p.mu.Lock()
	defer p.mu.Unlock()
	waits := map[string]string{}
	for _, s := range plan.Steps() {
		if s.Action != reconcile.ActWait {
			continue
		}
		waits[s.Key()] = s.Reason
		if p.waits[s.Key()] != s.Reason {
			p.line(p.out.st.Glyphs.Waiting, s, p.out.render(p.out.st.Muted, s.Reason))
		}
	}
	p.waits = waits
}

func (p *progress) start(s reconcile.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.began = p.now()
	reason := s.Reason
	if s.Downtime {
		reason = p.out.render(p.out.st.Warn, reason)
	}
	p.line(p.out.st.Glyphs.Running, s, reason)
}

func (p *progress) done(r reconcile.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished = append(p.finished, r)
	took := r.Duration.Round(time.Millisecond).String()
	if r.Err != nil {
		p.line(p.out.render(p.out.st.Bad, p.out.st.Glyphs.Failed), r.Step, p.out.render(p.out.st.Bad, took+": "+oneLine(r.Err.Error())))
	} else {
		p.line(p.out.render(p.out.st.OK, p.out.st.Glyphs.Done), r.Step, took)
	}
	if p.journal == nil {
		return
	}
	if err := p.journal.Append(journal.FromResult(r, p.began, p.user, p.mode)); err != nil {
		p.out.printf("%s\n", p.out.render(p.out.st.Warn, p.out.st.Glyphs.Warning+" journal: "+oneLine(err.Error())))
	}
}

// line prints "<glyph> <action> <target> <container>  <text>".
func (p *progress) line(glyph string, s reconcile.Step, text string) {
	st := p.out.st
	p.out.printf("%s %s %-8s %s  %s\n", glyph, p.out.render(st.Action(string(s.Action)), fmt.Sprintf("%-7s", s.Action)),
		s.Target(), p.out.render(st.Muted, s.Container), text)
}

func (p *progress) results() []reconcile.Result {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]reconcile.Result(nil), p.finished...)
}

// final is the last line: "converged in 3 rounds: 2 start · 1 roll", or
// "failed: ..." saying why and what was left.
func (p *progress) final(ctx context.Context, rep reconcile.Report, err error, timeout time.Duration) string {
	ok := reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{}}}
	for _, r := range p.results() {
		if r.Err == nil {
			ok.Workloads[0].Steps = append(ok.Workloads[0].Steps, r.Step)
		}
	}
	rounds := fmt.Sprintf("%d round", rep.Rounds)
	if rep.Rounds != 1 {
		rounds += "s"
	}
	if err == nil {
		s := fmt.Sprintf("converged in %s: %s", rounds, ok.Summary())
		if rep.Failed > 0 {
			s += fmt.Sprintf(" (%d failed step(s) retried)", rep.Failed)
		}
		return s
	}
	left := rep.Last.Summary()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("failed: timed out after %s (%s); left: %s", timeout, rounds, left)
	case errors.Is(ctx.Err(), context.Canceled):
		return fmt.Sprintf("failed: interrupted after %s; left: %s", rounds, left)
	case errors.Is(err, reconcile.ErrPaused):
		return fmt.Sprintf("failed: %s; fix it and run apply again, or roll back the desired state", oneLine(err.Error()))
	}
	return "failed: " + oneLine(err.Error())
}
