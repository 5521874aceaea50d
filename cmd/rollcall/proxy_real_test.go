package main

// The zero-downtime proof through a real proxy (issue 13, DESIGN §10): Caddy,
// built from its Go module at a pinned version (examples/caddy/build.sh) with
// examples/Caddyfile, sits on a user-defined network in front of three
// demoapp replicas, which it finds through the engine's socket and routes to
// while they are healthy (`dynamic rollcall`, examples/caddy/rollcallup). The
// real rollcall binary rolls them with `apply`, its drains waiting for Caddy
// to let go (proxy.caddy_admin), while clients send requests back to back
// through Caddy, and not one may fail. The control run then takes the drain and the
// graceful shutdown away, and requests must fail: the test can tell.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
)

// caddyVersion is the Caddy module version the test builds; it is in the
// cached image's tag.
const caddyVersion = "2.11.9"

// Traffic through Caddy: proxyClients send requests back to back, each
// a POST (Caddy never retries a POST whose request reached the upstream, so
// a request cut in flight shows as a failure; a GET would be retried
// elsewhere and hide it). Every loop is bounded in count and in time.
const (
	proxyClients  = 3
	maxPerClient  = 20000 // per phase: a bound, never reached at demoapp's -latency
	idlePerClient = 300
	// minPerScenario is a scenario's meaningful share of the total: enough
	// that requests were in flight at each of its stops. Alone on the
	// machine a scenario serves thousands; the shortest (the rollback, one
	// start that never gets healthy and its stop) served 397 beside a
	// second whole suite (7 Dec 2026), so the floor leaves room for that.
	minPerScenario     = 250
	minRollRequests    = 2000
	demoLatency        = "5ms" // each answer takes this long: requests are in flight at every stop
	proxyPhaseDeadline = 3 * time.Minute
	controlClients     = 8
)

// caddyImage builds rollcall-caddy:<version>-<hash of the build inputs> with
// examples/caddy/build.sh unless the engine has it already, and returns its
// tag. The tag is kept across runs (a warm machine does not rebuild); a
// change to the Caddyfile, the Dockerfile, build.sh or examples/caddy's
// module (go.mod, go.sum, its .go files) makes a new one.
// ROLLCALL_CADDY_IMAGE names an image built already from this tree (.ci/run
// builds it with build.sh before the tests, so that a cold run compiles
// Caddy once): the test uses it and builds none.
// Without the Go module proxy the build cannot happen: that skips (see
// dockertest.Skip), and fails under ROLLCALL_REQUIRE_DOCKER=1.
func caddyImage(t *testing.T, ctx context.Context) string {
	t.Helper()
	if tag := os.Getenv("ROLLCALL_CADDY_IMAGE"); tag != "" {
		if _, err := dockertest.CLI(ctx, "image", "inspect", "--format", "{{.Id}}", tag); err != nil {
			t.Fatalf("ROLLCALL_CADDY_IMAGE=%s: the engine has no such image: %v", tag, err)
		}
		t.Logf("Caddy image %s: ROLLCALL_CADDY_IMAGE", tag)
		return tag
	}
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	inputs := []string{"Caddyfile", "caddy/Dockerfile", "caddy/build.sh", "caddy/go.mod", "caddy/go.sum", "caddy/main.go"}
	sources, err := filepath.Glob(filepath.Join(examples, "caddy", "rollcallup", "*.go"))
	if err != nil || len(sources) == 0 {
		t.Fatalf("examples/caddy/rollcallup: no sources (%v)", err)
	}
	for _, f := range sources {
		inputs = append(inputs, filepath.Join("caddy", "rollcallup", filepath.Base(f)))
	}
	for _, f := range inputs {
		b, err := os.ReadFile(filepath.Join(examples, f))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	tag := "rollcall-caddy:" + caddyVersion + "-" + hex.EncodeToString(h.Sum(nil))[:8]
	if _, err := dockertest.CLI(ctx, "image", "inspect", "--format", "{{.Id}}", tag); err == nil {
		t.Logf("Caddy image %s: cached", tag)
		return tag
	}
	began := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(examples, "caddy", "build.sh"))
	cmd.Env = append(os.Environ(), "CADDY_VERSION="+caddyVersion, "CADDY_IMAGE="+tag)
	out, err := cmd.CombinedOutput()
	if err != nil {
		dockertest.Skip(t, fmt.Errorf("cannot build Caddy %s from its Go module with examples/caddy/build.sh "+
			"(it needs the go command and the Go module proxy, GOPROXY=%s): %v\n%s",
			caddyVersion, goEnv("GOPROXY"), err, lastLines(string(out), 15)))
	}
	t.Logf("Caddy image %s: built in %s", tag, time.Since(began).Round(time.Second))
	return tag
}

// engineSocket is the engine's unix socket on this host, for Caddy's
// container to mount: DOCKER_HOST's when it names one, else the default.
func engineSocket() string {
	if p, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		return p
	}
	return "/var/run/docker.sock"
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// proxyWorkload is the desired file of one phase.
type proxyWorkload struct {
	prefix, image, network string
	admin                  string // Caddy's admin API: proxy.caddy_admin
	version                string // the version field and demoapp's -version
	strategy               string // rolling | blue-green
	extraArgs              []string
	drain                  bool // pre_stop demoapp -drain and update.drain 5s
	healthDeadline         string
}

func (w proxyWorkload) yaml() string {
	args := []string{`"-listen"`, `":8080"`, `"-version"`, `"` + w.version + `"`, `"-latency"`, `"` + demoLatency + `"`}
	for _, a := range w.extraArgs {
		args = append(args, `"`+a+`"`)
	}
	drain := ""
	if w.drain {
		drain = "\n    pre_stop: [\"CMD\", \"/demoapp\", \"-drain\"]"
	}
	updateDrain := ""
	if w.drain {
		updateDrain = ", drain: 5s"
	}
	proxy := ""
	if w.admin != "" {
		proxy = "proxy: {caddy_admin: \"" + w.admin + "\"}\n"
	}
	return `prefix: ` + w.prefix + `
` + proxy + `workloads:
  web:
    image: ` + w.image + `
    version: "` + w.version + `"
    replicas: 3
    command: [` + strings.Join(args, ", ") + `]
    networks: [` + w.network + `]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 1s, retries: 2, start_period: 1s}` + drain + `
    stop_grace_period: 10s
    resources: {memory: 64M}
    update: {strategy: ` + w.strategy + `, parallelism: 1, order: start-first, health_deadline: ` + w.healthDeadline + `, failure_action: rollback` + updateDrain + `}
`
}

// phaseResult is what the clients saw during one phase.
type phaseResult struct {
	name      string
	requests  int
	failures  int
	firstErrs []string       // the first few failures, for the log
	versions  map[string]int // answers per version
	latencies []time.Duration
}

func (r phaseResult) percentile(p float64) time.Duration {
	if len(r.latencies) == 0 {
		return 0
	}
	s := slices.Clone(r.latencies)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (r phaseResult) String() string {
	return fmt.Sprintf("%-12s %6d requests, %3d failed, p50 %6s, p99 %6s, answers by version %v",
		r.name, r.requests, r.failures, r.percentile(0.50).Round(10*time.Microsecond),
		r.percentile(0.99).Round(10*time.Microsecond), r.versions)
}

// traffic runs clients against url until stop is closed or
// each has sent perClient requests, whichever is first, within ctx.
func traffic(ctx context.Context, name, url string, clients, perClient int, stop <-chan struct{}) phaseResult {
	var mu sync.Mutex
	res := phaseResult{name: name, versions: map[string]int{}}
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tr := &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 15 * time.Second}
			for i := 0; i < perClient; i++ {
				select {
				case <-stop:
					return
				case <-ctx.Done():
					return
				default:
				}
				began := time.Now()
				version, err := post(ctx, c, url)
				took := time.Since(began)
				mu.Lock()
				res.requests++
				res.latencies = append(res.latencies, took)
				if err != nil {
					res.failures++
					if len(res.firstErrs) < 5 {
						res.firstErrs = append(res.firstErrs, fmt.Sprintf("%s: %v", began.Format("15:04:05.000"), err))
					}
				} else {
					res.versions[version]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return res
}

// post sends one request and returns the version that answered, or why
// the request failed: no answer, a status other than 200, or a body that
// is not demoapp's.
func post(ctx context.Context, c *http.Client, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("ping"))
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return "", fmt.Errorf("read answer: %w", err)
	}
	version, _, ok := strings.Cut(string(body), " ")
	if resp.StatusCode != http.StatusOK || !ok || !strings.HasPrefix(version, "v") {
		return "", fmt.Errorf("%s: %q", resp.Status, strings.TrimSpace(string(body)))
	}
	return version, nil
}

// TestRealEngineZeroDowntimeThroughCaddy: see the file comment. Phases, in
// order, on one Caddy and one network: a first apply (v1, no traffic
// counted); idle traffic; a start-first roll (v2); a blue-green roll (v3); a
// forced recreate (apply --recreate); a rollback of v4, whose health never
// passes (apply exits 1, v3 keeps serving); then the control: a roll between
// two versions with -graceful=false and no pre_stop or drain, which must
// fail requests.
func TestRealEngineZeroDowntimeThroughCaddy(t *testing.T) {
	dockertest.Engine(t)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
	defer cancel()
	caddy := caddyImage(t, ctx)
	prefix := dockertest.Prefix(t)
	image, _ := dockertest.DemoappImage(t, "v1")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)

	network, url, admin := startCaddy(t, ctx, caddy, prefix)

	file := filepath.Join(dir, "rollcall.yaml")
	journalPath := filepath.Join(dir, "journal.jsonl")
	base := proxyWorkload{prefix: prefix, image: image, network: network, admin: admin, strategy: "rolling", drain: true, healthDeadline: "30s"}
	apply := func(w proxyWorkload, extra ...string) binResult {
		t.Helper()
		if err := os.WriteFile(file, []byte(w.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"--journal", journalPath, "apply", "--yes", "--allow-mass-stop", "--timeout", "3m", "-f", file}, extra...)
		return runBinary(t, ctx, bin, args...)
	}
	// during runs the clients while fn rolls, and returns what they saw.
	during := func(name string, clients int, fn func()) phaseResult {
		t.Helper()
		stop := make(chan struct{})
		pctx, pcancel := context.WithTimeout(ctx, proxyPhaseDeadline)
		defer pcancel()
		got := make(chan phaseResult, 1)
		go func() { got <- traffic(pctx, name, url, clients, maxPerClient, stop) }()
		time.Sleep(300 * time.Millisecond) // the clients are going before the roll begins
		fn()
		time.Sleep(time.Second) // and after it ends: Caddy's refresh of "web"
		close(stop)
		return <-got
	}

	// Every drain of a roll ends because Caddy let go of the old container
	// (its /rollcall/upstreams no longer lists it, nothing in flight), not
	// on the engine's "unhealthy" nor at the end of update.drain.
	// released: the drains of a phase end as Caddy lets go of the old
	// containers. One may end on the engine's unhealthy instead, where a
	// question to the admin API failed (drainEnd's fallback when the
	// proxy cannot tell: beside a second suite, at a load average of 20,
	// one of three did); the phase's clients must still see no failed
	// request (checked below, per phase). A drain that ran out its time never passes.
	released := func(phase string, res binResult) {
		t.Helper()
		n := strings.Count(res.stderr, "drained: released")
		u := strings.Count(res.stderr, "drained: unhealthy")
		if n == 0 || u > 1 || strings.Contains(res.stderr, "drained: timeout") {
			t.Errorf("%s: want the drains to end as released by Caddy (%d did, %d on unhealthy)\n%s", phase, n, u, res.stderr)
		}
	}
	v1 := base
	v1.version = "v1"
	if res := apply(v1); res.code != exitOK {
		t.Fatalf("first apply: exit %d\n%s", res.code, res.stderr)
	}
	// Caddy finds the replicas within its refresh of "web" (1s).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if v, err := post(ctx, http.DefaultClient, url); err == nil && v == "v1" {
			break
		} else if time.Now().After(deadline) {
			logs, _ := dockertest.CLI(ctx, "logs", "--tail", "20", prefix+"-caddy")
			t.Fatalf("no answer through Caddy 30s after the first apply: %v\n%s", err, logs)
		}
	}
	idle := traffic(ctx, "idle", url, proxyClients, idlePerClient, nil)

	var rolls []phaseResult
	v2 := base
	v2.version = "v2"
	rolls = append(rolls, during("start-first", proxyClients, func() {
		res := apply(v2)
		if res.code != exitOK {
			t.Errorf("start-first roll: exit %d\n%s", res.code, res.stderr)
		}
		released("start-first", res)
	}))
	v3 := base
	v3.version, v3.strategy = "v3", "blue-green"
	rolls = append(rolls, during("blue-green", proxyClients, func() {
		res := apply(v3)
		if res.code != exitOK {
			t.Errorf("blue-green roll: exit %d\n%s", res.code, res.stderr)
		}
		released("blue-green", res)
	}))
	rolls = append(rolls, during("recreate", proxyClients, func() {
		res := apply(v3, "--recreate")
		if res.code != exitOK || !strings.Contains(res.stderr, "roll") {
			t.Errorf("apply --recreate: exit %d\n%s", res.code, res.stderr)
		}
		released("recreate", res)
	}))
	v4 := base
	v4.version, v4.extraArgs, v4.healthDeadline = "v4", []string{"-ready-delay", "1h"}, "6s"
	rolls = append(rolls, during("rollback", proxyClients, func() {
		if res := apply(v4); res.code != exitFailed || !strings.Contains(res.stderr, "roll") {
			t.Errorf("apply of a version whose health never passes: exit %d, want %d (rolled back)\n%s", res.code, exitFailed, res.stderr)
		}
	}))
	if v, err := post(ctx, http.DefaultClient, url); err != nil || v != "v3" {
		t.Errorf("after the rollback: %q %v, want v3 answering", v, err)
	}

	// The control: no pre_stop, no drain, and demoapp cuts what it has in
	// flight on SIGTERM. First move to it (drained, uncounted), then roll it.
	c1 := base
	// More clients and slower answers than the rolls, so that every stop
	// finds requests in flight: with 8 clients each stop misses them all
	// about once in 25, and all three stops of the roll about once in 10^4.
	c1.version, c1.extraArgs, c1.drain = "v5", []string{"-graceful=false", "-latency", "50ms"}, false
	if res := apply(c1); res.code != exitOK {
		t.Fatalf("apply of the control version: exit %d\n%s", res.code, res.stderr)
	}
	c2 := c1
	c2.version = "v6"
	control := during("control", controlClients, func() {
		if res := apply(c2); res.code != exitOK {
			t.Errorf("control roll: exit %d\n%s", res.code, res.stderr)
		}
	})

	t.Logf("through Caddy %s, %d clients sending POSTs back to back, demoapp -latency %s, 3 replicas, healthcheck every 1s:", caddyVersion, proxyClients, demoLatency)
	t.Log(idle)
	total := phaseResult{name: "all rolls", versions: map[string]int{}}
	for _, r := range rolls {
		t.Log(r)
		for _, e := range r.firstErrs {
			t.Logf("  %s failed: %s", r.name, e)
		}
		total.requests += r.requests
		total.failures += r.failures
		total.latencies = append(total.latencies, r.latencies...)
		for v, n := range r.versions {
			total.versions[v] += n
		}
		if r.failures > 0 {
			t.Errorf("%s: %d of %d requests failed through Caddy; want 0", r.name, r.failures, r.requests)
		}
		if r.requests < minPerScenario {
			t.Errorf("%s: only %d requests during the roll, want at least %d", r.name, r.requests, minPerScenario)
		}
	}
	t.Log(total)
	t.Log(control)
	for _, e := range control.firstErrs {
		t.Logf("  control failed: %s", e)
	}
	if idle.failures > 0 {
		t.Errorf("idle: %d of %d requests failed with nothing rolling", idle.failures, idle.requests)
	}
	if total.requests < minRollRequests {
		t.Errorf("%d requests during the rolls, want at least %d", total.requests, minRollRequests)
	}
	if control.failures == 0 {
		t.Errorf("control (-graceful=false, no pre_stop, no drain): 0 of %d requests failed; want failures, or the test cannot tell", control.requests)
	}
	if p50 := idle.percentile(0.5); p50 > 0 {
		t.Logf("p50 during the rolls / idle: %.2f; p99: %.2f", float64(total.percentile(0.5))/float64(p50), float64(total.percentile(0.99))/float64(idle.percentile(0.99)))
	}
	t.Logf("the test took %s", time.Since(began).Round(time.Second))
}

// caddySocketDir is where the shipped Caddyfile puts its admin socket
// (examples/Caddyfile: admin unix//run/rollcall-caddy/admin.sock), in
// Caddy's container: a directory of the host is mounted there.
const caddySocketDir = "/run/rollcall-caddy"

// startCaddy starts the Caddy image caddy on a network of prefix's own
// (prefix-front), finding the containers through the engine's socket
// (examples/Caddyfile: dynamic rollcall) on this test's prefix and network.
// Its admin API listens on a unix socket in a directory of this test's own
// mounted at caddySocketDir, as the README's recipe has it: nothing on the
// network reaches it. It returns the network, the proxied URL and the admin
// API's address (unix:///…/admin.sock, proxy.caddy_admin); all go at the
// test's end, after its containers are swept off the network.
func startCaddy(t *testing.T, ctx context.Context, caddy, prefix string) (network, url, admin string) {
	t.Helper()
	// Not t.TempDir: its path can pass the 107 bytes of a socket's path.
	sockDir, err := os.MkdirTemp("", "rc-caddy-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) }) // runs last: after Caddy is gone
	network = prefix + "-front"
	if _, err := dockertest.CLI(ctx, "network", "create", "--label", prefix+".test=true", "--label", dockertest.RunLabelArg, network); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		// The sweep of Prefix runs after this cleanup: take the
		// containers off the network first.
		if err := dockertest.Sweep(cctx, prefix); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if _, err := dockertest.CLI(cctx, "network", "rm", network); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	// Caddy finds the containers through the engine's socket
	// (examples/Caddyfile: dynamic rollcall), on this test's prefix and
	// network.
	if _, err := dockertest.CLI(ctx, "run", "-d", "--name", prefix+"-caddy", "--network", network,
		"--label", prefix+".test=true", "--label", dockertest.RunLabelArg, "-p", "127.0.0.1::8080",
		"-v", engineSocket()+":/var/run/docker.sock", "-v", sockDir+":"+caddySocketDir,
		"-e", "ROLLCALL_PREFIX="+prefix, "-e", "ROLLCALL_NETWORK="+network,
		caddy); err != nil {
		t.Fatal(err)
	}
	out, err := dockertest.CLI(ctx, "port", prefix+"-caddy", "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	url = "http://" + strings.Split(out, "\n")[0] + "/"
	admin = "unix://" + filepath.Join(sockDir, "admin.sock")
	return network, url, admin
}
