package tui

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// reader is the full-screen view of one container (i): what the slots
// pane knows of it, its inspect (how it was created, its health probes
// with their whole output), the pause's health output and log lines when
// it paused the roll, and its log tail, following. Lines wrap; j/k, the
// page keys and g/G scroll; esc closes it. Any line the panes cut is whole
// here.
type reader struct {
	open   bool
	id     string // raw: what inspect and the log tail ask for
	name   string // sanitized
	offset int    // first wrapped line drawn

	detail   *inspected // nil until inspect answers
	loading  bool       // the first inspect has not answered
	inflight bool       // an inspect is on its way
	err      string
}

// inspected is a container's inspect, sanitized.
type inspected struct {
	health  []probe
	config  []string // "command  -listen :8080", ...
	changes []string // desired vs this container, field by field
}

type probe struct {
	at       time.Time
	took     time.Duration
	exitCode int
	output   []string
}

// inspectMsg carries inspect's answer for id.
type inspectMsg struct {
	id     string
	detail docker.ContainerDetail
	err    error
}

func inspectCmd(ctx context.Context, src func(context.Context, string) (docker.ContainerDetail, error), id string) tea.Cmd {
	if src == nil {
		return nil
	}
	return func() tea.Msg {
		d, err := src(ctx, id)
		return inspectMsg{id: id, detail: d, err: err}
	}
}

func (r *reader) onInspect(msg inspectMsg, changes []string) {
	if !r.open || msg.id != r.id {
		return // closed, or another container since
	}
	r.loading, r.inflight = false, false
	if msg.err != nil {
		r.err = firstLine(msg.err.Error())
		return
	}
	r.err = ""
	r.detail = inspectedOf(msg.detail)
	r.detail.changes = changes
}

// reinspect reads the reader's container again for a new snapshot, so its
// health probes (and state) move while the reader is open: one inspect at
// a time, and none while the engine does not answer.
func (m *Model) reinspect(connected bool) tea.Cmd {
	r := &m.reader
	if !r.open || r.inflight || !connected || m.opts.Inspect == nil {
		return nil
	}
	r.inflight = true
	return inspectCmd(m.ctx, m.opts.Inspect, r.id)
}

// specDiff is the field-by-field diff of the desired workload against the
// inspected container (reconcile.SpecDiff, pure), sanitized.
func (m *Model) specDiff(msg inspectMsg) []string {
	if msg.err != nil || m.resolved == nil {
		return nil
	}
	slot, _ := m.readerContainer()
	if slot == nil || slot.desired == nil {
		return nil
	}
	w := m.resolved.Workload(slot.workload)
	if w == nil || w.Err != nil {
		return nil
	}
	var out []string
	for _, c := range reconcile.SpecDiff(m.prefix, w, msg.detail, false) {
		out = append(out, sanitize(c.String()))
	}
	return out
}

func inspectedOf(d docker.ContainerDetail) *inspected {
	in := &inspected{}
	for _, h := range d.HealthLog {
		in.health = append(in.health, probe{at: h.Start, took: h.End.Sub(h.Start), exitCode: h.ExitCode, output: sanitizeLines(h.Output)})
	}
	c := d.Config
	add := func(name, value string) {
		if value != "" {
			in.config = append(in.config, fmt.Sprintf("%-12s %s", name, sanitize(value)))
		}
	}
	add("command", quoteArgs(c.Cmd))
	add("entrypoint", quoteArgs(c.Entrypoint))
	// Environment values can be secrets: names only, as the plan shows them.
	var env []string
	for _, kv := range c.Env {
		name, _, _ := strings.Cut(kv, "=")
		env = append(env, name)
	}
	add("environment", strings.Join(env, " "))
	if hc := c.Healthcheck; hc != nil {
		add("healthcheck", fmt.Sprintf("%s every %s, timeout %s, %d retries, start period %s",
			quoteArgs(hc.Test), hc.Interval, hc.Timeout, hc.Retries, hc.StartPeriod))
	}
	add("stop signal", c.StopSignal)
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d→%d/%s", p.HostIP, p.HostPort, p.ContainerPort, p.Proto))
	}
	add("ports asked", strings.Join(ports, " "))
	add("networks", strings.Join(c.Networks, " "))
	for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
		add("label", k+"="+d.Labels[k])
	}
	return in
}

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// openReader opens the reader on the selected container.
func (m *Model) openReader() tea.Cmd {
	c := m.selectedContainer()
	if c == nil {
		m.flash = "no container selected"
		return nil
	}
	inspect := m.opts.Inspect != nil
	m.reader = reader{open: true, id: c.id, name: c.name, loading: inspect, inflight: inspect}
	return tea.Batch(inspectCmd(m.ctx, m.opts.Inspect, c.id), m.followLogs())
}

func (m Model) onReaderKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := &m.keys
	page := max(m.height-3, 1)
	switch {
	case key.Matches(msg, k.Close), key.Matches(msg, k.Inspect), msg.String() == "q":
		m.reader = reader{}
		return m, m.followLogs()
	case key.Matches(msg, k.Up):
		m.reader.offset--
	case key.Matches(msg, k.Down):
		m.reader.offset++
	case msg.String() == "pgup" || msg.String() == "b":
		m.reader.offset -= page
	case msg.String() == "pgdown" || msg.String() == "space" || msg.String() == "f":
		m.reader.offset += page
	case key.Matches(msg, k.Top):
		m.reader.offset = 0
	case key.Matches(msg, k.Bottom):
		m.reader.offset = 1 << 30
	case key.Matches(msg, k.Copy):
		return m, m.copyID()
	case key.Matches(msg, k.Shell):
		return m, m.shell()
	}
	m.reader.offset = m.reader.clamp(len(m.readerLines(m.width)), m.height)
	return m, nil
}

func (r *reader) clamp(n, h int) int {
	return min(max(r.offset, 0), max(n-(h-2), 0))
}

// readerContainer is the reader's container as the board has it, or nil
// once it is gone.
func (m *Model) readerContainer() (*slotRow, *containerRow) {
	for i := range m.board.slots {
		s := &m.board.slots[i]
		for j := range s.cs {
			if s.cs[j].id == m.reader.id {
				return s, &s.cs[j]
			}
		}
	}
	return nil, nil
}

// readerLines is the reader's text, wrapped at w cells.
func (m *Model) readerLines(w int) []string {
	st := &m.st
	var raw []string
	head := func(s string) { raw = append(raw, "", st.Heading.Render(s)) }
	fact := func(name, value string) {
		raw = append(raw, "  "+st.Muted.Render(fmt.Sprintf("%-12s", name))+" "+value)
	}

	slot, c := m.readerContainer()
	if c == nil {
		raw = append(raw, st.Warn.Render("the container is gone from the engine (as of the last list)"))
	} else {
		raw = append(raw, st.Heading.Render("container"))
		fact("name", c.name)
		fact("id", c.shortID)
		fact("slot", slot.target+" · "+string(c.relation))
		fact("image", c.image)
		state := c.state
		if c.running {
			state += " · up " + age(c.up) + " since its last start"
		} else if c.exit != "" {
			state += " · " + c.exit + " · stopped " + age(c.up) + " ago"
		}
		fact("state", state)
		fact("health", c.health.Label())
		restarts := fmt.Sprint(c.restarts)
		if c.lastExit != "" {
			restarts += " · last exit " + c.lastExit
		}
		fact("restarts", restarts)
		fact("created", age(c.age)+" ago")
		if c.ports != "" {
			fact("ports", c.ports)
		}
		for _, d := range c.diff {
			fact("differs", st.Change.Render(d))
		}
	}

	r := &m.reader
	head("inspect")
	switch {
	case r.err != "":
		raw = append(raw, "  "+st.Bad.Render("✗ inspect: "+r.err))
	case r.loading:
		raw = append(raw, "  "+st.Muted.Render("inspecting…"))
	case r.detail == nil:
		raw = append(raw, "  "+st.Muted.Render("inspect is not available in this console"))
	default:
		for _, l := range r.detail.config {
			raw = append(raw, "  "+l)
		}
		if slot != nil && slot.desired != nil {
			head("desired vs this container, field by field")
			if len(r.detail.changes) == 0 {
				raw = append(raw, "  "+st.OK.Render("no difference"))
			}
			for _, l := range r.detail.changes {
				raw = append(raw, "  "+st.Change.Render(l))
			}
		}
		head(fmt.Sprintf("health checks (last %d, oldest first)", len(r.detail.health)))
		if len(r.detail.health) == 0 {
			raw = append(raw, "  "+st.Muted.Render("no health probe recorded"))
		}
		for _, h := range r.detail.health {
			res := st.OK.Render("ok")
			if h.exitCode != 0 {
				res = st.Bad.Render(fmt.Sprintf("exit %d", h.exitCode))
			}
			raw = append(raw, "  "+st.Muted.Render(clock(h.at))+" "+res+st.Muted.Render(" ("+h.took.Round(time.Millisecond).String()+")"))
			for _, l := range h.output {
				raw = append(raw, "    "+l)
			}
		}
	}
	if pz := m.board.pause; pz != nil && c != nil && pz.container == c.name {
		head("paused the roll: " + pz.reason)
		for _, l := range pz.health {
			raw = append(raw, "    "+l)
		}
		for _, l := range pz.logs {
			raw = append(raw, "    "+l)
		}
	}
	head("log tail")
	switch {
	case !m.logs.available:
		raw = append(raw, "  "+st.Muted.Render("logs are not available in this console"))
	case m.logs.id != r.id:
		raw = append(raw, "  "+st.Muted.Render("connecting…"))
	default:
		if m.logs.err != "" {
			raw = append(raw, "  "+st.Bad.Render("✗ logs: "+m.logs.err))
		}
		for _, l := range m.logs.lines {
			mark := "│ "
			if l.stderr {
				mark = "! "
			}
			raw = append(raw, st.Muted.Render(clock(l.at)+" "+mark)+l.text)
		}
		if len(m.logs.lines) == 0 {
			raw = append(raw, "  "+st.Muted.Render("no log lines yet"))
		}
	}

	var out []string
	for _, l := range raw {
		out = append(out, strings.Split(ansi.Wrap(l, max(w, 10), " "), "\n")...)
	}
	return out
}

// renderReader draws the reader over the whole screen.
func (m *Model) renderReader(f frame) string {
	w, h := m.width, m.height
	lines := m.readerLines(w)
	off := m.reader.clamp(len(lines), h)
	body := h - 2
	end := min(off+body, len(lines))
	info := fmt.Sprintf("%d–%d of %d lines", off+1, end, len(lines))
	out := []string{title(f.st, "Inspect "+m.reader.name, info, true, w, f.lastSeen)}
	out = append(out, lines[off:end]...)
	for len(out) < h-1 {
		out = append(out, "")
	}
	foot := "j/k scroll · pgup/pgdn page · g/G top/bottom · y copy ID"
	if m.keys.Shell.Enabled() {
		foot += " · x shell"
	}
	foot += " · esc close"
	if m.flash != "" {
		foot = m.flash + "  " + foot
	}
	out = append(out, f.st.Muted.Render(foot))
	return block(out, w, h)
}

// copyID puts the selected container's ID on the clipboard (OSC 52: the
// terminal's own, across SSH too).
func (m *Model) copyID() tea.Cmd {
	id, short := m.reader.id, ""
	if !m.reader.open {
		c := m.selectedContainer()
		if c == nil {
			m.flash = "no container selected"
			return nil
		}
		id, short = c.id, c.shortID
	} else if _, c := m.readerContainer(); c != nil {
		short = c.shortID
	}
	m.flash = "copied the container ID " + short + " (OSC 52)"
	return tea.SetClipboard(id)
}

// shellDoneMsg is the end of a shell x opened.
type shellDoneMsg struct {
	name string
	err  error
}

func (s shellDoneMsg) text() string {
	if s.err == nil {
		return "shell in " + s.name + " ended"
	}
	var ee *exec.ExitError
	if errors.As(s.err, &ee) && (ee.ExitCode() == 126 || ee.ExitCode() == 127) {
		return "shell in " + s.name + ": no shell in the image (FROM scratch has none): " + firstLine(s.err.Error())
	}
	return "shell in " + s.name + ": " + firstLine(s.err.Error())
}

// shell runs the configured shell command on the terminal (the program
// steps aside until it ends). Off in watch mode and when none is set.
func (m *Model) shell() tea.Cmd {
	c := m.selectedContainer()
	if m.reader.open {
		_, c = m.readerContainer()
	}
	switch {
	case !m.keys.Shell.Enabled():
		m.flash = "read-only: watch mode (no shell)"
		return nil
	case m.opts.Shell == nil && m.board.header.simulated:
		m.flash = "no shell: the engine is simulated (its containers run nothing)"
		return nil
	case m.opts.Shell == nil:
		// Which flag sets it is the command's business (the demo has none).
		m.flash = "no shell: this console runs none (x is off)"
		return nil
	case c == nil:
		m.flash = "no container selected"
		return nil
	case !c.running:
		m.flash = "no shell: " + c.name + " is not running"
		return nil
	}
	name := c.name
	return tea.ExecProcess(m.opts.Shell(c.id), func(err error) tea.Msg { return shellDoneMsg{name: name, err: err} })
}
