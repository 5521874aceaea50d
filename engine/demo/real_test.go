package demo

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// TestDemoOnRealEngine: on the real engine the demo creates containers only
// under its own prefix, in the out-of-date state the console opens on, and
// clean leaves nothing behind. It runs under a per-run prefix, so a demo an
// operator has running on the same host is not disturbed.
func TestDemoOnRealEngine(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	m, err := docker.NewMoby(ctx, "")
	if err != nil {
		if os.Getenv("ROLLCALL_REQUIRE_DOCKER") == "1" {
			t.Fatalf("no Docker engine, and ROLLCALL_REQUIRE_DOCKER=1: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
	defer m.Close()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "rcdemo" + hex.EncodeToString(b)
	t.Cleanup(func() {
		out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label="+prefix+".managed=true").Output()
		if ids := strings.Fields(string(out)); len(ids) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, ids...)...).Run()
		}
	})
	g := &guard{Client: m, prefix: prefix, t: t}
	dir := t.TempDir()
	if _, err := stage(ctx, g, m, prefix, dir, io.Discard); err != nil {
		t.Fatal(err)
	}
	cs, err := m.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if g.created != 6 || len(cs) != 6 {
		t.Fatalf("created %d containers, listed %d under the prefix; want 3 web + 2 worker + 1 old-api", g.created, len(cs))
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

	n, err := clean(ctx, g, prefix, dir)
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
	ours    sync.Map // container ID -> true, for containers listed under the prefix
	created int
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
		g.created++
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
	return g.Client.(*docker.Moby).Kill(ctx, id)
}

func (g *guard) Update(ctx context.Context, id string, l docker.Limits) error {
	g.check("update", id)
	return g.Client.Update(ctx, id, l)
}
