package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// watchOnly is the file source of path with its content poll out of the
// way, so a signal can only come from the watch.
func watchOnly(path string) *fileSource {
	f := File(path).(*fileSource)
	f.pollEvery = time.Hour
	return f
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func writeDesired(t *testing.T, path string, replicas int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(desiredYAML("web:v1", replicas)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// swapLink points the link at path to target atomically: a new link under
// a temporary name, renamed over the old one. This is how a Kubernetes
// ConfigMap volume swaps its ..data link, and what `ln -sfn` amounts to
// (it unlinks and links anew; a rename is the harder case: one event, on
// the link's name).
func swapLink(t *testing.T, target, path string) {
	t.Helper()
	tmp := path + ".tmp"
	symlink(t, target, tmp)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// quiet lets the events of a change settle and drops a signal they left,
// so the next wait is for the next change only.
func quiet(c <-chan struct{}) {
	time.Sleep(5 * fileDebounce)
	select {
	case <-c:
	default:
	}
}

func replicasOf(t *testing.T, src Source, ctx context.Context) int {
	t.Helper()
	d, err := src.Load(ctx)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return d.Workloads["web"].Replicas
}

// A Kubernetes ConfigMap volume: rollcall.yaml -> ..data/rollcall.yaml,
// ..data -> ..a. An update writes ..b, points a ..tmp link at it, renames
// ..tmp over ..data and removes ..a: no event names rollcall.yaml. Each
// update is followed, the second one too (the watch moved to ..b).
func TestFileSourceFollowsConfigMapSwap(t *testing.T) {
	dir := t.TempDir()
	mkdir(t, filepath.Join(dir, "..a"))
	writeDesired(t, filepath.Join(dir, "..a", "rollcall.yaml"), 2)
	symlink(t, "..a", filepath.Join(dir, "..data"))
	symlink(t, "..data/rollcall.yaml", filepath.Join(dir, "rollcall.yaml"))

	src := watchOnly(filepath.Join(dir, "rollcall.yaml"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	if n := replicasOf(t, src, ctx); n != 2 {
		t.Fatalf("replicas %d at start, want 2", n)
	}

	prev := "..a"
	for i, gen := range []string{"..b", "..c"} {
		replicas := 3 + i
		mkdir(t, filepath.Join(dir, gen))
		writeDesired(t, filepath.Join(dir, gen, "rollcall.yaml"), replicas)
		swapLink(t, gen, filepath.Join(dir, "..data"))
		if err := os.RemoveAll(filepath.Join(dir, prev)); err != nil {
			t.Fatal(err)
		}
		waitSignal(t, changes, "..data swapped to "+gen)
		if n := replicasOf(t, src, ctx); n != replicas {
			t.Fatalf("replicas %d after the swap to %s, want %d", n, gen, replicas)
		}
		quiet(changes)
		prev = gen
	}

	// The file of the current generation edited in place is followed too.
	writeDesired(t, filepath.Join(dir, prev, "rollcall.yaml"), 6)
	waitSignal(t, changes, "the target edited in place")
	if n := replicasOf(t, src, ctx); n != 6 {
		t.Fatalf("replicas %d, want 6", n)
	}
}

// A link to a file in another directory: the target edited in place, then
// replaced by an editor's rename in its own directory, is followed.
func TestFileSourceFollowsLinkTargetInAnotherDirectory(t *testing.T) {
	linkDir, realDir := t.TempDir(), t.TempDir()
	target := filepath.Join(realDir, "real.yaml")
	writeDesired(t, target, 2)
	path := filepath.Join(linkDir, "rollcall.yaml")
	symlink(t, target, path)

	src := watchOnly(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	writeDesired(t, target, 3) // in place
	waitSignal(t, changes, "the link's target edited in place")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d after the in-place edit, want 3", n)
	}
	quiet(changes)

	tmp := filepath.Join(realDir, ".real.yaml.swp")
	writeDesired(t, tmp, 4)
	if err := os.Rename(tmp, target); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "the link's target replaced by a rename")
	if n := replicasOf(t, src, ctx); n != 4 {
		t.Fatalf("replicas %d after the rename, want 4", n)
	}
}

// The link itself replaced (ln -sfn) by one to a third directory: the swap
// is followed, and so are later edits of the new target.
func TestFileSourceFollowsLinkReplacement(t *testing.T) {
	linkDir, oldDir, newDir := t.TempDir(), t.TempDir(), t.TempDir()
	writeDesired(t, filepath.Join(oldDir, "rollcall.yaml"), 2)
	writeDesired(t, filepath.Join(newDir, "rollcall.yaml"), 3)
	path := filepath.Join(linkDir, "rollcall.yaml")
	symlink(t, filepath.Join(oldDir, "rollcall.yaml"), path)

	src := watchOnly(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	swapLink(t, filepath.Join(newDir, "rollcall.yaml"), path)
	waitSignal(t, changes, "the link replaced")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d after the link was replaced, want 3", n)
	}
	quiet(changes)

	writeDesired(t, filepath.Join(newDir, "rollcall.yaml"), 4)
	waitSignal(t, changes, "the new target edited")
	if n := replicasOf(t, src, ctx); n != 4 {
		t.Fatalf("replicas %d after the new target was edited, want 4", n)
	}
}

// A chain of links, a -> b -> real: the middle link re-pointed in its own
// directory is followed, then edits of the file it now names.
func TestFileSourceFollowsAChangeMidChain(t *testing.T) {
	aDir, bDir, cDir := t.TempDir(), t.TempDir(), t.TempDir()
	writeDesired(t, filepath.Join(cDir, "one.yaml"), 2)
	writeDesired(t, filepath.Join(cDir, "two.yaml"), 3)
	mid := filepath.Join(bDir, "mid.yaml")
	symlink(t, filepath.Join(cDir, "one.yaml"), mid)
	path := filepath.Join(aDir, "rollcall.yaml")
	symlink(t, mid, path)

	src := watchOnly(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	swapLink(t, "../"+filepath.Base(cDir)+"/two.yaml", mid) // relative to bDir
	waitSignal(t, changes, "the middle link re-pointed")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d, want 3", n)
	}
	quiet(changes)
	writeDesired(t, filepath.Join(cDir, "two.yaml"), 5)
	waitSignal(t, changes, "the new end of the chain edited")
	if n := replicasOf(t, src, ctx); n != 5 {
		t.Fatalf("replicas %d, want 5", n)
	}
}

// A plain file edited in place and replaced by a rename is still followed
// by the watch alone.
func TestFileSourceFollowsPlainFileByWatch(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rollcall.yaml")
	writeDesired(t, path, 2)
	src := watchOnly(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	writeDesired(t, path, 3)
	waitSignal(t, changes, "an in-place edit")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d, want 3", n)
	}
	quiet(changes)
	tmp := filepath.Join(dir, ".rollcall.yaml.swp")
	writeDesired(t, tmp, 4)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "a rename over the file")
	if n := replicasOf(t, src, ctx); n != 4 {
		t.Fatalf("replicas %d, want 4", n)
	}
}

// With no watch at all (one missed every event), the content poll alone
// follows a ConfigMap swap and an in-place edit.
func TestFileSourcePollAloneCatchesChanges(t *testing.T) {
	dir := t.TempDir()
	mkdir(t, filepath.Join(dir, "..a"))
	writeDesired(t, filepath.Join(dir, "..a", "rollcall.yaml"), 2)
	symlink(t, "..a", filepath.Join(dir, "..data"))
	symlink(t, "..data/rollcall.yaml", filepath.Join(dir, "rollcall.yaml"))

	src := File(filepath.Join(dir, "rollcall.yaml")).(*fileSource)
	src.noWatch, src.pollEvery = true, 10*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	mkdir(t, filepath.Join(dir, "..b"))
	writeDesired(t, filepath.Join(dir, "..b", "rollcall.yaml"), 3)
	swapLink(t, "..b", filepath.Join(dir, "..data"))
	waitSignal(t, changes, "..data swapped, seen by the poll")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d, want 3", n)
	}
	quiet(changes)
	if err := os.WriteFile(filepath.Join(dir, "..b", "rollcall.yaml"), []byte(desiredYAML("web:v2", 3)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitSignal(t, changes, "an in-place edit, seen by the poll")
	if d, err := src.Load(ctx); err != nil || d.Workloads["web"].Image != "web:v2" {
		t.Fatalf("Load = %+v, %v", d, err)
	}
}

// The link's target directory removed and made again under the same name
// (rm -rf conf && mkdir conf): the watch is placed on the new directory,
// so its later edits are followed.
func TestFileSourceFollowsATargetDirectoryMadeAgain(t *testing.T) {
	linkDir, base := t.TempDir(), t.TempDir()
	conf := filepath.Join(base, "conf")
	mkdir(t, conf)
	writeDesired(t, filepath.Join(conf, "rollcall.yaml"), 2)
	path := filepath.Join(linkDir, "rollcall.yaml")
	symlink(t, filepath.Join(conf, "rollcall.yaml"), path)

	src := watchOnly(path)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)

	if err := os.RemoveAll(conf); err != nil {
		t.Fatal(err)
	}
	mkdir(t, conf)
	writeDesired(t, filepath.Join(conf, "rollcall.yaml"), 3)
	waitSignal(t, changes, "the directory made again")
	if n := replicasOf(t, src, ctx); n != 3 {
		t.Fatalf("replicas %d, want 3", n)
	}
	quiet(changes)
	writeDesired(t, filepath.Join(conf, "rollcall.yaml"), 4)
	waitSignal(t, changes, "an edit in the directory made again")
	if n := replicasOf(t, src, ctx); n != 4 {
		t.Fatalf("replicas %d, want 4", n)
	}
}
