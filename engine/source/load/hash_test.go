package load

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

func hashBase() *spec.Workload {
	d, err := Parse("test.yaml", []byte(`
workloads:
  web:
    image: app:v1
    version: "1"
    replicas: 2
    command: [-listen, ":8080"]
    environment: {A: "1", B: "2"}
    labels: {x: "1", y: "2"}
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: [CMD, /app, -health], interval: 1s}
    resources: {cpus: 1, memory: 64M}
    stop_signal: SIGTERM
    stop_grace_period: 10s
    restart: unless-stopped
    networks: {front: {aliases: [www]}, back: ~}
    pre_stop: [CMD, /app, -drain]
`))
	if err != nil {
		panic(err)
	}
	return d.Workloads["web"]
}

func TestHashCoversFieldsThatNeedANewContainer(t *testing.T) {
	base := spec.Hash(hashBase(), "sha256:1")
	tests := []struct {
		field  string
		change func(w *spec.Workload)
	}{
		{"image", func(w *spec.Workload) { w.Image = "app:v2" }},
		{"version", func(w *spec.Workload) { w.Version = "2" }},
		{"command", func(w *spec.Workload) { w.Command = []string{"-listen", ":9090"} }},
		{"command split differently", func(w *spec.Workload) { w.Command = []string{"-listen :8080"} }},
		{"environment value", func(w *spec.Workload) { w.Environment["A"] = "3" }},
		{"environment key", func(w *spec.Workload) { w.Environment["C"] = "" }},
		{"labels", func(w *spec.Workload) { w.Labels["x"] = "9" }},
		{"ports", func(w *spec.Workload) { w.Ports[0].ContainerPort = 9090 }},
		{"ports host IP", func(w *spec.Workload) { w.Ports[0].HostIP = "0.0.0.0" }},
		{"healthcheck test", func(w *spec.Workload) { w.Healthcheck.Test = []string{"NONE"} }},
		{"healthcheck interval", func(w *spec.Workload) { w.Healthcheck.Interval = 2 * time.Second }},
		{"healthcheck removed", func(w *spec.Workload) { w.Healthcheck = nil }},
		{"stop_signal", func(w *spec.Workload) { w.StopSignal = "SIGINT" }},
		{"networks", func(w *spec.Workload) { w.Networks = []string{"front"} }},
		{"aliases", func(w *spec.Workload) { w.Aliases["front"] = []string{"www2"} }},
		{"an alias moved to another network", func(w *spec.Workload) { w.Aliases = map[string][]string{"back": {"www"}} }},
		{"aliases removed", func(w *spec.Workload) { w.Aliases = nil }},
		{"pre_stop", func(w *spec.Workload) { w.PreStop = []string{"/app", "-quit"} }},
		{"pre_stop removed", func(w *spec.Workload) { w.PreStop = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			w := hashBase()
			tt.change(w)
			if spec.Hash(w, "sha256:1") == base {
				t.Errorf("changing %s left the hash unchanged", tt.field)
			}
		})
	}
	t.Run("image ID", func(t *testing.T) {
		if spec.Hash(hashBase(), "sha256:2") == base {
			t.Error("a new image ID left the hash unchanged")
		}
	})
}

func TestHashLeavesOutFieldsChangedInPlace(t *testing.T) {
	base := spec.Hash(hashBase(), "sha256:1")
	tests := []struct {
		field  string
		change func(w *spec.Workload)
	}{
		{"replicas", func(w *spec.Workload) { w.Replicas = 5 }},
		{"resources", func(w *spec.Workload) { w.Resources = spec.Resources{NanoCPUs: 2e9, Memory: 1 << 30} }},
		{"restart", func(w *spec.Workload) { w.Restart = "always" }},
		{"stop_grace_period", func(w *spec.Workload) { w.StopGrace = time.Minute }},
		{"update policy", func(w *spec.Workload) {
			w.Update = spec.UpdatePolicy{Strategy: spec.StrategyBlueGreen, Parallelism: 3, Order: spec.OrderStopFirst, OrderSet: true, MinReady: time.Second, HealthDeadline: time.Minute, FailureAction: spec.FailureRollback, Drain: 5 * time.Second, Delay: 30 * time.Second, RollbackParallelism: 2, Canary: nil}
		}},
		{"network order", func(w *spec.Workload) { w.Networks = []string{"back", "front"} }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			w := hashBase()
			tt.change(w)
			if spec.Hash(w, "sha256:1") != base {
				t.Errorf("changing %s changed the hash", tt.field)
			}
		})
	}
}

func TestHashIgnoresMapOrder(t *testing.T) {
	parse := func(src string) string {
		d, err := Parse("test.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return spec.Hash(d.Workloads["web"], "sha256:1")
	}
	a := parse("workloads:\n  web: {image: x, environment: {A: 1, B: 2, C: 3}, labels: {p: 1, q: 2}}\n")
	b := parse("workloads:\n  web: {image: x, environment: [C=3, A=1, B=2], labels: {q: 2, p: 1}}\n")
	if a != b {
		t.Error("the order of environment and labels changed the hash")
	}
}

func TestHashIgnoresAliasOrder(t *testing.T) {
	a, b := hashBase(), hashBase()
	a.Aliases["front"] = []string{"www", "shop"}
	b.Aliases["front"] = []string{"shop", "www"}
	if spec.Hash(a, "sha256:1") != spec.Hash(b, "sha256:1") {
		t.Error("the order of aliases changed the hash")
	}
}

// TestHashOfAWorkloadWithoutTheNewFieldsIsUnchanged pins the hash of a
// workload with no networks and no pre_stop to what it was before aliases
// and pre_stop were added: an upgrade of rollcall must not roll it.
func TestHashOfAWorkloadWithoutTheNewFieldsIsUnchanged(t *testing.T) {
	w := hashBase()
	w.Networks, w.Aliases, w.PreStop = nil, nil, nil
	const before = "dbfd41d23d096f1ffc720c293b707b6f4acffe584edea57a9225ddf157317479"
	if got := spec.Hash(w, "sha256:1"); got != before {
		t.Errorf("hash = %s, want %s as before pre_stop and aliases", got, before)
	}
}
