package session

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitLimit):
		t.Fatalf("no change signalled after %s", what)
	}
}

// An editor that saves by writing a new file and renaming it over the old
// one is seen, because the directory is watched.
func TestFileSourceSeesRenameReplace(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desiredYAML("web:v1", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	src := FileSource(path)
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
	src := FileSource(path)
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
	d, err := FileSource(filepath.Join(t.TempDir(), "none.yaml")).Load(context.Background())
	if err == nil || d != nil {
		t.Fatalf("Load(missing) = %v, %v; want an error", d, err)
	}
}

// With no desired state at all there is no plan: a missing file must not
// read as "every container is extra".
func TestNoDesiredStateMeansNoPlan(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	h := newHarness(t, f, clock, "", ModeAuto)
	h.opts.Source = FileSource(filepath.Join(t.TempDir(), "none.yaml"))
	h.start()
	snap := h.waitFor("a list", func(s Snapshot) bool { return s.Connected && len(s.Containers) == 2 })
	if snap.SourceErr == nil || snap.Desired != nil || !snap.Plan.Empty() {
		t.Fatalf("source err %v, desired %v, plan:\n%s", snap.SourceErr, snap.Desired, snap.Plan)
	}
	h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("acted without a desired state: %q", m)
	}
	for _, v := range h.last.Slots {
		if v.Desired != nil || v.Containers[0].Relation != reconcile.RelUnknown {
			t.Errorf("slot %+v", v)
		}
	}
}

// A later desired state with another prefix is refused; the last good one stays.
func TestPrefixChangeIsRefused(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch).start()
	h.waitFor("a plan", func(s Snapshot) bool { return s.Resolved != nil })
	h.src.Set("prefix: other\n" + desiredYAML("web:v1", 1))
	snap := h.waitFor("the refusal", func(s Snapshot) bool { return s.SourceErr != nil })
	if snap.Prefix != pfx || snap.Desired.Prefix != pfx {
		t.Fatalf("prefix %q, desired prefix %q; error %v", snap.Prefix, snap.Desired.Prefix, snap.SourceErr)
	}
}

// After a broken start, the first good desired state sets the prefix.
func TestFirstGoodStateSetsThePrefix(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, "prefix: other\n"+desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, "workloads:\n  web: [broken\n", ModeWatch).start()
	h.waitFor("the error", func(s Snapshot) bool { return s.SourceErr != nil && s.Prefix == pfx })
	h.src.Set("prefix: other\n" + desiredYAML("web:v1", 1))
	snap := h.waitFor("the new prefix at work", func(s Snapshot) bool {
		return s.SourceErr == nil && s.Prefix == "other" && len(s.Containers) == 1 && s.Fresh && s.Plan.Empty()
	})
	if snap.Progress != (Progress{Ready: 1, Total: 1}) {
		t.Errorf("progress %v", snap.Progress)
	}
}
