package moby

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// maxLogLine caps one delivered line; the rest of a longer line is dropped,
// so a program writing without newlines cannot grow the buffer unbounded.
const maxLogLine = 64 << 10

// Logs streams a container's log lines with their engine timestamps, stdout
// and stderr apart, in the order the engine sends them. opts.Tail 0 means
// every line. With opts.Follow the channel stays open until ctx ends or the
// container stops; without, it closes after the last line. A container that
// does not exist is ErrNotFound.
//
// rollcall creates containers without a TTY, so the engine multiplexes the
// two streams; a TTY container's output would not be readable here.
func (m *Moby) Logs(ctx context.Context, id string, opts docker.LogOptions) (<-chan docker.LogLine, error) {
	lo := client.ContainerLogsOptions{
		ShowStdout: true,
		ShowStderr: true,
		Timestamps: true,
		Follow:     opts.Follow,
	}
	if opts.Tail > 0 {
		lo.Tail = strconv.Itoa(opts.Tail)
	}
	rc, err := m.cli.ContainerLogs(ctx, id, lo)
	if err != nil {
		return nil, fmt.Errorf("logs %s: %w", docker.ShortID(id), engineErr(err))
	}
	out := make(chan docker.LogLine)
	go func() {
		defer close(out)
		defer rc.Close()
		stdout := &lineWriter{ctx: ctx, stream: "stdout", out: out}
		stderr := &lineWriter{ctx: ctx, stream: "stderr", out: out}
		// StdCopy calls both writers from this one goroutine, which keeps
		// the engine's order across the two streams.
		_, err := stdcopy.StdCopy(stdout, stderr, rc)
		if err == nil {
			stdout.flush()
			stderr.flush()
		}
	}()
	return out, nil
}

// errLogReaderGone stops StdCopy when nobody reads any more.
var errLogReaderGone = errors.New("log reader gone")

// lineWriter cuts one demultiplexed stream into timestamped lines.
type lineWriter struct {
	ctx    context.Context
	stream string
	out    chan<- docker.LogLine
	buf    []byte
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			room := max(0, maxLogLine-len(w.buf))
			w.buf = append(w.buf, p[:min(room, len(p))]...)
			break
		}
		room := max(0, maxLogLine-len(w.buf))
		w.buf = append(w.buf, p[:min(room, i)]...)
		p = p[i+1:]
		if !w.emit() {
			return 0, errLogReaderGone
		}
	}
	return n, nil
}

// flush sends a last line that had no newline.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit()
	}
}

func (w *lineWriter) emit() bool {
	line := parseLogLine(w.stream, strings.TrimSuffix(string(w.buf), "\r"))
	w.buf = w.buf[:0]
	select {
	case w.out <- line:
		return true
	case <-w.ctx.Done():
		return false
	}
}

// parseLogLine splits the engine's "<RFC 3339 nano> <text>" (Timestamps on).
// A line without a readable timestamp keeps all its text and a zero time.
func parseLogLine(stream, s string) docker.LogLine {
	ts, text, _ := strings.Cut(s, " ")
	if t, err := time.Parse(time.RFC3339Nano, ts); err == nil {
		return docker.LogLine{Time: t, Stream: stream, Text: text}
	}
	return docker.LogLine{Stream: stream, Text: s}
}
