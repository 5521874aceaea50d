package main

// This file holds the bench of the canary's handler module (issue 21's
// target: rollcall_cohorts adds at most 5 % to the p50 latency through
// Caddy, measured side by side against `dynamic rollcall` alone).
// -configs cohorts runs two Caddy containers of one image, built by
// examples/caddy/build.sh, in front of the same two demoapp containers:
//
//   - cohorts: examples/Caddyfile as it is (rollcall_cohorts before
//     reverse_proxy with `dynamic rollcall`), with a split set on its admin
//     API so that every request takes the cohort path: one container
//     carries the canary's spec and gets -cohort-share of the requests;
//   - alone: the same file without the rollcall_cohorts directive and its
//     order option (cut from examples/Caddyfile at run time, so the two can
//     never drift), and no split.
//
// Rounds alternate between the two, in a rotating order (cohorts, alone;
// alone, cohorts; ...), each the same number of POSTs from the same number
// of clients, each client on one kept-alive connection to Caddy (Caddy's
// own to the upstreams is off, as the Caddyfile has it). The latencies are
// the client's, from the request's start to its answer read whole.
//
// The Caddy image is the one the tests cache (rollcall-caddy:<version>-<hash
// of the build inputs>, cmd/rollcall/proxy_real_test.go) when the engine has
// it, left as it is; otherwise the bench builds it as
// rollcall-caddy:bench-<hash>-<run> and removes it at the end.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	caddyproxy "github.com/rollcall/rollcall/engine/proxy"
)

// caddyVersion is the Caddy module version build.sh builds: the tests'.
const caddyVersion = "2.11.9"

// The two variants of the cohorts bench.
const (
	withCohorts = "cohorts"
	aloneSource = "alone"
)

var cohortHeads = map[string]string{
	withCohorts: "`rollcall_cohorts` + `dynamic rollcall`, split set",
	aloneSource: "`dynamic rollcall` alone",
}

// cohortOptions are the bench's knobs (-cohort-*).
type cohortOptions struct {
	requests int     // POSTs a round, over every client
	clients  int     // clients sending back to back
	share    float64 // the split's canary share in the cohorts variant
}

// cohortRound is what the clients saw in one round through one Caddy.
type cohortRound struct {
	p50, p95  time.Duration
	requests  int
	failed    int
	firstErr  string
	took      time.Duration
	caddyCPU  time.Duration // the Caddy container's CPU time in the round; 0: unknown
	latencies []time.Duration
}

// cohortResult is the cohorts bench's whole run.
type cohortResult struct {
	image   string // the Caddy image and where it came from
	built   bool
	target  string // how the clients reached Caddy
	opts    cohortOptions
	rounds  map[string][]cohortRound
	paired  []map[string]cohortRound // per round, both variants, for the ratios
	counted map[string]caddyproxy.WorkloadCohorts
	cpuOK   bool
}

// measureCohorts runs the cohorts bench into r.cohorts.
func (r *results) measureCohorts(ctx context.Context, b *bench, o options) error {
	res := &cohortResult{opts: o.cohort, rounds: map[string][]cohortRound{}, counted: map[string]caddyproxy.WorkloadCohorts{}}
	r.cohorts = res
	if err := b.demoappImage(ctx); err != nil {
		return err
	}
	image, built, err := b.caddyImage(ctx)
	if err != nil {
		return err
	}
	res.image, res.built = image, built
	caddyfile, err := os.ReadFile(filepath.Join("examples", "Caddyfile"))
	if err != nil {
		return fmt.Errorf("cohorts: %w", err)
	}
	alone, err := withoutCohorts(string(caddyfile))
	if err != nil {
		return fmt.Errorf("cohorts: examples/Caddyfile: %w", err)
	}

	p := b.name("ch")
	network := p + "-front"
	defer func() { // containers first: a network with endpoints cannot go
		b.teardown(p)
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli(cctx, "network", "rm", network); err != nil {
			b.log("cohorts cleanup: %v", err)
		}
	}()
	if _, err := cli(ctx, "network", "create", "--label", runLabel+"="+b.run, network); err != nil {
		return err
	}

	// Two demoapps, labelled as rollcall labels its containers: slot 1 of
	// the stable spec, slot 2 of the canary's.
	specs := [2]string{randomHex(6), randomHex(6)}
	for i, spec := range specs {
		slot := strconv.Itoa(i + 1)
		if _, err := cli(ctx, "run", "-d", "--name", p+"-web-"+slot, "--network", network,
			"--label", runLabel+"="+b.run, "--label", p+".managed=true", "--label", p+".workload=web",
			"--label", p+".slot="+slot, "--label", p+".spec="+spec,
			b.tag("v1", false), "-listen", ":8080", "-version", "v1"); err != nil {
			return err
		}
	}

	caddies := map[string]*caddyRun{}
	for _, v := range []string{withCohorts, aloneSource} {
		c, err := b.startCaddy(ctx, p, v, image, network, map[string]string{aloneSource: alone}[v])
		if err != nil {
			return err
		}
		caddies[v] = c
	}
	for _, v := range []string{withCohorts, aloneSource} {
		if err := caddies[v].waitRouting(ctx, p, 2); err != nil {
			return fmt.Errorf("cohorts: Caddy %s: %w", v, err)
		}
	}
	if err := caddyproxy.SetSplit(ctx, nil, caddies[withCohorts].admin, p, "web", specs[1], o.cohort.share); err != nil {
		return err
	}
	res.target = caddies[withCohorts].target
	_, res.cpuOK = cgroupCPU(caddies[withCohorts].id)
	b.log("cohorts: Caddy %s (%s), clients to %s, split %s/web: spec %s takes %.0f %%", image,
		map[bool]string{true: "built", false: "the tests' cached image"}[built], res.target, p, specs[1], 100*o.cohort.share)

	// A warm-up round each, not counted: Caddy's first dials, the
	// clients' first connections, the Go runtimes' heaps.
	warm := max(o.cohort.requests/10, 2*o.cohort.clients)
	for _, v := range []string{withCohorts, aloneSource} {
		if x := caddies[v].round(ctx, o.cohort.clients, warm); x.failed > 0 {
			return fmt.Errorf("cohorts: warm-up through Caddy %s: %d of %d requests failed, the first: %s", v, x.failed, x.requests, x.firstErr)
		}
	}
	for round := range o.rounds {
		got := map[string]cohortRound{}
		for _, v := range rotate([]string{withCohorts, aloneSource}, round) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			x := caddies[v].round(ctx, o.cohort.clients, o.cohort.requests)
			x.latencies = nil // the percentiles are kept; the rest is memory
			got[v] = x
			res.rounds[v] = append(res.rounds[v], x)
			b.log("cohorts round %d · %s: p50 %s, p95 %s, %d requests in %s, %d failed%s", round+1, v,
				fineMillis(x.p50), fineMillis(x.p95), x.requests, x.took.Round(time.Millisecond), x.failed, cpuNote(x))
		}
		res.paired = append(res.paired, got)
	}
	for _, v := range []string{withCohorts, aloneSource} {
		ws, err := caddyproxy.Cohorts(ctx, nil, caddies[v].admin)
		if err != nil {
			return err
		}
		for _, w := range ws {
			if w.Prefix == p && w.Workload == "web" {
				res.counted[v] = w
			}
		}
	}
	return nil
}

// withoutCohorts is caddyfile without the rollcall_cohorts directive and
// its order option: `dynamic rollcall` alone, everything else the same. A
// file that does not have exactly one of each is an error: the bench would
// no longer compare what it says.
func withoutCohorts(caddyfile string) (string, error) {
	var out []string
	var directives, orders int
	for _, line := range strings.SplitAfter(caddyfile, "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 1 && f[0] == "rollcall_cohorts":
			directives++
		case len(f) >= 2 && f[0] == "order" && f[1] == "rollcall_cohorts":
			orders++
		default:
			out = append(out, line)
		}
	}
	if directives != 1 || orders != 1 {
		return "", fmt.Errorf("want one rollcall_cohorts directive and one order option for it, found %d and %d", directives, orders)
	}
	return strings.Join(out, ""), nil
}

// demoappImage builds the static demoapp and its v1 image without a
// healthcheck, unless the run has them already.
func (b *bench) demoappImage(ctx context.Context) error {
	if _, ok := b.images[b.tag("v1", false)]; ok {
		return nil
	}
	b.demoapp = filepath.Join(b.dir, "demoapp")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", b.demoapp, "./cmd/demoapp")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/demoapp (run rollbench from the module root): %w: %s", err, strings.TrimSpace(string(out)))
	}
	files, err := imagebuild.ImageFiles(b.demoapp, "v1")
	if err != nil {
		return err
	}
	tag := b.tag("v1", false)
	id, err := b.moby.BuildImage(ctx, tag, files)
	if err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	b.images[tag] = id
	return nil
}

// caddyImage returns the Caddy image to run: the tests' cached one for
// today's build inputs if the engine has it (built false: it is not the
// run's to remove), else one the run builds with examples/caddy/build.sh
// and removes at its end.
func (b *bench) caddyImage(ctx context.Context) (tag string, built bool, err error) {
	hash, err := caddyInputsHash("examples")
	if err != nil {
		return "", false, err
	}
	cached := "rollcall-caddy:" + caddyVersion + "-" + hash
	if _, err := cli(ctx, "image", "inspect", "--format", "{{.Id}}", cached); err == nil {
		return cached, false, nil
	}
	tag = "rollcall-caddy:bench-" + hash + "-" + b.run
	work := filepath.Join(b.dir, "caddy-build") // in the run's folder: gone at the end, also after a kill
	b.log("cohorts: building %s with examples/caddy/build.sh", tag)
	began := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join("examples", "caddy", "build.sh"))
	cmd.Env = append(os.Environ(), "CADDY_VERSION="+caddyVersion, "CADDY_IMAGE="+tag, "CADDY_WORK="+work)
	b.images[tag] = "" // set before the build: a half-done one is removed too
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", false, fmt.Errorf("examples/caddy/build.sh (it needs go and the Go module proxy): %w: %s", err, lastLines(string(out), 10))
	}
	b.log("cohorts: built %s in %s", tag, time.Since(began).Round(time.Second))
	return tag, true, nil
}

// caddyInputsHash is the hash in the tests' Caddy image tag: the first 8
// hex digits of a SHA-256 over each build input's name, length and bytes,
// in cmd/rollcall/proxy_real_test.go's order.
func caddyInputsHash(examples string) (string, error) {
	inputs := []string{"Caddyfile", "caddy/Dockerfile", "caddy/build.sh", "caddy/go.mod", "caddy/go.sum", "caddy/main.go"}
	sources, err := filepath.Glob(filepath.Join(examples, "caddy", "rollcallup", "*.go"))
	if err != nil || len(sources) == 0 {
		return "", fmt.Errorf("%s/caddy/rollcallup: no sources (run rollbench from the module root; %v)", examples, err)
	}
	for _, f := range sources {
		inputs = append(inputs, filepath.Join("caddy", "rollcallup", filepath.Base(f)))
	}
	h := sha256.New()
	for _, f := range inputs {
		data, err := os.ReadFile(filepath.Join(examples, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:8], nil
}

// caddyRun is one Caddy container of the bench.
type caddyRun struct {
	id     string
	url    string // where the clients send their POSTs
	target string // what url is, for the report
	admin  string // its admin API: unix:///…/admin.sock, in a folder of the run's
}

// startCaddy starts a Caddy container of image on network, routing the
// workload web of prefix. A non-empty caddyfile replaces the image's own
// before the start.
func (b *bench) startCaddy(ctx context.Context, prefix, variant, image, network, caddyfile string) (*caddyRun, error) {
	name := prefix + "-caddy-" + variant
	// The admin API listens on a unix socket (examples/Caddyfile: admin
	// unix//run/rollcall-caddy/admin.sock), in a folder of the run's.
	sockDir := filepath.Join(b.dir, "caddy-"+variant)
	if err := os.MkdirAll(sockDir, 0o700); err != nil {
		return nil, err
	}
	id, err := cli(ctx, "create", "--name", name, "--network", network, "--label", runLabel+"="+b.run,
		"-p", "127.0.0.1::8080", "-v", engineSocket()+":/var/run/docker.sock", "-v", sockDir+":/run/rollcall-caddy",
		"-e", "ROLLCALL_PREFIX="+prefix, "-e", "ROLLCALL_NETWORK="+network, image)
	if err != nil {
		return nil, err
	}
	if caddyfile != "" {
		f := filepath.Join(b.dir, "Caddyfile."+variant)
		if err := os.WriteFile(f, []byte(caddyfile), 0o644); err != nil {
			return nil, err
		}
		if _, err := cli(ctx, "cp", f, name+":/etc/caddy/Caddyfile"); err != nil {
			return nil, err
		}
	}
	if _, err := cli(ctx, "start", name); err != nil {
		return nil, err
	}
	port := func(p string) (string, error) {
		out, err := cli(ctx, "port", name, p)
		if err != nil {
			return "", err
		}
		return strings.Split(out, "\n")[0], nil
	}
	c := &caddyRun{id: id, admin: "unix://" + filepath.Join(sockDir, "admin.sock")}
	// The clients go to Caddy's address on the network, from the host,
	// when the host reaches it (a Linux host does): the published port
	// would put docker-proxy, a userland copy, on every request.
	ip, err := cli(ctx, "inspect", "--format", "{{(index .NetworkSettings.Networks \""+network+"\").IPAddress}}", name)
	if err != nil {
		return nil, err
	}
	if reachable(ctx, ip+":8080") {
		c.url, c.target = "http://"+ip+":8080/", "Caddy's address on the bridge network"
		return c, nil
	}
	a, err := port("8080/tcp")
	if err != nil {
		return nil, err
	}
	c.url, c.target = "http://"+a+"/", "a published loopback port (docker-proxy)"
	return c, nil
}

// engineSocket is the engine's unix socket on this host, for Caddy's
// container to mount: DOCKER_HOST's when it names one, else the default.
func engineSocket() string {
	if p, ok := strings.CutPrefix(os.Getenv("DOCKER_HOST"), "unix://"); ok {
		return p
	}
	return "/var/run/docker.sock"
}

// reachable tells whether addr (Caddy's proxy port) accepts a
// connection within 10 s.
func reachable(ctx context.Context, addr string) bool {
	d := net.Dialer{Timeout: time.Second}
	return poll(ctx, 10*time.Second, 100*time.Millisecond, "Caddy at "+addr, func() (bool, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	}) == nil
}

// waitRouting waits until Caddy routes to n containers of the workload web
// of prefix, as its admin API says, and answers a POST.
func (c *caddyRun) waitRouting(ctx context.Context, prefix string, n int) error {
	hc := &http.Client{Timeout: 2 * time.Second}
	return poll(ctx, time.Minute, 200*time.Millisecond, fmt.Sprintf("%d upstreams of %s/web", n, prefix), func() (bool, error) {
		ws, err := caddyproxy.Cohorts(ctx, hc, c.admin)
		if err != nil {
			return false, nil // not up yet, or its config not loaded
		}
		for _, w := range ws {
			if w.Prefix == prefix && w.Workload == "web" && len(w.Stable.Containers)+len(w.Canary.Containers) == n {
				_, err := postOnce(ctx, hc, c.url)
				return err == nil, err
			}
		}
		return false, nil
	})
}

// round sends requests POSTs through c from clients clients, back to
// back, each on a kept-alive connection of its own, and returns what they
// saw.
func (c *caddyRun) round(ctx context.Context, clients, requests int) cohortRound {
	var mu sync.Mutex
	x := cohortRound{latencies: make([]time.Duration, 0, requests)}
	cpu0, cpuOK := cgroupCPU(c.id)
	began := time.Now()
	var wg sync.WaitGroup
	for i := range clients {
		n := requests / clients
		if i < requests%clients {
			n++
		}
		wg.Go(func() {
			tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: 30 * time.Second}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 15 * time.Second}
			lat := make([]time.Duration, 0, n)
			var failed int
			var first string
			for range n {
				if ctx.Err() != nil {
					break
				}
				t0 := time.Now()
				_, err := postOnce(ctx, hc, c.url)
				lat = append(lat, time.Since(t0))
				if err != nil {
					if failed == 0 {
						first = err.Error()
					}
					failed++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			x.latencies = append(x.latencies, lat...)
			x.failed += failed
			if x.firstErr == "" {
				x.firstErr = first
			}
		})
	}
	wg.Wait()
	x.took = time.Since(began)
	if cpu1, ok := cgroupCPU(c.id); ok && cpuOK {
		x.caddyCPU = cpu1 - cpu0
	}
	x.requests = len(x.latencies)
	slices.Sort(x.latencies)
	x.p50, x.p95 = quantile(x.latencies, 0.50), quantile(x.latencies, 0.95)
	return x
}

// quantile is the q-quantile of sorted latencies (nearest rank); 0 for none.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// postOnce sends one POST, as the zero-downtime test does, and returns the
// version that answered, or why it failed: no answer, a status other than
// 200, or a body that is not demoapp's.
func postOnce(ctx context.Context, c *http.Client, url string) (string, error) {
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
		return "", fmt.Errorf("POST %s: read answer: %w", url, err)
	}
	version, _, ok := strings.Cut(string(body), " ")
	if resp.StatusCode != http.StatusOK || !ok || !strings.HasPrefix(version, "v") {
		return "", fmt.Errorf("POST %s: %s: %q", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return version, nil
}

// cgroupCPU is a container's CPU time so far, from its cgroup (v1 with the
// cgroupfs driver, or v2 with systemd's); false where neither is readable.
func cgroupCPU(id string) (time.Duration, bool) {
	if b, err := os.ReadFile("/sys/fs/cgroup/cpuacct/docker/" + id + "/cpuacct.usage"); err == nil {
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return time.Duration(n), err == nil
	}
	b, err := os.ReadFile("/sys/fs/cgroup/system.slice/docker-" + id + ".scope/cpu.stat")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return time.Duration(n) * time.Microsecond, err == nil
		}
	}
	return 0, false
}

func cpuNote(x cohortRound) string {
	if x.caddyCPU <= 0 || x.requests == 0 {
		return ""
	}
	return fmt.Sprintf(", Caddy CPU %s a request", fineMillis(x.caddyCPU/time.Duration(x.requests)))
}

// plural is "1 client", "3 clients".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// fineMillis is d in milliseconds to the microsecond: "0.412 ms".
func fineMillis(d time.Duration) string {
	return fmt.Sprintf("%.3f ms", float64(d)/float64(time.Millisecond))
}

// cohortsMarkdown renders the cohorts bench.
func (r *results) cohortsMarkdown(s *strings.Builder) {
	x := r.cohorts
	if x == nil || len(x.paired) == 0 {
		return
	}
	fmt.Fprintf(s, "Through Caddy %s (%s), in front of 2 demoapp containers answering at once; %s sending %d POSTs a round back to back, "+
		"each on a kept-alive connection to %s, Caddy dialling its upstream anew for each (`keepalive off`, as examples/Caddyfile has it). "+
		"Medians over %d rounds of each, alternating in a rotating order, min–max in brackets.\n\n",
		caddyVersion, x.image, plural(x.opts.clients, "client"), x.opts.requests, x.target, len(x.paired))
	cpuHead, cpuCols := "", ""
	if x.cpuOK {
		cpuHead, cpuCols = " Caddy CPU a request |", "---|"
	}
	s.WriteString("| through Caddy | p50 | p95 | failed |" + cpuHead + "\n|---|---|---|---|" + cpuCols + "\n")
	pick := func(v string, f func(cohortRound) time.Duration) []time.Duration {
		var ds []time.Duration
		for _, round := range x.rounds[v] {
			ds = append(ds, f(round))
		}
		return ds
	}
	perRequest := func(c cohortRound) time.Duration {
		if c.requests == 0 {
			return 0
		}
		return c.caddyCPU / time.Duration(c.requests)
	}
	for _, v := range []string{withCohorts, aloneSource} {
		head := cohortHeads[v]
		if v == withCohorts {
			head += fmt.Sprintf(" (%.0f %% canary)", 100*x.opts.share)
		}
		var n, bad int
		for _, round := range x.rounds[v] {
			n += round.requests
			bad += round.failed
		}
		fmt.Fprintf(s, "| %s | %s | %s | %d of %d |", head, durations(pick(v, func(c cohortRound) time.Duration { return c.p50 }), fineMillis),
			durations(pick(v, func(c cohortRound) time.Duration { return c.p95 }), fineMillis), bad, n)
		if x.cpuOK {
			fmt.Fprintf(s, " %s |", durations(pick(v, perRequest), fineMillis))
		}
		s.WriteString("\n")
	}
	ratio := func(f func(cohortRound) time.Duration) string {
		var q []float64
		for _, round := range x.paired {
			a, okA := round[withCohorts]
			b, okB := round[aloneSource]
			if okA && okB && f(b) > 0 {
				q = append(q, float64(f(a))/float64(f(b)))
			}
		}
		return floats(q)
	}
	fmt.Fprintf(s, "| cohorts ÷ alone, per pair of rounds | %s | %s | |", ratio(func(c cohortRound) time.Duration { return c.p50 }),
		ratio(func(c cohortRound) time.Duration { return c.p95 }))
	if x.cpuOK {
		fmt.Fprintf(s, " %s |", ratio(perRequest))
	}
	s.WriteString("\n\n")
	if w, ok := x.counted[withCohorts]; ok {
		total := w.Stable.Requests + w.Canary.Requests
		share := 0.0
		if total > 0 {
			share = float64(w.Canary.Requests) / float64(total)
		}
		fmt.Fprintf(s, "rollcall_cohorts counted %d stable and %d canary requests (%.1f %% canary, warm-up included), %d errors; ",
			w.Stable.Requests, w.Canary.Requests, 100*share, w.Stable.Errors+w.Canary.Errors)
	}
	if w, ok := x.counted[aloneSource]; ok {
		fmt.Fprintf(s, "the Caddy without it counted %d. ", w.Stable.Requests+w.Canary.Requests)
	}
	s.WriteString("Latencies at the client, from the request's start to its answer read whole. Ratios: median (min–max) of the per-pair ratios.")
	if x.cpuOK {
		s.WriteString(" Caddy's CPU: its container's cgroup over the round, over the requests.")
	}
	s.WriteString("\n\n")
}
