package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/journal"
)

// retryDecisions are the journal's retry decisions.
func retryDecisions(t *testing.T, h *harness) []journal.Entry {
	t.Helper()
	es, err := journal.Read(h.journal, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []journal.Entry
	for _, e := range es {
		if e.Result == journal.ResultDecision && e.Action == "retry" {
			out = append(out, e)
		}
	}
	return out
}

// TestRetryLiftsTheHold (§6, §9): `rollcall retry web` lifts the hold a
// rollback put on web, journaled as the operator's decision; plan then
// has web's start again (still exit 2: it is to be done), and no holds.
func TestRetryLiftsTheHold(t *testing.T) {
	h := newHarness(t, nil)
	path := holdWeb(t, h)
	hash := heldHash(t, h, path)

	res := h.run("", "retry", "web", "-f", path)
	if res.code != exitOK {
		t.Fatalf("retry: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "retry", res.stdout, "lifted the hold on web spec "+hash[:8], "by "+journal.CurrentUser(), "starts again")
	ds := retryDecisions(t, h)
	if len(ds) != 1 {
		t.Fatalf("retry decisions in the journal: %+v, want one", ds)
	}
	if d := ds[0]; d.Workload != "web" || d.Mode != "retry" || d.Prefix != "rctest" || d.Engine == "" ||
		d.User != journal.CurrentUser() || !strings.Contains(d.Reason, hash[:8]) {
		t.Errorf("retry decision %+v", d)
	}

	plan := h.run("", "plan", "--json", "-f", path)
	if plan.code != exitPending {
		t.Fatalf("plan after retry: exit %d, want 2 (web starts again)\n%s", plan.code, plan.stdout)
	}
	var doc planDoc
	if err := json.Unmarshal([]byte(plan.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Holds) != 0 {
		t.Errorf("holds after retry: %+v", doc.Holds)
	}
	starts := 0
	for _, w := range doc.Workloads {
		for _, s := range w.Steps {
			if s.Action == "start" && s.Workload == "web" {
				starts++
			}
		}
	}
	if starts == 0 {
		t.Errorf("the held spec does not start again after retry:\n%s", plan.stdout)
	}
	if files, _ := filepath.Glob(filepath.Join(filepath.Dir(h.journal), "holds-*.json")); len(files) != 0 {
		t.Errorf("holds file left after its last hold was lifted: %v", files)
	}

	// Again: nothing on hold. Said, exit 0, nothing journaled.
	again := h.run("", "retry", "web", "-f", path)
	if again.code != exitOK {
		t.Fatalf("second retry: exit %d\n%s", again.code, again.stderr)
	}
	mustContain(t, "second retry", again.stdout, "web: no spec on hold", "nothing to lift")
	if ds := retryDecisions(t, h); len(ds) != 1 {
		t.Errorf("a retry with nothing on hold was journaled: %+v", ds)
	}
}

// TestRetryErrors: an unknown workload is a clear one-line error naming the
// known ones; a missing argument is a usage error; a journal that cannot be
// written keeps the hold.
func TestRetryErrors(t *testing.T) {
	h := newHarness(t, nil)
	path := holdWeb(t, h)

	res := h.run("", "retry", "wbe", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("unknown workload: exit %d, want 1\n%s", res.code, res.stdout)
	}
	mustContain(t, "stderr", res.stderr, `no workload "wbe" in `+path, "prefix rctest", "workloads: web")
	if n := strings.Count(strings.TrimSpace(res.stderr), "\n"); n > 0 {
		t.Errorf("error is %d lines, want one:\n%s", n+1, res.stderr)
	}

	res = h.run("", "retry", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("no workload: exit %d, want 1", res.code)
	}
	mustContain(t, "stderr", res.stderr, "retry takes one workload name")

	if _, err := os.Stat("/dev/full"); err == nil {
		// The holds stay where they are (beside the journal); only the
		// journal's writes fail.
		full := filepath.Join(filepath.Dir(h.journal), "full.jsonl")
		if err := os.Symlink("/dev/full", full); err != nil {
			t.Fatal(err)
		}
		real := h.journal
		h.journal = full
		res = h.run("", "retry", "web", "-f", path)
		h.journal = real
		if res.code != exitFailed {
			t.Fatalf("journal full: exit %d, want 1\n%s", res.code, res.stdout)
		}
		mustContain(t, "stderr", res.stderr, "the hold stays")
		plan := h.run("", "plan", "-f", path)
		if plan.code != exitPending || !strings.Contains(plan.stdout, "on hold: web") {
			t.Errorf("the hold was lifted without a journal line:\n%s", plan.stdout)
		}
	}
}
