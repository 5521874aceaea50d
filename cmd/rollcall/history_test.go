package main

import (
	"encoding/json"
	"errors"
	"strings"
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
