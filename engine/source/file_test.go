package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// An editor that saves by writing a new file and renaming it over the old
// one is seen, because the directory is watched.
func TestFileSourceSeesRenameReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desiredYAML("web:v1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := File(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	tmp := filepath.Join(dir, ".rollcall.yaml.swp")
	if err := os.WriteFile(tmp, []byte(desiredYAML("web:v2", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "a rename over the file")
	d, err := src.Load(ctx)
	if err != nil || d.Workloads["web"].Image != "web:v2" || d.Workloads["web"].Replicas != 3 {
		t.Fatalf("Load after the rename = %+v, %v", d, err)
	}
	if src.Name() != path {
		t.Errorf("Name() = %q", src.Name())
	}
}

// A burst of writes settles into a signal, and Load then reads the last
// content.
func TestFileSourceSettlesAfterABurst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desiredYAML("web:v1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := File(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	for n := 2; n <= 6; n++ {
		if err := os.WriteFile(path, []byte(desiredYAML("web:v1", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitSignal(t, changes, "a burst of writes")
	d, err := src.Load(ctx)
	if err != nil || d.Workloads["web"].Replicas != 6 {
		t.Fatalf("Load after the burst = %+v, %v", d, err)
	}
}

// A missing file is an error, never an empty desired state.
func TestFileSourceMissingFile(t *testing.T) {
	d, err := File(filepath.Join(t.TempDir(), "none.yaml")).Load(context.Background())
	if err == nil || d != nil {
		t.Fatalf("Load(missing) = %v, %v; want an error", d, err)
	}
}

// TestFileSourceRetriesAFailedRead (issue 26, row 12): a change whose
// read fails for a reason that passes (no file descriptor left: EMFILE)
// is read again at the next polls until it succeeds; the file's stamp
// does not change again, so without the retry the change would never be
// loaded. A read that fails for a lasting reason (a missing file) is not
// signalled again until the file changes.
func TestFileSourceRetriesAFailedRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desiredYAML("web:v1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := File(path).(*fileSource)
	src.noWatch, src.pollEvery = true, 10*time.Millisecond
	var fail atomic.Bool
	src.read = func(p string) ([]byte, error) {
		if fail.Swap(false) {
			return nil, &fs.PathError{Op: "open", Path: p, Err: syscall.EMFILE}
		}
		return spec.ReadFile(p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	if err := os.WriteFile(path, []byte(desiredYAML("web:v2", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "the write")
	fail.Store(true)
	if d, err := src.Load(ctx); !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Load with no descriptor left = %+v, %v; want EMFILE", d, err)
	}
	waitSignal(t, changes, "a read that failed with EMFILE (nothing changed on disk since)")
	d, err := src.Load(ctx)
	if err != nil || d.Workloads["web"].Image != "web:v2" {
		t.Fatalf("Load on the retry = %+v, %v; want web:v2", d, err)
	}
	if src.retry.Load() {
		t.Error("still retrying after a good read")
	}
	// A lasting failure: no retry flag, the poll waits for the file.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "the removal")
	if _, err := src.Load(ctx); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a removed file: %v", err)
	}
	if src.retry.Load() {
		t.Error("a missing file is retried at each poll")
	}
}
