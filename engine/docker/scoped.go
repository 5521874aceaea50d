package docker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// ErrForeign is a mutating call on a container that does not carry the
// managed label of the session's prefix: refused without reaching the engine.
var ErrForeign = errors.New("refused: not a managed container of this prefix")

// Scoped wraps c so that every mutating call acts only on containers that
// carry "<prefix>.managed=true", as the engine says at the moment of the
// call: the container is inspected first, and anything else is refused with
// an error wrapping ErrForeign. Create is refused unless the new container
// carries that label. Reads pass through.
//
// It is the engine half of rollcall's scope promise, as ReadOnly is of watch
// mode: reconcile.Diff plans only for managed containers of the prefix, and
// this wrapper makes a plan that names anything else impossible to carry out.
//
// A container's labels never change, so what the engine said of an ID once
// holds for good: an ID the engine listed under the prefix's managed label
// (through this wrapper's List) or that a check found managed is not
// inspected again. That keeps the check off the path of a restart, where an
// inspect of a container that just died can take the engine 50ms.
func Scoped(c Client, prefix string) Client {
	return &scoped{inner: c, prefix: prefix, managed: map[string]bool{}}
}

type scoped struct {
	inner  Client
	prefix string

	mu      sync.Mutex
	managed map[string]bool // IDs the engine vouched for under the prefix
}

func (s *scoped) vouched(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.managed[id]
}

func (s *scoped) vouch(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.managed[id] = true
}

// check refuses id unless the engine says it is managed under the prefix. A
// container that is gone passes: the call itself then says not found.
func (s *scoped) check(ctx context.Context, verb, id string) error {
	if s.vouched(id) {
		return nil
	}
	d, err := s.inner.Inspect(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: check scope: %w", verb, ShortID(id), err)
	}
	if d.Labels[ManagedLabel(s.prefix)] != "true" {
		return fmt.Errorf("%s %s (%s): %w %q", verb, ShortID(id), d.Name, ErrForeign, s.prefix)
	}
	s.vouch(d.ID)
	return nil
}

func (s *scoped) Info(ctx context.Context) (EngineInfo, error) { return s.inner.Info(ctx) }

// List passes through, and remembers the containers it shows labelled
// managed under this wrapper's prefix (the engine filtered them by that
// label): those of the latest list only, so the set never outgrows the
// host.
func (s *scoped) List(ctx context.Context, prefix string) ([]Container, error) {
	cs, err := s.inner.List(ctx, prefix)
	if err != nil || prefix != s.prefix {
		return cs, err
	}
	listed := make(map[string]bool, len(cs))
	for _, c := range cs {
		if c.Labels[ManagedLabel(s.prefix)] == "true" {
			listed[c.ID] = true
		}
	}
	s.mu.Lock()
	s.managed = listed
	s.mu.Unlock()
	return cs, err
}

func (s *scoped) Inspect(ctx context.Context, id string) (ContainerDetail, error) {
	return s.inner.Inspect(ctx, id)
}

func (s *scoped) ImageInspect(ctx context.Context, ref string) (Image, error) {
	return s.inner.ImageInspect(ctx, ref)
}

func (s *scoped) DistributionInspect(ctx context.Context, ref string) (string, error) {
	return s.inner.DistributionInspect(ctx, ref)
}

// Pull passes through: it acts on no container.
func (s *scoped) Pull(ctx context.Context, ref string, progress func(PullProgress)) (Image, error) {
	return s.inner.Pull(ctx, ref, progress)
}

func (s *scoped) Events(ctx context.Context, prefix string, since time.Time) (<-chan Event, <-chan error) {
	return s.inner.Events(ctx, prefix, since)
}

func (s *scoped) Logs(ctx context.Context, id string, opts LogOptions) (<-chan LogLine, error) {
	return s.inner.Logs(ctx, id, opts)
}

func (s *scoped) Create(ctx context.Context, spec CreateSpec) (string, error) {
	if spec.Labels[ManagedLabel(s.prefix)] != "true" {
		return "", fmt.Errorf("create %s: %w %q", spec.Name, ErrForeign, s.prefix)
	}
	return s.inner.Create(ctx, spec)
}

func (s *scoped) Stop(ctx context.Context, id string, grace time.Duration) error {
	if err := s.check(ctx, "stop", id); err != nil {
		return err
	}
	return s.inner.Stop(ctx, id, grace)
}

func (s *scoped) Remove(ctx context.Context, id string) error {
	if err := s.check(ctx, "remove", id); err != nil {
		return err
	}
	return s.inner.Remove(ctx, id)
}

func (s *scoped) Restart(ctx context.Context, id string, grace time.Duration) error {
	if err := s.check(ctx, "restart", id); err != nil {
		return err
	}
	return s.inner.Restart(ctx, id, grace)
}

func (s *scoped) Update(ctx context.Context, id string, limits Limits) error {
	if err := s.check(ctx, "update", id); err != nil {
		return err
	}
	return s.inner.Update(ctx, id, limits)
}

func (s *scoped) Exec(ctx context.Context, id string, cmd []string) (int, string, error) {
	if err := s.check(ctx, "exec", id); err != nil {
		return 0, "", err
	}
	return s.inner.Exec(ctx, id, cmd)
}

// ShortID is the 12-character form of a container ID, as docker ps shows it.
// Names and short IDs pass through unchanged.
func ShortID(id string) string {
	if len(id) == 64 {
		return id[:12]
	}
	return id
}
