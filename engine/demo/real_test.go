package demo

import (
	"context"
	"errors"
	"io"
	"maps"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/session"
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
	// Stage builds the images only on the bare adapter, and the guard
	// wraps it: build them here, as Stage would, from a compiled demoapp.
	if err := buildImages(ctx, dockertest.ImageBuilder(t), dockertest.DemoappBinary(t), img, io.Discard); err != nil {
		t.Fatal(err)
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
	g := &guard{Client: m, prefix: prefix, t: t}
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

	n, err := Clean(ctx, g, prefix, dir)
	if err != nil || n != 6 {
		t.Fatalf("clean removed %d, err %v; want 6", n, err)
	}
	if cs, _ := m.List(ctx, prefix); len(cs) != 0 {
		t.Fatalf("clean left %d containers", len(cs))
	}
}

// guard passes every call to the engine, and fails the test on any create
// outside the prefix or any change to a container it did not list under it.
type guard struct {
	docker.Client
	prefix  string
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
