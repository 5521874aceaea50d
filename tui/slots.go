package tui

import (
	"fmt"
	"strings"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/theme"
)

// slotsPane lists one row per slot: what it should run on the left, the
// container serving it on the right, and any other containers in the slot
// on lines under it.
//
// The cursor moves over lines, so any container of a slot can be selected
// (an old one, to read its logs): sub is the container's index in the
// selected slot.
type slotsPane struct {
	rows   []int // indexes into board.slots that pass the filter
	cursor int   // index into rows
	sub    int   // index into the selected slot's containers
	offset int   // first row drawn
	sel    string
	selID  string // the selected container's ID
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
	// The selected container stays selected while it is in the slot; a
	// slot that lost it selects its first.
	p.sub = 0
	if r := p.selected(b); r != nil {
		for j := range r.cs {
			if r.cs[j].id == p.selID {
				p.sub = j
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
		p.sub = min(max(p.sub, 0), max(len(r.cs)-1, 0))
		p.selID = ""
		if c := p.container(b); c != nil {
			p.selID = c.id
		}
	}
}

// move moves the cursor by delta lines: through a slot's containers, then
// to the next slot.
func (p *slotsPane) move(b *board, delta int) {
	for ; delta > 0; delta-- {
		if r := p.selected(b); r != nil && p.sub < len(r.cs)-1 {
			p.sub++
		} else if p.cursor < len(p.rows)-1 {
			p.cursor, p.sub = p.cursor+1, 0
		}
	}
	for ; delta < 0; delta++ {
		if p.sub > 0 {
			p.sub--
		} else if p.cursor > 0 {
			p.cursor--
			p.sub = 1 << 20 // the previous slot's last container, clamped
		}
	}
	p.clamp(b)
}
func (p *slotsPane) top(b *board)    { p.cursor, p.sub = 0, 0; p.clamp(b) }
func (p *slotsPane) bottom(b *board) { p.cursor, p.sub = len(p.rows)-1, 1<<20; p.clamp(b) }

// selectLine selects the line-th line drawn (0: the first under the
// column header): a mouse click.
func (p *slotsPane) selectLine(b *board, line int) bool {
	for i := p.offset; i < len(p.rows) && line >= 0; i++ {
		n := rowHeight(&b.slots[p.rows[i]])
		if line < n {
			p.cursor, p.sub = i, line
			p.clamp(b)
			return true
		}
		line -= n
	}
	return false
}

// container is the selected container, or nil (a slot with none).
func (p *slotsPane) container(b *board) *containerRow {
	r := p.selected(b)
	if r == nil || p.sub >= len(r.cs) {
		return nil
	}
	return &r.cs[p.sub]
}

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
//
// The columns are as wide as what they show needs (slotNeeds), so the
// image's tag, the container's name and the relation read whole; where
// the screen is short of room the desired image gives way first from its
// left (its registry and repository path), then the container's name from
// its left (its slot and spec hash stay). The state, restarts and limits
// show only from 120 columns (the detail pane has them all).
type slotColumns struct {
	target, desired, limits, container, node, health, state, up, restarts, relation, proxy int
}

// slotNeeds are the widths the slots pane's texts need whole, over every
// slot of a board (not only those in view, so columns do not move as the
// pane scrolls).
type slotNeeds struct {
	desired, container, relation, limits int
	node                                 int // 0: no container has a node (a host)
}

func needsOf(slots []slotRow) slotNeeds {
	n := slotNeeds{desired: width("DESIRED"), container: width("CONTAINER"), relation: width("STATUS"), limits: width("LIMITS")}
	for i := range slots {
		r := &slots[i]
		switch d := r.desired; {
		case d == nil:
			n.desired = max(n.desired, width("— not desired"))
		case d.err != "":
			n.desired = max(n.desired, min(width(d.err)+2, 40))
		default:
			n.desired = max(n.desired, width(imageText(d.image, d.version, 1<<20)))
			n.limits = max(n.limits, width(compactLimits(d)))
		}
		if len(r.cs) == 0 {
			n.container = max(n.container, width("— no container"))
		}
		for j := range r.cs {
			if node := r.cs[j].node; node != "" {
				n.node = max(n.node, width("NODE"), width(node))
			}
			n.container = max(n.container, width(r.cs[j].short))
			n.relation = max(n.relation, width(string(r.cs[j].relation)))
		}
	}
	return n
}

// columnsFor: with a proxy (proxy true) a PROXY column says what it holds
// for each container: "routed · 3 in flight" when wide, "routed · 3" in
// 80 columns (the detail pane says it whole).
func columnsFor(w, target int, proxy bool, need slotNeeds) slotColumns {
	c := slotColumns{target: min(max(target, 5), 16), health: 12, up: 4, relation: min(need.relation, 12)}
	if w >= wideWidth {
		c.limits, c.state, c.restarts, c.up = min(need.limits, 14), 12, 3, 8
	}
	if proxy {
		c.proxy = 10
		if w >= wideWidth {
			c.proxy = 20
		}
	}
	fixed := 2 + c.target + 1 + 3 + 1 + c.health + 1 + c.up + 1 + c.relation
	if need.node > 0 {
		// a swarm: the node each task runs on, cut to 16 cells
		c.node = min(need.node, 16)
		fixed += c.node + 1
	}
	if c.proxy > 0 {
		fixed += c.proxy + 1
	}
	if c.limits > 0 {
		fixed += c.limits + 1
	}
	if c.state > 0 {
		fixed += c.state + 1
	}
	if c.restarts > 0 {
		fixed += c.restarts + 1
	}
	if c.proxy > 10 && w-fixed < need.desired+need.container {
		// "routed · 3" rather than "routed · 3 in flight": the names first
		fixed -= c.proxy - 10
		c.proxy = 10
	}
	free := max(w-fixed, 20)
	switch {
	case need.desired+need.container <= free:
		// both whole; the room left goes to the image, whose column
		// then lines up with wider images to come
		c.container = need.container
		c.desired = free - c.container
	default:
		// the image first (its tag and version whole), the container's
		// name keeping its slot and spec hash (14 cells)
		c.container = min(need.container, 14)
		c.desired = max(free-c.container, 12)
		if c.desired > need.desired {
			c.desired = need.desired
		}
		c.container = free - c.desired
	}
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
	lines = append(lines, title(st, "Slots", info, focused, w, f.lastSeen))

	target := 5
	for _, r := range p.rows {
		target = max(target, len(b.slots[r].target))
		if target >= 16 {
			break
		}
	}
	cols := columnsFor(w, target, b.header.proxy, b.needs)
	lines = append(lines, f.ink.column.paint(p.headerLine(cols)))

	if !f.has || len(b.slots) == 0 {
		msg := "no slots: nothing desired and no managed containers"
		switch {
		case f.has && !b.header.connected:
			msg = "the engine does not answer: no container is known"
			if e := b.header.engineErr; e != "" {
				msg += " (" + e + ")"
			}
		case !f.has || !b.header.loaded:
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
		for j := 0; j < rowHeight(r) && len(lines) < h; j++ {
			var c *containerRow
			if j < len(r.cs) {
				c = &r.cs[j]
			}
			here := i == p.cursor && (j == p.sub || len(r.cs) == 0)
			mark := "  "
			if here {
				mark = "› "
			}
			lines = append(lines, p.rowLine(f, cols, r, c, j > 0, mark, focused && here, w))
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
	b.WriteString(" │ " + fit("CONTAINER", c.container))
	if c.node > 0 {
		b.WriteString(" " + fit("NODE", c.node))
	}
	b.WriteString(" " + fit("HEALTH", c.health))
	if c.state > 0 {
		b.WriteString(" " + fit("STATE", c.state))
	}
	b.WriteString(" " + fit("UP", c.up))
	if c.restarts > 0 {
		b.WriteString(" " + fit("RST", c.restarts))
	}
	b.WriteString(" " + fit("STATUS", c.relation))
	if c.proxy > 0 {
		b.WriteString(" " + fit("PROXY", c.proxy))
	}
	return b.String()
}

// proxyCell is what the proxy holds for ct in w cells: "routed · 3 in
// flight", or "routed · 3" where that does not fit; "" when unknown.
func proxyCell(ct *containerRow, w int) string {
	if ct == nil || ct.proxy == nil {
		return ""
	}
	text := ct.proxy.Text()
	if ct.proxy.Routed && width(text) > w {
		text = fmt.Sprintf("routed · %d", ct.proxy.InFlight)
	}
	return text
}

func proxyInk(k *inks, ct *containerRow) ink {
	if ct != nil && ct.proxy != nil && ct.proxy.Routed {
		return k.ok
	}
	return k.muted
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
			b.WriteString(fit(imageText(d.image, d.version, c.desired), c.desired))
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
		if c.node > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.node))
		}
		b.WriteString(" " + paint(k.statusInk(theme.Missing), fit(theme.Missing.Label(), c.health)))
		if c.state > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.state))
		}
		if c.restarts > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.restarts))
		}
		b.WriteString(" " + strings.Repeat(" ", c.up) + " " + strings.Repeat(" ", c.relation))
		if c.proxy > 0 {
			b.WriteString(" " + strings.Repeat(" ", c.proxy))
		}
	} else {
		b.WriteString(fit(clipLeft(ct.short, c.container), c.container))
		if c.node > 0 {
			b.WriteString(" " + paint(k.muted, fit(ct.node, c.node)))
		}
		b.WriteString(" " + paint(k.statusInk(ct.health), fit(ct.health.Label(), c.health)))
		if c.state > 0 {
			state := ct.state
			switch {
			case ct.exit != "":
				state = fmt.Sprintf("exit %d", ct.exitCode)
				if ct.oom {
					state += " OOM"
				}
			case ct.lastExit != "":
				state = "last " + ct.lastExit
			}
			ink := k.muted
			if ct.oom || ct.exitCode != 0 {
				ink = k.bad
			}
			b.WriteString(" " + paint(ink, fit(state, c.state)))
		}
		// up since the last start: a container that restarted 25s ago is
		// 25s up; one that stopped says "down 9s" (the detail pane's words
		// too), or "down" where the column is narrow
		up := age(ct.up)
		if !ct.running {
			up = ct.upOrDown()
			if width(up) > c.up {
				up = "down"
			}
		}
		b.WriteString(" " + paint(k.muted, fit(up, c.up)))
		if c.restarts > 0 {
			rst, ink := fmt.Sprint(ct.restarts), k.muted
			if ct.restarts > 0 {
				ink = k.warn
			}
			b.WriteString(" " + paint(ink, fit(rst, c.restarts)))
		}
		b.WriteString(" " + paint(relationInk(k, ct.relation), fit(string(ct.relation), c.relation)))
		if c.proxy > 0 {
			b.WriteString(" " + paint(proxyInk(k, ct), fit(proxyCell(ct, c.proxy), c.proxy)))
		}
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

func relationInk(k *inks, rel reconcile.Relation) ink {
	switch rel {
	case reconcile.RelUpToDate, reconcile.RelRevert:
		return k.ok
	case reconcile.RelUnknown:
		return k.bad
	default:
		return k.warn
	}
}

// imageText is the desired image (and version) in w cells. The tag is what
// tells two releases apart, so it survives: the version goes first, then
// the image's path from its left (keepTag).
func imageText(image, version string, w int) string {
	ver := ""
	if version != "" {
		ver = " (" + version + ")"
	}
	if width(image)+width(ver) <= w {
		return image + ver
	}
	if w-width(ver) >= 12 {
		return keepTag(image, w-width(ver)) + ver
	}
	return keepTag(image, w)
}

// keepTag shortens an image reference to w cells, keeping its tag (or
// digest) whole: the registry and repository path go first, from the
// left ("…/team/app:v2", "…/app:v2"), then the start of the image's
// own name ("…demoapp:v2").
func keepTag(image string, w int) string {
	if width(image) <= w {
		return image
	}
	cut := strings.LastIndexAny(image, ":@")
	if cut <= strings.LastIndex(image, "/") {
		return clipLeft(image, w)
	}
	repo, tag := image[:cut], image[cut:]
	if width(tag)+2 > w {
		return clipLeft(image, w) // a digest: its end is what differs
	}
	for i := 0; i < len(repo); i++ {
		if repo[i] == '/' && width("…"+repo[i:]+tag) <= w {
			return "…" + repo[i:] + tag
		}
	}
	return clipLeft(repo, w-width(tag)) + tag
}
