package docker_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
)

// readMethods are the Client methods that only look. Every Client method
// must be here or in Mutating.
var readMethods = []string{"Info", "List", "Inspect", "ImageInspect", "DistributionInspect", "Events", "Logs"}

// guardedFake is an engine with one managed running container, and the
// read-only wrapper around it.
func guardedFake(t *testing.T) (*fake.Engine, docker.Client, string) {
	t.Helper()
	f := fake.New(fake.Options{Clock: fake.NewManualClock(fakeEpoch), Seed: 1})
	f.AddImage("web:v1", "sha256:web1", fake.Behaviour{})
	id, err := f.Create(context.Background(), docker.CreateSpec{
		Name: "rollcall-web-0-aaaaaaaa", Image: "web:v1",
		Labels: map[string]string{docker.ManagedLabel("rollcall"): "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	return f, docker.ReadOnly(f), id
}

func TestReadOnlyRefusesEveryMutatingMethod(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		method string
		call   func(c docker.Client, id string) error
	}{
		{"Create", func(c docker.Client, _ string) error {
			_, err := c.Create(ctx, docker.CreateSpec{Name: "rollcall-web-1-bbbbbbbb", Image: "web:v1"})
			return err
		}},
		{"Stop", func(c docker.Client, id string) error { return c.Stop(ctx, id, time.Second) }},
		{"Remove", func(c docker.Client, id string) error { return c.Remove(ctx, id) }},
		{"Restart", func(c docker.Client, id string) error { return c.Restart(ctx, id, time.Second) }},
		{"Update", func(c docker.Client, id string) error { return c.Update(ctx, id, docker.Limits{Memory: 1 << 20}) }},
		{"Exec", func(c docker.Client, id string) error {
			_, _, err := c.Exec(ctx, id, []string{"/app", "-drain"})
			return err
		}},
		{"Pull", func(c docker.Client, _ string) error {
			_, err := c.Pull(ctx, "web:v2", nil)
			return err
		}},
	}
	var covered []string
	for _, tt := range tests {
		covered = append(covered, tt.method)
		t.Run(tt.method, func(t *testing.T) {
			f, ro, id := guardedFake(t)
			before, _ := f.Inspect(ctx, id)
			f.ResetCalls()

			err := tt.call(ro, id)
			if !errors.Is(err, docker.ErrReadOnly) {
				t.Fatalf("%s through ReadOnly: err = %v, want ErrReadOnly", tt.method, err)
			}
			if calls := f.Calls(); len(calls) != 0 {
				t.Fatalf("%s reached the inner client: %v", tt.method, calls)
			}
			after, _ := f.Inspect(ctx, id)
			if !reflect.DeepEqual(before, after) {
				t.Errorf("%s changed the container:\nbefore %+v\nafter  %+v", tt.method, before, after)
			}
		})
	}
	if !slices.Equal(covered, docker.Mutating) {
		t.Errorf("table covers %v, Mutating is %v", covered, docker.Mutating)
	}
}

func TestReadOnlyPassesReadsThrough(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		call     func(c docker.Client, id string) (any, error)
		wantCall string
	}{
		{"Info", func(c docker.Client, _ string) (any, error) { return c.Info(ctx) }, "info"},
		{"List", func(c docker.Client, _ string) (any, error) { return c.List(ctx, "rollcall") }, "list:rollcall"},
		{"Inspect", func(c docker.Client, id string) (any, error) { return c.Inspect(ctx, id) }, "inspect:rollcall-web-0-aaaaaaaa"},
		{"ImageInspect", func(c docker.Client, _ string) (any, error) { return c.ImageInspect(ctx, "web:v1") }, "imageinspect:web:v1"},
		{"Logs", func(c docker.Client, id string) (any, error) {
			ch, err := c.Logs(ctx, id, docker.LogOptions{})
			var lines []docker.LogLine
			for l := range ch {
				lines = append(lines, l)
			}
			return lines, err
		}, "logs:rollcall-web-0-aaaaaaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, ro, id := guardedFake(t)
			got, err := tt.call(ro, id)
			if err != nil {
				t.Fatalf("%s through ReadOnly: %v", tt.name, err)
			}
			want, _ := tt.call(f, id)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s through ReadOnly = %+v, direct = %+v", tt.name, got, want)
			}
			if calls := f.Calls(); len(calls) == 0 || calls[0] != tt.wantCall {
				t.Errorf("inner calls = %v, want first %q", calls, tt.wantCall)
			}
		})
	}

	t.Run("Events", func(t *testing.T) {
		f, ro, id := guardedFake(t)
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		events, _ := ro.Events(ctx, "rollcall", time.Time{})
		f.Tick()
		if err := f.Stop(ctx, id, 0); err != nil {
			t.Fatal(err)
		}
		if ev := <-events; ev.Action != "die" || ev.ContainerID != id {
			t.Errorf("first event through ReadOnly = %+v, want die of %s", ev, id)
		}
	})
}

// TestReadOnlyCoversTheWholeInterface makes a new Client method impossible
// to forget: each must be declared a read or be in Mutating, and calling
// every method through ReadOnly must refuse exactly the mutating ones.
func TestReadOnlyCoversTheWholeInterface(t *testing.T) {
	checkReadOnlyCovers(t, reflect.TypeFor[docker.Client](), docker.Mutating, readMethods, func(t *testing.T) (any, func() []string) {
		f, ro, _ := guardedFake(t)
		return ro, f.Calls
	})
}

// checkReadOnlyCovers checks a read-only wrapper of iface: each of its
// methods is in exactly one of mutating and reads, and each called (with
// zero arguments) through the wrapper that guarded makes anew refuses
// exactly the mutating ones with ErrReadOnly, without reaching the inner
// fake (whose calls guarded hands back), and reaches it for the reads.
func checkReadOnlyCovers(t *testing.T, iface reflect.Type, mutating, reads []string, guarded func(*testing.T) (any, func() []string)) {
	var names []string
	for i := range iface.NumMethod() {
		m := iface.Method(i)
		names = append(names, m.Name)
		if slices.Contains(mutating, m.Name) == slices.Contains(reads, m.Name) {
			t.Errorf("%s.%s must be in exactly one of the mutating and the read methods", iface.Name(), m.Name)
		}
	}
	for _, m := range append(slices.Clone(mutating), reads...) {
		if !slices.Contains(names, m) {
			t.Errorf("%s is listed but is not a %s method", m, iface.Name())
		}
	}

	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ro, calls := guarded(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			method := reflect.ValueOf(ro).MethodByName(name)
			args := make([]reflect.Value, method.Type().NumIn())
			for i := range args {
				args[i] = reflect.Zero(method.Type().In(i))
			}
			args[0] = reflect.ValueOf(ctx)
			out := method.Call(args)

			reached := slices.ContainsFunc(calls(), func(c string) bool {
				return strings.HasPrefix(c, strings.ToLower(name))
			})
			if slices.Contains(mutating, name) {
				err, _ := out[len(out)-1].Interface().(error)
				if !errors.Is(err, docker.ErrReadOnly) {
					t.Errorf("%s: err = %v, want ErrReadOnly", name, err)
				}
				if reached {
					t.Errorf("%s reached the inner fake: %v", name, calls())
				}
			} else if !reached {
				t.Errorf("read %s did not reach the inner fake: %v", name, calls())
			}
		})
	}
}
