package main

import (
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/state"
)

// fullPlan is a plan with one of every kind of line the tree shows: a
// workload error, spec diff lines, a failure, a start, a stop-first roll
// (downtime), a restart, a wait with its deadline, a stop and a roll that
// drain (pre_stop and drain ≤, and a drain alone), then rows (one that
// drains), workload notes, a plan note, and a spec on hold with the slots
// it keeps back.
func fullPlan() (reconcile.Plan, []session.Hold) {
	until := time.Date(2026, 3, 1, 12, 0, 40, 0, time.UTC)
	p := reconcile.Plan{
		Workloads: []reconcile.WorkloadPlan{
			{Name: "api", Error: "image demo:v9 is not on the engine (pull it first)"},
			{
				Name:    "web",
				Changes: []string{"~ image: demo:v1 → demo:v2", "~ labels[tier]: a → b"},
				Failures: []reconcile.Failure{{Workload: "web", Slot: 1, Container: "rctest-web-1-31447235",
					Action: "pause", Reason: "not healthy within its health deadline 30s"}},
				Steps: []reconcile.Step{
					{Action: reconcile.ActStart, Workload: "web", Slot: 2, Container: "rctest-web-2-31447235", Reason: "missing: slot 2 of 3"},
					{Action: reconcile.ActRoll, Workload: "web", Slot: 0, Container: "rctest-web-0-01234567", ContainerID: "b0",
						Reason: "image demo:v1 → demo:v2; rctest-web-0-31447235 is healthy", PreStop: []string{"/demoapp", "-drain"}, Drain: 5 * time.Second},
					{Action: reconcile.ActStop, Workload: "web", Slot: 3, Container: "rctest-web-3-31447235", ContainerID: "d3",
						Reason: "stop-first: slot 3 is down until its new container is healthy", Downtime: true, Drain: 2 * time.Second},
					{Action: reconcile.ActRestart, Workload: "web", Slot: 4, Container: "rctest-web-4-31447235", ContainerID: "e4", Reason: "crashed: exit 137 (OOM)"},
					{Action: reconcile.ActWait, Workload: "web", Slot: 1, Container: "rctest-web-1-31447235", Reason: "booting: health deadline in 30s", Until: until},
				},
				Then: []reconcile.Step{
					{Action: reconcile.ActRoll, Workload: "web", Slot: 1, Container: "rctest-web-1-01234567", ContainerID: "b1", Then: true,
						Reason: "image demo:v1 → demo:v2; once rctest-web-1-31447235 is healthy", PreStop: []string{"/demoapp", "-drain"}, Drain: 5 * time.Second},
					{Action: reconcile.ActStart, Workload: "web", Slot: 5, Container: "rctest-web-5-31447235", Then: true, Reason: "missing: slot 5 of 6"},
				},
				Notes: []string{"slot 6 held: spec 31447235 is on hold"},
				Held:  []int{6}, HeldSpec: "31447235aaaaaaaa",
			},
			{
				Name:    "worker",
				Changes: []string{"- workload removed from the desired state"},
				Steps: []reconcile.Step{{Action: reconcile.ActStop, Workload: "worker", Slot: reconcile.NoSlot, Container: "rctest-worker-x",
					ContainerID: "c0", Reason: "extra: workload worker is not in the desired state", Drain: 5 * time.Second}},
			},
		},
		Notes: []string{"rctest-stray: no workload label (left alone)"},
	}
	holds := []session.Hold{
		{Workload: "web", Hash: "31447235aaaaaaaa", Since: time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC), By: "tester",
			Cause: state.HoldByFailureAction, Reason: "web/6: rollback: not healthy"},
		{Workload: "gone", Hash: "99999999bbbbbbbb"},
	}
	return p, holds
}

// TestStyledPlanMatchesPlain: the plan tree is built once and rendered
// styled on a terminal or plain when piped: with the escape sequences
// stripped, the styled tree is the plain one, in every theme, for a plan
// with every kind of line (a drain, a then row, a hold, a failure, a
// wait's deadline, downtime, errors and notes); the plain tree is the
// golden file, so a line or a part dropped from both shows too; and every
// typed datum of the plan is on its line.
func TestStyledPlanMatchesPlain(t *testing.T) {
	p, holds := fullPlan()
	h := newHarness(t, nil)
	var stdout syncBuffer
	e := h.env(strings.NewReader(""), &stdout, &syncBuffer{})
	plain := screenFor(e, &globals{theme: "auto"}, &stdout)
	if plain.styled {
		t.Fatal("piped stdout is styled")
	}
	want := plain.plan(p, holds)
	golden(t, "plan_tree.golden", want)

	h.terminal["stdout"] = true
	e = h.env(strings.NewReader(""), &stdout, &syncBuffer{})
	for _, th := range []string{"auto", "dark", "light", "mono"} {
		styled := screenFor(e, &globals{theme: th}, &stdout)
		got := styled.plan(p, holds)
		if !strings.Contains(got, "\x1b[") {
			t.Errorf("theme %s: no styling on a terminal", th)
		}
		if s := ansi.Strip(got); s != want {
			t.Errorf("theme %s: stripped styled plan differs from the plain one:\n%s\n---\n%s", th, s, want)
		}
	}

	lines := strings.Split(want, "\n")
	has := func(what string, parts ...string) {
		t.Helper()
		for _, l := range lines {
			ok := true
			for _, part := range parts {
				ok = ok && strings.Contains(l, part)
			}
			if ok {
				return
			}
		}
		t.Errorf("no line of the plan holds %s %q:\n%s", what, parts, want)
	}
	for _, w := range p.Workloads {
		has("the workload", w.Name)
		if w.Error != "" {
			has("the error", w.Name, w.Error)
		}
		for _, c := range w.Changes {
			has("the change", c)
		}
		for _, f := range w.Failures {
			has("the failure", f.Container, f.Reason, f.Action)
		}
		for _, n := range w.Notes {
			has("the note", n)
		}
		for _, s := range append(append([]reconcile.Step{}, w.Steps...), w.Then...) {
			parts := []string{string(s.Action), s.Container, s.Reason}
			if s.Then {
				parts = append(parts, "then ")
			}
			if d := s.DrainText(); d != "" {
				parts = append(parts, "("+d+")")
			}
			if !s.Until.IsZero() {
				parts = append(parts, s.Until.UTC().Format(time.TimeOnly))
			}
			has("the step", parts...)
		}
	}
	for _, n := range p.Notes {
		has("the plan note", n)
	}
	has("the summary", p.Summary(), "then "+p.ThenSummary())
	for _, hd := range holds {
		has("the hold", "on hold: "+hd.Workload, shortHash(hd.Hash), hd.By, hd.Reason)
	}
	has("the held slots", "slot 6 not started", "rollcall retry web")
}
