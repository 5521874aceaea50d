package reconcile_test

// The real-engine helpers shared by the integration tests (integration_test.go)
// and the zero-downtime proof (zerodowntime_test.go). They drive
// reconciletest.Converge through the moby adapter against the local Docker
// engine, with desired states parsed from YAML text by the real loader. The
// engine, the per-test prefix, the demoapp images and the sweep of every
// container of the prefix come from the one harness, engine/docker/dockertest.
//
// The engine's healthcheck probes are docker execs, which are dear: on this
// project's 2-CPU test host, three containers probed every 200ms kept more
// than one CPU busy (about 70ms of CPU a probe), and two tests in parallel
// then starved the engine until probes timed out and healthy containers
// turned unhealthy. So the tests probe every second and give a probe 5s.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/spec"
)

var (
	imageV1 = dockertest.DemoappTag("v1") // answers "v1 <hostname>"
	imageV2 = dockertest.DemoappTag("v2") // answers "v2 <hostname>"
)

const (
	// testHealthcheck is the healthcheck of every test workload.
	testHealthcheck = `{test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 5s, retries: 2}`
	// convergeTimeout bounds one Converge; a roll of three slots takes a few
	// seconds on an idle host, and many more on a loaded one.
	convergeTimeout = 90 * time.Second
	// testTimeout bounds all that one test does with the engine.
	testTimeout = 3 * time.Minute
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// testLabel marks the containers a test makes behind rollcall's back, so
// the sweep of its prefix finds them too.
func testLabel(prefix string) string { return prefix + ".test" }

// realTest is one integration test's engine, prefix and context.
type realTest struct {
	t      *testing.T
	engine *moby.Moby
	prefix string
	ctx    context.Context // bounds the whole test
	images []string        // tags and IDs this test built, removed in cleanup
}

// newRealTest runs t in parallel with the other engine tests, under a prefix
// of its own whose containers (and images) are removed in cleanup, with the
// demoapp images v1 and v2 built.
func newRealTest(t *testing.T) *realTest {
	t.Helper()
	m := dockertest.Engine(t)
	dockertest.DemoappImage(t, "v1")
	dockertest.DemoappImage(t, "v2")
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	rt := &realTest{t: t, engine: m, ctx: ctx}
	t.Cleanup(func() { // after the sweep of the prefix, registered below
		defer cancel()
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		for _, img := range rt.images {
			if _, err := dockertest.CLI(cctx, "rmi", img); err != nil && !strings.Contains(err.Error(), "No such image") {
				t.Errorf("cleanup: %v", err)
			}
		}
	})
	rt.prefix = dockertest.Prefix(t)
	return rt
}

// removeImageInCleanup removes img (a tag or an ID) once the test's
// containers are gone.
func (rt *realTest) removeImageInCleanup(img string) { rt.images = append(rt.images, img) }

// demoWorkload is the YAML block of one demoapp workload: an ephemeral
// loopback port, a fast healthcheck, and quick stops. Each of set is a
// "key: value" line that replaces the default of that key or adds one.
func demoWorkload(name, image string, replicas int, set ...string) string {
	lines := []string{
		"image: " + image,
		"replicas: " + strconv.Itoa(replicas),
		`ports: ["127.0.0.1::8080"]`,
		"healthcheck: " + testHealthcheck,
		"stop_grace_period: 5s",
	}
	for _, s := range set {
		key, _, _ := strings.Cut(s, ":")
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, key+":") })
		if i >= 0 {
			lines[i] = s
		} else {
			lines = append(lines, s)
		}
	}
	return "  " + name + ":\n    " + strings.Join(lines, "\n    ") + "\n"
}

// desired parses the test's desired state, with the given workload blocks
// (none: "workloads: {}"), through the real loader.
func (rt *realTest) desired(workloads ...string) *spec.Desired {
	rt.t.Helper()
	return rt.desiredAt(rt.prefix, workloads...)
}

// desiredAt is desired under another prefix.
func (rt *realTest) desiredAt(prefix string, workloads ...string) *spec.Desired {
	rt.t.Helper()
	text := "prefix: " + prefix + "\n"
	if len(workloads) == 0 {
		text += "workloads: {}\n"
	} else {
		text += "workloads:\n" + strings.Join(workloads, "")
	}
	d, err := load.Parse(prefix+".yaml", []byte(text))
	if err != nil {
		rt.t.Fatalf("desired state:\n%s\n%v", text, err)
	}
	return d
}

// converge runs Converge until the plan is empty, with opts (Poll defaults
// to 200ms here), and returns every executed step's result. It fails the
// test if Converge does not converge.
func (rt *realTest) converge(d *spec.Desired, opts reconciletest.Options) []reconcile.Result {
	rt.t.Helper()
	results, err := rt.tryConverge(rt.ctx, d, opts)
	if err != nil {
		rt.t.Fatalf("Converge: %v", err)
	}
	return results
}

// tryConverge is converge returning Converge's error instead of failing.
func (rt *realTest) tryConverge(ctx context.Context, d *spec.Desired, opts reconciletest.Options) ([]reconcile.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, convergeTimeout)
	defer cancel()
	if opts.Poll == 0 {
		opts.Poll = 200 * time.Millisecond
	}
	var results []reconcile.Result
	onDone := opts.Apply.OnDone
	opts.Apply.OnDone = func(r reconcile.Result) {
		results = append(results, r)
		rt.t.Logf("%s: %v (%s)", r.Step, errText(r.Err), r.Duration.Round(time.Millisecond))
		if onDone != nil {
			onDone(r)
		}
	}
	_, err := reconciletest.Converge(ctx, rt.engine, d, opts)
	return results, err
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// list returns the test's managed containers, running or not.
func (rt *realTest) list() []docker.Container {
	rt.t.Helper()
	cs, err := rt.engine.List(rt.ctx, rt.prefix)
	if err != nil {
		rt.t.Fatalf("List: %v", err)
	}
	return cs
}

// diff is one plan for d against the engine as it is now.
func (rt *realTest) diff(d *spec.Desired) reconcile.Plan {
	rt.t.Helper()
	obs := &reconcile.Observed{Now: time.Now(), Containers: rt.list()}
	return reconcile.Diff(spec.Resolve(rt.ctx, d, rt.engine), obs)
}

// converged checks that the engine holds exactly the desired state d, and
// returns each workload's containers in slot order. Every desired slot has
// one container: running, healthy, created from the image the tag resolves
// to now, with the desired spec hash and limits. There is no other managed
// container of the prefix, running or not, and Diff has nothing to do.
func (rt *realTest) converged(d *spec.Desired) map[string][]docker.Container {
	rt.t.Helper()
	resolved := spec.Resolve(rt.ctx, d, rt.engine)
	cs := rt.list()
	got := map[string][]docker.Container{}
	for _, w := range resolved.Workloads {
		if w.Err != nil {
			rt.t.Fatalf("resolve %s: %v", w.Name, w.Err)
		}
		got[w.Name] = make([]docker.Container, w.Replicas)
	}
	for _, c := range cs {
		w := resolved.Workload(c.Labels[docker.WorkloadLabel(rt.prefix)])
		slot, err := strconv.Atoi(c.Labels[docker.SlotLabel(rt.prefix)])
		if w == nil || err != nil || slot < 0 || slot >= w.Replicas || got[w.Name][slot].ID != "" {
			rt.t.Errorf("container %s (%s, %s) is not in the desired state %s, or is a second one in its slot", c.Name, c.State, c.Health, d.Source)
			continue
		}
		want := docker.Limits{NanoCPUs: w.Resources.NanoCPUs, Memory: w.Resources.Memory, Restart: w.Restart}
		if c.State != docker.StateRunning || c.Health != docker.HealthHealthy || c.Image != w.Image || c.ImageID != w.ImageID ||
			c.Labels[docker.SpecLabel(rt.prefix)] != w.Hash || c.Limits != want {
			rt.t.Errorf("%s: %s %s, image %s (%s), spec %s, limits %+v; want running healthy, %s (%s), spec %s, limits %+v",
				c.Name, c.State, c.Health, c.Image, short(c.ImageID), c.Labels[docker.SpecLabel(rt.prefix)], c.Limits,
				w.Image, short(w.ImageID), w.Hash, want)
		}
		got[w.Name][slot] = c
	}
	for name, slots := range got {
		for i, c := range slots {
			if c.ID == "" {
				rt.t.Errorf("%s/%d has no container", name, i)
			}
		}
	}
	obs := &reconcile.Observed{Now: time.Now(), Containers: cs}
	if p := reconcile.Diff(resolved, obs); !p.Empty() {
		rt.t.Errorf("converged, yet Diff has a plan:\n%s", p)
	}
	if rt.t.Failed() {
		rt.t.FailNow()
	}
	return got
}

// waitFor polls cond every 100ms until it holds, failing with what it last
// said once timeout has passed.
func (rt *realTest) waitFor(what string, timeout time.Duration, cond func() (bool, string)) {
	rt.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) || rt.ctx.Err() != nil {
			rt.t.Fatalf("%s: not within %s; last: %s", what, timeout, state)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// docker runs the docker command line, failing the test on an error.
func (rt *realTest) docker(args ...string) string {
	rt.t.Helper()
	out, err := dockertest.CLI(rt.ctx, args...)
	if err != nil {
		rt.t.Fatal(err)
	}
	return out
}

// get asks a container's published port for / and returns the answer.
func get(ctx context.Context, c docker.Container) (string, error) {
	for _, p := range c.Ports {
		if p.ContainerPort == 8080 && p.Proto == "tcp" {
			return httpGet(ctx, fmt.Sprintf("http://%s:%d/", p.HostIP, p.HostPort))
		}
	}
	return "", fmt.Errorf("%s publishes no 8080/tcp: %+v", c.Name, c.Ports)
}

var plainClient = &http.Client{Timeout: 5 * time.Second}

func httpGet(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := plainClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", errors.New(resp.Status + ": " + string(body))
	}
	return string(body), nil
}

// actions counts the executed steps by action, failing on any step error.
func actions(t *testing.T, results []reconcile.Result) map[reconcile.Action]int {
	t.Helper()
	n := map[reconcile.Action]int{}
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("step %s failed: %v", r.Step, r.Err)
		}
		n[r.Step.Action]++
	}
	return n
}

func ids(cs []docker.Container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func short(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	return id[:min(len(id), 12)]
}
