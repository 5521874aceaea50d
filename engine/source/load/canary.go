package load

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

var (
	canaryKeys     = []string{"steps", "analysis"}
	canaryStepKeys = []string{"share", "for"}
	analysisKeys   = []string{"interval", "max_error_rate", "max_error_rate_increase", "max_p95_ratio", "min_requests", "on_insufficient_traffic"}
	// percentRE is the number of a percentage, without its sign.
	percentRE = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
)

const (
	canaryProxyHint = "the canary's traffic is split and measured by Caddy (proxy.caddy_admin)"
	stepsHint       = "e.g. steps: [{share: 5%, for: 1m}, {share: 25%, for: 2m}]"
	thresholdHint   = "give at least one of max_error_rate, max_error_rate_increase and max_p95_ratio, e.g. analysis: {max_error_rate: 1%}; without one the canary measures nothing"
	shareHint       = "the canary's share of the requests: more than 0% and at most 100%, e.g. 5%"
)

// updateCanary reads update.canary (DESIGN §12); nil on any problem. The
// rules:
//
//   - steps is required: a non-empty list of {share, for}, both required.
//     share is a percentage written "N%" (5%, 12.5%), more than 0% and at
//     most 100%; a bare number is an error, since 0.05 and 5 could each
//     mean a fraction or a percentage. Shares never decrease from one step
//     to the next. for is a duration > 0.
//   - analysis is required, and sets at least one threshold:
//     max_error_rate and max_error_rate_increase are percentages from 0%
//     to 100%, max_p95_ratio a number >= 1. A threshold left out is
//     NotChecked.
//   - analysis.interval is a duration > 0, default 10s (a step shorter
//     than it is compared at its end: the consumer clamps it).
//   - analysis.min_requests is an integer >= 1, default 100.
//   - analysis.on_insufficient_traffic is hold (the default), fail or pass.
//   - The document must name the proxy (checkCanaryProxy). Any strategy
//     takes a canary: with blue-green, the canary is the first new
//     container, measured before the rest start.
func (l *loader) updateCanary(f field) *spec.Canary {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	l.canaries = append(l.canaries, f)
	c := &spec.Canary{}
	var stepsOK, analysisOK, hasSteps, hasAnalysis bool
	for _, g := range l.fields(f.val, f.path, canaryKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "steps":
			hasSteps = true
			c.Steps, stepsOK = l.canarySteps(g)
		case "analysis":
			hasAnalysis = true
			c.Analysis, analysisOK = l.analysis(g)
		}
	}
	if !hasSteps {
		l.fail(f.key, stepsHint, "%s: steps is required", f.path)
	}
	if !hasAnalysis {
		l.fail(f.key, thresholdHint, "%s: analysis is required", f.path)
	}
	if !stepsOK || !analysisOK {
		return nil
	}
	return c
}

// checkCanaryProxy reports each update.canary of a document that names no
// proxy. It runs once the whole document is read, since proxy may come
// after the workloads.
func (l *loader) checkCanaryProxy(d *spec.Desired) {
	if d.Proxy != nil {
		return
	}
	for _, f := range l.canaries {
		l.fail(f.key, canaryProxyHint, "%s: needs proxy.caddy_admin", f.path)
	}
}

// canarySteps reads update.canary.steps.
func (l *loader) canarySteps(f field) ([]spec.CanaryStep, bool) {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil, false
	}
	if len(items) == 0 {
		l.fail(f.val, stepsHint, "%s: names no step", f.path)
		return nil, false
	}
	if len(items) > spec.MaxCanarySteps {
		l.fail(f.val, fmt.Sprintf("at most %d steps: a few shares, e.g. 5%%, 25%%, 50%%, are enough", spec.MaxCanarySteps),
			"%s: %d steps, more than %d", f.path, len(items), spec.MaxCanarySteps)
		return nil, false
	}
	steps := make([]spec.CanaryStep, 0, len(items))
	var prev *yaml.Node // the share of the last good step
	prevPath := ""
	for i, item := range items {
		path := index(f.path, i)
		s, share, ok := l.canaryStep(item, path)
		if !ok {
			continue
		}
		if len(steps) > 0 && s.Share < steps[len(steps)-1].Share {
			l.fail(share, "shares never decrease: each step gives the canary at least the share of the step before",
				"%s.share: %s is less than %s, the share of %s", path, share.Value, prev.Value, prevPath)
			continue
		}
		steps = append(steps, s)
		prev, prevPath = share, path
	}
	return steps, len(steps) == len(items)
}

// canaryStep reads one step, {share, for}; share is its share's node, for
// the check that shares never decrease.
func (l *loader) canaryStep(n *yaml.Node, path string) (s spec.CanaryStep, share *yaml.Node, ok bool) {
	if n.Kind != yaml.MappingNode {
		l.fail(n, stepsHint, "%s: expected a mapping {share, for}, got %s", path, describe(n))
		return spec.CanaryStep{}, nil, false
	}
	var shareOK, forOK, hasShare, hasFor bool
	for _, g := range l.fields(n, path, canaryStepKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "share":
			hasShare = true
			p, ok := l.percent(g.val, g.path, shareHint)
			switch {
			case !ok:
			case p == 0:
				l.fail(g.val, shareHint, "%s: %s sends the canary no traffic", g.path, g.val.Value)
			default:
				s.Share, share, shareOK = p, g.val, true
			}
		case "for":
			hasFor = true
			d, ok := l.boundedDuration(g.val, g.path)
			switch {
			case !ok:
			case d == 0:
				l.fail(g.val, "how long the step lasts, e.g. 1m", "%s: must be greater than 0", g.path)
			default:
				s.For, forOK = d, true
			}
		}
	}
	if !hasShare {
		l.fail(n, shareHint, "%s: share is required", path)
	}
	if !hasFor {
		l.fail(n, "how long the step lasts, e.g. for: 1m", "%s: for is required", path)
	}
	return s, share, shareOK && forOK
}

// analysis reads update.canary.analysis, with its defaults.
func (l *loader) analysis(f field) (spec.Analysis, bool) {
	a := spec.Analysis{
		Interval:              spec.DefaultCanaryInterval,
		MaxErrorRate:          spec.NotChecked,
		MaxErrorRateIncrease:  spec.NotChecked,
		MaxP95Ratio:           spec.NotChecked,
		MinRequests:           spec.DefaultMinRequests,
		OnInsufficientTraffic: spec.InsufficientHold,
	}
	if !l.mapping(f.val, f.path) {
		return a, false
	}
	const rateHint = "a percentage from 0% to 100%, e.g. 1% or 0.5%"
	good, thresholds := true, 0
	check := func(ok bool) { good = good && ok }
	for _, g := range l.fields(f.val, f.path, analysisKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "interval":
			d, ok := l.boundedDuration(g.val, g.path)
			if ok && d == 0 {
				l.fail(g.val, "how often the canary is compared with the stable cohort, e.g. 10s", "%s: must be greater than 0", g.path)
				ok = false
			} else if ok && d < spec.MinCanaryInterval {
				l.fail(g.val, fmt.Sprintf("at least %s: each interval reads the proxy's counters; e.g. 10s", spec.MinCanaryInterval),
					"%s: %s is too short", g.path, g.val.Value)
				ok = false
			}
			if ok {
				a.Interval = d
			}
			check(ok)
		case "max_error_rate":
			thresholds++
			p, ok := l.percent(g.val, g.path, rateHint)
			if ok {
				a.MaxErrorRate = p
			}
			check(ok)
		case "max_error_rate_increase":
			thresholds++
			p, ok := l.percent(g.val, g.path, rateHint)
			if ok {
				a.MaxErrorRateIncrease = p
			}
			check(ok)
		case "max_p95_ratio":
			thresholds++
			r, ok := l.ratio(g.val, g.path)
			if ok {
				a.MaxP95Ratio = r
			}
			check(ok)
		case "min_requests":
			n, ok := l.integer(g.val, g.path)
			if ok && n < 1 {
				l.fail(g.val, "the requests the canary must see in a step before it is judged; too few does what on_insufficient_traffic says",
					"%s: %d must be at least 1", g.path, n)
				ok = false
			}
			if ok {
				a.MinRequests = n
			}
			check(ok)
		case "on_insufficient_traffic":
			s, ok := l.oneOf(g.val, g.path, spec.InsufficientHold, spec.InsufficientFail, spec.InsufficientPass)
			if ok {
				a.OnInsufficientTraffic = s
			}
			check(ok)
		}
	}
	if thresholds == 0 {
		l.fail(f.key, thresholdHint, "%s: sets no threshold", f.path)
		good = false
	}
	return a, good
}

// percent reads a percentage written "N%", N a decimal number such as 5,
// 0.5 or 12.5, from 0% to 100%, as a fraction (0.05 for "5%"). A bare
// number is an error: 0.05 could be a fraction or a percentage.
func (l *loader) percent(n *yaml.Node, path, hint string) (float64, bool) {
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		l.fail(n, "write a percentage, e.g. 5%: a bare number could be a fraction or a percentage",
			"%s: %s is a bare number, not a percentage", path, n.Value)
		return 0, false
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		l.fail(n, hint, "%s: expected a percentage, got %s", path, describe(n))
		return 0, false
	}
	num, isPercent := strings.CutSuffix(strings.TrimSpace(n.Value), "%")
	num = strings.TrimSpace(num)
	switch {
	case isPercent && strings.HasPrefix(num, "-") && percentRE.MatchString(num[1:]):
		l.fail(n, hint, "%s: %s must not be negative", path, n.Value)
		return 0, false
	case !isPercent || !percentRE.MatchString(num):
		l.fail(n, hint, "%s: invalid percentage %q", path, n.Value)
		return 0, false
	}
	// Parsing N/100 as one decimal gives the float nearest to it, as the
	// literal 0.001 is for "0.1%", where N parsed and then divided may not.
	p, err := strconv.ParseFloat(num+"e-2", 64)
	if err != nil || p > 1 {
		l.fail(n, hint, "%s: %s is more than 100%%", path, n.Value)
		return 0, false
	}
	return p, true
}

// ratio reads max_p95_ratio: a finite number >= 1.
func (l *loader) ratio(n *yaml.Node, path string) (float64, bool) {
	const hint = "the canary's p95 latency over the stable cohort's, at least 1; e.g. 1.5 lets the canary be half as slow again"
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			if _, err := strconv.ParseFloat(n.Value, 64); err == nil {
				l.fail(n, "remove the quotes", "%s: expected a number, got %s", path, describe(n))
				return 0, false
			}
		}
		l.fail(n, hint, "%s: expected a number, got %s", path, describe(n))
		return 0, false
	}
	var r float64
	if err := n.Decode(&r); err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
		l.fail(n, hint, "%s: invalid number %s", path, n.Value)
		return 0, false
	}
	if r < 1 {
		l.fail(n, hint, "%s: %s must be at least 1", path, n.Value)
		return 0, false
	}
	return r, true
}
