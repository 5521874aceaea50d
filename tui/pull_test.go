package tui

import (
	"reflect"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// planLineOf is the screen's line of web's pull step (the one with its
// action and target), stripped of colour.
func planLineOf(t *testing.T, screen string) string {
	t.Helper()
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, "pull web/-") && !strings.Contains(l, "Plan") && !strings.Contains(l, "Detail") {
			return l
		}
	}
	t.Fatalf("no pull step line on screen:\n%s", screen)
	return ""
}

// withProgress is pulling() with its pull at layers/bytes done.
func withProgress(layersDone int, bytesDone int64) session.Snapshot {
	s := pulling()
	p := *s.Running.Pull
	p.LayersDone, p.BytesDone = layersDone, bytesDone
	s.Running.Pull = &p
	s.RunningSteps[0].Pull = &p
	return s
}

// A pull in flight shows a bar on its step that fills with the bytes
// done, beside its figures; before the engine says anything, an empty
// bar. Everything is rendered from the typed progress in the snapshot.
func TestPullStepShowsItsProgress(t *testing.T) {
	filled := func(s session.Snapshot) (int, string) {
		line := planLineOf(t, ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content))
		return strings.Count(line, "█"), line
	}
	none := pulling()
	none.Running.Pull, none.RunningSteps[0].Pull = nil, nil
	n0, l0 := filled(none)
	n40, l40 := filled(withProgress(2, 1677722))
	n100, l100 := filled(withProgress(4, 4<<20))
	if n0 != 0 || !strings.Contains(l0, "⇩") || !strings.Contains(l0, "waiting for the engine") {
		t.Errorf("before any progress: %d cells filled, want 0, and the engine awaited:\n%s", n0, l0)
	}
	if n40 == 0 || n40 >= n100 || !strings.Contains(l40, "40% · 2/4 layers · 1.6/4.0 MiB") {
		t.Errorf("at 40%%: %d cells filled (100%%: %d), figures:\n%s", n40, n100, l40)
	}
	if strings.Contains(l100, "░") || !strings.Contains(l100, "100% · 4/4 layers") {
		t.Errorf("at 100%%, the bar is not full:\n%s", l100)
	}
	// the pane's title says it too, and the detail pane draws it whole
	screen := ansi.Strip(sized(theme.Mono, 120, 40, withProgress(2, 1677722)).View().Content)
	if !strings.Contains(screen, "pull web/- · 40% · 2/4 layers") {
		t.Errorf("the plan's title lacks the pull's figures:\n%s", screen)
	}
	c := newConsole(t, withProgress(2, 1677722)).keys("tab")
	if got := c.screen(); !strings.Contains(got, "⇩ pulling █") {
		t.Errorf("the detail pane lacks the pull's bar:\n%s", got)
	}
}

// A failed pull shows its kind in the console's words, from the typed
// kind alone: the error's words (here, another kind's) are data, shown
// in the error line, never read. The next try's countdown is beside it.
func TestFailedPullShowsItsKind(t *testing.T) {
	for _, k := range docker.PullKinds {
		t.Run(string(k), func(t *testing.T) {
			s := pullFailed()
			s.Recent[0].PullKind = k // the fact's result is the same StepResult
			screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
			line := planLineOf(t, screen)
			if want := "⇩ " + pullKindWords(k) + " · retry in 12s"; !strings.Contains(line, want) {
				t.Errorf("kind %s: the step's line lacks %q:\n%s", k, want, line)
			}
			if k != docker.PullUnauthorized && strings.Contains(line, "⇩ unauthorized") {
				t.Errorf("kind %s: the step reads the error's words:\n%s", k, line)
			}
			if !strings.Contains(screen, "no basic auth credentials") && !strings.Contains(screen, "unauthorized: Head") {
				t.Errorf("the registry's words are not shown:\n%s", screen)
			}
		})
	}
	words := map[string]bool{}
	for _, k := range docker.PullKinds {
		if words[pullKindWords(k)] {
			t.Errorf("two kinds share the words %q", pullKindWords(k))
		}
		words[pullKindWords(k)] = true
	}
	c := newConsole(t, pullFailed()).keys("tab")
	if got := c.screen(); !strings.Contains(got, "⇩ unauthorized · retry in 12s") || !strings.Contains(got, "t tries it again now") {
		t.Errorf("the detail pane lacks the kind and the next try:\n%s", got)
	}
}

// t on a workload whose pull failed sends Retry at once (the pull goes
// again now; it touches nothing that serves, so nothing is asked); on a
// pull in flight it says there is nothing to retry.
func TestRetryKeyTriesAFailedPullAtOnce(t *testing.T) {
	c := newConsole(t, pullFailed()).keys("tab", "t")
	if got, want := c.rec.take(), []session.Intent{session.Retry{Workload: "web"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("t on a failed pull sent %#v, want %#v", got, want)
	}
	if c.m.dialog != nil {
		t.Errorf("t on a failed pull asked %q", c.m.dialog.title)
	}
	c = newConsole(t, pulling()).keys("tab", "t")
	if got := c.rec.take(); got != nil {
		t.Errorf("t on a pull in flight sent %#v", got)
	}
	if !strings.Contains(newConsole(t, pulling()).keys("?").screen(), "t retry") {
		t.Error("help does not offer t retry")
	}
}

// The pull's action has its own ink in every coloured theme.
func TestPullHasItsOwnInk(t *testing.T) {
	for _, n := range []theme.Name{theme.Dark, theme.Light} {
		styles := theme.New(n)
		k := inksOf(&styles)
		if got := k.actionInk(string(reconcile.ActPull)); got == (ink{}) || got.paint("pull") == "pull" {
			t.Errorf("%s: the pull action has no ink", n)
		}
	}
}
