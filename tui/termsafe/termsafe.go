// Package termsafe makes text that rollcall did not write safe to show on
// a terminal: container names and labels from the engine, engine errors,
// journal lines, desired-state files. Such text may carry control
// sequences that set the window title, clear the screen, write the
// clipboard or make the terminal answer into the shell's input.
//
// Line is the one rule, shared by the console and the headless commands.
// It imports nothing of rollcall's.
package termsafe

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Line makes one line of text safe to draw: it strips terminal control
// sequences (CSI, OSC, DCS, ...), then every control character left over
// (C0 such as CR, BEL and ESC; DEL; C1, whose CSI 0x9b some terminals
// obey) and invalid UTF-8, which becomes U+FFFD. Tabs and newlines become
// spaces, so the text stays on the one line it is drawn on.
func Line(s string) string {
	if isPlain(s) {
		return s
	}
	s = ansi.Strip(strings.ToValidUTF8(s, "\uFFFD"))
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\t' || r == '\n':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			// dropped
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Cut is Line bounded to width terminal cells, ending in "…" when cut.
func Cut(s string, width int) string {
	s = Line(s)
	if len(s) <= width { // every cell takes at least one byte
		return s
	}
	return ansi.Truncate(s, width, "…")
}

// isPlain reports whether s is valid UTF-8 without a control character
// (C0, DEL, or C1, which UTF-8 spells 0xC2 0x80-0x9F): the common case,
// which needs no work.
func isPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c == 0x7f:
			return false
		case c == 0xc2 && i+1 < len(s) && s[i+1] >= 0x80 && s[i+1] <= 0x9f:
			return false
		}
	}
	return utf8.ValidString(s)
}
