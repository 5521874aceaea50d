package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

func writeJournal(t *testing.T, path string, n int) {
	t.Helper()
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for i := range n {
		r := reconcile.Result{
			Step:     reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: i, Container: "rctest-web-" + string(rune('0'+i)) + "-abcd1234", Reason: "missing"},
			Duration: time.Duration(i+1) * 100 * time.Millisecond,
		}
		if i == n-1 {
			r.Err = errors.New("create: port is already allocated")
		}
		if err := j.Append(journal.FromResult(r, t0.Add(time.Duration(i)*time.Minute), "alice@10.0.0.5", "apply")); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistory: the journal, newest last, as a table (plain when piped) or
// as JSON lines; -n keeps the newest N.
func TestHistory(t *testing.T) {
	h := newHarness(t, nil)
	writeJournal(t, h.journal, 3)

	res := h.run("", "history")
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header and 3 rows:\n%s", len(lines), res.stdout)
	}
	mustContain(t, "header", lines[0], "TIME", "USER", "ACTION", "TARGET", "RESULT", "REASON / ERROR")
	mustContain(t, "first row", lines[1], "alice@10.0.0.5", "apply", "start", "web/0", "rctest-web-0-abcd1234", "✓ ok", "100ms", "missing")
	mustContain(t, "last row", lines[3], "web/2", "✗ failed", "300ms", "port is already allocated")

	res = h.run("", "history", "-n", "1")
	if got := strings.Count(strings.TrimSpace(res.stdout), "\n"); got != 1 || !strings.Contains(res.stdout, "web/2") {
		t.Errorf("-n 1 gave:\n%s", res.stdout)
	}

	res = h.run("", "history", "--json", "-n", "2")
	var slots []int
	for _, l := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
		var e journal.Entry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("not a JSON line: %q: %v", l, err)
		}
		slots = append(slots, e.Slot)
	}
	if len(slots) != 2 || slots[0] != 1 || slots[1] != 2 {
		t.Errorf("--json -n 2 slots %v, want [1 2] (newest last)", slots)
	}

	h.terminal["stdout"] = true
	res = h.run("", "history")
	if !strings.Contains(res.stdout, "\x1b[") || !strings.Contains(res.stdout, "rctest-web-2-abcd1234") {
		t.Errorf("no styled table on a terminal:\n%s", res.stdout)
	}
}

// TestHistoryEmpty: no journal yet is not an error.
func TestHistoryEmpty(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "history")
	if res.code != exitOK || res.stdout != "" || !strings.Contains(res.stderr, "no steps in the journal yet") {
		t.Errorf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
	}
}

// runWithin runs one command line and fails the test when it has not
// ended after 10s, so a command that hangs ends the test, not the suite.
func (h *harness) runWithin(ctx context.Context, args ...string) result {
	h.t.Helper()
	done := make(chan result, 1)
	go func() { done <- h.runCtx(ctx, "", args...) }()
	select {
	case r := <-done:
		return r
	case <-time.After(10 * time.Second):
		h.t.Fatalf("%v still running after 10s", args)
		return result{}
	}
}

// TestHistoryRefusesAJournalThatIsNoRegularFile (issue 18, row 5): history
// pointed at a FIFO or a link to /dev/zero exits 1 at once, naming the
// file and its kind; it never blocks on the FIFO or reads /dev/zero
// without end.
func TestHistoryRefusesAJournalThatIsNoRegularFile(t *testing.T) {
	h := newHarness(t, nil)
	fifo := filepath.Join(h.dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	zero := filepath.Join(h.dir, "zero.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "is a named pipe (FIFO), not a regular file", zero: "is a character device, not a regular file"} {
		for _, args := range [][]string{{"history"}, {"history", "--json", "-n", "0"}} {
			res := h.runWithin(context.Background(), append([]string{"--journal", path}, args...)...)
			if res.code != exitFailed || !strings.Contains(res.stderr, want) || !strings.Contains(res.stderr, path) {
				t.Errorf("%v --journal %s: exit %d, stderr %q; want exit 1 and %q", args, path, res.code, res.stderr, want)
			}
		}
	}
}

// TestHistoryReportsALineTooLong: a journal line over journal.MaxLineBytes
// is skipped and reported by its line number; the steps around it show.
func TestHistoryReportsALineTooLong(t *testing.T) {
	h := newHarness(t, nil)
	writeJournal(t, h.journal, 1)
	f, err := os.OpenFile(h.journal, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Repeat("x", journal.MaxLineBytes+1) + "\n")
	f.Close()
	writeJournal(t, h.journal, 2)

	res := h.runWithin(context.Background(), "history")
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, h.journal+": line 2 is longer than the 1 MiB limit of a journal line: skipped")
	if strings.Contains(res.stderr, "unreadable") {
		t.Errorf("the long line is counted twice:\n%s", res.stderr)
	}
	if got := strings.Count(strings.TrimSpace(res.stdout), "\n"); got != 3 {
		t.Errorf("%d rows, want the 3 steps around the long line:\n%s", got, res.stdout)
	}
}

// TestHistoryEndsWhenItsContextIsDone: history's read ends with its
// context (the first SIGINT or SIGTERM), exit 1.
func TestHistoryEndsWhenItsContextIsDone(t *testing.T) {
	h := newHarness(t, nil)
	writeJournal(t, h.journal, 3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := h.runWithin(ctx, "history")
	if res.code != exitFailed || !strings.Contains(res.stderr, "interrupted") {
		t.Errorf("exit %d, stderr %q; want exit 1, interrupted", res.code, res.stderr)
	}
}

// TestHistoryNewestStepsFromTheNewestLines: -n N reads only the journal's
// newest 2N lines, and shows the same N rows as the whole journal folded:
// steps ended, a step cut short, decisions, and two sessions' steps
// interleaved.
func TestHistoryNewestStepsFromTheNewestLines(t *testing.T) {
	h := newHarness(t, nil)
	j, err := journal.Open(h.journal, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	step := func(i int, result string) journal.Entry {
		return journal.Entry{Time: t0.Add(time.Duration(i) * time.Minute), User: "alice", Mode: "apply", Action: "start",
			Workload: "web", Slot: i, Container: fmt.Sprintf("rctest-web-%d-abcd1234", i), Reason: "missing", Result: result}
	}
	for _, e := range []journal.Entry{
		step(0, journal.ResultStarted), step(0, journal.ResultOK),
		step(1, journal.ResultStarted), step(2, journal.ResultStarted), step(1, journal.ResultOK),
		{Time: t0.Add(3 * time.Minute), User: "bob", Mode: "step", Action: "approve", Result: journal.ResultDecision, Reason: "the plan"},
		step(4, journal.ResultStarted), // cut short
		step(5, journal.ResultStarted), step(2, journal.ResultFailed), step(5, journal.ResultOK),
		step(6, journal.ResultStarted), step(6, journal.ResultOK),
	} {
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	// Rows as their cells: the columns' widths differ with the rows shown.
	rowsOf := func(out string) []string {
		var rows []string
		for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n")[1:] {
			rows = append(rows, strings.Join(strings.Fields(l), " "))
		}
		return rows
	}
	all := h.runWithin(context.Background(), "history", "-n", "0")
	rows := rowsOf(all.stdout)
	if len(rows) != 7 {
		t.Fatalf("%d rows, want 7:\n%s", len(rows), all.stdout)
	}
	for n := 1; n <= len(rows)+1; n++ {
		res := h.runWithin(context.Background(), "history", "-n", strconv.Itoa(n))
		got := rowsOf(res.stdout)
		if want := rows[max(0, len(rows)-n):]; !slices.Equal(got, want) {
			t.Errorf("-n %d:\n%s\nwant the last %d rows of the whole journal:\n%s", n, strings.Join(got, "\n"), n, strings.Join(want, "\n"))
		}
	}
}

// TestHistoryNamesTheHost: lines of a rollout across several hosts say
// which host and which rollout (DESIGN §11); a one-engine journal's table
// is as before, with no such columns.
func TestHistoryNamesTheHost(t *testing.T) {
	h := newHarness(t, nil)
	j, err := journal.Open(h.journal, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, host := range []string{"edge-1", "edge-2"} {
		e := journal.FromResult(reconcile.Result{Step: reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 0, Container: "rctest-web-0-abcd1234", Reason: "image demo:v1 → demo:v2"}},
			t0.Add(time.Duration(i)*time.Minute), "alice", "apply")
		e.Host, e.Rollout = host, "r-1234"
		if err := j.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	res := h.run("", "history")
	lines := strings.Split(strings.TrimRight(res.stdout, "\n"), "\n")
	if res.code != exitOK || len(lines) != 3 {
		t.Fatalf("exit %d, %d lines:\n%s%s", res.code, len(lines), res.stdout, res.stderr)
	}
	mustContain(t, "header", lines[0], "HOST", "ROLLOUT")
	mustContain(t, "first row", lines[1], "edge-1", "r-1234")
	mustContain(t, "second row", lines[2], "edge-2", "r-1234")

	one := newHarness(t, nil)
	writeJournal(t, one.journal, 1)
	if out := one.run("", "history").stdout; strings.Contains(out, "HOST") {
		t.Errorf("a one-engine journal grew a HOST column:\n%s", out)
	}
}
