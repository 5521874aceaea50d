package main

import (
	"strings"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/tui/termsafe"
)

// maxLineWidth bounds a line of human output, in terminal cells: enough
// for any plan or journal line, short enough that a hostile string cannot
// flood a terminal.
const maxLineWidth = 1000

// termSafe makes one piece of text that rollcall did not write (a
// container's name or labels, an engine error, a journal entry, a
// desired-state file's words) safe to print for a human: one line without
// control sequences or invalid UTF-8 (termsafe.Line), at most maxLineWidth
// cells. Every such string passes through it before human output; --json
// output needs no such care, since encoding/json escapes control
// characters.
func termSafe(s string) string { return termsafe.Cut(s, maxLineWidth) }

// termSafeLines is termSafe for text of several lines: each line on its own.
func termSafeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termSafe(l)
	}
	return strings.Join(lines, "\n")
}

// boundLines cuts every line of text, which may hold rollcall's own
// styling, to maxLineWidth cells, keeping the styling's escape sequences
// intact. The pieces inside must have passed termSafe already.
func boundLines(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if len(l) > maxLineWidth {
			lines[i] = ansi.Truncate(l, maxLineWidth, "…")
		}
	}
	return strings.Join(lines, "\n")
}
