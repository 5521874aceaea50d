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
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// Result values of Entry.Result.
const (
	ResultStarted = "started" // written before a step runs
	ResultOK      = "ok"      // the step ended well
	ResultFailed  = "failed"  // the step ended with an engine error
	// ResultHeld: a canary step that held (too little traffic, with
	// on_insufficient_traffic: hold); it waits for the operator, and
	// failed nothing.
	ResultHeld     = "held"
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
//	             command: "apply", "agent", "demo", "retry")
//	action       start | stop | roll | restart | update; for a decision:
//	             approve | approve-rollout | skip | unskip | confirm |
//	             decline | emergency-on | emergency-off | rollback |
//	             recreate | retry (a hold lifted) | lock-taken |
//	             notify-failed | notify-dropped (a webhook post that
//	             failed or was dropped: reason names the event kind and
//	             the URL's scheme and host, error says why)
//	workload     the workload name ("" where a decision names none)
//	slot         the slot index; -1 for a container without a readable slot
//	container    the container name
//	reason       why the step was planned, as the plan says it; for a
//	             decision, what it was about
//	result       "started" (the line written before a step runs), then
//	             "ok" or "failed" when it ends, "held" for a canary step
//	             that held on too little traffic (error says why);
//	             "decision" for a decision.
//	             A "started" with no end is a step cut short by a crash:
//	             history shows it as interrupted
//	error        the engine's error when failed, else ""
//	duration_ms  how long the step took, in milliseconds
//	engine       the engine's identity (docker info ID), else its endpoint
//	prefix       the label prefix the session acts on
//	host         the host's name in the desired file's hosts: (DESIGN §11);
//	             "" for the one engine of a file without hosts
//	rollout      the ID of the fleet rollout the line belongs to, the same
//	             on every host's lines and on the fleet's own; "" outside
//	             one (a file without hosts, or before a rollout began)
//
// The fleet's own lines (engine/fleet) are decisions: action
// fleet-began | fleet-left-out | fleet-wave | fleet-host-failed |
// fleet-phase | fleet-rollback | fleet-preflight | approve-wave |
// approve-fleet, with the host they are about (or "").
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
	Host       string    `json:"host"`
	Rollout    string    `json:"rollout"`
	// Canary is a canary step's measured figures beside its thresholds
	// (DESIGN §12); nil for any other step.
	Canary *Canary `json:"canary,omitempty"`
}

// Canary is what a canary step measured, and what it was held to.
type Canary struct {
	Step  int     `json:"step"` // 1-based
	Of    int     `json:"of"`
	Share float64 `json:"share"`
	Spec  string  `json:"spec"`
	// Verdict and Check are reconcile's typed constants; on the wire
	// they are the strings they always were ("fail", "max_p95_ratio").
	Verdict  reconcile.Verdict `json:"verdict"`
	Check    reconcile.Check   `json:"check,omitempty"` // the check that failed, as the file names it
	Measured float64           `json:"measured,omitempty"`
	Limit    float64           `json:"limit,omitempty"`
	WindowMS int64             `json:"window_ms"`
	Canary   Cohort            `json:"canary"`
	Stable   Cohort            `json:"stable"`
	// The thresholds; -1 is a check not made.
	MaxErrorRate         float64 `json:"max_error_rate"`
	MaxErrorRateIncrease float64 `json:"max_error_rate_increase"`
	MaxP95Ratio          float64 `json:"max_p95_ratio"`
	MinRequests          int     `json:"min_requests"`
	// SplitLosses: readings that found the split lost at the proxy (set
	// again, the window restarted); the figures are the last window's.
	SplitLosses int `json:"split_losses,omitempty"`
}

// Cohort is one cohort's figures over a canary step's window.
type Cohort struct {
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	ErrorRate float64 `json:"error_rate"`
	P50MS     float64 `json:"p50_ms"`
	P95MS     float64 `json:"p95_ms"`
}

// CanaryOf is the journal's record of canary step s judged j.
func CanaryOf(s reconcile.Step, j reconcile.Judgement) *Canary {
	if s.Canary == nil {
		return nil
	}
	cohort := func(f reconcile.CohortFigures) Cohort {
		return Cohort{Requests: f.Requests, Errors: f.Errors, ErrorRate: f.ErrorRate(),
			P50MS: float64(f.P50.Microseconds()) / 1000, P95MS: float64(f.P95.Microseconds()) / 1000}
	}
	a := s.Canary.Analysis
	return &Canary{Step: s.Canary.Index + 1, Of: s.Canary.Of, Share: s.Canary.Share, Spec: s.Canary.Spec,
		Verdict: j.Verdict, Check: j.Check, Measured: j.Measured, Limit: j.Limit,
		WindowMS: j.Window.Milliseconds(), Canary: cohort(j.Canary), Stable: cohort(j.Stable),
		MaxErrorRate: a.MaxErrorRate, MaxErrorRateIncrease: a.MaxErrorRateIncrease, MaxP95Ratio: a.MaxP95Ratio, MinRequests: a.MinRequests,
		SplitLosses: j.SplitLosses}
}

// Judgement is the judgement c records, typed again: what a view of the
// journal (history, the webhook) renders with reconcile's formatters
// (Judgement.Finding, Percent, Ratio, Latency), as the live views do.
func (c *Canary) Judgement() reconcile.Judgement {
	cohort := func(h Cohort) reconcile.CohortFigures {
		return reconcile.CohortFigures{Requests: h.Requests, Errors: h.Errors, P50: msDuration(h.P50MS), P95: msDuration(h.P95MS)}
	}
	return reconcile.Judgement{Verdict: c.Verdict, Check: c.Check, Measured: c.Measured, Limit: c.Limit,
		Window: time.Duration(c.WindowMS) * time.Millisecond, Canary: cohort(c.Canary), Stable: cohort(c.Stable), SplitLosses: c.SplitLosses}
}

// msDuration is a latency the journal keeps in milliseconds, to the
// microsecond it was recorded at.
func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms*1000)) * time.Microsecond
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
	var ce *reconcile.CanaryError
	switch {
	case errors.As(r.Err, &ce) && ce.Hold:
		e.Result, e.Error = ResultHeld, r.Err.Error()
	case r.Err != nil:
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

// Journal appends entries to one file (Open), or to a writer (NewWriter).
// It is safe for concurrent use.
type Journal struct {
	path string
	max  int64
	w    io.Writer // NewWriter's: no file, no rotation

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

// NewWriter is a journal that appends its lines to w: one Write of a
// whole line per Append, then w.Sync() if w has one, and nothing else (no
// file to follow or rotate). A write or sync error fails the Append. Close
// does not close w. It stands in for the file where the disk itself is the
// subject: a writer that blocks is a hung disk.
func NewWriter(w io.Writer) *Journal { return &Journal{w: w} }

// Path is the file the journal writes to; "" for a NewWriter journal.
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
	if j.w != nil {
		return j.appendTo(j.w, line)
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

// appendTo writes one line to a NewWriter journal's writer, then syncs it
// if it can.
func (j *Journal) appendTo(w io.Writer, line []byte) error {
	if _, err := w.Write(line); err != nil {
		return fmt.Errorf("journal: write: %w", err)
	}
	if s, ok := w.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("journal: sync: %w", err)
		}
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
	if j.f == nil {
		return nil // a NewWriter journal: the writer is the caller's
	}
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
	r, err := ScanContext(context.Background(), path, n)
	return r.Entries, r.Skipped, err
}

// Bounds of a read of the journal (ScanContext).
const (
	// MaxLineBytes bounds one line. Append writes any line whole, but an
	// entry is a few hundred bytes: a longer line is skipped and reported.
	MaxLineBytes = 1 << 20
	// MaxFileBytes bounds what is read of one file, from its end: a
	// journal rotates at 10 MiB by default, and a file past this (a
	// sparse file, a MaxBytes set very high) is read for its last
	// MaxFileBytes only.
	MaxFileBytes = 256 << 20
)

// Bounds in force; tests lower them.
var maxLineBytes, maxFileBytes int64 = MaxLineBytes, MaxFileBytes

// Scanned is what ScanContext read.
type Scanned struct {
	Entries []Entry // oldest first
	// Skipped counts the lines that do not parse, too long ones included.
	Skipped int
	// Long are the lines over MaxLineBytes, in the order read (newest file
	// first), at most maxLong of them; Skipped counts them all.
	Long []Line
	// Partial are the files over MaxFileBytes, of which only the end was read.
	Partial []string
}

// Line is where a line of a journal file starts: its 1-based number, 0
// when the file was read from its end only (see Scanned.Partial), and its
// byte offset.
type Line struct {
	File   string
	Number int
	Offset int64
}

const maxLong = 10

// ScanContext is Scan in bounded time and memory, for `rollcall history`:
//
//   - Only regular files are read (a journal path or a rotated file that
//     is a FIFO, a device or a directory is an error that names it), and
//     the open is non-blocking, so a FIFO never hangs the read.
//   - Each file is read up to the size it had when opened, and at most
//     its last MaxFileBytes; each line is at most MaxLineBytes.
//   - With n > 0 only the last n entries are kept in memory, and older
//     files are not read once n are in hand.
//   - It ends with ctx's error as soon as ctx is done.
func ScanContext(ctx context.Context, path string, n int) (Scanned, error) {
	// Newest file first, stopping once n entries are in hand.
	files := []string{path}
	for i := 1; i <= Keep; i++ {
		files = append(files, rotated(path, i))
	}
	var r Scanned
	var chunks [][]Entry
	total := 0
	for _, name := range files {
		es, err := r.readFile(ctx, name, n)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return Scanned{}, err
		}
		chunks = append(chunks, es)
		total += len(es)
		if n > 0 && total >= n {
			break
		}
	}
	for i := len(chunks) - 1; i >= 0; i-- {
		r.Entries = append(r.Entries, chunks[i]...)
	}
	if n > 0 && len(r.Entries) > n {
		r.Entries = r.Entries[len(r.Entries)-n:]
	}
	return r, nil
}

// readFile parses the lines of one file, keeping the last n entries (every
// one for n <= 0); it counts the lines that do not parse in r.Skipped. Blank
// lines are not counted.
func (r *Scanned) readFile(ctx context.Context, name string, n int) (entries []Entry, err error) {
	f, size, err := openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var start int64
	if size > maxFileBytes {
		start = size - maxFileBytes
		r.Partial = append(r.Partial, name)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, start, size-start), 64<<10)
	offset, number := start, 1
	if start > 0 {
		// Read from the middle of a line: it starts after the next newline,
		// unless the byte before start ends a line.
		number = 0
		prev := make([]byte, 1)
		if _, err := f.ReadAt(prev, start-1); err != nil {
			return nil, fmt.Errorf("read journal %s: %w", name, err)
		}
		if prev[0] != '\n' {
			skip, _, _, err := readLine(ctx, br, 0)
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, journalErr(name, err)
			}
			offset += skip
		}
	}
	next := func() int {
		if number == 0 {
			return 0
		}
		number++
		return number - 1
	}
	for {
		at, num := offset, next()
		used, line, long, err := readLine(ctx, br, maxLineBytes)
		offset += used
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, journalErr(name, err)
		}
		switch {
		case long:
			r.Skipped++
			if len(r.Long) < maxLong {
				r.Long = append(r.Long, Line{File: name, Number: num, Offset: at})
			}
		case len(bytes.TrimSpace(line)) == 0:
		default:
			var e Entry
			if decodeLine(line, &e) != nil {
				r.Skipped++
				break
			}
			entries = append(entries, e)
			if n > 0 && len(entries) >= 2*n {
				entries = append(entries[:0], entries[len(entries)-n:]...)
			}
		}
		if err != nil { // io.EOF
			break
		}
	}
	if n > 0 && len(entries) > n {
		entries = entries[len(entries)-n:]
	}
	return entries, nil
}

// readLine reads one line, newline excluded, and how many bytes it took.
// A line over limit (0: no line is kept) is read to its end and dropped:
// long then says whether it was over. ctx is checked at each chunk. The
// error is io.EOF at the end of the input.
func readLine(ctx context.Context, br *bufio.Reader, limit int64) (used int64, line []byte, long bool, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return used, nil, long, err
		}
		chunk, err := br.ReadSlice('\n')
		used += int64(len(chunk))
		body := bytes.TrimSuffix(chunk, []byte{'\n'})
		switch {
		case long || limit == 0:
		case int64(len(line)+len(body)) > limit:
			long, line = true, nil
		default:
			line = append(line, body...)
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err != nil:
			return used, line, long, err
		}
		return used, line, long, nil
	}
}

func journalErr(name string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("read journal %s: interrupted: %w", name, err)
	}
	return fmt.Errorf("read journal %s: %w", name, err)
}

// openRegular opens a journal file for reading, refusing all but a regular
// file (or a link to one) by its mode before the open, and again by the
// opened file's: the open is non-blocking, so a path that is, or is
// swapped for, a FIFO can neither block it nor be read. The size is the
// opened file's. An absent file gives an error that wraps fs.ErrNotExist.
func openRegular(name string) (*os.File, int64, error) {
	st, err := os.Stat(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read journal %s: %w", name, err)
	}
	if err := regular(name, st); err != nil {
		return nil, 0, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, err
	}
	if err != nil {
		return nil, 0, fmt.Errorf("read journal %s: %w", name, err)
	}
	if st, err = f.Stat(); err == nil {
		err = regular(name, st)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// regular refuses every kind of file but a regular one, naming the kind.
func regular(name string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	return fmt.Errorf("read journal %s: %w", name, &NotRegularError{Path: name, Kind: spec.FileKind(st.Mode())})
}

// NotRegularError is a journal file that is not a regular file.
type NotRegularError struct {
	Path string
	Kind string // "a named pipe (FIFO)", "a character device", ...
}

func (e *NotRegularError) Error() string {
	return e.Path + " is " + e.Kind + ", not a regular file"
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
// Decisions pass through. Lines of several hosts (one fleet's journal) are
// told apart by their host and engine too.
func Fold(entries []Entry) []Entry {
	type key struct {
		t                               int64
		action, container, host, engine string
	}
	keyOf := func(e Entry) key { return key{e.Time.UnixNano(), e.Action, e.Container, e.Host, e.Engine} }
	ended := map[key]bool{}
	for _, e := range entries {
		if e.Result != ResultStarted && e.Result != ResultDecision {
			ended[keyOf(e)] = true
		}
	}
	out := make([]Entry, 0, len(entries))
	for _, e := range entries {
		if e.Result == ResultStarted {
			if ended[keyOf(e)] {
				continue
			}
			e.Result = ResultInterrupted
			e.Error = "no end was journaled: still running, or cut short (the process was killed mid-step)"
		}
		out = append(out, e)
	}
	return out
}
