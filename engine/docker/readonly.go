package docker

import (
	"context"
	"fmt"
	"time"
)

// ReadOnly wraps c for watch mode: reads pass through, and every method in
// Mutating fails with an error wrapping ErrReadOnly without reaching c. It
// is the engine half of read-only mode; the console's disabled keys are the
// other half.
func ReadOnly(c Client) Client { return readOnly{inner: c} }

type readOnly struct{ inner Client }

func (r readOnly) Info(ctx context.Context) (EngineInfo, error) { return r.inner.Info(ctx) }

func (r readOnly) List(ctx context.Context, prefix string) ([]Container, error) {
	return r.inner.List(ctx, prefix)
}

func (r readOnly) Inspect(ctx context.Context, id string) (ContainerDetail, error) {
	return r.inner.Inspect(ctx, id)
}

func (r readOnly) ImageInspect(ctx context.Context, ref string) (Image, error) {
	return r.inner.ImageInspect(ctx, ref)
}

func (r readOnly) DistributionInspect(ctx context.Context, ref string) (string, error) {
	return r.inner.DistributionInspect(ctx, ref)
}

func (r readOnly) Events(ctx context.Context, prefix string, since time.Time) (<-chan Event, <-chan error) {
	return r.inner.Events(ctx, prefix, since)
}

func (r readOnly) Logs(ctx context.Context, id string, opts LogOptions) (<-chan LogLine, error) {
	return r.inner.Logs(ctx, id, opts)
}

func (readOnly) Create(_ context.Context, spec CreateSpec) (string, error) {
	return "", fmt.Errorf("create %s: %w", spec.Name, ErrReadOnly)
}

func (readOnly) Stop(_ context.Context, id string, _ time.Duration) error {
	return fmt.Errorf("stop %s: %w", id, ErrReadOnly)
}

func (readOnly) Remove(_ context.Context, id string) error {
	return fmt.Errorf("remove %s: %w", id, ErrReadOnly)
}

func (readOnly) Restart(_ context.Context, id string, _ time.Duration) error {
	return fmt.Errorf("restart %s: %w", id, ErrReadOnly)
}

func (readOnly) Update(_ context.Context, id string, _ Limits) error {
	return fmt.Errorf("update %s: %w", id, ErrReadOnly)
}

func (readOnly) Exec(_ context.Context, id string, _ []string) (int, string, error) {
	return 0, "", fmt.Errorf("exec %s: %w", id, ErrReadOnly)
}

func (readOnly) Pull(_ context.Context, ref string, _ func(PullProgress)) (Image, error) {
	return Image{}, fmt.Errorf("pull %s: %w", ref, ErrReadOnly)
}
