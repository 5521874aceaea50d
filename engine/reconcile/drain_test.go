package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/spec"
)

func withPreStop(cmd ...string) func(*spec.Workload) {
	return func(w *spec.Workload) { w.PreStop = cmd }
}

func withDrain(d time.Duration) func(*spec.Workload) {
	return func(w *spec.Workload) { w.Update.Drain = d }
}

func TestCreateSpecKeepsPreStopInALabelAndTheWorkloadNameAsAlias(t *testing.T) {
	d := resolved(workload("web", 1, withPreStop("/demoapp", "-drain"), func(w *spec.Workload) {
		w.Networks = []string{"front", "bridge", "back"}
		w.Aliases = map[string][]string{"front": {"www"}}
	}))
	cs := CreateSpec(pfx, d.Workload("web"), 0)
	if got := cs.Labels[docker.PreStopLabel(pfx)]; got != `["/demoapp","-drain"]` {
		t.Errorf("pre-stop label = %q", got)
	}
	want := map[string][]string{"front": {"web", "www"}, "back": {"web"}}
	if len(cs.Aliases) != len(want) || !slices.Equal(cs.Aliases["front"], want["front"]) || !slices.Equal(cs.Aliases["back"], want["back"]) {
		t.Errorf("aliases = %v, want %v (none on the default bridge)", cs.Aliases, want)
	}

	plain := CreateSpec(pfx, resolved(workload("web", 1)).Workload("web"), 0)
	if _, ok := plain.Labels[docker.PreStopLabel(pfx)]; ok || plain.Aliases != nil {
		t.Errorf("no pre_stop, no networks: labels %v aliases %v", plain.Labels, plain.Aliases)
	}
}

// TestDiffDrainsWithTheCommandTheContainerWasCreatedWith: the pre_stop of a
// stop or roll comes from the old container's label, not from the desired
// state; the drain from the desired workload; a container that does not run
// drains nothing.
func TestDiffDrainsWithTheCommandTheContainerWasCreatedWith(t *testing.T) {
	d := resolved(workload("web", 2, withPreStop("/new", "-drain"), withDrain(5*time.Second)))
	old := func(c *docker.Container) { c.Labels[docker.PreStopLabel(pfx)] = `["/old","-quit"]` }
	plan := Diff(d, observed(
		fresh(d, "web", 0), stale(d, "web", 0, old), // roll, drained with /old
		fresh(d, "web", 1), stale(d, "web", 1, exited(0), old), // roll of an exited one: no drain
		fresh(d, "web", 2, old), // surplus: drained
	))
	got := map[string]string{}
	for _, s := range plan.Steps() {
		got[brief(s)] = s.DrainText()
	}
	want := map[string]string{
		"roll web/0 rollcall-web-0-01234567":                                 "pre_stop /old -quit, drain ≤5s",
		"roll web/1 rollcall-web-1-01234567":                                 "",
		"stop web/2 " + ContainerName(pfx, "web", 2, d.Workload("web").Hash): "pre_stop /old -quit, drain ≤5s",
	}
	if len(got) != len(want) {
		t.Fatalf("steps %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: drain %q, want %q", k, got[k], v)
		}
	}
	if !strings.Contains(plan.String(), "(pre_stop /old -quit, drain ≤5s)") {
		t.Errorf("the plan does not show the drain:\n%s", plan)
	}

	extra := Diff(resolved(), observed(stale(d, "web", 0, old)))
	if s := extra.Steps()[0]; !slices.Equal(s.PreStop, []string{"/old", "-quit"}) || s.Drain != 0 {
		t.Errorf("extra: pre_stop %q drain %s; want its own pre_stop and no drain", s.PreStop, s.Drain)
	}
}

// drainRig is a fake engine on a manual clock with one running container of
// the given behaviour, and run options whose Sleep moves that clock.
func drainRig(t *testing.T, b fake.Behaviour) (*fake.Engine, *fake.ManualClock, Step, RunOptions) {
	t.Helper()
	clock := fake.NewManualClock(t0)
	f := fake.New(fake.Options{Clock: clock, Seed: 7})
	f.AddImage("web:v1", "sha256:web1", b)
	id, err := f.Create(context.Background(), docker.CreateSpec{
		Name: "rollcall-web-0-73f3aaaa", Image: "web:v1",
		Labels:      map[string]string{docker.ManagedLabel(pfx): "true"},
		Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second) // healthy
	f.ResetCalls()
	s := Step{Action: ActRoll, Workload: "web", Slot: 0, Container: "rollcall-web-0-73f3aaaa", ContainerID: id,
		Grace: time.Second, PreStop: []string{"/demoapp", "-drain"}, Drain: 5 * time.Second}
	opts := RunOptions{Now: clock.Now, Sleep: func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }}
	return f, clock, s, opts
}

func letGo(context.Context, Step) (bool, error)       { return true, nil }
func stillRoutes(context.Context, Step) (bool, error) { return false, nil }

func TestRunDrainsBeforeTheStop(t *testing.T) {
	tests := []struct {
		rule      string
		behaviour fake.Behaviour
		released  func(context.Context, Step) (bool, error) // nil: no proxy
		wantTook  time.Duration                             // on the manual clock
		wantEnded string
		wantErr   error
	}{
		{"the drain ends once the container reports unhealthy", fake.Behaviour{ExecDrains: true}, nil, time.Second, "unhealthy", nil},
		{"without a health change the whole drain passes", fake.Behaviour{}, nil, 5 * time.Second, "timeout", nil},
		{"the proxy letting go ends the drain", fake.Behaviour{}, letGo, 0, "released", nil},
		{"behind a proxy that still routes, unhealthy ends nothing", fake.Behaviour{ExecDrains: true}, stillRoutes, 5 * time.Second, "timeout", nil},
		{"a failing pre_stop waits the drain, then stops anyway", fake.Behaviour{ExecExitCode: 2}, nil, 5 * time.Second, "timeout", ErrPreStop},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			f, clock, s, opts := drainRig(t, tt.behaviour)
			var seen []DrainProgress
			opts.OnDrain = func(p DrainProgress) { seen = append(seen, p) }
			opts.Released = tt.released
			began := clock.Now()
			err := RunWith(context.Background(), f, s, opts)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if took := clock.Now().Sub(began); took != tt.wantTook {
				t.Errorf("the drain took %s, want %s", took, tt.wantTook)
			}
			muts := f.Mutations()
			want := []string{"exec:" + s.Container, "stop:" + s.Container, "remove:" + s.Container}
			if !slices.Equal(muts, want) {
				t.Errorf("mutations %q, want %q", muts, want)
			}
			if len(seen) != 2 || seen[0].Ended != "" || !seen[0].PreStopRan || seen[1].Ended != tt.wantEnded {
				t.Errorf("progress %+v, want begun then ended %q", seen, tt.wantEnded)
			}
			if tt.wantErr != nil && !strings.Contains(err.Error(), "stopped after the drain anyway") {
				t.Errorf("error %q does not say the container was stopped", err)
			}
		})
	}
}

// TestRunDrainIsIdempotent (I6): a re-run on a container already gone is a
// no-op, without an exec error.
func TestRunDrainIsIdempotent(t *testing.T) {
	f, _, s, opts := drainRig(t, fake.Behaviour{ExecDrains: true})
	if err := RunWith(context.Background(), f, s, opts); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	if err := RunWith(context.Background(), f, s, opts); err != nil {
		t.Fatalf("re-run: %v", err)
	}
	if m := f.Mutations(); !slices.Equal(m, []string{"exec:" + s.ContainerID + "!fail"}) {
		t.Errorf("re-run: mutations %q, want only the exec that found nothing", m)
	}
}

// TestRunDrainEndsWithTheContext: a drain cut short by ctx does not stop the
// container.
func TestRunDrainEndsWithTheContext(t *testing.T) {
	f, _, s, opts := drainRig(t, fake.Behaviour{})
	ctx, cancel := context.WithCancel(context.Background())
	opts.Sleep = func(context.Context, time.Duration) error { cancel(); return context.Canceled }
	if err := RunWith(ctx, f, s, opts); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want canceled", err)
	}
	if m := f.Mutations(); slices.Contains(m, "stop:"+s.Container) {
		t.Errorf("a cancelled drain stopped the container: %q", m)
	}
}

func TestDrainProgressText(t *testing.T) {
	p := DrainProgress{Step: Step{Container: "web-0-73f3"}, PreStopRan: true, Until: t0.Add(3 * time.Second)}
	if got := p.Text(t0.Add(200 * time.Millisecond)); got != "draining web-0-73f3 (pre_stop ran, 3s left)" {
		t.Errorf("Text = %q", got)
	}
	p.Ended = "unhealthy"
	if got := p.Text(t0); got != "draining web-0-73f3 (pre_stop ran, unhealthy)" {
		t.Errorf("Text = %q", got)
	}
}

// TestDrainEndWaitsForTheProxyOverHealth: behind a proxy that answers, only
// its letting go ends a drain; the engine's "unhealthy" ends it only with
// no proxy, or one that cannot tell. A stop on "unhealthy" while the proxy
// still routes would close a listener the proxy dials.
func TestDrainEndWaitsForTheProxyOverHealth(t *testing.T) {
	errCannotTell := errors.New("proxy: not answering")
	tests := []struct {
		name      string
		released  func(context.Context, Step) (bool, error) // nil: no proxy
		unhealthy bool
		want      string
	}{
		{"no proxy, healthy: wait", nil, false, ""},
		{"no proxy, unhealthy: end", nil, true, "unhealthy"},
		{"proxy let go: end, healthy or not", func(context.Context, Step) (bool, error) { return true, nil }, false, "released"},
		{"proxy still routes, unhealthy: wait", func(context.Context, Step) (bool, error) { return false, nil }, true, ""},
		{"proxy still routes, healthy: wait", func(context.Context, Step) (bool, error) { return false, nil }, false, ""},
		{"proxy cannot tell, unhealthy: end", func(context.Context, Step) (bool, error) { return false, errCannotTell }, true, "unhealthy"},
		{"proxy cannot tell, healthy: wait", func(context.Context, Step) (bool, error) { return false, errCannotTell }, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := drainEnd(context.Background(), Step{}, RunOptions{Released: tt.released}, tt.unhealthy); got != tt.want {
				t.Errorf("drainEnd = %q, want %q", got, tt.want)
			}
		})
	}
}
