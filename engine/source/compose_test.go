package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A compose file is read through load.ParseCompose, and a change of the
// .env beside it counts as a change of the desired state.
func TestComposeSourceFollowsDotEnv(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("compose.yaml", "services:\n  web:\n    image: web:${TAG}\n    deploy: {replicas: 2}\n")
	write(".env", "TAG=v1\n")
	src := Compose(path, []string{"HOME=/root"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	d, err := src.Load(ctx)
	if err != nil || d.Workloads["web"].Image != "web:v1" || d.Workloads["web"].Replicas != 2 || d.Source != path {
		t.Fatalf("Load = %+v, %v", d, err)
	}

	write(".env", "TAG=v2\n")
	waitSignal(t, changes, "a change of .env")
	if d, err = src.Load(ctx); err != nil || d.Workloads["web"].Image != "web:v2" {
		t.Fatalf("Load after .env changed = %+v, %v", d, err)
	}
	if src.Name() != path {
		t.Errorf("Name() = %q", src.Name())
	}
}
