package fake

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Swarm is an in-memory swarm manager that implements docker.Swarm, for
// the tests of what drives a swarm (DESIGN §13). It models what rollcall
// relies on in swarmkit, as research/swarm.md §1 reads it:
//
//   - Time moves only with its Clock, as the Engine's does: every change
//     that time causes (a task turning RUNNING, failing, a restart's delay,
//     an updater's Delay and Monitor) is worked out lazily, in time order,
//     at the start of every call and on Tick. Given the same seed, clock
//     and calls, two Swarms hand out the same IDs and update their slots in
//     the same order.
//   - A task acts as its image's Behaviour says (AddImage): with a
//     healthcheck in its template it is STARTING until ReadyAfter, then
//     RUNNING (Swarm's RUNNING means healthy) or, Unhealthy, FAILED; without
//     one it is RUNNING at once. CrashAfter fails it (or completes it, exit
//     0) that long after its start, FailStart at once; an image the Swarm
//     was not given is REJECTED.
//   - The updater (updater.go): a write of a service's spec that leaves a
//     slot's task on another task template (or endpoint) starts one, and
//     any other write of the spec cancels a running one and starts a new
//     one on the slots still dirty; a write of the very same spec keeps it.
//     Dirty slots go in a seeded random order (Swarm's map order) to
//     Parallelism workers (0: all); start-first runs the new task and shuts
//     the old down once the new is RUNNING, stop-first shuts the old down
//     and starts the new once it stopped; a worker waits for its task to be
//     RUNNING (or ended), with no timeout, then sleeps Delay. A task it made
//     that fails before RUNNING, or within Monitor after, counts; above
//     MaxFailureRatio the FailureAction fires: pause (UpdatePaused), roll
//     back (Spec = PreviousSpec, with the Rollback settings) or continue.
//     After the last slot it watches one more Monitor, then marks the
//     update completed.
//   - Every write of a service (the caller's, and the updater's own status
//     writes) gives it a new version; a write naming another is
//     ErrOutOfSequence. A caller's write keeps PreviousSpec = the spec
//     before it, and clears the update status (which resumes a paused
//     update).
//   - The restart supervisor: a task that ends while it should run is
//     replaced in its slot, after RestartDelay, on the service's CURRENT
//     spec (swarmkit#2242), unless its restart policy says no (none, or
//     on-failure after exit 0). A replica count changed adds slots (the
//     lowest free numbers, on the current spec) or removes some (running
//     ones kept first, then the lower slots), leaving the others alone.
//   - Nodes (AddNode, SetNodeDown, SetNodeUp): tasks are placed on the
//     ready node with the fewest of their service; a node that goes down
//     keeps its tasks as they were last seen, they are replaced elsewhere
//     and orphaned after OrphanAfter; one that comes back shuts them down.
//   - Specs are checked (docker.ServiceSpec.Check) and stored in the normal
//     form a real manager reads back, so a spec read back is what was
//     written, as on a real swarm.
//   - Every call is recorded in Calls as "method:arg" (the service's name,
//     the prefix), "!fail" appended when it returned an error; the test
//     controls are not.
//
// A Swarm is safe for concurrent use.
type Swarm struct {
	mu    sync.Mutex
	clock Clock
	rng   *rand.Rand
	opts  SwarmOptions

	clusterID string
	index     uint64 // the store's version counter: every write takes the next
	seq       int    // creation order, the tie-break for simultaneous changes

	nodes    []*swarmNode
	images   map[string]Behaviour // by ServiceImage reference
	services []*swarmService      // in creation order
	tasks    []*swarmTask         // in creation order

	calls  []string
	inject injector
}

// SwarmOptions configure a Swarm.
type SwarmOptions struct {
	Clock Clock // nil: real time
	Seed  int64 // seeds IDs and the order of the updater's slots
	// Nodes is how many nodes the swarm starts with (0: one); the first is
	// the manager rollcall talks to, and the leader.
	Nodes int
	// RestartDelay is how long a failed task's replacement waits to start
	// (0: Swarm's 5s); OrphanAfter how long a down node's tasks stay as
	// they were (0: Swarm's 24h); TaskHistory how many tasks a slot keeps
	// (0: Swarm's 5).
	RestartDelay time.Duration
	OrphanAfter  time.Duration
	TaskHistory  int
	// NotManager makes SwarmInfo ErrNotManager, as an engine outside a
	// swarm, or a worker, answers.
	NotManager bool
}

// Swarm's defaults (swarmkit's api/defaults and manager).
const (
	swarmRestartDelay = 5 * time.Second
	swarmOrphanAfter  = 24 * time.Hour
	swarmTaskHistory  = 5
	swarmMonitor      = 5 * time.Second
	// swarmOldTaskTimeout bounds how long a stop-first task waits for the
	// one it replaces to stop (swarmkit's restart supervisor).
	swarmOldTaskTimeout = time.Minute
)

// swarmMethods are the keys of the Swarm methods in the call log and in
// FailCall and FailNext: the method names in lower case.
var swarmMethods = []string{"swarminfo", "services", "tasks", "nodes", "createservice", "updateservice", "removeservice"}

type swarmNode struct {
	docker.Node
	seq int
}

type swarmService struct {
	id      string
	version uint64
	spec    docker.ServiceSpec
	prev    *docker.ServiceSpec
	status  *updateStatus // nil: none
	created time.Time
	updated time.Time
	up      *updater // the running updater; nil: none
}

type updateStatus struct {
	state   docker.UpdateState
	message string
	started time.Time
}

// swarmTask is a Task plus what the simulation needs to move it along.
type swarmTask struct {
	docker.Task
	seq       int
	tmpl      docker.CreateSpec // the task template it was made from
	endpoint  taskEndpoint
	placement docker.Placement // where it may run: its service's, when it was made
	behaviour Behaviour
	known     bool      // its image was given (AddImage); else it is rejected
	startAt   time.Time // a READY task told to run then (a restart's delay); zero: not timed
	waitStop  *swarmTask
	waitUntil time.Time // stop-first: waitStop has this long to stop
	started   time.Time // its container's start
	orphanAt  time.Time // on a down node: orphaned then
}

// taskEndpoint is what of the service's spec outside Task a task was made
// with that makes it dirty when it changes, as the template does: the
// endpoint, and what Swarm keeps in the task template beside the
// container (restart policy, reservations).
type taskEndpoint struct {
	mode    string
	ports   []docker.ServicePort
	restart docker.SwarmRestart
	reserve docker.Reservations
}

// endpointOf is taskEndpoint of a service spec.
func endpointOf(spec docker.ServiceSpec) taskEndpoint {
	return taskEndpoint{mode: spec.EndpointMode, ports: slices.Clone(spec.Ports), restart: spec.Restart, reserve: spec.Reservations}
}

// NewSwarm returns a swarm of opts.Nodes ready nodes (at least one), no
// images and no services.
func NewSwarm(opts SwarmOptions) *Swarm {
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	seed := uint64(opts.Seed)
	s := &Swarm{
		clock:  clock,
		rng:    rand.New(rand.NewPCG(seed, seed^0x5bd1e9955bd1e995)),
		opts:   opts,
		images: map[string]Behaviour{},
		inject: newInjector(swarmMethods, docker.SwarmMutating),
	}
	s.opts.RestartDelay = cmp.Or(opts.RestartDelay, swarmRestartDelay)
	s.opts.OrphanAfter = cmp.Or(opts.OrphanAfter, swarmOrphanAfter)
	s.opts.TaskHistory = cmp.Or(opts.TaskHistory, swarmTaskHistory)
	s.clusterID = s.newID()
	for i := range max(1, opts.Nodes) {
		s.addNode("node-"+strconv.Itoa(i+1), i == 0)
	}
	return s
}

var _ docker.Swarm = (*Swarm)(nil)

// SwarmInfo describes the swarm from its first node, the manager.
func (s *Swarm) SwarmInfo(ctx context.Context) (_ docker.SwarmInfo, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	defer s.record("swarminfo", "", &err)
	if err := s.inject.check(ctx, "swarminfo", s.rng); err != nil {
		return docker.SwarmInfo{}, fmt.Errorf("swarm info: %w", err)
	}
	if s.opts.NotManager {
		return docker.SwarmInfo{}, fmt.Errorf("swarm info: %w", docker.ErrNotManager)
	}
	info := docker.SwarmInfo{ClusterID: s.clusterID, NodeID: s.nodes[0].ID, Nodes: len(s.nodes)}
	for _, n := range s.nodes {
		if n.Manager {
			info.Managers++
		}
	}
	return info, nil
}

// Services returns the services labelled <prefix>.managed=true, by name.
func (s *Swarm) Services(ctx context.Context, prefix string) (_ []docker.Service, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	defer s.record("services", prefix, &err)
	if err := s.inject.check(ctx, "services", s.rng); err != nil {
		return nil, fmt.Errorf("list services of %s: %w", prefix, err)
	}
	var out []docker.Service
	for _, v := range s.services {
		if v.spec.Labels[docker.ManagedLabel(prefix)] == "true" {
			out = append(out, v.service())
		}
	}
	slices.SortFunc(out, func(a, b docker.Service) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
	return out, nil
}

func (v *swarmService) service() docker.Service {
	out := docker.Service{ID: v.id, Version: v.version, Spec: cloneServiceSpec(v.spec), CreatedAt: v.created, UpdatedAt: v.updated}
	if v.prev != nil {
		prev := cloneServiceSpec(*v.prev)
		out.PreviousSpec = &prev
	}
	if st := v.status; st != nil {
		out.UpdateState, out.UpdateMessage, out.UpdateStarted = st.state, st.message, st.started
	}
	return out
}

// Tasks returns every task Swarm keeps of the managed services of prefix,
// by service name, slot and age.
func (s *Swarm) Tasks(ctx context.Context, prefix string) (_ []docker.Task, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	defer s.record("tasks", prefix, &err)
	if err := s.inject.check(ctx, "tasks", s.rng); err != nil {
		return nil, fmt.Errorf("list tasks of %s: %w", prefix, err)
	}
	var out []docker.Task
	names := map[string]string{}
	for _, v := range s.services {
		if v.spec.Labels[docker.ManagedLabel(prefix)] == "true" {
			names[v.id] = v.spec.Name
		}
	}
	for _, t := range s.tasks {
		if _, ok := names[t.ServiceID]; !ok {
			continue
		}
		dt := t.Task
		dt.Workload = t.tmpl.Labels[docker.WorkloadLabel(prefix)]
		dt.Spec = t.tmpl.Labels[docker.SpecLabel(prefix)]
		dt.Image = t.tmpl.Image
		out = append(out, dt)
	}
	slices.SortStableFunc(out, func(a, b docker.Task) int {
		return cmp.Or(cmp.Compare(names[a.ServiceID], names[b.ServiceID]), cmp.Compare(a.Slot, b.Slot))
	})
	return out, nil
}

// Nodes returns the swarm's nodes, in the order they joined.
func (s *Swarm) Nodes(ctx context.Context) (_ []docker.Node, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	defer s.record("nodes", "", &err)
	if err := s.inject.check(ctx, "nodes", s.rng); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	out := make([]docker.Node, len(s.nodes))
	for i, n := range s.nodes {
		out[i] = n.Node
	}
	return out, nil
}

// CreateService creates a service and its tasks, one per replica, on the
// spec as given.
func (s *Swarm) CreateService(ctx context.Context, spec docker.ServiceSpec) (_ string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	defer s.record("createservice", spec.Name, &err)
	if err := s.inject.check(ctx, "createservice", s.rng); err != nil {
		return "", fmt.Errorf("create service %s: %w", spec.Name, err)
	}
	if err := spec.Check(); err != nil {
		return "", fmt.Errorf("create service %s: %w", spec.Name, err)
	}
	if slices.ContainsFunc(s.services, func(v *swarmService) bool { return v.spec.Name == spec.Name }) {
		return "", fmt.Errorf("create service %s: %w", spec.Name, docker.ErrConflict)
	}
	v := &swarmService{id: s.newID(), spec: normalServiceSpec(spec), created: now, updated: now}
	s.services = append(s.services, v)
	s.write(v, now)
	s.reconcile(v, now)
	return v.id, nil
}

// UpdateService writes a service's spec at version, as swarmkit's control
// API does: PreviousSpec becomes the spec before, the update status is
// cleared, and the orchestrator reconciles the service (see Swarm).
func (s *Swarm) UpdateService(ctx context.Context, id string, version uint64, spec docker.ServiceSpec) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	v := s.service(id)
	defer s.record("updateservice", cmp.Or(spec.Name, id), &err)
	if err := s.inject.check(ctx, "updateservice", s.rng); err != nil {
		return fmt.Errorf("update service %s: %w", cmp.Or(spec.Name, id), err)
	}
	if v == nil {
		return fmt.Errorf("update service %s: %w", id, docker.ErrNotFound)
	}
	if version != v.version {
		return fmt.Errorf("update service %s at version %d (it is at %d): %w", v.spec.Name, version, v.version, docker.ErrOutOfSequence)
	}
	if err := spec.Check(); err != nil {
		return fmt.Errorf("update service %s: %w", v.spec.Name, err)
	}
	if spec.Name != v.spec.Name {
		return fmt.Errorf("update service %s: renaming services is not supported (to %s)", v.spec.Name, spec.Name)
	}
	prev := v.spec
	v.prev = &prev
	v.spec = normalServiceSpec(spec)
	v.status = nil
	s.write(v, now)
	s.reconcile(v, now)
	return nil
}

// RemoveService removes a service and its tasks.
func (s *Swarm) RemoveService(ctx context.Context, id string) (err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
	v := s.service(id)
	name := id
	if v != nil {
		name = v.spec.Name
	}
	defer s.record("removeservice", name, &err)
	if err := s.inject.check(ctx, "removeservice", s.rng); err != nil {
		return fmt.Errorf("remove service %s: %w", name, err)
	}
	if v == nil {
		return fmt.Errorf("remove service %s: %w", id, docker.ErrNotFound)
	}
	if v.up != nil {
		v.up.end()
	}
	s.services = slices.DeleteFunc(s.services, func(o *swarmService) bool { return o == v })
	s.tasks = slices.DeleteFunc(s.tasks, func(t *swarmTask) bool { return t.ServiceID == v.id })
	return nil
}

// Tick works out every change due by now.
func (s *Swarm) Tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advance()
}

// AddImage makes ref runnable by tasks, with the behaviour their
// containers will have. Giving a ref again changes how the tasks started
// from then on behave (a "bad image" pushed under a tag); running ones
// keep theirs.
func (s *Swarm) AddImage(ref string, b Behaviour) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images[docker.ServiceImage(ref)] = b
}

// AddNode joins a ready worker node and returns its ID. Tasks waiting for
// a node are placed on it.
func (s *Swarm) AddNode(hostname string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	n := s.addNode(hostname, false)
	s.placePending(now)
	return n.ID
}

func (s *Swarm) addNode(hostname string, leader bool) *swarmNode {
	s.seq++
	n := &swarmNode{seq: s.seq, Node: docker.Node{ID: s.newID(), Hostname: hostname, State: docker.NodeReady,
		Availability: docker.NodeActive, Manager: leader, Leader: leader, Addr: fmt.Sprintf("10.0.0.%d", len(s.nodes)+2)}}
	s.nodes = append(s.nodes, n)
	return n
}

// SetNodeDown marks a node down, as a manager does when the node stops
// answering: its tasks stay as last seen (orphaned after OrphanAfter), and
// those that should run are replaced on other nodes after RestartDelay,
// on the current spec.
func (s *Swarm) SetNodeDown(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	n := s.node(id)
	if n == nil {
		return fmt.Errorf("node %s: %w", id, docker.ErrNotFound)
	}
	if n.State == docker.NodeDown {
		return nil
	}
	n.State = docker.NodeDown
	for _, t := range slices.Clone(s.tasks) {
		if t.NodeID != id || t.State.Ended() {
			continue
		}
		t.orphanAt = now.Add(s.opts.OrphanAfter)
		if t.Desired == docker.TaskRunning || t.Desired == docker.TaskReady {
			s.restart(t, now)
		}
		s.stopped(t, now) // a task waiting for it to stop waits no more
	}
	return nil
}

// SetNodeUp marks a down node ready again: the tasks it still held, all
// replaced by then, are shut down, and tasks waiting for a node are placed.
func (s *Swarm) SetNodeUp(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	n := s.node(id)
	if n == nil {
		return fmt.Errorf("node %s: %w", id, docker.ErrNotFound)
	}
	n.State = docker.NodeReady
	for _, t := range slices.Clone(s.tasks) {
		if t.NodeID == id && !t.State.Ended() && !t.orphanAt.IsZero() {
			t.orphanAt = time.Time{}
			s.end(t, docker.TaskShutdown, "shutdown", 0, "", now)
		}
	}
	s.placePending(now)
	return nil
}

// CrashTask ends a task's container with exitCode, as a crash does (0:
// it completes): the restart supervisor replaces it on the current spec.
func (s *Swarm) CrashTask(id string, exitCode int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.advance()
	t := s.task(id)
	if t == nil {
		return fmt.Errorf("crash task %s: %w", id, docker.ErrNotFound)
	}
	if t.State != docker.TaskRunning && t.State != docker.TaskStarting {
		return fmt.Errorf("crash task %s: it is %s, not running", id, t.State)
	}
	s.exit(t, exitCode, now)
	return nil
}

// FailCall makes the n-th call (1-based) of method from now on fail with
// an error wrapping ErrInjected and no effect. method is a Swarm method
// name, e.g. "UpdateService".
func (s *Swarm) FailCall(method string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inject.failCall(method, n)
}

// FailNext makes the next call of method fail with err (ErrInjected if
// nil), wrapped with the verb and the object, and no effect. Several queue
// up in order.
func (s *Swarm) FailNext(method string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inject.failNext(method, err)
}

// Calls returns every Swarm call so far, in order, as "method:arg":
// "createservice:shop_web", "updateservice:shop_web!fail", "tasks:shop".
func (s *Swarm) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// Mutations returns the calls of the SwarmMutating methods only.
func (s *Swarm) Mutations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.calls {
		key, _, _ := strings.Cut(c, ":")
		if s.inject.isMutating(key) {
			out = append(out, c)
		}
	}
	return out
}

// ResetCalls empties the call log.
func (s *Swarm) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = nil
}

func (s *Swarm) record(key, arg string, err *error) { s.calls = appendCall(s.calls, key, arg, *err) }

// write marks v written: a new version, and its update time.
func (s *Swarm) write(v *swarmService, at time.Time) {
	s.index++
	v.version = s.index
	v.updated = at
}

func (s *Swarm) service(id string) *swarmService {
	for _, v := range s.services {
		if v.id == id {
			return v
		}
	}
	return nil
}

func (s *Swarm) task(id string) *swarmTask {
	for _, t := range s.tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

func (s *Swarm) node(id string) *swarmNode {
	for _, n := range s.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// newID is a 25-character ID, as Swarm's.
func (s *Swarm) newID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 25)
	for i := range b {
		b[i] = alphabet[s.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// cloneServiceSpec is a deep copy: what the Swarm stores and hands out
// shares nothing with its callers. Every field of a spec is plain data,
// so a JSON round trip copies it whole, nil and empty kept apart.
func cloneServiceSpec(spec docker.ServiceSpec) docker.ServiceSpec {
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("fake swarm: copy a spec: %v", err))
	}
	var out docker.ServiceSpec
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("fake swarm: copy a spec: %v", err))
	}
	return out
}

// normalServiceSpec is spec as a real manager reads it back (see
// docker.ServiceSpec): an empty list or map is nil, an alias list only
// under a network it has, the image as docker.ServiceImage names it, and
// the volumes in the order of their mounts.
func normalServiceSpec(spec docker.ServiceSpec) docker.ServiceSpec {
	out := cloneServiceSpec(spec)
	nilEmpty(reflect.ValueOf(&out).Elem())
	t := &out.Task
	t.Image = docker.ServiceImage(t.Image)
	for n, as := range t.Aliases {
		if as == nil {
			delete(t.Aliases, n)
		}
	}
	if len(t.Aliases) == 0 {
		t.Aliases = nil
	}
	var vols []docker.VolumeSpec
	for _, m := range t.Mounts {
		if i := slices.IndexFunc(t.Volumes, func(v docker.VolumeSpec) bool { return v.Name == m.Source }); m.Type == docker.MountVolume && i >= 0 &&
			!slices.ContainsFunc(vols, func(v docker.VolumeSpec) bool { return v.Name == m.Source }) {
			vols = append(vols, t.Volumes[i])
		}
	}
	t.Volumes = vols
	return out
}

// nilEmpty sets every empty slice and map under v to nil.
func nilEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			nilEmpty(v.Elem())
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				nilEmpty(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			nilEmpty(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			nilEmpty(e)
			v.SetMapIndex(k, e)
		}
	}
}
