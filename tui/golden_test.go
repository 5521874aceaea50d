package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// TestGolden renders each state of the console at 80×24 and 120×40 (too
// small at sizes below 80×24) and compares it with its golden file. Each
// state is drawn twice: two renders of one state must be identical.
func TestGolden(t *testing.T) {
	sizes := [][2]int{{80, 24}, {120, 40}}
	for _, tc := range []struct {
		name  string
		theme theme.Name
		snap  session.Snapshot
		sizes [][2]int
		keys  []string
	}{
		{name: "converged", theme: theme.Dark, snap: converged()},
		{name: "midroll_step", theme: theme.Dark, snap: midRoll()},
		{name: "paused_health", theme: theme.Dark, snap: paused()},
		{name: "watch", theme: theme.Dark, snap: watching()},
		{name: "too_small", theme: theme.Dark, snap: converged(), sizes: [][2]int{{79, 24}, {120, 23}, {40, 10}}},
		{name: "light", theme: theme.Light, snap: paused()},
		{name: "mono", theme: theme.Mono, snap: midRoll()},
		{name: "emergency_auto", theme: theme.Dark, snap: emergency()},
		{name: "confirm_downtime", theme: theme.Dark, snap: downtime()},
		{name: "trouble", theme: theme.Dark, snap: trouble()},
		{name: "full_help", theme: theme.Dark, snap: midRoll(), keys: []string{"?"}},
		{name: "logs_filtered", theme: theme.Dark, snap: midRoll(), keys: []string{"/", "w", "e", "b", "enter", "j", "l"}},
		{name: "staged_step", theme: theme.Dark, snap: staged()},
		{name: "rolled_back", theme: theme.Light, snap: rolledBack()},
		{name: "reader", theme: theme.Dark, snap: paused(), keys: []string{"i"}},
		{name: "quit_mid_step", theme: theme.Dark, snap: midRoll(), keys: []string{"q"}},
	} {
		ss := tc.sizes
		if ss == nil {
			ss = sizes
		}
		for _, sz := range ss {
			t.Run(fmt.Sprintf("%s_%dx%d", tc.name, sz[0], sz[1]), func(t *testing.T) {
				m := sized(tc.theme, sz[0], sz[1], tc.snap)
				for _, k := range tc.keys {
					m, _ = press(m, k)
				}
				first := m.View().Content
				if second := m.View().Content; first != second {
					t.Fatalf("two renders of one state differ:\n%s\n---\n%s", first, second)
				}
				requireGolden(t, first)
			})
		}
	}
}

// A polled source (a URL) that stops answering well keeps the last good
// state; the header says so, with the age of that state.
func TestHeaderShowsTheAgeOfAStaleSource(t *testing.T) {
	s := converged()
	s.SourceErr = &session.StaleError{Err: errors.New("GET https://cp.example/desired.yaml: 500 Internal Server Error"),
		LastGood: s.At.Add(-95 * time.Second)}
	screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
	for _, want := range []string{"500 Internal Server Error", "the last good desired state, 1m old, stays in force"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("header lacks %q:\n%s", want, screen)
		}
	}
}
