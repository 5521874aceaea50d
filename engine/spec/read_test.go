package spec

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFileRefusesAllButRegularFiles checks that a desired-state path
// that is not a regular file (or a link to one) is refused by its kind,
// promptly, and that every read is bounded at MaxDocumentBytes.
func TestReadFileRefusesAllButRegularFiles(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name string, data []byte) string {
		if err := os.WriteFile(path(name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	link := func(name, target string) string {
		if err := os.Symlink(target, path(name)); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	fifo := path("fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	regular := write("rollcall.yaml", []byte("workloads: {}\n"))

	tests := []struct {
		rule string
		path string
		want string // in the error; "" for success
	}{
		{"a regular file is read", regular, ""},
		{"a link to a regular file is read", link("link.yaml", regular), ""},
		{"a FIFO is refused without blocking", fifo, "is a named pipe (FIFO), not a regular file"},
		{"a link to a FIFO is refused without blocking", link("fifo-link.yaml", fifo), "is a named pipe (FIFO)"},
		{"a link to /dev/zero is refused", link("zero.yaml", "/dev/zero"), "is a character device, not a regular file"},
		{"a link to /dev/urandom is refused", link("urandom.yaml", "/dev/urandom"), "is a character device"},
		{"a directory is refused", dir, "is a directory, not a regular file"},
		{"a file over the limit is refused, naming the limit", write("big.yaml", make([]byte, MaxDocumentBytes+1)), "larger than the 4 MiB limit"},
		{"a file of exactly the limit is read", write("max.yaml", make([]byte, MaxDocumentBytes)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			type result struct {
				data []byte
				err  error
			}
			done := make(chan result, 1)
			go func() {
				data, err := ReadFile(tt.path)
				done <- result{data, err}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFile(%s) still blocks after 5s", tt.path)
			}
			switch {
			case tt.want == "" && r.err != nil:
				t.Fatalf("error %v, want none", r.err)
			case tt.want == "":
				if st, _ := os.Stat(tt.path); int64(len(r.data)) != st.Size() {
					t.Errorf("read %d bytes, want %d", len(r.data), st.Size())
				}
			case r.err == nil:
				t.Fatalf("read %d bytes, want an error with %q", len(r.data), tt.want)
			case !strings.Contains(r.err.Error(), tt.want) || !strings.Contains(r.err.Error(), tt.path):
				t.Errorf("error %q, want one naming %s with %q", r.err, tt.path, tt.want)
			}
		})
	}
}

func TestReadFileOfAMissingFileIsNotExist(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %v, want one that is fs.ErrNotExist", err)
	}
}
