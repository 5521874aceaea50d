package tui

import (
	"strings"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// planPane is the live plan as a tree: a block per workload with its spec
// diff, failures and errors, and its steps with their status. The cursor
// moves over steps; until the operator moves it, it follows the next step.
type planPane struct {
	lines  []planLine
	steps  []int // indexes into lines of the step lines
	cursor int   // index into steps
	offset int   // first line drawn
	moved  bool  // the operator moved the cursor: stop following the next step
	sel    string
}

type planLineKind int

const (
	lineBlock planLineKind = iota
	lineChange
	lineFailure
	lineError
	lineStep
	lineStepErr
	lineNote
	lineRunning
	lineEmpty
	lineWaiting // why nothing runs
)

type planLine struct {
	kind planLineKind
	blk  int // index into board.blocks
	step int // index into the block's steps
	text string
}

// setRows lays a new board's plan out as lines, with the filter applied.
func (p *planPane) setRows(b *board, filter string) {
	p.lines, p.steps = nil, nil // fresh slices: an older Model may still hold the last
	if b.running != nil {
		p.lines = append(p.lines, planLine{kind: lineRunning})
	}
	if b.waiting != "" && !b.busy && filter == "" {
		p.lines = append(p.lines, planLine{kind: lineWaiting, text: b.waiting})
	}
	for bi := range b.blocks {
		blk := &b.blocks[bi]
		all := containsFold(blk.hay, filter)
		var steps []int
		for si := range blk.steps {
			if all || containsFold(blk.steps[si].hay, filter) {
				steps = append(steps, si)
			}
		}
		if !all && len(steps) == 0 {
			continue
		}
		p.lines = append(p.lines, planLine{kind: lineBlock, blk: bi})
		if blk.err != "" {
			p.lines = append(p.lines, planLine{kind: lineError, blk: bi, text: blk.err})
		}
		for _, c := range blk.changes {
			p.lines = append(p.lines, planLine{kind: lineChange, blk: bi, text: c})
		}
		for _, f := range blk.failures {
			p.lines = append(p.lines, planLine{kind: lineFailure, blk: bi, text: f})
		}
		for _, si := range steps {
			p.steps = append(p.steps, len(p.lines))
			p.lines = append(p.lines, planLine{kind: lineStep, blk: bi, step: si})
			if e := blk.steps[si].err; e != "" {
				p.lines = append(p.lines, planLine{kind: lineStepErr, blk: bi, step: si, text: e})
			}
		}
		for _, n := range blk.notes {
			p.lines = append(p.lines, planLine{kind: lineNote, blk: bi, text: n})
		}
	}
	if filter == "" {
		for _, n := range b.notes {
			p.lines = append(p.lines, planLine{kind: lineNote, blk: -1, text: n})
		}
	}
	if len(p.lines) == 0 {
		p.lines = append(p.lines, planLine{kind: lineEmpty})
	}

	if p.moved && !p.find(b, p.sel) {
		p.moved = false // the step the operator chose left the plan: follow the roll again
	}
	if !p.moved && !p.find(b, b.next) {
		p.cursor = 0
	}
	p.clamp(b)
}

// find puts the cursor on the step with key, if it is shown.
func (p *planPane) find(b *board, key string) bool {
	if key == "" {
		return false
	}
	for i, li := range p.steps {
		if p.step(b, li).key == key {
			p.cursor = i
			return true
		}
	}
	return false
}

// restAfter puts the cursor on the first shown step after the one with
// key that can be approved, and keeps it there: enter approved key.
func (p *planPane) restAfter(b *board, key string) {
	after := false
	for i, li := range p.steps {
		s := p.step(b, li)
		if after && s.executable && !s.then && s.status != theme.Done && s.status != theme.Running {
			p.cursor, p.moved = i, true
			p.clamp(b)
			return
		}
		if s.key == key {
			after = true
		}
	}
	p.keep(b) // none after it: stay on it
}

// keep holds the cursor where it is when snapshots come.
func (p *planPane) keep(b *board) { p.moved = true; p.clamp(b) }

func (p *planPane) step(b *board, line int) *stepRow {
	l := p.lines[line]
	return &b.blocks[l.blk].steps[l.step]
}

func (p *planPane) clamp(b *board) {
	p.cursor = min(max(p.cursor, 0), max(len(p.steps)-1, 0))
	if s := p.selected(b); s != nil {
		p.sel = s.key
	}
}

func (p *planPane) move(b *board, delta int) { p.moved = true; p.cursor += delta; p.clamp(b) }
func (p *planPane) top(b *board)             { p.moved = true; p.cursor = 0; p.clamp(b) }
func (p *planPane) bottom(b *board)          { p.moved = true; p.cursor = len(p.steps) - 1; p.clamp(b) }

// selected is the step under the cursor, or nil.
func (p *planPane) selected(b *board) *stepRow {
	if p.cursor < 0 || p.cursor >= len(p.steps) {
		return nil
	}
	return p.step(b, p.steps[p.cursor])
}

// scroll keeps the cursor's line (and its error line) in the h-1 lines
// under the title.
func (p *planPane) scroll(h int) {
	h--
	if h < 1 || len(p.steps) == 0 {
		p.offset = min(p.offset, max(len(p.lines)-h, 0))
		return
	}
	line := p.steps[p.cursor]
	if line < p.offset {
		p.offset = line
		// show the block line above the first step too
		for p.offset > 0 && p.lines[p.offset-1].kind != lineStep && p.lines[p.offset-1].kind != lineStepErr && line-p.offset+2 <= h {
			p.offset--
		}
	}
	if line >= p.offset+h {
		p.offset = line - h + 1
	}
	p.offset = max(min(p.offset, len(p.lines)-h), 0)
}

// Render draws the pane in w×h cells.
func (p *planPane) Render(f frame, w, h int, focused bool) string {
	st, b := f.st, f.b
	info := b.summary
	if b.doing != "" {
		info = f.spin + " " + b.doing + " · " + info
	}
	if f.filter != "" {
		info += " · /" + f.filter
	}
	lines := make([]string, 0, h)
	lines = append(lines, title(st, "Plan", info, focused, w, f.lastSeen))
	if !f.has {
		lines = append(lines, "  "+st.Muted.Render("waiting for the first plan…"))
		return block(lines, w, h)
	}
	// Reasons read whole: the selected step's reason wraps under its
	// column (the pane starts lower if it must, so its last line shows),
	// and so does every other step's, from the top, while the pane has
	// lines to spare; the rest keep one line each.
	body, _ := p.drawn(f, w, h, focused)
	lines = append(lines, body...)
	return block(lines, w, h)
}

// drawn is the pane's lines under its title as Render draws them, with
// the index into p.lines each comes from (a click reads it).
func (p *planPane) drawn(f frame, w, h int, focused bool) ([]string, []int) {
	cols := p.columns(f.b, w)
	cur := -1
	if len(p.steps) > 0 {
		cur = p.steps[p.cursor]
	}
	return p.body(f, cols, cur, focused, w, h-1)
}

// planColumns are the widths of a step line's columns before its reason:
// as wide as the steps on the board need, so the reason gets the rest.
type planColumns struct{ label, action, target, container int }

func (p *planPane) columns(b *board, w int) planColumns {
	c := planColumns{label: 6, action: 4, target: 5}
	each := func(s *stepRow) {
		lw := width(s.status.Label())
		if s.status == theme.Running {
			lw = width(string(theme.Running)) + 2 // the spinner's frame and a space
		}
		if !s.then {
			c.label = max(c.label, lw)
		}
		c.action = max(c.action, width(s.action))
		c.target = max(c.target, width(s.target))
	}
	for bi := range b.blocks {
		for si := range b.blocks[bi].steps {
			each(&b.blocks[bi].steps[si])
		}
	}
	if b.running != nil {
		each(b.running)
	}
	c.label, c.action, c.target = min(c.label, 11), min(c.action, 7), min(c.target, 14)
	if w >= 100 {
		c.container = min(28, w/5)
	}
	return c
}

// body is the pane's lines under its title, from its offset: at most h
// of them, unless the selected step's wrapped reason needs the pane to
// start lower. The selected step's reason wraps, and the others' from
// the top while the pane has lines to spare.
func (p *planPane) body(f frame, cols planColumns, cur int, focused bool, w, h int) ([]string, []int) {
	wrapped := map[int]bool{cur: true}
	st, k, b := f.st, f.ink, f.b
	draw := func(i int) []string {
		wrap := wrapped[i]
		l := p.lines[i]
		switch l.kind {
		case lineEmpty:
			switch {
			case !b.header.connected && f.lastSeen == "never seen":
				return []string{"  " + k.bad.paint("? the engine does not answer: nothing is planned until it does")}
			case f.lastSeen != "":
				return []string{"  " + k.bad.paint("? nothing planned as "+f.lastSeen+": the present state is not known")}
			case !b.header.loaded:
				return []string{"  " + st.Muted.Render("no desired state loaded: nothing is planned")}
			case f.filter != "":
				return []string{"  " + st.Muted.Render("no step matches the filter (esc clears it)")}
			case !b.settled():
				return []string{"  " + st.Muted.Render("nothing planned yet: looking again…")}
			default:
				return []string{"  " + k.ok.paint(theme.Done.Glyph()+" converged: nothing to do")}
			}
		case lineWaiting:
			return []string{"  " + k.note.paint("why nothing runs: "+l.text)}
		case lineRunning:
			if r := b.running; r != nil {
				return p.stepLine(f, r, i == cur, false, focused && i == cur, cols, w, wrap)
			}
		case lineBlock:
			blk := &b.blocks[l.blk]
			return []string{" " + k.heading.paint(blk.name) + "  " + k.muted.paint(blk.summary)}
		case lineError:
			return []string{"   " + k.bad.paint(theme.Failed.Glyph()+" "+l.text)}
		case lineChange:
			return []string{"   " + k.change.paint(l.text)}
		case lineFailure:
			return []string{"   " + k.bad.paint(theme.Failed.Glyph()+" "+l.text)}
		case lineNote:
			return []string{"   " + k.note.paint(l.text)}
		case lineStep:
			s := &b.blocks[l.blk].steps[l.step]
			next := b.mode == session.ModeStep && s.key == b.next
			return p.stepLine(f, s, i == cur, next, focused && i == cur, cols, w, wrap)
		case lineStepErr:
			return []string{"      " + k.bad.paint("└ error: "+l.text)}
		}
		return nil
	}
	start := p.offset
	if cur >= start {
		// the selected step's last line shows: start lower if it must
		for used := 0; start < cur; start++ {
			used = 0
			for i := start; i <= cur; i++ {
				used += len(draw(i))
			}
			if used <= h {
				break
			}
		}
	}
	// the lines to spare once every line from start has one (the
	// selected step its wrapped ones) go to the other steps' reasons
	spare := h - (len(p.lines) - start)
	if cur >= start {
		spare -= len(draw(cur)) - 1
	}
	for i := start; i < len(p.lines) && spare > 0; i++ {
		if k := p.lines[i].kind; i == cur || (k != lineStep && k != lineRunning) {
			continue
		}
		wrapped[i] = true
		if extra := len(draw(i)) - 1; extra <= spare {
			spare -= extra
		} else {
			wrapped[i] = false
		}
	}
	var out []string
	var idx []int
	for i := start; i < len(p.lines) && len(out) < h; i++ {
		for _, l := range draw(i) {
			out, idx = append(out, l), append(idx, i)
		}
	}
	if len(out) > h {
		out, idx = out[:h], idx[:h]
	}
	return out, idx
}

// stepLine is one step: cursor and next markers, status glyph and word,
// action, target, (container,) reason. wrap: a reason longer than its
// column goes on under it, on lines of its own, whole.
func (p *planPane) stepLine(f frame, s *stepRow, cursor, next, sel bool, cols planColumns, w int, wrap bool) []string {
	st, k := f.st, f.ink
	gutter := []rune("   ")
	if cursor {
		gutter[0] = '›'
	}
	if next {
		gutter[1] = '→'
	}
	label := s.status.Label()
	if s.then {
		label = "  then"
	}
	if s.status == theme.Running && f.spin != "" {
		label = f.spin + " " + string(theme.Running)
	}
	reason := s.reason
	// Times to come are countdowns, in front: a long reason must not hide them.
	switch {
	case !s.until.IsZero() && s.wait == reconcile.WaitBoot:
		reason = "deadline " + countdown(f.now, s.until) + " · " + reason
	case !s.until.IsZero():
		reason = "next look " + countdown(f.now, s.until) + " · " + reason
	}
	if !s.retryAt.IsZero() && s.status == theme.Failed {
		reason = "retry " + countdown(f.now, s.retryAt) + " · " + reason
	}
	if s.confirm {
		reason = "⚠ needs confirm · " + reason
	}
	lead := 3 + cols.label + 1 + cols.action + 1 + cols.target + 1
	if cols.container > 0 {
		lead += cols.container + 1
	}
	// A pull's bar and figures, or its failure's kind, go in front of
	// its reason's first line (not wrapped with it: the bar is one piece).
	pl := s.pull.lead(k, w-lead, sel)
	var more []string // the reason's lines after its first
	if room := w - lead - width(pl); wrap && width(reason) > room && room >= 16 {
		parts := wrapWords(reason, room)
		reason, more = parts[0], parts[1:]
	}
	pad := strings.Repeat(" ", lead)
	if sel {
		text := string(gutter) + fit(label, cols.label) + " " + fit(s.action, cols.action) + " " + fit(s.target, cols.target) + " "
		if cols.container > 0 {
			text += fit(clipLeft(s.container, cols.container), cols.container) + " "
		}
		out := []string{st.Console.Selected.Render(fit(text+pl+reason, w))}
		for _, m := range more {
			out = append(out, st.Console.Selected.Render(fit(pad+m, w)))
		}
		return out
	}
	act := k.actionInk(s.action)
	if s.then {
		act = k.muted // not executable yet: quiet, but its action still reads
	}
	body := k.statusInk(s.status).paint(fit(label, cols.label)) + " " + act.paint(fit(s.action, cols.action)) + " "
	tgt := fit(s.target, cols.target)
	if next {
		tgt = k.next.paint(tgt)
	}
	body += tgt + " "
	if cols.container > 0 {
		body += k.muted.paint(fit(clipLeft(s.container, cols.container), cols.container)) + " "
	}
	rs := func(t string) string {
		if s.confirm {
			return k.warn.paint(t)
		}
		return t
	}
	g := string(gutter)
	if next {
		g = k.next.paint(g)
	}
	out := []string{g + body + pl + rs(reason)} // block fits it to the width
	for _, m := range more {
		out = append(out, pad+rs(m))
	}
	return out
}
