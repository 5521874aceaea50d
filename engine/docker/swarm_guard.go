package docker

import (
	"context"
	"fmt"
	"sync"
)

// ReadOnlySwarm wraps s for watch mode, as ReadOnly wraps a Client: reads
// pass through, and every method in SwarmMutating fails with an error
// wrapping ErrReadOnly without reaching s.
func ReadOnlySwarm(s Swarm) Swarm { return readOnlySwarm{inner: s} }

type readOnlySwarm struct{ inner Swarm }

func (r readOnlySwarm) SwarmInfo(ctx context.Context) (SwarmInfo, error) {
	return r.inner.SwarmInfo(ctx)
}

func (r readOnlySwarm) Services(ctx context.Context, prefix string) ([]Service, error) {
	return r.inner.Services(ctx, prefix)
}

func (r readOnlySwarm) Tasks(ctx context.Context, prefix string) ([]Task, error) {
	return r.inner.Tasks(ctx, prefix)
}

func (r readOnlySwarm) Nodes(ctx context.Context) ([]Node, error) { return r.inner.Nodes(ctx) }

func (readOnlySwarm) CreateService(_ context.Context, spec ServiceSpec) (string, error) {
	return "", fmt.Errorf("create service %s: %w", spec.Name, ErrReadOnly)
}

func (readOnlySwarm) UpdateService(_ context.Context, id string, _ uint64, _ ServiceSpec) error {
	return fmt.Errorf("update service %s: %w", id, ErrReadOnly)
}

func (readOnlySwarm) RemoveService(_ context.Context, id string) error {
	return fmt.Errorf("remove service %s: %w", id, ErrReadOnly)
}

// ScopedSwarm wraps s so that every write acts only on services carrying
// "<prefix>.managed=true", as the manager says at the moment of the call,
// as Scoped does for a Client: UpdateService and RemoveService of a service
// the manager does not list among the prefix's managed services are refused
// with an error wrapping ErrForeign (a service gone since passes the same
// way: the wrapper cannot tell it from another's), and so are CreateService
// and UpdateService of a spec without that label: a write never takes a
// service out of the scope, nor makes one outside it. Reads pass through.
//
// A service ID is never reused, and rollcall's every write keeps the
// managed label, so an ID the manager vouched for (in this wrapper's latest
// Services of the prefix, or at a check) is not asked about again.
func ScopedSwarm(s Swarm, prefix string) Swarm {
	return &scopedSwarm{inner: s, prefix: prefix, managed: map[string]bool{}}
}

type scopedSwarm struct {
	inner  Swarm
	prefix string

	mu      sync.Mutex
	managed map[string]bool // service IDs the manager vouched for under the prefix
}

func (s *scopedSwarm) vouched(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.managed[id]
}

// check refuses id unless the manager lists it among the prefix's managed
// services now.
func (s *scopedSwarm) check(ctx context.Context, verb, id string) error {
	if s.vouched(id) {
		return nil
	}
	if _, err := s.Services(ctx, s.prefix); err != nil {
		return fmt.Errorf("%s service %s: check scope: %w", verb, id, err)
	}
	if !s.vouched(id) {
		return fmt.Errorf("%s service %s: %w %q", verb, id, ErrForeign, s.prefix)
	}
	return nil
}

func (s *scopedSwarm) SwarmInfo(ctx context.Context) (SwarmInfo, error) {
	return s.inner.SwarmInfo(ctx)
}

// Services passes through, and remembers the services it shows labelled
// managed under this wrapper's prefix: those of the latest list only.
func (s *scopedSwarm) Services(ctx context.Context, prefix string) ([]Service, error) {
	svcs, err := s.inner.Services(ctx, prefix)
	if err != nil || prefix != s.prefix {
		return svcs, err
	}
	listed := make(map[string]bool, len(svcs))
	for _, v := range svcs {
		if v.Spec.Labels[ManagedLabel(s.prefix)] == "true" {
			listed[v.ID] = true
		}
	}
	s.mu.Lock()
	s.managed = listed
	s.mu.Unlock()
	return svcs, nil
}

func (s *scopedSwarm) Tasks(ctx context.Context, prefix string) ([]Task, error) {
	return s.inner.Tasks(ctx, prefix)
}

func (s *scopedSwarm) Nodes(ctx context.Context) ([]Node, error) { return s.inner.Nodes(ctx) }

func (s *scopedSwarm) CreateService(ctx context.Context, spec ServiceSpec) (string, error) {
	if spec.Labels[ManagedLabel(s.prefix)] != "true" {
		return "", fmt.Errorf("create service %s: %w %q", spec.Name, ErrForeign, s.prefix)
	}
	id, err := s.inner.CreateService(ctx, spec)
	if err == nil {
		s.mu.Lock()
		s.managed[id] = true
		s.mu.Unlock()
	}
	return id, err
}

func (s *scopedSwarm) UpdateService(ctx context.Context, id string, version uint64, spec ServiceSpec) error {
	if spec.Labels[ManagedLabel(s.prefix)] != "true" {
		return fmt.Errorf("update service %s (%s): the spec lacks the managed label: %w %q", id, spec.Name, ErrForeign, s.prefix)
	}
	if err := s.check(ctx, "update", id); err != nil {
		return err
	}
	return s.inner.UpdateService(ctx, id, version, spec)
}

func (s *scopedSwarm) RemoveService(ctx context.Context, id string) error {
	if err := s.check(ctx, "remove", id); err != nil {
		return err
	}
	return s.inner.RemoveService(ctx, id)
}
