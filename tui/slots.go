package tui

import (
	"fmt"
	"strings"

	"github.com/rollcall/rollcall/theme"
)

// slotsPane lists one row per slot: what it should run on the left, the
// container serving it on the right, and any other containers in the slot
// on lines under it.
type slotsPane struct {
	rows   []int // indexes into board.slots that pass the filter
	cursor int   // index into rows
	offset int   // first row drawn
	sel    string
}

// setRows applies the filter to a new board, keeping the selected slot
// selected when it is still there.
func (p *slotsPane) setRows(b *board, filter string) {
	p.rows = make([]int, 0, len(b.slots)) // a fresh slice: an older Model may still hold the last
	for i := range b.slots {
		if containsFold(b.slots[i].hay, filter) {
			p.rows = append(p.rows, i)
		}
	}
	if p.sel != "" {
		for i, r := range p.rows {
			if slotKey(&b.slots[r]) == p.sel {
				p.cursor = i
				break
			}
		}
	}
	p.clamp(b)
}

func slotKey(r *slotRow) string { return fmt.Sprintf("%s/%d", r.workload, r.slot) }

func (p *slotsPane) clamp(b *board) {
	p.cursor = min(max(p.cursor, 0), max(len(p.rows)-1, 0))
	if r := p.selected(b); r != nil {
		p.sel = slotKey(r)
	}
}

func (p *slotsPane) move(b *board, delta int) { p.cursor += delta; p.clamp(b) }
func (p *slotsPane) top(b *board)             { p.cursor = 0; p.clamp(b) }
func (p *slotsPane) bottom(b *board)          { p.cursor = len(p.rows) - 1; p.clamp(b) }

// selected is the slot under the cursor, or nil.
func (p *slotsPane) selected(b *board) *slotRow {
	if p.cursor < 0 || p.cursor >= len(p.rows) {
		return nil
	}
	return &b.slots[p.rows[p.cursor]]
}

// rowHeight is how many lines a slot takes: one, plus one per other container.
func rowHeight(r *slotRow) int { return max(len(r.cs), 1) }

// scroll moves the window so the cursor's row fits in h lines.
func (p *slotsPane) scroll(b *board, h int) {
	h -= 2 // title and column header
	if h < 1 || len(p.rows) == 0 {
		p.offset = 0
		return
	}
	if p.cursor < p.offset {
		p.offset = p.cursor
	}
	for p.offset < p.cursor {
		used := 0
		for i := p.offset; i <= p.cursor; i++ {
			used += rowHeight(&b.slots[p.rows[i]])
		}
		if used <= h {
			break
		}
		p.offset++
	}
	p.offset = min(p.offset, max(len(p.rows)-1, 0))
}

// slotColumns are the slots pane's column widths for a width.
type slotColumns struct {
	target, desired, limits, container, health, state, age, relation int
}

func columnsFor(w, target int) slotColumns {
	c := slotColumns{target: min(max(target, 5), 16), health: 12, age: 4, relation: 12}
	if w >= wideWidth {
		c.limits, c.state = 14, 10
	}
	fixed := 2 + c.target + 1 + 3 + 1 + c.health + 1 + c.age + 1 + c.relation
	if c.limits > 0 {
		fixed += c.limits + 1
	}
	if c.state > 0 {
		fixed += c.state + 1
	}
	free := max(w-fixed, 16)
	c.desired = free * 9 / 20
	c.container = free - c.desired
	return c
}

// Render draws the pane in w×h cells.
func (p *slotsPane) Render(f frame, w, h int, focused bool) string {
	st, b := f.st, f.b
	ready := b.header.progress
	info := fmt.Sprintf("%s ready", ready)
	if f.filter != "" {
		info += fmt.Sprintf(" · %d of %d match /%s", len(p.rows), len(b.slots), f.filter)
	}
	lines := make([]string, 0, h)
	lines = append(lines, title(st, "Slots", info, focused, w))

	target := 5
	for _, r := range p.rows {
		target = max(target, len(b.slots[r].target))
		if target >= 16 {
			break
		}
	}
	cols := columnsFor(w, target)
	lines = append(lines, f.ink.column.paint(p.headerLine(cols)))

	if !f.has || len(b.slots) == 0 {
		msg := "no slots: nothing desired and no managed containers"
		if !f.has || !b.header.loaded {
			msg = "no desired state loaded yet"
		}
		lines = append(lines, "  "+st.Muted.Render(msg))
		return block(lines, w, h)
	}
	if len(p.rows) == 0 {
		lines = append(lines, "  "+st.Muted.Render("no slot matches the filter (esc clears it)"))
		return block(lines, w, h)
	}
	for i := p.offset; i < len(p.rows) && len(lines) < h; i++ {
		r := &b.slots[p.rows[i]]
		sel := focused && i == p.cursor
		mark := "  "
		if i == p.cursor {
			mark = "› "
		}
		for j := 0; j < rowHeight(r) && len(lines) < h; j++ {
			var c *containerRow
			if j < len(r.cs) {
				c = &r.cs[j]
			}
			if j > 0 {
				mark = "  "
			}
			lines = append(lines, p.rowLine(f, cols, r, c, j > 0, mark, sel, w))
		}
	}
	return block(lines, w, h)
}

func (p *slotsPane) headerLine(c slotColumns) string {
	var b strings.Builder
	b.WriteString("  " + fit("SLOT", c.target) + " " + fit("DESIRED", c.desired))
	if c.limits > 0 {
		b.WriteString(" " + fit("LIMITS", c.limits))
	}
	b.WriteString(" │ " + fit("CONTAINER", c.container) + " " + fit("HEALTH", c.health))
	if c.state > 0 {
		b.WriteString(" " + fit("STATE", c.state))
	}
	b.WriteString(" " + fit("AGE", c.age) + " " + fit("STATUS", c.relation))
	return b.String()
}

// rowLine is one line of a slot: the slot itself (extra false) or another
// container in it (extra true). A selected line is drawn plain in the
// selection style, so the highlight is one unbroken bar.
func (p *slotsPane) rowLine(f frame, c slotColumns, r *slotRow, ct *containerRow, extra bool, mark string, sel bool, w int) string {
	st, k := f.st, f.ink
	paint := func(i ink, text string) string {
		if sel {
			return text
		}
		return i.paint(text)
	}
	var b strings.Builder
	b.WriteString(mark)
	if extra {
		b.WriteString(fit("  ↳", c.target) + " " + strings.Repeat(" ", c.desired))
		if c.limits > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.limits))
		}
	} else {
		b.WriteString(fit(r.target, c.target) + " ")
		switch d := r.desired; {
		case d == nil:
			b.WriteString(paint(k.muted, fit("— not desired", c.desired)))
		case d.err != "":
			b.WriteString(paint(k.bad, fit("✗ "+d.err, c.desired)))
		default:
			text := d.image
			if d.version != "" {
				text += " (" + d.version + ")"
			}
			b.WriteString(fit(text, c.desired))
		}
		if c.limits > 0 {
			text := ""
			if r.desired != nil {
				text = compactLimits(r.desired)
			}
			b.WriteString(" " + paint(k.muted, fit(text, c.limits)))
		}
	}
	b.WriteString(paint(k.rule, " │ "))
	if ct == nil {
		b.WriteString(paint(k.muted, fit("— no container", c.container)))
		b.WriteString(" " + paint(k.statusInk(theme.Missing), fit(theme.Missing.Label(), c.health)))
		if c.state > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.state))
		}
		b.WriteString(" " + strings.Repeat(" ", c.age) + " " + strings.Repeat(" ", c.relation))
	} else {
		b.WriteString(fit(clipLeft(ct.short, c.container), c.container))
		b.WriteString(" " + paint(k.statusInk(ct.health), fit(ct.health.Label(), c.health)))
		if c.state > 0 {
			b.WriteString(" " + paint(k.muted, fit(ct.state, c.state)))
		}
		b.WriteString(" " + paint(k.muted, fit(age(ct.age), c.age)))
		b.WriteString(" " + paint(relationInk(k, ct.relation), fit(ct.relation, c.relation)))
	}
	if sel {
		return st.Console.Selected.Render(fit(b.String(), w))
	}
	return b.String() // block fits it to the width
}

func compactLimits(d *desiredInfo) string {
	var parts []string
	if d.rawLimits.NanoCPUs > 0 {
		parts = append(parts, fmt.Sprintf("%gcpu", float64(d.rawLimits.NanoCPUs)/1e9))
	}
	if d.rawLimits.Memory > 0 {
		parts = append(parts, fmt.Sprintf("%dM", d.rawLimits.Memory>>20))
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, " ")
}

func relationInk(k *inks, rel string) ink {
	switch rel {
	case "up-to-date":
		return k.ok
	case "unknown":
		return k.bad
	default:
		return k.warn
	}
}
