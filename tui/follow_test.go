package tui

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
)

// probes is an engine's inspect whose health log grows as the test says,
// counting the calls.
type probes struct {
	mu    sync.Mutex
	log   []docker.HealthResult
	calls int
}

func (p *probes) add(output string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := t0.Add(time.Duration(len(p.log)) * 5 * time.Second)
	p.log = append(p.log, docker.HealthResult{Start: at, End: at.Add(2 * time.Millisecond), Output: output})
}

func (p *probes) inspect(_ context.Context, id string) (docker.ContainerDetail, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	return docker.ContainerDetail{HealthLog: slices.Clone(p.log)}, nil
}

func (p *probes) called() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// feedSnapshot hands the console a snapshot and runs what it asks, as the
// program would.
func (c *console) feedSnapshot(s session.Snapshot) {
	var cmd tea.Cmd
	c.m, cmd = update(c.m, snapshotMsg{snap: s, ok: true})
	c.drive(cmd)
}

// TestReaderProbesMoveWhileOpen: the reader's health probes are read again
// with each snapshot while it is open, so a probe the engine ran since
// shows; one inspect at a time, and none while the engine is gone.
func TestReaderProbesMoveWhileOpen(t *testing.T) {
	p := &probes{}
	p.add("PROBE-ONE ok")
	c := newConsole(t, midRoll(), func(o *Options) { o.Inspect = p.inspect })
	c.keys("i")
	reader := func() string { return ansi.Strip(strings.Join(c.m.readerLines(120), "\n")) }
	if !c.m.reader.open || !strings.Contains(reader(), "PROBE-ONE") {
		t.Fatalf("the reader shows no first probe:\n%s", reader())
	}
	p.add("PROBE-TWO ok")
	next := midRoll()
	next.Seq++
	c.feedSnapshot(next)
	if got := reader(); !strings.Contains(got, "PROBE-TWO") || !strings.Contains(got, "health checks (last 2") {
		t.Fatalf("a new snapshot did not bring the new probe:\n%s", got)
	}

	// one inspect at a time: a snapshot while one is on its way asks none
	calls := p.called()
	next.Seq++
	c.m, _ = update(c.m, snapshotMsg{snap: next, ok: true}) // its inspect not run: on its way
	if !c.m.reader.inflight {
		t.Fatal("no inspect on its way after a snapshot")
	}
	next.Seq++
	var cmd tea.Cmd
	c.m, cmd = update(c.m, snapshotMsg{snap: next, ok: true})
	c.drive(cmd)
	if p.called() != calls {
		t.Errorf("a snapshot asked inspect again while one was on its way (%d calls, want %d)", p.called(), calls)
	}

	// the engine gone: no inspect
	c = newConsole(t, midRoll(), func(o *Options) { o.Inspect = p.inspect })
	c.keys("i")
	calls = p.called()
	gone := midRoll()
	gone.Seq++
	gone.Connected = false
	c.feedSnapshot(gone)
	if p.called() != calls {
		t.Errorf("a snapshot with the engine gone asked inspect (%d calls, want %d)", p.called(), calls)
	}
	// closed: no inspect either
	c.keys("esc")
	next.Seq++
	c.feedSnapshot(next)
	if p.called() != calls {
		t.Errorf("a snapshot with the reader closed asked inspect (%d calls, want %d)", p.called(), calls)
	}
}

// TestDetailFollowsThePlanCursor: with the plan pane focused, the detail
// pane, its log tail and the keys that mean a container (i, y) follow the
// step under the plan's cursor, the one enter approves, not the slot
// selected in the slots pane; back on the slots pane, they follow the slot.
func TestDetailFollowsThePlanCursor(t *testing.T) {
	s := midRoll()
	logs := newFakeLogs()
	c := newConsole(t, s, func(o *Options) { o.Logs, o.Inspect = logs.source, (&probes{}).inspect })
	web0 := s.Slots[0].Containers[0].ID
	var worker session.ContainerView
	for _, v := range s.Slots {
		if v.Workload == "worker" {
			worker = v.Containers[0]
		}
	}

	c.keys("tab") // the plan pane; the slots pane still selects web/0
	for range 20 {
		if st := c.selectedStep(); st != nil && st.action == "restart" {
			break
		}
		c.keys("j")
	}
	st := c.selectedStep()
	if st == nil || st.action != "restart" || st.target != "worker/0" {
		t.Fatalf("the plan's cursor never reached restart worker/0 (%v)", st)
	}
	if r := c.m.slots.selected(&c.m.board); r == nil || r.target != "web/0" {
		t.Fatalf("fixture: the slots pane selects %v, want web/0", r)
	}
	scr := c.screen()
	for _, want := range []string{"Detail  step · restart worker/0", "container " + worker.Name, "reason crashed: exit 137 (OOM)"} {
		if !strings.Contains(scr, want) {
			t.Errorf("the detail pane lacks %q:\n%s", want, scr)
		}
	}
	if r := c.m.detailSlot(); r == nil || r.target != "worker/0" {
		t.Errorf("the detail pane's slot is %v, want worker/0", r)
	}

	// l: the log tail is the step's container's
	c.keys("l")
	if c.m.logs.id != worker.ID || !strings.Contains(c.screen(), "logs · "+worker.Name) {
		t.Errorf("l on the plan pane follows %q, want the step's container %q:\n%s", c.m.logs.id, worker.ID, c.screen())
	}
	// the plan's cursor moves up to web's roll: the tail follows its container
	c.keys("g")
	roll := c.selectedStep()
	var rolled string
	for _, v := range s.Slots[0].Containers {
		if v.Name == roll.container {
			rolled = v.ID
		}
	}
	if rolled == "" || c.m.logs.id != rolled {
		t.Errorf("the plan's cursor on %s %s: the tail follows %q, want %q", roll.action, roll.target, c.m.logs.id, rolled)
	}
	c.keys("G") // back to the worker's restart
	for range 20 {
		if st := c.selectedStep(); st != nil && st.action == "restart" {
			break
		}
		c.keys("k")
	}

	// y and i mean the step's container too
	_, cmd := press(c.m, "y")
	want := tea.SetClipboard(worker.ID)()
	if got := run(cmd); !slices.ContainsFunc(got, func(m tea.Msg) bool { return reflect.DeepEqual(m, want) }) {
		t.Errorf("y on the plan pane copied %v, want the step's container's ID", got)
	}
	c.keys("i")
	if !c.m.reader.open || c.m.reader.id != worker.ID {
		t.Errorf("i on the plan pane opened %q, want the step's container %q", c.m.reader.id, worker.ID)
	}
	c.keys("esc")

	// back on the slots pane: the slot again
	c.keys("tab", "tab", "tab")
	if c.m.focus != paneSlots {
		t.Fatalf("focus on %s, want the slots pane", c.m.focus)
	}
	if c.m.logs.id != web0 || !strings.Contains(c.screen(), "logs · "+s.Slots[0].Containers[0].Name) {
		t.Errorf("on the slots pane the tail follows %q, want web/0's %q:\n%s", c.m.logs.id, web0, c.screen())
	}
	c.keys("d")
	if !strings.Contains(c.screen(), "Detail  diff · web/0") {
		t.Errorf("on the slots pane the detail pane does not show the slot:\n%s", c.screen())
	}
}
