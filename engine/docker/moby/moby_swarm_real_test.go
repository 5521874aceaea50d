package moby_test

// The Swarm half of the adapter against a real swarm manager: a swarm of
// the test's own (never the main engine, which must not join one).

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// swarmTestTimeout bounds what one check does with the swarm.
const swarmTestTimeout = 2 * time.Minute

// realSwarm is the manager of a one-node swarm of the test's own, with the
// demoapp image on its node, and the manager's endpoint for the docker
// command line.
type realSwarm struct {
	m     *moby.Moby
	host  string
	image string
}

// swarmAdapterChecks are the adapter's checks on a real swarm, each on a
// prefix of its own, one after another (a one-node swarm runs few tasks).
var swarmAdapterChecks = []struct {
	name  string
	check func(t *testing.T, ctx context.Context, sw realSwarm, prefix string)
}{
	{"InfoAndNodes", checkSwarmInfoAndNodes},
	{"SpecReadsBackAsWritten", checkSwarmSpecRoundTrip},
	{"DefaultsReadBackZero", checkSwarmDefaultsRoundTrip},
	{"TasksPerSlot", checkSwarmTasks},
	{"StaleVersionIsOutOfSequence", checkSwarmOutOfSequence},
	{"NameInUseIsConflict", checkSwarmConflict},
	{"ServicesAreThePrefixs", checkSwarmServicesFiltered},
	{"RefusedSpecReachesNothing", checkSwarmRefusedSpec},
	{"RemoveService", checkSwarmRemove},
	{"StepLabelAdvancesOneSlot", checkSwarmStepTrick},
}

func runSwarmAdapterChecks(t *testing.T, sw realSwarm) {
	for _, c := range swarmAdapterChecks {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), swarmTestTimeout)
			defer cancel()
			prefix := dockertest.Prefix(t)
			t.Cleanup(func() { removeServices(t, sw, prefix) })
			c.check(t, ctx, sw, prefix)
		})
	}
}

// removeServices removes what a check left of its prefix's.
func removeServices(t *testing.T, sw realSwarm, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	svcs, err := sw.m.Services(ctx, prefix)
	if err != nil {
		t.Errorf("cleanup: %v", err)
		return
	}
	for _, s := range svcs {
		if err := sw.m.RemoveService(ctx, s.ID); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// demoService is a managed demoapp service of prefix, one replica, with a
// healthcheck: RUNNING once the app answers.
func demoService(sw realSwarm, prefix, workload string) docker.ServiceSpec {
	return docker.ServiceSpec{
		Name: docker.ServiceName(prefix, workload),
		Labels: map[string]string{docker.ManagedLabel(prefix): "true", docker.StackLabel: prefix,
			docker.WorkloadLabel(prefix): workload},
		Task: docker.CreateSpec{
			Image:   sw.image,
			Command: []string{"-listen", ":8080", "-version", "v1"},
			Labels: map[string]string{docker.ManagedLabel(prefix): "true", docker.WorkloadLabel(prefix): workload,
				docker.SpecLabel(prefix): "rev1"},
			Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second,
				Timeout: time.Second, Retries: 3},
		},
		Replicas: 1,
		Update: docker.UpdateConfig{Parallelism: 1, Delay: time.Second, Monitor: 2 * time.Second,
			FailureAction: docker.FailurePause, Order: docker.OrderStartFirst},
		EndpointMode: "dnsrr",
	}
}

func mustService(t *testing.T, ctx context.Context, sw realSwarm, prefix, id string) docker.Service {
	t.Helper()
	svcs, err := sw.m.Services(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range svcs {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("service %s is not among %s's: %+v", id, prefix, svcs)
	return docker.Service{}
}

func mustCreateService(t *testing.T, ctx context.Context, sw realSwarm, spec docker.ServiceSpec) string {
	t.Helper()
	id, err := sw.m.CreateService(ctx, spec)
	if err != nil {
		t.Fatalf("create service %s: %v", spec.Name, err)
	}
	return id
}

// waitTask waits until the manager shows a task of prefix that ok accepts.
func waitTask(t *testing.T, ctx context.Context, sw realSwarm, prefix string, what string, ok func(docker.Task) bool) docker.Task {
	t.Helper()
	var last []docker.Task
	for ctx.Err() == nil {
		ts, err := sw.m.Tasks(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range ts {
			if ok(task) {
				return task
			}
		}
		last = ts
		time.Sleep(200 * time.Millisecond) // docker/cli's progress polls as often
	}
	t.Fatalf("no task %s; the last seen: %+v", what, last)
	return docker.Task{}
}

func checkSwarmInfoAndNodes(t *testing.T, ctx context.Context, sw realSwarm, _ string) {
	info, err := sw.m.SwarmInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.ClusterID == "" || info.NodeID == "" || info.Managers < 1 || info.Nodes < 1 {
		t.Fatalf("SwarmInfo = %+v", info)
	}
	nodes, err := sw.m.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(nodes, func(n docker.Node) bool { return n.ID == info.NodeID })
	if i < 0 || !nodes[i].Manager || !nodes[i].Leader || nodes[i].State != docker.NodeReady || nodes[i].Availability != "active" {
		t.Fatalf("nodes %+v: want the manager %s among them, the leader, ready", nodes, info.NodeID)
	}
}

// Every option rollcall writes reads back as written: the planner compares
// what it reads with what it would write.
func checkSwarmSpecRoundTrip(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	net := prefix + "_default"
	if _, err := dockertest.CLI(ctx, "--host", sw.host, "network", "create", "--driver", "overlay", "--attachable",
		"--label", docker.ManagedLabel(prefix)+"=true", net); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = dockertest.CLI(context.Background(), "--host", sw.host, "network", "rm", net) })
	spec := demoService(sw, prefix, "web")
	data := prefix + "-data"
	spec.Task.Env = []string{"GREETING=hello", "MODE=swarm"}
	spec.Task.StopSignal = "SIGINT"
	spec.Task.StopTimeout = 7 * time.Second
	spec.Task.Limits = docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20}
	spec.Restart = docker.SwarmRestart{Condition: docker.RestartOnFailure, Delay: 2 * time.Second, MaxAttempts: 3, Window: time.Minute}
	spec.Reservations = docker.Reservations{NanoCPUs: 1e8, Memory: 8 << 20}
	spec.Placement = docker.Placement{Constraints: []string{"node.role == manager", "node.hostname != no-such-node"},
		Preferences: []string{"node.labels.zone"}, MaxReplicas: 2}
	spec.Labels[prefix+".test.owner"] = "roundtrip"
	spec.Task.Networks = []string{net}
	spec.Task.Aliases = map[string][]string{net: {"web", "www"}}
	spec.Task.Mounts = []docker.Mount{
		{Type: "volume", Source: data, Target: "/data"},
		{Type: "tmpfs", Target: "/tmp", Size: 8 << 20},
		{Type: "bind", Source: "/etc", Target: "/host-etc", ReadOnly: true},
	}
	spec.Task.Volumes = []docker.VolumeSpec{{Name: data, Driver: "local", Labels: map[string]string{docker.ManagedLabel(prefix): "true"}}}
	spec.Task.ReadOnly = true
	spec.Task.Options = docker.ContainerOptions{
		Entrypoint: []string{"/demoapp"}, WorkingDir: "/data", Hostname: "web-{{.Task.Slot}}",
		CapDrop: []string{"NET_RAW"}, Init: true, Ulimits: []docker.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}},
		Sysctls: map[string]string{"net.ipv4.ip_local_port_range": "20000 30000"}, ExtraHosts: []string{"db:10.9.0.5"},
		DNS: []string{"10.9.0.2"}, DNSSearch: []string{"shop.internal"}, LogDriver: "json-file",
		LogOptions: map[string]string{"max-size": "1m"}, GroupAdd: []string{"1234"},
	}
	spec.Rollback = docker.UpdateConfig{Parallelism: 0, Delay: 0, Monitor: time.Second, FailureAction: docker.FailureContinue,
		Order: docker.OrderStopFirst, MaxFailureRatio: 0.5}
	spec.Ports = []docker.ServicePort{{Target: 8080, Published: 18080, Proto: "tcp", Mode: docker.PublishHost}}

	id := mustCreateService(t, ctx, sw, spec)
	got := mustService(t, ctx, sw, prefix, id)
	if !reflect.DeepEqual(got.Spec, spec) {
		t.Fatalf("spec read back:\n%+v\nwritten:\n%+v", got.Spec, spec)
	}
	// Runnable as written: the task turns healthy (RUNNING).
	waitTask(t, ctx, sw, prefix, "RUNNING", func(task docker.Task) bool { return task.State == docker.TaskRunning })
	got = mustService(t, ctx, sw, prefix, id) // the manager may have bumped its version since (allocation)

	// A write keeps the spec before it as PreviousSpec.
	next := spec
	next.Task.Labels = map[string]string{docker.ManagedLabel(prefix): "true", docker.WorkloadLabel(prefix): "web",
		docker.SpecLabel(prefix): "rev2"}
	if err := sw.m.UpdateService(ctx, id, got.Version, next); err != nil {
		t.Fatal(err)
	}
	got = mustService(t, ctx, sw, prefix, id)
	if !reflect.DeepEqual(got.Spec, next) || got.PreviousSpec == nil || !reflect.DeepEqual(*got.PreviousSpec, spec) {
		t.Fatalf("after an update: spec\n%+v\nprevious\n%+v", got.Spec, got.PreviousSpec)
	}
}

// What a spec leaves to Swarm reads back as left: no update or rollback
// settings, no endpoint, no healthcheck (the image's disabled), no
// restart policy.
func checkSwarmDefaultsRoundTrip(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "plain")
	spec.Update, spec.EndpointMode, spec.Task.Healthcheck = docker.UpdateConfig{}, "", nil
	spec.Task.Labels = nil
	spec.Labels = map[string]string{docker.ManagedLabel(prefix): "true"}
	id := mustCreateService(t, ctx, sw, spec)
	if got := mustService(t, ctx, sw, prefix, id); !reflect.DeepEqual(got.Spec, spec) {
		t.Fatalf("spec read back:\n%+v\nwritten:\n%+v", got.Spec, spec)
	}
}

func checkSwarmTasks(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	id := mustCreateService(t, ctx, sw, spec)
	info, err := sw.m.SwarmInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	task := waitTask(t, ctx, sw, prefix, "RUNNING", func(task docker.Task) bool { return task.State == docker.TaskRunning })
	if task.ServiceID != id || task.Slot != 1 || task.NodeID != info.NodeID || task.Desired != docker.TaskRunning ||
		task.Workload != "web" || task.Spec != "rev1" || task.Image != sw.image || task.ContainerID == "" ||
		task.Since.IsZero() || task.CreatedAt.IsZero() {
		t.Fatalf("task = %+v", task)
	}
	// A new revision: start-first, a second task in slot 1 beside the
	// first, then the first shut down.
	v := mustService(t, ctx, sw, prefix, id)
	next := v.Spec
	next.Task.Labels[docker.SpecLabel(prefix)] = "rev2"
	if err := sw.m.UpdateService(ctx, id, v.Version, next); err != nil {
		t.Fatal(err)
	}
	waitTask(t, ctx, sw, prefix, "of rev2 RUNNING", func(t docker.Task) bool { return t.Spec == "rev2" && t.State == docker.TaskRunning })
	old := waitTask(t, ctx, sw, prefix, "of rev1 shut down", func(t docker.Task) bool { return t.ID == task.ID && t.State.Ended() })
	if old.Desired != docker.TaskShutdown || old.Slot != 1 {
		t.Fatalf("the replaced task = %+v", old)
	}
	if st := mustService(t, ctx, sw, prefix, id); st.UpdateState == docker.UpdateNone || st.UpdateStarted.IsZero() {
		t.Fatalf("after an update: state %q since %v", st.UpdateState, st.UpdateStarted)
	}
}

func checkSwarmOutOfSequence(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	spec.Replicas = 0
	id := mustCreateService(t, ctx, sw, spec)
	v := mustService(t, ctx, sw, prefix, id)
	if err := sw.m.UpdateService(ctx, id, v.Version, spec); err != nil {
		t.Fatal(err)
	}
	err := sw.m.UpdateService(ctx, id, v.Version, spec)
	if !errors.Is(err, docker.ErrOutOfSequence) {
		t.Fatalf("a write at a stale version: %v, want ErrOutOfSequence", err)
	}
	t.Logf("the engine's words: %v", err)
}

func checkSwarmConflict(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	spec.Replicas = 0
	mustCreateService(t, ctx, sw, spec)
	if _, err := sw.m.CreateService(ctx, spec); !errors.Is(err, docker.ErrConflict) {
		t.Fatalf("a second create of %s: %v, want ErrConflict", spec.Name, err)
	}
}

// Services and Tasks see only the prefix's managed services.
func checkSwarmServicesFiltered(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	ours := demoService(sw, prefix, "web")
	foreign := demoService(sw, prefix, "foreign")
	foreign.Labels = map[string]string{prefix + ".unmanaged": "true"}
	foreign.Task.Labels = nil
	oursID := mustCreateService(t, ctx, sw, ours)
	foreignID := mustCreateService(t, ctx, sw, foreign)
	t.Cleanup(func() { _ = sw.m.RemoveService(context.Background(), foreignID) })
	svcs, err := sw.m.Services(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].ID != oursID {
		t.Fatalf("services of %s: %+v, want %s alone", prefix, svcs, ours.Name)
	}
	waitTask(t, ctx, sw, prefix, "of ours", func(task docker.Task) bool { return task.ServiceID == oursID })
	ts, err := sw.m.Tasks(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range ts {
		if task.ServiceID != oursID {
			t.Fatalf("Tasks of %s shows %+v, of another service", prefix, task)
		}
	}
	if ts, err := sw.m.Tasks(ctx, prefix+"-none"); err != nil || len(ts) != 0 {
		t.Fatalf("tasks of a prefix with no service: %+v, %v; want none (not the swarm's every task)", ts, err)
	}
}

// A spec Swarm cannot run is refused before it reaches the manager.
func checkSwarmRefusedSpec(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	spec.Task.Options.Privileged = true
	_, err := sw.m.CreateService(ctx, spec)
	var se *docker.SpecError
	if !errors.As(err, &se) {
		t.Fatalf("create of a privileged task: %v, want a SpecError", err)
	}
	if svcs, err := sw.m.Services(ctx, prefix); err != nil || len(svcs) != 0 {
		t.Fatalf("after a refused create: %+v, %v", svcs, err)
	}
}

func checkSwarmRemove(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	spec.Replicas = 0
	id := mustCreateService(t, ctx, sw, spec)
	if err := sw.m.RemoveService(ctx, id); err != nil {
		t.Fatal(err)
	}
	if svcs, err := sw.m.Services(ctx, prefix); err != nil || len(svcs) != 0 {
		t.Fatalf("after the remove: %+v, %v", svcs, err)
	}
	if err := sw.m.RemoveService(ctx, id); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("a second remove: %v, want ErrNotFound", err)
	}
	if err := sw.m.UpdateService(ctx, id, 1, spec); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("an update of a removed service: %v, want ErrNotFound", err)
	}
}

// The step trick (DESIGN §13) on a real manager, as the fake models it:
// with Parallelism 1 and a long Delay, a new revision updates one slot,
// and each write of the step label alone updates exactly one more.
func checkSwarmStepTrick(t *testing.T, ctx context.Context, sw realSwarm, prefix string) {
	spec := demoService(sw, prefix, "web")
	spec.Replicas = 3
	spec.Update = docker.UpdateConfig{Parallelism: 1, Delay: time.Hour, Monitor: time.Second,
		FailureAction: docker.FailurePause, Order: docker.OrderStartFirst}
	id := mustCreateService(t, ctx, sw, spec)
	live := func(rev string) (running, all int) {
		ts, err := sw.m.Tasks(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range ts {
			if task.Spec == rev && task.Desired == docker.TaskRunning {
				all++
				if task.State == docker.TaskRunning {
					running++
				}
			}
		}
		return running, all
	}
	waitLive := func(rev string, n int) {
		t.Helper()
		for ctx.Err() == nil {
			if running, _ := live(rev); running == n {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%d tasks of %s never ran", n, rev)
	}
	waitLive("rev1", 3)
	write := func(edit func(*docker.ServiceSpec)) {
		t.Helper()
		v := mustService(t, ctx, sw, prefix, id)
		next := v.Spec
		edit(&next)
		if err := sw.m.UpdateService(ctx, id, v.Version, next); err != nil {
			t.Fatal(err)
		}
	}
	write(func(s *docker.ServiceSpec) { s.Task.Labels[docker.SpecLabel(prefix)] = "rev2" })
	for step := 1; step <= 3; step++ {
		waitLive("rev2", step)
		time.Sleep(3 * time.Second) // the Monitor, and room for a slot too many to show
		if running, all := live("rev2"); running != step || all != step {
			t.Fatalf("step %d: %d tasks of rev2 running, %d that should run; want %d", step, running, all, step)
		}
		if step < 3 {
			write(func(s *docker.ServiceSpec) { s.Labels[docker.StepLabel(prefix)] = strconv.Itoa(step) })
		}
	}
}

// An engine outside any swarm is not a manager.
func TestSwarmInfoOfAnEngineOutsideASwarm(t *testing.T) {
	m := dockertest.Engine(t)
	info, err := m.SwarmInfo(context.Background())
	if err == nil {
		t.Skipf("the main engine manages swarm %s here: no engine outside a swarm to ask", info.ClusterID)
	}
	if !errors.Is(err, docker.ErrNotManager) {
		t.Fatalf("SwarmInfo of the main engine (in no swarm): %v, want ErrNotManager", err)
	}
}

// The adapter on a one-node swarm of the test's own (dockertest.StartSwarm).
func TestSwarmAdapterOnARealSwarm(t *testing.T) {
	image, _ := dockertest.DemoappImage(t, "v1")
	sw := dockertest.StartSwarm(t, 1)
	sw.Load(t, image)
	runSwarmAdapterChecks(t, realSwarm{m: sw.Nodes[0].Client(t), host: sw.Host, image: image})
}
