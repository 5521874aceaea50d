package reconcile

import (
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// onSwarm gives a workload the file's swarm keys.
func onSwarm(sw spec.SwarmService) func(*spec.Workload) {
	return func(w *spec.Workload) { s := sw; w.Swarm = &s }
}

var fileSwarm = spec.SwarmService{
	EndpointMode: spec.EndpointDNSRR,
	Placement:    spec.Placement{Constraints: []string{"node.role == worker"}, Preferences: []string{"node.labels.zone"}, MaxReplicas: 2},
	Restart:      spec.SwarmRestart{Condition: spec.RestartOnFailure, Delay: 3 * time.Second, MaxAttempts: 4, Window: time.Minute},
	Reservations: spec.Resources{NanoCPUs: 250_000_000, Memory: 64 << 20},
	Labels:       map[string]string{"team": "shop", "rollcall.managed": "false"},
}

// The file's swarm keys reach the service: placement, the task restart
// policy whole, reservations, its own labels (never over rollcall's), and
// pull: always asks the manager to resolve the tag.
func TestServiceSpecCarriesTheFilesSwarmKeys(t *testing.T) {
	d := v2d(onSwarm(fileSwarm), func(w *spec.Workload) { w.Pull = spec.PullAlways })
	s := ServiceSpecFor(pfx, d.Workload("web"))
	if !slices.Equal(s.Placement.Constraints, []string{"node.role == worker"}) || !slices.Equal(s.Placement.Preferences, []string{"node.labels.zone"}) || s.Placement.MaxReplicas != 2 {
		t.Errorf("placement %+v", s.Placement)
	}
	if s.Restart != (docker.SwarmRestart{Condition: docker.RestartOnFailure, Delay: 3 * time.Second, MaxAttempts: 4, Window: time.Minute}) {
		t.Errorf("restart %+v", s.Restart)
	}
	if s.Reservations != (docker.Reservations{NanoCPUs: 250_000_000, Memory: 64 << 20}) {
		t.Errorf("reservations %+v", s.Reservations)
	}
	if s.Labels["team"] != "shop" || s.Labels[docker.ManagedLabel(pfx)] != "true" {
		t.Errorf("labels %v: want the file's team label, and rollcall's managed label kept", s.Labels)
	}
	if !s.ResolveImage || s.EndpointMode != "dnsrr" {
		t.Errorf("resolve %v endpoint %q: want pull: always resolved, dnsrr", s.ResolveImage, s.EndpointMode)
	}
	if err := s.Check(); err != nil {
		t.Errorf("the spec a file asks for is refused: %v", err)
	}
	if m := ServiceSpecFor(pfx, v2d(onSwarm(fileSwarm)).Workload("web")); m.ResolveImage {
		t.Errorf("pull: missing resolves the image: want the reference as written")
	}
}

// A placement or service-label change replaces no task (not in the spec
// hash): a settings write, with the drift in the plan, never a rollout.
func TestSwarmServiceKeysChangeWithoutATask(t *testing.T) {
	was := v2d(onSwarm(fileSwarm))
	svc := service(was, "web")
	moved := fileSwarm
	moved.Placement.Constraints = []string{"node.role == manager"}
	moved.Labels = map[string]string{"team": "cart"}
	d := v2d(onSwarm(moved))
	if d.Workload("web").Hash != was.Workload("web").Hash {
		t.Fatalf("placement and service labels changed the spec hash")
	}
	p := DiffSwarm(d, swarmObserved([]docker.Service{svc}, tasks(svc, 3, docker.TaskRunning)))
	s := only(t, p, ActSettings)
	if s.Downtime || !slices.Equal(s.Service.Spec.Placement.Constraints, []string{"node.role == manager"}) || s.Service.Spec.Labels["team"] != "cart" {
		t.Errorf("settings write %+v", s.Service.Spec)
	}
	wantWords(t, p.String(), "placement", "service labels")
	if same := DiffSwarm(was, swarmObserved([]docker.Service{svc}, tasks(svc, 3, docker.TaskRunning))); !same.Empty() {
		t.Errorf("the same keys: want nothing to do, got\n%s", same)
	}
}
