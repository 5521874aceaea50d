package tui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// fit truncates s to w cells (with an ellipsis) and pads it with spaces to
// exactly w cells. s may hold styling.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := width(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// width is how many cells s takes. Plain ASCII, the common case, is
// counted by bytes; anything else asks ansi.
func width(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return ansi.StringWidth(s)
		}
	}
	return len(s)
}

// wrapWords breaks plain text into lines of at most w cells at its
// spaces; a word wider than w is cut into pieces of w. Names
// ("rollcall-web-1-1111aaaa") stay whole on one line where they fit.
func wrapWords(text string, w int) []string {
	if w <= 0 {
		return []string{text}
	}
	var out []string
	line := ""
	for _, word := range strings.Fields(text) {
		for width(word) > w {
			if line != "" {
				out, line = append(out, line), ""
			}
			head := ansi.Truncate(word, w, "")
			out, word = append(out, head), word[len(head):]
		}
		switch {
		case line == "":
			line = word
		case width(line)+1+width(word) <= w:
			line += " " + word
		default:
			out, line = append(out, line), word
		}
	}
	if line != "" || len(out) == 0 {
		out = append(out, line)
	}
	return out
}

// clip truncates s to w cells, with an ellipsis, without padding.
func clip(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if width(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// clipLeft keeps the end of s in w cells: container names differ at their
// end (slot and hash), so that is the part to keep.
func clipLeft(s string, w int) string {
	sw := ansi.StringWidth(s)
	if w <= 0 {
		return ""
	}
	if sw <= w {
		return s
	}
	return ansi.TruncateLeft(s, sw-w+1, "…")
}

// age is a short, coarse duration for a table: "4s", "3m", "2h", "5d".
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
}

// clock is a time of day as the events pane shows it.
func clock(t time.Time) string { return t.Local().Format(time.TimeOnly) }

// shortID is the first 12 characters of an engine ID, as docker shows it.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// lines pads or cuts a block to exactly h lines of exactly w cells.
func block(ls []string, w, h int) string {
	var b strings.Builder
	for i := range h {
		if i > 0 {
			b.WriteByte('\n')
		}
		if i < len(ls) {
			b.WriteString(fit(ls[i], w))
		} else {
			b.WriteString(strings.Repeat(" ", w))
		}
	}
	return b.String()
}

// joinColumns puts blocks of equal height side by side with sep between.
func joinColumns(sep string, blocks ...string) string {
	split := make([][]string, len(blocks))
	h := 0
	for i, b := range blocks {
		split[i] = strings.Split(b, "\n")
		h = max(h, len(split[i]))
	}
	var out strings.Builder
	for y := range h {
		if y > 0 {
			out.WriteByte('\n')
		}
		for i, s := range split {
			if i > 0 {
				out.WriteString(sep)
			}
			if y < len(s) {
				out.WriteString(s[y])
			}
		}
	}
	return out.String()
}

// containsFold reports whether s contains the lower-case needle, ignoring case.
func containsFold(s, lowerNeedle string) bool {
	return lowerNeedle == "" || strings.Contains(strings.ToLower(s), lowerNeedle)
}
