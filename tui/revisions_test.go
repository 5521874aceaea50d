package tui

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/session"
)

// pinnedMidRoll is midRoll with web pinned to its revision 1 by alice.
func pinnedMidRoll() session.Snapshot {
	s := midRoll()
	s.Pins = []session.PinView{{PinRecord: session.PinRecord{Workload: "web",
		Revision: session.Revision{Workload: "web", Number: 1, Hash: hashV2, Image: "web:v1"},
		Against:  hashV2, By: "alice", Since: time.Date(2026, 5, 1, 9, 30, 0, 0, time.Local)}, Standing: true}}
	return s
}

// TestPinKey (§12, §8): u asks to pin the selected workload to its
// previous revision, defaulting to No, and sends Pin on a yes; t on a
// pinned workload asks to lift the pin; the header shows the pin, who set
// it and when; watch mode sends nothing; the full help offers u.
func TestPinKey(t *testing.T) {
	for _, tc := range []struct {
		name  string
		snap  session.Snapshot
		keys  []string
		want  []session.Intent
		flash string
	}{
		{"u y pins the selected workload", midRoll(), []string{"u", "y"}, []session.Intent{session.Pin{Workload: "web"}}, ""},
		{"u enter: the answer starts on No", midRoll(), []string{"u", "enter"}, nil, "web is not pinned"},
		{"u n declines", midRoll(), []string{"u", "n"}, nil, "web is not pinned"},
		{"t y lifts the pin", pinnedMidRoll(), []string{"t", "y"}, []session.Intent{session.Retry{Workload: "web"}}, ""},
		{"t n keeps the pin", pinnedMidRoll(), []string{"t", "n"}, nil, "web stays pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, tc.snap).keys(tc.keys...)
			if got := c.rec.take(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("keys %q sent %#v, want %#v", tc.keys, got, tc.want)
			}
			if tc.flash != "" && !strings.Contains(c.screen(), tc.flash) {
				t.Errorf("keys %q: no %q on screen:\n%s", tc.keys, tc.flash, c.screen())
			}
		})
	}

	c := newConsole(t, pinnedMidRoll())
	if screen := c.screen(); !strings.Contains(screen, "pinned: web rev 1 by alice 09:30") {
		t.Errorf("the header does not show the pin:\n%s", screen)
	}
	if c = newConsole(t, pinnedMidRoll()).keys("t"); c.m.dialog == nil || !strings.Contains(c.m.dialog.body, "revision 1") {
		t.Errorf("t on a pinned workload: dialog %+v, want one naming the revision", c.m.dialog)
	}

	w := watching()
	c = newConsole(t, w).keys("u")
	if got := c.rec.take(); len(got) != 0 || c.m.dialog != nil {
		t.Errorf("watch: u sent %#v (dialog %v)", got, c.m.dialog != nil)
	}
	if !strings.Contains(c.screen(), "read-only: watch mode") {
		t.Errorf("watch: u gave no read-only flash:\n%s", c.screen())
	}
	if c = newConsole(t, midRoll()).keys("?"); !strings.Contains(c.screen(), "u pin previous") {
		t.Errorf("step: full help lacks u:\n%s", c.screen())
	}
}
