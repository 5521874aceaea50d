package tui

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/theme"
)

// TestAgesMoveOnTheClock: an age on an idle console moves on its own, a
// second at a time while it is under a minute ("36s", then "37s"), and
// the console's one timer is armed for that second, no sooner.
func TestAgesMoveOnTheClock(t *testing.T) {
	s := converged()
	s.Slots[0].Containers[0].Container = ctr("web", 0, "web:v2", "sha256:2222", hashV2, "2", 37*time.Second)
	c := newConsole(t, s)
	row := func() string { return lineWith(c.screen(), "web-0-2222bbbb") }
	if !strings.Contains(row(), " 36s ") || !strings.Contains(c.screen(), "up 36s") || !strings.Contains(c.screen(), "created 37s ago") {
		t.Fatalf("fixture: web/0 is not up 36s:\n%s", c.screen())
	}
	for i, want := range []string{"37s", "38s", "39s"} {
		at := c.m.tickAt
		if next := t0.Add(time.Duration(i+1) * time.Second); !at.Equal(next) {
			t.Fatalf("the clock is armed for %s, want %s (the next second, when %s shows)", at, next, want)
		}
		c.m, _ = update(c.m, clockMsg{due: at, at: at})
		if !strings.Contains(row(), " "+want+" ") {
			t.Fatalf("the clock fired at %s: the row reads %q, want it up %s", at, row(), want)
		}
	}
	// the detail pane moves with it
	if scr := c.screen(); !strings.Contains(scr, "up 39s") || !strings.Contains(scr, "created 40s ago") {
		t.Errorf("the detail pane did not move with the clock:\n%s", scr)
	}
	// a timer that fired late brings the time it fired at
	at := c.m.tickAt
	c.m, _ = update(c.m, clockMsg{due: at, at: at.Add(25 * time.Second)})
	if !strings.Contains(row(), " 1m ") {
		t.Errorf("25s late, the row reads %q, want it up 1m", row())
	}
}

// TestClockArmsForTheNextChange: with every age on screen in minutes or
// hours, the timer waits for the first of them to change, not a second.
func TestClockArmsForTheNextChange(t *testing.T) {
	// idleSnapshot(): 30s past t0. web/0 was created 10m30s before, started a
	// second after it: the detail pane's "created 10m ago" turns 11m in
	// 30s, every "up" (10m29s, 11m29s, 12m29s, 3h0m29s) later.
	c := newConsole(t, idleSnapshot(40))
	now := c.m.now
	if got, want := c.m.tickAt, now.Add(30*time.Second); !got.Equal(want) {
		t.Fatalf("armed for %s from now, want 30s (created 10m30s ago turns 11m)", c.m.tickAt.Sub(now))
	}
	at := c.m.tickAt
	c.m, _ = update(c.m, clockMsg{due: at, at: at})
	if !strings.Contains(c.screen(), "created 11m ago") {
		t.Fatalf("at %s the detail pane does not say created 11m ago:\n%s", at.Sub(now), c.screen())
	}
	// web/0 up 10m59s: its "10m" turns 11m a second on
	if got, want := c.m.tickAt, at.Add(time.Second); !got.Equal(want) {
		t.Fatalf("armed for %s on, want 1s (up 10m59s turns 11m)", c.m.tickAt.Sub(at))
	}
	at = c.m.tickAt
	c.m, _ = update(c.m, clockMsg{due: at, at: at})
	if row := lineWith(c.screen(), "web-0-2222bbbb"); !strings.Contains(row, " 11m ") {
		t.Fatalf("the row reads %q, want up 11m", row)
	}
	// now every figure is a whole minute or more from its next change:
	// created 11m1s turns 12m in 59s, the rest in 60s or more
	if got, want := c.m.tickAt, at.Add(59*time.Second); !got.Equal(want) {
		t.Errorf("armed for %s on, want 59s: with minutes shown, not every second", c.m.tickAt.Sub(at))
	}

	// a timer an earlier one replaced fires: it moves the clock, and the
	// earlier one stays armed
	armed := c.m.tickAt
	c.m, _ = update(c.m, clockMsg{due: armed.Add(time.Hour), at: at.Add(time.Second)})
	if !c.m.tickAt.Equal(armed) {
		t.Errorf("a stale timer moved the armed one from %s to %s", armed, c.m.tickAt)
	}

	// the figures move (a new snapshot): the timer armed for the old ones
	// stops, drawing nothing, and one is armed for the new
	m := newConsole(t, idleSnapshot(41)).m
	m.stopClock()
	old := m.armClock()
	young := idleSnapshot(42)
	young.Slots[0].Containers[0].Container = ctr("web", 0, "web:v2", "sha256:2222", hashV2, "2", 5*time.Second)
	young.Slots[0].Containers[0].Created = young.At.Add(-5 * time.Second)
	young.Slots[0].Containers[0].StartedAt = young.At.Add(-4 * time.Second)
	m, _ = update(m, snapshotMsg{snap: young, ok: true})
	if want := young.At.Add(time.Second); !m.tickAt.Equal(want) {
		t.Errorf("a container up 4s: armed for %s, want %s", m.tickAt, want)
	}
	stopped := make(chan tea.Msg, 1)
	go func() { stopped <- old() }()
	select {
	case msg := <-stopped:
		if msg != nil {
			t.Errorf("the timer for the old figures fired %#v, want it stopped", msg)
		}
	case <-time.After(5 * time.Second):
		t.Error("the timer for the old figures was not stopped")
	}

	// no container and no countdown on screen: nothing armed
	if m := sized(theme.Mono, 120, 40, base(1)); !m.tickAt.IsZero() {
		t.Errorf("with no figure on screen the clock is armed for %s", m.tickAt)
	}
}

// TestAgeNextIsTheNextChange: ageNext and countdownNext say exactly when
// the figure age or countdown draws changes: just before, it is the same;
// then, it is another.
func TestAgeNextIsTheNextChange(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 7))
	ds := []time.Duration{-3 * time.Second, -1, 0, 1, time.Second - 1, time.Second, 36 * time.Second,
		59*time.Second + 999*time.Millisecond, time.Minute, 3*time.Minute + 10*time.Second, time.Hour - 1, time.Hour,
		47*time.Hour + 59*time.Minute, 48 * time.Hour, 5*24*time.Hour + time.Minute}
	for range 2000 {
		ds = append(ds, time.Duration(rng.Int64N(int64(72*time.Hour)))-time.Minute)
	}
	for _, d := range ds {
		n := ageNext(d)
		if n <= 0 {
			t.Fatalf("ageNext(%s) = %s, want a time to come", d, n)
		}
		if age(d+n-1) != age(d) || age(d+n) == age(d) {
			t.Fatalf("age %s (%q): ageNext says %s, but %q just before and %q then", d, age(d), n, age(d+n-1), age(d+n))
		}
	}
	now := t0
	for _, d := range ds {
		until := now.Add(d)
		n := countdownNext(now, until)
		shown := countdown(now, until)
		if n == 0 {
			if shown != "now" || countdown(now.Add(time.Hour), until) != "now" {
				t.Fatalf("countdown %s (%q): countdownNext says it stays", d, shown)
			}
			continue
		}
		before, then := countdown(now.Add(n-1), until), countdown(now.Add(n), until)
		if before != shown || then == shown {
			t.Fatalf("countdown %s (%q): countdownNext says %s, but %q just before and %q then", d, shown, n, before, then)
		}
	}
}

// TestAgesTickTogether (issue 26 row 19): containers started at
// different fractions of a second still change their figures at one
// moment each second: the console draws one frame a second for all of
// them, not one for each.
func TestAgesTickTogether(t *testing.T) {
	s := converged()
	for i := range s.Slots {
		for j := range s.Slots[i].Containers {
			c := &s.Slots[i].Containers[j]
			off := time.Duration(i*230+j*110) * time.Millisecond // phases apart
			c.Created, c.StartedAt = t0.Add(-20*time.Second-off), t0.Add(-10*time.Second-off)
		}
	}
	m := sized(theme.Mono, 120, 40, s)
	frames := 0
	for {
		next := m.nextChange()
		if next.IsZero() || next.After(t0.Add(10*time.Second)) {
			break
		}
		m, _ = update(m, clockMsg{due: next, at: next})
		frames++
	}
	if frames > 10 {
		t.Errorf("%d clock frames in 10s of young containers, want one a second (10)", frames)
	}
}
