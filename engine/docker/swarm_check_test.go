package docker_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// fullSpec uses every option a Swarm task can take: it passes Check.
func fullSpec() docker.ServiceSpec {
	return docker.ServiceSpec{
		Name:   "shop_web",
		Labels: map[string]string{docker.ManagedLabel("shop"): "true"},
		Task: docker.CreateSpec{
			Image:       "web:v1",
			Command:     []string{"-listen", ":8080"},
			Env:         []string{"A=1"},
			Labels:      map[string]string{docker.SpecLabel("shop"): "abc"},
			Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/health"}, Interval: time.Second},
			StopSignal:  "SIGINT",
			StopTimeout: 5 * time.Second,
			Limits:      docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20},
			Networks:    []string{"shop_default"},
			Aliases:     map[string][]string{"shop_default": {"web"}},
			Mounts: []docker.Mount{{Type: "volume", Source: "data", Target: "/data"}, {Type: "bind", Source: "/etc/app", Target: "/app", ReadOnly: true},
				{Type: "tmpfs", Target: "/tmp", Size: 1 << 20}},
			Volumes:  []docker.VolumeSpec{{Name: "data", Driver: "local"}},
			ReadOnly: true,
			Options: docker.ContainerOptions{Entrypoint: []string{"/web"}, User: "1000", WorkingDir: "/srv", Hostname: "web",
				CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, Init: true, Ulimits: []docker.Ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}},
				Sysctls: map[string]string{"net.core.somaxconn": "1024"}, ExtraHosts: []string{"db:10.0.0.5"}, DNS: []string{"10.0.0.2"},
				DNSSearch: []string{"shop"}, LogDriver: "json-file", LogOptions: map[string]string{"max-size": "1m"}, GroupAdd: []string{"audio"}},
		},
		Replicas:     3,
		Update:       docker.UpdateConfig{Parallelism: 1, Delay: time.Second, FailureAction: docker.FailurePause, Order: docker.OrderStartFirst},
		Rollback:     docker.UpdateConfig{Parallelism: 0, FailureAction: docker.FailureContinue, Order: docker.OrderStopFirst, MaxFailureRatio: 0.5},
		EndpointMode: "vip",
		Ports:        []docker.ServicePort{{Target: 8080, Published: 80, Proto: "tcp", Mode: docker.PublishIngress}},
		Placement:    docker.Placement{Constraints: []string{"node.role==worker", "node.labels.zone != b"}, Preferences: []string{"node.labels.zone"}, MaxReplicas: 2},
		Restart:      docker.SwarmRestart{Condition: docker.RestartOnFailure, Delay: time.Second, MaxAttempts: 3},
		Reservations: docker.Reservations{NanoCPUs: 1e8, Memory: 1 << 20},
	}
}

func TestCheckPassesWhatSwarmRuns(t *testing.T) {
	if err := fullSpec().Check(); err != nil {
		t.Fatalf("a spec of every option Swarm takes: %v", err)
	}
	minimal := docker.ServiceSpec{Name: "shop_web", Task: docker.CreateSpec{Image: "web"}}
	if err := minimal.Check(); err != nil {
		t.Fatalf("a spec of an image alone: %v", err)
	}
}

// Each option a Swarm task cannot honour, or would store otherwise, is
// refused by name.
func TestCheckRefusesWhatSwarmCannotRun(t *testing.T) {
	for _, tt := range []struct {
		option string
		edit   func(*docker.ServiceSpec)
	}{
		{"name", func(s *docker.ServiceSpec) { s.Name = "" }},
		{"image", func(s *docker.ServiceSpec) { s.Task.Image = "" }},
		{"container_name", func(s *docker.ServiceSpec) { s.Task.Name = "shop-web-0" }},
		{"ports", func(s *docker.ServiceSpec) { s.Task.Ports = []docker.PortSpec{{ContainerPort: 80}} }},
		{"security_opt", func(s *docker.ServiceSpec) { s.Task.Options.SecurityOpt = []string{"no-new-privileges"} }},
		{"privileged", func(s *docker.ServiceSpec) { s.Task.Options.Privileged = true }},
		{"shm_size", func(s *docker.ServiceSpec) { s.Task.Options.ShmSize = 1 << 20 }},
		{"devices", func(s *docker.ServiceSpec) { s.Task.Options.Devices = []string{"/dev/fuse"} }},
		{"expose", func(s *docker.ServiceSpec) { s.Task.Options.Expose = []string{"80/tcp"} }},
		{"entrypoint", func(s *docker.ServiceSpec) { s.Task.Options.Entrypoint = []string{} }},
		{"network_mode", func(s *docker.ServiceSpec) { s.Task.Options.NetworkMode = docker.NetworkNone }},
		{"network_mode", func(s *docker.ServiceSpec) { s.Task.Options.NetworkMode = docker.NetworkHost }}, // with networks
		{"networks", func(s *docker.ServiceSpec) { s.Task.Aliases["elsewhere"] = []string{"web"} }},
		{"dns", func(s *docker.ServiceSpec) { s.Task.Options.DNS = []string{"dns.example"} }},
		{"extra_hosts", func(s *docker.ServiceSpec) { s.Task.Options.ExtraHosts = []string{"db"} }},
		{"restart", func(s *docker.ServiceSpec) { s.Task.Limits.Restart = "always" }}, // a container's, not the service's
		{"restart_policy.condition", func(s *docker.ServiceSpec) { s.Restart.Condition = "always" }},
		{"restart_policy.condition", func(s *docker.ServiceSpec) { s.Restart = docker.SwarmRestart{Delay: time.Second} }},
		{"restart_policy", func(s *docker.ServiceSpec) { s.Restart.MaxAttempts = -1 }},
		{"restart_policy", func(s *docker.ServiceSpec) { s.Restart.Window = -time.Second }},
		{"resources.reservations", func(s *docker.ServiceSpec) { s.Reservations.Memory = -1 }},
		{"placement.constraints", func(s *docker.ServiceSpec) { s.Placement.Constraints = []string{"node.role"} }},
		{"placement.constraints", func(s *docker.ServiceSpec) { s.Placement.Constraints = []string{"== worker"} }},
		{"placement.preferences", func(s *docker.ServiceSpec) { s.Placement.Preferences = []string{" "} }},
		{"placement.max_replicas_per_node", func(s *docker.ServiceSpec) { s.Placement.MaxReplicas = -1 }},
		{"healthcheck", func(s *docker.ServiceSpec) { s.Task.Healthcheck.Test = []string{"NONE"} }},
		{"volume data", func(s *docker.ServiceSpec) { s.Task.Volumes[0].External = true }},
		{"volume logs", func(s *docker.ServiceSpec) { s.Task.Volumes = append(s.Task.Volumes, docker.VolumeSpec{Name: "logs"}) }},
		{"volume data", func(s *docker.ServiceSpec) { s.Task.Volumes = append(s.Task.Volumes, s.Task.Volumes[0]) }},
		{"volumes /app", func(s *docker.ServiceSpec) { s.Task.Mounts[1].Size = 1 }},
		{"volumes /x", func(s *docker.ServiceSpec) {
			s.Task.Mounts = append(s.Task.Mounts, docker.Mount{Type: "npipe", Target: "/x"})
		}},
		{"update.order", func(s *docker.ServiceSpec) { s.Update.Order = "" }},
		{"update.failure_action", func(s *docker.ServiceSpec) { s.Update.FailureAction = "" }},
		{"rollback.max_failure_ratio", func(s *docker.ServiceSpec) { s.Rollback.MaxFailureRatio = 2 }},
		{"endpoint_mode", func(s *docker.ServiceSpec) { s.EndpointMode = "" }}, // with ports
		{"endpoint_mode", func(s *docker.ServiceSpec) { s.EndpointMode = "roundrobin" }},
		{"ports 8080", func(s *docker.ServiceSpec) { s.EndpointMode = "dnsrr" }}, // an ingress port
		{"ports 8080", func(s *docker.ServiceSpec) { s.Ports[0].Proto = "" }},
		{"ports 8080", func(s *docker.ServiceSpec) { s.Ports[0].Mode = "" }},
	} {
		t.Run(tt.option, func(t *testing.T) {
			spec := fullSpec()
			tt.edit(&spec)
			err := spec.Check()
			var se *docker.SpecError
			if !errors.As(err, &se) || len(se.Problems) != 1 || se.Problems[0].Option != tt.option || se.Service != spec.Name {
				t.Fatalf("Check = %v, want one problem on %s", err, tt.option)
			}
		})
	}
}

func TestServiceImageIsTheFamiliarTaggedForm(t *testing.T) {
	for ref, want := range map[string]string{
		"web":                          "web:latest",
		"web:v1":                       "web:v1",
		"docker.io/library/web:v1":     "web:v1",
		"registry.local:5000/shop/web": "registry.local:5000/shop/web:latest",
		"web@sha256:" + sha:            "web@sha256:" + sha,
		sha:                            sha, // an ID: kept
	} {
		if got := docker.ServiceImage(ref); got != want {
			t.Errorf("ServiceImage(%q) = %q, want %q", ref, got, want)
		}
	}
}

const sha = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
