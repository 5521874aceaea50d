package demo

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// TestDemoOnRealEngine: on the real engine the demo builds its images from
// a demoapp executable, creates containers only under its own prefix, in the
// out-of-date state the console opens on, and clean leaves nothing behind.
// It runs under a per-run prefix and per-run image tags, so a demo an
// operator has running on the same host is not disturbed: the demo's own
// tags are left as they were.
func TestDemoOnRealEngine(t *testing.T) {
	m := dockertest.Engine(t)
	prefix := dockertest.Prefix(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	demoTags := func() map[string]string {
		ids := map[string]string{}
		for _, tag := range []string{ImageV1, ImageV2} {
			img, err := m.ImageInspect(ctx, tag)
			if err != nil && !errors.Is(err, docker.ErrNotFound) {
				t.Fatal(err)
			}
			ids[tag] = img.ID
		}
		return ids
	}
	before := demoTags()
	img := Images{V1: dockertest.ImageTag("demoapp", "demo-v1"), V2: dockertest.ImageTag("demoapp", "demo-v2")}
	// An older build of v1, from another executable (a byte longer), which
	// the build below leaves untagged: clean removes it too.
	bin := dockertest.DemoappBinary(t)
	older := filepath.Join(t.TempDir(), "demoapp")
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(older, append(exe, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	oldID, err := imagebuild.BuildImage(ctx, dockertest.ImageBuilder(t), older, img.V1, "v1")
	if err != nil {
		t.Fatal(err)
	}
	// Stage builds the images only on the bare adapter, and the guard
	// wraps it: build them here, as Stage would, from a compiled demoapp.
	if err := buildImages(ctx, dockertest.ImageBuilder(t), bin, img, io.Discard); err != nil {
		t.Fatal(err)
	}
	if i, err := m.ImageInspect(ctx, oldID); err != nil || len(i.RepoTags) != 0 {
		t.Fatalf("the older build of %s: %+v, %v; want it there, untagged", img.V1, i, err)
	}
	info, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := session.AcquireLock(info, prefix, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	g := &guard{Client: m, prefix: prefix, t: t, img: img}
	dir := t.TempDir()
	if _, err := Stage(ctx, g, StageOptions{Prefix: prefix, Dir: dir, Lock: lock, Images: img}); err != nil {
		t.Fatal(err)
	}
	cs, err := m.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Image != img.V1 && c.Image != img.V2 {
			t.Errorf("%s runs %s, want one of the run's tags %s or %s", c.Name, c.Image, img.V1, img.V2)
		}
	}
	if after := demoTags(); !maps.Equal(after, before) {
		t.Errorf("the demo's own tags (tag → image ID) went from %v to %v: a test rebuilt them", before, after)
	}
	if g.created.Load() != 6 || len(cs) != 6 {
		t.Fatalf("created %d containers, listed %d under the prefix; want 3 web + 2 worker + 1 old-api", g.created.Load(), len(cs))
	}
	crashed := 0
	for _, c := range cs {
		if c.State == docker.StateExited {
			crashed++
		}
	}
	if crashed != 1 {
		t.Errorf("%d crashed containers, want worker/0", crashed)
	}

	out, err := Clean(ctx, g, CleanOptions{Prefix: prefix, Dir: dir, Images: img})
	if err != nil || out.Containers != 6 {
		t.Fatalf("clean removed %d, err %v; want 6", out.Containers, err)
	}
	if cs, _ := m.List(ctx, prefix); len(cs) != 0 {
		t.Fatalf("clean left %d containers", len(cs))
	}
	for _, ref := range []string{img.V1, img.V2, oldID} {
		if i, err := m.ImageInspect(ctx, ref); !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("clean left the image %s: %+v, %v", ref, i, err)
		}
	}
	if len(out.Images) != 3 {
		t.Errorf("clean said it removed the images %q, want the 2 tags and the older build", out.Images)
	}
	if after := demoTags(); !maps.Equal(after, before) {
		t.Errorf("the demo's own tags (tag → image ID) went from %v to %v: clean touched them", before, after)
	}
}

// TestDemoWithARegistryOnRealEngine: demo --registry pushes the demo's
// images to a registry of its own on loopback, takes the registry tags off
// the engine, stages web from the registry (its start state pulled), and
// the plan of the desired state begins web's roll with the pull of v2 from
// the registry, alone: nothing of web starts or stops before. Clean removes
// the copies pulled from the registry with the rest. Per-run tags and
// prefix, as TestDemoOnRealEngine: the demo's own tags are never touched.
func TestDemoWithARegistryOnRealEngine(t *testing.T) {
	m := dockertest.Engine(t)
	prefix := dockertest.Prefix(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	demoTags := func() map[string]string {
		ids := map[string]string{}
		for _, tag := range []string{ImageV1, ImageV2} {
			img, err := m.ImageInspect(ctx, tag)
			if err != nil && !errors.Is(err, docker.ErrNotFound) {
				t.Fatal(err)
			}
			ids[tag] = img.ID
		}
		return ids
	}
	before := demoTags()
	img := Images{V1: dockertest.ImageTag("demoapp", "demoreg-v1"), V2: dockertest.ImageTag("demoapp", "demoreg-v2")}
	if err := buildImages(ctx, dockertest.ImageBuilder(t), dockertest.DemoappBinary(t), img, io.Discard); err != nil {
		t.Fatal(err)
	}
	reg, err := StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	// Stage pushes only on the bare adapter, and the guard wraps it: push
	// here, as Stage would.
	remote, err := pushImages(ctx, m, reg.Host, img, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // what a failed run left
		for _, ref := range []string{remote.V1, remote.V2} {
			dockertest.RemoveLocal(t, ref)
		}
	})
	if remote != img.InRegistry(reg.Host) || !strings.HasPrefix(remote.V2, "127.0.0.1:") {
		t.Fatalf("pushed as %+v, want %+v on 127.0.0.1", remote, img.InRegistry(reg.Host))
	}
	for _, ref := range []string{remote.V1, remote.V2} {
		if _, err := m.ImageInspect(ctx, ref); !errors.Is(err, docker.ErrNotFound) {
			t.Fatalf("the engine has %s after the push (%v): the pull would not be needed", ref, err)
		}
	}
	info, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := session.AcquireLock(info, prefix, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	g := &guard{Client: m, prefix: prefix, t: t, img: img}
	dir := t.TempDir()
	path, err := Stage(ctx, g, StageOptions{Prefix: prefix, Dir: dir, Lock: lock, Images: img, Registry: reg.Host})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := m.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		want := remote.V1
		if c.Labels[docker.WorkloadLabel(prefix)] == "worker" {
			want = img.V2
		}
		if c.Image != want {
			t.Errorf("%s runs %s, want %s", c.Name, c.Image, want)
		}
	}
	if len(cs) != 6 {
		t.Fatalf("listed %d containers under the prefix; want 3 web + 2 worker + 1 old-api", len(cs))
	}
	if _, err := m.ImageInspect(ctx, remote.V2); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("the engine has %s once staged (%v): the console would show no pull", remote.V2, err)
	}

	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	desired, err := load.Parse(path, text)
	if err != nil {
		t.Fatal(err)
	}
	plan := reconcile.Diff(spec.Resolve(ctx, desired, m), &reconcile.Observed{Now: time.Now(), Containers: cs})
	var web []string
	for _, s := range plan.Steps() {
		if s.Workload == "web" && s.Action != reconcile.ActWait {
			web = append(web, string(s.Action)+" "+s.Container)
		}
	}
	if want := []string{"pull " + remote.V2}; !slices.Equal(web, want) {
		t.Fatalf("web's steps in the plan: %q, want only %q\n%s", web, want, plan)
	}

	out, err := Clean(ctx, g, CleanOptions{Prefix: prefix, Dir: dir, Images: img})
	if err != nil || out.Containers != 6 {
		t.Fatalf("clean removed %d, err %v; want 6", out.Containers, err)
	}
	for _, ref := range []string{img.V1, img.V2, remote.V1} {
		if i, err := m.ImageInspect(ctx, ref); !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("clean left the image %s: %+v, %v", ref, i, err)
		}
	}
	if !slices.Contains(out.Images, remote.V1) {
		t.Errorf("clean said it removed %q, want %s among them", out.Images, remote.V1)
	}
	if after := demoTags(); !maps.Equal(after, before) {
		t.Errorf("the demo's own tags (tag → image ID) went from %v to %v: the test touched them", before, after)
	}
}

// ImagesLabelled lists through the engine.
func (g *guard) ImagesLabelled(ctx context.Context, label string) ([]docker.Image, error) {
	return g.Client.(*moby.Moby).ImagesLabelled(ctx, label)
}

// RemoveImage fails the test on any image but the run's: its tags, and
// images labelled as built for them.
func (g *guard) RemoveImage(ctx context.Context, ref string) error {
	m := g.Client.(*moby.Moby)
	ours := ref == g.img.V1 || ref == g.img.V2 || registryCopyOf(ref, g.img.V1) || registryCopyOf(ref, g.img.V2)
	for _, tag := range []string{g.img.V1, g.img.V2} {
		imgs, err := m.ImagesLabelled(ctx, imagebuild.TagLabel+"="+tag)
		if err != nil {
			return err
		}
		ours = ours || slices.ContainsFunc(imgs, func(i docker.Image) bool { return i.ID == ref })
	}
	if !ours {
		g.t.Errorf("remove image %s: not one of the run's (%s, %s)", ref, g.img.V1, g.img.V2)
		return errors.New("refused by the test")
	}
	return m.RemoveImage(ctx, ref)
}

// guard passes every call to the engine, and fails the test on any create
// outside the prefix or any change to a container it did not list under it.
type guard struct {
	docker.Client
	prefix  string
	img     Images // the run's tags: the only images it may remove
	t       *testing.T
	ours    sync.Map     // container ID -> true, for containers listed under the prefix
	created atomic.Int64 // steps of different slots run at once
}

func (g *guard) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	cs, err := g.Client.List(ctx, prefix)
	for _, c := range cs {
		if prefix == g.prefix && c.Labels[docker.ManagedLabel(g.prefix)] == "true" {
			g.ours.Store(c.ID, true)
		}
	}
	return cs, err
}

func (g *guard) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	if !strings.HasPrefix(s.Name, g.prefix+"-") || s.Labels[docker.ManagedLabel(g.prefix)] != "true" {
		g.t.Errorf("create %s outside the prefix %s", s.Name, g.prefix)
	}
	id, err := g.Client.Create(ctx, s)
	if err == nil {
		g.created.Add(1)
		g.ours.Store(id, true)
	}
	return id, err
}

func (g *guard) check(verb, id string) {
	if _, ok := g.ours.Load(id); !ok {
		g.t.Errorf("%s %s: not a container of the prefix %s", verb, id, g.prefix)
	}
}

func (g *guard) Stop(ctx context.Context, id string, grace time.Duration) error {
	g.check("stop", id)
	return g.Client.Stop(ctx, id, grace)
}

func (g *guard) Remove(ctx context.Context, id string) error {
	g.check("remove", id)
	return g.Client.Remove(ctx, id)
}

func (g *guard) Restart(ctx context.Context, id string, grace time.Duration) error {
	g.check("restart", id)
	return g.Client.Restart(ctx, id, grace)
}

func (g *guard) Kill(ctx context.Context, id string) error {
	g.check("kill", id)
	return g.Client.(*moby.Moby).Kill(ctx, id)
}

func (g *guard) Update(ctx context.Context, id string, l docker.Limits) error {
	g.check("update", id)
	return g.Client.Update(ctx, id, l)
}
