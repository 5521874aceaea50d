// Package journal is rollcall's audit log: one JSON line per step executed
// against the engine (DESIGN §7), appended to a file and read back by
// `rollcall history`.
//
// The rules it keeps:
//   - A line is written whole or not at all as far as later lines go: each
//     Append is one write(2) of a complete line to a file opened O_APPEND,
//     then fsync. Concurrent appends, from goroutines or processes, never
//     interleave inside a line.
//   - A crash mid-write can leave a torn last line. It never spoils earlier
//     lines: Read skips any line that does not parse (and counts it, see
//     Scan), and the next Append starts on a fresh line.
//   - The file rotates by size: once it would pass Options.MaxBytes it is
//     renamed path.1 (path.1 to path.2, path.2 to path.3; path.3 is dropped)
//     and a new file starts. A writer that finds the file rotated under it by
//     another process reopens it.
//
// It imports reconcile only for the Result it turns into an Entry; never
// session, tui or theme.
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// Result values of Entry.Result.
const (
	ResultStarted  = "started"  // written before a step runs
	ResultOK       = "ok"       // the step ended well
	ResultFailed   = "failed"   // the step ended with an engine error
	ResultDecision = "decision" // an operator's decision, not a step
	// ResultInterrupted: the step was cut short (a second signal) or, as
	// history reads it, a "started" line was never followed by its end.
	ResultInterrupted = "interrupted"
)

// Entry is one executed step. Its JSON form (one object per line, snake_case
// keys, every key always present) is the documented schema of
// `rollcall history --json`:
//
//	time         RFC 3339 time the step started, with nanoseconds
//	user         who ran it: $USER, plus "@<client IP>" over SSH
//	mode         the session mode that ran it: "step" or "auto" (or the
//	             headless command: "apply", "agent", "demo")
//	action       start | stop | roll | restart | update; for a decision:
//	             approve | approve-rollout | skip | unskip | confirm |
//	             decline | emergency-on | emergency-off | rollback |
//	             recreate | lock-taken
//	workload     the workload name ("" where a decision names none)
//	slot         the slot index; -1 for a container without a readable slot
//	container    the container name
//	reason       why the step was planned, as the plan says it; for a
//	             decision, what it was about
//	result       "started" (the line written before a step runs), then
//	             "ok" or "failed" when it ends; "decision" for a decision.
//	             A "started" with no end is a step cut short by a crash:
//	             history shows it as interrupted
//	error        the engine's error when failed, else ""
//	duration_ms  how long the step took, in milliseconds
//	engine       the engine's identity (docker info ID), else its endpoint
//	prefix       the label prefix the session acts on
type Entry struct {
	Time       time.Time `json:"time"`
	User       string    `json:"user"`
	Mode       string    `json:"mode"`
	Action     string    `json:"action"`
	Workload   string    `json:"workload"`
	Slot       int       `json:"slot"`
	Container  string    `json:"container"`
	Reason     string    `json:"reason"`
	Result     string    `json:"result"`
	Error      string    `json:"error"`
	DurationMS int64     `json:"duration_ms"`
	Engine     string    `json:"engine"`
	Prefix     string    `json:"prefix"`
}

// FromResult is the entry for one executed step: started at began, run by
// user in mode.
func FromResult(r reconcile.Result, began time.Time, user, mode string) Entry {
	e := Entry{
		Time: began, User: user, Mode: mode,
		Action: string(r.Step.Action), Workload: r.Step.Workload, Slot: r.Step.Slot,
		Container: r.Step.Container, Reason: r.Step.Reason,
		Result: ResultOK, DurationMS: r.Duration.Milliseconds(),
	}
	if r.Err != nil {
		e.Result, e.Error = ResultFailed, r.Err.Error()
	}
	return e
}

// DefaultMaxBytes is the size at which the journal rotates by default.
const DefaultMaxBytes = 10 << 20

// Keep is how many rotated files are kept beside the journal: path.1 … path.3.
const Keep = 3

// Options tune a Journal.
type Options struct {
	// MaxBytes is the size past which the file rotates; 0 means
	// DefaultMaxBytes. A single line longer than this still goes in whole.
	MaxBytes int64
}

// Journal appends entries to one file. It is safe for concurrent use.
type Journal struct {
	path string
	max  int64

	mu     sync.Mutex
	f      *os.File
	size   int64
	torn   bool // the file does not end in a newline: the next line starts with one
	closed bool
}

// Open opens (creating it and its directory if need be) the journal at path.
func Open(path string, opts Options) (*Journal, error) {
	j := &Journal{path: path, max: opts.MaxBytes}
	if j.max <= 0 {
		j.max = DefaultMaxBytes
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open journal %s: %w", path, err)
	}
	if err := j.open(); err != nil {
		return nil, err
	}
	return j, nil
}

// Path is the file the journal writes to.
func (j *Journal) Path() string { return j.path }

// open opens the current file and finds out whether it ends mid-line.
func (j *Journal) open() error {
	f, err := os.OpenFile(j.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return fmt.Errorf("open journal %s: %w", j.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("open journal %s: %w", j.path, err)
	}
	j.f, j.size, j.torn = f, st.Size(), false
	if j.size > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, j.size-1); err != nil {
			f.Close()
			return fmt.Errorf("open journal %s: %w", j.path, err)
		}
		j.torn = last[0] != '\n'
	}
	return nil
}

// Append writes e as one line. A zero e.Time is set to now.
func (j *Journal) Append(e Entry) error {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal: encode entry: %w", err)
	}
	line = append(line, '\n')

	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return fmt.Errorf("journal %s: closed", j.path)
	}
	if err := j.follow(); err != nil {
		return err
	}
	if j.size > 0 && j.size+int64(len(line)) > j.max {
		if err := j.rotate(); err != nil {
			return err
		}
	}
	if j.torn {
		// Finish the torn line so this one starts fresh; Read skips the torn one.
		line = append([]byte{'\n'}, line...)
	}
	n, err := j.f.Write(line)
	j.size += int64(n)
	if err != nil {
		j.torn = n > 0 && line[n-1] != '\n'
		return fmt.Errorf("journal %s: write: %w", j.path, err)
	}
	j.torn = false
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: sync: %w", j.path, err)
	}
	return nil
}

// follow reopens the file when another process has rotated it away, and
// keeps the size current when others append.
func (j *Journal) follow() error {
	mine, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	cur, err := os.Stat(j.path)
	if err == nil && os.SameFile(mine, cur) {
		j.size = mine.Size()
		return nil
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	j.f.Close()
	return j.open()
}

// rotate shifts path.2 to path.3, path.1 to path.2 and path to path.1, and
// starts a new file.
func (j *Journal) rotate() error {
	for i := Keep - 1; i >= 1; i-- {
		from, to := rotated(j.path, i), rotated(j.path, i+1)
		if err := os.Rename(from, to); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("journal %s: rotate: %w", j.path, err)
		}
	}
	if err := os.Rename(j.path, rotated(j.path, 1)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("journal %s: rotate: %w", j.path, err)
	}
	j.f.Close()
	return j.open()
}

// Close closes the file. Appends after Close fail.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	if err := j.f.Close(); err != nil {
		return fmt.Errorf("close journal %s: %w", j.path, err)
	}
	return nil
}

func rotated(path string, i int) string { return fmt.Sprintf("%s.%d", path, i) }

// Read returns the last n entries (every entry for n <= 0) across the
// journal and its rotated files, oldest first. Lines that do not parse, such
// as a line torn by a crash mid-write, are skipped; Scan says how many. A
// journal that does not exist yet reads as empty.
func Read(path string, n int) ([]Entry, error) {
	entries, _, err := Scan(path, n)
	return entries, err
}

// Scan is Read that also counts the lines it skipped as unreadable.
func Scan(path string, n int) (entries []Entry, skipped int, err error) {
	// Newest file first, stopping once n entries are in hand.
	files := []string{path}
	for i := 1; i <= Keep; i++ {
		files = append(files, rotated(path, i))
	}
	var chunks [][]Entry
	total := 0
	for _, name := range files {
		es, bad, err := readFile(name)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, skipped, err
		}
		skipped += bad
		chunks = append(chunks, es)
		total += len(es)
		if n > 0 && total >= n {
			break
		}
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		entries = append(entries, chunks[i]...)
	}
	if n > 0 && len(entries) > n {
		entries = entries[len(entries)-n:]
	}
	return entries, skipped, nil
}

// readFile parses every line of one file; bad counts the lines that do not
// parse. Blank lines are not counted.
func readFile(name string) (entries []Entry, bad int, err error) {
	data, err := os.ReadFile(name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, 0, err
		}
		return nil, 0, fmt.Errorf("read journal %s: %w", name, err)
	}
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e Entry
		if err := decodeLine(line, &e); err != nil {
			bad++
			continue
		}
		entries = append(entries, e)
	}
	return entries, bad, nil
}

// decodeLine parses one line strictly: exactly one JSON object.
func decodeLine(line []byte, e *Entry) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(e); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data")
	}
	return nil
}

// CurrentUser names who runs rollcall, for the journal and the host lock:
// $USER (else the account's name), plus "@<client IP>" when $SSH_CONNECTION says the session came in
// over SSH, e.g. "alice@10.0.0.5". The address is only parsed, never
// contacted.
func CurrentUser() string {
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	return userFrom(name, os.Getenv("SSH_CONNECTION"))
}

// userFrom builds the user string; sshConnection is "client_ip client_port
// server_ip server_port".
func userFrom(user, sshConnection string) string {
	if user == "" {
		user = "unknown"
	}
	if fields := strings.Fields(sshConnection); len(fields) > 0 {
		return user + "@" + fields[0]
	}
	return user
}

// Fold turns the journal's lines into one entry per step and decision, in
// order: a step's "started" line and its end ("ok", "failed" or
// "interrupted", which carry the same time, action and container) become
// the end line alone, and a "started" line that no end follows is a step
// cut short by a crash (kill -9, power loss): it becomes "interrupted".
// Decisions pass through.
func Fold(entries []Entry) []Entry {
	type key struct {
		t                 int64
		action, container string
	}
	ended := map[key]bool{}
	for _, e := range entries {
		if e.Result != ResultStarted && e.Result != ResultDecision {
			ended[key{e.Time.UnixNano(), e.Action, e.Container}] = true
		}
	}
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		if e.Result == ResultStarted {
			if ended[key{e.Time.UnixNano(), e.Action, e.Container}] {
				continue
			}
			e.Result = ResultInterrupted
			e.Error = "no end was journaled: still running, or cut short (the process was killed mid-step)"
		}
		out = append(out, e)
	}
	return out
}
