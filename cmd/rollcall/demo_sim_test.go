package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/demo"
)

// TestDemoSimulatedLeavesNothing: the one-host demo on the simulated
// engine stages its state (steps a session runs and journals) under a
// lock, a journal and a state folder of its run's own, and removes them
// all when it ends: the real journal, the state folder beside it and the
// host locks' folder get nothing. (Without a terminal the console does
// not open: the run ends once staged.)
func TestDemoSimulatedLeavesNothing(t *testing.T) {
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "rctest-demo-" + hex.EncodeToString(id[:])
	t.Cleanup(func() { _ = os.RemoveAll(demo.Dir(prefix)) })
	simRuns := t.TempDir()
	base := simRunBase
	simRunBase = simRuns
	t.Cleanup(func() { simRunBase = base })
	h := newHarness(t, nil)
	res := h.run("", "--prefix", prefix, "demo", "--simulated")
	mustContain(t, "demo --simulated", res.stderr, "--simulated: running the demo on the in-memory fake engine",
		"desired state: "+filepath.Join(demo.Dir(prefix), "rollcall.yaml"))
	if left, _ := os.ReadDir(simRuns); len(left) != 0 {
		t.Errorf("the simulated run left %v in its base folder", left)
	}
	if _, err := os.Stat(h.journal); !os.IsNotExist(err) {
		t.Errorf("the simulated steps reached the real journal %s (%v)", h.journal, err)
	}
	for _, dir := range []string{filepath.Dir(h.journal), demo.LockDir(prefix)} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*"+prefix+"*")); len(m) != 0 {
			t.Errorf("the simulated run left %v", m)
		}
	}
	t.Logf("exit %d\n%s", res.code, res.stderr)
}

// TestDemoRegistryNeedsADockerEngine: demo --registry pushes and pulls
// through a Docker engine; with the simulated one it is refused before
// anything is staged, and the registry never starts.
func TestDemoRegistryNeedsADockerEngine(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "--prefix", "rctest-demo-reg", "demo", "--registry", "--simulated")
	if res.code != 1 {
		t.Errorf("demo --registry --simulated exits %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "demo --registry --simulated", res.stderr, "--registry stages the one-host demo on a Docker engine", "rollcall demo --help")
	// The harness's engine is the in-memory fake: no Docker engine.
	res = h.run("", "--prefix", "rctest-demo-reg", "demo", "--registry")
	if res.code != 1 {
		t.Errorf("demo --registry on the fake engine exits %d, want 1\n%s", res.code, res.stderr)
	}
	mustContain(t, "demo --registry on the fake engine", res.stderr, "demo --registry pushes and pulls through a Docker engine")
	if strings.Contains(res.stderr, "the demo's registry serves") || strings.Contains(res.stderr, "starting the out-of-date state") {
		t.Errorf("demo --registry on the fake engine went on:\n%s", res.stderr)
	}
}
