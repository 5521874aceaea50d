package main

// Integration tests against the real Docker engine, on the one harness
// (engine/docker/dockertest): they skip only when no engine answers and
// ROLLCALL_REQUIRE_DOCKER is not "1" (CI sets it, so a missing engine fails
// CI), and every container they make carries a prefix of the test's own,
// swept in cleanup.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

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
	m := dockertest.Engine(t)
	prefix := dockertest.Prefix(t)
	tag, _ := dockertest.DemoappImage(t, "v2")
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

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
	mustContain(t, "apply stderr", res.stderr, "converged: 2 start")

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

	// The journal's own lines: the lock taken, and a line before and after
	// each of the two starts.
	res = runBinary(t, ctx, bin, "--journal", journalPath, "history", "--json")
	if n := strings.Count(res.stdout, `"action":"start"`); res.code != exitOK || n != 4 {
		t.Errorf("history --json: exit %d, %d start lines, want 4 (started, ok for each):\n%s", res.code, n, res.stdout)
	}
	res = runBinary(t, ctx, bin, "--journal", journalPath, "history")
	if n := strings.Count(res.stdout, "✓ ok"); res.code != exitOK || n != 2 {
		t.Errorf("history: exit %d, %d steps ok, want 2 (the starts):\n%s", res.code, n, res.stdout)
	}
	res = runBinary(t, ctx, bin, "version")
	mustContain(t, "version", res.stdout, "rollcall ", "go:", "engine:  ", "(API ")
}

// TestRealEngineDemoappImageFromTheBinary: the demo image built from the
// rollcall binary itself, as `rollcall demo` builds it (go build's default,
// with cgo, links it dynamically: the image then carries its loader and
// libraries), runs a container that turns healthy and answers as demoapp.
func TestRealEngineDemoappImageFromTheBinary(t *testing.T) {
	m := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := buildRollcall(t, ctx, t.TempDir())
	files, err := imagebuild.ImageFiles(bin, "fromrollcall")
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for name := range files {
		if name != "Dockerfile" && name != "demoapp" {
			extra = append(extra, name)
		}
	}
	t.Logf("the image holds the binary and %d more files: %v", len(extra), extra)

	var tag string
	t.Cleanup(func() { // after the sweep of the prefix, registered below
		if _, err := dockertest.CLI(context.Background(), "rmi", tag); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	prefix := dockertest.Prefix(t)
	tag = dockertest.ImageTag("demoapp", "fromrollcall")
	if _, err := imagebuild.BuildImage(ctx, dockertest.ImageBuilder(t), bin, tag, "fromrollcall"); err != nil {
		t.Fatal(err)
	}
	id, err := m.Create(ctx, docker.CreateSpec{
		Name:   prefix + "-web-0",
		Image:  tag,
		Labels: map[string]string{docker.ManagedLabel(prefix): "true"},
		Ports:  []docker.PortSpec{{ContainerPort: 8080, HostIP: "127.0.0.1"}},
		Healthcheck: &docker.Healthcheck{
			Test: []string{"CMD", "/demoapp", "-health"}, Interval: 500 * time.Millisecond, Timeout: 3 * time.Second, Retries: 3,
		},
		StopTimeout: 2 * time.Second,
		Limits:      docker.Limits{Restart: "no"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var d docker.ContainerDetail
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		if d, err = m.Inspect(ctx, id); err != nil {
			t.Fatal(err)
		}
		if d.Health == docker.HealthHealthy {
			break
		}
		if d.State != docker.StateRunning || time.Now().After(deadline) {
			logs, _ := dockertest.CLI(ctx, "logs", id)
			t.Fatalf("container of the rollcall-built image: %s, health %s, exit %d, probes %+v; logs:\n%s", d.State, d.Health, d.ExitCode, d.HealthLog, logs)
		}
	}
	cs, err := m.List(ctx, prefix)
	if err != nil || len(cs) != 1 || len(cs[0].Ports) == 0 {
		t.Fatalf("List: %+v, %v; want the one container with its port", cs, err)
	}
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", cs[0].Ports[0].HostPort))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.HasPrefix(string(body), "fromrollcall ") {
		t.Errorf("GET / = %q, want demoapp's answer \"fromrollcall <hostname>\"", body)
	}
}
