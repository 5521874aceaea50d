package tui

import (
	"os"
	"testing"

	"github.com/rollcall/rollcall/theme"
)

// TestScreenshot writes the console mid-roll at 120×40 in the dark theme,
// styling included, to $ROLLCALL_SCREENSHOT: what the README's screenshot
// (vhs/console.png) is rendered from with freeze:
//
//	ROLLCALL_SCREENSHOT=/tmp/console.ansi go test ./tui -run TestScreenshot
//	freeze /tmp/console.ansi -l ansi -o vhs/console.png
func TestScreenshot(t *testing.T) {
	path := os.Getenv("ROLLCALL_SCREENSHOT")
	if path == "" {
		t.Skip("set ROLLCALL_SCREENSHOT to write the screenshot's source")
	}
	m := sized(theme.Dark, 120, 40, midRoll())
	m, _ = press(m, "tab")
	if err := os.WriteFile(path, []byte(m.View().Content+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
