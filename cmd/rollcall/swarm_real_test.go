package main

// rollcall on a real swarm (DESIGN §13, issue 30): a swarm of the test's
// own (dockertest.StartSwarm: engines in namespaces of their own, never
// the machine's engine), the built binary's apply, plan, rollback and
// retry, and a step-mode session approving one slot at a time. Two
// replicas each, healthchecks every second: few probes.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/source/load"
)

// swarmRig is a swarm of one node with the demoapp's v1 and v2 loaded, a
// prefix, and the built binary.
type swarmRig struct {
	t      *testing.T
	ctx    context.Context
	sw     *dockertest.Swarm
	m      *moby.Moby
	prefix string
	dir    string
	bin    string
	tags   map[string]string
}

func newSwarmRig(t *testing.T) *swarmRig {
	t.Helper()
	dockertest.Engine(t) // skips (or fails under ROLLCALL_REQUIRE_DOCKER) without an engine
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	t.Cleanup(cancel)
	sw := dockertest.StartSwarm(t, 1)
	r := &swarmRig{t: t, ctx: ctx, sw: sw, m: sw.Nodes[0].Client(t), prefix: dockertest.Prefix(t), dir: t.TempDir(), tags: map[string]string{}}
	for _, v := range []string{"v1", "v2"} {
		tag, _ := dockertest.DemoappImage(t, v)
		sw.Load(t, tag)
		r.tags[v] = tag
	}
	r.bin = buildRollcall(t, ctx, r.dir)
	return r
}

// desired is the rig's file: web, 2 replicas of version, start-first,
// DNS round robin (this kernel has no IPVS for a VIP).
func (r *swarmRig) desired(version string) string {
	return fmt.Sprintf(`engine: swarm
prefix: %s
workloads:
  web:
    image: %s
    version: %q
    replicas: 2
    command: ["-listen", ":8080", "-version", %q]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 1s, retries: 3}
    stop_grace_period: 2s
    endpoint_mode: dnsrr
    update: {order: start-first, health_deadline: 10s}
`, r.prefix, r.tags[version], version, version)
}

func (r *swarmRig) write(version string) string {
	r.t.Helper()
	path := filepath.Join(r.dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(r.desired(version)), 0o644); err != nil {
		r.t.Fatal(err)
	}
	return path
}

func (r *swarmRig) run(args ...string) binResult {
	r.t.Helper()
	return runBinary(r.t, r.ctx, r.bin, append([]string{"--docker-host", r.sw.Host, "--journal", filepath.Join(r.dir, "state", "journal.jsonl")}, args...)...)
}

// running are the running tasks' images, by slot.
func (r *swarmRig) running() map[int]string {
	r.t.Helper()
	tasks, err := r.m.Tasks(r.ctx, r.prefix)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[int]string{}
	for _, task := range tasks {
		if task.State == docker.TaskRunning && task.Desired == docker.TaskRunning {
			out[task.Slot] = task.Image
		}
	}
	return out
}

func (r *swarmRig) service() docker.Service {
	r.t.Helper()
	svcs, err := r.m.Services(r.ctx, r.prefix)
	if err != nil || len(svcs) != 1 {
		r.t.Fatalf("services of %s: %v %v, want one", r.prefix, svcs, err)
	}
	return svcs[0]
}

// allOn says every slot runs version, and only it.
func (r *swarmRig) allOn(version string) bool {
	run := r.running()
	if len(run) != 2 {
		return false
	}
	for _, img := range run {
		if img != r.tags[version] {
			return false
		}
	}
	return true
}

// The built binary on a real swarm: apply creates the workload's service
// (named <prefix>_web, stack-labelled) and converges; plan then exits 0; a
// new image rolls through Swarm; rollback pins revision 1 and apply rolls
// it in as a forward update of rollcall's stored template, never Swarm's
// own rollback; retry lifts the pin.
func TestRealSwarmApplyRollAndRollBack(t *testing.T) {
	r := newSwarmRig(t)
	file := r.write("v1")
	if res := r.run("apply", "--yes", "-f", file); res.code != exitOK {
		t.Fatalf("apply v1: exit %d\n%s", res.code, res.stderr)
	}
	svc := r.service()
	if svc.Spec.Name != docker.ServiceName(r.prefix, "web") || svc.Spec.Labels[docker.StackLabel] != r.prefix {
		t.Errorf("service %q labels %v: want %s_web in stack %s", svc.Spec.Name, svc.Spec.Labels, r.prefix, r.prefix)
	}
	if !r.allOn("v1") {
		t.Fatalf("after apply v1: running %v, want both slots on %s", r.running(), r.tags["v1"])
	}
	if res := r.run("plan", "-f", file); res.code != exitOK {
		t.Errorf("plan after apply: exit %d, want 0 (converged)\n%s%s", res.code, res.stdout, res.stderr)
	}

	file = r.write("v2")
	if res := r.run("plan", "-f", file); res.code != exitPending || !strings.Contains(res.stdout, "rollout") {
		t.Errorf("plan of v2: exit %d, want %d with the rollout\n%s%s", res.code, exitPending, res.stdout, res.stderr)
	}
	if res := r.run("apply", "--yes", "-f", file); res.code != exitOK {
		t.Fatalf("apply v2: exit %d\n%s", res.code, res.stderr)
	}
	if !r.allOn("v2") {
		t.Fatalf("after apply v2: running %v, want both slots on %s", r.running(), r.tags["v2"])
	}

	if res := r.run("rollback", "web", "-f", file); res.code != exitOK {
		t.Fatalf("rollback web: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	res := r.run("apply", "--yes", "-f", file)
	if res.code != exitOK || !strings.Contains(res.stderr, "pinned to revision 1") {
		t.Fatalf("apply of the pin: exit %d, want 0 saying the pin is reached\n%s", res.code, res.stderr)
	}
	if !r.allOn("v1") {
		t.Errorf("after the rollback: running %v, want both slots back on %s", r.running(), r.tags["v1"])
	}
	svc = r.service()
	if svc.Spec.Task.Image != r.tags["v1"] {
		t.Errorf("service's template after the rollback: %s, want %s (rollcall's revision 1)", svc.Spec.Task.Image, r.tags["v1"])
	}
	if strings.HasPrefix(string(svc.UpdateState), "rollback") {
		t.Errorf("update state %s: the rollback went through Swarm's own, want a forward update", svc.UpdateState)
	}
	if res := r.run("retry", "web", "-f", file); res.code != exitOK {
		t.Errorf("retry web: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	if res := r.run("apply", "--yes", "-f", file); res.code != exitOK || !r.allOn("v2") {
		t.Errorf("apply after retry: exit %d, running %v; want both on v2\n%s", res.code, r.running(), res.stderr)
	}
}

// Step mode on a real swarm: each approval advances exactly one slot, the
// next is offered only once the last one's task is RUNNING, and nothing
// moves between approvals (Swarm's updater sleeps its paced delay).
func TestRealSwarmStepModeOneSlotPerApproval(t *testing.T) {
	r := newSwarmRig(t)
	if res := r.run("apply", "--yes", "-f", r.write("v1")); res.code != exitOK {
		t.Fatalf("apply v1: exit %d\n%s", res.code, res.stderr)
	}
	d, err := load.Parse("rollcall.yaml", []byte(r.desired("v2")))
	if err != nil {
		t.Fatal(err)
	}
	s := session.New(session.Options{
		Client: r.m, Swarm: r.m, Source: source.Static("rollcall.yaml", d), Mode: session.ModeStep,
		LockPath: filepath.Join(r.dir, "step.lock"), StateDir: filepath.Join(r.dir, "step-state"), Settle: -1,
	})
	ctx, cancel := context.WithCancel(r.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	var last session.Snapshot
	await := func(what string, limit time.Duration, cond func(session.Snapshot) bool) session.Snapshot {
		t.Helper()
		deadline := time.After(limit)
		for {
			select {
			case snap, ok := <-s.Snapshots():
				if !ok {
					t.Fatalf("waiting for %s: the session ended", what)
				}
				last = snap
				if cond(snap) {
					return snap
				}
			case <-deadline:
				t.Fatalf("waiting for %s: gave up after %s; running %v\n%s", what, limit, r.running(), last.Plan.String())
			}
		}
	}
	offered := func(s session.Snapshot) (reconcile.Step, bool) {
		for _, st := range s.Plan.Executable() {
			if st.Service != nil && (st.Action == reconcile.ActRollout || st.Action == reconcile.ActAdvance) {
				return st, true
			}
		}
		return reconcile.Step{}, false
	}
	onV2 := func() int {
		n := 0
		for _, img := range r.running() {
			if img == r.tags["v2"] {
				n++
			}
		}
		return n
	}
	for n := 1; n <= 2; n++ {
		var st reconcile.Step
		await(fmt.Sprintf("step %d offered", n), 2*time.Minute, func(s session.Snapshot) bool {
			var ok bool
			st, ok = offered(s)
			return ok
		})
		s.Do(session.ApproveStep{Key: st.Key()})
		r.waitSwarm(fmt.Sprintf("slot %d on v2", n), 2*time.Minute, func() bool { return onV2() == n })
		time.Sleep(5 * time.Second) // Swarm's updater sleeps: no other slot goes unasked
		if got := onV2(); got != n {
			t.Fatalf("5s after approval %d: %d slots on v2, want %d (one slot per approval)", n, got, n)
		}
	}
	// The paced roll's last write puts the file's settings back; then
	// nothing is left to approve.
	var settings reconcile.Step
	await("the settings write", 2*time.Minute, func(s session.Snapshot) bool {
		if st, ok := offered(s); ok {
			t.Fatalf("after the last slot, %s is offered", st.Action)
		}
		for _, st := range s.Plan.Executable() {
			if st.Action == reconcile.ActSettings {
				settings = st
				return true
			}
		}
		return false
	})
	s.Do(session.ApproveStep{Key: settings.Key()})
	await("converged", 2*time.Minute, func(s session.Snapshot) bool {
		return s.Standing.Kind == session.StandingConverged && !s.Standing.Pending
	})
	if !slices.Equal(sortedImages(r.running()), []string{r.tags["v2"], r.tags["v2"]}) {
		t.Errorf("running %v, want both on v2", r.running())
	}
}

func (r *swarmRig) waitSwarm(what string, limit time.Duration, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.t.Fatalf("waiting for %s: gave up after %s; running %v", what, limit, r.running())
		}
	}
}

func sortedImages(m map[int]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
