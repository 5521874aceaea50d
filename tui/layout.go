package tui

import (
	"fmt"
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/theme"
)

// The smallest screen the console draws (DESIGN §8); below it, a notice.
const (
	minWidth  = 80
	minHeight = 24
	// wideWidth is where the slots pane gets the whole width and the plan,
	// detail and events panes sit side by side under it.
	wideWidth = 120
)

// pane names the four panes; tab moves focus through them in this order.
type pane int

const (
	paneSlots pane = iota
	panePlan
	paneDetail
	paneEvents
	paneCount
)

func (p pane) String() string { return [...]string{"slots", "plan", "detail", "events"}[p] }

type rect struct{ w, h int }

// layout is where everything goes on a screen of one size.
type layout struct {
	small                       bool
	wide                        bool
	width, height               int
	slots, plan, detail, events rect
}

// computeLayout splits the body between the header and footer lines. The
// slots pane takes what its slotLines need, up to a share of the body.
//
// Narrow (80 to 119 columns): slots, then plan, then detail beside events.
// Wide (120 and up): slots across the whole width, so desired and actual
// get room side by side, then the plan beside detail over events.
func computeLayout(w, h, headerH, footerH, slotLines int) layout {
	l := layout{width: w, height: h}
	if w < minWidth || h < minHeight {
		l.small = true
		return l
	}
	body := max(h-headerH-footerH, 12)
	if w < wideWidth {
		// the slots first (up to half the body: at 80×24 the demo's seven
		// rows all show), then the plan; detail and events take what is
		// left of a third, at least 4 lines
		top := min(max(slotLines+2, 4), body/2)
		bottom := max((body-top)*2/5, 4)
		dw := (w - len(columnGap)) / 2
		l.slots = rect{w, top}
		l.plan = rect{w, body - top - bottom}
		l.detail = rect{dw, bottom}
		l.events = rect{w - len(columnGap) - dw, bottom}
		return l
	}
	l.wide = true
	top := min(max(slotLines+2, 4), body/2)
	rest := body - top
	pw := w * 3 / 5
	rw := w - len(columnGap) - pw
	dh := rest * 3 / 5
	l.slots = rect{w, top}
	l.plan = rect{pw, rest}
	l.detail = rect{rw, dh}
	l.events = rect{rw, rest - dh}
	return l
}

// columnGap is between panes side by side: a rule and a space (its rule
// is styled when drawn; len counts its cells, both one byte wide).
const columnGap = "| "

// tooSmall is the whole screen when the terminal is below 80×24.
func tooSmall(st *theme.Styles, w, h int) string {
	msg := st.Bad.Render(fmt.Sprintf("terminal too small (need %d×%d, have %d×%d)", minWidth, minHeight, w, h)) +
		"\n" + st.Muted.Render("enlarge the window, or press q to quit")
	if w <= 0 || h <= 0 {
		return msg
	}
	return lipgloss.Place(w, h, lipgloss.Center, lipgloss.Center, msg)
}

// title is a pane's first line: its name, a few words about it, and a rule
// to the edge. stale ("last seen 12s ago") marks a pane that shows the
// state as it was when the engine last answered.
func title(st *theme.Styles, name, info string, focused bool, w int, stale string) string {
	ts := st.Console.PaneTitle
	if focused {
		ts = st.Console.PaneTitleFocused
	}
	head := ts.Render(" " + name + " ")
	if stale != "" {
		head += " " + st.Console.Stale.Render(stale)
	}
	hw := ansi.StringWidth(head)
	if info != "" {
		info = clip(info, w-hw-3)
		hw += 1 + ansi.StringWidth(info)
		head += " " + st.Muted.Render(info)
	}
	rest := w - hw - 1
	if rest <= 0 {
		return fit(head, w)
	}
	return head + " " + st.Console.Rule.Render(strings.Repeat("─", rest))
}

// overlay draws box over the middle of screen, which is w cells wide.
func overlay(screen, box string, w int) string {
	lines := strings.Split(screen, "\n")
	boxLines := strings.Split(box, "\n")
	bw := 0
	for _, l := range boxLines {
		bw = max(bw, ansi.StringWidth(l))
	}
	x := max((w-bw)/2, 0)
	y := max((len(lines)-len(boxLines))/2, 0)
	for i, bl := range boxLines {
		if y+i >= len(lines) {
			break
		}
		bg := fit(lines[y+i], w)
		lines[y+i] = ansi.Truncate(bg, x, "") + ansi.ResetStyle + fit(bl, bw) + ansi.TruncateLeft(bg, x+bw, "")
	}
	return strings.Join(lines, "\n")
}
