package main

import (
	"slices"
	"testing"
)

func TestParseFleetConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fleetConfig
		ok   bool
	}{
		{"fleet3x3", fleetConfig{3, 3, 1}, true},
		{"fleet4x6x2", fleetConfig{4, 6, 2}, true},
		{"fleet1x3", fleetConfig{}, false},   // one host is the engine's roll
		{"fleet3x2x3", fleetConfig{}, false}, // parallelism above replicas
		{"fleet3", fleetConfig{}, false},
		{"fleet3x3x1x1", fleetConfig{}, false},
		{"fleetAx3", fleetConfig{}, false},
		{"3x3", fleetConfig{}, false},
	} {
		got, ok := parseFleetConfig(tc.in)
		if ok != tc.ok || got != tc.want {
			t.Errorf("parseFleetConfig(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// The limit runs in the waves rollcall's fleet makes of each policy (read
// back through spec and fleet.Waves), beside every host at once and one
// host after another, each shape once.
func TestFleetTrialsWaves(t *testing.T) {
	hosts := []string{"e0", "e1", "e2"}
	trials, err := fleetTrials(fleetConfig{3, 3, 1}, hosts, []string{"rollcall", "limit"})
	if err != nil {
		t.Fatal(err)
	}
	var rollcall, limits []string
	for _, tr := range trials {
		w := wavesString(hosts, tr.waves)
		if tr.limit {
			limits = append(limits, w)
		} else {
			rollcall = append(rollcall, tr.policy+" "+w)
		}
	}
	wantRollcall := []string{"`batch: 100%` e0 → e1+e2", "`canary: [e0, e1, e2]` e0+e1+e2", "`batch: 1`, `wait: 0s` e0 → e1 → e2"}
	if !slices.Equal(rollcall, wantRollcall) {
		t.Errorf("rollcall trials %q, want %q", rollcall, wantRollcall)
	}
	wantLimits := []string{"e0+e1+e2", "e0 → e1 → e2", "e0 → e1+e2"}
	if !slices.Equal(limits, wantLimits) {
		t.Errorf("limit trials %q, want %q", limits, wantLimits)
	}
}
