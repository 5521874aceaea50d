package tui

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// TestMain pins the time zone, so the times the console shows are the
// same wherever the tests run (the goldens mask them too).
func TestMain(m *testing.M) {
	time.Local = time.UTC
	os.Exit(m.Run())
}

// update feeds the model one message and returns the model and command.
func update(m Model, msg tea.Msg) (Model, tea.Cmd) {
	nm, cmd := m.Update(msg)
	return nm.(Model), cmd
}

// sized is a console of theme th at w×h showing snap.
func sized(th theme.Name, w, h int, snap session.Snapshot, opts ...func(*Options)) Model {
	o := Options{Theme: th}
	for _, f := range opts {
		f(&o)
	}
	m := New(o)
	m, _ = update(m, tea.WindowSizeMsg{Width: w, Height: h})
	m, _ = update(m, snapshotMsg{snap: snap, ok: true})
	return m
}

// press sends a key, by its name as KeyMap spells it.
func press(m Model, k string) (Model, tea.Cmd) { return update(m, keyMsg(k)) }

func keyMsg(k string) tea.KeyPressMsg {
	switch k {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	case "ctrl+c":
		return tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl}
	}
	r := []rune(k)[0]
	return tea.KeyPressMsg{Code: r, Text: k}
}

// recorder collects the intents the console sends.
type recorder struct {
	mu  sync.Mutex
	got []session.Intent
}

func (r *recorder) do(i session.Intent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, i)
}

func (r *recorder) take() []session.Intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}

// run executes cmd and the commands it batches, the way the program would,
// and returns their messages. A command still blocked after a moment (a
// tick, a wait on a channel) is left behind.
func run(cmd tea.Cmd) []tea.Msg {
	msgs, _ := runPending(cmd)
	return msgs
}

// runPending is run that also returns where the messages of the commands
// left behind will arrive.
func runPending(cmd tea.Cmd) ([]tea.Msg, []chan tea.Msg) {
	if cmd == nil {
		return nil, nil
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	var msg tea.Msg
	select {
	case msg = <-done:
	case <-time.After(50 * time.Millisecond):
		return nil, []chan tea.Msg{done}
	}
	switch msg := msg.(type) {
	case nil:
		return nil, nil
	case tea.BatchMsg:
		var out []tea.Msg
		var pending []chan tea.Msg
		for _, c := range msg {
			o, p := runPending(c)
			out, pending = append(out, o...), append(pending, p...)
		}
		return out, pending
	}
	return []tea.Msg{msg}, nil
}

var (
	sgr      = regexp.MustCompile(`\x1b\[[0-9;:]*m`)
	duration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m|h|d)(\d+(\.\d+)?(ms|s|m))*\b`)
	clockRe  = regexp.MustCompile(`\b\d\d:\d\d:\d\d\b`)
	dateRe   = regexp.MustCompile(`\b\d{4}-\d\d-\d\d\b`)
	idRe     = regexp.MustCompile(`\b[0-9a-f]{12,64}\b`)
)

// mask hides what changes from run to run (durations, times of day, dates
// and engine IDs) behind #s of the same width, in the text between the
// styling only.
func mask(s string) string {
	var b strings.Builder
	last := 0
	hide := func(m string) string { return strings.Repeat("#", len([]rune(m))) }
	text := func(t string) {
		for _, re := range []*regexp.Regexp{dateRe, clockRe, idRe, duration} {
			t = re.ReplaceAllStringFunc(t, hide)
		}
		b.WriteString(t)
	}
	for _, loc := range sgr.FindAllStringIndex(s, -1) {
		text(s[last:loc[0]])
		b.WriteString(s[loc[0]:loc[1]])
		last = loc[1]
	}
	text(s[last:])
	return b.String()
}

// requireGolden compares the masked screen with testdata/<test>.golden.
// The golden holds the screen as the terminal gets it, styling included
// (cat it to see it); on a mismatch the screen goes to a .got file beside
// it. `go test ./tui -update` writes the goldens.
func requireGolden(t *testing.T, screen string) {
	t.Helper()
	screen = mask(screen)
	path := filepath.Join("testdata", t.Name()+".golden")
	gotPath := strings.TrimSuffix(path, ".golden") + ".got"
	if f := flag.Lookup("update"); f == nil || f.Value.String() != "true" {
		if want, err := os.ReadFile(path); err != nil || string(want) != screen {
			if err := os.MkdirAll(filepath.Dir(gotPath), 0o755); err == nil {
				_ = os.WriteFile(gotPath, []byte(screen), 0o644)
			}
		} else {
			_ = os.Remove(gotPath)
		}
	}
	golden.RequireEqual(t, screen)
}
