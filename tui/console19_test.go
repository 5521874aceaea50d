package tui

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
	"github.com/rollcall/rollcall/theme"
)

// Issue 19: the console renders the engine's judgement, and every word of
// it can be read.

// slowStarter is midRoll with web/0's new container a slow starter: the
// engine calls it unhealthy (its probes failed past their retries) 40s
// after its start, it has not been healthy since, and web's
// health_deadline is deadline.
func slowStarter(deadline time.Duration) session.Snapshot {
	s := midRoll()
	w := &spec.Workload{Name: "web", Image: "web:v2", Version: "2", Replicas: 3, Restart: "unless-stopped",
		Resources: spec.Resources{NanoCPUs: limits().NanoCPUs, Memory: limits().Memory},
		Update:    spec.UpdatePolicy{Parallelism: 1, MinReady: 5 * time.Second, HealthDeadline: deadline}}
	s.Resolved = &spec.ResolvedDesired{Prefix: pfx, Workloads: []spec.Resolved{{Workload: w, ImageID: "sha256:2222", Hash: hashV2}}}
	var cs []docker.Container
	for _, v := range s.Slots[:3] {
		for _, c := range v.Containers {
			cs = append(cs, c.Container)
		}
	}
	cs[0].Health, cs[0].HealthySinceStart = docker.HealthUnhealthy, false
	plan := reconcile.Diff(s.Resolved, &reconcile.Observed{Now: t0, Containers: cs})
	s.Containers = cs
	s.Slots, s.Progress = session.SlotViews(s.Resolved, &plan, cs)
	return s
}

// The slots pane calls a slow starter booting until its health_deadline,
// as Diff does (DESIGN §1), and crashed only after it.
func TestSlowStarterIsBootingInTheSlotsPane(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		want     theme.Status
	}{
		{"before its deadline", 2 * time.Minute, theme.Booting},
		{"past its deadline", 30 * time.Second, theme.Crashed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := slowStarter(tc.deadline)
			b := newBoard(s)
			if got := b.slots[0].cs[0].health; got != tc.want {
				t.Fatalf("web/0's new container shows %s, want %s", got, tc.want)
			}
			screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
			row := lineWith(screen, "web-0-2222bbbb")
			if !strings.Contains(row, tc.want.Label()) {
				t.Fatalf("the slots row says %q, want %q", row, tc.want.Label())
			}
		})
	}
}

// The header counts the slots the rows show up-to-date and healthy: a
// needs-update row is not one, whatever the session's count says.
func TestHeaderCountsTheRowsItSitsBeside(t *testing.T) {
	s := converged()
	s.Slots[1].Containers[0].Relation = reconcile.RelNeedsUpdate // its limits change in place
	s.Slots[2].Containers[0].Relation = reconcile.RelStale
	s.Slots[1].Ready, s.Slots[2].Ready = false, false // as Diff has it
	s.Progress = session.Progress{Ready: 3, Total: 4} // the session counts needs-update as ready
	s.Fresh, s.Steady = true, false
	s.Standing = session.Standing{Kind: session.StandingRolling}
	screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
	up := 0
	for _, row := range newBoard(s).slots {
		line := lineWith(screen, row.cs[0].short)
		if strings.Contains(line, "up-to-date") && (strings.Contains(line, theme.Healthy.Label()) || strings.Contains(line, theme.Unverified.Label())) {
			up++
		}
	}
	if up != 2 {
		t.Fatalf("fixture: %d rows up-to-date and healthy, want 2:\n%s", up, screen)
	}
	if !strings.Contains(screen, "2/4 slots up-to-date & healthy") || !strings.Contains(screen, "2/4 ready") {
		t.Fatalf("the header and the slots title do not count the 2 rows up-to-date and healthy:\n%s", screen)
	}
}

// The full help fits 80×24 whatever the keys say: every enabled key shows
// whole, help, esc and quit included.
func TestFullHelpFitsEightyColumns(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap session.Snapshot
	}{
		{"step", midRoll()},
		{"auto, emergency on", emergency()},
		{"paused, a question waiting", func() session.Snapshot {
			s := downtime()
			s.Pause = &session.PauseInfo{Reason: "paused by alice", ByOperator: true}
			s.Confirm.Declined = true
			return s
		}()},
		{"watch", watching()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sized(theme.Mono, 80, 24, tc.snap)
			m, _ = press(m, "?")
			m.keys.Answer.SetEnabled(m.keys.acting) // the longest word c has
			screen := ansi.Strip(m.View().Content)
			lines := strings.Split(screen, "\n")
			if len(lines) != 24 {
				t.Fatalf("%d lines, want 24", len(lines))
			}
			help := strings.Join(lines[len(lines)-m.footerHeight():], "\n")
			if strings.Contains(help, "…") {
				t.Fatalf("the full help is cut:\n%s", help)
			}
			for _, col := range m.keys.FullHelp() {
				for _, b := range col {
					if b.Enabled() && !containsHelp(help, b.Help().Key, b.Help().Desc) {
						t.Errorf("the full help lacks %s %s:\n%s", b.Help().Key, b.Help().Desc, help)
					}
				}
			}
			for _, want := range []string{"?", "esc", "q"} {
				if !containsHelp(help, want, "") {
					t.Errorf("the full help lacks %q:\n%s", want, help)
				}
			}
		})
	}
}

// containsHelp reports whether a help line has key, then (after its
// column's padding) desc.
func containsHelp(help, key, desc string) bool {
	re := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(key) + `\s+` + regexp.QuoteMeta(desc))
	return re.MatchString(help)
}

// A when converged approves nothing and says so.
func TestApproveRolloutWhenConvergedSaysSo(t *testing.T) {
	c := newConsole(t, converged()).keys("A")
	if got := c.rec.take(); len(got) != 0 {
		t.Fatalf("A on a converged host sent %v", got)
	}
	if screen := c.screen(); !strings.Contains(screen, "nothing to approve: converged") {
		t.Fatalf("A on a converged host says nothing:\n%s", screen)
	}
	c = newConsole(t, midRoll()).keys("A")
	if got := c.rec.take(); !slices.Equal(got, []session.Intent{session.ApproveRollout{}}) {
		t.Fatalf("A mid-roll sent %v, want ApproveRollout", got)
	}
}

// x with no shell configured (the demo, a simulated engine) names no flag
// the command does not have.
func TestNoShellHintNamesNoFlag(t *testing.T) {
	for _, tc := range []struct {
		name string
		snap session.Snapshot
		want string
	}{
		{"a real engine", converged(), "no shell: this console runs none"},
		{"a simulated engine", func() session.Snapshot {
			s := converged()
			s.Engine = docker.EngineInfo{Simulated: true}
			return s
		}(), "no shell: the engine is simulated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			screen := newConsole(t, tc.snap).keys("x").screen()
			if strings.Contains(screen, "--shell") || !strings.Contains(screen, tc.want) {
				t.Fatalf("x says, want %q and no flag:\n%s", tc.want, lineWith(screen, "no shell"))
			}
		})
	}
}

// In watch mode a step is not queued: nothing here will run it.
func TestWatchModeStepsArePlannedNotQueued(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {120, 40}} {
		screen := ansi.Strip(sized(theme.Mono, sz[0], sz[1], watching()).View().Content)
		row := lineWith(screen, "restart worker/0")
		for _, l := range strings.Split(screen, "\n") {
			if strings.Contains(l, theme.Queued.Label()) {
				t.Errorf("%dx%d: a watch-mode row says queued: %q", sz[0], sz[1], l)
			}
		}
		if sz[0] >= wideWidth && !strings.Contains(row, theme.Planned.Label()) {
			t.Errorf("%dx%d: the restart row says %q, want %q", sz[0], sz[1], row, theme.Planned.Label())
		}
	}
	// step mode still queues
	if row := lineWith(ansi.Strip(sized(theme.Mono, 120, 40, midRoll()).View().Content), "roll    web/0"); !strings.Contains(row, theme.Queued.Label()) {
		t.Errorf("step mode: the roll row says %q, want queued", row)
	}
}

// A selected plan step's whole reason reads in the detail pane, wrapped,
// at 120×40 and 80×24.
func TestDetailShowsTheSelectedStepsWholeReason(t *testing.T) {
	s := midRoll()
	long := "image web:v1 → web:v2, version 1 → 2, limits cpus 0.5 → 1 mem 64M → 128M; rollcall-web-0-2222bbbb is healthy and has been for 30s, so the old one goes"
	s.Plan.Workloads[0].Steps[0].Reason = long
	key := s.Plan.Workloads[0].Steps[0].Key()
	s.Steps = map[string]session.StepStatus{key: {State: session.StepQueued}}
	s.Next = key
	for _, tc := range []struct {
		w, h   int
		scroll []string // the detail pane is 4 lines high at 80×24 (issue 26 row 5: the slots and plan first): it scrolls
		want   string
	}{
		{120, 40, nil, long},
		{80, 24, nil, "image web:v1 → web:v2, version 1 → 2, limits cpus 0.5 → 1 mem 64M →"},
		{80, 24, []string{"tab", "j", "j", "j"}, "128M; rollcall-web-0-2222bbbb is healthy and has been for 30s, so the old one goes"},
	} {
		c := &console{t: t, m: sized(theme.Mono, tc.w, tc.h, s), rec: &recorder{}}
		c.keys("tab") // the plan pane; its cursor is on the roll
		if got := c.selectedStep(); got == nil || got.key != key {
			t.Fatalf("%dx%d: the roll is not selected", tc.w, tc.h)
		}
		c.keys(tc.scroll...) // to the detail pane: it still shows the step
		screen := c.screen()
		if !strings.Contains(screen, "Detail  step · roll web/0") {
			t.Errorf("%dx%d: the detail pane does not show the step:\n%s", tc.w, tc.h, screen)
		}
		if got := unwrapDetail(screen, tc.w); !strings.Contains(got, tc.want) {
			t.Errorf("%dx%d: the detail pane lacks %q; it reads %q:\n%s", tc.w, tc.h, tc.want, got, screen)
		}
	}
	// back on the slots pane, the detail pane follows the slots again
	c := newConsole(t, s).keys("tab", "tab", "tab", "tab")
	if screen := c.screen(); !strings.Contains(screen, "Detail  diff · web/0") {
		t.Errorf("on the slots pane the detail pane does not follow the slot:\n%s", screen)
	}
}

// unwrapDetail joins the words of the detail pane's lines (the left column
// at 80 columns, the right at 120), so a wrapped reason reads whole.
func unwrapDetail(screen string, w int) string {
	var words []string
	in := false
	for _, l := range strings.Split(screen, "\n") {
		cell := l
		if w >= wideWidth {
			i := strings.LastIndex(l, "│")
			if i < 0 {
				continue
			}
			cell = l[i+len("│"):]
		} else if i := strings.Index(l, "│"); i >= 0 {
			cell = l[:i]
		}
		switch {
		case strings.Contains(cell, "Detail "):
			in = true
			continue
		case strings.Contains(cell, "Events "):
			in = false
		}
		if in {
			words = append(words, strings.Fields(cell)...)
		}
	}
	return strings.Join(words, " ")
}

func lineWith(screen, s string) string {
	for _, l := range strings.Split(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// A long note wraps in the events pane: it reads whole at 120×40 and 80×24.
func TestEventNotesReadWhole(t *testing.T) {
	s := converged()
	note := "desired state broken, keeping the last good one: rollcall.yaml:4:12: web's image web:v2 → web:v3 does not parse; the last good one stays"
	s.Facts = []session.Fact{{Seq: 3, Kind: session.FactDesiredError, EngineAt: t0.Add(-time.Second), Source: "rollcall.yaml",
		Err: errors.New("rollcall.yaml:4:12: web's image web:v2 → web:v3 does not parse; the last good one stays")}}
	for _, sz := range [][2]int{{120, 40}, {80, 24}} {
		screen := ansi.Strip(sized(theme.Mono, sz[0], sz[1], s).View().Content)
		var words []string
		in := false
		for _, l := range strings.Split(screen, "\n") {
			i := strings.LastIndex(l, "│")
			if i < 0 {
				continue
			}
			cell := l[i+len("│"):]
			if strings.Contains(cell, "Events ") {
				in = true
				continue
			}
			if in {
				words = append(words, strings.Fields(cell)...)
			}
		}
		got := strings.ReplaceAll(strings.Join(words, " "), "- ", "-") // a wrap at a hyphen
		if !strings.Contains(got, "note "+note) {
			t.Errorf("%dx%d: the events pane lacks the whole note; it reads %q:\n%s", sz[0], sz[1], got, screen)
		}
	}
}

// The events pane lists what happened from the session's facts, in the
// session's words (Fact.Text), beside its replies: a pause, a hold, a
// canary step's verdict. A step's start, its progress and a plain step's
// end are not listed (the slots and the finished steps show them).
func TestEventsListTheSessionsFacts(t *testing.T) {
	s := converged()
	step := reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: 1, Container: "rollcall-web-1-2222bbbb", Reason: "missing"}
	at := t0.Add(-time.Minute)
	s.Facts = []session.Fact{
		{Seq: 1, Kind: session.FactStepStarted, EngineAt: at, Step: step},
		{Seq: 2, Kind: session.FactStepDone, EngineAt: at.Add(time.Second), Step: step, Duration: time.Second},
		{Seq: 3, Kind: session.FactPaused, EngineAt: at.Add(2 * time.Second), Pause: &session.PauseInfo{Reason: "paused by alice", ByOperator: true}},
		{Seq: 4, Kind: session.FactHoldSet, EngineAt: at.Add(3 * time.Second),
			Hold: &session.HoldFact{Workload: "web", Hashes: []string{hashV2}, By: "alice", Cause: state.HoldByOperator}},
	}
	s.Notes = []session.Note{{At: at.Add(4 * time.Second), Text: "nothing to confirm"}}
	screen := ansi.Strip(sized(theme.Mono, 120, 40, s).View().Content)
	for _, want := range []string{"note paused: paused by alice", "note web: spec " + hashV2[:8] + " on hold", "(rolled back by the operator)", "note nothing to confirm"} {
		if !strings.Contains(screen, want) {
			t.Errorf("the events pane lacks %q:\n%s", want, screen)
		}
	}
	for _, not := range []string{"step-started", "start web/1 done"} {
		if strings.Contains(screen, not) {
			t.Errorf("the events pane lists %q:\n%s", not, screen)
		}
	}
}
