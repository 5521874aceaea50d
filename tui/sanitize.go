package tui

import (
	"strings"

	"github.com/rollcall/rollcall/tui/termsafe"
)

// sanitize makes one line of text from the engine safe to draw: it strips
// terminal control sequences (CSI, OSC, DCS, ...), then every control
// character left over (C0 such as CR, BEL and ESC; DEL; C1, whose CSI
// 0x9b some terminals obey) and invalid UTF-8. Tabs and newlines become
// spaces, so the text stays on the one line it is drawn on.
//
// Every string that comes from the engine or the desired state passes
// through here exactly once, in newBoard, before anything renders it.
func sanitize(s string) string { return termsafe.Line(s) }

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
