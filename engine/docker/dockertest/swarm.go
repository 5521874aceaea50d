package dockertest

// This file holds a real Docker Swarm of a test's own (issue 30, DESIGN
// §13): StartSwarm starts n engines as StartEngines does and makes them
// one swarm, whose nodes a test can stop, kill and start again.
//
// What the harness guarantees:
//
//   - Nothing runs in the machine's network namespace, and nothing of the
//     main engine is touched: each engine is one of StartEngines (its own
//     namespace, data and exec roots, key file, containerd namespaces and
//     cgroup parent), and the main engine is never asked to join or init
//     a swarm.
//   - The nodes reach each other over a bridge, br0, that lives in a
//     network namespace of the harness's own (the hub): each engine has a
//     veth, eth0 in its namespace, whose peer is a port of br0. The
//     addresses are in 198.18.0.0/24 (RFC 2544's range for benchmarks):
//     the hub is 198.18.0.1, node i is 198.18.0.(10+i). None of Docker's
//     pools (172.17.0.0/16 and up, 192.168.0.0/16, and 10.0.0.0/8 of the
//     swarm's overlay networks) holds them, and they exist only inside
//     the namespaces this process made, so they clash with nothing.
//   - Node 0 inits the swarm, advertising its bridge address; with
//     Managers(k) nodes 1…k-1 join as managers, one after another (each
//     raft join is acknowledged before the next), and the rest join as
//     workers, all at once. The default is one manager and n-1 workers:
//     what a test of a lost node wants (a killed worker is marked down,
//     the manager answers on). Three managers keep a quorum when one is
//     lost. StartSwarm returns once the manager lists every node ready
//     (and every manager reachable) and every engine says it is active.
//   - A lost node is seen soon: the dispatcher's heartbeat is 2s (5s by
//     default), so the manager marks a killed worker down within about
//     6s (4s here, idle). The raft election timeout is 5 ticks of a
//     second (10 by default): a lost leader is replaced about 6s later,
//     and the new leader marks the old one down only after its grace for
//     nodes it has not heard from yet, 6 heartbeats (12s). While a
//     manager is lost, Host may be its: the other managers' Hosts answer.
//   - Images: the engines have no registry and nothing can be pulled.
//     Load copies an image from the main engine into every node (one
//     `docker save`, loaded everywhere at once), and every dockerd runs
//     with DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1, so a task starts from
//     the local image without a pull. A service must be created without
//     querying a registry: `docker service create --no-resolve-image`, or
//     the API's create without a registry query (the default of a raw API
//     call; the moby client's QueryRegistry=false).
//   - Networks: VXLAN works between the namespaces, so overlay networks
//     do; IPVS does not on this kernel, so a service must use endpoint
//     mode dnsrr (no virtual IP) and publish no port on the ingress
//     routing mesh (a port published in host mode works: it answers on
//     the node's Addr, which the hub reaches, see Swarm.Dial). The engines
//     run with --iptables=false, as those of StartEngines do, and each has
//     a default bridge of its own (DefaultBridge), as a host has: a task
//     on no network of its service's is on it, reached from its node only.
//   - Reaching tasks: Swarm.Dial and Get open their sockets in the hub
//     (they reach every node's Addr); Dockerd.Dial and Get in a node's
//     namespace (its docker_gwbridge and host-mode ports); ContainerNetns
//     in a container's own namespace, which is on its overlay networks:
//     from a task on one node, a task on another node answers on its
//     overlay address, through VXLAN.
//   - Cleanup leaves nothing: every engine is killed (SIGKILL) and
//     removed as StartEngines's are (processes, its containers among them,
//     mounts, among them the swarm's overlay namespaces under the exec
//     root, cgroups, folders), then the veths and the bridge, with the
//     hub namespace. No engine leaves the swarm or is stopped gracefully
//     first: its swarm state goes with its data root, and a graceful stop
//     of a node takes seconds (a worker's about 4s here, one after the
//     other), a kill a few milliseconds. A test process that dies leaves
//     its engines to the next run's sweep (see StartEngines); its hub
//     namespace and veths go with it, as no process runs in the hub and
//     a veth dies with either end's namespace.
//
// Healthchecks cost: each probe is an exec, about 70 ms of CPU here.
// Tests keep replicas few and intervals at 1s or more.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Swarm is a swarm of engines of a test's own (see StartSwarm).
type Swarm struct {
	ClusterID string       // the swarm's ID, as `docker info` shows it
	Host      string       // node 0's endpoint, a manager's: unix://…, reachable from the machine's namespace
	Nodes     []*SwarmNode // node 0 first

	hub   *os.File // the network namespace of the bridge
	setup string   // how long each step of the setup took
}

// SwarmNode is one node of a Swarm: an engine of StartEngines (its Kill,
// Stop and Start are the node's), with its place in the swarm. A node
// started again after a Kill or a Stop comes back as the same node, on
// its own (see Swarm.WaitNode).
type SwarmNode struct {
	*Dockerd
	NodeID  string // its swarm node ID
	Addr    string // its address on the bridge, which it advertises
	Manager bool   // it joined as a manager (node 0 always is)
}

// SwarmOption changes how StartSwarm sets its swarm up.
type SwarmOption func(*swarmConfig)

type swarmConfig struct{ managers int }

// Managers makes the first k nodes managers (1 by default): 3 of 3 keep a
// quorum when one of them is lost.
func Managers(k int) SwarmOption { return func(c *swarmConfig) { c.managers = k } }

// Swarm node states, as the manager reports them (see Swarm.WaitNode).
const (
	NodeReady = "ready"
	NodeDown  = "down"
)

const (
	swarmBridge    = "br0"  // the bridge, in the hub
	swarmLink      = "eth0" // each engine's end of its veth
	swarmHubAddr   = "198.18.0.1"
	swarmPrefix    = "/24"
	swarmPort      = "2377"
	swarmHeartbeat = 2 * time.Second
	// swarmElectionTicks is the raft election timeout, in ticks of a
	// second (10 by default).
	swarmElectionTicks = 5
	// swarmTimeout bounds each step of the setup (the init, the joins,
	// the wait for every node ready) and a WaitNode: seconds on an idle
	// machine.
	swarmTimeout = 2 * time.Minute
	// swarmPoll is how often a wait asks the manager again.
	swarmPoll = 200 * time.Millisecond
	// swarmListTimeout bounds one manager's answer of its node list, so
	// that a wait goes on to the next manager soon.
	swarmListTimeout = 2 * time.Second
	maxSwarmNN       = 50 // nodes of one swarm at most (their addresses)
)

// nodeAddr is node i's address on the bridge.
func nodeAddr(i int) string { return "198.18.0." + strconv.Itoa(10+i) }

// StartSwarm starts n engines of t's own (see StartEngines) and makes them
// one swarm (see the file's comment for what it guarantees), and in t's
// cleanup removes it all. It skips t (see Skip) when this machine cannot
// run engines.
func StartSwarm(t testing.TB, n int, opts ...SwarmOption) *Swarm {
	t.Helper()
	if err := enginesCheck(); err != nil {
		Skip(t, fmt.Errorf("no swarm of a test's own: %w", err))
	}
	began := time.Now()
	s, stop, err := startSwarm(context.Background(), n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the swarm's engines, their last lines:\n%s", s.logTails(20))
		}
		began := time.Now()
		if err := stop(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		t.Logf("swarm of %d node(s) removed in %s", n, time.Since(began).Round(time.Millisecond))
	})
	t.Logf("swarm of %d node(s) up in %s (%s)", n, time.Since(began).Round(time.Millisecond), s.setup)
	return s
}

// StartSwarmFor is StartSwarm for a program that is not a test (the
// bench), as StartEnginesFor is StartEngines's: stop removes it all, and
// the caller must call it, once.
func StartSwarmFor(ctx context.Context, n int, opts ...SwarmOption) (s *Swarm, stop func() error, err error) {
	if err := enginesCheck(); err != nil {
		return nil, nil, fmt.Errorf("no swarm of its own here: %w", err)
	}
	return startSwarm(ctx, n, opts)
}

// startSwarm starts, joins and checks the swarm. On an error it has
// removed whatever it started; otherwise stop removes it all.
func startSwarm(ctx context.Context, n int, opts []SwarmOption) (*Swarm, func() error, error) {
	cfg := swarmConfig{managers: 1}
	for _, opt := range opts {
		opt(&cfg)
	}
	if n < 1 || n > maxSwarmNN {
		return nil, nil, fmt.Errorf("a swarm of %d nodes: want 1 to %d", n, maxSwarmNN)
	}
	if cfg.managers < 1 || cfg.managers > n {
		return nil, nil, fmt.Errorf("a swarm of %d nodes with %d managers: want 1 to %d", n, cfg.managers, n)
	}
	var steps []string
	step := func(what string, since time.Time) {
		steps = append(steps, what+" "+time.Since(since).Round(time.Millisecond).String())
	}

	began := time.Now()
	engines, stopEngines, err := startEngines(ctx, n, []EngineOption{DefaultBridge(), preferOffline})
	if err != nil {
		return nil, nil, err
	}
	step("engines", began)
	s := &Swarm{Host: engines[0].Host}
	for i, e := range engines {
		s.Nodes = append(s.Nodes, &SwarmNode{Dockerd: e, Addr: nodeAddr(i), Manager: i < cfg.managers})
	}
	stop := func() error {
		var errs []error
		for _, n := range s.Nodes { // killed, not stopped: see the file's comment
			errs = append(errs, n.killIfRunning())
		}
		err := errors.Join(append(errs, stopEngines())...)
		if s.hub != nil {
			err = errors.Join(err, s.unwire())
			s.hub.Close()
		}
		return err
	}
	fail := func(err error) (*Swarm, func() error, error) {
		err = fmt.Errorf("%w\nthe swarm's engines, their last lines:\n%s", err, s.logTails(20))
		if serr := stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", serr))
		}
		return nil, nil, err
	}

	began = time.Now()
	if s.hub, err = newNetns(); err != nil {
		return fail(fmt.Errorf("the swarm's bridge: %w", err))
	}
	if err := s.wire(); err != nil {
		return fail(fmt.Errorf("the swarm's bridge: %w", err))
	}
	step("bridge", began)

	began = time.Now()
	if err := s.init(ctx); err != nil {
		return fail(err)
	}
	step("init", began)
	began = time.Now()
	if err := s.joinAll(ctx); err != nil {
		return fail(err)
	}
	if n > 1 {
		step("joins", began)
	}
	began = time.Now()
	if err := s.waitAll(ctx); err != nil {
		return fail(err)
	}
	step("ready", began)
	s.setup = strings.Join(steps, ", ")
	return s, stop, nil
}

// preferOffline makes an engine's tasks start from its local image, with
// no pull (see the file's comment).
func preferOffline(e *Dockerd) {
	e.env = append(e.env, "DOCKER_SERVICE_PREFER_OFFLINE_IMAGE=1")
}

// init makes the swarm on node 0 and reads its ID.
func (s *Swarm) init(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, swarmTimeout)
	defer cancel()
	m := s.Nodes[0]
	listen := net.JoinHostPort(m.Addr, swarmPort)
	req := map[string]any{
		"ListenAddr":    listen,
		"AdvertiseAddr": listen,
		"Spec": map[string]any{
			"Dispatcher": map[string]any{"HeartbeatPeriod": swarmHeartbeat},
			"Raft":       map[string]any{"ElectionTick": swarmElectionTicks, "HeartbeatTick": 1},
		},
	}
	if err := m.apiCall(ctx, http.MethodPost, "/swarm/init", req, &m.NodeID); err != nil {
		return fmt.Errorf("swarm init: %w", err)
	}
	var sw struct{ ID string }
	if err := m.apiGet(ctx, "/swarm", &sw); err != nil {
		return fmt.Errorf("swarm init: %w", err)
	}
	s.ClusterID = sw.ID
	return nil
}

// joinAll joins nodes 1… to node 0's swarm: the managers one after
// another, then the workers all at once.
func (s *Swarm) joinAll(ctx context.Context) error {
	if len(s.Nodes) == 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, swarmTimeout)
	defer cancel()
	var sw struct {
		JoinTokens struct{ Worker, Manager string }
	}
	if err := s.Nodes[0].apiGet(ctx, "/swarm", &sw); err != nil {
		return fmt.Errorf("swarm join tokens: %w", err)
	}
	remote := net.JoinHostPort(s.Nodes[0].Addr, swarmPort)
	join := func(n *SwarmNode, token string) error {
		listen := net.JoinHostPort(n.Addr, swarmPort)
		req := map[string]any{"ListenAddr": listen, "AdvertiseAddr": listen, "RemoteAddrs": []string{remote}, "JoinToken": token}
		if err := n.apiCall(ctx, http.MethodPost, "/swarm/join", req, nil); err != nil {
			return fmt.Errorf("swarm join: %w", err)
		}
		return nil
	}
	var workers []*SwarmNode
	for _, n := range s.Nodes[1:] {
		if !n.Manager {
			workers = append(workers, n)
		} else if err := join(n, sw.JoinTokens.Manager); err != nil {
			return err
		}
	}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, n := range workers {
		wg.Go(func() { errs[i] = join(n, sw.JoinTokens.Worker) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// waitAll waits until the manager lists every node ready and every
// manager reachable, and every engine says it is an active node of this
// swarm; it reads each node's ID.
func (s *Swarm) waitAll(ctx context.Context) error {
	err := s.wait(ctx, "every node ready", func(ctx context.Context) (bool, string, error) {
		nodes, err := s.list(ctx)
		if err != nil {
			return false, "", err
		}
		ready := 0
		for _, n := range nodes {
			if n.Status.State == NodeReady && (n.ManagerStatus == nil || n.ManagerStatus.Reachability == "reachable") {
				ready++
			}
		}
		return ready == len(s.Nodes) && len(nodes) == len(s.Nodes), describe(nodes), nil
	})
	if err != nil {
		return err
	}
	for _, n := range s.Nodes {
		var info struct {
			Swarm struct {
				NodeID, LocalNodeState string
				ControlAvailable       bool
				Cluster                *struct{ ID string }
			}
		}
		if err := n.apiGet(ctx, "/info", &info); err != nil {
			return err
		}
		sw := info.Swarm
		if sw.LocalNodeState != "active" || sw.NodeID == "" {
			return fmt.Errorf("engine %s: swarm %q, node ID %q; want an active node", n.Name, sw.LocalNodeState, sw.NodeID)
		}
		if sw.ControlAvailable != n.Manager {
			return fmt.Errorf("engine %s: a manager is %v, want %v", n.Name, sw.ControlAvailable, n.Manager)
		}
		if n.Manager && (sw.Cluster == nil || sw.Cluster.ID != s.ClusterID) {
			return fmt.Errorf("engine %s: in cluster %v, want %s", n.Name, sw.Cluster, s.ClusterID)
		}
		n.NodeID = sw.NodeID
	}
	return nil
}

// swarmNode is a node as the manager lists it.
type swarmNode struct {
	ID     string
	Spec   struct{ Role string }
	Status struct {
		State, Addr string
	}
	ManagerStatus *struct {
		Reachability string
		Leader       bool
	}
}

// describe is nodes in a line, for an error.
func describe(nodes []swarmNode) string {
	var b strings.Builder
	for i, n := range nodes {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s %s %s", n.Status.Addr, n.Spec.Role, shortID(n.ID), n.Status.State)
		if n.ManagerStatus != nil {
			b.WriteString(" " + n.ManagerStatus.Reachability)
			if n.ManagerStatus.Leader {
				b.WriteString(" leader")
			}
		}
	}
	if len(nodes) == 0 {
		return "no nodes"
	}
	return b.String()
}

func shortID(id string) string { return id[:min(len(id), 12)] }

// list is the nodes as the first manager that answers lists them.
func (s *Swarm) list(ctx context.Context) ([]swarmNode, error) {
	var errs []error
	for _, n := range s.Nodes {
		if !n.Manager {
			continue
		}
		var nodes []swarmNode
		ctx, cancel := context.WithTimeout(ctx, swarmListTimeout) // a manager with no leader answers only at its own timeout
		err := n.apiGet(ctx, "/nodes", &nodes)
		cancel()
		if err == nil {
			return nodes, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// wait asks check every swarmPoll until it is done, for swarmTimeout at
// most; the error says what it saw last.
func (s *Swarm) wait(ctx context.Context, what string, check func(context.Context) (done bool, seen string, err error)) error {
	ctx, cancel := context.WithTimeout(ctx, swarmTimeout)
	defer cancel()
	var seen string
	var err error
	for {
		var done bool
		done, seen, err = check(ctx)
		if err == nil && done {
			return nil
		}
		select {
		case <-ctx.Done():
			if err != nil {
				seen = err.Error()
			}
			return fmt.Errorf("swarm: %s: not within %s (%w): last seen %s", what, swarmTimeout, ctx.Err(), seen)
		case <-time.After(swarmPoll):
		}
	}
}

// WaitNode waits until a manager reports node i in state (NodeReady,
// NodeDown), within a bound; it fails t with what the manager reported
// last and every engine's last log lines.
func (s *Swarm) WaitNode(t testing.TB, i int, state string) {
	t.Helper()
	if err := s.waitNode(context.Background(), i, state); err != nil {
		t.Fatalf("%v\nthe swarm's engines, their last lines:\n%s", err, s.logTails(20))
	}
}

func (s *Swarm) waitNode(ctx context.Context, i int, state string) error {
	id := s.Nodes[i].NodeID
	return s.wait(ctx, fmt.Sprintf("node %d (%s) %s", i, shortID(id), state), func(ctx context.Context) (bool, string, error) {
		nodes, err := s.list(ctx)
		if err != nil {
			return false, "", err
		}
		for _, n := range nodes {
			if n.ID == id {
				return n.Status.State == state, describe(nodes), nil
			}
		}
		return false, describe(nodes), nil
	})
}

// Load copies image from the main engine to every node (see
// Dockerd.Load), at once.
func (s *Swarm) Load(t testing.TB, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := s.LoadImage(ctx, image); err != nil {
		t.Fatal(err)
	}
}

// LoadImage is Load for a program that is not a test.
func (s *Swarm) LoadImage(ctx context.Context, image string) error {
	engines := make([]*Dockerd, len(s.Nodes))
	for i, n := range s.Nodes {
		engines[i] = n.Dockerd
	}
	return loadInto(ctx, engines, image)
}

// Dial opens a connection from the hub, the namespace of the swarm's
// bridge (198.18.0.1): it reaches every node at its Addr, such as a port
// a task publishes in host mode. It has the shape of http.Transport's
// DialContext.
func (s *Swarm) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, s.hub, network, addr)
}

// Get sends a GET to url from the hub (see Dial), on a connection of its
// own, and returns the status and the body.
func (s *Swarm) Get(url string) (status int, body string, err error) {
	return getVia(s.Dial, url)
}

// logTails is every engine's last n log lines.
func (s *Swarm) logTails(n int) string {
	var b strings.Builder
	for _, node := range s.Nodes {
		fmt.Fprintf(&b, "--- engine %s (%s):\n%s\n", node.Name, node.Addr, node.logTail(n))
	}
	return b.String()
}

// Netns is the network namespace of a container of an engine of a
// test's own (see ContainerNetns), to dial from. Close releases it.
type Netns struct {
	f *os.File
}

// ContainerNetns opens the network namespace of the running container
// (a name or an ID) of e: Dial and Get there reach what the container
// reaches, among it every network it is on, an overlay network's tasks
// on other nodes too. The caller closes it.
func (e *Dockerd) ContainerNetns(ctx context.Context, container string) (*Netns, error) {
	out, err := e.CLI(ctx, "inspect", "--type", "container", "--format", "{{.Id}} {{.State.Pid}}", container)
	if err != nil {
		return nil, err
	}
	f := strings.Fields(out)
	pid := 0
	if len(f) == 2 {
		pid, _ = strconv.Atoi(f[1])
	}
	if pid <= 0 {
		return nil, fmt.Errorf("container %s of engine %s: not running (%q)", container, e.Name, out)
	}
	ns, err := os.Open("/proc/" + f[1] + "/ns/net")
	if err != nil {
		return nil, fmt.Errorf("container %s of engine %s: %w", container, e.Name, err)
	}
	// The pid is the container's still: its namespace is the one opened.
	if cg, err := os.ReadFile("/proc/" + f[1] + "/cgroup"); err != nil || !strings.Contains(string(cg), f[0]) {
		ns.Close()
		return nil, fmt.Errorf("container %s of engine %s: it ended (its pid %d is not in its cgroup)", container, e.Name, pid)
	}
	return &Netns{f: ns}, nil
}

// Dial opens a connection from inside the namespace (see Dockerd.Dial).
func (n *Netns) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, n.f, network, addr)
}

// Get sends a GET to url from inside the namespace, on a connection of
// its own, and returns the status and the body.
func (n *Netns) Get(url string) (status int, body string, err error) {
	return getVia(n.Dial, url)
}

// Close releases the namespace.
func (n *Netns) Close() error { return n.f.Close() }
