package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
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
