package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// demoLike is midRoll with the demo's image names: a web:v2 is
// rollcall-demoapp:v2, the crashed worker's container needs an update,
// a second worker runs, and the roll's reason is as long as the demo's.
func demoLike() session.Snapshot {
	s := midRoll()
	for i := range s.Slots {
		if d := s.Slots[i].Desired; d != nil {
			nd := *d
			nd.Image = "rollcall-demoapp:v2"
			nd.Version = "2"
			s.Slots[i].Desired = &nd
		}
	}
	w := worker(false)
	w.Slot = 1
	w.Containers[0].Relation = reconcile.RelNeedsUpdate
	w.Containers[0].Name = "rollcall-worker-1-3333cccc"
	s.Slots = append(s.Slots, w)
	s.Plan.Workloads[0].Steps[0].Reason = "image rollcall-demoapp:v1 → rollcall-demoapp:v2, version 1 → 2; rollcall-web-0-2222bbbb is healthy"
	return s
}

// words is a screen's words, in order, with the plan's continuation
// indents and the panes' rules gone: a wrapped text reads whole in it.
func words(screen string) string { return strings.Join(strings.Fields(screen), " ") }

// TestWhatTheOperatorNeedsReadsWhole (issue 26 row 5): at 120×40 and 80×24
// the desired image and tag, its version, the relation and every slot's
// row read whole; a step's reason reads whole in the plan; the header's
// error is wrapped, not cut.
func TestWhatTheOperatorNeedsReadsWhole(t *testing.T) {
	for _, sz := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		s := demoLike()
		m := sized(theme.Mono, sz.w, sz.h, s)
		m, _ = press(m, "tab") // the plan: its cursor is on the roll
		screen := ansi.Strip(m.View().Content)
		whole := []string{"rollcall-demoapp:v2 (2)", "needs-update", "worker/1", "worker-1-3333cccc"}
		if sz.w < 120 {
			// 80 columns hold no room for both names whole: the image keeps
			// its tag and version, the container its slot and spec hash
			whole = []string{"…lcall-demoapp:v2 (2)", "needs-update", "worker/1", "…er-1-3333cccc"}
		}
		for _, want := range whole {
			if !strings.Contains(screen, want) {
				t.Errorf("%dx%d: the screen lacks %q whole:\n%s", sz.w, sz.h, want, screen)
			}
		}
		plan := screen[strings.Index(screen, " Plan "):]
		if sz.w >= 120 {
			plan = columnOf(plan, 0, 72) // the plan's column
		}
		if want := s.Plan.Workloads[0].Steps[0].Reason; !strings.Contains(words(plan), want) {
			t.Errorf("%dx%d: the plan does not read the roll's reason whole (%q):\n%s", sz.w, sz.h, want, plan)
		}

		s.SourceErr = errors.New(`rollcall.yaml:7:5: unknown key "replica" under workloads.web`)
		m = sized(theme.Mono, sz.w, sz.h, s)
		screen = ansi.Strip(m.View().Content)
		head := screen[:strings.Index(screen, " Slots ")]
		if want := `rollcall.yaml:7:5: unknown key "replica" under workloads.web (the last good desired state stays in force)`; !strings.Contains(words(head), want) {
			t.Errorf("%dx%d: the header does not read the error whole (%q):\n%s", sz.w, sz.h, want, head)
		}
	}
}

// columnOf is the cells from x to x+w of each line of screen.
func columnOf(screen string, x, w int) string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		out = append(out, ansi.Cut(l, x, x+w))
	}
	return strings.Join(out, "\n")
}

// TestKeepTagCutsThePathFirst (issue 26 row 5): an image reference too
// long for its cells loses its registry and path from the left; its tag
// stays.
func TestKeepTagCutsThePathFirst(t *testing.T) {
	for _, tc := range []struct {
		image string
		w     int
		want  string
	}{
		{"registry.example.com/team/rollcall-demoapp:v2", 30, "…/team/rollcall-demoapp:v2"},
		{"registry.example.com/team/rollcall-demoapp:v2", 22, "…/rollcall-demoapp:v2"},
		{"registry.example.com/team/rollcall-demoapp:v2", 12, "…-demoapp:v2"},
		{"rollcall-demoapp:v2", 19, "rollcall-demoapp:v2"},
	} {
		if got := keepTag(tc.image, tc.w); got != tc.want {
			t.Errorf("keepTag(%q, %d) = %q, want %q", tc.image, tc.w, got, tc.want)
		}
	}
}

// TestPinnedShowsTheRevisionsImage (issue 26 row 5): a workload pinned to
// a revision whose tag names another image now runs it from the image ID;
// the DESIRED column shows the revision's image reference, not the ID.
func TestPinnedShowsTheRevisionsImage(t *testing.T) {
	s := pinnedMidRoll()
	id := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for i := range s.Slots {
		if s.Slots[i].Workload == "web" {
			d := *s.Slots[i].Desired
			d.Image, d.Version = id, "1"
			s.Slots[i].Desired = &d
		}
	}
	s.Pins[0].FromImageID = true
	screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
	row := lineWith(screen, "web/1 ")
	if !strings.Contains(row, "web:v1 (1)") || strings.Contains(row, "sha256") || strings.Contains(row, "0123456789") {
		t.Errorf("the pinned slot's DESIRED is not the revision's image: %q", row)
	}
}
