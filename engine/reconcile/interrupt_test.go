package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
)

// engineGoesOn is an engine whose first call of method, once made, goes on
// at the engine whatever becomes of the caller's context, as the real
// engine's calls do (issue 18 row 7): cancelling the context makes the call
// return its error at once, while its effect lands only when the test
// releases it (the stop's grace ends, the create goes through). landed closes
// once that effect is in place.
type engineGoesOn struct {
	docker.Client
	fake    *fake.Engine
	method  string // "stop" or "create"
	entered chan struct{}
	release chan struct{}
	landed  chan struct{}
	once    sync.Once
}

func newEngineGoesOn(f *fake.Engine, method string) *engineGoesOn {
	return &engineGoesOn{Client: f, fake: f, method: method,
		entered: make(chan struct{}), release: make(chan struct{}), landed: make(chan struct{})}
}

// first reports whether this is the gated call of method, once.
func (g *engineGoesOn) first(method string) bool {
	hit := false
	if method == g.method {
		g.once.Do(func() { hit = true })
	}
	return hit
}

func (g *engineGoesOn) Stop(ctx context.Context, id string, grace time.Duration) error {
	if !g.first("stop") {
		return g.Client.Stop(ctx, id, grace)
	}
	close(g.entered)
	done := make(chan error, 1)
	go func() {
		<-g.release // the container ignores its stop signal: the whole grace passes
		done <- g.fake.Stop(context.Background(), id, grace)
		close(g.landed)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("stop %s: %w", id, ctx.Err())
	}
}

func (g *engineGoesOn) Create(ctx context.Context, spec docker.CreateSpec) (string, error) {
	if !g.first("create") {
		return g.Client.Create(ctx, spec)
	}
	close(g.entered)
	defer close(g.landed)
	select {
	case <-g.release:
		return g.fake.Create(context.Background(), spec)
	case <-ctx.Done():
		// The engine goes on with the create; the adapter, cut short,
		// never asks for the start.
		<-g.release
		if _, err := g.fake.AddContainer(docker.Container{Name: spec.Name, Image: spec.Image, Labels: spec.Labels,
			State: docker.StateCreated}); err != nil {
			panic(err)
		}
		return "", fmt.Errorf("create %s: %w", spec.Name, ctx.Err())
	}
}

// interruptRig is a fake engine with one running, healthy container, and a
// stop step for it and a start step for slot 1, neither with a drain.
func interruptRig(t *testing.T) (f *fake.Engine, stop, start Step) {
	t.Helper()
	f, _, roll, _ := drainRig(t, fake.Behaviour{})
	stop = roll
	stop.Action, stop.PreStop, stop.Drain = ActStop, nil, 0
	create := &docker.CreateSpec{Name: "rollcall-web-1-73f3aaaa", Image: "web:v1",
		Labels: map[string]string{docker.ManagedLabel(pfx): "true"}}
	start = Step{Action: ActStart, Workload: "web", Slot: 1, Container: create.Name, Create: create}
	return f, stop, start
}

// leftBehind lists the containers neither running nor gone: an Exited one,
// or one Created and never started.
func leftBehind(t *testing.T, f *fake.Engine) []string {
	t.Helper()
	cs, err := f.List(context.Background(), pfx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		if c.State != docker.StateRunning {
			out = append(out, c.Name+" "+string(c.State))
		}
	}
	return out
}

// TestRunCarriesAnEngineCallToItsEndOnCancel (issue 18 row 7): once a step
// has reached the engine, the end of its context (a second signal) does not
// cut it short, since the engine goes on anyway: a stop cut short leaves
// the container Exited, the remove never asked; a create cut short leaves
// it Created, the start never asked. The step ends as it would have, and
// says so.
func TestRunCarriesAnEngineCallToItsEndOnCancel(t *testing.T) {
	for _, method := range []string{"stop", "create"} {
		t.Run(method, func(t *testing.T) {
			f, stop, start := interruptRig(t)
			s := map[string]Step{"stop": stop, "create": start}[method]
			g := newEngineGoesOn(f, method)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := make(chan error, 1)
			go func() { res <- RunWith(ctx, g, s, RunOptions{}) }()
			<-g.entered
			cancel() // mid-call: the engine has it
			close(g.release)
			err := <-res
			<-g.landed
			if bad := leftBehind(t, f); len(bad) > 0 {
				t.Fatalf("left behind %q (step error: %v)", bad, err)
			}
			if err != nil {
				t.Errorf("the step carried to its end returned %v, want nil", err)
			}
			cs, _ := f.List(context.Background(), pfx)
			want := map[string]int{"stop": 0, "create": 2}[method]
			if len(cs) != want {
				t.Errorf("%d containers, want %d: %+v", len(cs), want, cs)
			}
		})
	}
}

// TestRunDoesNothingOnceItsContextEnded: a step whose context ended before
// it reached the engine makes no call that changes anything, and says it was
// cut short: the container it would have stopped still runs.
func TestRunDoesNothingOnceItsContextEnded(t *testing.T) {
	for _, method := range []string{"stop", "create"} {
		t.Run(method, func(t *testing.T) {
			f, stop, start := interruptRig(t)
			s := map[string]Step{"stop": stop, "create": start}[method]
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := RunWith(ctx, f, s, RunOptions{})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want canceled", err)
			}
			if m := slices.DeleteFunc(f.Mutations(), func(c string) bool { return strings.HasSuffix(c, "!fail") }); len(m) > 0 {
				t.Errorf("a step cut short before it began changed the engine: %q", m)
			}
			if bad := leftBehind(t, f); len(bad) > 0 {
				t.Errorf("left behind %q", bad)
			}
		})
	}
}
