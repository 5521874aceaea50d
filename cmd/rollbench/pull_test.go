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
