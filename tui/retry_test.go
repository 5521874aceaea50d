package tui

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/session"
)

// heldMidRoll is midRoll with web's spec on hold (a rollback).
func heldMidRoll() session.Snapshot {
	s := midRoll()
	s.Holds = map[string][]string{"web": {hashV2}}
	return s
}

// TestRetryKey (§6, §8): t asks to lift the hold of the selected
// workload, defaulting to No, and sends Retry on a yes; on a workload with
// nothing on hold it says so and sends nothing.
func TestRetryKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  session.Snapshot
		keys  []string
		want  []session.Intent
		flash string
	}{
		{"t y lifts the selected workload's hold", heldMidRoll(), []string{"t", "y"}, []session.Intent{session.Retry{Workload: "web"}}, ""},
		{"t enter: the answer starts on No", heldMidRoll(), []string{"t", "enter"}, nil, "web stays on hold"},
		{"t n declines", heldMidRoll(), []string{"t", "n"}, nil, "web stays on hold"},
		{"t right enter says yes", heldMidRoll(), []string{"t", "right", "enter"}, []session.Intent{session.Retry{Workload: "web"}}, ""},
		{"t on a workload with no hold asks nothing", heldMidRoll(), []string{"G", "t"}, nil, "worker has no spec on hold"},
		{"t with nothing on hold asks nothing", midRoll(), []string{"t"}, nil, "web has no spec on hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, tc.snap).keys(tc.keys...)
			if got := c.rec.take(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys %q sent %#v, want %#v", tc.keys, got, tc.want)
			}
			if tc.want == nil && c.m.dialog != nil {
				t.Errorf("keys %q left a dialog open: %q", tc.keys, c.m.dialog.title)
			}
			if tc.flash != "" && !strings.Contains(c.screen(), tc.flash) {
				t.Errorf("keys %q: no %q on screen:\n%s", tc.keys, tc.flash, c.screen())
			}
		})
	}
}

// TestRetryDialogNamesTheSpec: the question names the workload and the
// spec it lets start again.
func TestRetryDialogNamesTheSpec(t *testing.T) {
	c := newConsole(t, heldMidRoll()).keys("t")
	if c.m.dialog == nil {
		t.Fatal("t opened no dialog")
	}
	if !strings.Contains(c.m.dialog.title, "Retry web") || !strings.Contains(c.m.dialog.body, hashV2[:8]) {
		t.Errorf("dialog %q: %q", c.m.dialog.title, c.m.dialog.body)
	}
}

// TestRetryKeyInWatchModeAndHelp: t is a mutating key: disabled in watch
// mode (read-only, nothing sent, no dialog), offered by the full help in
// step mode.
func TestRetryKeyInWatchModeAndHelp(t *testing.T) {
	w := watching()
	w.Holds = map[string][]string{"web": {hashV2}}
	c := newConsole(t, w).keys("t")
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("watch: t sent %#v", got)
	}
	if c.m.dialog != nil {
		t.Errorf("watch: t opened a dialog %q", c.m.dialog.title)
	}
	if !strings.Contains(c.screen(), "read-only: watch mode") {
		t.Errorf("watch: t gave no read-only flash:\n%s", c.screen())
	}
	c = newConsole(t, w).keys("?")
	if screen := c.screen(); strings.Contains(screen[strings.LastIndex(screen, "↑↓/kj"):], "retry") {
		t.Errorf("watch: full help offers retry:\n%s", screen)
	}

	c = newConsole(t, heldMidRoll()).keys("?")
	if !strings.Contains(c.screen(), "t retry") {
		t.Errorf("step: full help lacks t:\n%s", c.screen())
	}
}
