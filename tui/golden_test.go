package tui

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
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
		{name: "proxied", theme: theme.Dark, snap: proxied()},
		{name: "proxy_down", theme: theme.Dark, snap: proxyDown()},
		{name: "pulling", theme: theme.Dark, snap: pulling()},
		{name: "pull_failed", theme: theme.Dark, snap: pullFailed()},
		{name: "pull_failed_detail", theme: theme.Dark, snap: pullFailed(), keys: []string{"tab"}},
		{name: "pulling_detail", theme: theme.Dark, snap: pulling(), keys: []string{"tab"}},
		{name: "pulling_mono", theme: theme.Mono, snap: pulling()},
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
	s.SourceErr = &source.StaleError{Err: errors.New("GET https://cp.example/desired.yaml: 500 Internal Server Error"),
		LastGood: s.At.Add(-95 * time.Second)}
	screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
	for _, want := range []string{"500 Internal Server Error", "the last good desired state, 1m old, stays in force"} {
		if !strings.Contains(screen, want) {
			t.Fatalf("header lacks %q:\n%s", want, screen)
		}
	}
}

// The proxy in front: per container, the slots pane says whether it routes
// there and its requests in flight (shorter in 80 columns), the detail
// pane says it whole, and the header says when the proxy does not answer.
// A snapshot without a proxy drops the column again.
func TestProxyShowsWhatItRoutes(t *testing.T) {
	tests := []struct {
		name   string
		snap   session.Snapshot
		w, h   int
		want   []string
		absent []string
	}{
		// (the container names first: with a crashed worker's long name the
		// PROXY column takes its short form at 120 too; issue 26 row 5)
		{"wide slots pane", proxied(), 120, 40,
			[]string{"PROXY", "worker-0-3333cccc", "routed · 3", "routed · 1", "not routed", "proxy: routed · 3 in flight"}, []string{"not answering"}},
		{"80 columns", proxied(), 80, 24,
			[]string{"PROXY", "routed · 3", "not routed", "routed · 1"}, nil},
		{"the old container's refusals in the detail pane", proxied(), 120, 40,
			[]string{"proxy: routed · 0 in flight · 2 recent fail"}, nil},
		{"not answering", proxyDown(), 80, 24,
			[]string{"✗ proxy not answering: dial tcp 127.0.0.1:2019: connect: connection refused"}, []string{"routed"}},
		{"no proxy, no column", midRoll(), 120, 40, nil, []string{"PROXY", "routed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			screen := ansi.Strip(sized(theme.Mono, tc.w, tc.h, tc.snap).View().Content)
			for _, want := range tc.want {
				if !strings.Contains(screen, want) {
					t.Errorf("screen lacks %q:\n%s", want, screen)
				}
			}
			for _, no := range tc.absent {
				if strings.Contains(screen, no) {
					t.Errorf("screen has %q:\n%s", no, screen)
				}
			}
		})
	}

	m := sized(theme.Mono, 120, 40, proxied())
	next := midRoll()
	next.Seq = proxied().Seq + 1
	m, _ = update(m, snapshotMsg{snap: next, ok: true})
	if screen := ansi.Strip(m.View().Content); strings.Contains(screen, "PROXY") {
		t.Errorf("the proxy column stays after the proxy left the desired state:\n%s", screen)
	}
}
