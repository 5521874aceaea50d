package session

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// A session with Options.Events reports its steps as typed events, in
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
