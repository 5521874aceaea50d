package tui

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/theme"
)

// detailMode is what the detail pane shows: l and d switch it.
type detailMode int

const (
	detailDiff detailMode = iota // spec diff, containers, pause detail
	detailLogs                   // the log tail of the slot's container
)

// detailPane shows the selected slot: its spec diff and containers, the
// health output and logs of a failure that paused the session, or the log
// tail of the container serving it.
type detailPane struct {
	mode   detailMode
	offset int // diff: lines scrolled down; logs: lines scrolled back from the end
}

func (p *detailPane) move(delta int) {
	if p.mode == detailLogs {
		delta = -delta
	}
	p.offset = max(p.offset+delta, 0)
}

// Render draws the pane in w×h cells for the selected slot (nil: none),
// or, in diff mode, for step, the selected plan step, when not nil.
func (p *detailPane) Render(f frame, sel *slotRow, sub int, step *stepRow, logs *logTail, w, h int, focused bool) string {
	var lines []string
	var info string
	if step != nil {
		// the selected step's slot and container, whichever mode
		sel, sub = stepSlot(f.b, step)
	}
	if p.mode == detailLogs {
		info, lines = p.logLines(f, sel, sub, logs)
		// the tail follows: show the last lines, unless scrolled back
		body := h - 1
		end := max(len(lines)-p.offset, min(body, len(lines)))
		start := max(end-body, 0)
		lines = lines[start:end]
	} else if step != nil {
		info, lines = p.stepLines(f, step, w)
		if off := min(p.offset, max(len(lines)-1, 0)); off > 0 {
			lines = lines[off:]
		}
	} else {
		info, lines = p.diffLines(f, sel, sub)
		if off := min(p.offset, max(len(lines)-1, 0)); off > 0 {
			lines = lines[off:]
		}
	}
	return block(append([]string{title(f.st, "Detail", info, focused, w, f.lastSeen)}, lines...), w, h)
}

func (p *detailPane) diffLines(f frame, sel *slotRow, sub int) (string, []string) {
	st, b := f.st, f.b
	var out []string
	info := "diff"
	if pz := b.pause; pz != nil && pz.container != "" {
		out = append(out, st.Warn.Render("⏸ paused: "+pz.reason))
		switch {
		case len(pz.health) > 0:
			out = append(out, "  "+st.Muted.Render("last health check:"))
			for _, l := range pz.health {
				out = append(out, "    "+l)
			}
		case pz.detailErr != "":
			out = append(out, "  "+st.Bad.Render("health output unavailable: "+pz.detailErr))
		default:
			out = append(out, "  "+st.Muted.Render("no health output (yet)"))
		}
		if len(pz.logs) > 0 {
			out = append(out, "  "+st.Muted.Render("last log lines of "+pz.container+":"))
			for _, l := range pz.logs {
				out = append(out, "    "+l)
			}
		}
		out = append(out, "")
	}
	if sel == nil {
		if !f.has {
			return info, out
		}
		return info, append(out, st.Muted.Render("no slot selected"))
	}
	info = "diff · " + sel.target
	if d := sel.desired; d != nil {
		if d.err != "" {
			out = append(out, st.Bad.Render("✗ "+d.err))
		} else {
			text := "desired " + d.image
			if d.version != "" {
				text += " (version " + d.version + ")"
			}
			out = append(out, text, "  "+st.Muted.Render("spec "+d.hash+" · "+d.limits))
		}
	} else {
		out = append(out, st.Muted.Render("not desired: its containers are stopped"))
	}
	if len(sel.changes) > 0 {
		out = append(out, st.Muted.Render("plan diff:"))
		for _, c := range sel.changes {
			out = append(out, "  "+st.Change.Render(c))
		}
	}
	if len(sel.cs) == 0 {
		out = append(out, st.Warn.Render(theme.Missing.Label()+": no container in this slot"))
	}
	for j, c := range sel.cs {
		out = append(out, containerMark(j == sub)+st.StatusStyle(c.health).Render(c.health.Label())+" "+c.name)
		out = append(out, "  "+st.Muted.Render(strings.Join(incidentFacts(&c), " · ")))
		out = append(out, "  "+st.Muted.Render(string(c.relation)+" · created "+age(c.age)+" ago · id "+c.shortID))
		if c.image != "" && (sel.desired == nil || c.image != sel.desired.image) {
			out = append(out, "  "+st.Muted.Render("image "+c.image))
		}
		if c.ports != "" {
			out = append(out, "  "+st.Muted.Render("ports "+c.ports))
		}
		if px := c.proxy; px != nil {
			text := "proxy: " + px.Text()
			if px.Fails > 0 {
				text += fmt.Sprintf(" · %d recent %s", px.Fails, plural(px.Fails, "failure", "failures"))
			}
			style := st.Muted
			if px.Routed {
				style = st.OK
			}
			out = append(out, "  "+style.Render(text))
		}
		for _, d := range c.diff {
			out = append(out, "  "+st.Change.Render(d))
		}
	}
	return info, out
}

// stepLines is the selected plan step whole, wrapped at w cells: its
// reason and its error (the plan's row has one line for them, cut), then
// the step's slot as diffLines shows it.
func (p *detailPane) stepLines(f frame, s *stepRow, w int) (string, []string) {
	st := f.st
	info := "step · " + s.action + " " + s.target
	label := s.status.Label()
	if s.then {
		label = "then (once the wait before it ends)"
	}
	out := []string{st.StatusStyle(s.status).Render(label) + " " + st.Action(s.action).Render(s.action) + " " + s.target}
	// A pull's bar, or its failure's kind and next try, first: the
	// engine's and the registry's words follow, as data, in the error.
	if r := s.pull; r != nil && r.pulling {
		out = append(out, "  "+st.Action("pull").Render(pullGlyph+" pulling")+" "+pullBar(f.ink, r.progress, min(max(w/4, 10), 30), false)+" "+pullFigures(r.progress))
	}
	if r := s.pull; r != nil && r.kind != "" {
		kind := "  " + st.Bad.Render(pullGlyph+" "+pullKindWords(r.kind))
		if !s.retryAt.IsZero() && s.status == theme.Failed {
			kind += st.Muted.Render(" · retry " + countdown(f.now, s.retryAt))
		}
		out = append(out, kind, "  "+st.Muted.Render("t tries it again now"))
	}
	if s.container != "" {
		out = append(out, "  "+st.Muted.Render("container "+s.container))
	}
	if s.confirm {
		out = append(out, st.Warn.Render("⚠ needs confirm: stop-first (c answers)"))
	}
	if s.reason != "" {
		out = append(out, wrapIndent(st.Muted.Render("reason ")+s.reason, w)...)
	}
	if s.err != "" {
		out = append(out, wrapIndent(st.Bad.Render("error "+s.err), w)...)
	}
	if !s.retryAt.IsZero() && s.status == theme.Failed && (s.pull == nil || s.pull.kind == "") {
		out = append(out, "  "+st.Muted.Render("retry "+countdown(f.now, s.retryAt)))
	}
	if r, _ := stepSlot(f.b, s); r != nil {
		_, slot := p.diffLines(f, r, -1)
		out = append(append(out, ""), slot...)
	}
	return info, out
}

// stepSlot is the slot of step s and the index of its container there: the
// container it names, else the slot's first (a start names the container it
// will make), -1 when the slot has none; nil when the slot is not on the
// board.
func stepSlot(b *board, s *stepRow) (*slotRow, int) {
	for i := range b.slots {
		r := &b.slots[i]
		if r.workload != s.workload || r.slot != s.slot {
			continue
		}
		for j := range r.cs {
			if r.cs[j].name == s.container {
				return r, j
			}
		}
		if len(r.cs) == 0 {
			return r, -1
		}
		return r, 0
	}
	return nil, -1
}

// wrapIndent wraps text at w cells, the lines after the first indented
// by two, so a long reason reads whole in a narrow pane.
func wrapIndent(text string, w int) []string {
	ls := strings.Split(ansi.Wrap(text, max(w-2, 10), " "), "\n")
	for i := 1; i < len(ls); i++ {
		ls[i] = "  " + ls[i]
	}
	return ls
}

func (p *detailPane) logLines(f frame, sel *slotRow, sub int, logs *logTail) (string, []string) {
	st := f.st
	switch {
	case !logs.available:
		return "logs", []string{st.Muted.Render("logs are not available in this console")}
	case sel == nil:
		return "logs", []string{st.Muted.Render("no slot selected")}
	case len(sel.cs) == 0:
		return "logs · " + sel.target, []string{st.Muted.Render("no container in this slot")}
	}
	c := sel.cs[min(sub, len(sel.cs)-1)]
	state := "following"
	switch {
	case logs.id != c.id:
		state = "connecting…"
	case logs.err != "":
		state = "failed"
	case logs.ended:
		state = "ended"
	case p.offset > 0:
		state = fmt.Sprintf("scrolled back %d", p.offset)
	}
	info := "logs · " + c.name + " (" + state + ")"
	if logs.id != c.id {
		return info, nil
	}
	var out []string
	if logs.err != "" {
		out = append(out, st.Bad.Render("✗ logs: "+logs.err))
	}
	for _, l := range logs.lines {
		mark := st.Muted.Render("│ ")
		if l.stderr {
			mark = st.Warn.Render("! ")
		}
		out = append(out, st.Muted.Render(clock(l.at))+" "+mark+l.text)
	}
	if len(out) == 0 {
		out = append(out, st.Muted.Render("no log lines yet"))
	}
	return info, out
}

func containerMark(selected bool) string {
	if selected {
		return "› "
	}
	return ""
}

// incidentFacts are what an incident asks of a container first: how long
// it has been up since its last start (not since it was created), how
// often it restarted, how it last exited and whether memory killed it.
func incidentFacts(c *containerRow) []string {
	var facts []string
	switch {
	case c.running:
		facts = append(facts, c.upOrDown())
	case c.exit != "":
		facts = append(facts, c.exit, c.upOrDown())
	default:
		facts = append(facts, c.state)
	}
	facts = append(facts, fmt.Sprintf("restarts %d", c.restarts))
	if c.lastExit != "" {
		facts = append(facts, "last exit "+c.lastExit)
	}
	return facts
}
