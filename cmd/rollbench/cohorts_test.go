package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

// The Caddy of `dynamic rollcall` alone is examples/Caddyfile less the
// handler's directive and its order option, every other line the same.
func TestWithoutCohortsOfTheExampleCaddyfile(t *testing.T) {
	b, err := os.ReadFile("../../examples/Caddyfile")
	if err != nil {
		t.Fatal(err)
	}
	in := string(b)
	out, err := withoutCohorts(in)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.SplitAfter(in, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "rollcall_cohorts" || len(f) > 1 && f[0] == "order" && f[1] == "rollcall_cohorts" {
			continue
		}
		kept = append(kept, line)
	}
	if want := strings.Join(kept, ""); out != want {
		t.Errorf("withoutCohorts changed more than the two lines:\n%s", out)
	}
	if got, want := strings.Count(in, "\n")-strings.Count(out, "\n"), 2; got != want {
		t.Errorf("withoutCohorts dropped %d lines, want %d", got, want)
	}
	if !strings.Contains(out, "dynamic rollcall {") {
		t.Errorf("withoutCohorts lost the upstream source:\n%s", out)
	}
}

func TestWithoutCohortsWantsOneOfEach(t *testing.T) {
	for name, in := range map[string]string{
		"no directive":    "{\n\torder rollcall_cohorts before reverse_proxy\n}\n:8080 {\n\treverse_proxy\n}\n",
		"no order":        ":8080 {\n\trollcall_cohorts\n\treverse_proxy\n}\n",
		"two directives":  "{\n\torder rollcall_cohorts before reverse_proxy\n}\n:8080 {\n\trollcall_cohorts\n}\n:8081 {\n\trollcall_cohorts\n}\n",
		"neither of them": ":8080 {\n\treverse_proxy\n}\n",
	} {
		if out, err := withoutCohorts(in); err == nil {
			t.Errorf("%s: withoutCohorts = %q, nil; want an error: the bench would not compare what it says", name, out)
		}
	}
}

func TestQuantileNearestRank(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Millisecond)
		}
		return ds
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.95, 7 * time.Millisecond},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond},
		{ms(hundred...), 0.5, 50 * time.Millisecond},
		{ms(hundred...), 0.95, 95 * time.Millisecond},
		{ms(hundred...), 1, 100 * time.Millisecond},
		{ms(hundred...), 0, time.Millisecond},
	} {
		if got := quantile(tc.in, tc.q); got != tc.want {
			t.Errorf("quantile(%d values, %v) = %s, want %s", len(tc.in), tc.q, got, tc.want)
		}
	}
}
