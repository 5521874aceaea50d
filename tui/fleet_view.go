package tui

import (
	"fmt"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// fleetView is what the fleet's lines at the top of the screen draw
// from: one fleet.Snapshot, sanitized once when it arrives (as newBoard
// does a session's), the host the panes show, and how much of it the
// screen has room for. It is never changed once made; a new one replaces
// it, so a Model that holds the last one draws what it drew.
type fleetView struct {
	has       bool // a fleet snapshot arrived
	version   string
	source    string
	loaded    bool
	badSource bool   // the desired source's last load failed
	sourceErr string // its error, when the selected host's header does not say it
	rollout   string
	mode      session.Mode
	phase     fleet.Phase
	approved  map[int]bool // step mode: the waves approved; read only
	all       bool         // step mode: the whole rollout approved (A)
	hosts     []hostRow
	waves     []waveRow

	sel int // the host the panes show, index into hosts
	// What the screen has room for (fit): the host rows first..first+shown
	// (the rest counted on a line of their own), and one line per wave
	// (tall) or all the waves on one line.
	first, shown int
	tall         bool
}

// hostRow is one host of the fleet, as its row draws it. Every state is a
// typed value of the fleet's or the host's session; the strings are only
// drawn.
type hostRow struct {
	name     string // sanitized
	status   fleet.HostStatus
	wave     int // -1: left out
	action   fleet.Action
	reported bool // its session has sent a snapshot
	conn     hostConn
	dialErr  string
	engine   string // the endpoint as the file writes it, and the engine's version
	progress session.Progress
	lock     hostLock
	lockBy   string // who holds it: "alice (pid 4242)"
	lockErr  string
	// stands is where its session stands, from its standing: paused
	// (by the operator or failure_action pause), or held (a spec on
	// hold, a canary that holds); the fleet's verdict says the rest.
	stands hostStands
	// asking: its session waits for an answer to a question. A question
	// is not a standing: it waits though a step of another slot runs.
	asking bool
	skip   bool // emergency: skip-health is on
}

type hostStands int

const (
	standsOther  hostStands = iota // rolling, converged, waiting for approval: the fleet's verdict says it
	standsPaused                   // the operator paused it, or failure_action pause did
	standsHeld                     // nothing more runs there until the operator acts or the desired spec changes
)

// standsOf is what a host row says of its session's standing st.
func standsOf(st session.Standing) hostStands {
	for _, c := range st.Causes {
		if c.Kind == session.CauseOperatorPause || c.Kind == session.CauseFailurePause {
			return standsPaused
		}
	}
	if st.Kind == session.StandingHeld {
		return standsHeld
	}
	return standsOther
}

type hostConn int

const (
	connWaiting   hostConn = iota // dialed, no word from its session yet
	connUp                        // its session reaches the engine
	connDown                      // it did, and does not now
	connNotDialed                 // no client could be made (dialErr)
)

type hostLock int

const (
	lockNone  hostLock = iota // not held, not wanted (watch mode)
	lockHeld                  // this rollcall holds it
	lockOther                 // another rollcall holds it (lockBy)
	lockError                 // taking it failed (lockErr)
	lockCame                  // it came free: the host's session can take it
)

// waveRow is one wave: its hosts and what it waits for (the fleet's Waits,
// their host names sanitized).
type waveRow struct {
	index  int
	hosts  []string
	status fleet.WaveStatus
	waits  []fleet.Wait
}

// newFleetView takes in a fleet snapshot. hostErr says whether the
// selected host's own header already shows the desired source's error.
func newFleetView(s fleet.Snapshot, version string, hostErr bool) *fleetView {
	v := &fleetView{has: true, version: sanitize(version), source: sanitize(s.Source), loaded: s.Desired != nil,
		rollout: sanitize(s.RolloutID), mode: s.Mode, phase: s.Decision.Phase, approved: s.Approved, all: s.ApprovedAll,
		badSource: s.SourceErr != nil}
	if s.SourceErr != nil && !hostErr {
		v.sourceErr = firstLine(s.SourceErr.Error())
	}
	for _, h := range s.Hosts {
		v.hosts = append(v.hosts, hostRowOf(h, s.Decision.Verdict(h.Name)))
	}
	for _, w := range s.Decision.Waves {
		row := waveRow{index: w.Index, status: w.Status}
		for _, h := range w.Hosts {
			row.hosts = append(row.hosts, sanitize(h))
		}
		for _, wt := range w.Waits {
			wt.Host, wt.Other = sanitize(wt.Host), sanitize(wt.Other)
			row.waits = append(row.waits, wt)
		}
		v.waves = append(v.waves, row)
	}
	return v
}

func hostRowOf(h fleet.HostView, verdict fleet.Verdict) hostRow {
	s := &h.Session
	r := hostRow{name: sanitize(h.Name), status: verdict.Status, wave: verdict.Wave, action: verdict.Action,
		reported: s.Seq > 0, dialErr: firstLine(h.DialErr), progress: s.Progress,
		stands: standsOf(s.Standing), asking: s.Confirm != nil && !s.Confirm.Declined, skip: s.SkipHealth}
	switch {
	case !h.Dialed && h.DialErr != "":
		r.conn = connNotDialed
	case !r.reported:
		r.conn = connWaiting
	case s.Connected:
		r.conn = connUp
	default:
		r.conn = connDown
	}
	switch {
	case s.Engine.Simulated:
		r.engine = "simulated"
	default:
		r.engine = sanitize(strings.TrimSpace(h.Endpoint + " " + s.Engine.Version))
	}
	switch l := s.Lock; {
	case l.Held:
		r.lock = lockHeld
	case l.Holder != nil:
		r.lock, r.lockBy = lockOther, sanitize(fmt.Sprintf("%s (pid %d)", l.Holder.User, l.Holder.PID))
	case l.Err != "":
		r.lock, r.lockErr = lockError, firstLine(l.Err)
	case l.Free:
		r.lock = lockCame
	}
	return r
}

// fit is v with host sel shown in the panes, laid out for a screen h
// lines high: the fleet's lines leave the panes the most of a small screen,
// and take at least floor lines. At 80×24 with 3 hosts: the title, a row
// per host and one line of waves (and a line for a pause, if any).
func (v *fleetView) fit(sel, h, floor int) *fleetView {
	nv := *v
	nv.sel = min(max(sel, 0), max(len(v.hosts)-1, 0))
	budget := max(h-18, floor) // lines for the fleet; 22 at 40 lines
	fixed := 1 + len(v.loud())
	rows := min(len(v.hosts), max(budget-fixed-1, 1))
	if rows < len(v.hosts) {
		rows = max(rows-1, 1) // and a line that counts the others
	}
	nv.shown = rows
	nv.first = min(max(nv.sel-rows/2, 0), len(v.hosts)-rows)
	nv.tall = fixed+nv.rowLines()+len(v.waves) <= budget
	return &nv
}

// rowLines is how many lines the host rows take: the rows shown, and one
// for the rows not shown.
func (v *fleetView) rowLines() int {
	if v.shown < len(v.hosts) {
		return v.shown + 1
	}
	return v.shown
}

// lines are the fleet's lines at width w (0: only count them).
func (v *fleetView) lines(f frame, w int) []string {
	st, c := f.st, f.st.Console
	name := "rollcall"
	if v.version != "" {
		name += " " + v.version
	}
	sep := c.Rule.Render(" │ ")
	if !v.has {
		return []string{fit(c.Title.Render(name)+sep+st.Muted.Render("waiting for the fleet…"), w)}
	}
	var source string
	switch {
	case v.badSource:
		source = v.source + " " + st.Bad.Render("✗ does not load")
	case v.loaded:
		source = v.source + " " + st.OK.Render("✓ parsed")
	default:
		source = v.source + " " + st.Muted.Render("… loading")
	}
	title := c.Title.Render(name) + sep + v.phaseText(st) + sep + source
	if v.rollout != "" {
		title += sep + c.Label.Render("rollout ") + v.rollout
	}
	out := []string{fit(title, w)}
	for _, l := range v.loud() {
		out = append(out, fit(l.style(st).Render(l.text), w))
	}
	out = append(out, v.hostLines(f, w)...)
	if v.tall {
		for i := range v.waves {
			out = append(out, fit(v.waveLine(f, &v.waves[i]), w))
		}
	} else if len(v.waves) > 0 {
		out = append(out, fit(v.wavesLine(f), w))
	}
	return out
}

// loudLine is a line that must not be missed.
type loudLine struct {
	text string
	bad  bool
}

func (l loudLine) style(st *theme.Styles) lipgloss.Style {
	if l.bad {
		return st.Bad
	}
	return st.Warn
}

// loud are the lines the phase must not go unnoticed with: a pause, a
// rollback of every host, a failure the others finish after; and the
// desired source's error, when the host's header does not say it.
func (v *fleetView) loud() []loudLine {
	var out []loudLine
	failed := v.failedHosts()
	switch v.phase {
	case fleet.PhasePaused:
		out = append(out, loudLine{"⏸ FLEET PAUSED: " + failed + " · no later wave starts; every host holds where it is", true})
	case fleet.PhaseRollingBack:
		out = append(out, loudLine{"↩ ROLLING BACK (rollback_all): " + failed + " · every host rolled returns to the revision it ran before", true})
	case fleet.PhaseFinishing:
		out = append(out, loudLine{"✘ " + failed + " · no later wave starts; the started waves finish (on_failure continue)", false})
	}
	if v.sourceErr != "" {
		out = append(out, loudLine{"✗ " + v.sourceErr, true})
	}
	return out
}

// failedHosts names the failed and lost hosts: "edge-2 lost, edge-4 failed".
func (v *fleetView) failedHosts() string {
	var names []string
	for _, h := range v.hosts {
		switch h.status {
		case fleet.HostFailed:
			names = append(names, h.name+" failed")
		case fleet.HostLost:
			names = append(names, h.name+" lost")
		}
	}
	if len(names) == 0 {
		return "a host failed"
	}
	return strings.Join(names, ", ")
}

// phaseText is where the rollout stands, for the title line.
func (v *fleetView) phaseText(st *theme.Styles) string {
	done := 0
	for _, h := range v.hosts {
		if h.status == fleet.HostDone {
			done++
		}
	}
	hosts := fmt.Sprintf("%d/%d hosts done", done, len(v.hosts))
	started := 0
	for _, w := range v.waves {
		if w.status != fleet.WavePending {
			started = w.index + 1
		}
	}
	var text string
	switch v.phase {
	case fleet.PhasePreflight:
		text = st.Warn.Render("preflight") + " · " + hosts
	case fleet.PhaseRolling:
		text = st.Heading.Render(fmt.Sprintf("wave %d of %d", started, len(v.waves))) + " · " + hosts
	case fleet.PhasePaused:
		text = st.Bad.Render("⏸ paused") + " · " + hosts
	case fleet.PhaseFinishing:
		text = st.Warn.Render("finishing") + " · " + hosts
	case fleet.PhaseRollingBack:
		text = st.Bad.Render("↩ rolling back") + " · " + hosts
	case fleet.PhaseDone:
		text = st.OK.Render("✔ done") + " · " + hosts
	case fleet.PhaseWatching:
		text = st.Muted.Render("watching") + " · " + hosts
	}
	if v.all && v.mode == session.ModeStep {
		text += " · " + st.Heading.Render("rollout approved")
	}
	return text
}

// hostStatus is a host's part in the rollout, as its row says it: a glyph
// and a word, from the fleet's verdict only.
func hostStatus(s fleet.HostStatus) (theme.Status, string) {
	switch s {
	case fleet.HostRolling:
		return theme.Running, "rolling"
	case fleet.HostDone:
		return theme.Done, "done"
	case fleet.HostFailed:
		return theme.Failed, "failed"
	case fleet.HostLost:
		return theme.Crashed, "lost"
	case fleet.HostLeftOut:
		return theme.Skipped, "left out"
	}
	return theme.Queued, "pending"
}

// cell is one column of a host row: its text, and how it is drawn.
type cell struct {
	text  string
	style lipgloss.Style
}

// hostCells are a host's columns: status, name, progress, connection,
// lock, its session's flags, and the engine last, which gives way first.
func (v *fleetView) hostCells(st *theme.Styles, h *hostRow, wide bool) []cell {
	status, word := hostStatus(h.status)
	cells := []cell{{status.Glyph() + " " + word, st.StatusStyle(status)}, {h.name, lipgloss.NewStyle()}}
	progress := cell{"–", st.Muted}
	if h.reported {
		text := h.progress.String() + " healthy"
		if wide {
			text = h.progress.String() + " up-to-date & healthy"
		}
		progress = cell{text, st.Muted}
		if h.progress.Done() && h.progress.Total > 0 {
			progress.style = st.OK
		}
	}
	cells = append(cells, progress)
	switch h.conn {
	case connUp:
		cells = append(cells, cell{"connected", st.OK})
	case connDown:
		cells = append(cells, cell{"✗ disconnected", st.Bad})
	case connNotDialed:
		cells = append(cells, cell{"✗ not reached", st.Bad})
	default:
		cells = append(cells, cell{"connecting…", st.Muted})
	}
	switch h.lock {
	case lockHeld:
		cells = append(cells, cell{"lock held", st.Console.Label})
	case lockOther:
		cells = append(cells, cell{"lock held by " + h.lockBy, st.Warn})
	case lockError:
		cells = append(cells, cell{"✗ lock: " + h.lockErr, st.Bad})
	case lockCame:
		cells = append(cells, cell{"lock came free", st.OK})
	default:
		cells = append(cells, cell{"no lock", st.Muted})
	}
	var flags []string
	switch h.stands {
	case standsPaused:
		flags = append(flags, "⏸ paused")
	case standsHeld:
		flags = append(flags, "⚠ held")
	}
	if h.asking {
		flags = append(flags, "⚠ asks")
	}
	if h.skip {
		flags = append(flags, "⚠ EMERGENCY")
	}
	cells = append(cells, cell{strings.Join(flags, " "), st.Warn})
	if h.conn == connNotDialed {
		cells = append(cells, cell{h.dialErr, st.Bad})
	} else {
		cells = append(cells, cell{h.engine, st.Muted})
	}
	return cells
}

// hostLines are the rows of the hosts shown, their columns aligned, and a
// line counting the others.
func (v *fleetView) hostLines(f frame, w int) []string {
	st := f.st
	wide := w >= wideWidth
	rows := make([][]cell, 0, v.shown)
	for i := v.first; i < v.first+v.shown; i++ {
		rows = append(rows, v.hostCells(st, &v.hosts[i], wide))
	}
	var widths []int
	for _, r := range rows {
		for j, c := range r {
			if j >= len(widths) {
				widths = append(widths, 0)
			}
			widths[j] = max(widths[j], width(c.text))
		}
	}
	if len(widths) > 1 {
		widths[1] = min(widths[1], 24) // a long name gives way, with an ellipsis
	}
	out := make([]string, 0, v.rowLines())
	for k, r := range rows {
		i := v.first + k
		var b strings.Builder
		if i == v.sel {
			b.WriteString(st.Console.Title.Render("▸ "))
		} else {
			b.WriteString("  ")
		}
		for j, c := range r {
			if widths[j] == 0 {
				continue // a column no row has anything in (the flags, mostly)
			}
			text := c.text
			if j == 1 {
				text = clip(text, widths[j])
				if i == v.sel {
					c.style = st.Console.Title
				}
			}
			if j > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c.style.Render(text))
			if j < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[j]-width(text)))
			}
		}
		out = append(out, fit(b.String(), w))
	}
	if n := len(v.hosts) - v.shown; n > 0 {
		out = append(out, fit(st.Muted.Render(fmt.Sprintf("  … %d more %s: [ and ] move between them", n, plural(n, "host", "hosts"))), w))
	}
	return out
}

// hostAt is the host of the row on line y of the fleet's lines, if any.
func (v *fleetView) hostAt(y int) (int, bool) {
	if !v.has {
		return 0, false
	}
	k := y - 1 - len(v.loud())
	if k < 0 || k >= v.shown {
		return 0, false
	}
	return v.first + k, true
}

// waveStatus is a wave's glyph and word.
func waveStatus(s fleet.WaveStatus) (theme.Status, string) {
	switch s {
	case fleet.WaveRolling:
		return theme.Running, "rolling"
	case fleet.WaveComplete:
		return theme.Done, "complete"
	}
	return theme.Queued, "pending"
}

// waveLine is one wave on a line of its own: its number, its hosts, its
// status and what it waits for.
func (v *fleetView) waveLine(f frame, w *waveRow) string {
	st := f.st
	status, word := waveStatus(w.status)
	label := fmt.Sprintf("wave %d", w.index+1)
	if w.index == 0 {
		label += " canary"
	}
	line := "  " + st.Console.Label.Render(fmt.Sprintf("%-15s", label)) + st.StatusStyle(status).Render(fmt.Sprintf("%-10s", status.Glyph()+" "+word)) +
		" " + strings.Join(w.hosts, ", ")
	if waits := v.waitTexts(f, w, true); waits != "" {
		line += st.Muted.Render(" · ") + waits
	}
	return line
}

// wavesLine is every wave on one line: the waves that are complete
// together, then each wave with its hosts, and what the first ones not
// complete wait for.
func (v *fleetView) wavesLine(f frame) string {
	st := f.st
	var parts []string
	k := 0
	for k < len(v.waves) && v.waves[k].status == fleet.WaveComplete {
		k++
	}
	if k > 1 {
		parts = append(parts, st.StatusStyle(theme.Done).Render(fmt.Sprintf("%s waves 1–%d", theme.Done.Glyph(), k)))
	} else {
		k = 0
	}
	pending := false
	for i := k; i < len(v.waves); i++ {
		w := &v.waves[i]
		status, _ := waveStatus(w.status)
		part := st.StatusStyle(status).Render(fmt.Sprintf("%s %d", status.Glyph(), w.index+1)) + " " + strings.Join(w.hosts, ",")
		if w.status != fleet.WaveComplete && !pending {
			if waits := v.waitTexts(f, w, false); waits != "" {
				part += ": " + waits
			}
		}
		pending = pending || w.status == fleet.WavePending
		parts = append(parts, part)
	}
	return " " + st.Console.Label.Render("waves ") + strings.Join(parts, st.Muted.Render(" › "))
}

// waitTexts says what wave w waits for, from its typed Waits; and, for a
// wave not started in step mode, whether it is approved (the fleet names
// the approval only once nothing else holds the wave).
func (v *fleetView) waitTexts(f frame, w *waveRow, tall bool) string {
	st := f.st
	var parts []string
	asked := false
	for _, wt := range w.waits {
		if !tall && wt.Kind == fleet.WaitEarlierWave {
			continue // on one line the order says it
		}
		asked = asked || wt.Kind == fleet.WaitApproval
		parts = append(parts, waitStyle(st, wt).Render(waitText(wt, f.now, tall)))
	}
	if w.status == fleet.WavePending && v.mode == session.ModeStep {
		switch {
		case v.all || v.approved[w.index]:
			parts = append(parts, st.OK.Render(theme.Approved.Glyph()+" approved"))
		case !asked:
			parts = append(parts, st.Muted.Render("then approval (w)"))
		}
	}
	return strings.Join(parts, st.Muted.Render(", "))
}

func waitStyle(st *theme.Styles, w fleet.Wait) lipgloss.Style {
	switch w.Kind {
	case fleet.WaitPreflight, fleet.WaitFailedHost:
		return st.Bad
	case fleet.WaitApproval, fleet.WaitSoak, fleet.WaitHealth:
		return st.Warn
	case fleet.WaitPull:
		if w.Pull.Failed {
			return st.Bad
		}
		return st.Warn
	}
	return st.Muted
}

// waitText is one thing a wave waits for, in words.
func waitText(w fleet.Wait, now time.Time, tall bool) string {
	switch w.Kind {
	case fleet.WaitPreflight:
		switch w.Problem {
		case fleet.ProblemUnreachable:
			return w.Host + " does not answer"
		case fleet.ProblemUnobserved:
			return w.Host + " not listed yet"
		case fleet.ProblemSameEngine:
			return w.Host + " is the engine of " + w.Other
		case fleet.ProblemLockNotHeld:
			return w.Host + "'s lock not held"
		}
		return w.Host + " preflight"
	case fleet.WaitApproval:
		if tall {
			return "approval (w approves it, A the whole rollout)"
		}
		return "approval (w)"
	case fleet.WaitSoak:
		if tall {
			return "soak ends " + countdown(now, w.Until)
		}
		return "soak " + countdown(now, w.Until)
	case fleet.WaitHealth:
		return fmt.Sprintf("%s at %d/%d healthy", w.Host, w.Healthy, w.Slots)
	case fleet.WaitFailedHost:
		if w.Cause == fleet.CauseLost {
			return w.Host + " lost"
		}
		return w.Host + " failed"
	case fleet.WaitEarlierWave:
		return fmt.Sprintf("after wave %d", w.Wave+1)
	case fleet.WaitWatch:
		return "watch mode: nothing starts"
	case fleet.WaitPull:
		return pullWaitText(w)
	}
	return "?"
}

// pullWaitText is a host's pull that holds every wave, in words.
func pullWaitText(w fleet.Wait) string {
	switch {
	case w.Pull.Failed:
		return w.Host + "'s pull failed: " + w.Pull.Kind.Text()
	case w.Pull.Running:
		return w.Host + " pulling"
	}
	return w.Host + " to pull"
}

// hostLead leads the selected host's mode line: its name and its part
// in the rollout.
func (v *fleetView) hostLead(f frame) string {
	if !v.has || len(v.hosts) == 0 {
		return ""
	}
	h := &v.hosts[v.sel]
	var part string
	switch {
	case h.status == fleet.HostLeftOut || h.wave < 0:
		part = "left out"
	case h.status == fleet.HostPending:
		part = fmt.Sprintf("wave %d, not started", h.wave+1)
	case h.status == fleet.HostDone || h.status == fleet.HostFailed || h.status == fleet.HostLost:
		_, word := hostStatus(h.status)
		part = fmt.Sprintf("wave %d, %s", h.wave+1, word)
	case !v.mode.Acting():
		part = fmt.Sprintf("wave %d", h.wave+1)
	case h.action == fleet.Act:
		part = fmt.Sprintf("wave %d, acting", h.wave+1)
	case h.action == fleet.RollBack:
		part = fmt.Sprintf("wave %d, rolling back", h.wave+1)
	default:
		part = fmt.Sprintf("wave %d, held by the fleet", h.wave+1)
	}
	return f.st.Console.Title.Render("▸ "+h.name) + f.st.Muted.Render(" · "+part) + f.st.Console.Rule.Render(" │ ")
}

// waitingLine is the selected host's line while its session has sent
// nothing yet.
func (v *fleetView) waitingLine(f frame, w int) string {
	if !v.has || len(v.hosts) == 0 {
		return fit(f.st.Console.Watch.Render("…"), w)
	}
	h := &v.hosts[v.sel]
	if h.conn == connNotDialed {
		return fit(f.st.Console.Title.Render("▸ "+h.name)+f.st.Bad.Render(" · not reached: "+h.dialErr), w)
	}
	return fit(f.st.Console.Title.Render("▸ "+h.name)+f.st.Muted.Render(" · no word from its session yet"), w)
}

// nextChange is how long until a soak countdown on screen shows another
// figure; 0 for none. nil-safe: the console of one host has no fleet.
func (v *fleetView) nextChange(now time.Time) time.Duration {
	if v == nil {
		return 0
	}
	var next time.Duration
	for i := range v.waves {
		for _, w := range v.waves[i].waits {
			if w.Kind != fleet.WaitSoak {
				continue
			}
			if d := countdownNext(now, w.Until); d > 0 && (next == 0 || d < next) {
				next = d
			}
		}
	}
	return next
}
