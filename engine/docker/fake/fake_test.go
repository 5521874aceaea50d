package fake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

const fakePrefix = "rollcall"

// testCtx is the context of calls that are not about cancellation.
var testCtx = context.Background()

// newTestFake is an engine on a manual clock with the images the tests use.
func newTestFake(t *testing.T) (*Engine, *ManualClock) {
	t.Helper()
	clock := NewManualClock(fakeEpoch)
	f := New(Options{Clock: clock, Seed: 42})
	f.AddImage("web:v1", "sha256:web1", Behaviour{ReadyAfter: 2 * time.Second})
	f.AddImage("sick:v1", "sha256:sick1", Behaviour{ReadyAfter: 2 * time.Second, Unhealthy: true})
	f.AddImage("crash:v1", "sha256:crash1", Behaviour{ReadyAfter: 500 * time.Millisecond, CrashAfter: 5 * time.Second, ExitCode: 1})
	f.AddImage("clean:v1", "sha256:clean1", Behaviour{ReadyAfter: 500 * time.Millisecond, CrashAfter: 5 * time.Second, ExitCode: 0})
	f.AddImage("oom:v1", "sha256:oom1", Behaviour{ReadyAfter: 500 * time.Millisecond, CrashAfter: time.Second, OOM: true})
	f.AddImage("broken:v1", "sha256:broken1", Behaviour{FailStart: true})
	return f, clock
}

// managedSpec is a managed container of image with a healthcheck.
func managedSpec(name, image string) docker.CreateSpec {
	return docker.CreateSpec{
		Name:        name,
		Image:       image,
		Labels:      map[string]string{docker.ManagedLabel(fakePrefix): "true", docker.WorkloadLabel(fakePrefix): "web"},
		Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second},
		Ports:       []docker.PortSpec{{ContainerPort: 8080}},
		Limits:      docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "unless-stopped"},
	}
}

func mustCreate(t *testing.T, f *Engine, spec docker.CreateSpec) string {
	t.Helper()
	id, err := f.Create(testCtx, spec)
	if err != nil {
		t.Fatalf("create %s: %v", spec.Name, err)
	}
	return id
}

func mustInspect(t *testing.T, f *Engine, id string) docker.ContainerDetail {
	t.Helper()
	d, err := f.Inspect(testCtx, id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return d
}

func TestFakeRoundTrip(t *testing.T) {
	f, clock := newTestFake(t)
	id := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(id) {
		t.Errorf("ID %q is not 64 hex digits", id)
	}

	list, err := f.List(testCtx, fakePrefix)
	if err != nil || len(list) != 1 {
		t.Fatalf("list after create = %v, %v; want one container", list, err)
	}
	c := list[0]
	want := docker.Container{
		ID: id, Name: "rollcall-web-0-aaaaaaaa", Image: "web:v1", ImageID: "sha256:web1",
		Labels: c.Labels, State: docker.StateRunning, Health: docker.HealthStarting, HasHealthcheck: true,
		Created: fakeEpoch, StartedAt: fakeEpoch,
		Limits:   docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "unless-stopped"},
		Ports:    []docker.PublishedPort{{ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1", HostPort: 32768}},
		Networks: map[string]string{"bridge": "172.17.0.2"},
	}
	if !equalContainers(c, want) {
		t.Errorf("listed container:\n got %+v\nwant %+v", c, want)
	}
	if byName := mustInspect(t, f, "rollcall-web-0-aaaaaaaa"); byName.ID != id {
		t.Errorf("inspect by name gave %s, want %s", byName.ID, id)
	}
	if byPrefix := mustInspect(t, f, id[:12]); byPrefix.ID != id {
		t.Errorf("inspect by short ID gave %s, want %s", byPrefix.ID, id)
	}

	clock.Advance(3 * time.Second)
	if err := f.Remove(testCtx, id); err == nil {
		t.Error("remove of a running container succeeded")
	}
	if err := f.Stop(testCtx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := mustInspect(t, f, id)
	if stopped.State != docker.StateExited || stopped.ExitCode != 0 || !stopped.FinishedAt.Equal(fakeEpoch.Add(3*time.Second)) {
		t.Errorf("after stop: state %s exit %d finished %v; want exited, 0, now", stopped.State, stopped.ExitCode, stopped.FinishedAt)
	}
	if err := f.Stop(testCtx, id, time.Second); err != nil {
		t.Errorf("stopping a stopped container: %v", err)
	}
	if list, _ := f.List(testCtx, fakePrefix); len(list) != 1 {
		t.Errorf("stop removed the container: list = %v", list)
	}
	if err := f.Remove(testCtx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Inspect(testCtx, id); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("inspect after remove: err = %v, want ErrNotFound", err)
	}
	if err := f.Remove(testCtx, id); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("second remove: err = %v, want ErrNotFound", err)
	}

	name := "rollcall-web-0-aaaaaaaa"
	wantCalls := []string{
		"create:" + name, "list:rollcall", "inspect:" + name, "inspect:" + name,
		"remove:" + name + "!fail", "stop:" + name, "inspect:" + name, "stop:" + name,
		"list:rollcall", "remove:" + name, "inspect:" + id + "!fail", "remove:" + id + "!fail",
	}
	if got := f.Calls(); !slices.Equal(got, wantCalls) {
		t.Errorf("calls:\n got %q\nwant %q", got, wantCalls)
	}
	wantMutations := []string{"create:" + name, "remove:" + name + "!fail", "stop:" + name, "stop:" + name, "remove:" + name, "remove:" + id + "!fail"}
	if got := f.Mutations(); !slices.Equal(got, wantMutations) {
		t.Errorf("mutations:\n got %q\nwant %q", got, wantMutations)
	}
	f.ResetCalls()
	if got := f.Calls(); len(got) != 0 {
		t.Errorf("calls after ResetCalls = %q", got)
	}
}

func equalContainers(a, b docker.Container) bool {
	return fmt.Sprintf("%+v", a) == fmt.Sprintf("%+v", b)
}

func TestFakeListShowsOnlyManagedContainersOfThePrefix(t *testing.T) {
	f, _ := newTestFake(t)
	seeds := []struct {
		name   string
		labels map[string]string
	}{
		{"zz-managed", map[string]string{"rollcall.managed": "true"}},
		{"aa-managed", map[string]string{"rollcall.managed": "true", "rollcall.workload": "web"}},
		{"unlabelled", nil},
		{"managed-false", map[string]string{"rollcall.managed": "false"}},
		{"other-prefix", map[string]string{"other.managed": "true"}},
		{"workload-only", map[string]string{"rollcall.workload": "web"}},
	}
	for _, s := range seeds {
		if _, err := f.AddContainer(docker.Container{Name: s.name, Image: "web:v1", Labels: s.labels}); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"rollcall", []string{"aa-managed", "zz-managed"}},
		{"other", []string{"other-prefix"}},
		{"nobody", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			list, err := f.List(testCtx, tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range list {
				got = append(got, c.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("List(%q) = %v, want %v (sorted by name)", tt.prefix, got, tt.want)
			}
		})
	}

	t.Run("copies", func(t *testing.T) {
		list, _ := f.List(testCtx, fakePrefix)
		list[0].Labels["rollcall.managed"] = "false"
		if again, _ := f.List(testCtx, fakePrefix); len(again) != 2 {
			t.Errorf("changing a listed container changed the engine: %v", again)
		}
	})
}

func TestFakeCreateRefusals(t *testing.T) {
	tests := []struct {
		name    string
		spec    docker.CreateSpec
		wantErr error
	}{
		{"name in use by a managed container is a conflict", managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"), docker.ErrConflict},
		{"name in use by an unmanaged container is a conflict", managedSpec("postgres", "web:v1"), docker.ErrConflict},
		{"missing image is not found", managedSpec("rollcall-web-1-aaaaaaaa", "web:v9"), docker.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFake(t)
			mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
			if _, err := f.AddContainer(docker.Container{Name: "postgres", Image: "postgres:16"}); err != nil {
				t.Fatal(err)
			}
			before, _ := f.List(testCtx, fakePrefix)
			if _, err := f.Create(testCtx, tt.spec); !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if after, _ := f.List(testCtx, fakePrefix); len(after) != len(before) {
				t.Errorf("a refused create changed the containers: %d -> %d", len(before), len(after))
			}
		})
	}
}

func TestFakeImages(t *testing.T) {
	f, _ := newTestFake(t)
	tests := []struct {
		name    string
		setup   func()
		ref     string
		wantID  string
		wantErr error
	}{
		{"a tag resolves to its image", nil, "web:v1", "sha256:web1", nil},
		{"an image ID resolves to itself", nil, "sha256:web1", "sha256:web1", nil},
		{"a missing image is not found", nil, "web:v9", "", docker.ErrNotFound},
		{"re-adding a tag re-points it, like a rebuild", func() { f.AddImage("web:v1", "sha256:web1b", Behaviour{}) }, "web:v1", "sha256:web1b", nil},
		{"the old image stays reachable by ID", nil, "sha256:web1", "sha256:web1", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.setup != nil {
				tt.setup()
			}
			img, err := f.ImageInspect(testCtx, tt.ref)
			if !errors.Is(err, tt.wantErr) || img.ID != tt.wantID {
				t.Errorf("ImageInspect(%q) = %q, %v; want %q, %v", tt.ref, img.ID, err, tt.wantID, tt.wantErr)
			}
		})
	}
}

func TestFakeHealthOverTime(t *testing.T) {
	noHealthcheck := func(s docker.CreateSpec) docker.CreateSpec { s.Healthcheck = nil; return s }
	disabled := func(s docker.CreateSpec) docker.CreateSpec {
		s.Healthcheck = &docker.Healthcheck{Test: []string{"NONE"}}
		return s
	}
	same := func(s docker.CreateSpec) docker.CreateSpec { return s }
	tests := []struct {
		name       string
		image      string
		spec       func(docker.CreateSpec) docker.CreateSpec
		wantHC     bool
		wantBefore docker.Health // at 1.9s
		wantAfter  docker.Health // at 3s
		wantProbes []string      // health log outputs at 3s, interval 1s
		wantEvents []string      // health_status events
		wantState  docker.State  // at 3s
		wantAt     time.Duration // when the health turned
	}{
		{"starting until ReadyAfter, then healthy", "web:v1", same, true, docker.HealthStarting, docker.HealthHealthy,
			[]string{"connection refused", "ok", "ok"}, []string{"health_status: healthy"}, docker.StateRunning, 2 * time.Second},
		{"unhealthy instead of healthy when the image says so", "sick:v1", same, true, docker.HealthStarting, docker.HealthUnhealthy,
			[]string{"connection refused", "connection refused", "connection refused"}, []string{"health_status: unhealthy"}, docker.StateRunning, 2 * time.Second},
		{"no healthcheck: nothing happens, it runs", "web:v1", noHealthcheck, false, docker.HealthNone, docker.HealthNone, nil, nil, docker.StateRunning, 0},
		{"healthcheck NONE counts as none", "web:v1", disabled, false, docker.HealthNone, docker.HealthNone, nil, nil, docker.StateRunning, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newTestFake(t)
			evctx, cancel := context.WithCancel(testCtx)
			defer cancel()
			events, _ := f.Events(evctx, fakePrefix, time.Time{})

			id := mustCreate(t, f, tt.spec(managedSpec("rollcall-web-0-aaaaaaaa", tt.image)))
			clock.Advance(1900 * time.Millisecond)
			c := mustInspect(t, f, id)
			if c.HasHealthcheck != tt.wantHC || c.Health != tt.wantBefore {
				t.Errorf("at 1.9s: healthcheck %v health %q; want %v %q", c.HasHealthcheck, c.Health, tt.wantHC, tt.wantBefore)
			}
			clock.Advance(1100 * time.Millisecond)
			c = mustInspect(t, f, id)
			if c.Health != tt.wantAfter || c.State != tt.wantState {
				t.Errorf("at 3s: health %q state %s; want %q %s", c.Health, c.State, tt.wantAfter, tt.wantState)
			}
			var probes []string
			for _, r := range c.HealthLog {
				probes = append(probes, r.Output)
				if (r.Output == "ok") != (r.ExitCode == 0) {
					t.Errorf("probe %q has exit code %d", r.Output, r.ExitCode)
				}
			}
			if !slices.Equal(probes, tt.wantProbes) {
				t.Errorf("health log = %q, want %q", probes, tt.wantProbes)
			}

			if err := f.Stop(testCtx, id, 0); err != nil { // ends the stream's content with a die
				t.Fatal(err)
			}
			var health []string
			for ev := range events {
				if len(ev.Action) > 13 && ev.Action[:13] == "health_status" {
					health = append(health, ev.Action)
					if !ev.Time.Equal(fakeEpoch.Add(tt.wantAt)) {
						t.Errorf("%s at %v, want at epoch+%v", ev.Action, ev.Time, tt.wantAt)
					}
				}
				if ev.Action == "die" {
					break
				}
			}
			if !slices.Equal(health, tt.wantEvents) {
				t.Errorf("health events = %q, want %q", health, tt.wantEvents)
			}
		})
	}
}

func TestFakeSetHealthSticks(t *testing.T) {
	f, clock := newTestFake(t)
	id := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
	if err := f.SetHealth(id, docker.HealthUnhealthy); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10 * time.Second)
	if c := mustInspect(t, f, id); c.Health != docker.HealthUnhealthy {
		t.Errorf("hand-set unhealthy became %q after ReadyAfter", c.Health)
	}
	if err := f.Restart(testCtx, id, time.Second); err != nil {
		t.Fatal(err)
	}
	if c := mustInspect(t, f, id); c.Health != docker.HealthStarting {
		t.Errorf("after restart health = %q, want starting", c.Health)
	}
	clock.Advance(2 * time.Second)
	if c := mustInspect(t, f, id); c.Health != docker.HealthHealthy {
		t.Errorf("after restart + ReadyAfter health = %q, want healthy", c.Health)
	}
}

// TestFakeCrashAndRestartPolicy follows a crashing container (CrashAfter 5s)
// through its restart policy: restarting for the backoff, then running again.
func TestFakeCrashAndRestartPolicy(t *testing.T) {
	tests := []struct {
		name        string
		image       string
		policy      string
		wantRestart bool
		wantExit    int
		wantOOM     bool
		crashAfter  time.Duration
	}{
		{"always restarts", "crash:v1", "always", true, 1, false, 5 * time.Second},
		{"unless-stopped restarts", "crash:v1", "unless-stopped", true, 1, false, 5 * time.Second},
		{"on-failure restarts a nonzero exit", "crash:v1", "on-failure", true, 1, false, 5 * time.Second},
		{"on-failure leaves a clean exit", "clean:v1", "on-failure", false, 0, false, 5 * time.Second},
		{"no leaves it exited", "crash:v1", "no", false, 1, false, 5 * time.Second},
		{"OOM kill exits 137", "oom:v1", "always", true, 137, true, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newTestFake(t)
			spec := managedSpec("rollcall-web-0-aaaaaaaa", tt.image)
			spec.Limits.Restart = tt.policy
			id := mustCreate(t, f, spec)

			clock.Advance(tt.crashAfter - time.Millisecond)
			if c := mustInspect(t, f, id); c.State != docker.StateRunning {
				t.Fatalf("before CrashAfter: state %s, want running", c.State)
			}
			clock.Advance(time.Millisecond)
			c := mustInspect(t, f, id)
			crashedAt := fakeEpoch.Add(tt.crashAfter)
			wantState := docker.StateExited
			if tt.wantRestart {
				wantState = docker.StateRestarting
			}
			if c.State != wantState || c.ExitCode != tt.wantExit || c.OOMKilled != tt.wantOOM || !c.FinishedAt.Equal(crashedAt) {
				t.Fatalf("at crash: state %s exit %d oom %v finished %v; want %s %d %v %v",
					c.State, c.ExitCode, c.OOMKilled, c.FinishedAt, wantState, tt.wantExit, tt.wantOOM, crashedAt)
			}

			clock.Advance(100 * time.Millisecond) // the first backoff
			c = mustInspect(t, f, id)
			if !tt.wantRestart {
				if c.State != docker.StateExited || c.RestartCount != 0 {
					t.Errorf("policy %s: state %s restarts %d, want exited 0", tt.policy, c.State, c.RestartCount)
				}
				return
			}
			restartedAt := crashedAt.Add(100 * time.Millisecond)
			if c.ID != id || c.State != docker.StateRunning || c.RestartCount != 1 || !c.StartedAt.Equal(restartedAt) || c.Health != docker.HealthStarting {
				t.Errorf("after backoff: id same %v state %s restarts %d started %v health %q; want same, running, 1, %v, starting",
					c.ID == id, c.State, c.RestartCount, c.StartedAt, c.Health, restartedAt)
			}

			// The second crash waits twice as long.
			clock.Advance(tt.crashAfter + 199*time.Millisecond)
			if c := mustInspect(t, f, id); c.State != docker.StateRestarting {
				t.Errorf("second backoff at 199ms: state %s, want restarting", c.State)
			}
			clock.Advance(time.Millisecond)
			if c := mustInspect(t, f, id); c.State != docker.StateRunning || c.RestartCount != 2 {
				t.Errorf("after second backoff: state %s restarts %d, want running 2", c.State, c.RestartCount)
			}
		})
	}
}

func TestRestartBackoffDoublesAndCapsAtAMinute(t *testing.T) {
	tests := []struct {
		restarts int
		want     time.Duration
	}{
		{0, 100 * time.Millisecond}, {1, 200 * time.Millisecond}, {3, 800 * time.Millisecond},
		{9, 51200 * time.Millisecond}, {10, time.Minute}, {1000, time.Minute},
	}
	for _, tt := range tests {
		if got := restartBackoff(tt.restarts); got != tt.want {
			t.Errorf("restartBackoff(%d) = %v, want %v", tt.restarts, got, tt.want)
		}
	}
}

func TestFakeStopPreventsPolicyRestart(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, f *Engine, clock *ManualClock, id string)
	}{
		{"stopped while running", func(*testing.T, *Engine, *ManualClock, string) {}},
		{"stopped while restarting", func(t *testing.T, f *Engine, clock *ManualClock, id string) {
			clock.Advance(5 * time.Second)
			if c := mustInspect(t, f, id); c.State != docker.StateRestarting {
				t.Fatalf("setup: state %s, want restarting", c.State)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newTestFake(t)
			spec := managedSpec("rollcall-web-0-aaaaaaaa", "crash:v1")
			spec.Limits.Restart = "always"
			id := mustCreate(t, f, spec)
			tt.setup(t, f, clock, id)
			if err := f.Stop(testCtx, id, time.Second); err != nil {
				t.Fatal(err)
			}
			clock.Advance(10 * time.Minute)
			if c := mustInspect(t, f, id); c.State != docker.StateExited {
				t.Errorf("10 min after Stop with policy always: state %s, want exited", c.State)
			}
		})
	}
}

func TestFakeKillCountsAsACrash(t *testing.T) {
	tests := []struct {
		policy    string
		exit      int
		wantState docker.State
	}{
		{"no", 137, docker.StateExited},
		{"always", 137, docker.StateRestarting},
		{"unless-stopped", 0, docker.StateRestarting},
		{"on-failure", 137, docker.StateRestarting},
		{"on-failure", 0, docker.StateExited},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s exit %d", tt.policy, tt.exit), func(t *testing.T) {
			f, _ := newTestFake(t)
			spec := managedSpec("rollcall-web-0-aaaaaaaa", "web:v1")
			spec.Limits.Restart = tt.policy
			id := mustCreate(t, f, spec)
			if err := f.Kill(id, tt.exit); err != nil {
				t.Fatal(err)
			}
			if c := mustInspect(t, f, id); c.State != tt.wantState || c.ExitCode != tt.exit {
				t.Errorf("after kill: state %s exit %d, want %s %d", c.State, c.ExitCode, tt.wantState, tt.exit)
			}
			if slices.ContainsFunc(f.Calls(), func(c string) bool { return strings.HasPrefix(c, "kill") }) {
				t.Errorf("Kill, a test helper, is in the call log: %q", f.Calls())
			}
		})
	}
	t.Run("a stopped container cannot be killed", func(t *testing.T) {
		f, _ := newTestFake(t)
		id := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
		_ = f.Stop(testCtx, id, 0)
		if err := f.Kill(id, 137); err == nil {
			t.Error("kill of an exited container succeeded")
		}
	})
}

func TestFakeInPlaceChanges(t *testing.T) {
	tests := []struct {
		name         string
		change       func(f *Engine, id string) error
		wantLimits   docker.Limits
		wantStarted  time.Duration // since epoch
		wantHealth   docker.Health
		wantRestarts int
		wantCall     string
	}{
		{"update changes limits, keeps ID and StartedAt",
			func(f *Engine, id string) error {
				return f.Update(testCtx, id, docker.Limits{NanoCPUs: 1e9, Memory: 128 << 20, Restart: "always"})
			},
			docker.Limits{NanoCPUs: 1e9, Memory: 128 << 20, Restart: "always"}, 0, docker.HealthHealthy, 0, "update:rollcall-web-0-aaaaaaaa"},
		{"update with no restart policy keeps the current one",
			func(f *Engine, id string) error { return f.Update(testCtx, id, docker.Limits{Memory: 32 << 20}) },
			docker.Limits{Memory: 32 << 20, Restart: "unless-stopped"}, 0, docker.HealthHealthy, 0, "update:rollcall-web-0-aaaaaaaa"},
		{"SetLimits is drift by hand, not a call",
			func(f *Engine, id string) error {
				return f.SetLimits(id, docker.Limits{Memory: 1 << 30, Restart: "no"})
			},
			docker.Limits{Memory: 1 << 30, Restart: "no"}, 0, docker.HealthHealthy, 0, ""},
		{"restart keeps ID, starts anew, health back to starting, count unchanged",
			func(f *Engine, id string) error { return f.Restart(testCtx, id, time.Second) },
			docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "unless-stopped"}, 3 * time.Second, docker.HealthStarting, 0, "restart:rollcall-web-0-aaaaaaaa"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, clock := newTestFake(t)
			id := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
			clock.Advance(3 * time.Second)
			f.ResetCalls()
			if err := tt.change(f, id); err != nil {
				t.Fatal(err)
			}
			calls := f.Mutations()
			c := mustInspect(t, f, id)
			if c.ID != id || c.Limits != tt.wantLimits || !c.StartedAt.Equal(fakeEpoch.Add(tt.wantStarted)) ||
				c.Health != tt.wantHealth || c.RestartCount != tt.wantRestarts || c.State != docker.StateRunning {
				t.Errorf("got id same %v limits %+v started %v health %q restarts %d state %s",
					c.ID == id, c.Limits, c.StartedAt, c.Health, c.RestartCount, c.State)
			}
			var wantCalls []string
			if tt.wantCall != "" {
				wantCalls = []string{tt.wantCall}
			}
			if !slices.Equal(calls, wantCalls) {
				t.Errorf("mutations = %q, want %q", calls, wantCalls)
			}
		})
	}
}

func TestFakeInjectedFailuresHaveNoEffect(t *testing.T) {
	custom := errors.New("engine on fire")
	tests := []struct {
		name      string
		inject    func(f *Engine)
		act       func(f *Engine, id string) error
		wantErr   error
		wantCall  string
		wantState docker.State
		wantCount int // managed containers after
	}{
		{"FailRate 1 fails create", func(f *Engine) { f.FailRate(1) },
			func(f *Engine, _ string) error {
				_, err := f.Create(testCtx, managedSpec("rollcall-web-1-bbbbbbbb", "web:v1"))
				return err
			},
			ErrInjected, "create:rollcall-web-1-bbbbbbbb!fail", docker.StateRunning, 1},
		{"FailRate 1 fails stop", func(f *Engine) { f.FailRate(1) },
			func(f *Engine, id string) error { return f.Stop(testCtx, id, 0) },
			ErrInjected, "stop:rollcall-web-0-aaaaaaaa!fail", docker.StateRunning, 1},
		{"FailRate 1 fails update", func(f *Engine) { f.FailRate(1) },
			func(f *Engine, id string) error { return f.Update(testCtx, id, docker.Limits{Memory: 1}) },
			ErrInjected, "update:rollcall-web-0-aaaaaaaa!fail", docker.StateRunning, 1},
		{"FailRate spares reads", func(f *Engine) { f.FailRate(1) },
			func(f *Engine, id string) error { _, err := f.Inspect(testCtx, id); return err },
			nil, "inspect:rollcall-web-0-aaaaaaaa", docker.StateRunning, 1},
		{"FailReads extends FailRate to reads", func(f *Engine) { f.FailRate(1); f.FailReads(true) },
			func(f *Engine, _ string) error { _, err := f.List(testCtx, fakePrefix); return err },
			ErrInjected, "list:rollcall!fail", docker.StateRunning, 1},
		{"FailCall fails the n-th call", func(f *Engine) { f.FailCall("Stop", 1) },
			func(f *Engine, id string) error { return f.Stop(testCtx, id, 0) },
			ErrInjected, "stop:rollcall-web-0-aaaaaaaa!fail", docker.StateRunning, 1},
		{"FailNext returns the given error", func(f *Engine) { f.FailNext("restart", custom) },
			func(f *Engine, id string) error { return f.Restart(testCtx, id, 0) },
			custom, "restart:rollcall-web-0-aaaaaaaa!fail", docker.StateRunning, 1},
		{"FailNext on remove", func(f *Engine) { f.FailNext("Remove", nil) },
			func(f *Engine, id string) error {
				_ = f.Stop(testCtx, id, 0)
				f.ResetCalls()
				return f.Remove(testCtx, id)
			},
			ErrInjected, "remove:rollcall-web-0-aaaaaaaa!fail", docker.StateExited, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFake(t)
			id := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
			before := mustInspect(t, f, id)
			tt.inject(f)
			f.ResetCalls()
			err := tt.act(f, id)
			if (tt.wantErr == nil) != (err == nil) || (tt.wantErr != nil && !errors.Is(err, tt.wantErr)) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if calls := f.Calls(); len(calls) == 0 || calls[len(calls)-1] != tt.wantCall {
				t.Errorf("calls = %q, want last %q", calls, tt.wantCall)
			}
			f.FailRate(0)
			f.FailReads(false)
			after := mustInspect(t, f, id)
			if after.State != tt.wantState || after.Limits != before.Limits || !after.StartedAt.Equal(before.StartedAt) {
				t.Errorf("a failed call had an effect: before %+v after %+v", before.Container, after.Container)
			}
			if list, _ := f.List(testCtx, fakePrefix); len(list) != tt.wantCount {
				t.Errorf("%d managed containers, want %d", len(list), tt.wantCount)
			}
		})
	}
}

func TestFakeFailCallCountsFromWhenItIsSet(t *testing.T) {
	f, _ := newTestFake(t)
	mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "web:v1"))
	f.FailCall("Create", 2)
	var got []bool
	for i := 1; i <= 3; i++ {
		_, err := f.Create(testCtx, managedSpec(fmt.Sprintf("rollcall-web-%d-bbbbbbbb", i), "web:v1"))
		got = append(got, err == nil)
	}
	if want := []bool{true, false, true}; !slices.Equal(got, want) {
		t.Errorf("create successes = %v, want %v", got, want)
	}
}

func TestFakeFailRateIsAShare(t *testing.T) {
	f, _ := newTestFake(t)
	f.FailRate(0.3)
	failed := 0
	for i := range 1000 {
		if _, err := f.Create(testCtx, managedSpec(fmt.Sprintf("c-%d", i), "web:v1")); errors.Is(err, ErrInjected) {
			failed++
		}
	}
	if failed < 230 || failed > 370 {
		t.Errorf("FailRate(0.3) failed %d of 1000 creates", failed)
	}
	if list, _ := f.List(testCtx, fakePrefix); len(list) != 1000-failed {
		t.Errorf("%d containers after %d successful creates", len(list), 1000-failed)
	}
}

func TestFakeStartFailureRemovesTheContainer(t *testing.T) {
	tests := []struct {
		name  string
		setup func(f *Engine)
		spec  docker.CreateSpec
	}{
		{"FailStart image", func(*Engine) {}, managedSpec("rollcall-web-0-aaaaaaaa", "broken:v1")},
		{"fixed host port already allocated", func(f *Engine) {
			s := managedSpec("holder", "web:v1")
			s.Ports = []docker.PortSpec{{HostPort: 8080, ContainerPort: 8080}}
			mustCreate(t, f, s)
		}, func() docker.CreateSpec {
			s := managedSpec("rollcall-web-0-aaaaaaaa", "web:v1")
			s.Ports = []docker.PortSpec{{HostPort: 8080, ContainerPort: 8080}}
			return s
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFake(t)
			tt.setup(f)
			if _, err := f.Create(testCtx, tt.spec); err == nil {
				t.Fatal("create succeeded")
			}
			if _, err := f.Inspect(testCtx, tt.spec.Name); !errors.Is(err, docker.ErrNotFound) {
				t.Errorf("the container is still there after a failed start: %v", err)
			}
			if err := f.Remove(testCtx, tt.spec.Name); !errors.Is(err, docker.ErrNotFound) {
				t.Errorf("remove after failed start: %v, want ErrNotFound", err)
			}
		})
	}
}

// collectEvents reads events until n arrived or a second passed.
func collectEvents(t *testing.T, events <-chan docker.Event, n int) []docker.Event {
	t.Helper()
	var out []docker.Event
	timeout := time.After(time.Second)
	for len(out) < n {
		select {
		case ev, ok := <-events:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-timeout:
			t.Fatalf("got %d events, want %d: %+v", len(out), n, out)
		}
	}
	return out
}

func fakeEventActions(evs []docker.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Name+" "+ev.Action)
	}
	return out
}

func TestFakeEventsForManagedContainersOnly(t *testing.T) {
	f, clock := newTestFake(t)
	evctx, cancel := context.WithCancel(testCtx)
	events, errc := f.Events(evctx, fakePrefix, time.Time{})

	unmanaged := managedSpec("other", "web:v1")
	unmanaged.Labels = map[string]string{"com.example": "x"}
	mustCreate(t, f, unmanaged)
	foreign := managedSpec("foreign", "web:v1")
	foreign.Labels = map[string]string{docker.ManagedLabel("other"): "true"}
	mustCreate(t, f, foreign)

	id := mustCreate(t, f, managedSpec("web", "web:v1"))
	clock.Advance(2 * time.Second)
	f.Tick()
	_ = f.Update(testCtx, id, docker.Limits{Memory: 1 << 20})
	_ = f.Restart(testCtx, id, 0)
	_ = f.Stop(testCtx, id, 0)
	_ = f.Remove(testCtx, id)

	want := []string{
		"web create", "web start", "web health_status: healthy", "web update",
		"web die", "web stop", "web start", "web health_status: starting", "web restart",
		"web die", "web stop", "web destroy",
	}
	got := collectEvents(t, events, len(want))
	if !slices.Equal(fakeEventActions(got), want) {
		t.Errorf("events:\n got %q\nwant %q", fakeEventActions(got), want)
	}
	if got[0].ContainerID != id || got[0].Attributes["name"] != "web" || got[0].Attributes[docker.WorkloadLabel(fakePrefix)] != "web" {
		t.Errorf("create event = %+v, want ID, name and labels", got[0])
	}
	if got[4].Attributes["exitCode"] != "0" {
		t.Errorf("die event exitCode = %q, want 0", got[4].Attributes["exitCode"])
	}
	if !got[2].Time.Equal(fakeEpoch.Add(2 * time.Second)) {
		t.Errorf("healthy at %v, want at ReadyAfter", got[2].Time)
	}

	cancel()
	select {
	case ev, ok := <-events:
		if ok {
			t.Errorf("event after cancel: %+v", ev)
		}
	case <-time.After(time.Second):
		t.Fatal("event channel still open a second after cancel")
	}
	select {
	case err := <-errc:
		t.Errorf("error on a cancelled stream: %v", err)
	default:
	}
}

func TestFakeEventsReplaySince(t *testing.T) {
	f, clock := newTestFake(t)
	mustCreate(t, f, managedSpec("a", "web:v1"))
	clock.Advance(time.Minute)
	since := clock.Now()
	mustCreate(t, f, managedSpec("b", "web:v1"))

	tests := []struct {
		name  string
		since time.Time
		want  []string
	}{
		{"since a time replays what came at or after it", since, []string{"b create", "b start"}},
		{"the zero time replays nothing", time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evctx, cancel := context.WithCancel(testCtx)
			events, _ := f.Events(evctx, fakePrefix, tt.since)
			got := collectEvents(t, events, len(tt.want))
			cancel()
			for range events { // nothing more was queued
			}
			if !slices.Equal(fakeEventActions(got), tt.want) {
				t.Errorf("replay = %q, want %q", fakeEventActions(got), tt.want)
			}
		})
	}
}

func TestFakeEventStreamBreaks(t *testing.T) {
	tests := []struct {
		name  string
		open  func(f *Engine) (<-chan docker.Event, <-chan error)
		cause error
	}{
		{"BreakEvents sends the error then closes", func(f *Engine) (<-chan docker.Event, <-chan error) {
			events, errc := f.Events(testCtx, fakePrefix, time.Time{})
			f.BreakEvents(errEngineGone)
			return events, errc
		}, errEngineGone},
		{"an injected failure on Events", func(f *Engine) (<-chan docker.Event, <-chan error) {
			f.FailNext("Events", nil)
			return f.Events(testCtx, fakePrefix, time.Time{})
		}, ErrInjected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := newTestFake(t)
			events, errc := tt.open(f)
			if err := <-errc; !errors.Is(err, tt.cause) {
				t.Errorf("stream error = %v, want %v", err, tt.cause)
			}
			if _, ok := <-events; ok {
				t.Error("event channel still open after the stream broke")
			}
		})
	}
}

var errEngineGone = errors.New("engine connection lost")

func TestFakeLogs(t *testing.T) {
	f, clock := newTestFake(t)
	id := mustCreate(t, f, managedSpec("web", "web:v1"))
	clock.Advance(2 * time.Second)

	read := func(opts docker.LogOptions) []docker.LogLine {
		ch, err := f.Logs(testCtx, id, opts)
		if err != nil {
			t.Fatal(err)
		}
		var out []docker.LogLine
		for l := range ch {
			out = append(out, l)
		}
		return out
	}
	all := read(docker.LogOptions{})
	streams := map[string]bool{}
	for _, l := range all {
		streams[l.Stream] = true
	}
	if len(all) < 3 || !streams["stdout"] || !streams["stderr"] {
		t.Errorf("logs = %+v, want a few lines on stdout and stderr", all)
	}
	if tail := read(docker.LogOptions{Tail: 1}); len(tail) != 1 || tail[0] != all[len(all)-1] {
		t.Errorf("tail 1 = %+v, want the last line %+v", tail, all[len(all)-1])
	}
	if _, err := f.Logs(testCtx, "nope", docker.LogOptions{}); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("logs of a missing container: %v, want ErrNotFound", err)
	}

	t.Run("follow streams new lines until the container goes", func(t *testing.T) {
		ch, err := f.Logs(testCtx, id, docker.LogOptions{Tail: 1, Follow: true})
		if err != nil {
			t.Fatal(err)
		}
		if l := <-ch; l != all[len(all)-1] {
			t.Errorf("first followed line = %+v, want the tail", l)
		}
		_ = f.Stop(testCtx, id, 0)
		if l := <-ch; l.Text != "received SIGTERM, shutting down" {
			t.Errorf("followed line after stop = %q", l.Text)
		}
		_ = f.Remove(testCtx, id)
		for range ch { // must end
		}
	})
	t.Run("follow ends with its context", func(t *testing.T) {
		id := mustCreate(t, f, managedSpec("web2", "web:v1"))
		fctx, cancel := context.WithCancel(testCtx)
		ch, _ := f.Logs(fctx, id, docker.LogOptions{Follow: true})
		cancel()
		for range ch { // must end
		}
	})
}

func TestFakeAddContainerSeedsState(t *testing.T) {
	f, clock := newTestFake(t)
	legacy := docker.Container{
		Name: "web-legacy", Image: "web:v1", ImageID: "sha256:web1",
		Labels:         map[string]string{docker.ManagedLabel(fakePrefix): "true", docker.WorkloadLabel(fakePrefix): "web"},
		HasHealthcheck: true, StartedAt: fakeEpoch.Add(-time.Second),
		Ports: []docker.PublishedPort{{ContainerPort: 80, Proto: "tcp", HostIP: "127.0.0.1", HostPort: 40000}},
	}
	id, err := f.AddContainer(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AddContainer(docker.Container{Name: "web-legacy"}); !errors.Is(err, docker.ErrConflict) {
		t.Errorf("seeding a used name: %v, want ErrConflict", err)
	}
	stuck, _ := f.AddContainer(docker.Container{Name: "unknown-image", Image: "elsewhere:1", HasHealthcheck: true})

	c := mustInspect(t, f, id)
	if c.State != docker.StateRunning || c.Health != docker.HealthStarting || c.Limits.Restart != "no" || c.Created.IsZero() {
		t.Errorf("seeded defaults: %+v", c.Container)
	}
	clock.Advance(time.Second) // ReadyAfter 2s counts from the seeded StartedAt
	if c := mustInspect(t, f, id); c.Health != docker.HealthHealthy {
		t.Errorf("seeded container of a known image: health %q, want healthy", c.Health)
	}
	if c := mustInspect(t, f, stuck); c.Health != docker.HealthStarting {
		t.Errorf("seeded container of an unknown image: health %q, want starting (nothing drives it)", c.Health)
	}
	next := mustCreate(t, f, managedSpec("web-new", "web:v1"))
	if p := mustInspect(t, f, next).Ports[0].HostPort; p != 40001 {
		t.Errorf("ephemeral port after a seeded 40000 = %d, want 40001", p)
	}
}

func TestFakeInfo(t *testing.T) {
	tests := []struct {
		endpoint, want string
	}{
		{"", "fake://"},
		{"fake://demo", "fake://demo"},
	}
	for _, tt := range tests {
		f := New(Options{Endpoint: tt.endpoint})
		info, err := f.Info(testCtx)
		want := docker.EngineInfo{ID: "fake:" + tt.want, Endpoint: tt.want, Version: "fake", APIVersion: "1.41", Simulated: true}
		if err != nil || info != want {
			t.Errorf("Info() = %+v, %v; want %+v", info, err, want)
		}
	}
}

// fakeScript is one call sequence, run on fakes to compare them.
func fakeScript(f *Engine, clock *ManualClock) []string {
	f.FailRate(0.2)
	var ids []string
	for i := range 10 {
		id, err := f.Create(testCtx, managedSpec(fmt.Sprintf("rollcall-web-%d-aaaaaaaa", i), "web:v1"))
		if err == nil {
			ids = append(ids, id)
		}
		clock.Advance(500 * time.Millisecond)
	}
	for _, id := range ids {
		_ = f.Stop(testCtx, id, 0)
		_ = f.Remove(testCtx, id)
	}
	return ids
}

func TestFakeIsDeterministic(t *testing.T) {
	run := func(seed int64) ([]string, []string, []docker.Event) {
		clock := NewManualClock(fakeEpoch)
		f := New(Options{Clock: clock, Seed: seed})
		f.AddImage("web:v1", "sha256:web1", Behaviour{ReadyAfter: time.Second})
		ids := fakeScript(f, clock)
		return ids, f.Calls(), slices.Clone(f.history)
	}
	ids1, calls1, hist1 := run(7)
	ids2, calls2, hist2 := run(7)
	if !slices.Equal(ids1, ids2) || !slices.Equal(calls1, calls2) {
		t.Errorf("same seed, different runs:\nids %q\n vs %q\ncalls %q\n   vs %q", ids1, ids2, calls1, calls2)
	}
	if fmt.Sprint(hist1) != fmt.Sprint(hist2) {
		t.Error("same seed, different event histories")
	}
	if ids3, _, _ := run(8); slices.Equal(ids1, ids3) {
		t.Errorf("seeds 7 and 8 gave the same IDs %q", ids1)
	}
}

func TestFakeConcurrentUse(t *testing.T) {
	f := New(Options{Seed: 3}) // real clock
	f.AddImage("web:v1", "sha256:web1", Behaviour{ReadyAfter: time.Millisecond, CrashAfter: 3 * time.Millisecond, ExitCode: 1})
	evctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	events, _ := f.Events(evctx, fakePrefix, time.Time{})
	go func() {
		for range events {
		}
	}()

	const workers, each = 8, 20
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				spec := managedSpec(fmt.Sprintf("rollcall-web-%d-%d", w, i), "web:v1")
				spec.Limits.Restart = "always"
				id, err := f.Create(testCtx, spec)
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				_, _ = f.List(testCtx, fakePrefix)
				_, _ = f.Inspect(testCtx, id)
				f.Tick()
				_ = f.Update(testCtx, id, docker.Limits{Memory: int64(i)})
				if err := f.Stop(testCtx, id, 0); err != nil {
					t.Errorf("stop: %v", err)
				}
				if err := f.Remove(testCtx, id); err != nil {
					t.Errorf("remove: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if list, _ := f.List(testCtx, fakePrefix); len(list) != 0 {
		t.Errorf("%d containers left after every worker removed its own", len(list))
	}
	if got := len(f.Mutations()); got != workers*each*4 {
		t.Errorf("%d mutating calls recorded, want %d", got, workers*each*4)
	}
}

func TestManualClock(t *testing.T) {
	var zero ManualClock
	if !zero.Now().Equal(fakeEpoch) {
		t.Errorf("zero ManualClock reads %v, want %v", zero.Now(), fakeEpoch)
	}
	zero.Advance(time.Hour)
	if !zero.Now().Equal(fakeEpoch.Add(time.Hour)) {
		t.Errorf("after Advance(1h): %v", zero.Now())
	}
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	zero.Set(at)
	if !zero.Now().Equal(at) {
		t.Errorf("after Set: %v, want %v", zero.Now(), at)
	}
}

func TestFailCallPanicsOnAnUnknownMethod(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FailCall(\"Destroy\") did not panic")
		}
	}()
	New(Options{}).FailCall("Destroy", 1)
}

func TestFakeEventHistoryIsBounded(t *testing.T) {
	f, clock := newTestFake(t)
	id := mustCreate(t, f, managedSpec("web", "web:v1"))
	for range maxHistory + 200 {
		clock.Advance(time.Millisecond)
		_ = f.Update(testCtx, id, docker.Limits{Memory: 1 << 20})
	}
	evctx, cancel := context.WithCancel(testCtx)
	defer cancel()
	events, _ := f.Events(evctx, fakePrefix, fakeEpoch)
	got := collectEvents(t, events, maxHistory)
	select {
	case ev := <-events:
		t.Errorf("replayed more than %d events: also %+v", maxHistory, ev)
	case <-time.After(20 * time.Millisecond):
	}
	if last := got[len(got)-1]; !last.Time.Equal(clock.Now()) || last.Action != "update" {
		t.Errorf("last replayed event = %+v, want the latest update", last)
	}
}

// TestFakeExec: a command runs only in a running container and is recorded;
// the image's Behaviour gives its exit code, and a draining one turns the
// container unhealthy one probe interval later.
func TestFakeExec(t *testing.T) {
	f, clock := newTestFake(t)
	f.AddImage("drain:v1", "sha256:drain1", Behaviour{ExecDrains: true})
	f.AddImage("nodrain:v1", "sha256:nodrain1", Behaviour{ExecExitCode: 3})
	drains := mustCreate(t, f, managedSpec("rollcall-web-0-aaaaaaaa", "drain:v1"))
	fails := mustCreate(t, f, managedSpec("rollcall-web-1-bbbbbbbb", "nodrain:v1"))
	clock.Advance(time.Second)

	code, out, err := f.Exec(testCtx, drains, []string{"/demoapp", "-drain"})
	if err != nil || code != 0 {
		t.Fatalf("exec in a draining container: %d %q %v", code, out, err)
	}
	if h := mustInspect(t, f, drains).Health; h != docker.HealthHealthy {
		t.Errorf("right after the exec: health %q, want still healthy", h)
	}
	clock.Advance(time.Second)
	if h := mustInspect(t, f, drains).Health; h != docker.HealthUnhealthy {
		t.Errorf("one interval after the exec: health %q, want unhealthy", h)
	}

	code, out, err = f.Exec(testCtx, fails, []string{"/demoapp", "-drain"})
	if err != nil || code != 3 || !strings.Contains(out, "exit status 3") {
		t.Errorf("exec that fails: %d %q %v; want exit 3 and no error", code, out, err)
	}
	clock.Advance(5 * time.Second)
	if h := mustInspect(t, f, fails).Health; h != docker.HealthHealthy {
		t.Errorf("a failed exec drained the container: health %q", h)
	}

	if err := f.Stop(testCtx, fails, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.Exec(testCtx, fails, []string{"/x"}); err == nil || errors.Is(err, docker.ErrNotFound) {
		t.Errorf("exec in a stopped container: %v, want a plain error", err)
	}
	if _, _, err := f.Exec(testCtx, "nope", []string{"/x"}); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("exec in a missing container: %v, want ErrNotFound", err)
	}
	want := []string{"rollcall-web-0-aaaaaaaa: /demoapp -drain", "rollcall-web-1-bbbbbbbb: /demoapp -drain"}
	if got := f.Execs(); !slices.Equal(got, want) {
		t.Errorf("Execs = %q, want %q", got, want)
	}
	if m := f.Mutations(); !slices.Contains(m, "exec:rollcall-web-0-aaaaaaaa") {
		t.Errorf("mutations %q lack the exec", m)
	}
}

// TestFakeKeepsTheCreateSpec: the aliases and networks a container was
// created with can be read back.
func TestFakeKeepsTheCreateSpec(t *testing.T) {
	f, _ := newTestFake(t)
	spec := managedSpec("rollcall-web-0-aaaaaaaa", "web:v1")
	spec.Networks = []string{"front"}
	spec.Aliases = map[string][]string{"front": {"web", "www"}}
	id := mustCreate(t, f, spec)
	got, ok := f.CreatedWith(id)
	if !ok || !slices.Equal(got.Networks, spec.Networks) || !slices.Equal(got.Aliases["front"], []string{"web", "www"}) {
		t.Errorf("CreatedWith = %+v %v", got, ok)
	}
}

// TestFakeGivesEachContainerAnAddressPerNetwork: a fake container has an
// IPv4 address on every network it joins (bridge when its create names
// none), deterministic, and never one another container has; List and
// Inspect hand out copies.
func TestFakeGivesEachContainerAnAddressPerNetwork(t *testing.T) {
	tests := []struct {
		name     string
		networks []string
		want     map[string]string
	}{
		{"no network: the bridge", nil, map[string]string{"bridge": "172.17.0.2"}},
		{"one network", []string{"front"}, map[string]string{"front": "172.18.0.3"}},
		{"two networks", []string{"front", "back"}, map[string]string{"front": "172.18.0.4", "back": "172.19.0.4"}},
	}
	f, _ := newTestFake(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := managedSpec(fmt.Sprintf("rollcall-web-%d-aaaaaaaa", i), "web:v1")
			spec.Networks = tc.networks
			id := mustCreate(t, f, spec)
			d, err := f.Inspect(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(d.Networks, tc.want) {
				t.Errorf("Networks = %v, want %v", d.Networks, tc.want)
			}
			d.Networks["front"] = "10.0.0.1"
			again, _ := f.Inspect(context.Background(), id)
			if !maps.Equal(again.Networks, tc.want) {
				t.Errorf("a change to a copy reached the engine: %v", again.Networks)
			}
		})
	}
}
