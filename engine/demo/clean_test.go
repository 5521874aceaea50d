package demo

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/state"
)

// images is an image store for Clean: each image its labels and tags; a
// removal by tag takes the tag off (the image with it when no tag is left),
// by ID the untagged image, as the engine does.
type images struct {
	byID    map[string]*fakeImage
	removed []string
}

type fakeImage struct {
	tags   []string
	labels map[string]string
}

func (s *images) ImagesLabelled(_ context.Context, label string) ([]docker.Image, error) {
	k, v, _ := strings.Cut(label, "=")
	var out []docker.Image
	for id, i := range s.byID {
		if i.labels[k] == v {
			out = append(out, docker.Image{ID: id, RepoTags: slices.Clone(i.tags)})
		}
	}
	return out, nil
}

func (s *images) RemoveImage(_ context.Context, ref string) error {
	s.removed = append(s.removed, ref)
	if i, ok := s.byID[ref]; ok {
		if len(i.tags) > 0 {
			return docker.ErrConflict
		}
		delete(s.byID, ref)
		return nil
	}
	for id, i := range s.byID {
		if j := slices.Index(i.tags, ref); j >= 0 {
			i.tags = slices.Delete(i.tags, j, j+1)
			if len(i.tags) == 0 {
				delete(s.byID, id)
			}
			return nil
		}
	}
	return docker.ErrNotFound
}

// imageEngine is an engine with no containers whose images are s.
type imageEngine struct {
	docker.Client
	*images
}

func (imageEngine) List(context.Context, string) ([]docker.Container, error) { return nil, nil }

// TestCleanRemovesAllTheDemoMadeAndNothingElse: clean removes the demo's
// tags and the older builds of them no tag names any more, its desired
// files of one host and of several, and the prefix's revisions, holds,
// pins and unheld lock files; it leaves an image someone else also
// tagged, a build of another tag, a file of the operator's in the demo's
// folder, a held lock, and every file of another prefix (one that begins
// with the demo's too).
func TestCleanRemovesAllTheDemoMadeAndNothingElse(t *testing.T) {
	const prefix = "rctest-demo"
	img := Images{V1: "rctest-demoapp:v1", V2: "rctest-demoapp:v2"}
	label := func(tag string) map[string]string { return map[string]string{imagebuild.TagLabel: tag} }
	store := &images{byID: map[string]*fakeImage{
		"sha256:v1":     {tags: []string{img.V1}, labels: label(img.V1)},
		"sha256:v2":     {tags: []string{img.V2, "mine:kept"}, labels: label(img.V2)},
		"sha256:v1-old": {labels: label(img.V1)},
		"sha256:v2-old": {labels: label(img.V2)},
		"sha256:other":  {labels: label("rctest-demoapp:v3")},
		"sha256:plain":  {tags: []string{"busybox:1"}},
	}}
	dir, stateDir, lockDir := t.TempDir(), t.TempDir(), t.TempDir()
	write := func(path string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const key = "0123456789ab"
	gone := []string{
		write(filepath.Join(dir, "rollcall.yaml")), write(filepath.Join(dir, "fleet.yaml")),
		write(filepath.Join(dir, "hosts", "edge-1", "rollcall.yaml")), write(filepath.Join(dir, "hosts", "edge-2", "rollcall.yaml")),
		write(filepath.Join(stateDir, "revisions-"+prefix+"-"+key+".json")),
		write(filepath.Join(stateDir, "holds-"+prefix+"-"+key+".json")),
		write(filepath.Join(stateDir, "pins-"+prefix+"-"+key+".json")),
		write(filepath.Join(stateDir, "revisions-"+prefix+"-"+key+".json.lock")),
		write(filepath.Join(lockDir, "rollcall-"+prefix+"-"+key+".lock")),
	}
	kept := []string{
		write(filepath.Join(dir, "notes.txt")),
		write(filepath.Join(stateDir, "revisions-"+prefix+"-x-"+key+".json")),
		write(filepath.Join(stateDir, "revisions-rollcall-"+key+".json")),
		write(filepath.Join(stateDir, "journal.jsonl")),
		write(filepath.Join(lockDir, "rollcall-"+prefix+"-x-"+key+".lock")),
	}
	held := filepath.Join(lockDir, "rollcall-"+prefix+"-ba9876543210.lock")
	lk, _, err := state.TakeLock(held, "tester", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lk.Release()
	kept = append(kept, held)

	out, err := Clean(t.Context(), imageEngine{images: store}, CleanOptions{Prefix: prefix, Dir: dir, Images: img, StateDir: stateDir, LockDir: lockDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
		if !slices.Contains(out.Files, p) {
			t.Errorf("%s: removed but not said: %v", p, out.Files)
		}
	}
	for _, p := range kept {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: not the demo's, and gone: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "hosts")); !os.IsNotExist(err) {
		t.Errorf("the empty hosts folder stayed: %v", err)
	}
	var left []string
	for id, i := range store.byID {
		left = append(left, id+" "+strings.Join(i.tags, ","))
	}
	slices.Sort(left)
	if want := []string{"sha256:other ", "sha256:plain busybox:1", "sha256:v2 mine:kept"}; !slices.Equal(left, want) {
		t.Errorf("images left %q, want %q", left, want)
	}
	slices.Sort(out.Images)
	if want := []string{"rctest-demoapp:v1", "rctest-demoapp:v2", "sha256:v1-old", "sha256:v2-old"}; !slices.Equal(out.Images, want) {
		t.Errorf("images removed %q, want %q", out.Images, want)
	}
}
