package docker_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
)

// scopedFake is an engine with one managed container of prefix "rollcall",
// one of prefix "other", and one with no label at all.
func scopedFake(t *testing.T) (f *fake.Engine, ours, theirs, bare string) {
	t.Helper()
	f = fake.New(fake.Options{Clock: fake.NewManualClock(fakeEpoch), Seed: 1})
	f.AddImage("web:v1", "sha256:web1", fake.Behaviour{})
	ctx := context.Background()
	mk := func(name string, labels map[string]string) string {
		id, err := f.Create(ctx, docker.CreateSpec{Name: name, Image: "web:v1", Labels: labels})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ours = mk("rollcall-web-0-aaaaaaaa", map[string]string{docker.ManagedLabel("rollcall"): "true"})
	theirs = mk("other-web-0-bbbbbbbb", map[string]string{docker.ManagedLabel("other"): "true"})
	bare = mk("postgres", nil)
	f.ResetCalls()
	return f, ours, theirs, bare
}

// TestScopedRefusesForeignContainers: the second lock on scope. Every
// mutating call on a container without this prefix's managed label is
// refused before it reaches the engine; our own pass.
func TestScopedRefusesForeignContainers(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		method string
		call   func(c docker.Client, id string) error
	}{
		{"Stop", func(c docker.Client, id string) error { return c.Stop(ctx, id, time.Second) }},
		{"Remove", func(c docker.Client, id string) error { return c.Remove(ctx, id) }},
		{"Restart", func(c docker.Client, id string) error { return c.Restart(ctx, id, time.Second) }},
		{"Update", func(c docker.Client, id string) error { return c.Update(ctx, id, docker.Limits{Memory: 1 << 20}) }},
		{"Exec", func(c docker.Client, id string) error {
			_, _, err := c.Exec(ctx, id, []string{"/app", "-drain"})
			return err
		}},
	}
	var covered []string
	for _, tt := range calls {
		covered = append(covered, tt.method)
		t.Run(tt.method, func(t *testing.T) {
			f, ours, theirs, bare := scopedFake(t)
			c := docker.Scoped(f, "rollcall")
			for _, id := range []string{theirs, bare} {
				if err := tt.call(c, id); !errors.Is(err, docker.ErrForeign) {
					t.Fatalf("%s on a foreign container: err = %v, want ErrForeign", tt.method, err)
				}
			}
			if m := f.Mutations(); len(m) != 0 {
				t.Fatalf("refused calls reached the engine: %v", m)
			}
			if tt.method == "Remove" {
				if err := f.Stop(ctx, ours, time.Second); err != nil {
					t.Fatal(err)
				}
				f.ResetCalls()
			}
			if err := tt.call(c, ours); err != nil {
				t.Fatalf("%s on our own container: %v", tt.method, err)
			}
			if m := f.Mutations(); len(m) != 1 {
				t.Fatalf("our own %s: engine mutations %v, want one", tt.method, m)
			}
		})
	}
	covered = append(covered, "Create", "Pull") // Pull acts on no container: TestScopedPassesPullThrough
	for _, m := range docker.Mutating {
		if !slices.Contains(covered, m) {
			t.Errorf("mutating method %s is not covered by this test", m)
		}
	}
}

func TestScopedCreateNeedsTheManagedLabel(t *testing.T) {
	ctx := context.Background()
	f, _, _, _ := scopedFake(t)
	c := docker.Scoped(f, "rollcall")
	for _, labels := range []map[string]string{nil, {docker.ManagedLabel("other"): "true"}, {docker.ManagedLabel("rollcall"): "false"}} {
		if _, err := c.Create(ctx, docker.CreateSpec{Name: "rollcall-x-0-cccccccc", Image: "web:v1", Labels: labels}); !errors.Is(err, docker.ErrForeign) {
			t.Fatalf("create with labels %v: err = %v, want ErrForeign", labels, err)
		}
	}
	if _, err := c.Create(ctx, docker.CreateSpec{Name: "rollcall-x-0-cccccccc", Image: "web:v1",
		Labels: map[string]string{docker.ManagedLabel("rollcall"): "true"}}); err != nil {
		t.Fatalf("create of our own: %v", err)
	}
}

// What the engine's list vouched for is not inspected again (a restart must
// not wait on an inspect); what it did not list still is, and is refused.
func TestScopedTrustsItsOwnList(t *testing.T) {
	ctx := context.Background()
	f, ours, theirs, _ := scopedFake(t)
	c := docker.Scoped(f, "rollcall")
	if _, err := c.List(ctx, "rollcall"); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	if err := c.Restart(ctx, ours, time.Second); err != nil {
		t.Fatal(err)
	}
	if calls := f.Calls(); !slices.Equal(calls, []string{"restart:rollcall-web-0-aaaaaaaa"}) {
		t.Fatalf("calls %q, want the restart alone", calls)
	}
	if _, err := c.List(ctx, "other"); err != nil { // another prefix's list vouches for nothing here
		t.Fatal(err)
	}
	f.ResetCalls()
	if err := c.Restart(ctx, ours, time.Second); err != nil { // nor forgets what ours vouched for
		t.Fatal(err)
	}
	if calls := f.Calls(); !slices.Equal(calls, []string{"restart:rollcall-web-0-aaaaaaaa"}) {
		t.Fatalf("after another prefix's list: calls %q, want the restart alone", calls)
	}
	if err := c.Restart(ctx, theirs, time.Second); !errors.Is(err, docker.ErrForeign) {
		t.Fatalf("restart of another prefix's container: %v, want ErrForeign", err)
	}
}

// lyingList lists every container, managed or not, as a broken engine or
// adapter might.
type lyingList struct{ *fake.Engine }

func (l lyingList) List(ctx context.Context, _ string) ([]docker.Container, error) {
	var out []docker.Container
	for _, p := range []string{"rollcall", "other"} {
		cs, err := l.Engine.List(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, cs...)
	}
	return out, nil
}

// A list vouches only for what carries the prefix's managed label, whatever
// the engine put in it.
func TestScopedListVouchesOnlyForManaged(t *testing.T) {
	ctx := context.Background()
	f, _, theirs, _ := scopedFake(t)
	c := docker.Scoped(lyingList{f}, "rollcall")
	if _, err := c.List(ctx, "rollcall"); err != nil {
		t.Fatal(err)
	}
	if err := c.Restart(ctx, theirs, time.Second); !errors.Is(err, docker.ErrForeign) {
		t.Fatalf("restart of a foreign container a list showed: %v, want ErrForeign", err)
	}
}

var fakeEpoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// A pull acts on no container: the scope has nothing to check, and it
// reaches the engine.
func TestScopedPassesPullThrough(t *testing.T) {
	ctx := context.Background()
	f, _, _, _ := scopedFake(t)
	f.Serve("web:v2", "sha256:web2", fake.Behaviour{}, 1)
	img, err := docker.Scoped(f, "rollcall").Pull(ctx, "web:v2", nil)
	if err != nil || img.ID != "sha256:web2" {
		t.Fatalf("pull through Scoped = %+v, %v", img, err)
	}
	if m := f.Mutations(); !slices.Equal(m, []string{"pull:web:v2"}) {
		t.Fatalf("engine mutations %v, want the pull alone", m)
	}
}
