package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/spec"
)

// withCanary gives w a two-step canary, judged on error rate and p95.
func withCanary(w *spec.Workload) {
	w.Update.Canary = &spec.Canary{
		Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}, {Share: 0.25, For: 2 * time.Minute}},
		Analysis: spec.Analysis{Interval: 10 * time.Second, MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked,
			MaxP95Ratio: 1.5, MinRequests: 100, OnInsufficientTraffic: spec.InsufficientHold},
	}
}

func stopFirst(w *spec.Workload) { w.Update.Order = spec.OrderStopFirst }

// A canary keeps every old container serving: one new container starts, the
// other slots wait for the canary, and nothing drains.
func TestCanaryStartsOneNewContainerAndDrainsNothing(t *testing.T) {
	d := resolved(workload("web", 3, withCanary))
	o := observed(stale(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2))
	p := Diff(d, o)
	equalStrings(t, briefs(p), []string{
		"start web/0 " + ContainerName(pfx, "web", 0, d.Workload("web").Hash),
		"wait web/1 " + stale(d, "web", 1).Name,
		"wait web/2 " + stale(d, "web", 2).Name,
	})
	for _, s := range p.Workloads[0].Steps[1:] {
		if s.Wait != WaitCanary {
			t.Errorf("%s: wait %q, want %q", brief(s), s.Wait, WaitCanary)
		}
	}
}

// Once the canary is healthy, the plan holds its next step, and still no
// roll; each step is its own approval (Key).
func TestCanaryStepFollowsAHealthyCanary(t *testing.T) {
	d := resolved(workload("web", 3, withCanary))
	w := d.Workload("web")
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2))
	p := Diff(d, o)
	equalStrings(t, actions(p), []string{"canary web/0", "wait web/1", "wait web/2"})
	st := p.Workloads[0].Steps[0]
	if st.Canary == nil || st.Canary.Index != 0 || st.Canary.Of != 2 || st.Canary.Share != 0.05 || st.Canary.Spec != w.Hash || st.Slot != 0 {
		t.Fatalf("canary step = %+v, want step 1 of 2 at 5%% of spec %s on web/0", st.Canary, w.Hash)
	}
	o.Canary = map[string]CanaryProgress{"web": {Spec: w.Hash, Passed: 1}}
	p2 := Diff(d, o)
	st2 := p2.Workloads[0].Steps[0]
	if st2.Action != ActCanary || st2.Canary.Index != 1 || st2.Canary.Share != 0.25 {
		t.Fatalf("after one step: %s %+v, want canary step 2", brief(st2), st2.Canary)
	}
	if st.Key() == st2.Key() {
		t.Errorf("steps 1 and 2 share the key %q: approving one would approve the other", st.Key())
	}
}

// After the last step the roll goes on as without a canary; progress of
// another spec counts for nothing.
func TestCanaryPassedRollsOn(t *testing.T) {
	d := resolved(workload("web", 3, withCanary))
	w := d.Workload("web")
	cs := []docker.Container{stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2)}
	o := observed(cs...)
	o.Canary = map[string]CanaryProgress{"web": {Spec: w.Hash, Passed: 2}}
	equalStrings(t, actions(Diff(d, o)), []string{"roll web/0", "start web/1", "wait web/2"}) // parallelism 1 queues slot 2
	o.Canary = map[string]CanaryProgress{"web": {Spec: "another", Passed: 2}}
	equalStrings(t, actions(Diff(d, o)), []string{"canary web/0", "wait web/1", "wait web/2"})
}

// A step that held on too little traffic waits, saying so, and runs no step.
func TestCanaryHeldWaits(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	w := d.Workload("web")
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))
	j := Judge(w.Update.Canary.Analysis, time.Minute, CohortFigures{Requests: 900}, CohortFigures{Requests: 3}, true)
	o.Canary = map[string]CanaryProgress{"web": {Spec: w.Hash, Held: &j}}
	p := Diff(d, o)
	steps := p.Workloads[0].Steps
	if len(steps) != 2 || steps[0].Slot != 0 || steps[0].Why.Kind != ReasonCanaryHeld {
		t.Fatalf("held canary: plan %q, want the held wait on web/0 and the canary-first wait on web/1", briefs(p))
	}
	for _, s := range steps {
		if s.Executable() {
			t.Errorf("held canary: executable step %s", brief(s))
		}
		if s.Wait != WaitCanary {
			t.Errorf("%s: wait %q, want canary", brief(s), s.Wait)
		}
	}
}

// Stop-first (a fixed host port): the canary takes its slot's place, and
// once it is healthy the step runs there, with the other slots waiting.
func TestCanaryStopFirst(t *testing.T) {
	d := resolved(workload("web", 2, withCanary, stopFirst))
	o := observed(stale(d, "web", 0), stale(d, "web", 1))
	equalStrings(t, actions(Diff(d, o)), []string{"roll web/0", "wait web/1"})
	o = observed(fresh(d, "web", 0), stale(d, "web", 1))
	equalStrings(t, actions(Diff(d, o)), []string{"canary web/0", "wait web/1"})
}

// No canary without something to roll, or for a spec on hold.
func TestCanaryOnlyGatesARoll(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	w := d.Workload("web")
	equalStrings(t, actions(Diff(d, observed())), []string{"start web/0", "start web/1"})
	equalStrings(t, actions(Diff(d, observed(fresh(d, "web", 0), fresh(d, "web", 1)))), nil)
	o := observed(stale(d, "web", 0), stale(d, "web", 1))
	o.Holds = map[string]map[string]bool{"web": {w.Hash: true}}
	for _, s := range Diff(d, o).Workloads[0].Steps {
		if s.Action == ActCanary || s.Action == ActStart {
			t.Errorf("spec on hold: %s", brief(s))
		}
	}
}

// The then rows run the canary through: its next step, then the roll.
func TestCanaryThenRows(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))
	p := diffThen(d, o)
	var then []string
	for _, s := range p.Workloads[0].Then {
		then = append(then, string(s.Action))
	}
	if len(then) < 3 || then[0] != "canary" || then[1] != "roll" {
		t.Fatalf("then = %q, want the second canary step, then the roll of web/0, then slot 1", then)
	}
}

func TestJudge(t *testing.T) {
	a := spec.Analysis{MaxErrorRate: 0.01, MaxErrorRateIncrease: 0.005, MaxP95Ratio: 1.5, MinRequests: 100}
	ok := CohortFigures{Requests: 1000, Errors: 1, P50: 5 * time.Millisecond, P95: 20 * time.Millisecond}
	cases := []struct {
		name           string
		a              spec.Analysis
		stable, canary CohortFigures
		ended          bool
		verdict        Verdict
		check          Check
	}{
		{"within", a, ok, CohortFigures{Requests: 100, P95: 25 * time.Millisecond}, false, VerdictPass, ""},
		{"too few yet", a, ok, CohortFigures{Requests: 99, Errors: 99}, false, VerdictMeasuring, CheckMinRequests},
		{"too few at the end", a, ok, CohortFigures{Requests: 99}, true, VerdictInsufficient, CheckMinRequests},
		{"error rate", a, ok, CohortFigures{Requests: 100, Errors: 10}, false, VerdictFail, CheckErrorRate},
		{"error rate rise over stable", spec.Analysis{MaxErrorRate: spec.NotChecked, MaxErrorRateIncrease: 0.005, MaxP95Ratio: spec.NotChecked, MinRequests: 100},
			CohortFigures{Requests: 1000, Errors: 100}, CohortFigures{Requests: 100, Errors: 11}, false, VerdictFail, CheckErrorRateIncrease},
		{"a slow site is no canary failure", a, CohortFigures{Requests: 1000, P95: time.Second}, CohortFigures{Requests: 100, P95: 1200 * time.Millisecond}, false, VerdictPass, ""},
		{"p95", a, ok, CohortFigures{Requests: 100, P95: 61 * time.Millisecond}, false, VerdictFail, CheckP95Ratio},
		{"stable too quiet to compare", a, CohortFigures{Requests: 10}, CohortFigures{Requests: 100}, true, VerdictInsufficient, CheckMinRequests},
		{"error rate alone needs no stable traffic", spec.Analysis{MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked, MaxP95Ratio: spec.NotChecked, MinRequests: 10},
			CohortFigures{}, CohortFigures{Requests: 10}, true, VerdictPass, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := Judge(c.a, time.Minute, c.stable, c.canary, c.ended)
			if j.Verdict != c.verdict || j.Check != c.check {
				t.Errorf("Judge = %s/%s (%s), want %s/%s", j.Verdict, j.Check, j, c.verdict, c.check)
			}
		})
	}
}

// The judgement names the figure that failed, with the threshold beside it.
func TestJudgementSaysWhichFigureFailed(t *testing.T) {
	a := spec.Analysis{MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked, MaxP95Ratio: spec.NotChecked, MinRequests: 10}
	j := Judge(a, 10*time.Second, CohortFigures{Requests: 900}, CohortFigures{Requests: 100, Errors: 10}, false)
	want := "error rate 10% > max_error_rate 1% (canary 100 requests at 10%, p95 –; stable 900 at 0%, p95 –; over 10s)"
	if got := j.String(); got != want {
		t.Errorf("String() = %q\nwant       %q", got, want)
	}
}

// TestCanaryFigures: the one formatter of a canary's figures, which every
// view and the webhook use (issue 29).
func TestCanaryFigures(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Percent(0.1), "10%"}, {Percent(0.008), "0.8%"}, {Percent(0.125), "12.5%"}, {Percent(1.0 / 24), "4.17%"},
		{Percent(0), "0%"}, {Percent(-0.00001), "0%"}, {Percent(1), "100%"},
		{Ratio(3.1), "3.1×"}, {Ratio(1.5), "1.5×"}, {Ratio(2.345678), "2.35×"}, {Ratio(2), "2×"},
		{Latency(0), "–"}, {Latency(9250 * time.Microsecond), "9.3ms"}, {Latency(25 * time.Millisecond), "25ms"},
		{Latency(380 * time.Microsecond), "380µs"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// TestCanaryFinding: a judgement's finding, from its fields, for each
// verdict and check.
func TestCanaryFinding(t *testing.T) {
	for _, c := range []struct {
		j    Judgement
		want string
	}{
		{Judgement{Verdict: VerdictPass}, "within the analysis"},
		{Judgement{Verdict: VerdictFail, Check: CheckErrorRate, Measured: 0.1, Limit: 0.01}, "error rate 10% > max_error_rate 1%"},
		{Judgement{Verdict: VerdictFail, Check: CheckErrorRateIncrease, Measured: 1.0 / 24, Limit: 0.02}, "error rate 4.17% above stable > max_error_rate_increase 2%"},
		{Judgement{Verdict: VerdictFail, Check: CheckP95Ratio, Measured: 3.1, Limit: 1.5}, "p95 3.1× stable > max_p95_ratio 1.5×"},
		{Judgement{Verdict: VerdictInsufficient, Check: CheckMinRequests, Measured: 40, Limit: 100}, "too little traffic: 40 of min_requests 100"},
		{Judgement{Verdict: VerdictMeasuring, Check: CheckMinRequests, Measured: 3, Limit: 100}, "too little traffic yet: 3 of min_requests 100"},
	} {
		if got := c.j.Finding(); got != c.want {
			t.Errorf("Finding() = %q, want %q", got, c.want)
		}
	}
}

// A canary step's judgement decides its outcome, with too little traffic
// as on_insufficient_traffic says.
func TestRunCanaryOutcome(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))
	st := Diff(d, o).Workloads[0].Steps[0]
	if st.Action != ActCanary {
		t.Fatalf("first step %s, want canary", brief(st))
	}
	judged := func(v Verdict) RunOptions {
		return RunOptions{Canary: func(context.Context, Step) (Judgement, error) { return Judgement{Verdict: v}, nil }}
	}
	if err := RunWith(context.Background(), nil, st, judged(VerdictPass)); err != nil {
		t.Errorf("pass: %v", err)
	}
	var ce *CanaryError
	if err := RunWith(context.Background(), nil, st, judged(VerdictFail)); !errors.As(err, &ce) || ce.Hold {
		t.Errorf("fail: %v, want a CanaryError without hold", err)
	}
	for on, want := range map[string]string{spec.InsufficientHold: "hold", spec.InsufficientFail: "fail", spec.InsufficientPass: "pass"} {
		st.Canary.Analysis.OnInsufficientTraffic = on
		err := RunWith(context.Background(), nil, st, judged(VerdictInsufficient))
		got := "pass"
		if errors.As(err, &ce) {
			got = map[bool]string{true: "hold", false: "fail"}[ce.Hold]
		}
		if got != want {
			t.Errorf("insufficient with %s: %s (%v), want %s", on, got, err, want)
		}
	}
	if err := RunWith(context.Background(), nil, st, RunOptions{}); !errors.Is(err, ErrNoCanaryRunner) {
		t.Errorf("no runner: %v, want ErrNoCanaryRunner", err)
	}
}

// Judging on p95 alone still needs min_requests in the stable cohort, the
// yardstick; and a stable p95 under a millisecond counts as one, so a
// ratio over nothing fails nothing (issue 26 row 18).
func TestJudgeP95Alone(t *testing.T) {
	p95 := spec.Analysis{MaxErrorRate: spec.NotChecked, MaxErrorRateIncrease: spec.NotChecked, MaxP95Ratio: 1.5, MinRequests: 100}
	j := Judge(p95, time.Minute, CohortFigures{Requests: 10, P95: time.Millisecond}, CohortFigures{Requests: 100, P95: 100 * time.Millisecond}, false)
	if j.Verdict != VerdictMeasuring || j.Check != CheckMinRequests || j.Measured != 10 {
		t.Errorf("p95 alone, stable 10 requests: %s/%s measured %v (%s), want measuring on the stable cohort's 10 of min_requests", j.Verdict, j.Check, j.Measured, j)
	}
	j = Judge(p95, time.Minute, CohortFigures{Requests: 1000, P95: 100 * time.Microsecond}, CohortFigures{Requests: 100, P95: time.Millisecond}, true)
	if j.Verdict != VerdictPass {
		t.Errorf("stable p95 100µs, canary 1ms: %s (%s), want pass: the stable p95 counts as 1ms", j.Verdict, j)
	}
	j = Judge(p95, time.Minute, CohortFigures{Requests: 1000, P95: 100 * time.Microsecond}, CohortFigures{Requests: 100, P95: 2 * time.Millisecond}, true)
	if j.Verdict != VerdictFail || j.Check != CheckP95Ratio || j.Measured != 2 {
		t.Errorf("stable p95 100µs, canary 2ms: %s/%s measured %v, want a fail at 2× the 1ms floor", j.Verdict, j.Check, j.Measured)
	}
}

// A canary rolled back (its spec on its way to hold) has no gate any more:
// no canary step, no canary wait; the rollback's stops are the plan.
func TestCanaryGateLiftsDuringARollback(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	w := d.Workload("web")
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1))
	o.RollingBack = map[string]string{"web": w.Hash}
	p := Diff(d, o)
	stops := 0
	for _, s := range p.Workloads[0].Steps {
		if s.Action == ActCanary || s.Wait == WaitCanary || s.SplitFirst != "" {
			t.Errorf("rolling back: %s (wait %q), want no canary gate", brief(s), s.Wait)
		}
		if s.Action == ActStop && s.ContainerID == fresh(d, "web", 0).ID {
			stops++
		}
	}
	if stops != 1 {
		t.Errorf("rolling back: %d stops of the canary, want 1: %v", stops, briefs(p))
	}
	// Stop-first: the canary took its slot's place, so the rollback has no
	// stop of it to plan (no older container serves that slot); the gate
	// must not hold a canary step of the spec being rolled back either.
	sf := resolved(workload("web", 2, withCanary, stopFirst))
	o = observed(fresh(sf, "web", 0), stale(sf, "web", 1))
	o.RollingBack = map[string]string{"web": sf.Workload("web").Hash}
	for _, s := range Diff(sf, o).Workloads[0].Steps {
		if s.Action == ActCanary || s.Wait == WaitCanary || s.SplitFirst != "" {
			t.Errorf("stop-first, rolling back: %s (wait %q), want no canary gate", brief(s), s.Wait)
		}
	}
}

// Every start of a canary's spec while its gate holds carries the split to
// set first (share 0 for that spec), beside the old containers and in
// stop-first alike; a start with no canary, or after it passed, none. The
// canary step carries what a stop of its container needs.
func TestCanaryStartCarriesItsSplit(t *testing.T) {
	d := resolved(workload("web", 3, withCanary))
	w := d.Workload("web")
	st := Diff(d, observed(stale(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2))).Workloads[0].Steps[0]
	if st.Action != ActStart || st.SplitFirst != w.Hash {
		t.Fatalf("canary start %s split %q, want a start carrying spec %s", brief(st), st.SplitFirst, w.Hash)
	}
	sf := resolved(workload("web", 2, withCanary, stopFirst))
	sw := sf.Workload("web")
	starts := 0
	for _, s := range Diff(sf, observed(stale(sf, "web", 1))).Workloads[0].Steps {
		if s.Action == ActStart {
			starts++
			if s.SplitFirst != sw.Hash {
				t.Errorf("stop-first canary start %s split %q, want spec %s", brief(s), s.SplitFirst, sw.Hash)
			}
		}
	}
	if starts != 1 {
		t.Errorf("stop-first, slot 0 stopped: %d starts, want the canary's", starts)
	}
	for _, s := range Diff(d, observed()).Workloads[0].Steps {
		if s.SplitFirst != "" {
			t.Errorf("first start %s carries a split: nothing to canary against", brief(s))
		}
	}
	o := observed(stale(d, "web", 0), fresh(d, "web", 0), stale(d, "web", 1), stale(d, "web", 2))
	o.Canary = map[string]CanaryProgress{"web": {Spec: w.Hash, Passed: 2}}
	for _, s := range Diff(d, o).Workloads[0].Steps {
		if s.SplitFirst != "" {
			t.Errorf("after the canary passed, %s carries a split", brief(s))
		}
	}
	o.Canary = nil
	cs := Diff(d, o).Workloads[0].Steps[0]
	if cs.Action != ActCanary || cs.Canary.ContainerID != fresh(d, "web", 0).ID || cs.Canary.Grace != w.StopGrace {
		t.Fatalf("canary step %s %+v, want the canary's container ID and grace", brief(cs), cs.Canary)
	}
	if stop := StopOf(cs); stop.Action != ActStop || stop.ContainerID != cs.Canary.ContainerID || stop.Grace != cs.Canary.Grace {
		t.Errorf("StopOf = %s %+v, want a stop of the canary's container", brief(stop), stop.Why)
	}
}

// A canary's start sets its split before the create: the split is asked
// for while no container exists, and a split that cannot be set creates
// nothing and fails the start as a SplitFirstError (issue 26 rows 1, 20).
func TestCanaryStartSetsTheSplitBeforeTheCreate(t *testing.T) {
	d := resolved(workload("web", 2, withCanary))
	st := Diff(d, observed(stale(d, "web", 0), stale(d, "web", 1))).Workloads[0].Steps[0]
	if st.Action != ActStart || st.SplitFirst == "" {
		t.Fatalf("first step %s, want the canary's start with its split", brief(st))
	}
	f := fake.New(fake.Options{Clock: fake.NewManualClock(t0), Seed: 7})
	f.AddImage(st.Create.Image, "sha256:web2", fake.Behaviour{})
	containers := func() int {
		cs, err := f.List(context.Background(), pfx)
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	down := errors.New("admin API unreachable")
	err := RunWith(context.Background(), f, st, RunOptions{Split: func(context.Context, Step) error { return down }})
	var sf *SplitFirstError
	if !errors.As(err, &sf) || !errors.Is(err, down) || ProxyFaultOf(err) != FaultSplitFirst {
		t.Errorf("split failed: %v, want a SplitFirstError wrapping the proxy's error", err)
	}
	if n := containers(); n != 0 {
		t.Fatalf("split failed: %d containers created, want none", n)
	}
	if err := RunWith(context.Background(), f, st, RunOptions{}); !errors.Is(err, ErrNoCanaryRunner) || containers() != 0 {
		t.Errorf("no proxy: %v, %d containers; want ErrNoCanaryRunner and nothing created", err, containers())
	}
	var split []string
	err = RunWith(context.Background(), f, st, RunOptions{Split: func(_ context.Context, s Step) error {
		split = append(split, fmt.Sprintf("%s with %d containers", s.SplitFirst, containers()))
		return nil
	}})
	if err != nil || containers() != 1 {
		t.Fatalf("split set: %v, %d containers; want the canary created", err, containers())
	}
	if want := []string{st.SplitFirst + " with 0 containers"}; !slices.Equal(split, want) {
		t.Errorf("split asked %q, want %q: before the create", split, want)
	}
}

// A canary whose share cannot be set to 0 is stopped through the engine,
// with its pre_stop; a failed check is still a failed canary (errors.As
// finds the CanaryError) so that it is rolled back (issue 26 row 10).
func TestCanaryUnsplitIsStoppedThroughTheEngine(t *testing.T) {
	f, _, roll, opts := drainRig(t, fake.Behaviour{ExecDrains: true})
	st := Step{Action: ActCanary, Workload: "web", Slot: 0, Container: roll.Container, Canary: &CanaryStep{Spec: "abc", Of: 1, Share: 0.1, For: time.Minute,
		ContainerID: roll.ContainerID, PreStop: roll.PreStop, Drain: roll.Drain, Grace: roll.Grace}}
	cut := fmt.Errorf("%w: PUT: connection refused", ErrShareNotZeroed)
	opts.Canary = func(context.Context, Step) (Judgement, error) {
		return Judgement{Verdict: VerdictFail, Check: CheckErrorRate}, cut
	}
	err := RunWith(context.Background(), f, st, opts)
	var ue *UnsplitError
	var ce *CanaryError
	if !errors.As(err, &ue) || !ue.Stopped || !errors.As(err, &ce) || ce.Hold || ProxyFaultOf(err) != FaultShareNotZeroed {
		t.Fatalf("share not zeroed: %v, want an UnsplitError, stopped, carrying the failed judgement", err)
	}
	if _, err := f.Inspect(context.Background(), roll.ContainerID); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("the canary is still there (%v): a share that cannot be set to 0 stops it through the engine", err)
	}
	if execs := f.Execs(); len(execs) != 1 {
		t.Errorf("execs %q, want the canary's pre_stop once", execs)
	}
	// Cut short by a signal: the stop goes on past the step's context.
	f2, _, roll2, opts2 := drainRig(t, fake.Behaviour{ExecDrains: true})
	st.Canary.ContainerID, st.ContainerID = roll2.ContainerID, ""
	opts2.Canary = func(context.Context, Step) (Judgement, error) { return Judgement{}, errors.Join(context.Canceled, cut) }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := RunWith(ctx, f2, st, opts2); !errors.As(err, &ue) || !ue.Stopped || errors.As(err, &ce) {
		t.Fatalf("cut short, share not zeroed: %v, want the canary stopped and no judgement", err)
	}
	if _, err := f2.Inspect(context.Background(), roll2.ContainerID); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("cut short: the canary is still there (%v)", err)
	}
}
