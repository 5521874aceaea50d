package tui

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// Issue 21, DESIGN §12: the console shows each cohort's figures live, the
// canary step's countdown, and what the canary is compared with.

// canaryAnalysis is web's update.canary.analysis: at most 1% errors and a
// p95 at most 1.5× the stable cohort's, over at least 100 requests.
func canaryAnalysis() spec.Analysis {
	return spec.Analysis{Interval: 10 * time.Second, MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked,
		MaxP95Ratio: 1.5, MinRequests: 100, OnInsufficientTraffic: spec.InsufficientHold}
}

// canaryDesired is web v2 with a canary: 5% for 1m, then 25% for 2m.
func canaryDesired(a spec.Analysis) *spec.ResolvedDesired {
	w := &spec.Workload{Name: "web", Image: "web:v2", Version: "2", Replicas: 3, Restart: "unless-stopped",
		Resources: spec.Resources{NanoCPUs: limits().NanoCPUs, Memory: limits().Memory},
		Update: spec.UpdatePolicy{Parallelism: 1, MinReady: 5 * time.Second, HealthDeadline: time.Minute,
			Canary: &spec.Canary{Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}, {Share: 0.25, For: 2 * time.Minute}}, Analysis: a}}}
	return &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{{Workload: w, ImageID: "sha256:2222", Hash: hashV2}}}
}

// canaryRoll: web rolls v1 → v2 with a canary. web/0's new container, the
// canary, is healthy beside its old one; the plan is Diff's for o (its
// Now and Containers filled in): the canary's first step on web/0, slots
// 1 and 2 waiting for it, unless o says otherwise.
func canaryRoll(a spec.Analysis, o reconcile.Observed) session.Snapshot {
	s := base(70)
	s.Resolved = canaryDesired(a)
	cs := []docker.Container{ctr("web", 0, "web:v2", "sha256:2222", hashV2, "2", 40*time.Second)}
	cs[0].HealthySinceStart = true
	for i := range 3 {
		old := ctr("web", i, "web:v1", "sha256:1111", hashV1, "1", 2*time.Hour)
		old.ID = fmt.Sprintf("%x01d", i+1) + old.ID[4:]
		cs = append(cs, old)
	}
	o.Now, o.Containers = t0, cs
	s.Containers = cs
	s.Plan = reconcile.Diff(s.Resolved, &o)
	s.Slots, s.Progress = session.SlotViews(s.Resolved, &s.Plan, cs)
	return s
}

// canaryStepOf is the ActCanary step of s's plan.
func canaryStepOf(t *testing.T, s session.Snapshot) reconcile.Step {
	t.Helper()
	for _, st := range s.Plan.Executable() {
		if st.Action == reconcile.ActCanary {
			return st
		}
	}
	t.Fatalf("fixture: no canary step in the plan:\n%s", s.Plan)
	return reconcile.Step{}
}

// The cohorts as the proxy counted them 18s into the first step.
var (
	stable18s = reconcile.CohortFigures{Requests: 2280, Errors: 3, P50: 4 * time.Millisecond, P95: 9 * time.Millisecond}
	canary18s = reconcile.CohortFigures{Requests: 121, Errors: 1, P50: 5 * time.Millisecond, P95: 11 * time.Millisecond}
)

// canaryRunning: the canary's first step running, 18s in and 42s to go.
func canaryRunning(t *testing.T) session.Snapshot {
	s := canaryRoll(canaryAnalysis(), reconcile.Observed{})
	st := canaryStepOf(t, s)
	began := t0.Add(-18 * time.Second)
	s.Steps[st.Key()] = session.StepStatus{State: session.StepRunning, At: began}
	s.Running = &session.StepRun{Step: st, Since: began}
	s.RunningSteps = []session.StepRun{*s.Running}
	s.Canaries = []session.CanaryView{{Workload: "web", Step: *st.Canary, Container: st.Container, Began: began, Ends: began.Add(st.Canary.For),
		Judgement: reconcile.Judge(st.Canary.Analysis, 18*time.Second, stable18s, canary18s, false)}}
	return s
}

// canaryFailed: the first step failed 10s in, on errors (one request in
// ten answered 500). Its spec is on hold and rolled back: the plan stops
// the canary, drained.
func canaryFailed(t *testing.T) session.Snapshot {
	step := canaryStepOf(t, canaryRunning(t))
	s := canaryRoll(canaryAnalysis(), reconcile.Observed{Holds: map[string]map[string]bool{"web": {hashV2: true}}, RollingBack: map[string]string{"web": hashV2}})
	s.Holds = map[string][]string{"web": {hashV2}}
	stable := reconcile.CohortFigures{Requests: 1800, P50: 4 * time.Millisecond, P95: 9 * time.Millisecond}
	canary := reconcile.CohortFigures{Requests: 200, Errors: 20, P50: 5 * time.Millisecond, P95: 12 * time.Millisecond}
	j := reconcile.Judge(step.Canary.Analysis, 10*time.Second, stable, canary, false)
	if j.Verdict != reconcile.VerdictFail || j.Check != reconcile.CheckErrorRate {
		t.Fatalf("fixture: the judgement is %s, want a failed max_error_rate", j)
	}
	s.Canaries = []session.CanaryView{{Workload: "web", Step: *step.Canary, Container: step.Container, Began: t0.Add(-10 * time.Second),
		Ends: t0.Add(50 * time.Second), Judgement: j, Ended: true}}
	return s
}

// canaryHeld: the first step ended with 40 requests of the 100 it needs;
// on_insufficient_traffic (policy) says what then. With hold, the plan
// holds the canary where it is.
func canaryHeld(t *testing.T, policy string) session.Snapshot {
	a := canaryAnalysis()
	a.OnInsufficientTraffic = policy
	step := canaryStepOf(t, canaryRoll(a, reconcile.Observed{}))
	j := reconcile.Judge(a, time.Minute, reconcile.CohortFigures{Requests: 760, P50: 4 * time.Millisecond, P95: 9 * time.Millisecond},
		reconcile.CohortFigures{Requests: 40, P50: 5 * time.Millisecond, P95: 10 * time.Millisecond}, true)
	if j.Verdict != reconcile.VerdictInsufficient {
		t.Fatalf("fixture: the judgement is %s, want too little traffic", j)
	}
	o := reconcile.Observed{}
	if policy == spec.InsufficientHold {
		o.Canary = map[string]reconcile.CanaryProgress{"web": {Spec: hashV2, Held: &j}}
	}
	s := canaryRoll(a, o)
	s.Canaries = []session.CanaryView{{Workload: "web", Step: *step.Canary, Container: step.Container, Began: t0.Add(-time.Minute),
		Ends: t0, Judgement: j, Ended: true}}
	return s
}

// canaryProxyDown: the step could not read the cohorts from Caddy.
func canaryProxyDown(t *testing.T) session.Snapshot {
	s := canaryRunning(t)
	v := &s.Canaries[0]
	v.Ended, v.Err = true, errors.New("GET http://127.0.0.1:2019/rollcall/cohorts: dial tcp 127.0.0.1:2019: connect: connection refused")
	return s
}

// headerOfScreen is the header's text (every line above the slots pane),
// its lines joined by a space.
func headerOfScreen(screen string) string {
	var words []string
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, " Slots ") {
			break
		}
		words = append(words, strings.Fields(l)...)
	}
	return strings.Join(words, " ")
}

// canaryHeaderLines are the header's lines from the first canary line on.
func canaryHeaderLines(screen string) []string {
	var out []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		if strings.HasPrefix(l, " Slots ") {
			break
		}
		in = in || strings.HasPrefix(strings.TrimSpace(l), "canary ") || strings.HasPrefix(strings.TrimSpace(l), "✗ canary") ||
			strings.HasPrefix(strings.TrimSpace(l), "✓ canary")
		if in {
			out = append(out, l)
		}
	}
	return out
}

// TestCanaryGolden renders the canary's states at 120×40 and 80×24, each
// twice: two renders of one state must be identical.
func TestCanaryGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  session.Snapshot
		sizes [][2]int
	}{
		{"running", canaryRunning(t), [][2]int{{120, 40}, {80, 24}}},
		{"failed", canaryFailed(t), [][2]int{{120, 40}, {80, 24}}},
		{"held", canaryHeld(t, spec.InsufficientHold), [][2]int{{80, 24}}},
	} {
		for _, sz := range tc.sizes {
			t.Run(fmt.Sprintf("%s_%dx%d", tc.name, sz[0], sz[1]), func(t *testing.T) {
				m := sized(theme.Dark, sz[0], sz[1], tc.snap)
				first := m.View().Content
				if second := m.View().Content; first != second {
					t.Fatalf("two renders of one state differ:\n%s\n---\n%s", first, second)
				}
				requireGolden(t, first)
			})
		}
	}
}

// TestCanaryFiguresReadWhole: a canary step under way shows its workload,
// step k/n, share, countdown, each cohort's requests, error rate, p50 and
// p95, and the thresholds they are held to; at 80 columns as at 120 the
// header wraps them onto lines of their own, nothing cut, and the screen
// keeps its height.
func TestCanaryFiguresReadWhole(t *testing.T) {
	running := []string{"canary web step 1/2", "5%", "ends in 42s",
		"held to max_error_rate 1%", "max_p95_ratio 1.5× stable", "min_requests 100",
		"canary 121 req in 18s", "0.83% err", "p50 5ms p95 11ms",
		"stable 2280 req in 18s", "0.13% err", "p50 4ms p95 9ms"}
	// every threshold, and a workload with a long name
	every := func() session.Snapshot {
		s := canaryRunning(t)
		v := &s.Canaries[0]
		v.Workload = "payments-gateway-internal"
		v.Step.Analysis.MaxErrorRateIncrease = 0.005
		return s
	}()
	everyWant := []string{"canary payments-gateway-internal step 1/2", "5%", "ends in 42s",
		"held to max_error_rate 1%", "max_error_rate_increase 0.5% over stable", "max_p95_ratio 1.5× stable", "min_requests 100",
		"canary 121 req in 18s", "0.83% err", "p50 5ms p95 11ms", "stable 2280 req in 18s", "0.13% err", "p50 4ms p95 9ms"}
	for _, tc := range []struct {
		name  string
		snap  session.Snapshot
		w, h  int
		want  []string
		lines int // the canary's lines in the header
	}{
		{"120 columns", canaryRunning(t), 120, 40, running, 2},
		{"80 columns", canaryRunning(t), 80, 24, running, 4},
		{"every threshold, 80 columns", every, 80, 24, everyWant, 5},
		{"240 columns", canaryRunning(t), 240, 50, running, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			screen := ansi.Strip(sized(theme.Mono, tc.w, tc.h, tc.snap).View().Content)
			lines := strings.Split(screen, "\n")
			if len(lines) != tc.h {
				t.Fatalf("%d lines, want %d: the layout did not count the header's wrapped lines:\n%s", len(lines), tc.h, screen)
			}
			cl := canaryHeaderLines(screen)
			if len(cl) != tc.lines {
				t.Errorf("the canary takes %d lines of the header, want %d:\n%s", len(cl), tc.lines, strings.Join(cl, "\n"))
			}
			for _, l := range cl {
				if strings.Contains(l, "…") {
					t.Errorf("a canary line is cut: %q", l)
				}
			}
			// each piece whole on one line
			for _, want := range tc.want {
				found := false
				for _, l := range cl {
					found = found || strings.Contains(l, want)
				}
				if !found {
					t.Errorf("no canary line holds %q whole:\n%s", want, strings.Join(cl, "\n"))
				}
			}
			if !strings.Contains(screen, " Slots ") || !strings.Contains(screen, " Plan ") {
				t.Errorf("the panes are gone under the header:\n%s", screen)
			}
		})
	}
}

// A click lands on the row drawn under it though the canary's lines push
// the panes down: the mouse counts the header's lines at the screen's width.
func TestCanaryHeaderKeepsTheMouseOnItsRows(t *testing.T) {
	c := newConsole(t, canaryRunning(t))
	c.m, _ = update(c.m, tea.WindowSizeMsg{Width: 80, Height: 24})
	slotY := -1
	for y, l := range strings.Split(c.screen(), "\n") {
		if strings.Contains(l, "web/2") && strings.Contains(l, "web-2-1111aaaa") {
			slotY = y
		}
	}
	if slotY < 0 {
		t.Fatalf("web/2's row not found:\n%s", c.screen())
	}
	c.m, _ = update(c.m, tea.MouseClickMsg{X: 10, Y: slotY, Button: tea.MouseLeft})
	if r := c.m.slots.selected(&c.m.board); r == nil || r.target != "web/2" {
		t.Errorf("a click on web/2's row (line %d) selected %v:\n%s", slotY, r, c.screen())
	}
}

// TestCanaryEnded: a step that ended says how, with the figure that
// decided it beside its threshold; one that could not read the proxy says
// so, and shows no countdown.
func TestCanaryEnded(t *testing.T) {
	p95 := func() session.Snapshot {
		s := canaryFailed(t)
		v := &s.Canaries[0]
		v.Judgement = reconcile.Judge(v.Step.Analysis, 10*time.Second,
			reconcile.CohortFigures{Requests: 1800, P50: 4 * time.Millisecond, P95: 10 * time.Millisecond},
			reconcile.CohortFigures{Requests: 200, P50: 12 * time.Millisecond, P95: 30 * time.Millisecond}, false)
		return s
	}()
	passed := func() session.Snapshot {
		s := canaryRunning(t)
		v := &s.Canaries[0]
		v.Ended = true
		v.Judgement = reconcile.Judge(v.Step.Analysis, time.Minute, stable18s, canary18s, true)
		return s
	}()
	for _, tc := range []struct {
		name   string
		snap   session.Snapshot
		want   []string
		absent []string
	}{
		{"failed on errors", canaryFailed(t),
			[]string{"✗ canary web step 1/2", "5% failed: error rate 10% > max_error_rate 1%", "share 0, rolling back",
				"canary 200 req in 10s", "10% err", "p50 5ms p95 12ms", "stable 1800 req in 10s", "0% err", "p50 4ms p95 9ms"},
			[]string{"ends in", "held to"}},
		{"failed on latency", p95,
			[]string{"5% failed: p95 3× stable > max_p95_ratio 1.5×", "p50 12ms p95 30ms", "p50 4ms p95 10ms"},
			[]string{"ends in"}},
		{"held on too little traffic", canaryHeld(t, spec.InsufficientHold),
			[]string{"canary web step 1/2", "5% holds: too little traffic: 40 of min_requests 100", "t retries the step, r rolls it back",
				"canary 40 req in 1m0s", "stable 760 req in 1m0s"},
			[]string{"✗", "failed", "ends in", "ends now"}},
		{"too little traffic fails the step", canaryHeld(t, spec.InsufficientFail),
			[]string{"✗ canary web step 1/2", "5% failed: too little traffic: 40 of min_requests 100", "share 0, rolling back"},
			[]string{"holds", "t retries"}},
		{"too little traffic passes the step", canaryHeld(t, spec.InsufficientPass),
			[]string{"canary web step 1/2", "5% passed on too little traffic: 40 of min_requests 100"},
			[]string{"✗", "holds"}},
		{"passed", passed,
			[]string{"✓ canary web step 1/2", "5% passed", "canary 121 req in 1m0s"},
			[]string{"✗", "ends in", "ends now"}},
		{"the proxy cannot be read", canaryProxyDown(t),
			[]string{"✗ canary web step 1/2", "5% cannot measure: GET http://127.0.0.1:2019/rollcall/cohorts: dial tcp 127.0.0.1:2019: connect: connection refused"},
			[]string{"ends in", "held to", "req"}},
	} {
		for _, sz := range [][2]int{{120, 40}, {80, 24}} {
			t.Run(fmt.Sprintf("%s %dx%d", tc.name, sz[0], sz[1]), func(t *testing.T) {
				screen := ansi.Strip(sized(theme.Mono, sz[0], sz[1], tc.snap).View().Content)
				cl := canaryHeaderLines(screen)
				if len(cl) == 0 {
					t.Fatalf("no canary line in the header:\n%s", screen)
				}
				for _, l := range cl {
					if strings.Contains(l, "…") {
						t.Errorf("a canary line is cut: %q", l)
					}
				}
				// no more of the header than a running canary takes
				if limit := map[int]int{120: 2, 80: 4}[sz[0]]; len(cl) > limit {
					t.Errorf("the canary takes %d lines of the header, want at most %d:\n%s", len(cl), limit, strings.Join(cl, "\n"))
				}
				header := headerOfScreen(screen)
				for _, want := range tc.want {
					if !strings.Contains(header, want) {
						t.Errorf("the header lacks %q:\n%s", want, strings.Join(cl, "\n"))
					}
				}
				text := strings.Join(cl, "\n")
				for _, no := range tc.absent {
					if strings.Contains(text, no) {
						t.Errorf("the canary's lines say %q:\n%s", no, text)
					}
				}
			})
		}
	}
}

// TestCanaryCountdownMovesOnTheClock (DESIGN §8): the step's countdown
// moves on the console's one-shot timer, armed for the moment it next
// changes ("in 42s" becomes "in 41s" once 41.5s are left); once the step
// ended, or could not read the proxy, the canary arms nothing.
func TestCanaryCountdownMovesOnTheClock(t *testing.T) {
	c := newConsole(t, canaryRunning(t))
	headline := func() string { return lineWith(c.screen(), "canary web step 1/2") }
	if !strings.Contains(headline(), "ends in 42s") {
		t.Fatalf("fixture: the step does not end in 42s: %q", headline())
	}
	for i, want := range []string{"ends in 41s", "ends in 40s", "ends in 39s"} {
		due := t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond + time.Nanosecond)
		// the uptimes on screen change on whole seconds: their timers fire
		// between, and leave the countdown as it was
		shown := headline()
		for c.m.tickAt.Before(due) {
			at := c.m.tickAt
			if at.IsZero() {
				t.Fatalf("nothing armed before %s", due.Sub(t0))
			}
			c.m, _ = update(c.m, clockMsg{due: at, at: at})
			if got := headline(); got != shown {
				t.Fatalf("at %s the countdown moved early: %q, was %q", at.Sub(t0), got, shown)
			}
		}
		if !c.m.tickAt.Equal(due) {
			t.Fatalf("armed for %s, want %s (when %q shows)", c.m.tickAt.Sub(t0), due.Sub(t0), want)
		}
		c.m, _ = update(c.m, clockMsg{due: due, at: due})
		if got := headline(); !strings.Contains(got, want) {
			t.Fatalf("the clock fired at %s: the headline reads %q, want %q", due.Sub(t0), got, want)
		}
	}

	// the canary's rows arm nothing once their step ended, or could not measure
	withoutCanary := func(s session.Snapshot) time.Time {
		s.Canaries = nil
		return newConsole(t, s).m.tickAt
	}
	for name, s := range map[string]session.Snapshot{"failed": canaryFailed(t), "held": canaryHeld(t, spec.InsufficientHold), "proxy down": canaryProxyDown(t)} {
		rows := newBoard(s).header.canaries
		if len(rows) != 1 {
			t.Fatalf("%s: %d canary rows, want 1", name, len(rows))
		}
		if d := canaryNext(rows, t0); d != 0 {
			t.Errorf("%s: the canary arms the clock for %s, want nothing", name, d)
		}
		if got, want := newConsole(t, s).m.tickAt, withoutCanary(s); !got.Equal(want) {
			t.Errorf("%s: armed for %s, want %s, as without the canary", name, got.Sub(t0), want.Sub(t0))
		}
	}
	// while it runs, the canary's countdown is what arms the clock first
	s := canaryRunning(t)
	if got, want := newConsole(t, s).m.tickAt, t0.Add(500*time.Millisecond+time.Nanosecond); !got.Equal(want) {
		t.Errorf("a running canary: armed for %s, want %s", got.Sub(t0), want.Sub(t0))
	}
	if without := withoutCanary(s); !without.After(t0.Add(500 * time.Millisecond)) {
		t.Fatalf("fixture: without the canary the clock is armed for %s: the test would not tell", without.Sub(t0))
	}
}

// TestCanaryStepInThePlan: the plan pane shows the canary step as Diff
// plans it, its action "canary" in the roll's tone, with its reason; the
// detail pane reads the reason whole.
func TestCanaryStepInThePlan(t *testing.T) {
	s := canaryRoll(canaryAnalysis(), reconcile.Observed{})
	st := canaryStepOf(t, s)
	s.Next = st.Key()
	c := newConsole(t, s)
	row := lineWith(c.screen(), "web/0 canary step")
	for _, want := range []string{`queued`, `canary\s+web/0`, `canary step 1/2: 5% of the traffic`} {
		if !regexp.MustCompile(want).MatchString(row) {
			t.Errorf("the plan's canary row %q lacks %q", row, want)
		}
	}
	if wait := lineWith(c.screen(), "web/1 canary first"); !strings.Contains(wait, "waiting") || !strings.Contains(wait, "wait ") {
		t.Errorf("web/1's row %q: want a wait for the canary", wait)
	}

	// its action is painted like the others, not left plain
	for _, n := range []theme.Name{theme.Dark, theme.Light, theme.Mono} {
		styles := theme.New(n)
		k := inksOf(&styles)
		if got := k.actionInk("canary"); got == (ink{}) || got.paint("canary") == "canary" {
			t.Errorf("%s: the canary action is unstyled", n)
		}
		if n != theme.Mono && styles.Action("canary").GetForeground() == nil {
			t.Errorf("%s: the canary action has no colour", n)
		}
	}

	// the plan pane focused, the detail pane reads the step whole
	c = c.keys("tab")
	if c.m.focus != panePlan {
		t.Fatalf("tab focused %s, want the plan", c.m.focus)
	}
	if got := unwrapDetail(c.screen(), 120); !strings.Contains(got, st.Reason) {
		t.Errorf("the detail pane lacks the canary step's reason %q; it reads %q", st.Reason, got)
	}
}

// TestRetryRunsAHeldCanaryAgain: t on a workload whose canary held on too
// little traffic asks to run the step again (as the header says it does),
// defaulting to No, and sends Retry on a yes.
func TestRetryRunsAHeldCanaryAgain(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		want []session.Intent
	}{
		{"t y", []string{"t", "y"}, []session.Intent{session.Retry{Workload: "web"}}},
		{"t enter: the answer starts on No", []string{"t", "enter"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, canaryHeld(t, spec.InsufficientHold))
			c.keys(tc.keys[0])
			if c.m.dialog == nil || !strings.Contains(c.m.dialog.body, "step 1/2") || !strings.Contains(c.m.dialog.body, "too little traffic") {
				t.Fatalf("t on a held canary: dialog %+v, want one naming the step and why it held\n%s", c.m.dialog, c.screen())
			}
			c.keys(tc.keys[1:]...)
			if got := c.rec.take(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys %q sent %#v, want %#v", tc.keys, got, tc.want)
			}
		})
	}
	// a canary that passed holds nothing: nothing to retry
	s := canaryHeld(t, spec.InsufficientPass)
	c := newConsole(t, s).keys("t")
	if c.m.dialog != nil || len(c.rec.take()) != 0 || !strings.Contains(c.screen(), "nothing to retry") {
		t.Errorf("t with no hold: dialog %+v:\n%s", c.m.dialog, c.screen())
	}
}

// TestCanaryLayoutKeepsEveryWord: at any width the canary's lines fit it,
// and read, in order, every character the one-line text has; the break
// falls between segments where it can, so a cohort's figures stay on one
// line whenever one holds them.
func TestCanaryLayoutKeepsEveryWord(t *testing.T) {
	styles := theme.New(theme.Mono)
	k := inksOf(&styles)
	long := canaryProxyDown(t)
	long.Canaries[0].Err = errors.New("GET http://127.0.0.1:2019/rollcall/cohorts/" + strings.Repeat("x", 90) + ": refused")
	// what a line reads, without its indent and the separators a break replaces
	letters := func(s string) string {
		return strings.NewReplacer(" ", "", "·", "", "│", "").Replace(ansi.Strip(s))
	}
	for name, s := range map[string]session.Snapshot{"running": canaryRunning(t), "failed": canaryFailed(t),
		"held": canaryHeld(t, spec.InsufficientHold), "proxy down": canaryProxyDown(t), "a word longer than a line": long} {
		rows := newBoard(s).header.canaries
		segs := canarySegments(&k, &rows[0], t0)
		one := layoutCanary(segs, k.muted, 0)
		if len(one) != 1 {
			t.Fatalf("%s: %d lines with no width, want 1", name, len(one))
		}
		for w := 24; w <= 240; w++ {
			lines := layoutCanary(segs, k.muted, w)
			got := ""
			for i, l := range lines {
				if lw := ansi.StringWidth(l); lw > w {
					t.Fatalf("%s at %d: line %d is %d cells: %q", name, w, i, lw, ansi.Strip(l))
				}
				if i > 0 && !strings.HasPrefix(ansi.Strip(l), "  ") {
					t.Fatalf("%s at %d: line %d is not indented: %q", name, w, i, ansi.Strip(l))
				}
				got += letters(l)
			}
			if want := letters(one[0]); got != want {
				t.Fatalf("%s at %d: the lines read\n%s\nwant\n%s", name, w, got, want)
			}
			if name == "running" && w >= 2+len("stable 2280 req in 18s · 0.1% err · p50 4ms p95 9ms") {
				if line := lineWith(ansi.Strip(strings.Join(lines, "\n")), "stable 2280 req"); !strings.Contains(line, "p50 4ms p95 9ms") {
					t.Errorf("running at %d: the stable cohort's figures break over lines:\n%s", w, ansi.Strip(strings.Join(lines, "\n")))
				}
			}
		}
	}
}

// TestCanaryHeaderSaysTheJudgement: the header says an ended step's
// judgement with reconcile's finding and each figure as reconcile formats
// it, for the judgement every view and the webhook are tested with
// (issue 29).
func TestCanaryHeaderSaysTheJudgement(t *testing.T) {
	styles := theme.New(theme.Mono)
	k := inksOf(&styles)
	j := reconcile.Judgement{Verdict: reconcile.VerdictFail, Check: reconcile.CheckErrorRateIncrease, Measured: 5.0/120 - 3.0/2280, Limit: 0.02,
		Window: 18 * time.Second,
		Stable: reconcile.CohortFigures{Requests: 2280, Errors: 3, P95: 8 * time.Millisecond},
		Canary: reconcile.CohortFigures{Requests: 120, Errors: 5, P95: 9250 * time.Microsecond}}
	r := canaryRow{name: "web", workload: "web", step: reconcile.CanaryStep{Index: 0, Of: 2, Share: 0.125}, ended: true, judgement: j}
	got := ansi.Strip(layoutCanary(canarySegments(&k, &r, t0), k.muted, 0)[0])
	for _, want := range []string{j.Finding(), reconcile.Percent(0.125), reconcile.Percent(j.Canary.ErrorRate()),
		reconcile.Percent(j.Stable.ErrorRate()), reconcile.Latency(j.Canary.P95), "4.17%", "0.13%", "9.3ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("header %q\nwant %q in it", got, want)
		}
	}
}
