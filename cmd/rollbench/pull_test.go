package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// -configs pull is a configuration of its own: it asks for no
// REPLICASxPARALLELISM roll, so no other part runs beside it.
func TestParsePullConfig(t *testing.T) {
	o, err := parseFlags([]string{"-configs", "pull", "-rounds", "3"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.pull || len(o.configs) != 0 || len(o.fleets) != 0 || o.cohorts {
		t.Fatalf("-configs pull: pull %v, configs %v, fleets %v, cohorts %v", o.pull, o.configs, o.fleets, o.cohorts)
	}
	o, err = parseFlags([]string{"-configs", "3x1,pull"}, io.Discard)
	if err != nil || !o.pull || len(o.configs) != 1 {
		t.Fatalf("-configs 3x1,pull: %+v, %v", o, err)
	}
}

// The pull table's ratio is of the rounds where both tools rolled, each
// against its own round's limit; a failed trial is counted, not timed.
func TestPullMarkdownRatios(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	r := &results{pull: &pullResult{size: 30_400_000, fails: map[string]int{"rollcall": 1},
		rounds: []map[string]time.Duration{
			{"rollcall": s(6), "limit": s(5)},   // 1.20
			{"rollcall": s(10), "limit": s(8)},  // 1.25, though slower in seconds
			{"limit": s(4)},                     // rollcall failed: no ratio
			{"rollcall": s(5.5), "limit": s(5)}, // 1.10
		},
		pullOnly: []time.Duration{s(1), s(0.5), s(0.7), s(0.9)}}}
	var b strings.Builder
	r.pullMarkdown(&b)
	row := strings.Split(b.String(), "\n")[2]
	for _, want := range []string{"30.4 MB image", "6.00 s (5.50–10.00 s) · 1 failed", "1.20 (1.10–1.25) |", "0.80 s (0.50–1.00 s)"} {
		if !strings.Contains(row, want) {
			t.Errorf("the row %q lacks %q", row, want)
		}
	}
}

// With compose installed, the pull table gains compose's columns: to up's
// exit, to healthy, and its ratio to the limit, each round against its own
// limit; without, the table says it is not installed.
func TestPullMarkdownCompose(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	r := &results{pull: &pullResult{size: 30_400_000, fails: map[string]int{},
		rounds: []map[string]time.Duration{
			{"rollcall": s(6), "limit": s(5), "compose": s(10)}, // compose 2.00
			{"rollcall": s(4), "limit": s(4), "compose": s(6)},  // 1.50
			{"rollcall": s(5), "limit": s(4)},                   // compose failed
		},
		pullOnly: []time.Duration{s(1), s(1), s(1)}, composeHealthy: []time.Duration{s(11), s(7)},
		compose: []string{"docker-compose"}, composeVersion: "docker-compose version 1.29.2"}}
	var b strings.Builder
	r.pullMarkdown(&b)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[0], "`compose pull && compose up -d`") || strings.Count(lines[1], "---") != strings.Count(lines[0], "|")-1 {
		t.Errorf("head %q / %q", lines[0], lines[1])
	}
	for _, want := range []string{"| 8.00 s (6.00–10.00 s) |", "| 9.00 s (7.00–11.00 s) |", "| 1.75 (1.50–2.00) |"} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("the row %q lacks %q", lines[2], want)
		}
	}
	if !strings.Contains(b.String(), "compose / limit 2.00, 1.50, —.") {
		t.Errorf("no per-round compose ratios in:\n%s", b.String())
	}
	r.pull.compose = nil
	b.Reset()
	r.pullMarkdown(&b)
	if strings.Contains(strings.Split(b.String(), "\n")[0], "compose") || !strings.Contains(b.String(), "nor `docker-compose` is installed") {
		t.Errorf("without compose:\n%s", b.String())
	}
}

func TestParsePullFleet(t *testing.T) {
	for in, want := range map[string]int{"pullfleet3": 3, "pullfleet10": 10, "pullfleet1": 0, "pullfleet11": 0, "pullfleet": 0, "pullfleetx": 0} {
		got, ok := parsePullFleet(in)
		if got != want || ok != (want > 0) {
			t.Errorf("parsePullFleet(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	o, err := parseFlags([]string{"-configs", "pullfleet3", "-rounds", "2"}, io.Discard)
	if err != nil || o.pullFleet != 3 || len(o.configs) != 0 || o.pull {
		t.Fatalf("-configs pullfleet3: %+v, %v", o, err)
	}
	if _, err := parseFlags([]string{"-configs", "pullfleet1"}, io.Discard); err == nil {
		t.Error("-configs pullfleet1: no error")
	}
}

// The pull of several hosts: each row's ratio is N hosts ÷ 1 host of the
// same round, and rollcall ÷ docker pull is of the pull phase.
func TestPullFleetMarkdownRatios(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	x := func(phase float64) pullFleetTimes {
		return pullFleetTimes{total: s(10 * phase), pulled: s(2 * phase), phase: s(phase), perHost: []time.Duration{s(phase / 2), s(phase)}}
	}
	r := &results{fleetEngines: "20.10", pullFleet: &pullFleetResult{hosts: 3, size: 30_400_000, fails: map[string]int{"rollcall/3": 1},
		rounds: []map[string]pullFleetTimes{
			{"rollcall/1": x(1), "rollcall/3": x(1.2), "docker/1": x(0.5), "docker/3": x(0.8)},
			{"rollcall/1": x(2), "rollcall/3": x(2.8), "docker/1": x(1), "docker/3": x(1)},
			{"rollcall/1": x(1), "docker/1": x(1), "docker/3": x(2)},
		}}}
	var b strings.Builder
	r.pullFleetMarkdown(&b)
	out := b.String()
	for _, want := range []string{
		"| rollcall `apply`: pull phase (first registry request → last host pulled) | 1.00 s (1.00–2.00 s) | 2.00 s (1.20–2.80 s) · 1 failed | 1.30 (1.20–1.40) |",
		"| `docker pull`: pull phase (first registry request → last host pulled) | 1.00 s (0.50–1.00 s) | 1.00 s (0.80–2.00 s) | 1.60 (1.00–2.00) |",
		"rollcall ÷ `docker pull`, pull phase: 1 host 2.00 (1.00–2.00), 3 hosts at once 2.15 (1.50–2.80).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// -before goes with the tool before, and each with the other only; the
// roll table then has before's column, its ratio to the limit, rollcall's
// to before, and each round's ratios.
func TestBeforeTree(t *testing.T) {
	for _, args := range [][]string{{"-tools", "rollcall,before,limit"}, {"-before", "/tmp/x", "-tools", "rollcall,limit"}} {
		if _, err := parseFlags(append(args, "-parts", "roll"), io.Discard); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
	o, err := parseFlags([]string{"-before", "/tmp/x", "-tools", "rollcall,before,limit", "-parts", "roll", "-configs", "10x10"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	c := rollConfig{10, 10}
	r := &results{beforeTree: "/tmp/x (commit f2bc6bb)", rolls: map[rollConfig]map[string][]time.Duration{c: {"rollcall": {s(6), s(8)}, "before": {s(5), s(8)}, "limit": {s(5), s(4)}}},
		rollRound: map[rollConfig][]map[string]time.Duration{c: {{"rollcall": s(6), "before": s(5), "limit": s(5)}, {"rollcall": s(8), "before": s(8), "limit": s(4)}}},
		rollFails: map[rollConfig]map[string]int{c: {}},
		rollCPU:   map[rollConfig]map[string][]time.Duration{c: {"before": {s(0.3), s(0.5)}}}}
	out := r.markdown(o)
	for _, want := range []string{"| rollcall / limit | before / limit | rollcall / before |", "| 1.60 (1.20–2.00) | 1.50 (1.00–2.00) | 1.10 (1.00–1.20) |",
		"- 10 replicas, parallelism 10, rollcall / before: 1.20, 1.00", "before: rollcall built from /tmp/x (commit f2bc6bb)",
		"- 10 replicas, parallelism 10, CPU of before's timed `apply` process (user+system): 400 ms (300–500 ms)"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}
