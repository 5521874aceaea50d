package tui

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// TestProgramApprovesAndQuits runs the console as a real Bubble Tea
// program (teatest) on a session on the fake engine: the first screen
// shows the pending roll, enter approves its first step, which the engine
// then runs, and q ends the program.
func TestProgramApprovesAndQuits(t *testing.T) {
	f, clock := rollEngine(t)
	s := startSession(t, f, clock, session.ModeStep)
	m := New(Options{Theme: theme.Mono, Do: s.Do, Snapshots: s.Snapshots()})
	tm := teatest.NewTestModel(t, m, teatest.WithInitialTermSize(80, 24))

	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		return bytes.Contains(b, []byte("STEP")) && bytes.Contains(b, []byte("1 start"))
	}, teatest.WithDuration(5*time.Second))
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("the engine changed before any key: %q", m)
	}
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	deadline := time.Now().Add(5 * time.Second)
	for len(f.Mutations()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("enter did not start the first step")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := f.Mutations(); len(m) != 1 || !strings.HasPrefix(m[0], "create:rollcall-web-0-") {
		t.Errorf("after one enter the engine saw %q, want one create in slot 0", m)
	}
	// q while a step runs asks first: quit once the start has ended.
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool { return bytes.Contains(b, []byte("✔ start web/0")) },
		teatest.WithDuration(5*time.Second))
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if _, ok := tm.FinalModel(t).(Model); !ok {
		t.Error("the program did not end on the console's model")
	}
}

// TestRunStopsTheSession: Run runs the session beside the program, and
// when the program ends (here: its context) the session has stopped too,
// with its lock released, before Run returns.
func TestRunStopsTheSession(t *testing.T) {
	f, clock := rollEngine(t)
	lock := filepath.Join(t.TempDir(), "rollcall.lock")
	s := session.New(session.Options{Client: f, Source: textSource{desiredYAML("web:v2")}, Mode: session.ModeStep,
		User: "tester", Now: clock.Now, LockPath: lock})
	var out bytes.Buffer
	var mu sync.Mutex
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, s, Options{Theme: theme.Mono, program: []tea.ProgramOption{
			tea.WithInput(nil), tea.WithOutput(lockedWriter{&mu, &out}), tea.WithWindowSize(80, 24), tea.WithoutSignalHandler()}})
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		shown := bytes.Contains(out.Bytes(), []byte("1 start"))
		mu.Unlock()
		if shown {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the console never showed the plan")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if _, open := <-s.Snapshots(); open {
		t.Error("the session still runs after Run returned")
	}
	// The lock is free again: another acting session takes it.
	s2 := session.New(session.Options{Client: f, Source: textSource{desiredYAML("web:v2")}, Mode: session.ModeStep,
		User: "second", Now: clock.Now, LockPath: lock})
	ctx2, cancel2 := context.WithCancel(context.Background())
	ended := make(chan error, 1)
	go func() { ended <- s2.Run(ctx2) }()
	defer func() { cancel2(); <-ended }()
	for snap := range s2.Snapshots() {
		if snap.Lock.Held {
			break
		}
		if snap.Lock.Holder != nil || snap.Mode == session.ModeWatch {
			t.Fatalf("the lock is still held after Run returned: %+v", snap.Lock)
		}
	}
}

// Run with a session that cannot start returns its error.
func TestRunReportsSessionError(t *testing.T) {
	var out bytes.Buffer
	var mu sync.Mutex
	err := Run(context.Background(), session.New(session.Options{}), Options{Theme: theme.Mono, program: []tea.ProgramOption{
		tea.WithInput(nil), tea.WithOutput(lockedWriter{&mu, &out}), tea.WithWindowSize(80, 24), tea.WithoutSignalHandler()}})
	if err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("Run = %v, want the session's error", err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
