package moby

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"

	"github.com/rollcall/rollcall/engine/docker"
)

// Tests of the Swarm half of the adapter that need no engine: the
// translation of a spec, and the calls against a stand-in manager that
// keeps what it is sent as a 20.10 manager does (network names made IDs).

// everyOption is a spec of every option a Swarm task takes.
func everyOption() docker.ServiceSpec {
	return docker.ServiceSpec{
		Name:   "shop_web",
		Labels: map[string]string{docker.ManagedLabel("shop"): "true", docker.StackLabel: "shop"},
		Task: docker.CreateSpec{
			Image:       "registry.example:5000/shop/web:v1",
			Command:     []string{"-listen", ":8080"},
			Env:         []string{"A=1", "B=2"},
			Labels:      map[string]string{docker.SpecLabel("shop"): "abc"},
			Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/health"}, Interval: time.Second, Timeout: 2 * time.Second, Retries: 3, StartPeriod: 5 * time.Second},
			StopSignal:  "SIGINT",
			StopTimeout: 1500 * time.Millisecond,
			Limits:      docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20},
			Networks:    []string{"shop_default", "shop_back"},
			Aliases:     map[string][]string{"shop_default": {"web", "www"}},
			Mounts: []docker.Mount{{Type: "volume", Source: "data", Target: "/data"}, {Type: "volume", Source: "cache", Target: "/cache"},
				{Type: "bind", Source: "/etc/app", Target: "/app", ReadOnly: true}, {Type: "tmpfs", Target: "/tmp", Size: 1 << 20}},
			Volumes: []docker.VolumeSpec{{Name: "data", Driver: "local", DriverOpts: map[string]string{"type": "nfs"}, Labels: map[string]string{"shop.managed": "true"}},
				{Name: "cache"}},
			ReadOnly: true,
			Options: docker.ContainerOptions{Entrypoint: []string{"/web"}, User: "1000:1000", WorkingDir: "/srv", Hostname: "web-{{.Task.Slot}}",
				CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, Init: true, Ulimits: []docker.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}},
				Sysctls: map[string]string{"net.core.somaxconn": "1024"}, ExtraHosts: []string{"db:10.0.0.5", "v6:fd00::1"}, DNS: []string{"10.0.0.2"},
				DNSSearch: []string{"shop"}, LogDriver: "json-file", LogOptions: map[string]string{"max-size": "1m"}, GroupAdd: []string{"1234"}},
		},
		Replicas:     3,
		Update:       docker.UpdateConfig{Parallelism: 1, Delay: 24 * time.Hour, Monitor: 5 * time.Second, FailureAction: docker.FailurePause, Order: docker.OrderStartFirst},
		Rollback:     docker.UpdateConfig{Parallelism: 0, FailureAction: docker.FailureContinue, Order: docker.OrderStopFirst, MaxFailureRatio: 0.5},
		EndpointMode: "dnsrr",
		Ports:        []docker.ServicePort{{Target: 8080, Published: 18080, Proto: "tcp", Mode: docker.PublishHost}},
		Placement: docker.Placement{Constraints: []string{"node.role == worker", "node.labels.zone != b"},
			Preferences: []string{"node.labels.zone", "node.labels.rack"}, MaxReplicas: 2},
		Restart:      docker.SwarmRestart{Condition: docker.RestartOnFailure, Delay: 3 * time.Second, MaxAttempts: 3, Window: time.Minute},
		Reservations: docker.Reservations{NanoCPUs: 25e7, Memory: 32 << 20},
	}
}

// The task template is written as `docker stack deploy` writes it: the
// command is the service's args and the entrypoint its command; with no
// healthcheck the image's is disabled; the hosts are "ip host".
func TestServiceToSwarmWritesAsStackDeploy(t *testing.T) {
	ss, err := serviceToSwarm(everyOption())
	if err != nil {
		t.Fatal(err)
	}
	cs := ss.TaskTemplate.ContainerSpec
	if !reflect.DeepEqual(cs.Command, []string{"/web"}) || !reflect.DeepEqual(cs.Args, []string{"-listen", ":8080"}) {
		t.Errorf("command %q, args %q: want the entrypoint, then the command", cs.Command, cs.Args)
	}
	if !reflect.DeepEqual(cs.Hosts, []string{"10.0.0.5 db", "fd00::1 v6"}) {
		t.Errorf("hosts %q", cs.Hosts)
	}
	if rp := ss.TaskTemplate.RestartPolicy; rp == nil || rp.Condition != swarm.RestartPolicyConditionOnFailure || rp.MaxAttempts == nil || *rp.MaxAttempts != 3 ||
		rp.Delay == nil || *rp.Delay != 3*time.Second || rp.Window == nil || *rp.Window != time.Minute {
		t.Errorf("restart policy %+v", rp)
	}
	if l := ss.TaskTemplate.Resources.Limits; l.NanoCPUs != 5e8 || l.MemoryBytes != 64<<20 {
		t.Errorf("limits %+v", l)
	}
	if r := ss.TaskTemplate.Resources.Reservations; r == nil || r.NanoCPUs != 25e7 || r.MemoryBytes != 32<<20 {
		t.Errorf("reservations %+v", r)
	}
	if p := ss.TaskTemplate.Placement; p == nil || !reflect.DeepEqual(p.Constraints, []string{"node.role == worker", "node.labels.zone != b"}) ||
		p.MaxReplicas != 2 || len(p.Preferences) != 2 || p.Preferences[1].Spread == nil || p.Preferences[1].Spread.SpreadDescriptor != "node.labels.rack" {
		t.Errorf("placement %+v", p)
	}
	plain := everyOption()
	plain.Task.Healthcheck = nil
	plain.Update, plain.Rollback = docker.UpdateConfig{}, docker.UpdateConfig{}
	ss, err = serviceToSwarm(plain)
	if err != nil {
		t.Fatal(err)
	}
	if hc := ss.TaskTemplate.ContainerSpec.Healthcheck; hc == nil || !reflect.DeepEqual(hc.Test, []string{"NONE"}) {
		t.Errorf("no healthcheck: %+v, want the image's disabled", hc)
	}
	if ss.UpdateConfig != nil || ss.RollbackConfig != nil {
		t.Errorf("zero update settings written as %+v, %+v: want none (Swarm's defaults)", ss.UpdateConfig, ss.RollbackConfig)
	}
	plain.Restart, plain.Placement, plain.Reservations = docker.SwarmRestart{}, docker.Placement{}, docker.Reservations{}
	plain.Task.Limits = docker.Limits{}
	if ss, err = serviceToSwarm(plain); err != nil {
		t.Fatal(err)
	}
	if tt := ss.TaskTemplate; tt.RestartPolicy != nil || tt.Placement != nil || tt.Resources != nil {
		t.Errorf("zero restart, placement, resources written as %+v, %+v, %+v: want none (Swarm's defaults)", tt.RestartPolicy, tt.Placement, tt.Resources)
	}
}

// swarmStub is a stand-in manager: it keeps the services it is sent, their
// networks stored by ID as a 20.10 manager stores them, a version per write,
// and refuses a stale version with the manager's words.
type swarmStub struct {
	t        *testing.T
	mu       sync.Mutex
	services map[string]swarm.Service
	version  uint64
	auths    []string // the X-Registry-Auth of every write
	paths    []string
}

var stubNetworks = map[string]string{"net-id-default": "shop_default", "net-id-back": "shop_back"}

func (s *swarmStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := r.URL.Path[strings.Index(r.URL.Path[1:], "/")+1:] // without the /v1.41
	if r.URL.Path == "/_ping" {
		w.Header().Set("Api-Version", "1.41")
		return
	}
	s.paths = append(s.paths, r.Method+" "+path)
	write := func(v any) {
		if err := json.NewEncoder(w).Encode(v); err != nil {
			s.t.Error(err)
		}
	}
	switch {
	case path == "/services/create" || strings.HasSuffix(path, "/update"):
		s.auths = append(s.auths, r.Header.Get("X-Registry-Auth"))
		var spec swarm.ServiceSpec
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &spec); err != nil {
			s.t.Fatal(err)
		}
		for i, n := range spec.TaskTemplate.Networks {
			for id, name := range stubNetworks {
				if n.Target == name {
					spec.TaskTemplate.Networks[i].Target = id
				}
			}
		}
		s.version++
		if path == "/services/create" {
			id := "svc" + spec.Name
			s.services[id] = swarm.Service{ID: id, Meta: swarm.Meta{Version: swarm.Version{Index: s.version}}, Spec: spec}
			write(swarm.ServiceCreateResponse{ID: id})
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(path, "/services/"), "/update")
		old := s.services[id]
		if r.URL.Query().Get("version") != old.Version.String() {
			w.WriteHeader(http.StatusInternalServerError)
			write(map[string]string{"message": "rpc error: code = Unknown desc = update out of sequence"})
			return
		}
		prev := old.Spec
		s.services[id] = swarm.Service{ID: id, Meta: swarm.Meta{Version: swarm.Version{Index: s.version}}, Spec: spec, PreviousSpec: &prev}
		write(swarm.ServiceUpdateResponse{})
	case path == "/services":
		var out []swarm.Service
		for _, v := range s.services {
			out = append(out, v)
		}
		write(out)
	case path == "/networks":
		var out []network.Summary
		for id, name := range stubNetworks {
			out = append(out, network.Summary{Network: network.Network{ID: id, Name: name}})
		}
		write(out)
	default:
		w.WriteHeader(http.StatusNotFound)
		write(map[string]string{"message": "unexpected " + path})
	}
}

// A spec read back is the spec written, through the wire and a manager's
// storage (networks by ID), and a write carries the registry credentials
// of its image and asks no registry.
func TestSwarmSpecRoundTrip(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	cfg := `{"auths":{"registry.example:5000":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("ci:pw")) + `"}}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	stub := &swarmStub{t: t, services: map[string]swarm.Service{}}
	m := mobyOn(t, stub)
	ctx := context.Background()
	spec := everyOption()
	id, err := m.CreateService(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	svcs, err := m.Services(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(svcs) != 1 || svcs[0].ID != id || !reflect.DeepEqual(svcs[0].Spec, spec) {
		t.Fatalf("read back:\n%+v\nwritten:\n%+v", svcs[0].Spec, spec)
	}
	next := everyOption()
	next.Task.Image = "registry.example:5000/shop/web:v2"
	if err := m.UpdateService(ctx, id, svcs[0].Version, next); err != nil {
		t.Fatal(err)
	}
	svcs, _ = m.Services(ctx, "shop")
	if !reflect.DeepEqual(svcs[0].Spec, next) || svcs[0].PreviousSpec == nil || !reflect.DeepEqual(*svcs[0].PreviousSpec, spec) {
		t.Fatalf("after an update: %+v, previous %+v", svcs[0].Spec, svcs[0].PreviousSpec)
	}
	err = m.UpdateService(ctx, id, svcs[0].Version-1, next)
	if !errors.Is(err, docker.ErrOutOfSequence) {
		t.Fatalf("a write at a stale version: %v, want ErrOutOfSequence", err)
	}
	for i, a := range stub.auths {
		if a == "" {
			t.Errorf("write %d carried no registry credentials", i)
		}
	}
	for _, p := range stub.paths {
		if strings.Contains(p, "/distribution/") {
			t.Errorf("a write asked the registry: %s", p)
		}
	}
	// ResolveImage (pull: always) asks it at each write; the spec reads
	// back as written all the same (the stub's registry knows no digest).
	stub.paths = nil
	resolved := next
	resolved.ResolveImage = true
	svcs, _ = m.Services(ctx, "shop")
	if err := m.UpdateService(ctx, id, svcs[0].Version, resolved); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(stub.paths, func(p string) bool { return strings.Contains(p, "/distribution/") }) {
		t.Errorf("a write with ResolveImage asked no registry: %v", stub.paths)
	}
	if svcs, _ = m.Services(ctx, "shop"); !reflect.DeepEqual(svcs[0].Spec, next) {
		t.Errorf("after a resolving write: %+v", svcs[0].Spec)
	}
}

// A spec that Check refuses never reaches the manager.
func TestSwarmRefusedSpecIsNotSent(t *testing.T) {
	stub := &swarmStub{t: t, services: map[string]swarm.Service{}}
	m := mobyOn(t, stub)
	spec := everyOption()
	spec.Task.Options.Devices = []string{"/dev/fuse"}
	_, err := m.CreateService(context.Background(), spec)
	var se *docker.SpecError
	if !errors.As(err, &se) || se.Problems[0].Option != "devices" {
		t.Fatalf("create with a device: %v, want a SpecError on devices", err)
	}
	if err := m.UpdateService(context.Background(), "svcshop_web", 1, spec); !errors.As(err, &se) {
		t.Fatalf("update with a device: %v, want a SpecError", err)
	}
	if len(stub.paths) != 0 {
		t.Fatalf("the manager was called: %v", stub.paths)
	}
}

// The task's revision and workload are read from its template's labels.
func TestTaskFromSwarm(t *testing.T) {
	at := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	task := taskFromSwarm(swarm.Task{
		ID: "t1", ServiceID: "s1", Slot: 2, NodeID: "n1", DesiredState: swarm.TaskStateRunning, Meta: swarm.Meta{CreatedAt: at},
		Status: swarm.TaskStatus{State: swarm.TaskStateStarting, Message: "starting", Err: "", Timestamp: at.Add(time.Second),
			ContainerStatus: &swarm.ContainerStatus{ContainerID: "c1", ExitCode: 0}},
		Spec: swarm.TaskSpec{ContainerSpec: &swarm.ContainerSpec{Image: "web:v2",
			Labels: map[string]string{docker.SpecLabel("shop"): "rev2", docker.WorkloadLabel("shop"): "web"}}},
	}, "shop")
	want := docker.Task{ID: "t1", ServiceID: "s1", Workload: "web", Slot: 2, NodeID: "n1", Desired: docker.TaskRunning,
		State: docker.TaskStarting, Message: "starting", Since: at.Add(time.Second), CreatedAt: at, ContainerID: "c1", Spec: "rev2", Image: "web:v2"}
	if task != want {
		t.Fatalf("task = %+v\nwant   %+v", task, want)
	}
}
