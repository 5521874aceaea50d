package main

// Integration test against the real Docker engine. It skips only when no
// engine answers and ROLLCALL_REQUIRE_DOCKER is not "1" (CI sets it, so a
// missing engine fails CI). Every container it makes carries a per-run
// prefix and is removed in cleanup.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// needRealEngine connects to the engine from the environment, or skips
// (fails with ROLLCALL_REQUIRE_DOCKER=1) when none answers.
func needRealEngine(t *testing.T, ctx context.Context) *docker.Moby {
	t.Helper()
	m, err := docker.NewMoby(ctx, "")
	if err != nil {
		if os.Getenv("ROLLCALL_REQUIRE_DOCKER") == "1" {
			t.Fatalf("no docker engine, and ROLLCALL_REQUIRE_DOCKER=1: %v", err)
		}
		t.Skipf("no docker engine (set ROLLCALL_REQUIRE_DOCKER=1 to fail instead): %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// removePrefix force-stops and removes every container of prefix.
func removePrefix(t *testing.T, m *docker.Moby, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := m.List(ctx, prefix)
	if err != nil {
		t.Errorf("cleanup: list %s: %v", prefix, err)
		return
	}
	for _, c := range cs {
		if err := m.Stop(ctx, c.ID, time.Second); err != nil && !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
		if err := m.Remove(ctx, c.ID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			t.Errorf("cleanup: %v", err)
		}
	}
}

// newRunID is a random hex id for one test run: its prefix ("rctest"+id)
// and its image tags.
func newRunID() string {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	return hex.EncodeToString(rnd[:])
}

// removeImages removes image tags with the docker CLI, where there is one:
// the adapter has no image removal.
func removeImages(tags ...string) {
	if docker, err := exec.LookPath("docker"); err == nil {
		for _, tag := range tags {
			_ = exec.Command(docker, "image", "rm", tag).Run()
		}
	}
}

// buildRollcall builds this package's binary into dir.
func buildRollcall(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "rollcall")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

type binResult struct {
	stdout, stderr string
	code           int
}

func runBinary(t *testing.T, ctx context.Context, bin string, args ...string) binResult {
	t.Helper()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exitErr *exec.ExitError
	code := 0
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %s %v: %v", bin, args, err)
	}
	return binResult{stdout.String(), stderr.String(), code}
}

// TestRealEngineApplyThenPlan: the built binary converges an example file
// on the real engine with `apply --yes`, and `plan` then exits 0.
func TestRealEngineApplyThenPlan(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	m := needRealEngine(t, ctx)

	run := newRunID()
	prefix := "rctest" + run
	tag := "rollcall-demoapp:rctest-" + run
	t.Cleanup(func() {
		removePrefix(t, m, prefix)
		removeImages(tag)
	})
	if _, err := docker.BuildDemoappImage(ctx, m, tag, "v2"); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	file := filepath.Join(dir, "rollcall.yaml")
	desired := `prefix: ` + prefix + `
workloads:
  web:
    image: ` + tag + `
    version: "2"
    replicas: 2
    command: ["-listen", ":8080", "-version", "v2"]
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 1s, retries: 3}
    resources: {memory: 64M}
    stop_grace_period: 2s
`
	if err := os.WriteFile(file, []byte(desired), 0o644); err != nil {
		t.Fatal(err)
	}
	journalPath := filepath.Join(dir, "journal.jsonl")

	began := time.Now()
	res := runBinary(t, ctx, bin, "--journal", journalPath, "apply", "--yes", "--timeout", "3m", "-f", file)
	if res.code != exitOK {
		t.Fatalf("apply: exit %d\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	t.Logf("apply took %s:\n%s", time.Since(began).Round(time.Millisecond), res.stderr)
	mustContain(t, "apply stderr", res.stderr, "converged in", ": 2 start")

	res = runBinary(t, ctx, bin, "plan", "-f", file)
	if res.code != exitOK {
		t.Fatalf("plan after apply: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	if strings.TrimSpace(res.stdout) != "nothing to do" {
		t.Errorf("plan after apply:\n%s", res.stdout)
	}
	res = runBinary(t, ctx, bin, "plan", "--json", "-f", file)
	var doc planDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || !doc.Converged || res.code != exitOK {
		t.Errorf("plan --json: exit %d, %v\n%s", res.code, err, res.stdout)
	}

	cs, err := m.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	healthy := 0
	for _, c := range cs {
		if c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
			healthy++
		}
	}
	if len(cs) != 2 || healthy != 2 {
		t.Errorf("%d containers, %d healthy; want 2 and 2", len(cs), healthy)
	}

	res = runBinary(t, ctx, bin, "--journal", journalPath, "history", "--json")
	if n := strings.Count(res.stdout, "\n"); res.code != exitOK || n != 2 {
		t.Errorf("history: exit %d, %d lines, want 2 (the starts):\n%s", res.code, n, res.stdout)
	}
	res = runBinary(t, ctx, bin, "version")
	mustContain(t, "version", res.stdout, "rollcall ", "go:", "engine:  ", "(API ")
}
