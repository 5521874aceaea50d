package session

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/proxy"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// A canary step (reconcile.ActCanary, DESIGN §12) runs here, beside the
// loop like every step: it sets the canary's share of the workload's
// traffic in Caddy (`dynamic rollcall`'s cohort split), reads the
// cohorts' counters (`rollcall_cohorts`) at its start and every interval,
// and judges the canary against the stable cohort over the same window,
// from the step's start on (reconcile.Judge). A failed check sends the
// share to 0 at once, before the step reports: the canary then serves
// nothing while the loop rolls it back. The last step that passes lifts the
// split, so the roll goes on with every container equal.

// CanaryView is a canary step under way or just ended, as the console and
// the agent show it: the step, its clock and each cohort's figures.
type CanaryView struct {
	Workload  string
	Slot      int
	Step      reconcile.CanaryStep
	Container string    // the canary (the step's container)
	Began     time.Time // wall clock
	Ends      time.Time // wall clock: Began + the step's length
	// Judgement is the last comparison: each cohort's figures over the
	// window so far, and what they say.
	Judgement reconcile.Judgement
	// Ended is set once the step is over (passed, failed, held, or could
	// not measure).
	Ended bool
	// Err says why the proxy could not be read or set, if so.
	Err error
	// Losses are the readings that found the split lost (set again, the
	// window restarted), in order.
	Losses []SplitLoss
}

// canaryTimeout bounds each call to Caddy's admin API.
const canaryTimeout = 5 * time.Second

// maxSplitLosses is how many times one canary step sets its split again
// after the proxy lost it (a Caddy restarted) before it gives up:
// ErrSplitLost, and the step fails like any step that could not measure.
const maxSplitLosses = 3

// clearBackoff is the wait before each try again of lifting the split
// after the last step passed; the last try's failure fails the step
// (ErrSplitNotCleared), and the roll does not go on.
var clearBackoff = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second}

// blipBackoff is the wait before each try again of a reading, or of
// sending the share to 0: a Caddy that restarts does not answer for a
// moment, and that alone must neither end a step nor stop its canary.
var blipBackoff = []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}

// canaryRunner runs canary steps through Caddy's admin API.
type canaryRunner struct {
	admin  string // proxy.caddy_admin
	prefix string
	client *http.Client
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
	report func(CanaryView) // each reading, from the step's goroutine; must not block
}

// SplitLoss is a reading that found the canary's split no longer the one
// the step set: gone (Caddy restarted, or someone lifted it), or another
// spec, share or since. The step set it again and its window restarted.
type SplitLoss struct {
	At   time.Time     // wall clock
	Want proxy.Split   // what the step had set
	Saw  *proxy.Split  // what the reading found; nil: no split
	Lost time.Duration // the window thrown away
}

// splitIs reports whether the reading's split is the one set: spec and
// share, and since when it is known (zero: not yet read back).
func splitIs(got *proxy.Split, want proxy.Split) bool {
	return got != nil && got.Spec == want.Spec && got.Share == want.Share && (want.Since.IsZero() || got.Since.Equal(want.Since))
}

// run is reconcile.RunOptions.Canary.
func (r *canaryRunner) run(ctx context.Context, s reconcile.Step) (reconcile.Judgement, error) {
	cs := s.Canary
	view := CanaryView{Workload: s.Workload, Slot: s.Slot, Step: *cs, Container: s.Container}
	fail := func(j reconcile.Judgement, err error) (reconcile.Judgement, error) {
		if zerr := r.zero(s); zerr != nil {
			err = errors.Join(err, zerr)
		}
		view.Ended, view.Err = true, err
		r.report(view)
		return j, err
	}
	want := proxy.Split{Spec: cs.Spec, Share: cs.Share}
	// begin sets the split and reads where the window starts, until a
	// reading shows the split it set.
	var start proxy.WorkloadCohorts
	begin := func() error {
		for tries := 0; ; tries++ {
			if err := r.call(ctx, func(ctx context.Context) error {
				return proxy.SetSplit(ctx, r.client, r.admin, r.prefix, s.Workload, cs.Spec, cs.Share)
			}); err != nil {
				return err
			}
			cur, err := r.read(ctx, s.Workload)
			if err != nil {
				return err
			}
			if cur.Split != nil && splitIs(cur.Split, proxy.Split{Spec: want.Spec, Share: want.Share}) {
				start, want.Since = cur, cur.Split.Since
				return nil
			}
			if tries >= maxSplitLosses {
				return fmt.Errorf("%w: set, then read back as %s", reconcile.ErrSplitLost, splitText(cur.Split))
			}
		}
	}
	if err := begin(); err != nil {
		return fail(reconcile.Judgement{}, err)
	}
	view.Began = r.now()
	view.Ends = view.Began.Add(cs.For)
	view.Judgement = reconcile.Judge(cs.Analysis, 0, reconcile.CohortFigures{}, reconcile.CohortFigures{}, false)
	r.report(view)
	for {
		next := r.now().Add(cs.Interval())
		if next.After(view.Ends) {
			next = view.Ends
		}
		if err := r.sleep(ctx, next.Sub(r.now())); err != nil {
			return fail(view.Judgement, err)
		}
		cur, err := r.read(ctx, s.Workload)
		if err != nil {
			return fail(view.Judgement, err)
		}
		now := r.now()
		if !splitIs(cur.Split, want) {
			// The counters since the window began are lost, or are not
			// this split's: nothing is judged on them. The split is set
			// again and the window starts anew from a fresh reading.
			loss := SplitLoss{At: now, Want: want, Saw: cur.Split, Lost: now.Sub(view.Began)}
			view.Losses = append(view.Losses, loss)
			if len(view.Losses) > maxSplitLosses {
				return fail(view.Judgement, fmt.Errorf("%w: lost %d times in one step, last %s", reconcile.ErrSplitLost, len(view.Losses), loss))
			}
			want.Since = time.Time{}
			if err := begin(); err != nil {
				return fail(view.Judgement, err)
			}
			view.Began = r.now()
			view.Ends = view.Began.Add(cs.For)
			view.Judgement = reconcile.Judge(cs.Analysis, 0, reconcile.CohortFigures{}, reconcile.CohortFigures{}, false)
			view.Judgement.SplitLosses = len(view.Losses)
			r.report(view)
			continue
		}
		ended := !now.Before(view.Ends)
		j := reconcile.Judge(cs.Analysis, now.Sub(view.Began), figures(cur.Stable.Sub(start.Stable)), figures(cur.Canary.Sub(start.Canary)), ended)
		j.SplitLosses = len(view.Losses)
		view.Judgement = j
		switch {
		case j.Verdict == reconcile.VerdictFail:
			// At once: the canary serves nothing from here on.
			if err := r.zero(s); err != nil {
				view.Ended, view.Err = true, err
				r.report(view)
				return j, err
			}
		case ended && cs.Last() && (j.Verdict == reconcile.VerdictPass ||
			(j.Verdict == reconcile.VerdictInsufficient && cs.Analysis.OnInsufficientTraffic == spec.InsufficientPass)):
			// Passed: the roll goes on with every container equal, once
			// the split is lifted; until then it does not.
			if err := r.clear(ctx, s.Workload); err != nil {
				return fail(j, err)
			}
		}
		view.Ended = ended || j.Verdict == reconcile.VerdictFail
		r.report(view)
		if view.Ended {
			return j, nil
		}
	}
}

// splitText renders a split read back: "none", or "spec 1a2b3c4d share 10% since 10:00:00.000".
func splitText(sp *proxy.Split) string {
	if sp == nil {
		return "none"
	}
	return fmt.Sprintf("spec %s share %s since %s", short(sp.Spec), reconcile.Percent(sp.Share), sp.Since.Format("15:04:05.000"))
}

func (l SplitLoss) String() string {
	return fmt.Sprintf("split %s found as %s after %s", splitText(&l.Want), splitText(l.Saw), l.Lost.Round(time.Millisecond))
}

// clear lifts the workload's split, tried again with a bounded backoff:
// it fails the step (ErrSplitNotCleared) once every try failed.
func (r *canaryRunner) clear(ctx context.Context, workload string) error {
	err := r.retry(ctx, clearBackoff, func(ctx context.Context) error {
		return proxy.ClearSplit(ctx, r.client, r.admin, r.prefix, workload)
	})
	if err != nil {
		return fmt.Errorf("%w: %w", reconcile.ErrSplitNotCleared, err)
	}
	return nil
}

// zero sends the canary's share to 0, past the end of the step's context:
// a step cut short by a signal, or one that could not measure, leaves the
// stable cohort with every request. An error (every try failed) wraps
// reconcile.ErrShareNotZeroed: the canary must then be stopped through
// the engine.
func (r *canaryRunner) zero(s reconcile.Step) error {
	err := r.retry(context.Background(), blipBackoff, func(ctx context.Context) error {
		return proxy.SetSplit(ctx, r.client, r.admin, r.prefix, s.Workload, s.Canary.Spec, 0)
	})
	if err != nil {
		return fmt.Errorf("%w: %w", reconcile.ErrShareNotZeroed, err)
	}
	return nil
}

// retry makes the admin API call f, each try bounded, and tries again
// after each wait of backoff while it fails; the last error if every try
// failed.
func (r *canaryRunner) retry(ctx context.Context, backoff []time.Duration, f func(context.Context) error) error {
	sleep := r.sleep
	if sleep == nil {
		sleep = reconcile.Sleep
	}
	for i := 0; ; i++ {
		err := r.call(ctx, f)
		if err == nil || i >= len(backoff) {
			return err
		}
		if serr := sleep(ctx, backoff[i]); serr != nil {
			return errors.Join(err, serr)
		}
	}
}

// call runs one admin API call, bounded.
func (r *canaryRunner) call(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, canaryTimeout)
	defer cancel()
	return f(ctx)
}

// errNoCohorts: Caddy answers, but no `dynamic rollcall` source of this
// workload is there to split its traffic.
var errNoCohorts = errors.New("no `dynamic rollcall` source of this workload in Caddy")

// read is the workload's cohorts now.
func (r *canaryRunner) read(ctx context.Context, workload string) (proxy.WorkloadCohorts, error) {
	var all []proxy.WorkloadCohorts
	err := r.retry(ctx, blipBackoff, func(ctx context.Context) (err error) {
		all, err = proxy.Cohorts(ctx, r.client, r.admin)
		return err
	})
	if err != nil {
		return proxy.WorkloadCohorts{}, err
	}
	for _, w := range all {
		if w.Prefix == r.prefix && w.Workload == workload {
			return w, nil
		}
	}
	return proxy.WorkloadCohorts{}, errNoCohorts
}

// figures are a cohort's counters over a window, as Judge reads them.
func figures(c proxy.Cohort) reconcile.CohortFigures {
	return reconcile.CohortFigures{Requests: c.Requests, Errors: c.Errors, P50: c.Latency.Quantile(0.5), P95: c.Latency.Quantile(0.95)}
}

// canaryState is the loop's part of the canaries: how far each workload's
// got (reconcile.Observed.Canary), and the view of each step under way or
// last ended. The progress is not kept on disk: a session that starts
// again mid-roll runs the canary again from its first step (reconcile's
// canary.go says why that is safe).
type canaryState struct {
	progress map[string]reconcile.CanaryProgress
	live     map[string]CanaryView
	c        chan CanaryView // readings, from the step's goroutine
}

func newCanaryState() canaryState {
	return canaryState{progress: map[string]reconcile.CanaryProgress{}, live: map[string]CanaryView{}, c: make(chan CanaryView, 8)}
}

// runFor is the RunOptions.Canary of a canary step, nil without a proxy
// (the step then fails: there is nothing to split the traffic). judged is
// told the step's last judgement, on the step's goroutine before it ends.
func (l *loop) canaryRunFor(judged func(reconcile.Judgement)) func(context.Context, reconcile.Step) (reconcile.Judgement, error) {
	admin := l.proxyAdmin()
	if admin == "" {
		return nil
	}
	c := l.canary.c
	r := &canaryRunner{admin: admin, prefix: l.prefix, client: proxy.Client(admin), now: l.wallNow, sleep: reconcile.Sleep,
		report: func(v CanaryView) {
			select {
			case c <- v:
			default: // the loop shows the latest it took; the step's end carries the last
			}
		}}
	return func(ctx context.Context, s reconcile.Step) (reconcile.Judgement, error) {
		j, err := r.run(ctx, s)
		if err == nil || j.Verdict == reconcile.VerdictFail {
			judged(j)
		}
		return j, err
	}
}

// canarySplitFor is the RunOptions.Split of a canary's start: the split
// (share 0 for the start's spec) set before the container is created, nil
// without a proxy (the start then fails: nothing would keep the canary
// from serving).
func (l *loop) canarySplitFor() func(context.Context, reconcile.Step) error {
	admin := l.proxyAdmin()
	if admin == "" {
		return nil
	}
	r := &canaryRunner{admin: admin, prefix: l.prefix, client: proxy.Client(admin)}
	return func(ctx context.Context, s reconcile.Step) error {
		return r.call(ctx, func(ctx context.Context) error {
			return proxy.SetSplit(ctx, r.client, r.admin, r.prefix, s.Workload, s.SplitFirst, 0)
		})
	}
}

// onCanary shows a reading of a canary step.
func (l *loop) onCanary(v CanaryView) {
	prev, had := l.canary.live[v.Workload]
	if n := len(v.Losses); n > 0 && (!had || prev.Step.Index != v.Step.Index || len(prev.Losses) < n) {
		lost := v
		l.fact(Fact{Kind: FactSplitLost, Step: l.canaryStepOf(v), Canary: &lost})
	}
	l.canary.live[v.Workload] = v
	l.fact(Fact{Kind: FactCanary, Step: l.canaryStepOf(v), Canary: &v})
}

// canaryStepOf is the step in flight a view is of, or a bare one.
func (l *loop) canaryStepOf(v CanaryView) reconcile.Step {
	for _, r := range l.running {
		if r.Step.Action == reconcile.ActCanary && r.Step.Workload == v.Workload {
			return r.Step
		}
	}
	st := v.Step
	return reconcile.Step{Action: reconcile.ActCanary, Workload: v.Workload, Container: v.Container, Canary: &st}
}

// canaryEnded takes a canary step's end: the step passed (the next one,
// or the roll, follows), held on too little traffic (it waits for the
// operator), or failed: then the canary's spec goes on hold and is rolled
// back, as an operator's rollback is (its stops are Diff's, drained). An
// error that is none of those (the proxy could not be read) fails the step
// like any other, and it is tried again.
func (l *loop) canaryEnded(s reconcile.Step, err error, judged *reconcile.Judgement) {
	cs := s.Canary
	if judged != nil {
		// The step's own last judgement: the readings on the way may have
		// been dropped, or lag the step's end.
		v := l.canary.live[s.Workload]
		v.Workload, v.Step, v.Container, v.Judgement, v.Ended, v.Err = s.Workload, *cs, s.Container, *judged, true, nil
		l.canary.live[s.Workload] = v
	}
	// The step's end fact says how it ended, in words (Fact.Text) and in
	// the agent's log: passed, held or failed; a share that could not be
	// set to 0 is a fact of its own, said before it (onStepDone).
	var ce *reconcile.CanaryError
	switch {
	case err == nil:
		l.canary.progress[s.Workload] = reconcile.CanaryProgress{Spec: cs.Spec, Passed: cs.Index + 1}
		v := l.canary.live[s.Workload]
		l.sendCanary(notify.KindCanaryStep, s, v.Judgement, "passed")
	case errors.As(err, &ce) && ce.Hold:
		j := ce.Judgement
		l.canary.progress[s.Workload] = reconcile.CanaryProgress{Spec: cs.Spec, Passed: cs.Index, Held: &j}
		l.sendCanary(notify.KindCanaryStep, s, j, "held")
	case errors.As(err, &ce):
		j := ce.Judgement
		delete(l.canary.progress, s.Workload)
		l.beginRollback(s.Workload, cs.Spec, holdWhy{state.HoldByCanaryAbort, j.String()})
		l.sendCanary(notify.KindAbort, s, j, "failed")
	}
}

// sendCanary posts a canary step's end, with its figures.
func (l *loop) sendCanary(kind notify.Kind, s reconcile.Step, j reconcile.Judgement, outcome string) {
	e := l.notifyEvent(kind, s.Workload, s.Slot)
	e.Container, e.Action, e.Spec, e.Reason = s.Container, string(s.Action), s.Canary.Spec, outcome
	e.Canary = journal.CanaryOf(s, j)
	l.send(e)
}

// zeroCanaries, as the session ends, sends the share of every canary it
// split to 0: a canary that holds (or whose step was cut short) must not
// go on taking traffic that nobody measures. A share that cannot be set to
// 0 (the proxy's admin API does not answer) stops the canary through the
// engine instead. The next session runs the canary again from its first
// step.
func (l *loop) zeroCanaries() {
	admin := l.proxyAdmin()
	if admin == "" {
		return
	}
	for w, v := range l.canary.live {
		if v.Ended && v.Err == nil && v.Judgement.Verdict == reconcile.VerdictPass && v.Step.Last() {
			continue // passed: the split is lifted already
		}
		r := &canaryRunner{admin: admin, prefix: l.prefix, client: proxy.Client(admin)}
		st := v.Step
		s := reconcile.Step{Action: reconcile.ActCanary, Workload: w, Slot: v.Slot, Container: v.Container, Canary: &st}
		err := r.zero(s)
		if err == nil {
			l.log(levelInfo, "canary share set to 0 as the session ends", "workload", w, "step", v.Step.Index+1)
			continue
		}
		if !l.mode.Acting() || !l.lockHeld() {
			l.log(levelError, "canary share could not be set to 0 as the session ends, and the session may not stop it (it does not hold the host lock)",
				"workload", w, "container", v.Container, "error", err.Error())
			continue
		}
		stop := reconcile.StopOf(s)
		ctx, cancel := context.WithTimeout(context.Background(), stop.Drain+stopBound(stop.Grace))
		serr := reconcile.RunWith(ctx, l.scoped(l.raw, l.prefix), stop, reconcile.RunOptions{})
		cancel()
		if serr != nil && !errors.Is(serr, reconcile.ErrPreStop) {
			l.log(levelError, "canary share could not be set to 0 as the session ends, and its stop through the engine failed",
				"workload", w, "container", v.Container, "error", err.Error(), "stop_error", serr.Error())
			continue
		}
		l.log(levelError, "canary share could not be set to 0 as the session ends: stopped through the engine",
			"workload", w, "container", v.Container, "error", err.Error())
	}
}

// stopBound bounds a stop through the engine with grace: its pre_stop, the
// grace, and slack for an engine that is slow to answer.
func stopBound(grace time.Duration) time.Duration {
	return 30*time.Second + max(grace, 10*time.Second) + 30*time.Second
}

// liftCanaryHold lets a held canary step run again (rollcall retry, t);
// it reports whether there was one.
func (l *loop) liftCanaryHold(workload string) bool {
	p, ok := l.canary.progress[workload]
	if !ok || p.Held == nil {
		return false
	}
	p.Held = nil
	l.canary.progress[workload] = p
	l.fact(Fact{Kind: FactDecided, Decision: &Decision{Kind: DecisionRetryCanary, By: l.opts.User, Workload: workload, Canary: p.Passed + 1}})
	return true
}

// canaryViews are the canary steps under way, or ended while the plan
// still holds the canary's gate, by workload.
func (l *loop) canaryViews() []CanaryView {
	if len(l.canary.live) == 0 {
		return nil // the common case, on every snapshot
	}
	gated := map[string]bool{}
	for _, wp := range l.plan.Workloads {
		for _, s := range wp.Steps {
			if s.Action == reconcile.ActCanary || s.Wait == reconcile.WaitCanary {
				gated[wp.Name] = true
			}
		}
	}
	var out []CanaryView
	for w, v := range l.canary.live {
		running := false
		for _, r := range l.running {
			running = running || (r.Step.Action == reconcile.ActCanary && r.Step.Workload == w)
		}
		if !running && !gated[w] && v.Ended && l.rollbacks[w] == "" {
			delete(l.canary.live, w) // passed and the roll went on, or failed and rolled back
			continue
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b CanaryView) int { return strings.Compare(a.Workload, b.Workload) })
	return out
}
