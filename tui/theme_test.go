package tui

import (
	"image/color"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/theme"
)

// TestThemesDifferOnlyInColour: dark, light and mono draw the same text;
// they differ only in styling, so no status is carried by colour alone.
// Mono sets no colour at all.
func TestThemesDifferOnlyInColour(t *testing.T) {
	for _, tc := range []struct {
		name string
		w, h int
	}{{"80x24", 80, 24}, {"120x40", 120, 40}} {
		for _, f := range []struct {
			name string
			snap func() tea.Msg
		}{
			{"midroll", func() tea.Msg { return snapshotMsg{snap: midRoll(), ok: true} }},
			{"paused", func() tea.Msg { return snapshotMsg{snap: paused(), ok: true} }},
			{"emergency", func() tea.Msg { return snapshotMsg{snap: emergency(), ok: true} }},
			{"downtime", func() tea.Msg { return snapshotMsg{snap: downtime(), ok: true} }},
		} {
			screens := map[theme.Name]string{}
			for _, th := range []theme.Name{theme.Dark, theme.Light, theme.Mono} {
				m := New(Options{Theme: th})
				m, _ = update(m, tea.WindowSizeMsg{Width: tc.w, Height: tc.h})
				m, _ = update(m, f.snap())
				screens[th] = m.View().Content
			}
			dark := ansi.Strip(screens[theme.Dark])
			for _, th := range []theme.Name{theme.Light, theme.Mono} {
				if got := ansi.Strip(screens[th]); got != dark {
					t.Errorf("%s %s: %s draws other text than dark:\n%s\n---\n%s", f.name, tc.name, th, got, dark)
				}
			}
			if screens[theme.Light] == screens[theme.Dark] {
				t.Errorf("%s %s: light and dark are styled the same", f.name, tc.name)
			}
			if s := screens[theme.Mono]; strings.Contains(s, "38;2;") || strings.Contains(s, "48;2;") {
				t.Errorf("%s %s: mono has colour", f.name, tc.name)
			}
		}
	}
}

// TestBackgroundPicksTheme: with theme auto the console asks the terminal
// for its background at start and takes light or dark by its answer.
func TestBackgroundPicksTheme(t *testing.T) {
	for _, tc := range []struct {
		bg   color.Color
		want theme.Name
	}{
		{color.RGBA{R: 0x10, G: 0x10, B: 0x10, A: 0xff}, theme.Dark},
		{color.RGBA{R: 0xf8, G: 0xf8, B: 0xf0, A: 0xff}, theme.Light},
	} {
		m := New(Options{Theme: theme.Auto})
		if !m.autoTheme || m.Init() == nil {
			t.Fatal("auto theme does not ask the terminal")
		}
		m, _ = update(m, tea.BackgroundColorMsg{Color: tc.bg})
		if m.st.Name != tc.want {
			t.Errorf("background %v: theme %s, want %s", tc.bg, m.st.Name, tc.want)
		}
		// A later answer (the terminal's theme switching) does not flip it.
		m, _ = update(m, tea.BackgroundColorMsg{Color: color.White})
		if m.st.Name != tc.want {
			t.Errorf("a second answer changed the theme to %s", m.st.Name)
		}
	}
	if m := New(Options{Theme: theme.Mono}); m.autoTheme || m.Init() != nil {
		t.Error("an explicit theme asks the terminal anyway")
	}
}

// TestResolveTheme: NO_COLOR makes auto mono; an explicit colour theme
// wins over it and keeps NO_COLOR from the renderer.
func TestResolveTheme(t *testing.T) {
	env := []string{"TERM=xterm", "NO_COLOR=1"}
	for _, tc := range []struct {
		in      theme.Name
		environ []string
		want    theme.Name
		noColor bool // NO_COLOR left in the program's environment
	}{
		{theme.Auto, env, theme.Mono, true},
		{"", env, theme.Mono, true},
		{theme.Auto, []string{"TERM=xterm"}, theme.Auto, false},
		{theme.Auto, []string{"NO_COLOR="}, theme.Auto, true},
		{theme.Dark, env, theme.Dark, false},
		{theme.Light, env, theme.Light, false},
		{theme.Mono, env, theme.Mono, true},
	} {
		got, environ := resolveTheme(tc.in, tc.environ)
		hasNoColor := slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
		if got != tc.want || hasNoColor != tc.noColor {
			t.Errorf("resolveTheme(%q, %q) = %q, %q", tc.in, tc.environ, got, environ)
		}
	}
	if !slices.Equal(env, []string{"TERM=xterm", "NO_COLOR=1"}) {
		t.Error("resolveTheme changed its argument")
	}
}

// TestSessionEndEndsTheConsole: when the session's snapshots end, or it
// cannot start, the program quits.
func TestSessionEndEndsTheConsole(t *testing.T) {
	m := sized(theme.Mono, 80, 24, converged())
	for _, msg := range []tea.Msg{snapshotMsg{ok: false}, sessionEndedMsg{}} {
		_, cmd := update(m, msg)
		if msgs := run(cmd); len(msgs) != 1 || msgs[0] != (tea.QuitMsg{}) {
			t.Errorf("%T gave %#v, want quit", msg, msgs)
		}
	}
}
