package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFileSourceRefusesHostileFiles checks that a file or compose source
// whose path is a FIFO, a link to a device or an oversized file gives an
// error promptly: it never blocks in open and never reads without bound,
// so a session keeps its last good state and shows why.
func TestFileSourceRefusesHostileFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
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
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("workloads: {}\n"+strings.Repeat("#", 5<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		rule string
		path string
		want string
	}{
		{"a FIFO", fifo, "named pipe (FIFO)"},
		{"a link to /dev/zero", link("zero.yaml", "/dev/zero"), "character device"},
		{"a link to /dev/urandom", link("urandom.yaml", "/dev/urandom"), "character device"},
		{"a directory", link("dir.yaml", dir), "directory"},
		{"a file over 4 MiB", big, "4 MiB limit"},
	}
	for _, tt := range tests {
		for kind, src := range map[string]Source{"file": File(tt.path), "compose": Compose(tt.path, nil)} {
			t.Run(kind+" source: "+tt.rule, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					_, err := src.Load(ctx)
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "read desired state") {
						t.Errorf("Load = %v, want a read error with %q", err, tt.want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("Load(%s) still blocks after 5s", tt.path)
				}
			})
		}
	}
}

// TestComposeSourceRefusesHostilePulledInFiles (issue 18, row 2): a
// compose source whose env_file, label_file, extends file or include is a
// FIFO, a link to /dev/zero or a 1 GiB sparse file gives an error at once,
// naming the file; never a blocked or unbounded read.
func TestComposeSourceRefusesHostilePulledInFiles(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "sparse"), 1<<30); err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{
		"env_file":   "services:\n  web:\n    image: web:v1\n    env_file: %s\n",
		"label_file": "services:\n  web:\n    image: web:v1\n    label_file: %s\n",
		"extends":    "services:\n  web:\n    image: web:v1\n    extends: {file: %s, service: base}\n",
		"include":    "include: [%s]\nservices:\n  web: {image: web:v1}\n",
	}
	for attr, doc := range docs {
		for target, want := range map[string]string{"fifo": "named pipe (FIFO)", "zero": "character device", "sparse": "4 MiB limit"} {
			t.Run(attr+" "+target, func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "compose.yaml")
				if err := os.WriteFile(path, []byte(strings.ReplaceAll(doc, "%s", filepath.Join(dir, target))), 0o644); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					_, err := Compose(path, nil).Load(context.Background())
					done <- err
				}()
				select {
				case err := <-done:
					if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), filepath.Join(dir, target)) ||
						!strings.Contains(err.Error(), path+":") {
						t.Errorf("Load = %v, want an error at %s naming %s with %q", err, path, target, want)
					}
				case <-time.After(5 * time.Second):
					t.Fatalf("Load still blocks after 5s")
				}
			})
		}
	}
}
