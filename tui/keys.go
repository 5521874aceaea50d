package tui

import (
	"slices"

	"charm.land/bubbles/v2/key"
)

// KeyMap is every key the console answers to (DESIGN §8). The mutating
// bindings are disabled in watch mode, so help does not offer them; the
// session's read-only client is the second lock behind them.
type KeyMap struct {
	Up, Down, Top, Bottom, NextPane, PrevPane key.Binding

	Approve, ApprovePlan, Auto, Pause, Skip key.Binding
	Rollback, Recreate, Emergency, Answer   key.Binding
	// Retry lifts the hold of the selected workload (a rolled-back spec),
	// and its pin.
	Retry key.Binding
	// Pin pins the selected workload to its revision before the desired
	// spec and rolls that in (DESIGN §12, rollcall rollback); Rollback
	// aborts its roll at once (holds the new spec, stops its new
	// containers where an old one still serves). Help tells them apart.
	Pin key.Binding

	// Looking at a container: the full-screen reader (inspect, health
	// output, log tail), a shell in it, its ID to the clipboard.
	Inspect, Shell, Copy key.Binding
	// TakeLock is offered in watch mode once the lock this console wanted
	// came free (LockInfo.Free): one key takes it, in step mode.
	TakeLock key.Binding

	Logs, Diff, Filter, Help, Quit key.Binding
	// Close leaves help, the reader and dialogs.
	Close key.Binding

	// In the confirm dialog.
	Yes, No, Toggle, Choose key.Binding
	// In the filter input.
	Apply, Clear key.Binding

	// The console of several hosts (fleet.go) turns these on: [ and ]
	// select the host the panes show, w approves the next wave.
	Hosts, ApproveWave key.Binding

	acting bool
	fleet  bool // the console of several hosts: its own help line
}

// DefaultKeyMap is the console's keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("↑/k", "up")),
		Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("↓/j", "down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		NextPane: key.NewBinding(key.WithKeys("tab"), key.WithHelp("tab", "next pane")),
		PrevPane: key.NewBinding(key.WithKeys("shift+tab"), key.WithHelp("shift+tab", "prev pane")),

		Approve:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "approve")),
		ApprovePlan: key.NewBinding(key.WithKeys("A"), key.WithHelp("A", "rollout")),
		Auto:        key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "auto")),
		Pause:       key.NewBinding(key.WithKeys("p"), key.WithHelp("p", "pause")),
		Skip:        key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip")),
		Rollback:    key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "abort roll")),
		Retry:       key.NewBinding(key.WithKeys("t"), key.WithHelp("t", "retry")),
		Pin:         key.NewBinding(key.WithKeys("u"), key.WithHelp("u", "pin previous")),
		Recreate:    key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "recreate")),
		Emergency:   key.NewBinding(key.WithKeys("E"), key.WithHelp("E", "emergency")),
		Answer:      key.NewBinding(key.WithKeys("c"), key.WithHelp("c", "answer confirm"), key.WithDisabled()),

		Inspect:  key.NewBinding(key.WithKeys("i"), key.WithHelp("i", "inspect")),
		Shell:    key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "shell")),
		Copy:     key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy ID")),
		TakeLock: key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "take the lock"), key.WithDisabled()),

		Logs:   key.NewBinding(key.WithKeys("l"), key.WithHelp("l", "logs")),
		Diff:   key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "diff")),
		Filter: key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		Help:   key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		Quit:   key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Close:  key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "close")),

		Yes:    key.NewBinding(key.WithKeys("y", "Y"), key.WithHelp("y", "yes")),
		No:     key.NewBinding(key.WithKeys("n", "N", "esc"), key.WithHelp("n/esc", "no")),
		Toggle: key.NewBinding(key.WithKeys("left", "right", "h", "l", "tab", "shift+tab"), key.WithHelp("←/→", "choose")),
		Choose: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "answer")),

		Apply: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "apply")),
		Clear: key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear")),

		Hosts:       key.NewBinding(key.WithKeys("[", "]"), key.WithHelp("[/]", "host"), key.WithDisabled()),
		ApproveWave: key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "wave"), key.WithDisabled()),
	}
}

// mutating are the bindings that ask the session to act, or (a shell)
// could change a container.
func (k *KeyMap) mutating() []*key.Binding {
	return []*key.Binding{&k.Approve, &k.ApprovePlan, &k.Auto, &k.Pause, &k.Skip,
		&k.Rollback, &k.Retry, &k.Pin, &k.Recreate, &k.Emergency, &k.Answer, &k.Shell}
}

// readOnly reports whether the pressed key is one of the mutating keys,
// disabled in watch mode: the console then says it is read-only rather than nothing.
func (k *KeyMap) readOnly(pressed string) bool {
	if k.acting {
		return false
	}
	for _, b := range k.mutating() {
		if slices.Contains(b.Keys(), pressed) && !b.Enabled() {
			return true
		}
	}
	return false
}

// setActing enables the mutating bindings in step and auto mode and
// disables them in watch mode. answer says whether a confirmation waits
// for an answer that its dialog no longer asks (declined, or dismissed).
func (k *KeyMap) setActing(acting, answer bool) {
	k.acting = acting
	for _, b := range k.mutating() {
		b.SetEnabled(acting)
	}
	k.Answer.SetEnabled(acting && answer)
}

// ShortHelp is the one help line: what a roll needs (or, in watch mode,
// what looking needs), then help and quit. The footer draws it without
// quit (shortHelp) and puts quit at its end itself, so quit never falls
// off a narrow screen.
func (k KeyMap) ShortHelp() []key.Binding { return append(k.shortHelp(), k.Quit) }

func (k KeyMap) shortHelp() []key.Binding {
	switch {
	case k.fleet && k.acting:
		return []key.Binding{k.Approve, k.ApproveWave, k.ApprovePlan, k.Hosts, k.Auto, k.Help}
	case k.fleet:
		return []key.Binding{k.TakeLock, k.Hosts, k.NextPane, k.Logs, k.Inspect, k.Filter, k.Help}
	}
	if k.acting {
		return []key.Binding{k.Approve, k.ApprovePlan, k.Auto, k.Pause, k.Skip, k.Answer, k.Help}
	}
	return []key.Binding{k.TakeLock, k.NextPane, k.Logs, k.Inspect, k.Filter, k.Help}
}

// FullHelp is every key, in four columns that fit 80 columns whatever
// the keys say (space "take the lock", E "emergency off"): move and the
// console's own keys, run, guard, look. The moves pair up (↑↓/jk move)
// so the first column holds help, close and quit too.
func (k KeyMap) FullHelp() [][]key.Binding {
	pair := func(a, b key.Binding, keys, desc string) key.Binding {
		return key.NewBinding(key.WithKeys(append(a.Keys(), b.Keys()...)...), key.WithHelp(keys, desc))
	}
	answer := k.Answer
	answer.SetHelp(answer.Help().Key, "answer")
	return [][]key.Binding{
		{pair(k.Up, k.Down, "↑↓/kj", "move"), pair(k.Top, k.Bottom, "g/G", "top/bottom"),
			pair(k.NextPane, k.PrevPane, "tab/⇧tab", "pane"), k.Hosts, k.Help, k.Close, k.Quit},
		{k.Approve, k.ApproveWave, k.ApprovePlan, k.Auto, k.TakeLock, k.Pause, k.Skip},
		{k.Rollback, k.Retry, k.Pin, k.Recreate, k.Emergency, answer, k.Shell},
		{k.Logs, k.Diff, k.Inspect, k.Copy, k.Filter},
	}
}
