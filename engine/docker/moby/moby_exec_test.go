package moby_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
)

// TestMobyExecAndAliases: a container joins a user-defined network with its
// aliases; Exec runs a command in it and
// returns its exit code and output; demoapp -drain then makes its
// healthcheck fail while it keeps serving.
func TestMobyExecAndAliases(t *testing.T) {
	et := newEngineTest(t)
	net := et.prefix + "-front"
	if _, err := dockertest.CLI(et.ctx, "network", "create", "--label", et.prefix+".test=true", "--label", dockertest.RunLabelArg, net); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dockertest.Sweep(et.ctx, et.prefix) // the containers first: a network in use cannot go
		if _, err := dockertest.CLI(et.ctx, "network", "rm", net); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	spec := et.spec("a")
	spec.Networks = []string{net}
	spec.Aliases = map[string][]string{net: {"web", "www"}}
	id := et.create(spec)
	other := et.spec("b")
	other.Networks = []string{net}
	other.Healthcheck = nil
	et.create(other)

	aliases, err := dockertest.CLI(et.ctx, "inspect", "-f", "{{json (index .NetworkSettings.Networks \""+net+"\").Aliases}}", id)
	if err != nil || !strings.Contains(aliases, `"web"`) || !strings.Contains(aliases, `"www"`) {
		t.Errorf("aliases on %s: %s %v, want web and www", net, aliases, err)
	}

	code, out, err := et.m.Exec(et.ctx, id, []string{"/demoapp", "-drain"})
	if err != nil || code != 0 || !strings.Contains(out, "draining") {
		t.Fatalf("exec -drain: exit %d, %q, %v; want 0 and \"draining\"", code, out, err)
	}
	code, out, err = et.m.Exec(et.ctx, id, []string{"/demoapp", "-health"})
	if err != nil || code != 1 || !strings.Contains(out, "draining") {
		t.Errorf("exec -health after the drain: exit %d, %q, %v; want 1 and \"draining\"", code, out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for et.inspect(id).Health != docker.HealthUnhealthy {
		if time.Now().After(deadline) {
			t.Fatalf("still %s 10s after the drain, want unhealthy", et.inspect(id).Health)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if d := et.inspect(id); d.State != docker.StateRunning {
		t.Errorf("drained container is %s, want still running", d.State)
	}

	if code, out, err := et.m.Exec(et.ctx, id, []string{"/nope"}); err == nil && code == 0 {
		t.Errorf("exec of a missing binary: exit 0, %q", out)
	}
	if _, _, err := et.m.Exec(et.ctx, et.prefix+"-gone", []string{"/demoapp", "-drain"}); !errors.Is(err, docker.ErrNotFound) {
		t.Errorf("exec in a missing container: %v, want ErrNotFound", err)
	}
	if !slices.Contains(docker.Mutating, "Exec") {
		t.Error("Exec is not in Mutating")
	}
}
