package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

var t0 = time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.UTC)

func entry(i int) Entry {
	return Entry{
		Time: t0.Add(time.Duration(i) * time.Second), User: "alice@10.0.0.5", Mode: "auto",
		Action: "start", Workload: "web", Slot: i % 3, Container: fmt.Sprintf("rollcall-web-%d-abcd1234", i%3),
		Reason: "image web:v1 → web:v2", Result: ResultOK, DurationMS: int64(10 + i),
	}
}

func openT(t *testing.T, path string, opts Options) *Journal {
	t.Helper()
	j, err := Open(path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func appendT(t *testing.T, j *Journal, es ...Entry) {
	t.Helper()
	for _, e := range es {
		if err := j.Append(e); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "rollcall", "journal.jsonl") // directories are created
	j := openT(t, path, Options{})
	failed := entry(2)
	failed.Result, failed.Error = ResultFailed, "create web/2: conflict"
	want := []Entry{entry(0), entry(1), failed, {Action: "stop", Slot: reconcile.NoSlot, Result: ResultOK, Time: t0}}
	appendT(t, j, want...)

	got, skipped, err := Scan(path, 0)
	if err != nil || skipped != 0 {
		t.Fatalf("Scan: %v, skipped %d", err, skipped)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !got[i].Time.Equal(want[i].Time) {
			t.Errorf("entry %d time %v, want %v", i, got[i].Time, want[i].Time)
		}
		got[i].Time, want[i].Time = time.Time{}, time.Time{}
		if got[i] != want[i] {
			t.Errorf("entry %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	last, err := Read(path, 2)
	if err != nil || len(last) != 2 || last[0].Error != failed.Error || last[1].Action != "stop" {
		t.Fatalf("Read(2) = %+v, %v; want the last two, oldest first", last, err)
	}
}

// The schema of `history --json`: snake_case keys, every key present.
func TestEntrySchema(t *testing.T) {
	b, err := json.Marshal(Entry{})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := []string{"time", "user", "mode", "action", "workload", "slot", "container", "reason", "result", "error", "duration_ms", "engine", "prefix", "host", "rollout"}
	if len(m) != len(want) {
		t.Errorf("keys %v, want %v", m, want)
	}
	for _, k := range want {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
}

func TestFromResult(t *testing.T) {
	s := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 1, Container: "rollcall-web-1-0123", Reason: "image web:v1 → web:v2"}
	ok := FromResult(reconcile.Result{Step: s, Duration: 1500 * time.Millisecond}, t0, "bob", "step")
	if ok.Result != ResultOK || ok.Error != "" || ok.DurationMS != 1500 || ok.Action != "roll" || ok.Slot != 1 ||
		ok.Container != s.Container || ok.Reason != s.Reason || ok.User != "bob" || ok.Mode != "step" || !ok.Time.Equal(t0) {
		t.Errorf("FromResult(ok) = %+v", ok)
	}
	bad := FromResult(reconcile.Result{Step: s, Err: errors.New("boom")}, t0, "bob", "auto")
	if bad.Result != ResultFailed || bad.Error != "boom" {
		t.Errorf("FromResult(failed) = %+v", bad)
	}
}

// A crash mid-write leaves half a line: it is skipped and counted, earlier
// lines are intact, and the next Append starts on a fresh line.
func TestTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openT(t, path, Options{})
	appendT(t, j, entry(0), entry(1))
	j.Close()

	line, _ := json.Marshal(entry(2))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(line[:len(line)/2])
	f.Close()

	got, skipped, err := Scan(path, 0)
	if err != nil || skipped != 1 || len(got) != 2 || got[1].DurationMS != entry(1).DurationMS {
		t.Fatalf("after a torn write: %d entries, %d skipped, %v; want 2 intact and 1 skipped", len(got), skipped, err)
	}

	j2 := openT(t, path, Options{})
	appendT(t, j2, entry(3))
	got, skipped, err = Scan(path, 0)
	if err != nil || skipped != 1 || len(got) != 3 || got[2].DurationMS != entry(3).DurationMS {
		t.Fatalf("after the next append: %d entries, %d skipped, %v; want 3 and 1 skipped", len(got), skipped, err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4 || lines[2] != string(line[:len(line)/2]) {
		t.Fatalf("file lines:\n%s", data)
	}
	var e Entry
	if err := json.Unmarshal([]byte(lines[3]), &e); err != nil {
		t.Fatalf("the new line does not stand alone: %q: %v", lines[3], err)
	}
}

func TestRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	one, _ := json.Marshal(entry(0))
	lineLen := int64(len(one) + 1)
	// Room for three lines per file.
	j := openT(t, path, Options{MaxBytes: 3*lineLen + lineLen/2})
	for i := range 14 {
		appendT(t, j, entry(i))
	}
	for _, name := range []string{path, path + ".1", path + ".2", path + ".3"} {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(name), err)
		}
		if st.Size() > 3*lineLen+lineLen/2 {
			t.Errorf("%s is %d bytes, over the limit", filepath.Base(name), st.Size())
		}
	}
	if _, err := os.Stat(path + ".4"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("path.4 exists: only %d rotated files are kept", Keep)
	}
	// 14 lines: the current file holds 2, the rotated ones 3 each; the
	// oldest 3 are dropped.
	all, err := Read(path, 0)
	if err != nil || len(all) != 11 {
		t.Fatalf("Read(all) = %d entries, %v; want 11", len(all), err)
	}
	for i, e := range all {
		if e.DurationMS != entry(i+3).DurationMS {
			t.Fatalf("entry %d is %d, want %d: not oldest first across files", i, e.DurationMS, entry(i+3).DurationMS)
		}
	}
	last, err := Read(path, 5)
	if err != nil || len(last) != 5 || last[0].DurationMS != entry(9).DurationMS || last[4].DurationMS != entry(13).DurationMS {
		t.Fatalf("Read(5) = %+v, %v", last, err)
	}
}

// Another process rotating the file away makes a writer reopen it.
func TestFollowsRotationByAnotherWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	a := openT(t, path, Options{})
	appendT(t, a, entry(0))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendT(t, a, entry(1))
	cur, err := readFileT(path)
	if err != nil || len(cur) != 1 || cur[0].DurationMS != entry(1).DurationMS {
		t.Fatalf("current file = %+v, %v; want the new entry only", cur, err)
	}
}

func readFileT(name string) ([]Entry, error) {
	var r Scanned
	return r.readFile(context.Background(), name, 0)
}

func TestConcurrentAppendsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	a := openT(t, path, Options{})
	b := openT(t, path, Options{}) // a second writer on the same file, as another process would be
	const writers, each = 8, 25
	long := strings.Repeat("x", 3000) // lines longer than a pipe buffer's atomic size
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j := a
			if w%2 == 1 {
				j = b
			}
			for i := range each {
				e := entry(i)
				e.Reason = fmt.Sprintf("w%d-%d %s", w, i, long)
				if err := j.Append(e); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	seen := map[string]bool{}
	for i, l := range lines {
		var e Entry
		if err := decodeLine(l, &e); err != nil {
			t.Fatalf("line %d is not a whole entry: %v", i, err)
		}
		seen[strings.Fields(e.Reason)[0]] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct entries, want %d", len(seen), writers*each)
	}
}

func TestReadMissingJournalIsEmpty(t *testing.T) {
	got, err := Read(filepath.Join(t.TempDir(), "none.jsonl"), 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("Read(missing) = %v, %v; want empty, nil", got, err)
	}
}

func TestAppendAfterClose(t *testing.T) {
	j := openT(t, filepath.Join(t.TempDir(), "j.jsonl"), Options{})
	j.Close()
	if err := j.Append(entry(0)); err == nil {
		t.Fatal("Append after Close succeeded")
	}
}

func TestUserFrom(t *testing.T) {
	for _, tc := range []struct{ user, ssh, want string }{
		{"alice", "10.0.0.5 52144 10.0.0.1 22", "alice@10.0.0.5"},
		{"alice", "", "alice"},
		{"bob", "fe80::1 52144 fe80::2 22", "bob@fe80::1"},
		{"", "", "unknown"},
	} {
		if got := userFrom(tc.user, tc.ssh); got != tc.want {
			t.Errorf("userFrom(%q, %q) = %q, want %q", tc.user, tc.ssh, got, tc.want)
		}
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	if got, err := DefaultPath(); got != "/var/state/rollcall/journal.jsonl" || err != nil {
		t.Errorf("with XDG_STATE_HOME: %q, %v", got, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", "/home/alice")
	if got, err := DefaultPath(); got != "/home/alice/.local/state/rollcall/journal.jsonl" || err != nil {
		t.Errorf("without XDG_STATE_HOME: %q, %v", got, err)
	}
}

// recorder is a writer that keeps each Write and counts its syncs, and
// fails them while broken.
type recorder struct {
	writes []string
	syncs  int
	broken error
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.broken != nil {
		return 0, r.broken
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) Sync() error { r.syncs++; return r.broken }

func (r *recorder) Close() error { return errors.New("the journal closed its writer") }

// A journal over a writer writes each entry as one whole line in one
// Write, syncs after each, fails an Append whose write fails, and does not
// close the writer.
func TestJournalOverAWriter(t *testing.T) {
	w := &recorder{}
	j := NewWriter(w)
	if j.Path() != "" {
		t.Errorf("path %q, want none", j.Path())
	}
	for _, a := range []string{"start", "stop"} {
		if err := j.Append(Entry{Action: a, Result: ResultOK}); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.writes) != 2 || w.syncs != 2 {
		t.Fatalf("%d writes, %d syncs; want 2 of each", len(w.writes), w.syncs)
	}
	for i, line := range w.writes {
		var e Entry
		if !strings.HasSuffix(line, "\n") || decodeLine([]byte(strings.TrimSuffix(line, "\n")), &e) != nil || e.Action != []string{"start", "stop"}[i] {
			t.Errorf("write %d is %q, want one whole entry line", i, line)
		}
	}
	w.broken = errors.New("disk gone")
	if err := j.Append(Entry{Action: "start"}); err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Errorf("append to a broken writer: %v", err)
	}
	w.broken = nil
	if err := j.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if err := j.Append(Entry{Action: "start"}); err == nil {
		t.Error("append after close succeeded")
	}
}

// Fold pairs a step's lines within one host: in a fleet's journal two
// hosts may run the same step (one container name) at the same moment,
// and the end of one is not the end of the other.
func TestFoldTellsHostsApart(t *testing.T) {
	start := func(host string) Entry {
		return Entry{Time: t0, Action: "start", Container: "rollcall-web-0-abcd1234", Result: ResultStarted, Host: host, Engine: "engine-" + host}
	}
	ended := start("edge-1")
	ended.Result = ResultOK
	got := Fold([]Entry{start("edge-1"), start("edge-2"), ended})
	if len(got) != 2 {
		t.Fatalf("Fold = %+v, want edge-2's start and edge-1's end", got)
	}
	if got[0].Host != "edge-2" || got[0].Result != ResultInterrupted || got[1].Host != "edge-1" || got[1].Result != ResultOK {
		t.Errorf("Fold = %+v: want edge-2 interrupted (no end of its own), then edge-1 ok", got)
	}
}
