package main

import (
	"os"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// TestExampleFileParses: examples/rollcall.yaml is a valid desired state, and
// says what its comments say, with no warnings.
func TestExampleFileParses(t *testing.T) {
	const path = "../../examples/rollcall.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := spec.Parse(path, data)
	if err != nil {
		t.Fatalf("example does not parse:\n%v", err)
	}
	if len(d.Warnings) > 0 {
		t.Errorf("example has warnings: %v", spec.ErrorList(d.Warnings))
	}
	w := d.Workloads["web"]
	switch {
	case w == nil:
		t.Fatal("no workload web")
	case w.Image != "rollcall-demoapp:v2" || w.Replicas != 3:
		t.Errorf("image %q replicas %d", w.Image, w.Replicas)
	case w.Healthcheck == nil || !slices.Equal(w.Healthcheck.Test, []string{"CMD", "/demoapp", "-health"}):
		t.Errorf("healthcheck %+v", w.Healthcheck)
	case len(w.Ports) != 1 || w.Ports[0] != (spec.Port{HostIP: "127.0.0.1", ContainerPort: 8080, Proto: "tcp"}):
		t.Errorf("ports %+v", w.Ports)
	}
}
