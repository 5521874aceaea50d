package docker_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
)

// swarmReadMethods are the Swarm methods that only look. Every Swarm
// method must be here or in SwarmMutating.
var swarmReadMethods = []string{"SwarmInfo", "Services", "Tasks", "Nodes"}

const guardPrefix = "shop"

// guardSpec is a managed service of prefix named name.
func guardSpec(prefix, name string) docker.ServiceSpec {
	return docker.ServiceSpec{
		Name:     name,
		Labels:   map[string]string{docker.ManagedLabel(prefix): "true"},
		Task:     docker.CreateSpec{Image: "web:v1", Labels: map[string]string{docker.ManagedLabel(prefix): "true"}},
		Replicas: 1,
	}
}

// guardedSwarm is a swarm with one managed service of guardPrefix, one of
// another prefix and one with no label at all.
func guardedSwarm(t *testing.T) (s *fake.Swarm, ours, theirs, bare string) {
	t.Helper()
	s = fake.NewSwarm(fake.SwarmOptions{Clock: fake.NewManualClock(fakeEpoch), Seed: 1})
	s.AddImage("web:v1", fake.Behaviour{})
	mk := func(spec docker.ServiceSpec) string {
		id, err := s.CreateService(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ours = mk(guardSpec(guardPrefix, "shop_web"))
	theirs = mk(guardSpec("other", "other_web"))
	bareSpec := guardSpec(guardPrefix, "postgres")
	bareSpec.Labels = nil
	bare = mk(bareSpec)
	s.ResetCalls()
	return s, ours, theirs, bare
}

func TestReadOnlySwarmRefusesEveryMutatingMethod(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		method string
		call   func(s docker.Swarm, id string) error
	}{
		{"CreateService", func(s docker.Swarm, _ string) error {
			_, err := s.CreateService(ctx, guardSpec(guardPrefix, "shop_new"))
			return err
		}},
		{"UpdateService", func(s docker.Swarm, id string) error {
			return s.UpdateService(ctx, id, 1, guardSpec(guardPrefix, "shop_web"))
		}},
		{"RemoveService", func(s docker.Swarm, id string) error { return s.RemoveService(ctx, id) }},
	}
	var covered []string
	for _, tt := range tests {
		covered = append(covered, tt.method)
		t.Run(tt.method, func(t *testing.T) {
			s, ours, _, _ := guardedSwarm(t)
			before, _ := s.Services(ctx, guardPrefix)
			s.ResetCalls()
			err := tt.call(docker.ReadOnlySwarm(s), ours)
			if !errors.Is(err, docker.ErrReadOnly) {
				t.Fatalf("%s through ReadOnlySwarm: err = %v, want ErrReadOnly", tt.method, err)
			}
			if calls := s.Calls(); len(calls) != 0 {
				t.Fatalf("%s reached the swarm: %v", tt.method, calls)
			}
			if after, _ := s.Services(ctx, guardPrefix); !reflect.DeepEqual(before, after) {
				t.Errorf("%s changed the services:\nbefore %+v\nafter  %+v", tt.method, before, after)
			}
		})
	}
	if !slices.Equal(covered, docker.SwarmMutating) {
		t.Errorf("table covers %v, SwarmMutating is %v", covered, docker.SwarmMutating)
	}
}

func TestReadOnlySwarmPassesReadsThrough(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		call     func(s docker.Swarm) (any, error)
		wantCall string
	}{
		{"SwarmInfo", func(s docker.Swarm) (any, error) { return s.SwarmInfo(ctx) }, "swarminfo"},
		{"Services", func(s docker.Swarm) (any, error) { return s.Services(ctx, guardPrefix) }, "services:shop"},
		{"Tasks", func(s docker.Swarm) (any, error) { return s.Tasks(ctx, guardPrefix) }, "tasks:shop"},
		{"Nodes", func(s docker.Swarm) (any, error) { return s.Nodes(ctx) }, "nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, _, _ := guardedSwarm(t)
			got, err := tt.call(docker.ReadOnlySwarm(s))
			if err != nil {
				t.Fatalf("%s through ReadOnlySwarm: %v", tt.name, err)
			}
			if calls := s.Calls(); !slices.Equal(calls, []string{tt.wantCall}) {
				t.Errorf("inner calls = %v, want %q", calls, tt.wantCall)
			}
			if want, _ := tt.call(s); !reflect.DeepEqual(got, want) || reflect.ValueOf(got).IsZero() {
				t.Errorf("%s through ReadOnlySwarm = %+v, direct = %+v", tt.name, got, want)
			}
		})
	}
}

// TestReadOnlySwarmCoversTheWholeInterface makes a new Swarm method
// impossible to forget, as TestReadOnlyCoversTheWholeInterface does a
// Client's.
func TestReadOnlySwarmCoversTheWholeInterface(t *testing.T) {
	checkReadOnlyCovers(t, reflect.TypeFor[docker.Swarm](), docker.SwarmMutating, swarmReadMethods, func(t *testing.T) (any, func() []string) {
		s, _, _, _ := guardedSwarm(t)
		return docker.ReadOnlySwarm(s), s.Calls
	})
}

// TestScopedSwarmRefusesForeignServices: the second lock on scope. An
// update or a remove of a service the manager does not list among the
// prefix's managed services is refused before it reaches the swarm; our
// own pass.
func TestScopedSwarmRefusesForeignServices(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		method string
		call   func(s docker.Swarm, id string, version uint64) error
	}{
		{"UpdateService", func(s docker.Swarm, id string, version uint64) error {
			return s.UpdateService(ctx, id, version, guardSpec(guardPrefix, "shop_web"))
		}},
		{"RemoveService", func(s docker.Swarm, id string, _ uint64) error { return s.RemoveService(ctx, id) }},
	}
	var covered []string
	for _, tt := range calls {
		covered = append(covered, tt.method)
		t.Run(tt.method, func(t *testing.T) {
			s, ours, theirs, bare := guardedSwarm(t)
			c := docker.ScopedSwarm(s, guardPrefix)
			for _, id := range []string{theirs, bare, "no-such-service"} {
				if err := tt.call(c, id, 1); !errors.Is(err, docker.ErrForeign) {
					t.Fatalf("%s of %s: err = %v, want ErrForeign", tt.method, id, err)
				}
			}
			if m := s.Mutations(); len(m) != 0 {
				t.Fatalf("refused calls reached the swarm: %v", m)
			}
			svcs, _ := s.Services(ctx, guardPrefix)
			if err := tt.call(c, ours, svcs[0].Version); err != nil {
				t.Fatalf("%s of our own: %v", tt.method, err)
			}
			if m := s.Mutations(); len(m) != 1 {
				t.Fatalf("our own %s: swarm mutations %v, want one", tt.method, m)
			}
		})
	}
	covered = append(covered, "CreateService") // TestScopedSwarmWritesNeedTheManagedLabel
	if !slices.Equal(slices.Sorted(slices.Values(covered)), slices.Sorted(slices.Values(docker.SwarmMutating))) {
		t.Errorf("covered %v, SwarmMutating is %v", covered, docker.SwarmMutating)
	}
}

// A write never makes a service outside the scope: a spec without the
// prefix's managed label is refused, for a new service and for our own.
func TestScopedSwarmWritesNeedTheManagedLabel(t *testing.T) {
	ctx := context.Background()
	s, ours, _, _ := guardedSwarm(t)
	c := docker.ScopedSwarm(s, guardPrefix)
	for _, labels := range []map[string]string{nil, {docker.ManagedLabel("other"): "true"}, {docker.ManagedLabel(guardPrefix): "false"}} {
		spec := guardSpec(guardPrefix, "shop_new")
		spec.Labels = labels
		if _, err := c.CreateService(ctx, spec); !errors.Is(err, docker.ErrForeign) {
			t.Fatalf("create with labels %v: err = %v, want ErrForeign", labels, err)
		}
		spec.Name = "shop_web"
		if err := c.UpdateService(ctx, ours, 1, spec); !errors.Is(err, docker.ErrForeign) {
			t.Fatalf("update of our own to labels %v: err = %v, want ErrForeign", labels, err)
		}
	}
	if m := s.Mutations(); len(m) != 0 {
		t.Fatalf("refused writes reached the swarm: %v", m)
	}
	if _, err := c.CreateService(ctx, guardSpec(guardPrefix, "shop_new")); err != nil {
		t.Fatalf("create of our own: %v", err)
	}
}

// What the manager listed under the prefix is not asked about again; a
// service it did not list still is, and is refused.
func TestScopedSwarmTrustsItsOwnList(t *testing.T) {
	ctx := context.Background()
	s, ours, theirs, _ := guardedSwarm(t)
	c := docker.ScopedSwarm(s, guardPrefix)
	svcs, err := c.Services(ctx, guardPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Services(ctx, "other"); err != nil { // another prefix's list vouches for nothing here
		t.Fatal(err)
	}
	s.ResetCalls()
	if err := c.UpdateService(ctx, ours, svcs[0].Version, guardSpec(guardPrefix, "shop_web")); err != nil {
		t.Fatal(err)
	}
	if calls := s.Calls(); !slices.Equal(calls, []string{"updateservice:shop_web"}) {
		t.Fatalf("calls %q, want the update alone", calls)
	}
	if err := c.RemoveService(ctx, theirs); !errors.Is(err, docker.ErrForeign) {
		t.Fatalf("remove of another prefix's service: %v, want ErrForeign", err)
	}
}

// lyingServices lists every service, managed or not, as a broken manager
// or adapter might.
type lyingServices struct{ *fake.Swarm }

func (l lyingServices) Services(ctx context.Context, _ string) ([]docker.Service, error) {
	var out []docker.Service
	for _, p := range []string{guardPrefix, "other"} {
		svcs, err := l.Swarm.Services(ctx, p)
		if err != nil {
			return nil, err
		}
		out = append(out, svcs...)
	}
	return out, nil
}

// A list vouches only for what carries the prefix's managed label,
// whatever the manager put in it.
func TestScopedSwarmListVouchesOnlyForManaged(t *testing.T) {
	ctx := context.Background()
	s, _, theirs, _ := guardedSwarm(t)
	c := docker.ScopedSwarm(lyingServices{s}, guardPrefix)
	if _, err := c.Services(ctx, guardPrefix); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveService(ctx, theirs); !errors.Is(err, docker.ErrForeign) {
		t.Fatalf("remove of a foreign service a list showed: %v, want ErrForeign", err)
	}
}
