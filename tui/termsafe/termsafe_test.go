package termsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// evil carries a window-title OSC ended by BEL, a clear-screen CSI, a
// clipboard write (OSC 52), a device-status request, a bare carriage
// return, a C1 CSI and a lone ESC.
const evil = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07\x1b[6n\rX\u009b31m\x1b"

func TestLine(t *testing.T) {
	for _, tc := range []struct{ rule, in, want string }{
		{"plain text is kept", "rollcall-web-0-2222bbbb", "rollcall-web-0-2222bbbb"},
		{"sequences and controls are stripped", "web" + evil, "webX31m"},
		{"tabs and newlines become spaces", "a\tb\nc", "a b c"},
		{"invalid UTF-8 becomes U+FFFD", "bad utf8 \xff!", "bad utf8 \uFFFD!"},
		{"non-ASCII text is kept", "image web:v1 → web:v2", "image web:v1 → web:v2"},
		{"SGR is stripped too", "\x1b[31mred\x1b[0m", "red"},
		{"DEL is dropped", "del\x7f", "del"},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("%s: Line(%q) = %q, want %q", tc.rule, tc.in, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		in    string
		width int
		want  string
	}{
		{"a short line is kept", "abc", 5, "abc"},
		{"a long line is cut with an ellipsis", "abcdefgh", 5, "abcd…"},
		{"the cut counts cells, not bytes", strings.Repeat("→", 10), 5, "→→→→…"},
		{"sequences are stripped before cutting", "\x1b]0;pwned\x07abc", 3, "abc"},
	} {
		got := Cut(tc.in, tc.width)
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("%s: Cut(%q, %d) = %q, want %q", tc.rule, tc.in, tc.width, got, tc.want)
		}
	}
}
