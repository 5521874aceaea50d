package tui

import (
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// sanitize makes one line of text from the engine safe to draw: it strips
// terminal control sequences (CSI, OSC, DCS, ...), then every control
// character left over (C0 such as CR, BEL and ESC; DEL; C1, whose CSI
// 0x9b some terminals obey) and invalid UTF-8. Tabs and newlines become
// spaces, so the text stays on the one line it is drawn on.
//
// Every string that comes from the engine or the desired state passes
// through here exactly once, in newBoard, before anything renders it.
func sanitize(s string) string {
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

// sanitizeLines is sanitize for multi-line text (health output): one safe
// line per line of s, without trailing empty lines.
func sanitizeLines(s string) []string {
	s = strings.TrimRight(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	if s == "" {
		return nil
	}
	parts := strings.Split(s, "\n")
	for i, p := range parts {
		parts[i] = sanitize(p)
	}
	return parts
}

// firstLine is the first line of s, sanitized: what a header has room for.
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return sanitize(s)
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
