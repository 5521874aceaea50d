package theme

import (
	"image/color"
	"testing"

	"charm.land/lipgloss/v2"
)

// TestContrast: every text colour of dark and light reads against the
// background its palette is made for, and every style that sets a
// background of its own (banners, badges, the selected row) reads on it.
// The header's progress once was orange on light blue (1.3:1).
func TestContrast(t *testing.T) {
	if c := Contrast(lipgloss.Color("#000000"), lipgloss.Color("#FFFFFF")); c < 20.9 || c > 21.1 {
		t.Fatalf("black on white: %.2f, want 21", c)
	}
	for _, n := range []Name{Dark, Light} {
		p, s := PaletteOf(n), New(n)
		for name, fg := range map[string]color.Color{
			"accent": p.Accent, "muted": p.Muted, "ok": p.OK, "warn": p.Warn, "bad": p.Bad,
			"start": p.Start, "roll": p.Roll, "restart": p.Restart, "update": p.Update, "stop": p.Stop, "wait": p.Wait,
		} {
			if c := Contrast(fg, p.Background); c < MinContrast {
				t.Errorf("%s: %s text on the background: %.2f:1, want ≥ %.1f", n, name, c, MinContrast)
			}
		}
		c := s.Console
		for name, st := range map[string]lipgloss.Style{
			"watch": c.Watch, "step": c.Step, "auto": c.Auto, "paused": c.Paused, "emergency": c.Emergency,
			"halted": c.Halted, "progress": c.Progress, "progress done": c.ProgressDone, "stale": c.Stale,
			"rolled back": c.RolledBack, "modal choice": c.ModalChoice,
		} {
			fg, bg := st.GetForeground(), st.GetBackground()
			if bg == nil || fg == nil {
				t.Errorf("%s: %s sets no colour pair (fg %v, bg %v)", n, name, fg, bg)
				continue
			}
			if c := Contrast(fg, bg); c < MinContrast {
				t.Errorf("%s: %s: %.2f:1, want ≥ %.1f", n, name, c, MinContrast)
			}
		}
		// The selected row keeps the text's own colours: plain text and the
		// muted and status colours must read on it too (3:1, large enough
		// for a bar the eye already found).
		for name, fg := range map[string]color.Color{"ok": p.OK, "warn": p.Warn, "bad": p.Bad, "accent": p.Accent} {
			if c := Contrast(fg, p.Select); c < 3 {
				t.Errorf("%s: %s on the selected row: %.2f:1", n, name, c)
			}
		}
	}
}
