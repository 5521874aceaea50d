package theme

import (
	"strings"
	"testing"
)

// TestStatusGlyphAndWord: every status the console shows has its own glyph
// (healthy and unverified share one: both count healthy) and renders as
// glyph and word in every theme, so no status rests on colour alone.
func TestStatusGlyphAndWord(t *testing.T) {
	want := map[Status]string{
		Healthy: "✓", Unverified: "✓", Booting: "◐", Crashed: "✗", Restarting: "↻", Paused: "⏸",
		Stopped: "■", Missing: "○", Queued: "…", Planned: "·", Approved: "☑", Running: "▶", Done: "✔",
		Failed: "✘", Skipped: "⤼", Waiting: "◷",
	}
	seen := map[string]Status{}
	for st, glyph := range want {
		if st.Glyph() != glyph {
			t.Errorf("%s: glyph %q, want %q", st, st.Glyph(), glyph)
		}
		if prev, dup := seen[glyph]; dup && !(st == Unverified || prev == Unverified) {
			t.Errorf("%s and %s share the glyph %q", st, prev, glyph)
		}
		seen[glyph] = st
		if st.Label() != glyph+" "+string(st) {
			t.Errorf("%s: label %q", st, st.Label())
		}
		for _, n := range []Name{Dark, Light, Mono} {
			if r := New(n).Status(st); !strings.Contains(r, glyph+" "+string(st)) {
				t.Errorf("%s %s renders %q without its glyph and word", n, st, r)
			}
		}
	}
	if Status("bogus").Glyph() != "?" {
		t.Error("an unknown status has a glyph")
	}
}

// TestConsoleMonoHasNoColour: the mono console sets no colour, only
// attributes; dark and light tell the modes apart by colour as well as
// by word.
func TestConsoleMonoHasNoColour(t *testing.T) {
	c := New(Mono).Console
	for name, s := range map[string]string{
		"watch": c.Watch.Render("WATCH"), "step": c.Step.Render("STEP"), "auto": c.Auto.Render("AUTO"),
		"paused": c.Paused.Render("PAUSED"), "emergency": c.Emergency.Render("EMERGENCY"),
		"selected": c.Selected.Render("row"), "next": c.Next.Render("next"), "title": c.PaneTitleFocused.Render("Slots"),
		"choice": c.ModalChoice.Render("No"),
	} {
		if strings.Contains(s, "38;") || strings.Contains(s, "48;") {
			t.Errorf("mono %s has a colour: %q", name, s)
		}
		if !strings.Contains(s, "\x1b[") {
			t.Errorf("mono %s has no attribute at all: %q", name, s)
		}
	}
	for _, n := range []Name{Dark, Light} {
		c := New(n).Console
		if c.Emergency.GetBackground() == nil || c.Step.GetBackground() == c.Auto.GetBackground() {
			t.Errorf("%s: emergency or the mode banners lack their colours", n)
		}
	}
	if New(Dark).Console.Selected.GetBackground() == New(Light).Console.Selected.GetBackground() {
		t.Error("dark and light select rows with the same background")
	}
}
