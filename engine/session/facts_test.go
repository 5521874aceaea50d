package session

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A session with Options.Facts reports its steps as typed events, in
// order, and does not also log them; without it, the same steps are log
// lines (the agent's), so no view has to read the other's words.
func TestStepsAreTypedEvents(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	var mu sync.Mutex
	var kinds []FactKind
	logged := &syncWriter{w: &bytes.Buffer{}}
	h.opts.Facts = func(e Fact) {
		mu.Lock()
		defer mu.Unlock()
		if !e.Kind.IsStep() {
			return // the session's own facts: the desired state loaded, the lock
		}
		if e.Step.Workload != "web" {
			t.Errorf("event of %q", e.Step.Workload)
		}
		kinds = append(kinds, e.Kind)
	}
	h.opts.Log = slog.New(slog.NewTextHandler(logged, nil))
	h.start()
	h.drive("the start done", func(s Snapshot) bool { return len(s.Recent) == 1 && s.Running == nil })
	mu.Lock()
	defer mu.Unlock()
	started, done := -1, -1
	for i, k := range kinds {
		switch k {
		case FactStepStarted:
			started = i
		case FactStepDone:
			done = i
		}
	}
	if started < 0 || done < started {
		t.Fatalf("events %v, want a start then its end", kinds)
	}
	if l := logged.String(); strings.Contains(l, "step started") || strings.Contains(l, "step done") {
		t.Fatalf("steps logged beside their events:\n%s", l)
	}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (s *syncWriter) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.String()
}

// Every fact is numbered from 1 without a gap, each snapshot carries the
// last of them, and a reader that fell behind what a snapshot carries is
// told how many it missed, never silently skipped.
func TestFactsAreNumberedAndAConsumerBehindIsTold(t *testing.T) {
	var g factLog
	for range 3*maxFacts + 7 {
		g.add(Fact{Kind: FactWaiting})
	}
	s := Snapshot{Facts: g.last()}
	if len(s.Facts) != maxFacts {
		t.Fatalf("snapshot carries %d facts, want %d", len(s.Facts), maxFacts)
	}
	for i, f := range s.Facts {
		if want := uint64(2*maxFacts+7) + uint64(i) + 1; f.Seq != want {
			t.Fatalf("fact %d numbered %d, want %d", i, f.Seq, want)
		}
	}
	facts, missed := s.FactsSince(10)
	if want := s.Facts[0].Seq - 11; missed != want || len(facts) != maxFacts {
		t.Fatalf("since 10: %d facts, %d missed; want %d, %d", len(facts), missed, maxFacts, want)
	}
	last := s.LastFact()
	if facts, missed := s.FactsSince(last - 2); missed != 0 || len(facts) != 2 || facts[0].Seq != last-1 {
		t.Fatalf("since last-2: %d facts from %v, %d missed", len(facts), facts, missed)
	}
	// What a snapshot holds never changes as the log goes on.
	before := slices.Clone(s.Facts)
	for range 2 * maxFacts {
		g.add(Fact{Kind: FactResumed})
	}
	if !slices.EqualFunc(before, s.Facts, func(a, b Fact) bool { return a.Seq == b.Seq && a.Kind == b.Kind }) {
		t.Fatal("a snapshot's facts changed as the log went on")
	}
}

// A session's own facts (not a step's) are typed: the desired state
// loading, the lock taken, a pause and its end, each in order and
// numbered, in every snapshot.
func TestSessionFactsAreTyped(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
	h.start()
	h.drive("the start done", func(s Snapshot) bool { return len(s.Recent) == 1 && s.Running == nil })
	h.s.Do(Pause{})
	h.drive("paused", func(s Snapshot) bool { return s.Pause != nil })
	h.s.Do(Resume{})
	snap := h.drive("resumed", func(s Snapshot) bool { return s.Pause == nil })
	var kinds []FactKind
	for i, f := range snap.Facts {
		if f.Seq != uint64(i)+1 {
			t.Fatalf("fact %d numbered %d", i, f.Seq)
		}
		if f.At.IsZero() || f.EngineAt.IsZero() {
			t.Fatalf("fact %v without its times", f.Kind)
		}
		kinds = append(kinds, f.Kind)
	}
	for _, want := range [][]FactKind{
		{FactDesired, FactStepStarted, FactStepDone, FactPaused, FactResumed},
	} {
		i := 0
		for _, k := range kinds {
			if i < len(want) && k == want[i] {
				i++
			}
		}
		if i < len(want) {
			t.Fatalf("facts %v, want %v in that order", kinds, want)
		}
	}
	if p := snap.Facts[len(snap.Facts)-1]; p.Kind != FactResumed || p.Pause == nil || !p.Pause.ByOperator {
		t.Fatalf("last fact %+v, want the operator's pause ended", p)
	}
}

// What the session says happened it says from its facts, in their words
// (Fact.Text): its notes are only its replies to intents it did nothing
// with. An operator's decision, a pause and its end, a rollback and a
// retry are facts; "no such workload" and "nothing to confirm" are
// replies.
func TestTheSessionSaysWhatHappenedFromItsFacts(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, desiredYAML("web:v2", 2), ModeStep)
	h.start()
	snap := h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh && s.Lock.Held && s.Next != "" })
	for _, i := range []Intent{Emergency{On: true}, Emergency{On: false}, Pause{}, Resume{}, ApproveRollout{},
		Rollback{Workload: "nope"}, Confirm{Yes: true}, Recreate{Workload: "web"}} {
		h.s.Do(i)
	}
	snap = h.drive("web on v2", func(s Snapshot) bool { return s.Steady && running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	said := func(text string) bool {
		return slices.ContainsFunc(snap.Facts, func(f Fact) bool { return strings.Contains(f.Text(), text) })
	}
	for _, want := range []string{"emergency: health is not waited for", "emergency off: health is waited for again",
		"rollout approved by tester", "paused: paused by tester", "resumed (paused by tester)",
		"recreate requested for [web]", "host lock taken", "rollout approval ended: the desired state is reached"} {
		if !said(want) {
			t.Errorf("no fact says %q:\n%s", want, describe(snap))
		}
	}
	var replies []string
	for _, n := range snap.Notes {
		replies = append(replies, n.Text)
	}
	want := []string{`roll back: no workload "nope" in the desired state`, "nothing to confirm"}
	if !slices.Equal(replies, want) {
		t.Errorf("notes %q, want the replies alone: %q", replies, want)
	}
}
