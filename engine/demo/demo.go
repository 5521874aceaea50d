// Package demo stages rollcall's embedded default: a small out-of-date host
// that shows every kind of step, for `rollcall demo`.
//
// On a real engine it builds the demoapp images v1 and v2 locally (FROM
// scratch, no registry), converges a starting state under its own prefix
// (rollcall-demo), crashes one container, and writes the desired state the
// console then opens on:
//
//   - web: 3 replicas of v1, to roll to v2 (start and roll steps);
//   - worker: 2 replicas of v2, one crashed (restart) and one whose restart
//     policy changed (update in place);
//   - old-api: a workload the desired state no longer has (stop).
//
// With no engine the same scenario runs on the in-memory fake engine.
//
// It only ever touches containers labelled rollcall-demo.managed=true. It
// imports engine/docker, engine/spec and engine/reconcile; never session,
// tui or theme.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// Prefix is the demo's label prefix: nothing else is ever touched.
const Prefix = "rollcall-demo"

// Image tags the demo builds (or, on the fake engine, pretends to have).
const (
	ImageV1 = "rollcall-demoapp:v1"
	ImageV2 = "rollcall-demoapp:v2"
)

// workloadYAML is one workload of the demo in rollcall.yaml form.
func workloadYAML(name, image, version string, replicas int, restart string) string {
	return fmt.Sprintf(`  %s:
    image: %s
    version: %q
    replicas: %d
    ports: ["127.0.0.1::8080"]
    healthcheck:
      test: ["CMD", "/demoapp", "-health"]
      interval: 1s
      timeout: 2s
      retries: 3
    resources: {memory: 64M}
    restart: %s
    stop_grace_period: 5s
    update: {health_deadline: 60s}
`, name, image, version, replicas, restart)
}

// startYAML is the out-of-date state the demo starts from.
func startYAML(prefix string) string {
	return "prefix: " + prefix + "\nworkloads:\n" +
		workloadYAML("web", ImageV1, "1", 3, "unless-stopped") +
		workloadYAML("worker", ImageV2, "2", 2, `"no"`) +
		workloadYAML("old-api", ImageV1, "1", 1, "unless-stopped")
}

// desiredYAML is the desired state the console opens on.
func desiredYAML(prefix string) string {
	return `# rollcall demo: the desired state. Edit it while the console runs:
# rollcall re-reads it on save and keeps the last good state on a mistake.
prefix: ` + prefix + "\nworkloads:\n" +
		workloadYAML("web", ImageV2, "2", 3, "unless-stopped") +
		workloadYAML("worker", ImageV2, "2", 2, "unless-stopped")
}

// NewFake returns a fake engine on real time with the demo's images, whose
// containers turn healthy ready after they start (the demo uses 2s).
func NewFake(ready time.Duration) *docker.Fake {
	f := docker.NewFake(docker.FakeOptions{Endpoint: "fake://rollcall-demo", Seed: time.Now().UnixNano()})
	f.AddImage(ImageV1, "", docker.Behaviour{ReadyAfter: ready})
	f.AddImage(ImageV2, "", docker.Behaviour{ReadyAfter: ready})
	return f
}

// Stage builds the images (real engine), converges the starting state,
// crashes worker/0, and writes the desired state to dir/rollcall.yaml. It
// returns that path. Progress lines go to log.
func Stage(ctx context.Context, c docker.Client, dir string, log io.Writer) (string, error) {
	m, _ := c.(*docker.Moby)
	return stage(ctx, c, m, Prefix, dir, log)
}

// stage is Stage under any prefix. images, when not nil, is the engine the
// demo images are built on.
func stage(ctx context.Context, c docker.Client, images *docker.Moby, prefix, dir string, log io.Writer) (string, error) {
	if m := images; m != nil {
		for _, img := range []struct{ tag, version string }{{ImageV1, "v1"}, {ImageV2, "v2"}} {
			fmt.Fprintf(log, "building %s (FROM scratch, on the local engine)\n", img.tag)
			if _, err := docker.BuildDemoappImage(ctx, m, img.tag, img.version); err != nil {
				return "", fmt.Errorf("build %s: %w", img.tag, err)
			}
		}
	}
	start, err := spec.Parse("demo start state", []byte(startYAML(prefix)))
	if err != nil {
		return "", fmt.Errorf("demo start state: %w", err) // a bug in this file
	}
	desired := desiredYAML(prefix)
	if _, err := spec.Parse("demo desired state", []byte(desired)); err != nil {
		return "", fmt.Errorf("demo desired state: %w", err)
	}
	fmt.Fprintf(log, "starting the out-of-date state under prefix %s\n", prefix)
	if _, err := reconcile.Converge(ctx, c, start, reconcile.ConvergeOptions{Poll: 200 * time.Millisecond}); err != nil {
		return "", fmt.Errorf("start the demo state: %w", err)
	}
	if err := crash(ctx, c, prefix, "worker", 0); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desired), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// crash kills the container of a workload's slot, as `docker kill` would.
func crash(ctx context.Context, c docker.Client, prefix, workload string, slot int) error {
	cs, err := c.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, ct := range cs {
		if ct.Labels[docker.WorkloadLabel(prefix)] != workload || ct.Labels[docker.SlotLabel(prefix)] != fmt.Sprint(slot) {
			continue
		}
		switch k := c.(type) {
		case interface {
			Kill(ctx context.Context, id string) error
		}: // the moby adapter
			return k.Kill(ctx, ct.ID)
		case *docker.Fake:
			return k.Kill(ct.ID, 137)
		default:
			return fmt.Errorf("crash %s/%d: this engine cannot kill", workload, slot)
		}
	}
	return fmt.Errorf("crash %s/%d: no such container", workload, slot)
}

// Clean stops and removes every container of the demo's prefix and the
// desired file in dir. It returns how many containers it removed.
func Clean(ctx context.Context, c docker.Client, dir string) (int, error) {
	return clean(ctx, c, Prefix, dir)
}

func clean(ctx context.Context, c docker.Client, prefix, dir string) (int, error) {
	cs, err := c.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, ct := range cs {
		if ct.Labels[docker.ManagedLabel(prefix)] != "true" || !strings.HasPrefix(ct.Name, prefix+"-") {
			continue // never anything but our own
		}
		if err := c.Stop(ctx, ct.ID, 5*time.Second); err != nil && !errors.Is(err, docker.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if err := c.Remove(ctx, ct.ID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	if err := os.Remove(filepath.Join(dir, "rollcall.yaml")); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// Dir is where the demo keeps its desired file.
func Dir() string { return filepath.Join(os.TempDir(), "rollcall-demo") }
