package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// A canary by traffic (DESIGN §12) is, to Diff, a gate in a workload's
// roll: while the desired spec's canary has steps left, one slot rolls
// only (its new container starts next to the old, or in place of it when
// stop-first), no old container drains, and once a new container is
// healthy the plan holds the next canary step (ActCanary). The session
// runs that step against the proxy and tells Diff how far the canary got
// (Observed.Canary). After the last step the roll goes on as in §5. A
// failed step puts the spec on hold and rolls it back (Observed.RollingBack),
// so the canary drains and goes like any container of a held spec.
//
// The proxy splits by spec: every running container of the new spec is in
// the canary cohort, every other one in the stable cohort. Normally that is
// the one canary; after a restart of rollcall mid-roll (the progress is not
// kept on disk) it may be more, and the canary runs again from its first
// step, on every new container at once: slower, never less safe.

// CanaryProgress is how far the canary of one workload's spec has got.
type CanaryProgress struct {
	Spec   string // the spec hash it is of; progress of another spec counts for nothing
	Passed int    // steps passed
	// Held is set once a step ended with too little traffic and the
	// analysis says to hold (on_insufficient_traffic: hold): no further
	// step runs until the operator retries or rolls back.
	Held *Judgement
}

// CanaryStep is an ActCanary step's own part: which step, and how it is judged.
type CanaryStep struct {
	Spec     string // the canary's spec hash: its cohort in the proxy
	Index    int    // 0-based
	Of       int    // the canary's steps in all
	Share    float64
	For      time.Duration
	Analysis spec.Analysis

	// The canary's container, as a stop of it needs it: a canary whose
	// share cannot be set to 0 (the proxy's admin API does not answer) is
	// stopped through the engine, drained as any stop (StopOf).
	ContainerID string
	PreStop     []string
	Drain       time.Duration
	Grace       time.Duration
}

// StopOf is the stop of canary step s's container through the engine:
// what is left when its share cannot be set to 0 (DESIGN §12). Its
// pre_stop and drain are those a stop of it by Diff would have. It is no
// plan's step and has no reason of its own: it runs inside the canary
// step, whose error says why.
func StopOf(s Step) Step {
	st := Step{Action: ActStop, Workload: s.Workload, Slot: s.Slot, Container: s.Container}
	if cs := s.Canary; cs != nil {
		st.ContainerID, st.PreStop, st.Drain, st.Grace = cs.ContainerID, cs.PreStop, cs.Drain, cs.Grace
	}
	return st
}

// Interval is how often the step compares the cohorts: the analysis's
// interval, at most the step's length.
func (c CanaryStep) Interval() time.Duration {
	if c.Analysis.Interval <= 0 || c.Analysis.Interval > c.For {
		return c.For
	}
	return c.Analysis.Interval
}

// Last reports whether the step is the canary's last.
func (c CanaryStep) Last() bool { return c.Index == c.Of-1 }

// CohortFigures are what the proxy counted for one cohort over a window.
type CohortFigures struct {
	Requests int64
	Errors   int64 // 5xx answers and failed upstream dials
	P50, P95 time.Duration
}

// ErrorRate is Errors over Requests, 0 with no requests.
func (f CohortFigures) ErrorRate() float64 {
	if f.Requests <= 0 {
		return 0
	}
	return float64(f.Errors) / float64(f.Requests)
}

// Check names one check of update.canary.analysis, as the file spells it.
type Check string

const (
	CheckErrorRate         Check = "max_error_rate"
	CheckErrorRateIncrease Check = "max_error_rate_increase"
	CheckP95Ratio          Check = "max_p95_ratio"
	CheckMinRequests       Check = "min_requests"
)

// Verdict is what a judgement says of a step.
type Verdict string

const (
	VerdictMeasuring    Verdict = "measuring"    // too few requests yet to judge; the step goes on
	VerdictPass         Verdict = "pass"         // within every check (at the step's end: the step passed)
	VerdictFail         Verdict = "fail"         // a check failed: Check, Measured, Limit say which
	VerdictInsufficient Verdict = "insufficient" // the step ended with fewer than min_requests
)

// Judgement is one comparison of the canary with the stable cohort over the
// same window.
type Judgement struct {
	Verdict  Verdict
	Check    Check   // the check that failed, or CheckMinRequests when too few requests
	Measured float64 // the failed check's figure: a rate (0..1), a ratio, or a count
	Limit    float64 // its threshold
	Window   time.Duration
	Stable   CohortFigures
	Canary   CohortFigures
	// SplitLosses is how often the step found its split lost at the proxy
	// and restarted its window (the figures are of the last window only).
	SplitLosses int
}

// Judge compares the canary with the stable cohort over one window, by the
// analysis a. ended says the step's time is up: a step that saw fewer than
// min_requests is then VerdictInsufficient, before that VerdictMeasuring.
// Nothing is judged on fewer requests than min_requests, in either cohort
// for a comparison (the stable cohort is the yardstick): a verdict on three
// requests is noise.
func Judge(a spec.Analysis, window time.Duration, stable, canary CohortFigures, ended bool) Judgement {
	j := Judgement{Verdict: VerdictPass, Window: window, Stable: stable, Canary: canary}
	short := func(n int64) Judgement {
		j.Verdict, j.Check, j.Measured, j.Limit = VerdictMeasuring, CheckMinRequests, float64(n), float64(a.MinRequests)
		if ended {
			j.Verdict = VerdictInsufficient
		}
		return j
	}
	fail := func(c Check, measured, limit float64) Judgement {
		j.Verdict, j.Check, j.Measured, j.Limit = VerdictFail, c, measured, limit
		return j
	}
	min := int64(a.MinRequests)
	if canary.Requests < min {
		return short(canary.Requests)
	}
	rate := canary.ErrorRate()
	if a.MaxErrorRate != spec.NotChecked && rate > a.MaxErrorRate {
		return fail(CheckErrorRate, rate, a.MaxErrorRate)
	}
	comparative := a.MaxErrorRateIncrease != spec.NotChecked || a.MaxP95Ratio != spec.NotChecked
	if comparative && stable.Requests < min {
		return short(stable.Requests)
	}
	if a.MaxErrorRateIncrease != spec.NotChecked {
		if rise := rate - stable.ErrorRate(); rise > a.MaxErrorRateIncrease {
			return fail(CheckErrorRateIncrease, rise, a.MaxErrorRateIncrease)
		}
	}
	if a.MaxP95Ratio != spec.NotChecked && canary.P95 > 0 {
		// A stable p95 under a millisecond is measured as one: a ratio
		// over nothing says nothing.
		base := max(stable.P95, time.Millisecond)
		if ratio := float64(canary.P95) / float64(base); ratio > a.MaxP95Ratio {
			return fail(CheckP95Ratio, ratio, a.MaxP95Ratio)
		}
	}
	return j
}

// String renders the judgement from its fields: its Finding, then both
// cohorts' figures: "error rate 10% > max_error_rate 1% (canary 200
// requests at 10%, p95 9ms; stable 1800 at 0%, p95 8ms; over 10s)".
func (j Judgement) String() string {
	return fmt.Sprintf("%s (canary %d requests at %s, p95 %s; stable %d at %s, p95 %s; over %s)", j.Finding(),
		j.Canary.Requests, Percent(j.Canary.ErrorRate()), Latency(j.Canary.P95),
		j.Stable.Requests, Percent(j.Stable.ErrorRate()), Latency(j.Stable.P95), j.Window.Round(time.Second))
}

// Finding is what the judgement found, without the cohorts' figures: the
// one sentence every view and the webhook say it in. Within the analysis;
// the check that failed, its figure beside its limit as the file names
// it ("error rate 10% > max_error_rate 1%", "p95 3.1× stable >
// max_p95_ratio 1.5×"); or too little traffic ("too little traffic: 40 of
// min_requests 100", "too little traffic yet: …" while the step
// runs).
func (j Judgement) Finding() string {
	switch j.Verdict {
	case VerdictFail:
		return j.checkText()
	case VerdictInsufficient:
		return "too little traffic: " + j.checkText()
	case VerdictMeasuring:
		return "too little traffic yet: " + j.checkText()
	}
	return "within the analysis"
}

// checkText is the judgement's check, its measured figure beside its limit.
func (j Judgement) checkText() string {
	switch j.Check {
	case CheckErrorRate:
		return fmt.Sprintf("error rate %s > %s %s", Percent(j.Measured), j.Check, Percent(j.Limit))
	case CheckErrorRateIncrease:
		return fmt.Sprintf("error rate %s above stable > %s %s", Percent(j.Measured), j.Check, Percent(j.Limit))
	case CheckP95Ratio:
		return fmt.Sprintf("p95 %s stable > %s %s", Ratio(j.Measured), j.Check, Ratio(j.Limit))
	case CheckMinRequests:
		return fmt.Sprintf("%.0f of %s %.0f", j.Measured, j.Check, j.Limit)
	}
	return fmt.Sprintf("%s %g, limit %g", j.Check, j.Measured, j.Limit)
}

// Percent renders a fraction as a percentage to two decimals at most,
// none needless: 0.1 → "10%", 0.008 → "0.8%", 0.125 → "12.5%", 1/24 →
// "4.17%". A canary's share, its thresholds, its error rates and its
// judgement are said with it, in every view and in the webhook.
func Percent(f float64) string { return trimFloat(100*f) + "%" }

// Ratio renders a ratio of latencies (a p95 over the stable one's, or
// max_p95_ratio) to two decimals at most: 3.1 → "3.1×", 1.5 → "1.5×".
func Ratio(f float64) string { return trimFloat(f) + "×" }

// Latency renders a cohort's latency to a precision that reads: "9ms",
// "2.4ms", "380µs"; "–" for none measured.
func Latency(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d >= 10*time.Millisecond:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// canaryGate is the canary's hold on one workload's roll, while its spec's
// canary has steps left; nil when there is none.
type canaryGate struct {
	cfg  *spec.Canary
	prog CanaryProgress
	// stepSlot is the slot whose healthy new container takes the next
	// step, startSlot the slot where the canary starts when no new
	// container is up or coming; -1 when none.
	stepSlot, startSlot int
}

// canaryGateOf returns the gate of w, or nil: no canary, every step
// passed, the spec on hold, or nothing stale to roll.
func canaryGateOf(w *spec.Resolved, o *Observed, slots []slot) *canaryGate {
	cfg := w.Update.Canary
	if cfg == nil || len(cfg.Steps) == 0 || o.Held(w.Name, w.Hash) || o.RollingBack[w.Name] != "" {
		return nil
	}
	prog := o.Canary[w.Name]
	if prog.Spec != w.Hash {
		prog = CanaryProgress{Spec: w.Hash}
	}
	if prog.Passed >= len(cfg.Steps) {
		return nil
	}
	stale := false
	for i := range slots {
		stale = stale || len(slots[i].stale) > 0
	}
	if !stale {
		return nil
	}
	g := &canaryGate{cfg: cfg, prog: prog, stepSlot: -1, startSlot: -1}
	coming := false // a new container is booting
	for i := range slots {
		s := &slots[i]
		switch {
		case s.primary() == nil:
		case s.cond == condHealthy:
			// One next to an old container first: it is the canary the
			// gate started; otherwise any new one (stop-first, a first
			// start) is of the canary cohort all the same.
			if g.stepSlot < 0 || (len(s.stale) > 0 && len(slots[g.stepSlot].stale) == 0) {
				g.stepSlot = i
			}
		case !s.failed:
			coming = true
		}
	}
	if g.stepSlot < 0 && !coming {
		for i := range slots {
			if slots[i].primary() == nil && len(slots[i].stale) > 0 {
				g.startSlot = i
				break
			}
		}
	}
	return g
}

// waitFor is the wait of a slot the canary keeps from rolling.
func (g *canaryGate) waitFor(w *spec.Resolved, slot int, c string) Step {
	return Step{Action: ActWait, Wait: WaitCanary, Workload: w.Name, Slot: slot, Container: c,
		Why: Reason{Kind: ReasonCanaryFirst, CanarySteps: len(g.cfg.Steps)}}
}

// next is the canary's next step: the one to run, or the one that holds.
func (g *canaryGate) next(w *spec.Resolved) *CanaryStep {
	k := g.prog.Passed
	return &CanaryStep{Spec: w.Hash, Index: k, Of: len(g.cfg.Steps), Share: g.cfg.Steps[k].Share, For: g.cfg.Steps[k].For, Analysis: g.cfg.Analysis}
}

// step is the ActCanary step the gate holds next, on container c of slot.
func (g *canaryGate) step(w *spec.Resolved, slot int, c *docker.Container) Step {
	cs := g.next(w)
	cs.ContainerID, cs.Grace = c.ID, w.StopGrace
	return Step{Action: ActCanary, Workload: w.Name, Slot: slot, Container: c.Name, Canary: cs,
		Why: Reason{Kind: ReasonCanaryStep, Canary: cs}}
}

// held is the wait of a canary step that ended with too little traffic.
func (g *canaryGate) held(w *spec.Resolved, slot int, c string) Step {
	return Step{Action: ActWait, Wait: WaitCanary, Workload: w.Name, Slot: slot, Container: c,
		Why: Reason{Kind: ReasonCanaryHeld, Canary: g.next(w), Judgement: g.prog.Held}}
}

// trimFloat is f to two decimals, without trailing zeros or point.
func trimFloat(f float64) string {
	s := fmt.Sprintf("%.2f", f)
	if s == "-0.00" {
		s = "0.00"
	}
	for s[len(s)-1] == '0' {
		s = s[:len(s)-1]
	}
	if s[len(s)-1] == '.' {
		s = s[:len(s)-1]
	}
	return s
}

// ErrNoCanaryRunner is a canary step run with no way to reach the proxy.
var ErrNoCanaryRunner = errors.New("no proxy to split the traffic (proxy.caddy_admin)")

// CanaryError is a canary step that did not pass. Hold says the step saw
// too little traffic and on_insufficient_traffic is hold: the canary stays
// as it is until the operator acts. Otherwise the canary failed and its
// spec is rolled back.
type CanaryError struct {
	Step      Step
	Judgement Judgement
	Hold      bool
}

func (e *CanaryError) Error() string {
	what := "failed"
	if e.Hold {
		what = "holds"
	}
	return fmt.Sprintf("canary %s step %d/%d %s: %s", e.Step.Target(), e.Step.Canary.Index+1, e.Step.Canary.Of, what, e.Judgement)
}

// SplitFirstError is the start of a canary's container that did not
// happen: its split (share 0) could not be set in the proxy first, so
// nothing was created.
type SplitFirstError struct {
	Step Step
	Err  error
}

func (e *SplitFirstError) Error() string {
	return fmt.Sprintf("start %s: the canary's split (share 0 for spec %s) could not be set in the proxy, nothing created: %v",
		e.Step.Target(), short(e.Step.SplitFirst), e.Err)
}

func (e *SplitFirstError) Unwrap() error { return e.Err }

// ErrShareNotZeroed is a canary whose share could not be set to 0 (the
// proxy's admin API does not answer): it may still take its share.
var ErrShareNotZeroed = errors.New("the canary's share could not be set to 0")

// ErrSplitNotCleared is a canary's last step that passed but whose split
// could not be lifted: until it is, the other containers would go on
// taking only 1 − share, so the roll does not go on.
var ErrSplitNotCleared = errors.New("the canary passed but its split could not be lifted")

// ErrSplitLost is a canary step whose split kept going missing at the
// proxy (a Caddy restarted again and again): it cannot be measured.
var ErrSplitLost = errors.New("the canary's split keeps going missing at the proxy")

// ProxyFault is what went wrong at the proxy in a canary's step, as data:
// "" for nothing (or a fault that is none of these).
type ProxyFault string

const (
	FaultSplitFirst      ProxyFault = "split-first"       // a canary's start: its share-0 split could not be set; nothing created
	FaultShareNotZeroed  ProxyFault = "share-not-zeroed"  // the canary's share could not be set to 0; it was stopped through the engine
	FaultSplitNotCleared ProxyFault = "split-not-cleared" // the canary passed but its split could not be lifted; the roll waits
	FaultSplitLost       ProxyFault = "split-lost"        // the split kept going missing at the proxy
)

// ProxyFaultOf reads the proxy fault a step's error carries.
func ProxyFaultOf(err error) ProxyFault {
	var sf *SplitFirstError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &sf):
		return FaultSplitFirst
	case errors.Is(err, ErrShareNotZeroed):
		return FaultShareNotZeroed
	case errors.Is(err, ErrSplitNotCleared):
		return FaultSplitNotCleared
	case errors.Is(err, ErrSplitLost):
		return FaultSplitLost
	}
	return ""
}

// UnsplitError is a canary step whose share could not be set to 0: its
// container was stopped through the engine instead (Stopped), or even
// that failed (StopErr).
type UnsplitError struct {
	Step    Step
	Err     error // why the step ended, wrapping ErrShareNotZeroed
	Stopped bool
	StopErr error
	// Failed is the step's failed judgement, when a check failed before
	// the share could not be set to 0: the canary is rolled back all the
	// same (errors.As finds it).
	Failed *CanaryError
}

func (e *UnsplitError) Error() string {
	if e.Stopped {
		return fmt.Sprintf("canary %s: %v; %s stopped through the engine", e.Step.Target(), e.Err, e.Step.Container)
	}
	return fmt.Sprintf("canary %s: %v; and stopping %s through the engine failed: %v", e.Step.Target(), e.Err, e.Step.Container, e.StopErr)
}

func (e *UnsplitError) Unwrap() []error {
	out := []error{e.Err}
	if e.StopErr != nil {
		out = append(out, e.StopErr)
	}
	if e.Failed != nil {
		out = append(out, e.Failed)
	}
	return out
}

// runCanary runs an ActCanary step by opts.Canary and reads its judgement
// by the analysis: a pass, a failure, or too little traffic, which does
// what on_insufficient_traffic says. A canary whose share could not be set
// to 0 is stopped through the engine c (StopOf), whatever its judgement.
func runCanary(ctx context.Context, c docker.Client, s Step, opts RunOptions) error {
	if s.Canary == nil {
		return fmt.Errorf("canary %s: step has no canary", s.Target())
	}
	if opts.Canary == nil {
		return fmt.Errorf("canary %s: %w", s.Target(), ErrNoCanaryRunner)
	}
	j, err := opts.Canary(ctx, s)
	if errors.Is(err, ErrShareNotZeroed) {
		ue := stopUnsplit(ctx, c, s, opts, err)
		if j.Verdict == VerdictFail {
			ue.Failed = &CanaryError{Step: s, Judgement: j}
		}
		return ue
	}
	if err != nil {
		return fmt.Errorf("canary %s step %d/%d: %w", s.Target(), s.Canary.Index+1, s.Canary.Of, err)
	}
	switch j.Verdict {
	case VerdictPass:
		return nil
	case VerdictInsufficient, VerdictMeasuring:
		switch s.Canary.Analysis.OnInsufficientTraffic {
		case spec.InsufficientPass:
			return nil
		case spec.InsufficientFail:
			return &CanaryError{Step: s, Judgement: j}
		default:
			return &CanaryError{Step: s, Judgement: j, Hold: true}
		}
	}
	return &CanaryError{Step: s, Judgement: j}
}

// stopUnsplit stops the canary of s through the engine: its share could
// not be set to 0 (why). The stop is the step's own, past the end of ctx
// (a step cut short by a signal must not leave the canary serving),
// bounded by its drain and grace.
func stopUnsplit(ctx context.Context, c docker.Client, s Step, opts RunOptions, why error) *UnsplitError {
	st := StopOf(s)
	bound := st.Drain + preStopTimeout + stopWait(st.Grace) + carrySlack
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bound)
	defer cancel()
	ue := &UnsplitError{Step: s, Err: why}
	if st.ContainerID == "" {
		ue.StopErr = errors.New("the step does not name the canary's container ID")
		return ue
	}
	opts.Canary, opts.Split = nil, nil
	err := RunWith(sctx, c, st, opts)
	if err != nil && !errors.Is(err, ErrPreStop) {
		ue.StopErr = err
		return ue
	}
	ue.Stopped = true
	return ue
}
