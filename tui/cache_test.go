package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/theme"
)

// TestCachedFramesAreFresh (issue 26 row 19): the parts of the screen kept
// between frames (cache.go) never show anything but what a whole render
// shows: after each key, snapshot, tick and resize, the screen equals
// the one drawn with no cache.
func TestCachedFramesAreFresh(t *testing.T) {
	fresh := func(m Model) string { m.cache = nil; return m.View().Content }
	m := sized(theme.Dark, 120, 40, midRoll())
	check := func(step string) {
		t.Helper()
		if got, want := m.View().Content, fresh(m); got != want {
			t.Fatalf("after %s the cached screen differs from a whole render:\n%s\n---- want\n%s", step, got, want)
		}
	}
	check("the first snapshot")
	steps := []struct {
		name string
		msg  tea.Msg
	}{
		{"tab", keyMsg("tab")}, {"j", keyMsg("j")}, {"j", keyMsg("j")}, {"k", keyMsg("k")},
		{"the clock", clockMsg{due: t0.Add(time.Second), at: t0.Add(time.Second)}},
		{"a canary", snapshotMsg{snap: canaryRunning(t), ok: true}},
		{"the clock", clockMsg{due: t0.Add(3 * time.Second), at: t0.Add(3 * time.Second)}},
		{"/", keyMsg("/")}, {"e", keyMsg("e")}, {"enter", keyMsg("enter")},
		{"esc", keyMsg("esc")},
		{"a downtime question", snapshotMsg{snap: downtime(), ok: true}},
		{"esc", keyMsg("esc")},
		{"c", keyMsg("c")}, {"n", keyMsg("n")},
		{"the roll again", snapshotMsg{snap: midRoll(), ok: true}},
		{"/", keyMsg("/")}, {"w", keyMsg("w")}, {"o", keyMsg("o")}, {"enter", keyMsg("enter")},
		{"tab", keyMsg("tab")}, {"tab", keyMsg("tab")}, {"k", keyMsg("k")},
		{"esc", keyMsg("esc")},
		{"?", keyMsg("?")}, {"?", keyMsg("?")},
		{"a light background", tea.BackgroundColorMsg{}},
		{"80x24", tea.WindowSizeMsg{Width: 80, Height: 24}},
		{"the clock", clockMsg{due: t0.Add(2 * time.Second), at: t0.Add(2 * time.Second)}},
		{"a disconnected engine", snapshotMsg{snap: trouble(), ok: true}},
		{"the clock", clockMsg{due: t0.Add(70 * time.Second), at: t0.Add(70 * time.Second)}},
		{"a canary", snapshotMsg{snap: canaryRunning(t), ok: true}},
		{"the clock", clockMsg{due: t0.Add(75 * time.Second), at: t0.Add(75 * time.Second)}},
		{"a paused session", snapshotMsg{snap: paused(), ok: true}},
		{"p", keyMsg("p")},
		{"120x40", tea.WindowSizeMsg{Width: 120, Height: 40}},
		{"watch mode", snapshotMsg{snap: watching(), ok: true}},
	}
	for _, s := range steps {
		m, _ = update(m, s.msg)
		check(s.name)
	}
}
