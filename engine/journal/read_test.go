package journal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// scanWithin runs Scan in a goroutine and fails the test when it is still
// blocked after 5s, so a read that hangs ends the test, not the suite.
func scanWithin(t *testing.T, path string, n int) ([]Entry, int, error) {
	t.Helper()
	type result struct {
		es      []Entry
		skipped int
		err     error
	}
	done := make(chan result, 1)
	go func() {
		es, skipped, err := Scan(path, n)
		done <- result{es, skipped, err}
	}()
	select {
	case r := <-done:
		return r.es, r.skipped, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("Scan(%s) still blocks after 5s", path)
		return nil, 0, nil
	}
}

// TestScanRefusesAllButRegularFiles (issue 18, row 5): a journal, or a
// rotated file beside it, that is a FIFO, a link to a device or a
// directory is an error naming it and its kind, at once; never a read that
// blocks on the FIFO or runs through /dev/zero.
func TestScanRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	link := func(name, target string) string {
		path := filepath.Join(dir, name)
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		return path
	}
	// A good journal whose first rotated file is a FIFO: reading all of it
	// reaches the FIFO.
	rotatedFIFO := filepath.Join(dir, "rot.jsonl")
	j := openT(t, rotatedFIFO, Options{})
	appendT(t, j, entry(0))
	j.Close()
	if err := syscall.Mkfifo(rotatedFIFO+".1", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rule, path, kind string
		n                int
	}{
		{"a FIFO", fifo, "a named pipe (FIFO)", 10},
		{"a link to a FIFO", link("fifo-link.jsonl", fifo), "a named pipe (FIFO)", 10},
		{"a link to /dev/zero", link("zero.jsonl", "/dev/zero"), "a character device", 10},
		{"a link to /dev/urandom", link("urandom.jsonl", "/dev/urandom"), "a character device", 0},
		{"a directory", link("dir.jsonl", dir), "a directory", 0},
		{"a rotated file that is a FIFO", rotatedFIFO, "a named pipe (FIFO)", 0},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			es, _, err := scanWithin(t, tt.path, tt.n)
			var nr *NotRegularError
			if !errors.As(err, &nr) || nr.Kind != tt.kind {
				t.Fatalf("Scan = %d entries, %v; want a NotRegularError of %s", len(es), err, tt.kind)
			}
			if !strings.Contains(err.Error(), tt.path) && !strings.Contains(err.Error(), tt.path+".1") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
	// Only what -n needs is read: the FIFO behind the current file is
	// never reached when the current file holds enough.
	if es, _, err := scanWithin(t, rotatedFIFO, 1); err != nil || len(es) != 1 {
		t.Errorf("Scan(-n 1) = %d entries, %v; want the one entry of the current file", len(es), err)
	}
}

// TestScanBoundsEachLine: a line over MaxLineBytes is skipped, counted and
// reported with its file and line number; the lines around it are read.
func TestScanBoundsEachLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	var b bytes.Buffer
	for _, line := range [][]byte{
		mustJSON(t, entry(0)),
		bytes.Repeat([]byte("x"), MaxLineBytes+1),
		mustJSON(t, entry(2)),
		bytes.Repeat([]byte("y"), MaxLineBytes), // at the limit: read, does not parse
		mustJSON(t, entry(4)),
	} {
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := ScanContext(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 3 || r.Entries[1].DurationMS != entry(2).DurationMS || r.Skipped != 2 {
		t.Errorf("%d entries, %d skipped; want 3 entries and 2 skipped", len(r.Entries), r.Skipped)
	}
	want := Line{File: path, Number: 2, Offset: int64(len(mustJSON(t, entry(0))) + 1)}
	if len(r.Long) != 1 || r.Long[0] != want {
		t.Errorf("long lines %+v, want [%+v]", r.Long, want)
	}
}

// TestScanReadsTheEndOfAFileOverTheBound: a file past MaxFileBytes is read
// for its last MaxFileBytes only (the line cut at the start dropped, not
// counted), and reported as partial; -n keeps the newest.
func TestScanReadsTheEndOfAFileOverTheBound(t *testing.T) {
	old := maxFileBytes
	maxFileBytes = 4 << 10
	t.Cleanup(func() { maxFileBytes = old })

	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openT(t, path, Options{MaxBytes: 1 << 30})
	for i := range 100 {
		appendT(t, j, entry(i))
	}
	j.Close()
	st, _ := os.Stat(path)
	lineLen := st.Size() / 100

	r, err := ScanContext(context.Background(), path, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Partial) != 1 || r.Partial[0] != path {
		t.Errorf("partial %v, want [%s]", r.Partial, path)
	}
	if r.Skipped != 0 {
		t.Errorf("%d skipped, want 0: the line cut at the start is not a bad line", r.Skipped)
	}
	if max := int(maxFileBytes / lineLen); len(r.Entries) > max || len(r.Entries) < max-1 {
		t.Errorf("%d entries, want the %d or so of the file's last %d bytes", len(r.Entries), max, maxFileBytes)
	}
	if last := r.Entries[len(r.Entries)-1]; last.DurationMS != entry(99).DurationMS {
		t.Errorf("last entry %+v, want the newest", last)
	}
	r, err = ScanContext(context.Background(), path, 3)
	if err != nil || len(r.Entries) != 3 || r.Entries[0].DurationMS != entry(97).DurationMS {
		t.Errorf("-n 3: %d entries, %v; want entries 97-99", len(r.Entries), err)
	}
}

// TestScanOfASparseGiantFile: a 4 GiB sparse file (zeros, then two entries)
// reads in bounded memory: its last MaxFileBytes only, the zeros there
// dropped as the line cut at the start, the entries at its end read.
func TestScanOfASparseGiantFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	tail := append(append(append([]byte{'\n'}, mustJSON(t, entry(1))...), '\n'), append(mustJSON(t, entry(2)), '\n')...)
	if _, err := f.WriteAt(tail, 4<<30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r, err := ScanContext(context.Background(), path, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 2 || r.Entries[1].DurationMS != entry(2).DurationMS || len(r.Partial) != 1 {
		t.Errorf("%d entries, partial %v; want the 2 entries at the end and the file partial", len(r.Entries), r.Partial)
	}
}

// TestScanEndsWhenItsContextIsDone: a read in progress stops with ctx's
// error (history ends on SIGINT or SIGTERM that way).
func TestScanEndsWhenItsContextIsDone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openT(t, path, Options{})
	appendT(t, j, entry(0), entry(1))
	j.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ScanContext(ctx, path, 0)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
		t.Errorf("ScanContext(cancelled) = %v; want context.Canceled naming the file", err)
	}
}

func mustJSON(t *testing.T, e Entry) []byte {
	t.Helper()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
