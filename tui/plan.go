package tui

import (
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
	st, k, b := f.st, f.ink, f.b
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
	target := 5
	for _, blk := range b.blocks {
		for _, s := range blk.steps {
			target = max(target, len(s.target))
		}
	}
	target = min(target, 14)
	containerW := 0
	if w >= 100 {
		containerW = min(28, w/5)
	}
	var cur int = -1
	if len(p.steps) > 0 {
		cur = p.steps[p.cursor]
	}
	for i := p.offset; i < len(p.lines) && len(lines) < h; i++ {
		l := p.lines[i]
		switch l.kind {
		case lineEmpty:
			switch {
			case !b.header.connected && f.lastSeen == "never seen":
				lines = append(lines, "  "+k.bad.paint("? the engine does not answer: nothing is planned until it does"))
			case f.lastSeen != "":
				lines = append(lines, "  "+k.bad.paint("? nothing planned as "+f.lastSeen+": the present state is not known"))
			case !b.header.loaded:
				lines = append(lines, "  "+st.Muted.Render("no desired state loaded: nothing is planned"))
			case f.filter != "":
				lines = append(lines, "  "+st.Muted.Render("no step matches the filter (esc clears it)"))
			case !b.steady:
				lines = append(lines, "  "+st.Muted.Render("nothing planned yet: looking again…"))
			default:
				lines = append(lines, "  "+k.ok.paint(theme.Done.Glyph()+" converged: nothing to do"))
			}
		case lineWaiting:
			lines = append(lines, "  "+k.note.paint("why nothing runs: "+l.text))
		case lineRunning:
			r := b.running
			lines = append(lines, p.stepLine(f, r, i == cur, false, focused && i == cur, target, containerW, w))
		case lineBlock:
			blk := &b.blocks[l.blk]
			lines = append(lines, " "+k.heading.paint(blk.name)+"  "+k.muted.paint(blk.summary))
		case lineError:
			lines = append(lines, "   "+k.bad.paint(theme.Failed.Glyph()+" "+l.text))
		case lineChange:
			lines = append(lines, "   "+k.change.paint(l.text))
		case lineFailure:
			lines = append(lines, "   "+k.bad.paint(theme.Failed.Glyph()+" "+l.text))
		case lineNote:
			lines = append(lines, "   "+k.note.paint(l.text))
		case lineStep:
			s := &b.blocks[l.blk].steps[l.step]
			next := b.mode == session.ModeStep && s.key == b.next
			lines = append(lines, p.stepLine(f, s, i == cur, next, focused && i == cur, target, containerW, w))
		case lineStepErr:
			lines = append(lines, "      "+k.bad.paint("└ error: "+l.text))
		}
	}
	return block(lines, w, h)
}

// stepLine is one step: cursor and next markers, status glyph and word,
// action, target, (container,) reason.
func (p *planPane) stepLine(f frame, s *stepRow, cursor, next, sel bool, target, containerW, w int) string {
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
	if sel {
		text := string(gutter) + fit(label, 11) + " " + fit(s.action, 7) + " " + fit(s.target, target) + " "
		if containerW > 0 {
			text += fit(clipLeft(s.container, containerW), containerW) + " "
		}
		return st.Console.Selected.Render(fit(text+reason, w))
	}
	act := k.actionInk(s.action)
	if s.then {
		act = k.muted // not executable yet: quiet, but its action still reads
	}
	body := k.statusInk(s.status).paint(fit(label, 11)) + " " + act.paint(fit(s.action, 7)) + " "
	tgt := fit(s.target, target)
	if next {
		tgt = k.next.paint(tgt)
	}
	body += tgt + " "
	if containerW > 0 {
		body += k.muted.paint(fit(clipLeft(s.container, containerW), containerW)) + " "
	}
	if s.confirm {
		body += k.warn.paint(reason)
	} else {
		body += reason
	}
	g := string(gutter)
	if next {
		g = k.next.paint(g)
	}
	return g + body // block fits it to the width
}
