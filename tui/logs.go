package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/docker"
)

// LogSource streams one container's log lines, following, until ctx ends
// or the container goes. The console's log tail reads through it; it must
// only read. Wire it to the session client's Logs with Follow and a Tail.
type LogSource func(ctx context.Context, id string) (<-chan docker.LogLine, error)

// How much of a log the tail keeps and how many lines one message carries.
const (
	maxLogLines = 500
	logBatch    = 64
)

// logTail is the state of the detail pane's log tail: which container it
// follows and the lines so far. Each follow has a generation, so lines of a
// stream that was switched away from are dropped.
type logTail struct {
	available bool // Options.Logs is set
	gen       int
	id        string // raw container ID being followed
	lines     []logRow
	err       string
	ended     bool
	cancel    context.CancelFunc
}

type logRow struct {
	at     time.Time
	stderr bool
	text   string // sanitized
}

// Messages of the log tail.
type (
	logStartedMsg struct {
		gen    int
		ch     <-chan docker.LogLine
		cancel context.CancelFunc
		err    error
	}
	logLinesMsg struct {
		gen   int
		ch    <-chan docker.LogLine
		lines []docker.LogLine
		ended bool
	}
)

// startLogs opens the stream beside the program.
func startLogs(ctx context.Context, src LogSource, gen int, id string) tea.Cmd {
	return func() tea.Msg {
		lctx, cancel := context.WithCancel(ctx)
		ch, err := src(lctx, id)
		if err != nil {
			cancel()
			return logStartedMsg{gen: gen, err: err}
		}
		return logStartedMsg{gen: gen, ch: ch, cancel: cancel}
	}
}

// readLogs waits for the next line, then takes whatever else is already
// there, so a burst of lines is one message and one render.
func readLogs(gen int, ch <-chan docker.LogLine) tea.Cmd {
	return func() tea.Msg {
		l, ok := <-ch
		if !ok {
			return logLinesMsg{gen: gen, ch: ch, ended: true}
		}
		batch := []docker.LogLine{l}
		for len(batch) < logBatch {
			select {
			case l, ok := <-ch:
				if !ok {
					return logLinesMsg{gen: gen, ch: ch, lines: batch, ended: true}
				}
				batch = append(batch, l)
			default:
				return logLinesMsg{gen: gen, ch: ch, lines: batch}
			}
		}
		return logLinesMsg{gen: gen, ch: ch, lines: batch}
	}
}

// stopLogs ends a stream; it runs as a Cmd, since cancelling is the
// stream's business, not the model's.
func stopLogs(cancel context.CancelFunc) tea.Cmd {
	if cancel == nil {
		return nil
	}
	return func() tea.Msg { cancel(); return nil }
}

// follow points the tail at container id (raw; "" follows nothing) and
// returns the commands that stop the old stream and start the new one.
func (t *logTail) follow(ctx context.Context, src LogSource, id string) tea.Cmd {
	if !t.available || id == t.id {
		return nil
	}
	stop := stopLogs(t.cancel)
	t.gen++
	t.id, t.lines, t.err, t.ended, t.cancel = id, nil, "", false, nil
	if id == "" {
		return stop
	}
	return tea.Batch(stop, startLogs(ctx, src, t.gen, id))
}

// onStarted takes a stream that opened (or failed to).
func (t *logTail) onStarted(m logStartedMsg) tea.Cmd {
	if m.gen != t.gen {
		return stopLogs(m.cancel) // switched away meanwhile
	}
	if m.err != nil {
		t.err = firstLine(m.err.Error())
		return nil
	}
	t.cancel = m.cancel
	return readLogs(m.gen, m.ch)
}

// onLines appends lines and reads on.
func (t *logTail) onLines(m logLinesMsg) tea.Cmd {
	if m.gen != t.gen {
		return nil
	}
	for _, l := range m.lines {
		for _, text := range sanitizeLines(l.Text) {
			t.lines = append(t.lines, logRow{at: l.Time, stderr: l.Stream == "stderr", text: text})
		}
	}
	if n := len(t.lines); n > maxLogLines {
		t.lines = append(t.lines[:0:0], t.lines[n-maxLogLines:]...)
	}
	if m.ended {
		t.ended = true
		return nil
	}
	return readLogs(m.gen, m.ch)
}
