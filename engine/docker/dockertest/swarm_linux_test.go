package dockertest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// A swarm of one: node 0 is an active manager of a cluster of one node, a
// dnsrr service of the demoapp image, healthchecked, reaches RUNNING from
// the image loaded into the engine (no registry, no pull tried); on no
// network of its own, its task is on the engine's default bridge, and its
// port published in host mode answers on the node's address, from the hub.
func TestSwarmOfOne(t *testing.T) {
	Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := StartSwarm(t, 1)
	m := s.Nodes[0]
	if m.Host != s.Host || !m.Manager || m.NodeID == "" || s.ClusterID == "" {
		t.Fatalf("node 0: host %s (swarm's %s), manager %v, node %q, cluster %q", m.Host, s.Host, m.Manager, m.NodeID, s.ClusterID)
	}
	info, err := m.CLI(ctx, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}} {{.Swarm.Nodes}} {{.Swarm.NodeID}} {{.Swarm.Cluster.ID}}")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("active true 1 %s %s", m.NodeID, s.ClusterID); info != want {
		t.Errorf("docker info: %q, want %q", info, want)
	}

	tag, _ := DemoappImage(t, "v1")
	s.Load(t, tag)
	spec := demoappService("web", tag, 1, "")
	spec["EndpointSpec"] = map[string]any{"Mode": "dnsrr", "Ports": []map[string]any{
		{"Protocol": "tcp", "TargetPort": 8080, "PublishedPort": 18080, "PublishMode": "host"},
	}}
	createService(ctx, t, m.Dockerd, spec)
	tasks := runningTasks(ctx, t, s, "web", 1)
	if tasks[0].NodeID != m.NodeID {
		t.Errorf("the task is on node %s, want %s", tasks[0].NodeID, m.NodeID)
	}
	// The task started from the loaded image, with no pull tried.
	if log, err := os.ReadFile(m.logFile()); err != nil || strings.Contains(string(log), "pulling image") {
		t.Errorf("node 0 tried a pull for its task (%v): DOCKER_SERVICE_PREFER_OFFLINE_IMAGE is not 1 in its dockerd's environment", err)
	}
	id := tasks[0].Status.ContainerStatus.ContainerID
	if nets, err := m.CLI(ctx, "inspect", "--format", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", id); err != nil || nets != "bridge" {
		t.Errorf("the task of a service on no network is on %q (%v), want the default bridge", nets, err)
	}
	body := getUntil(t, s.Get, "http://"+net.JoinHostPort(m.Addr, "18080")+"/", http.StatusOK)
	if want := "v1 " + shortID(id); !strings.HasPrefix(body, want) {
		t.Errorf("GET / on node 0's host-mode port, from the hub: %q, want %q…", body, want)
	}
}

// A swarm of three: one manager, two workers, all ready; a dnsrr service
// of three replicas, one per node, reaches RUNNING; a task on node 0
// reaches a task on node 1 on its overlay address (VXLAN between the
// engines' namespaces) and the service by its name (dnsrr); a worker's
// dockerd killed, the manager marks its node down, and the node started
// again is ready again.
func TestSwarmOfThree(t *testing.T) {
	Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := StartSwarm(t, 3)
	m := s.Nodes[0]
	info, err := m.CLI(ctx, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.Nodes}} {{.Swarm.Managers}}")
	if err != nil {
		t.Fatal(err)
	}
	if info != "active 3 1" {
		t.Errorf("docker info on the manager: %q, want active, 3 nodes, 1 manager", info)
	}
	ls, err := m.CLI(ctx, "node", "ls", "--format", "{{.ID}} {{.Status}} {{.ManagerStatus}}")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range s.Nodes {
		if n.Manager != (n == m) {
			t.Errorf("engine %s: manager %v", n.Name, n.Manager)
		}
		w := n.NodeID + " Ready"
		if n.Manager {
			w += " Leader"
		}
		want = append(want, w)
	}
	got := strings.Split(ls, "\n")
	for i := range got {
		got[i] = strings.TrimSpace(got[i])
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("docker node ls:\n%s\nwant %q", ls, want)
	}
	for i, n := range s.Nodes {
		state, err := n.CLI(ctx, "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}}")
		if err != nil || state != "active "+n.NodeID {
			t.Errorf("docker info on node %d: %q (%v), want active %s", i, state, err, n.NodeID)
		}
	}

	tag, _ := DemoappImage(t, "v1")
	s.Load(t, tag)
	if _, err := m.CLI(ctx, "network", "create", "--driver", "overlay", "ov"); err != nil {
		t.Fatal(err)
	}
	spec := demoappService("web", tag, 3, "ov")
	spec["TaskTemplate"].(map[string]any)["Placement"] = map[string]any{"MaxReplicas": 1}
	createService(ctx, t, m.Dockerd, spec)
	tasks := runningTasks(ctx, t, s, "web", 3)
	on := map[string]swarmTask{} // node ID → its task
	for _, task := range tasks {
		on[task.NodeID] = task
	}
	if len(on) != 3 {
		t.Fatalf("3 replicas on %d nodes, want one on each", len(on))
	}

	// From inside the task on node 0, the task on node 1 answers on its
	// overlay address: VXLAN between the engines' namespaces.
	from, to := on[s.Nodes[0].NodeID], on[s.Nodes[1].NodeID]
	ns, err := s.Nodes[0].ContainerNetns(ctx, from.Status.ContainerStatus.ContainerID)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	addr := to.address(t, "ov")
	body := getUntil(t, ns.Get, "http://"+net.JoinHostPort(addr, "8080")+"/", http.StatusOK)
	if want := "v1 " + shortID(to.Status.ContainerStatus.ContainerID); !strings.HasPrefix(body, want) {
		t.Errorf("GET / on node 1's task at %s, from node 0's: %q, want %q…", addr, body, want)
	}
	// The task's own resolver answers the service's name (dnsrr: a task's
	// address, no virtual IP).
	out, err := s.Nodes[0].CLI(ctx, "exec", from.Status.ContainerStatus.ContainerID, "/demoapp", "-fetch", "http://web:8080/")
	if err != nil || !strings.Contains(out, "v1 ") {
		t.Errorf("GET http://web:8080/ from node 0's task: %q, %v", out, err)
	}

	// A worker's dockerd killed: the manager marks its node down, and the
	// node started again is ready again.
	w := s.Nodes[2]
	w.Kill(t)
	s.WaitNode(t, 2, NodeDown)
	w.Start(t)
	s.WaitNode(t, 2, NodeReady)
}

// A swarm of three managers: the swarm has the harness's raft and
// dispatcher settings; its leader killed, the two others elect a leader
// of their own and still write (a quorum of two).
func TestSwarmOfThreeManagers(t *testing.T) {
	Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s := StartSwarm(t, 3, Managers(3))
	info, err := s.Nodes[0].CLI(ctx, "info", "--format", "{{.Swarm.Nodes}} {{.Swarm.Managers}}")
	if err != nil || info != "3 3" {
		t.Errorf("docker info: %q (%v), want 3 nodes, 3 managers", info, err)
	}
	var sw struct {
		Spec struct {
			Raft       struct{ ElectionTick int }
			Dispatcher struct{ HeartbeatPeriod time.Duration }
		}
	}
	if err := s.Nodes[0].apiGet(ctx, "/swarm", &sw); err != nil {
		t.Fatal(err)
	}
	if r, d := sw.Spec.Raft, sw.Spec.Dispatcher; r.ElectionTick != swarmElectionTicks || d.HeartbeatPeriod != swarmHeartbeat {
		t.Errorf("the swarm's election ticks and heartbeat: %d, %s; want %d, %s", r.ElectionTick, d.HeartbeatPeriod, swarmElectionTicks, swarmHeartbeat)
	}
	for i, n := range s.Nodes {
		if !n.Manager {
			t.Errorf("node %d is no manager", i)
		}
	}

	s.Nodes[0].Kill(t)
	err = s.wait(ctx, "a leader other than node 0", func(ctx context.Context) (bool, string, error) {
		nodes, err := s.list(ctx)
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes {
			if n.ID != s.Nodes[0].NodeID && n.ManagerStatus != nil && n.ManagerStatus.Leader {
				return true, describe(nodes), nil
			}
		}
		return false, describe(nodes), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Nodes[1].CLI(ctx, "network", "create", "--driver", "overlay", "after"); err != nil {
		t.Errorf("a write on node 1 with node 0 gone: %v", err)
	}
}

// The swarm's cleanup leaves nothing: no process (a task's among them),
// mount (an overlay network's namespace among them), cgroup or folder of
// its engines, and no veth in the hub.
func TestSwarmLeavesNothing(t *testing.T) {
	Engine(t)
	var s *Swarm
	var hub *os.File
	t.Run("swarm", func(t *testing.T) {
		s = StartSwarm(t, 2)
		var err error
		if hub, err = os.Open(fmt.Sprintf("/proc/self/fd/%d", s.hub.Fd())); err != nil {
			t.Fatal(err)
		}
		links := hubLinks(t, hub)
		if want := []string{"br0", "e0", "e1", "lo"}; !slices.Equal(links, want) {
			t.Errorf("the hub's links: %v, want %v", links, want)
		}
		// A task on each node, on an overlay network, for the cleanup to
		// take (no healthcheck: nothing of it is under test).
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		tag, _ := DemoappImage(t, "v1")
		s.Load(t, tag)
		if _, err := s.Nodes[0].CLI(ctx, "network", "create", "--driver", "overlay", "ov"); err != nil {
			t.Fatal(err)
		}
		spec := demoappService("web", tag, 2, "ov")
		template := spec["TaskTemplate"].(map[string]any)
		delete(template["ContainerSpec"].(map[string]any), "Healthcheck")
		template["Placement"] = map[string]any{"MaxReplicas": 1}
		createService(ctx, t, s.Nodes[0].Dockerd, spec)
		runningTasks(ctx, t, s, "web", 2)
	})
	if hub == nil {
		return
	}
	defer hub.Close()
	if links := hubLinks(t, hub); !slices.Equal(links, []string{"br0", "lo"}) {
		t.Errorf("the hub's links after the cleanup: %v, want br0 and lo alone", links)
	}
	for _, n := range s.Nodes {
		leftNothing(t, n.Dockerd)
	}
}

// hubLinks are the names of the links in the namespace ns, sorted.
func hubLinks(t *testing.T, ns *os.File) []string {
	t.Helper()
	var names []string
	err := inNS(ns, func() error {
		ifs, err := net.Interfaces()
		for _, i := range ifs {
			names = append(names, i.Name)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// Out of range, StartSwarmFor is refused, with nothing started.
func TestStartSwarmForRefuses(t *testing.T) {
	for _, tt := range []struct {
		n    int
		opts []SwarmOption
	}{
		{0, nil},
		{maxSwarmNN + 1, nil},
		{3, []SwarmOption{Managers(0)}},
		{3, []SwarmOption{Managers(4)}},
	} {
		if s, stop, err := startSwarm(context.Background(), tt.n, tt.opts); err == nil {
			stop()
			t.Errorf("a swarm of %d nodes, %d options: %d nodes, no error", tt.n, len(tt.opts), len(s.Nodes))
		}
	}
}

// demoappService is the spec of a replicated dnsrr service of the demoapp
// image on network (none when ""), healthchecked by its own exec-form
// probe every second.
func demoappService(name, image string, replicas int, network string) map[string]any {
	spec := map[string]any{
		"Name": name,
		"TaskTemplate": map[string]any{
			"ContainerSpec": map[string]any{
				"Image": image,
				"Healthcheck": map[string]any{
					"Test":     []string{"CMD", "/demoapp", "-health"},
					"Interval": time.Second,
					"Timeout":  3 * time.Second,
					"Retries":  3,
				},
			},
		},
		"Mode":         map[string]any{"Replicated": map[string]any{"Replicas": replicas}},
		"EndpointSpec": map[string]any{"Mode": "dnsrr"},
	}
	if network != "" {
		spec["TaskTemplate"].(map[string]any)["Networks"] = []map[string]any{{"Target": network}}
	}
	return spec
}

// createService creates the service of spec on the manager m through the
// API, with no registry query (the API's default).
func createService(ctx context.Context, t *testing.T, m *Dockerd, spec map[string]any) string {
	t.Helper()
	var created struct{ ID string }
	if err := m.apiCall(ctx, http.MethodPost, "/services/create", spec, &created); err != nil {
		t.Fatal(err)
	}
	return created.ID
}

// swarmTask is a task as the manager lists it.
type swarmTask struct {
	ID, NodeID   string
	Slot         int
	DesiredState string
	Status       struct {
		State, Err      string
		ContainerStatus struct{ ContainerID string }
	}
	NetworksAttachments []struct {
		Network   struct{ Spec struct{ Name string } }
		Addresses []string
	}
}

// address is the task's address on the network name.
func (task swarmTask) address(t *testing.T, name string) string {
	t.Helper()
	for _, a := range task.NetworksAttachments {
		if a.Network.Spec.Name == name && len(a.Addresses) > 0 {
			ip, _, err := net.ParseCIDR(a.Addresses[0])
			if err != nil {
				t.Fatal(err)
			}
			return ip.String()
		}
	}
	t.Fatalf("task %s has no address on %s: %+v", task.ID, name, task.NetworksAttachments)
	return ""
}

// runningTasks waits until service has n tasks meant to run, all RUNNING
// (healthy, for a healthchecked one), and returns them.
func runningTasks(ctx context.Context, t *testing.T, s *Swarm, service string, n int) []swarmTask {
	t.Helper()
	filter := url.QueryEscape(fmt.Sprintf(`{"service":[%q],"desired-state":["running"]}`, service))
	var tasks []swarmTask
	err := s.wait(ctx, fmt.Sprintf("%d tasks of %s running", n, service), func(ctx context.Context) (bool, string, error) {
		tasks = nil
		if err := s.Nodes[0].apiGet(ctx, "/tasks?filters="+filter, &tasks); err != nil {
			return false, "", err
		}
		var seen []string
		running := 0
		for _, task := range tasks {
			seen = append(seen, fmt.Sprintf("slot %d on %s: %s %s", task.Slot, shortID(task.NodeID), task.Status.State, task.Status.Err))
			if task.Status.State == "running" {
				running++
			}
		}
		return running == n && len(tasks) == n, strings.Join(seen, "; "), nil
	})
	if err != nil {
		t.Fatalf("%v\nthe swarm's engines, their last lines:\n%s", err, s.logTails(20))
	}
	return tasks
}
