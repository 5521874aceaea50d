package main

// The guards of an unattended session (issue 9) on the real engine, driven
// through the built binary: the host lock across two endpoints of one
// engine, a half-written file and `workloads: {}` under `agent`, and a
// rollback's hold outliving `apply`. The same guards on the fake engine are
// in unattended_test.go. Every test has a prefix of its own and keeps its
// journal and state in t.TempDir(); none runs more than 3 containers.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/journal"
)

// realRig is one real-engine test: the engine, the test's prefix, the built
// binary, and a directory for desired files and the journal.
type realRig struct {
	t       *testing.T
	ctx     context.Context
	m       *moby.Moby
	prefix  string
	dir     string
	bin     string
	journal string
}

func newRealRig(t *testing.T) *realRig {
	t.Helper()
	m := dockertest.Engine(t)
	prefix := dockertest.Prefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	return &realRig{t: t, ctx: ctx, m: m, prefix: prefix, dir: dir, bin: buildRollcall(t, ctx, dir),
		journal: filepath.Join(dir, "state", "journal.jsonl")}
}

// write writes a desired file of the rig's prefix and returns its path.
func (r *realRig) write(name string, workloads ...string) string {
	r.t.Helper()
	path := filepath.Join(r.dir, name)
	if err := os.WriteFile(path, []byte(r.desired(workloads...)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return path
}

func (r *realRig) desired(workloads ...string) string {
	if len(workloads) == 0 {
		return "prefix: " + r.prefix + "\nworkloads: {}\n"
	}
	return "prefix: " + r.prefix + "\nworkloads:\n" + strings.Join(workloads, "")
}

// realWorkload is a demoapp workload of version ("v1", "v2") with a 1s
// healthcheck; extra lines (indented 4) are added to it.
func realWorkload(t *testing.T, name, version string, replicas int, extra ...string) string {
	t.Helper()
	tag, _ := dockertest.DemoappImage(t, version)
	var args []string
	for _, e := range extra {
		if a, ok := strings.CutPrefix(e, "args: "); ok {
			args = append(args, a)
		}
	}
	s := fmt.Sprintf(`  %s:
    image: %s
    version: %q
    replicas: %d
    command: ["-listen", ":8080", "-version", %q%s]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 1s, retries: 3}
    stop_grace_period: 2s
    restart: "no"
`, name, tag, version, replicas, version, strings.Join(args, ""))
	for _, e := range extra {
		if !strings.HasPrefix(e, "args: ") {
			s += "    " + e + "\n"
		}
	}
	return s
}

// run runs the binary to its end with the rig's journal.
func (r *realRig) run(args ...string) binResult {
	r.t.Helper()
	return runBinary(r.t, r.ctx, r.bin, append([]string{"--journal", r.journal}, args...)...)
}

// proc is the binary running in the background.
type proc struct {
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	code   int
}

// start starts the binary in the background with journal; t's cleanup
// kills it if it still runs.
func (r *realRig) start(journalPath string, args ...string) *proc {
	r.t.Helper()
	p := &proc{stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(r.bin, append([]string{"--journal", journalPath}, args...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			p.code = ee.ExitCode() // -1 when a signal killed it
		case err != nil:
			p.code = -2
		}
		close(p.done)
	}()
	r.t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *proc) signal(t *testing.T, sig os.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// wait waits for the process to end and returns its exit code.
func (p *proc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(limit):
		t.Fatalf("%s did not end within %s\n%s", p.cmd.Args, limit, p.stderr.String())
		return 0
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// list lists the rig's containers.
func (r *realRig) list() []docker.Container {
	r.t.Helper()
	cs, err := r.m.List(r.ctx, r.prefix)
	if err != nil {
		r.t.Fatal(err)
	}
	return cs
}

// waitUntil polls cond every 200ms until it holds.
func (r *realRig) waitUntil(what string, limit time.Duration, cond func() bool) {
	r.t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out after %s waiting for %s; containers: %s", limit, what, describe(r.prefix, r.list()))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// healthy is the IDs of the running, healthy containers of workload
// ("" for all), sorted.
func (r *realRig) healthy(workload string) []string {
	r.t.Helper()
	var ids []string
	for _, c := range r.list() {
		if (workload == "" || c.Labels[docker.WorkloadLabel(r.prefix)] == workload) &&
			c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
			ids = append(ids, c.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// describe is a one-line summary of containers, for failure messages.
func describe(prefix string, cs []docker.Container) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s(%s/%s %s %s %s)", c.Name, c.Labels[docker.WorkloadLabel(prefix)],
			c.Labels[docker.SlotLabel(prefix)], c.Labels[docker.VersionLabel(prefix)], c.State, c.Health))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// mustApply runs `apply --yes` on path and fails t unless it converges.
func (r *realRig) mustApply(path string, args ...string) binResult {
	r.t.Helper()
	res := r.run(append([]string{"apply", "--yes", "--timeout", "2m", "-f", path}, args...)...)
	if res.code != exitOK {
		r.t.Fatalf("apply %s: exit %d\n%s", filepath.Base(path), res.code, res.stderr)
	}
	return res
}

// otherEndpoint returns two endpoint strings that name one engine through
// two paths: the socket as the environment names it, and /run for /var/run
// (or the other way) when both exist, else a symbolic link to the socket.
func otherEndpoint(t *testing.T) (first, second string) {
	t.Helper()
	sock := "/var/run/docker.sock"
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		p, ok := strings.CutPrefix(h, "unix://")
		if !ok {
			dockertest.Skip(t, fmt.Errorf("DOCKER_HOST=%s is not a unix socket, and this test reaches the engine by two socket paths", h))
		}
		sock = p
	}
	st, err := os.Stat(sock)
	if err != nil {
		t.Fatalf("the engine's socket: %v", err)
	}
	for _, alt := range []string{"/run/docker.sock", "/var/run/docker.sock"} {
		if alt == sock {
			continue
		}
		if ast, err := os.Stat(alt); err == nil && os.SameFile(st, ast) {
			return "unix://" + sock, "unix://" + alt
		}
	}
	link := filepath.Join(t.TempDir(), "docker.sock")
	if err := os.Symlink(sock, link); err != nil {
		t.Fatal(err)
	}
	return "unix://" + sock, "unix://" + link
}

// TestRealEngineLockAcrossTwoEndpoints: the host lock is keyed on the
// engine's identity, not the endpoint string. With `agent` acting on a
// prefix through one socket path, an agent and an apply through another
// path to the same engine (with a journal and state directory of their
// own) refuse at once, exit 1 naming the holder, and touch nothing.
func TestRealEngineLockAcrossTwoEndpoints(t *testing.T) {
	r := newRealRig(t)
	first, second := otherEndpoint(t)
	t.Logf("endpoints %s and %s", first, second)
	v1 := r.write("v1.yaml", realWorkload(t, "web", "v1", 1))
	v2 := r.write("v2.yaml", realWorkload(t, "web", "v2", 1))

	holder := r.start(r.journal, "--docker-host", first, "agent", "-f", v1)
	r.waitUntil("web v1 healthy under the first agent", time.Minute, func() bool { return len(r.healthy("web")) == 1 })
	before := describe(r.prefix, r.list())
	ids := r.healthy("")

	otherJournal := filepath.Join(t.TempDir(), "journal.jsonl")
	holderName := fmt.Sprintf("(pid %d)", holder.cmd.Process.Pid)
	for _, args := range [][]string{
		{"agent", "-f", v2},
		{"apply", "--yes", "--allow-mass-stop", "-f", v2},
	} {
		ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second) // a refusal is at once; an agent that acts runs on
		res := runBinary(t, ctx, r.bin, append([]string{"--journal", otherJournal, "--docker-host", second}, args...)...)
		cancel()
		if res.code != exitFailed {
			t.Fatalf("%s through %s beside a live agent: exit %d, want 1\n%s", args[0], second, res.code, res.stderr)
		}
		mustContain(t, args[0]+" stderr", res.stderr, "held by", holderName)
	}
	if got := describe(r.prefix, r.list()); got != before || !slices.Equal(r.healthy(""), ids) {
		t.Fatalf("the refused commands touched the containers:\nbefore %s\nafter  %s", before, got)
	}
	if es, err := journal.Read(otherJournal, 0); err == nil && len(es) > 0 {
		t.Fatalf("the refused commands journaled %d line(s): %+v", len(es), es)
	}

	holder.signal(t, syscall.SIGTERM)
	if code := holder.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("the first agent: exit %d\n%s", code, holder.stderr.String())
	}
	// Free again: the second path takes the lock now.
	if res := runBinary(t, r.ctx, r.bin, "--journal", otherJournal, "--docker-host", second, "plan", "-f", v1); res.code != exitOK {
		t.Fatalf("plan: exit %d\n%s", res.code, res.stderr)
	}
}

// agentLines are the agent's JSON log lines.
func agentLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("agent log line is not JSON: %v\n%s", err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestRealEngineAgentHalfWrittenFile: a writer saves a valid first half of
// the file (web only), pauses 1s, then writes the rest. The agent runs with
// --allow-mass-stop, so the blast-radius guard lets the first half through
// and only the settle time stands between it and the api containers: they
// are never stopped (sampled every 100ms while the file is written and
// acted on). The whole file (web's memory limit raised, in place) is then
// acted on.
func TestRealEngineAgentHalfWrittenFile(t *testing.T) {
	r := newRealRig(t)
	api := realWorkload(t, "api", "v1", 2)
	path := r.write("rollcall.yaml", realWorkload(t, "web", "v1", 1, "resources: {memory: 64M}"), api)
	agent := r.start(r.journal, "agent", "--allow-mass-stop", "-f", path)
	r.waitUntil("web and api healthy", time.Minute, func() bool { return len(r.healthy("")) == 3 })
	apiIDs := r.healthy("api")
	webIDs := r.healthy("web")

	ctx, stopSampling := context.WithCancel(r.ctx)
	broken := make(chan string, 1)
	samples := 0
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for ctx.Err() == nil {
			var ids []string
			cs, err := r.m.List(ctx, r.prefix)
			if err != nil {
				continue
			}
			samples++
			for _, c := range cs {
				if c.Labels[docker.WorkloadLabel(r.prefix)] == "api" && c.State == docker.StateRunning {
					ids = append(ids, c.ID)
				}
			}
			slices.Sort(ids)
			if !slices.Equal(ids, apiIDs) {
				broken <- describe(r.prefix, cs)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()

	whole := r.desired(realWorkload(t, "web", "v1", 1, "resources: {memory: 96M}"), api)
	half, _, ok := strings.Cut(whole, "  api:\n")
	if !ok {
		t.Fatal("no api in the desired file")
	}
	if err := os.WriteFile(path, []byte(half), 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := os.WriteFile(path, []byte(whole), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitUntil("the whole file acted on (plan converged)", time.Minute, func() bool {
		return r.run("plan", "-f", path).code == exitOK
	})
	time.Sleep(time.Second) // and a while after
	stopSampling()
	<-sampled
	select {
	case got := <-broken:
		t.Fatalf("the agent acted on the half-written file: api's running containers changed: %s\n%s", got, agent.stderr.String())
	default:
	}
	t.Logf("%d samples, api kept its 2 containers throughout", samples)
	if got := r.healthy("web"); !slices.Equal(got, webIDs) {
		t.Errorf("web was replaced (%v, was %v); its memory limit should change in place", got, webIDs)
	}
	agent.signal(t, syscall.SIGTERM)
	if code := agent.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("agent: exit %d\n%s", code, agent.stderr.String())
	}
}

// TestRealEngineAgentRefusesWorkloadsEmpty: `workloads: {}` under the agent
// stops nothing; the refusal is a JSON log line naming the count, and the
// next, small, desired change is acted on.
func TestRealEngineAgentRefusesWorkloadsEmpty(t *testing.T) {
	r := newRealRig(t)
	path := r.write("rollcall.yaml", realWorkload(t, "web", "v1", 2))
	agent := r.start(r.journal, "agent", "-f", path)
	r.waitUntil("2 healthy web containers", time.Minute, func() bool { return len(r.healthy("web")) == 2 })
	ids := r.healthy("web")

	r.write("rollcall.yaml")
	var refusal map[string]any
	r.waitUntil("the refusal logged", 30*time.Second, func() bool {
		for _, l := range agentLines(t, agent.stderr.String()) {
			if l["msg"] == "refused: blast radius" {
				refusal = l
				return true
			}
		}
		return false
	})
	if refusal["stops"] != float64(2) || refusal["running"] != float64(2) || refusal["level"] != "ERROR" {
		t.Errorf("refusal line %v: want stops 2, running 2, level ERROR", refusal)
	}
	time.Sleep(2 * time.Second) // what it would have stopped by now, it has not
	if got := r.healthy("web"); !slices.Equal(got, ids) {
		t.Fatalf("after the refused `workloads: {}`: healthy %v, want %v still\n%s", got, ids, agent.stderr.String())
	}
	refused := false
	for _, l := range agentLines(t, agent.stderr.String()) {
		refused = refused || l["msg"] == "refused: blast radius"
		if refused && l["msg"] == "step started" {
			t.Fatalf("a step ran after the refusal: %v", l)
		}
	}

	r.write("rollcall.yaml", realWorkload(t, "web", "v1", 1))
	r.waitUntil("one web container left", time.Minute, func() bool {
		return len(r.list()) == 1 && len(r.healthy("web")) == 1
	})
	agent.signal(t, syscall.SIGTERM)
	if code := agent.wait(t, 30*time.Second); code != exitOK {
		t.Fatalf("agent: exit %d\n%s", code, agent.stderr.String())
	}
}

// TestRealEngineRollbackHoldOutlivesApply: a version that never turns
// healthy (demoapp -ready-delay 1h) under failure_action rollback: the
// first apply rolls it back and exits 1 saying so; plan shows the hold,
// which is kept beside the journal; a second apply exits 1 and creates no
// container of the held spec.
func TestRealEngineRollbackHoldOutlivesApply(t *testing.T) {
	r := newRealRig(t)
	update := "update: {health_deadline: 3s, failure_action: rollback}"
	path := r.write("rollcall.yaml", realWorkload(t, "web", "v1", 1, update))
	r.mustApply(path)
	kept := r.healthy("web")

	r.write("rollcall.yaml", realWorkload(t, "web", "v2", 1, update, `args: , "-ready-delay", "1h"`))
	res := r.run("apply", "--yes", "--timeout", "2m", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("apply of a version that never turns healthy: exit %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "first apply", res.stderr, "rolled back web/0", "on hold")

	plan := r.run("plan", "-f", path)
	mustContain(t, "plan", plan.stdout+plan.stderr, "on hold")

	starts := func() int {
		es, err := journal.Read(r.journal, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.Action == "start" {
				n++
			}
		}
		return n
	}
	before := starts()
	again := r.run("apply", "--yes", "--timeout", "2m", "-f", path)
	if again.code != exitFailed {
		t.Fatalf("second apply: exit %d, want 1\n%s", again.code, again.stderr)
	}
	mustContain(t, "second apply", again.stderr, "on hold")
	if n := starts(); n != before {
		t.Fatalf("the second apply journaled %d start line(s): it tried the held spec again\n%s", n-before, again.stderr)
	}
	cs := r.list()
	if len(cs) != 1 || !slices.Equal(r.healthy("web"), kept) {
		t.Fatalf("after the second apply: %s; want only the v1 container %v", describe(r.prefix, cs), kept)
	}
}
