package tui

import (
	"strings"
	"testing"
	"time"

	"charm.land/bubbles/v2/key"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// TestCrashedReadsDownInBothPanes (issue 26 row 6): a crashed container
// shows one figure with one word: "down 5s" in its slot's row (under UP,
// where a running one shows how long it is up) and in the detail pane.
func TestCrashedReadsDownInBothPanes(t *testing.T) {
	s := midRoll()
	c := newConsole(t, s)
	c.m.slots.cursor = len(c.m.slots.rows) - 1 // the worker
	c.m.slots.clamp(&c.m.board)
	screen := c.screen()
	row := lineWith(screen, "worker-0-3333cccc")
	if !strings.Contains(row, "down 5s") {
		t.Errorf("the crashed worker's row does not say down 5s: %q", row)
	}
	if strings.Count(screen, "down 5s") < 2 {
		t.Errorf("the slot's row and the detail pane do not both say down 5s:\n%s", screen)
	}
	m := sized(theme.Mono, 80, 24, s)
	if row := lineWith(ansi.Strip(m.View().Content), "worker-0-3333cccc"); !strings.Contains(row, "down") {
		t.Errorf("at 80 columns the crashed worker's row does not say down: %q", row)
	}
}

// TestUnreachableHostSaysSo (issue 26 row 6): a host whose engine does
// not answer (the typed Connected) says so in its panes, not that no
// desired state is loaded.
func TestUnreachableHostSaysSo(t *testing.T) {
	s := fleetMidRoll()
	e3 := &s.Hosts[2].Session
	*e3 = session.Snapshot{Seq: 3, At: t0, Source: "rollcall.yaml", Prefix: pfx, Mode: session.ModeStep,
		EngineErr: "dial ssh://deploy@edge-3: connection refused", Steps: map[string]session.StepStatus{}}
	e3.Engine.Endpoint = "ssh://deploy@edge-3"
	m := fsized(theme.Mono, 120, 40, s)
	m = fpress(fpress(m, "]"), "]")
	screen := screenOf(m)
	if !strings.Contains(screen, "edge-3") || strings.Contains(screen, "no desired state loaded") {
		t.Errorf("the unreachable host's panes say no desired state is loaded:\n%s", screen)
	}
	if !strings.Contains(screen, "engine does not answer") {
		t.Errorf("the unreachable host's panes do not say its engine does not answer:\n%s", screen)
	}
}

// TestHelpTellsUndoFromRollBack (issue 26 row 6): r and u do different
// things (r: hold the new spec and stop its new containers at once; u:
// pin the previous revision and roll it in); the help says which.
func TestHelpTellsUndoFromRollBack(t *testing.T) {
	k := DefaultKeyMap()
	r, u := k.Rollback.Help().Desc, k.Pin.Help().Desc
	if r == u || strings.Contains(u, "undo") || !strings.Contains(u, "previous") || !strings.Contains(r, "abort") {
		t.Errorf("help: r %q, u %q", r, u)
	}
	var all []key.Binding
	for _, col := range k.FullHelp() {
		all = append(all, col...)
	}
	if !containsBinding(all, "r") || !containsBinding(all, "u") {
		t.Error("the full help lacks r or u")
	}
}

func containsBinding(bs []key.Binding, k string) bool {
	for _, b := range bs {
		for _, kk := range b.Keys() {
			if kk == k {
				return true
			}
		}
	}
	return false
}

// TestRollBackRefusesAWorkloadNoLongerDesired (issue 26 row 6): r on a
// workload that is no longer desired asks nothing and says why.
func TestRollBackRefusesAWorkloadNoLongerDesired(t *testing.T) {
	s := staged()
	extra := ctr("old", 0, "old:v1", "sha256:4444", "4444dddd0000", "", time.Hour)
	s.Slots = append([]session.SlotView{{Workload: "old", Slot: 0,
		Containers: []session.ContainerView{view(extra, reconcile.RelExtra, true)}}}, s.Slots...)
	c := newConsole(t, s)
	if s := c.m.slots.selected(&c.m.board); s == nil || s.workload != "old" {
		t.Fatalf("could not select old's slot:\n%s", c.screen())
	}
	for _, k := range []string{"r", "u", "tab", "r", "u"} { // from the slot, then from the plan's stop step
		if k == "tab" {
			c.keys("tab")
			continue
		}
		c.keys(k)
		if c.m.dialog != nil {
			t.Errorf("%s offers to act on a workload no longer desired:\n%s", k, c.screen())
			c.keys("esc")
		} else if !strings.Contains(c.screen(), "no longer desired") {
			t.Errorf("%s does not say old is no longer desired:\n%s", k, c.screen())
		}
	}
	if got := c.rec.take(); len(got) != 0 {
		t.Errorf("sent %#v", got)
	}
}
