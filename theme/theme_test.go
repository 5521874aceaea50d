package theme

import (
	"strings"
	"testing"
)

// TestChoose: auto follows NO_COLOR, then the background; an explicit
// theme wins over both.
func TestChoose(t *testing.T) {
	dark := func() bool { return true }
	light := func() bool { return false }
	for _, tc := range []struct {
		name    Name
		noColor bool
		bg      func() bool
		want    Name
	}{
		{Auto, false, dark, Dark},
		{Auto, false, light, Light},
		{Auto, false, nil, Dark},
		{Auto, true, dark, Mono},
		{Dark, true, light, Dark},
		{Light, false, dark, Light},
		{Mono, false, dark, Mono},
	} {
		if got := Choose(tc.name, tc.noColor, tc.bg); got != tc.want {
			t.Errorf("Choose(%s, noColor=%v) = %s, want %s", tc.name, tc.noColor, got, tc.want)
		}
	}
}

// TestChooseAutoUnderNoColorDoesNotAsk: the background query (a terminal
// round trip) is skipped when it cannot matter.
func TestChooseAutoUnderNoColorDoesNotAsk(t *testing.T) {
	asked := false
	Choose(Auto, true, func() bool { asked = true; return true })
	Choose(Dark, false, func() bool { asked = true; return true })
	if asked {
		t.Error("asked the terminal for its background without need")
	}
}

func TestParseName(t *testing.T) {
	for _, n := range Names {
		if got, err := ParseName(string(n)); err != nil || got != n {
			t.Errorf("ParseName(%q) = %q, %v", n, got, err)
		}
	}
	if _, err := ParseName("solarized"); err == nil || !strings.Contains(err.Error(), "auto, dark, light, mono") {
		t.Errorf("ParseName(solarized) error %v", err)
	}
}

// TestMonoHasNoColour: mono styles set no colour at all, only attributes;
// the colour themes colour every action.
func TestMonoHasNoColour(t *testing.T) {
	mono := New(Mono)
	for _, st := range []string{"start", "roll", "restart", "update", "stop", "wait"} {
		if s := mono.Action(st).Render(st); strings.Contains(s, "38;") {
			t.Errorf("mono %s has a colour: %q", st, s)
		}
		for _, n := range []Name{Dark, Light} {
			if New(n).Action(st).GetForeground() == nil {
				t.Errorf("%s: action %s has no colour", n, st)
			}
		}
	}
	if New(Auto).Name != Mono {
		t.Error("New(Auto) is not mono: Auto must be resolved with Choose first")
	}
}
