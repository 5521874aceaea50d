package load

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

const proxyLine = "proxy: {caddy_admin: \"http://127.0.0.1:2019\"}\n"

// canaryDoc is a document with one workload web whose update.canary key is
// at 5:7, its steps value at 6:16 and its analysis value at 7:19 (each
// line left out when ""), then the proxy.
func canaryDoc(steps, analysis string) string {
	s := doc("    update:\n      canary:\n")
	if steps != "" {
		s += "        steps: " + steps + "\n"
	}
	if analysis != "" {
		s += "        analysis: " + analysis + "\n"
	}
	return s + proxyLine
}

const (
	twoSteps  = "[{share: 5%, for: 1m}, {share: 25%, for: 2m}]"
	errorRate = "{max_error_rate: 1%}"
)

// defaultAnalysis is the analysis of errorRate: max_error_rate 1%, every
// other key at its default.
func defaultAnalysis() spec.Analysis {
	return spec.Analysis{Interval: spec.DefaultCanaryInterval, MaxErrorRate: 0.01, MaxErrorRateIncrease: spec.NotChecked,
		MaxP95Ratio: spec.NotChecked, MinRequests: spec.DefaultMinRequests, OnInsufficientTraffic: spec.InsufficientHold}
}

func TestCanaryDesignExampleParsesToExactStruct(t *testing.T) {
	d := mustParse(t, `workloads:
  web:
    image: app
    update:
      strategy: rolling
      canary:
        steps: [{share: 5%, for: 1m}, {share: 25%, for: 2m}]
        analysis: {interval: 5s, max_error_rate: 1%, max_error_rate_increase: 0.5%, max_p95_ratio: 1.5, min_requests: 200, on_insufficient_traffic: fail}
`+proxyLine)
	want := defaultUpdate()
	want.Canary = &spec.Canary{
		Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}, {Share: 0.25, For: 2 * time.Minute}},
		Analysis: spec.Analysis{Interval: 5 * time.Second, MaxErrorRate: 0.01, MaxErrorRateIncrease: 0.005,
			MaxP95Ratio: 1.5, MinRequests: 200, OnInsufficientTraffic: spec.InsufficientFail},
	}
	if got := d.Workloads["web"].Update; !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v %+v\nwant\n%+v %+v", got, got.Canary, want, want.Canary)
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings %v, want none", d.Warnings)
	}
}

func TestCanaryDefaults(t *testing.T) {
	d := mustParse(t, canaryDoc("[{share: 5%, for: 1m}]", errorRate))
	want := &spec.Canary{Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}}, Analysis: defaultAnalysis()}
	if got := d.Workloads["web"].Update.Canary; !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if spec.DefaultCanaryInterval != 10*time.Second || spec.DefaultMinRequests != 100 {
		t.Errorf("defaults interval %s min_requests %d, want 10s and 100 (DESIGN)", spec.DefaultCanaryInterval, spec.DefaultMinRequests)
	}
}

// TestCanaryAccepts checks the forms update.canary takes, one rule per row.
func TestCanaryAccepts(t *testing.T) {
	canary := func(d *spec.Desired) any { return d.Workloads["web"].Update.Canary }
	steps := func(d *spec.Desired) any { return d.Workloads["web"].Update.Canary.Steps }
	analysis := func(d *spec.Desired) any { return d.Workloads["web"].Update.Canary.Analysis }
	withAnalysis := func(change func(*spec.Analysis)) spec.Analysis {
		a := defaultAnalysis()
		change(&a)
		return a
	}
	tests := []struct {
		rule  string
		src   string
		check func(*spec.Desired) any
		want  any
	}{
		{"no canary leaves Canary nil", doc("    update: {drain: 1s}\n") + proxyLine, canary, (*spec.Canary)(nil)},
		{"a null canary counts as absent, and needs no proxy", doc("    update: {canary: ~}\n"), canary, (*spec.Canary)(nil)},
		{"a share may be 100%", canaryDoc("[{share: 100%, for: 1m}]", errorRate), steps, []spec.CanaryStep{{Share: 1, For: time.Minute}}},
		{"shares may repeat", canaryDoc("[{share: 10%, for: 1m}, {share: 10%, for: 30s}]", errorRate),
			steps, []spec.CanaryStep{{Share: 0.1, For: time.Minute}, {Share: 0.1, For: 30 * time.Second}}},
		{"a share may have decimals", canaryDoc("[{share: 0.1%, for: 1s}, {share: .5%, for: 1s}, {share: 12.5%, for: 1s}]", errorRate),
			steps, []spec.CanaryStep{{Share: 0.001, For: time.Second}, {Share: 0.005, For: time.Second}, {Share: 0.125, For: time.Second}}},
		{"a share may be quoted", canaryDoc("[{share: \"5%\", for: 1m}]", errorRate), steps, []spec.CanaryStep{{Share: 0.05, For: time.Minute}}},
		{"steps in block style", doc("    update:\n      canary:\n        steps:\n          - share: 5%\n            for: 1m\n        analysis: {max_error_rate: 1%}\n") + proxyLine,
			steps, []spec.CanaryStep{{Share: 0.05, For: time.Minute}}},
		{"max_error_rate 0% allows no error at all", canaryDoc(twoSteps, "{max_error_rate: 0%}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.MaxErrorRate = 0 })},
		{"max_error_rate_increase alone", canaryDoc(twoSteps, "{max_error_rate_increase: 0.5%}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.MaxErrorRate, a.MaxErrorRateIncrease = spec.NotChecked, 0.005 })},
		{"max_p95_ratio alone, as an integer", canaryDoc(twoSteps, "{max_p95_ratio: 2}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.MaxErrorRate, a.MaxP95Ratio = spec.NotChecked, 2 })},
		{"max_p95_ratio may be 1", canaryDoc(twoSteps, "{max_p95_ratio: 1.0}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.MaxErrorRate, a.MaxP95Ratio = spec.NotChecked, 1 })},
		{"interval may be longer than a step", canaryDoc("[{share: 5%, for: 5s}]", "{interval: 1m, max_error_rate: 1%}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.Interval = time.Minute })},
		{"min_requests 1 and on_insufficient_traffic pass", canaryDoc(twoSteps, "{max_error_rate: 1%, min_requests: 1, on_insufficient_traffic: pass}"),
			analysis, withAnalysis(func(a *spec.Analysis) { a.MinRequests, a.OnInsufficientTraffic = 1, spec.InsufficientPass })},
		{"null analysis keys count as absent", canaryDoc(twoSteps, "{max_error_rate: 1%, interval: ~, max_p95_ratio: ~}"),
			analysis, defaultAnalysis()},
		{"the proxy may come before the workloads", proxyLine + "workloads:\n  web:\n    image: app\n    update: {canary: {steps: [{share: 5%, for: 1m}], analysis: {max_error_rate: 1%}}}\n",
			steps, []spec.CanaryStep{{Share: 0.05, For: time.Minute}}},
		{"blue-green with a canary", doc("    update:\n      strategy: blue-green\n      canary: {steps: [{share: 5%, for: 1m}], analysis: {max_error_rate: 1%}}\n") + proxyLine,
			func(d *spec.Desired) any { u := d.Workloads["web"].Update; return [2]any{u.Strategy, u.Canary.Steps} },
			[2]any{spec.StrategyBlueGreen, []spec.CanaryStep{{Share: 0.05, For: time.Minute}}}},
		{"an aliased canary serves two workloads",
			"workloads:\n  a: {image: x, update: {canary: &c {steps: [{share: 5%, for: 1m}], analysis: {max_error_rate: 1%}}}}\n  b: {image: y, update: {canary: *c}}\n" + proxyLine,
			func(d *spec.Desired) any {
				return reflect.DeepEqual(d.Workloads["a"].Update.Canary, d.Workloads["b"].Update.Canary)
			}, true},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := mustParse(t, tt.src)
			if got := tt.check(d); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestCanaryErrors checks that each rule of update.canary is enforced at the
// offending node.
func TestCanaryErrors(t *testing.T) {
	const (
		noThreshold = "give at least one of max_error_rate, max_error_rate_increase and max_p95_ratio"
		bareNumber  = "a bare number could be a fraction or a percentage"
	)
	tests := []struct {
		rule string
		src  string
		pos  string // "line:col"
		msg  string // substring of the message
		hint string // substring of the hint; "" to skip
	}{
		// The canary and the proxy.
		{"a canary needs the proxy", doc("    update:\n      canary:\n        steps: " + twoSteps + "\n        analysis: " + errorRate + "\n"),
			"5:7", "web.update.canary: needs proxy.caddy_admin", "the canary's traffic is split and measured by Caddy (proxy.caddy_admin)"},
		{"a null caddy_admin names no proxy", doc("    update: {canary: {steps: [{share: 5%, for: 1m}], analysis: {max_error_rate: 1%}}}\n") + "proxy: {caddy_admin: ~}\n",
			"4:14", "web.update.canary: needs proxy.caddy_admin", "proxy.caddy_admin"},
		{"a bad canary still needs the proxy", doc("    update: {canary: {}}\n"), "4:14", "needs proxy.caddy_admin", ""},
		{"canary is a mapping", doc("    update: {canary: 5%}\n") + proxyLine, "4:22", "web.update.canary: expected a mapping, got string", ""},
		{"unknown canary key suggests the closest", doc("    update: {canary: {step: [], analysis: {max_error_rate: 1%}}}\n") + proxyLine,
			"4:23", "web.update.canary.step: unknown key", `did you mean "steps"`},
		{"steps is required", canaryDoc("", errorRate), "5:7", "web.update.canary: steps is required", "share: 5%"},
		{"null steps is no steps", canaryDoc("~", errorRate), "5:7", "steps is required", ""},
		{"analysis is required", canaryDoc(twoSteps, ""), "5:7", "web.update.canary: analysis is required", noThreshold},

		// Steps.
		{"steps is a list", canaryDoc("{share: 5%}", errorRate), "6:16", "web.update.canary.steps: expected a list, got a mapping", ""},
		{"steps is not empty", canaryDoc("[]", errorRate), "6:16", "web.update.canary.steps: names no step", "share: 5%"},
		{"a step is a mapping", canaryDoc("[5%]", errorRate), "6:17", `steps[0]: expected a mapping {share, for}, got string "5%"`, ""},
		{"unknown step key", canaryDoc("[{share: 5%, for: 1m, wait: 1m}]", errorRate), "6:38", "web.update.canary.steps[0].wait: unknown key", "valid keys: share, for"},
		{"a step needs a share", canaryDoc("[{for: 1m}]", errorRate), "6:17", "steps[0]: share is required", "at most 100%"},
		{"a step needs a for", canaryDoc("[{share: 5%}]", errorRate), "6:17", "steps[0]: for is required", "e.g. for: 1m"},
		{"a share is not a bare fraction", canaryDoc("[{share: 0.05, for: 1m}]", errorRate), "6:25", "steps[0].share: 0.05 is a bare number, not a percentage", bareNumber},
		{"a share is not a bare integer", canaryDoc("[{share: 5, for: 1m}]", errorRate), "6:25", "5 is a bare number", bareNumber},
		{"a share needs its %", canaryDoc("[{share: \"5\", for: 1m}]", errorRate), "6:25", `steps[0].share: invalid percentage "5"`, "e.g. 5%"},
		{"a share is a number", canaryDoc("[{share: five%, for: 1m}]", errorRate), "6:25", `invalid percentage "five%"`, ""},
		{"a share is a scalar", canaryDoc("[{share: [5%], for: 1m}]", errorRate), "6:25", "steps[0].share: expected a percentage, got a list", ""},
		{"a share is more than 0%", canaryDoc("[{share: 0%, for: 1m}]", errorRate), "6:25", "steps[0].share: 0% sends the canary no traffic", "more than 0%"},
		{"a share is not negative", canaryDoc("[{share: -5%, for: 1m}]", errorRate), "6:25", "steps[0].share: -5% must not be negative", ""},
		{"a share is at most 100%", canaryDoc("[{share: 150%, for: 1m}]", errorRate), "6:25", "steps[0].share: 150% is more than 100%", "at most 100%"},
		{"shares never decrease", canaryDoc("[{share: 25%, for: 1m}, {share: 5%, for: 1m}]", errorRate), "6:48",
			"web.update.canary.steps[1].share: 5% is less than 25%, the share of web.update.canary.steps[0]", "never decrease"},
		{"for is a duration", canaryDoc("[{share: 5%, for: 60}]", errorRate), "6:34", "steps[0].for: 60 is a bare number, not a duration", "add a unit"},
		{"for is positive", canaryDoc("[{share: 5%, for: 0s}]", errorRate), "6:34", "steps[0].for: must be greater than 0", "e.g. 1m"},

		// Analysis.
		{"analysis is a mapping", canaryDoc(twoSteps, "1%"), "7:19", "web.update.canary.analysis: expected a mapping, got string", ""},
		{"an empty analysis sets no threshold", canaryDoc(twoSteps, "{}"), "7:9", "web.update.canary.analysis: sets no threshold", noThreshold},
		{"an interval alone sets no threshold", canaryDoc(twoSteps, "{interval: 5s, min_requests: 10}"), "7:9", "sets no threshold", "measures nothing"},
		{"unknown analysis key suggests the closest", canaryDoc(twoSteps, "{max_eror_rate: 1%}"), "7:20", "analysis.max_eror_rate: unknown key", `did you mean "max_error_rate"`},
		{"interval is positive", canaryDoc(twoSteps, "{interval: 0s, max_error_rate: 1%}"), "7:30", "analysis.interval: must be greater than 0", "e.g. 10s"},
		{"interval is a duration", canaryDoc(twoSteps, "{interval: 10, max_error_rate: 1%}"), "7:30", "analysis.interval: 10 is a bare number", ""},
		{"max_error_rate is a percentage", canaryDoc(twoSteps, "{max_error_rate: 0.01}"), "7:36", "analysis.max_error_rate: 0.01 is a bare number, not a percentage", bareNumber},
		{"max_error_rate is at most 100%", canaryDoc(twoSteps, "{max_error_rate: 101%}"), "7:36", "max_error_rate: 101% is more than 100%", "from 0% to 100%"},
		{"max_error_rate is not negative", canaryDoc(twoSteps, "{max_error_rate: -1%}"), "7:36", "max_error_rate: -1% must not be negative", ""},
		{"max_error_rate_increase is a percentage", canaryDoc(twoSteps, "{max_error_rate_increase: x}"), "7:45", `analysis.max_error_rate_increase: invalid percentage "x"`, "0.5%"},
		{"max_p95_ratio is at least 1", canaryDoc(twoSteps, "{max_p95_ratio: 0.9}"), "7:35", "analysis.max_p95_ratio: 0.9 must be at least 1", "at least 1"},
		{"max_p95_ratio is not quoted", canaryDoc(twoSteps, "{max_p95_ratio: \"1.5\"}"), "7:35", `max_p95_ratio: expected a number, got string "1.5"`, "remove the quotes"},
		{"max_p95_ratio is a number", canaryDoc(twoSteps, "{max_p95_ratio: fast}"), "7:35", `max_p95_ratio: expected a number, got string "fast"`, "half as slow again"},
		{"max_p95_ratio is finite", canaryDoc(twoSteps, "{max_p95_ratio: .inf}"), "7:35", "max_p95_ratio: invalid number .inf", ""},
		{"max_p95_ratio is not a percentage", canaryDoc(twoSteps, "{max_p95_ratio: 150%}"), "7:35", `expected a number, got string "150%"`, ""},
		{"min_requests is at least 1", canaryDoc(twoSteps, "{max_error_rate: 1%, min_requests: 0}"), "7:54", "analysis.min_requests: 0 must be at least 1", "on_insufficient_traffic"},
		{"min_requests is an integer", canaryDoc(twoSteps, "{max_error_rate: 1%, min_requests: 1.5}"), "7:54", "min_requests: expected an integer, got number 1.5", ""},
		{"on_insufficient_traffic is hold, fail or pass", canaryDoc(twoSteps, "{max_error_rate: 1%, on_insufficient_traffic: wait}"), "7:65",
			`analysis.on_insufficient_traffic: unknown value "wait"`, "hold, fail, pass"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) { wantParseError(t, tt.src, tt.pos, tt.msg, tt.hint) })
	}
}

// TestCanaryReportsOneErrorPerMistake: a bad threshold is not also "no
// threshold", a bad step is not also a decrease, and a canary without a
// proxy in two workloads is reported at each.
func TestCanaryReportsOneErrorPerMistake(t *testing.T) {
	tests := []struct {
		rule string
		src  string
		want []string // "line:col" of each error, in order
	}{
		{"a bad threshold", canaryDoc(twoSteps, "{max_error_rate: 0.01}"), []string{"7:36"}},
		{"a bad step between good ones", canaryDoc("[{share: 25%, for: 1m}, {share: 0.1, for: 1m}, {share: 50%, for: 1m}]", errorRate), []string{"6:48"}},
		{"two canaries without the proxy",
			"workloads:\n  a: {image: x, update: {canary: {steps: [{share: 5%, for: 1m}], analysis: {max_p95_ratio: 2}}}}\n" +
				"  b: {image: x, update: {canary: {steps: [{share: 5%, for: 1m}], analysis: {max_p95_ratio: 2}}}}\n",
			[]string{"2:26", "3:26"}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.src))
			var list spec.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %v, want an ErrorList", err)
			}
			var got []string
			for _, e := range list {
				got = append(got, fmt.Sprintf("%d:%d", e.Line, e.Col))
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors at %v, want %v\n%v", got, tt.want, err)
			}
		})
	}
}

// TestCanaryLeavesTheHashAlone: the update policy, canary included, is no
// part of the spec hash (DESIGN §3), so adding a canary recreates nothing.
func TestCanaryLeavesTheHashAlone(t *testing.T) {
	base := spec.Hash(hashBase(), "sha256:1")
	w := hashBase()
	w.Update.Canary = &spec.Canary{Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}}, Analysis: defaultAnalysis()}
	if spec.Hash(w, "sha256:1") != base {
		t.Error("adding a canary changed the hash")
	}
	plain := mustParse(t, doc("    update: {strategy: rolling}\n")).Workloads["web"]
	withCanary := mustParse(t, canaryDoc(twoSteps, errorRate)).Workloads["web"]
	if withCanary.Update.Canary == nil {
		t.Fatal("the canary was not read")
	}
	if spec.Hash(plain, "sha256:1") != spec.Hash(withCanary, "sha256:1") {
		t.Error("a document with a canary hashes differently from the same one without")
	}
}

// TestCanaryForHostKeepsTheCanary: each host's copy of the desired state
// rolls with the same canary.
func TestCanaryForHostKeepsTheCanary(t *testing.T) {
	d := mustParse(t, canaryDoc(twoSteps, errorRate)+"hosts:\n  a: {endpoint: \"ssh://deploy@a\", replicas: {web: 2}}\n")
	h, ok := d.ForHost("a")
	if !ok {
		t.Fatal("no host a")
	}
	if got, want := h.Workloads["web"].Update.Canary, d.Workloads["web"].Update.Canary; got == nil || !reflect.DeepEqual(got, want) {
		t.Errorf("host a's canary %+v, want %+v", got, want)
	}
}
