package tui

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/session"
)

// quits reports whether msgs hold the program's end.
func quitIn(msgs []tea.Msg) bool {
	return slices.ContainsFunc(msgs, func(m tea.Msg) bool { _, ok := m.(tea.QuitMsg); return ok })
}

// clipboardIn reports whether msgs copy anything to the clipboard.
func clipboardIn(msgs []tea.Msg) bool {
	return slices.ContainsFunc(msgs, func(m tea.Msg) bool { return strings.Contains(fmt.Sprintf("%T", m), "Clipboard") })
}

// TestQuitAfterStepDrawsTheLastFrame (issue 26 row 3): q mid-step, y (quit
// after the step), then the snapshot where the step ended: the console
// quits, and the frame drawn on the way out (the program draws the last
// model once more) does not panic on a running line whose step is gone.
func TestQuitAfterStepDrawsTheLastFrame(t *testing.T) {
	// The running restart has left the plan (as a start has once the plan
	// is made again mid-step): the plan pane draws it on a line of its own.
	gone := midRoll()
	gone.Plan.Workloads = gone.Plan.Workloads[:1]
	m, _ := press(sized("mono", 120, 40, gone), "q")
	m, cmd := press(m, "y")
	if quitIn(run(cmd)) || !m.quitting {
		t.Fatal("y quit before the step ended")
	}
	done := gone
	done.Running = nil
	m, cmd = update(m, snapshotMsg{snap: done, ok: true})
	screen := m.View().Content // panicked: the plan's running line outlived the step
	if !quitIn(run(cmd)) {
		t.Error("the console did not quit once the step ended")
	}
	if strings.Contains(screen, "restart worker/0") && strings.Contains(screen, "running") {
		t.Errorf("the last frame still shows the step running:\n%s", screen)
	}
}

// TestDialogNeverClosesOnItsOwn (issue 26 row 3): a snapshot never closes
// an open dialog, and a key meant for it never reaches another binding.
// Before, the step's end closed q's question and the y typed for it
// copied a container ID (OSC 52).
func TestDialogNeverClosesOnItsOwn(t *testing.T) {
	done := midRoll()
	done.Running = nil
	watch := midRoll()
	watch.Mode = session.ModeWatch
	next := downtime()
	q := *next.Confirm
	q.Prompt = "web/0: another question"
	next.Confirm = &q
	cases := []struct {
		name   string
		start  session.Snapshot
		keys   []string
		then   session.Snapshot
		wantUp string // what the dialog says once its question changed
	}{
		{"the step ends under q's question", midRoll(), []string{"q"}, done, "The step ended"},
		{"watch mode under r's question", midRoll(), []string{"r"}, watch, "no longer applies"},
		{"the session's question goes away", downtime(), nil, converged(), "no longer applies"},
		{"the session asks another question", downtime(), nil, next, "no longer applies"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsole(t, tc.start).keys(tc.keys...)
			if c.m.dialog == nil {
				t.Fatalf("no dialog open:\n%s", c.screen())
			}
			c.snapshot(tc.then)
			if c.m.dialog == nil {
				t.Fatalf("the dialog closed on its own:\n%s", c.screen())
			}
			if !strings.Contains(c.screen(), tc.wantUp) {
				t.Errorf("the dialog does not say %q:\n%s", tc.wantUp, c.screen())
			}
			var cmd tea.Cmd
			c.m, cmd = press(c.m, "y")
			msgs := run(cmd)
			if clipboardIn(msgs) || strings.Contains(c.screen(), "copied") {
				t.Errorf("y for the dialog copied a container ID:\n%s", c.screen())
			}
			got := c.rec.take()
			if tc.name == "the step ends under q's question" {
				if !quitIn(msgs) {
					t.Error("y on q's question did not quit once the step had ended")
				}
				return
			}
			if len(got) != 0 {
				t.Errorf("y on a question that no longer applies sent %#v", got)
			}
			if c.m.dialog != nil && c.m.dialog.stale != "" {
				t.Errorf("y did not dismiss the stale dialog:\n%s", c.screen())
			}
		})
	}
}
