package moby_test

// Integration tests of the moby adapter against the real Docker engine,
// through the real-engine harness (engine/docker/dockertest): each test runs
// in parallel under a label prefix of its own, whose containers are
// force-removed in cleanup, and skips only when no engine answers and
// ROLLCALL_REQUIRE_DOCKER is not "1".

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// mobyTestTimeout bounds all that one test does with the engine.
const mobyTestTimeout = 60 * time.Second

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// engineTest is one integration test's engine, prefix and context.
type engineTest struct {
	t       *testing.T
	m       *moby.Moby
	prefix  string
	ctx     context.Context
	image   string // the demoapp image: its tag and ID
	imageID string
}

// newEngineTest runs t in parallel with the other engine tests, under a
// prefix of its own whose containers are force-removed in cleanup, with the
// demoapp image (v1) built.
func newEngineTest(t *testing.T) *engineTest {
	t.Helper()
	m := dockertest.Engine(t)
	image, imageID := dockertest.DemoappImage(t, "v1")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), mobyTestTimeout)
	t.Cleanup(cancel)
	return &engineTest{t: t, m: m, prefix: dockertest.Prefix(t), ctx: ctx, image: image, imageID: imageID}
}

// unmanagedLabel marks the test's containers that lack the managed label,
// so cleanup finds them too.
func (et *engineTest) unmanagedLabel() string { return et.prefix + ".unmanaged" }

// fastHealth probes every 200ms, so health settles within a second or two.
func fastHealth() *docker.Healthcheck {
	return &docker.Healthcheck{
		Test:     []string{"CMD", "/demoapp", "-health"},
		Interval: 200 * time.Millisecond,
		Timeout:  time.Second,
		Retries:  2,
	}
}

// spec is a managed demoapp container called <prefix>-<name>, publishing
// 8080 on an ephemeral loopback port. args replace the image's CMD.
func (et *engineTest) spec(name string, args ...string) docker.CreateSpec {
	p := et.prefix
	return docker.CreateSpec{
		Name:    p + "-" + name,
		Image:   et.image,
		Command: args,
		Env:     []string{"GREETING=hello"},
		Labels: map[string]string{
			docker.ManagedLabel(p):  "true",
			docker.WorkloadLabel(p): "web",
			docker.SlotLabel(p):     "0",
			docker.SpecLabel(p):     "0123456789abcdef",
			docker.VersionLabel(p):  "1",
			"traefik.enable":        "true",
		},
		Ports:       []docker.PortSpec{{ContainerPort: 8080}},
		Healthcheck: fastHealth(),
		StopSignal:  "SIGTERM",
		StopTimeout: 5 * time.Second,
		Limits:      docker.Limits{Restart: "no"},
	}
}

func (et *engineTest) create(spec docker.CreateSpec) string {
	et.t.Helper()
	id, err := et.m.Create(et.ctx, spec)
	if err != nil {
		et.t.Fatalf("Create(%s): %v", spec.Name, err)
	}
	return id
}

func (et *engineTest) inspect(id string) docker.ContainerDetail {
	et.t.Helper()
	d, err := et.m.Inspect(et.ctx, id)
	if err != nil {
		et.t.Fatalf("Inspect(%s): %v", shortID(id), err)
	}
	return d
}

func (et *engineTest) list() []docker.Container {
	et.t.Helper()
	cs, err := et.m.List(et.ctx, et.prefix)
	if err != nil {
		et.t.Fatalf("List(%s): %v", et.prefix, err)
	}
	return cs
}

// waitFor polls cond every 100ms until it holds or timeout passes; then it
// fails with what cond last said.
func (et *engineTest) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	et.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			et.t.Fatalf("%s: not within %s; last: %s", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitHealth waits until the container's health is want.
func (et *engineTest) waitHealth(id string, want docker.Health, timeout time.Duration) docker.ContainerDetail {
	et.t.Helper()
	var d docker.ContainerDetail
	et.waitFor(fmt.Sprintf("%s turns %s", shortID(id), want), timeout, func() (bool, string) {
		d = et.inspect(id)
		return d.Health == want, fmt.Sprintf("state %s, health %q", d.State, d.Health)
	})
	return d
}

func TestMobyInfo(t *testing.T) {
	et := newEngineTest(t)
	info, err := et.m.Info(et.ctx)
	if err != nil {
		t.Fatalf("Info: %v", err)
	}
	if info.Endpoint == "" || info.Version == "" || info.Simulated {
		t.Errorf("Info = %+v, want an endpoint, a version and Simulated false", info)
	}
	if !regexp.MustCompile(`^1\.\d+$`).MatchString(info.APIVersion) {
		t.Errorf("Info.APIVersion = %q, want a negotiated 1.x", info.APIVersion)
	}
}

func TestMobyNewFailsFastWithoutEngine(t *testing.T) {
	start := time.Now()
	_, err := moby.New(context.Background(), "tcp://127.0.0.1:1")
	if err == nil {
		t.Fatal("New on a closed port: nil error")
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("New on a closed port took %s, want under the 3s connect timeout", took)
	}
}

func TestMobyRoundTrip(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("web-0") // no args: the image's CMD, -version v1
	id := et.create(spec)

	cs := et.list()
	if len(cs) != 1 || cs[0].ID != id {
		t.Fatalf("List = %d containers, want exactly the created %s", len(cs), shortID(id))
	}
	c := cs[0]
	if c.Name != spec.Name || c.Image != et.image || c.ImageID != et.imageID {
		t.Errorf("List: name %q image %q (%s), want %q %q (%s)", c.Name, c.Image, c.ImageID, spec.Name, et.image, et.imageID)
	}
	for k, v := range spec.Labels {
		if c.Labels[k] != v {
			t.Errorf("List: label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if c.State != docker.StateRunning || !c.HasHealthcheck || c.Created.IsZero() || c.StartedAt.IsZero() || !c.FinishedAt.IsZero() {
		t.Errorf("List: state %s, healthcheck %v, created %v, started %v, finished %v; want a running container with a healthcheck, started and not finished",
			c.State, c.HasHealthcheck, c.Created, c.StartedAt, c.FinishedAt)
	}
	if c.Limits != (docker.Limits{Restart: "no"}) {
		t.Errorf("List: limits %+v, want none and restart no", c.Limits)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Proto != "tcp" || c.Ports[0].HostIP != "127.0.0.1" || c.Ports[0].HostPort == 0 {
		t.Fatalf("List: ports %+v, want 8080/tcp on 127.0.0.1 at an ephemeral port", c.Ports)
	}

	url := fmt.Sprintf("http://127.0.0.1:%d/", c.Ports[0].HostPort)
	want := "v1 " + id[:12] + "\n"
	var got string
	et.waitFor("the published port answers", 10*time.Second, func() (bool, string) {
		resp, err := http.Get(url)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		got = string(b)
		return resp.StatusCode == 200, resp.Status
	})
	if got != want {
		t.Errorf("GET %s = %q, want %q", url, got, want)
	}

	d := et.inspect(id)
	if d.ID != id || d.Name != spec.Name || !d.StartedAt.Equal(c.StartedAt) {
		t.Errorf("Inspect = %s %q started %v, want what List said: %s %q started %v", d.ID, d.Name, d.StartedAt, id, spec.Name, c.StartedAt)
	}

	if err := et.m.Stop(et.ctx, id, 5*time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	d = et.inspect(id)
	if d.State != docker.StateExited || d.ExitCode != 0 || d.FinishedAt.Before(d.StartedAt) {
		t.Errorf("after Stop: state %s, exit %d, finished %v; want exited 0 (demoapp drains on SIGTERM) after the start %v", d.State, d.ExitCode, d.FinishedAt, d.StartedAt)
	}
	if err := et.m.Stop(et.ctx, id, time.Second); err != nil {
		t.Errorf("Stop of a stopped container: %v, want nil", err)
	}

	if err := et.m.Remove(et.ctx, id); err != nil {
		t.Fatalf("Remove: %v", err)
	}
	if cs := et.list(); len(cs) != 0 {
		t.Errorf("List after Remove = %d containers, want none", len(cs))
	}
	for name, err := range map[string]error{
		"Remove":  et.m.Remove(et.ctx, id),
		"Stop":    et.m.Stop(et.ctx, id, time.Second),
		"Restart": et.m.Restart(et.ctx, id, time.Second),
		"Update":  et.m.Update(et.ctx, id, docker.Limits{NanoCPUs: 1e9, Memory: 64 << 20}),
	} {
		if !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("%s of a removed container: %v, want ErrNotFound", name, err)
		}
	}
	if _, err := et.m.Inspect(et.ctx, id); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("Inspect of a removed container: %v, want ErrNotFound", err)
	}
	if _, err := et.m.Logs(et.ctx, id, docker.LogOptions{}); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("Logs of a removed container: %v, want ErrNotFound", err)
	}
}

func TestMobyHealthStartingThenHealthy(t *testing.T) {
	et := newEngineTest(t)
	id := et.create(et.spec("ready", "-ready-delay", "1s"))
	if d := et.inspect(id); d.Health != docker.HealthStarting {
		t.Errorf("health right after create = %q, want %q (ready only after 1s)", d.Health, docker.HealthStarting)
	}
	d := et.waitHealth(id, docker.HealthHealthy, 15*time.Second)
	if len(d.HealthLog) == 0 {
		t.Fatal("healthy, but the health log is empty")
	}
	if last := d.HealthLog[len(d.HealthLog)-1]; last.ExitCode != 0 || last.End.Before(last.Start) {
		t.Errorf("last health probe = %+v, want exit 0", last)
	}
	if c := et.list(); len(c) != 1 || c[0].Health != docker.HealthHealthy {
		t.Errorf("List after healthy = %+v, want one healthy container", c)
	}
}

func TestMobyHealthTurnsUnhealthy(t *testing.T) {
	et := newEngineTest(t)
	id := et.create(et.spec("sick", "-fail-health-after", "1s"))
	d := et.waitHealth(id, docker.HealthUnhealthy, 15*time.Second)
	if d.State != docker.StateRunning {
		t.Errorf("unhealthy container state = %s, want running (health does not stop it)", d.State)
	}
	// Inspect carries the probes' output. On a loaded machine a probe may
	// time out instead of seeing the 503; both are failures with output.
	last := d.HealthLog[len(d.HealthLog)-1]
	if last.ExitCode == 0 || last.Output == "" {
		t.Errorf("last health probe = %+v, want a failure with its output", last)
	}
	saw503 := false
	for _, p := range d.HealthLog {
		saw503 = saw503 || (p.ExitCode != 0 && strings.Contains(p.Output, "503"))
	}
	if !saw503 && !strings.Contains(last.Output, "timeout") {
		t.Errorf("health log %+v: no probe shows the 503, and the last did not time out", d.HealthLog)
	}
}

func TestMobyCrashedContainer(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("crashy", "-crash-after", "300ms", "-exit-code", "3")
	spec.Limits.Restart = "on-failure:1"
	id := et.create(spec)
	var d docker.ContainerDetail
	et.waitFor("the engine gives up restarting", 20*time.Second, func() (bool, string) {
		d = et.inspect(id)
		return d.State == docker.StateExited && d.RestartCount == 1, fmt.Sprintf("state %s, restarts %d", d.State, d.RestartCount)
	})
	if d.ExitCode != 3 || d.OOMKilled || d.FinishedAt.Before(d.StartedAt) || d.Limits.Restart != "on-failure:1" {
		t.Errorf("crashed container: exit %d, OOM %v, started %v, finished %v, restart %q; want exit 3, no OOM, finished after started, on-failure:1",
			d.ExitCode, d.OOMKilled, d.StartedAt, d.FinishedAt, d.Limits.Restart)
	}
}

func TestMobyNoHealthcheckDisablesTheImages(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("plain")
	spec.Healthcheck = nil
	id := et.create(spec)
	d := et.inspect(id)
	if d.HasHealthcheck || d.Health != docker.HealthNone || len(d.HealthLog) != 0 {
		t.Errorf("container without healthcheck: has %v, health %q, log %d; want none", d.HasHealthcheck, d.Health, len(d.HealthLog))
	}
	r, err := moby.MobyClient(et.m).ContainerInspect(et.ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if hc := r.Container.Config.Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"NONE"}) {
		t.Errorf("engine healthcheck = %+v, want Test [NONE] so nothing is inherited", hc)
	}
}

func TestMobyUpdateInPlace(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("limits")
	spec.Limits = docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "no"}
	id := et.create(spec)
	before := et.inspect(id)
	if before.Limits != spec.Limits {
		t.Fatalf("limits after create = %+v, want %+v", before.Limits, spec.Limits)
	}
	et.assertSwap(id, 64<<20)

	steps := []struct {
		name string
		set  docker.Limits
		want docker.Limits
	}{
		{"lower memory below the current swap", docker.Limits{NanoCPUs: 1e9, Memory: 32 << 20, Restart: "on-failure:3"}, docker.Limits{NanoCPUs: 1e9, Memory: 32 << 20, Restart: "on-failure:3"}},
		{"raise memory above the current swap", docker.Limits{NanoCPUs: 25e7, Memory: 128 << 20, Restart: "unless-stopped"}, docker.Limits{NanoCPUs: 25e7, Memory: 128 << 20, Restart: "unless-stopped"}},
		{"empty restart keeps the policy", docker.Limits{NanoCPUs: 25e7, Memory: 96 << 20}, docker.Limits{NanoCPUs: 25e7, Memory: 96 << 20, Restart: "unless-stopped"}},
	}
	for _, s := range steps {
		if err := et.m.Update(et.ctx, id, s.set); err != nil {
			t.Fatalf("%s: Update(%+v): %v", s.name, s.set, err)
		}
		after := et.inspect(id)
		if after.ID != id || !after.StartedAt.Equal(before.StartedAt) || after.State != docker.StateRunning || after.RestartCount != 0 {
			t.Errorf("%s: after Update: %s started %v (%s, restarts %d), want the same running container started %v",
				s.name, shortID(after.ID), after.StartedAt, after.State, after.RestartCount, before.StartedAt)
		}
		if after.Limits != s.want {
			t.Errorf("%s: limits after Update = %+v, want %+v", s.name, after.Limits, s.want)
		}
		et.assertSwap(id, s.want.Memory)
	}

	for _, lift := range []docker.Limits{{NanoCPUs: 0, Memory: 96 << 20}, {NanoCPUs: 25e7, Memory: 0}} {
		if err := et.m.Update(et.ctx, id, lift); err == nil || !strings.Contains(err.Error(), "cannot lift") {
			t.Errorf("Update(%+v) lifting a limit: %v, want a cannot-lift error", lift, err)
		}
	}
	if err := et.m.Update(et.ctx, id, docker.Limits{NanoCPUs: 1e9, Memory: 64 << 20, Restart: "sometimes"}); err == nil {
		t.Error("Update with an unknown restart policy: nil error")
	}
}

// assertSwap checks that the container has no swap beyond its memory.
func (et *engineTest) assertSwap(id string, memory int64) {
	et.t.Helper()
	r, err := moby.MobyClient(et.m).ContainerInspect(et.ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		et.t.Fatal(err)
	}
	if got := r.Container.HostConfig.MemorySwap; got != memory {
		et.t.Errorf("MemorySwap = %d, want %d (equal to Memory: no swap)", got, memory)
	}
}

func TestMobyRestartInPlace(t *testing.T) {
	et := newEngineTest(t)
	id := et.create(et.spec("again"))
	before := et.inspect(id)
	if err := et.m.Restart(et.ctx, id, 5*time.Second); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	after := et.inspect(id)
	if after.ID != id || after.State != docker.StateRunning || !after.StartedAt.After(before.StartedAt) {
		t.Errorf("after Restart: %s %s started %v, want %s running, started after %v", shortID(after.ID), after.State, after.StartedAt, shortID(id), before.StartedAt)
	}
}

func TestMobyNameConflict(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("twice")
	first := et.create(spec)
	_, err := et.m.Create(et.ctx, spec)
	if !errors.Is(err, docker.ErrConflict) {
		t.Fatalf("second Create(%s): %v, want ErrConflict", spec.Name, err)
	}
	if !strings.Contains(err.Error(), "create "+spec.Name) {
		t.Errorf("error %q does not name the verb and the container", err)
	}
	if cs := et.list(); len(cs) != 1 || cs[0].ID != first {
		t.Errorf("after the conflict, List = %d containers, want only the first", len(cs))
	}
}

func TestMobyCreateMissingImage(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("ghost")
	spec.Image = "rollcall-nope:" + dockertest.Run
	if _, err := et.m.Create(et.ctx, spec); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("Create from a missing image: %v, want ErrNotFound", err)
	}
	if cs := et.list(); len(cs) != 0 {
		t.Errorf("List = %d containers, want none", len(cs))
	}
}

func TestMobyStartFailureRemovesTheContainer(t *testing.T) {
	et := newEngineTest(t)
	spec := et.spec("broken", "/nope")
	spec.Image = et.emptyImage() // no entrypoint, so /nope is the whole command
	_, err := et.m.Create(et.ctx, spec)
	if err == nil {
		t.Fatal("Create of a container whose command does not exist: nil error")
	}
	if !strings.Contains(err.Error(), "start "+spec.Name) || errors.Is(err, docker.ErrConflict) || errors.Is(err, docker.ErrNotFound) {
		t.Errorf("Create error = %v, want a start error", err)
	}
	f := client.Filters{}
	f.Add("name", spec.Name)
	res, lerr := moby.MobyClient(et.m).ContainerList(et.ctx, client.ContainerListOptions{All: true, Filters: f})
	if lerr != nil {
		t.Fatal(lerr)
	}
	if len(res.Items) != 0 {
		t.Errorf("after the failed start, %d containers named %s remain, want none", len(res.Items), spec.Name)
	}
	// The name is free again, so a corrected retry is not a conflict.
	spec.Image, spec.Command = et.image, nil
	et.create(spec)
}

// emptyImage builds an image FROM scratch with no files at all, removed in
// cleanup.
func (et *engineTest) emptyImage() string {
	et.t.Helper()
	tag := "rollcall-test-empty:" + et.prefix
	if _, err := dockertest.ImageBuilder(et.t).BuildImage(et.ctx, tag, map[string][]byte{
		"Dockerfile": []byte("FROM scratch\nLABEL rollcall.test=empty\n"),
	}); err != nil {
		et.t.Fatal(err)
	}
	et.t.Cleanup(func() {
		if _, err := dockertest.CLI(context.Background(), "rmi", tag); err != nil {
			et.t.Errorf("cleanup: %v", err)
		}
	})
	return tag
}

// startUnmanaged starts a demoapp container straight through the moby
// client, without the managed label, as something else on the host would.
func (et *engineTest) startUnmanaged(name string) string {
	et.t.Helper()
	res, err := moby.MobyClient(et.m).ContainerCreate(et.ctx, client.ContainerCreateOptions{
		Name: et.prefix + "-" + name,
		Config: &container.Config{
			Image:  et.image,
			Labels: map[string]string{et.unmanagedLabel(): "true", docker.WorkloadLabel(et.prefix): "web"},
		},
	})
	if err != nil {
		et.t.Fatalf("create unmanaged %s: %v", name, err)
	}
	if _, err := moby.MobyClient(et.m).ContainerStart(et.ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		et.t.Fatalf("start unmanaged %s: %v", name, err)
	}
	return res.ID
}

func TestMobyUnlabelledContainerIsInvisible(t *testing.T) {
	et := newEngineTest(t)
	stray := et.startUnmanaged("stray")
	managed := et.create(et.spec("web-0"))
	cs := et.list()
	if len(cs) != 1 || cs[0].ID != managed {
		ids := []string{}
		for _, c := range cs {
			ids = append(ids, shortID(c.ID))
		}
		t.Errorf("List = %v, want only the managed %s (not the unlabelled %s)", ids, shortID(managed), shortID(stray))
	}
}

func TestMobyEvents(t *testing.T) {
	et := newEngineTest(t)
	subscribed := time.Now()
	evctx, cancel := context.WithCancel(et.ctx)
	defer cancel()
	events, errc := et.m.Events(evctx, et.prefix, time.Time{})

	// The unlabelled container goes first: events arrive in order, so had it
	// leaked into the stream, it would show before the managed one's.
	stray := et.startUnmanaged("stray")
	managed := et.create(et.spec("web-0"))

	seen := map[string]bool{}
	var got []docker.Event
	deadline := time.After(20 * time.Second)
	for !seen["start"] || !seen["health_status: healthy"] {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("event channel closed early")
			}
			got = append(got, ev)
			if ev.ContainerID == stray {
				t.Errorf("event %q for the unlabelled container", ev.Action)
			}
			if ev.ContainerID == managed {
				seen[ev.Action] = true
				if ev.Name != et.prefix+"-web-0" || ev.Attributes[docker.ManagedLabel(et.prefix)] != "true" || ev.Time.Before(subscribed.Add(-time.Second)) {
					t.Errorf("event %+v: want the container's name, its labels and a current time", ev)
				}
			}
			if strings.HasPrefix(ev.Action, "exec_") {
				t.Errorf("healthcheck exec event %q delivered", ev.Action)
			}
		case err := <-errc:
			t.Fatalf("event stream error: %v", err)
		case <-deadline:
			t.Fatalf("no start and health_status: healthy for %s within 20s; got %v", shortID(managed), eventActions(got))
		}
	}

	// A new subscription from before the create replays what it missed,
	// each event once.
	rctx, rcancel := context.WithCancel(et.ctx)
	defer rcancel()
	replay, _ := et.m.Events(rctx, et.prefix, subscribed.Add(-time.Second))
	count := map[string]int{}
	timeout := time.After(10 * time.Second)
	for count["health_status: healthy"] == 0 {
		select {
		case ev := <-replay:
			count[ev.Action]++
		case <-timeout:
			t.Fatalf("replay since %v did not reach health_status: healthy; got %v", subscribed, count)
		}
	}
	if count["create"] != 1 || count["start"] != 1 {
		t.Errorf("replay counts = %v, want create and start once each", count)
	}

	cancel()
	waitClosed(t, "event", events)
	waitClosed(t, "error", errc)
}

// waitClosed drains ch until it is closed, failing after 5s.
func waitClosed[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	end := time.After(5 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-end:
			t.Fatalf("%s channel not closed within 5s of the context ending", what)
		}
	}
}

func eventActions(evs []docker.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		if ev.Type == docker.EventImage {
			out[i] = "image " + ev.Name + " " + ev.Action
			continue
		}
		out[i] = shortID(ev.ContainerID) + " " + ev.Action
	}
	return out
}

func TestMobyLogs(t *testing.T) {
	et := newEngineTest(t)
	// Not ready for a minute: every health probe fails and demoapp says so
	// on stderr, while its start line went to stdout.
	id := et.create(et.spec("talky", "-ready-delay", "1m"))

	lctx, cancel := context.WithCancel(et.ctx)
	defer cancel()
	lines, err := et.m.Logs(lctx, id, docker.LogOptions{Follow: true})
	if err != nil {
		t.Fatalf("Logs: %v", err)
	}
	var stdout, stderr []docker.LogLine
	deadline := time.After(15 * time.Second)
	for len(stdout) == 0 || len(stderr) == 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("log channel closed while following a running container")
			}
			if time.Since(l.Time) > time.Minute || time.Until(l.Time) > time.Minute {
				t.Errorf("line %+v: timestamp not parsed", l)
			}
			switch l.Stream {
			case "stdout":
				stdout = append(stdout, l)
			case "stderr":
				stderr = append(stderr, l)
			default:
				t.Errorf("line %+v: unknown stream", l)
			}
		case <-deadline:
			t.Fatalf("no stdout and stderr lines within 15s: stdout %v, stderr %v", stdout, stderr)
		}
	}
	if !strings.HasPrefix(stdout[0].Text, "demoapp: serving on") {
		t.Errorf("first stdout line = %q, want the start line", stdout[0].Text)
	}
	if !strings.HasPrefix(stderr[0].Text, "demoapp: health: not ready") {
		t.Errorf("first stderr line = %q, want a health failure", stderr[0].Text)
	}
	cancel()

	tail, err := et.m.Logs(et.ctx, id, docker.LogOptions{Tail: 1})
	if err != nil {
		t.Fatalf("Logs(Tail 1): %v", err)
	}
	var got []docker.LogLine
	for l := range tail {
		got = append(got, l)
	}
	if len(got) != 1 {
		t.Errorf("Logs(Tail 1) = %d lines, want 1: %v", len(got), got)
	}
}

func TestMobyImageInspect(t *testing.T) {
	et := newEngineTest(t)
	img, err := et.m.ImageInspect(et.ctx, et.image)
	if err != nil {
		t.Fatalf("ImageInspect(%s): %v", et.image, err)
	}
	if img.ID != et.imageID || !slices.Contains(img.RepoTags, et.image) {
		t.Errorf("ImageInspect(%s) = %+v, want ID %s and the tag", et.image, img, et.imageID)
	}
	missing := "rollcall-nope:" + dockertest.Run
	if _, err := et.m.ImageInspect(et.ctx, missing); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("ImageInspect(%s): %v, want ErrNotFound", missing, err)
	}
}

func TestMobyBuildImageErrors(t *testing.T) {
	et := newEngineTest(t)
	tag := "rollcall-broken:" + dockertest.Run
	if _, err := et.m.BuildImage(et.ctx, tag, map[string][]byte{"demoapp": nil}); err == nil {
		t.Error("BuildImage without a Dockerfile: nil error")
	}
	_, err := et.m.BuildImage(et.ctx, tag, map[string][]byte{"Dockerfile": []byte("FROM scratch\nCOPY missing /missing\n")})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("BuildImage copying a missing file: %v, want the builder's error", err)
	}
}

// shortID is the 12-character form of an ID, for messages; a shorter one
// (an image event's empty container ID, a name) is given whole.
func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// TestMobyImageEvents: the stream carries images' events too, so a tag
// rebuilt in place is seen at once (the session resolves the images again
// on each).
func TestMobyImageEvents(t *testing.T) {
	et := newEngineTest(t)
	image, _ := dockertest.DemoappImage(t, "v1")
	tag := "rollcall-imgevent:" + et.prefix
	evctx, cancel := context.WithCancel(et.ctx)
	defer cancel()
	events, errc := et.m.Events(evctx, et.prefix, time.Time{})
	time.Sleep(200 * time.Millisecond) // both streams connected
	if _, err := dockertest.CLI(et.ctx, "tag", image, tag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dockertest.CLI(context.Background(), "rmi", tag) })
	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev.Type == docker.EventImage && ev.Action == "tag" && ev.Name == tag {
				if ev.ContainerID != "" || ev.Time.IsZero() {
					t.Errorf("image event %+v: want no container and a time", ev)
				}
				return
			}
		case err := <-errc:
			t.Fatalf("event stream error: %v", err)
		case <-deadline:
			t.Fatalf("no image tag event for %s within 20s", tag)
		}
	}
}
