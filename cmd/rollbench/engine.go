package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/state"
)

// runLabel marks every container the bench makes itself (the limit's and
// Docker's own restart policy's); rollcall's carry their prefix, Swarm's
// their service name, and all of them start with the run's name.
const runLabel = "rollbench.run"

// bench is one run: the engine, the binaries and images it built, and
// everything it must remove again.
type bench struct {
	cli      *client.Client // bare API calls: the limit, waits, events, cleanup
	moby     *moby.Moby     // image builds, through rollcall's own adapter
	run      string         // "rb" + 6 hex digits: the start of every name this run makes
	dir      string         // binaries, desired files, journals, the proxy's socket
	rollcall string         // the built rollcall binary
	demoapp  string         // the built static demoapp binary
	images   map[string]string
	swarm    bool          // this run turned swarm mode on, so it must leave it
	fleet    *fleetEngines // the engines of the run's own, once started (fleet.go)
	interval time.Duration
	trace    bool     // log where the time of each rollcall trial went
	seq      int      // numbers every trial, so no two share a name
	names    []string // every trial's name, so the cleanup finds rollcall's lock files
	log      func(format string, args ...any)

	// beforeTree is -before's tree, and before the rollcall built from it
	// (the tool before), when there is one.
	beforeTree, before string
	// cpu is the CPU time (user and system) of the last timed rollcall
	// process (timedApply).
	cpu, lastCPU time.Duration // lastCPU: of the last apply, timed or not
}

func newBench(ctx context.Context, interval time.Duration, logf func(string, ...any)) (*bench, error) {
	b := &bench{run: "rb" + randomHex(3), images: map[string]string{}, interval: interval, log: logf}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("connect to docker engine: %w", err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("connect to docker engine: %w", err)
	}
	b.cli = cli
	if b.moby, err = moby.New(ctx, ""); err != nil {
		return nil, err
	}
	if b.dir, err = os.MkdirTemp("", "rollbench-"); err != nil {
		return nil, err
	}
	return b, nil
}

// build compiles rollcall and a static demoapp into the run's folder and
// builds the four images: v1 and v2 without a healthcheck (rollcall and the
// limit set one per container) and with one baked in (Swarm, whose
// --health-cmd needs a shell that a FROM scratch image lacks).
func (b *bench) build(ctx context.Context) error {
	b.rollcall = filepath.Join(b.dir, "rollcall")
	b.demoapp = filepath.Join(b.dir, "demoapp")
	builds := []struct{ out, pkg, dir string }{{b.rollcall, "./cmd/rollcall", ""}, {b.demoapp, "./cmd/demoapp", ""}}
	if b.beforeTree != "" {
		b.before = filepath.Join(b.dir, "rollcall-before")
		builds = append(builds, struct{ out, pkg, dir string }{b.before, "./cmd/rollcall", b.beforeTree})
	}
	for _, c := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", c.out, c.pkg)
		cmd.Dir = c.dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s in %s (run rollbench from the module root): %w: %s", c.pkg, cmp.Or(c.dir, "."), err, bytes.TrimSpace(out))
		}
	}
	for _, v := range []string{"v1", "v2"} {
		for _, hc := range []bool{false, true} {
			files, err := imagebuild.ImageFiles(b.demoapp, v)
			if err != nil {
				return err
			}
			if hc {
				files["Dockerfile"] = append(files["Dockerfile"], fmt.Sprintf(
					"HEALTHCHECK --interval=%s --timeout=1s --retries=3 CMD [\"/demoapp\", \"-health\"]\n", b.interval)...)
			}
			tag := b.tag(v, hc)
			id, err := b.moby.BuildImage(ctx, tag, files)
			if err != nil {
				return fmt.Errorf("build %s: %w", tag, err)
			}
			b.images[tag] = id
		}
	}
	return nil
}

// tag is the image of version v, with the healthcheck baked in or not.
func (b *bench) tag(v string, healthcheck bool) string {
	if healthcheck {
		return "rollbench-demoapp:" + b.run + "-hc-" + v
	}
	return "rollbench-demoapp:" + b.run + "-" + v
}

// name is a fresh name for one trial of kind ("rc", "sw", "lim", ...).
func (b *bench) name(kind string) string {
	b.seq++
	n := fmt.Sprintf("%s-%s%d", b.run, kind, b.seq)
	b.names = append(b.names, n)
	return n
}

// swarmInit turns swarm mode on, on loopback, unless it is on already.
func (b *bench) swarmInit(ctx context.Context) error {
	state, err := cli(ctx, "info", "--format", "{{.Swarm.LocalNodeState}}")
	if err != nil {
		return err
	}
	if state == "active" {
		return errors.New("the engine is in swarm mode already: someone else uses it; leave it with docker swarm leave --force, or run without swarm (-tools rollcall,limit)")
	}
	b.swarm = true // set before the call: a half-done init must be left too
	if _, err := cli(ctx, "swarm", "init", "--advertise-addr", "127.0.0.1"); err != nil {
		return err
	}
	return nil
}

// cleanup stops the run's own engines, removes every service, container
// and image of the run, leaves swarm mode if the run turned it on, and
// removes the run's folder. It
// runs on a context of its own: the run's may be cancelled by then.
func (b *bench) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b.removeLocks(ctx)
	if b.fleet != nil {
		b.fleet.close(b.log)
		b.fleet = nil
	}
	if b.swarm {
		if out, err := cli(ctx, "service", "ls", "-q", "--filter", "name="+b.run); err == nil && out != "" {
			_, _ = cli(ctx, append([]string{"service", "rm"}, strings.Fields(out)...)...)
		}
		if _, err := cli(ctx, "swarm", "leave", "--force"); err != nil {
			b.log("swarm leave: %v", err)
		}
		b.swarm = false
	}
	if b.cli != nil {
		if err := b.removeContainers(ctx, b.run); err != nil {
			b.log("cleanup: %v", err)
		}
		for tag := range b.images {
			if _, err := cli(ctx, "rmi", "-f", tag); err != nil && !strings.Contains(err.Error(), "No such image") {
				b.log("cleanup: %v", err)
			}
		}
		b.cli.Close()
	}
	if b.moby != nil {
		b.moby.Close()
	}
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// removeLocks removes the lock files rollcall left for the run's trials
// (a lock file stays where it is once let go of), on the engine and on
// the run's own engines: every rollcall process of the run has ended.
func (b *bench) removeLocks(ctx context.Context) {
	var engines []docker.EngineInfo
	if b.moby != nil {
		if info, err := b.moby.Info(ctx); err == nil {
			engines = append(engines, info)
		} else {
			b.log("cleanup: %v", err)
		}
	}
	if b.fleet != nil {
		for _, e := range b.fleet.engines {
			engines = append(engines, docker.EngineInfo{ID: e.ID})
		}
	}
	for _, info := range engines {
		for _, n := range b.names {
			if err := os.Remove(state.DefaultLockPath(info, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				b.log("cleanup: %v", err)
			}
		}
	}
}

// removeContainers force-removes every container whose name starts with
// prefix and "-" or "." (Swarm names tasks <service>.<slot>.<id>).
func (b *bench) removeContainers(ctx context.Context, prefix string) error {
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var errs []error
	for _, c := range res.Items {
		if !ofPrefix(c.Names, prefix) {
			continue
		}
		_, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) && !cerrdefs.IsConflict(err) { // conflict: removal already in progress
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func ofPrefix(names []string, prefix string) bool {
	for _, n := range names {
		n = strings.TrimPrefix(n, "/")
		if strings.HasPrefix(n, prefix+"-") || strings.HasPrefix(n, prefix+".") {
			return true
		}
	}
	return false
}

// waitGone waits until no container of prefix is left, up to a minute.
func (b *bench) waitGone(ctx context.Context, prefix string) error {
	return poll(ctx, time.Minute, 100*time.Millisecond, "containers of "+prefix+" gone", func() (bool, error) {
		res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{All: true})
		if err != nil {
			return false, err
		}
		for _, c := range res.Items {
			if ofPrefix(c.Names, prefix) {
				return false, nil
			}
		}
		return true, nil
	})
}

// healthyCount counts the running, healthy containers that carry label.
func (b *bench) healthyCount(ctx context.Context, label string) (int, []string, error) {
	f := client.Filters{}
	f.Add("label", label)
	f.Add("health", "healthy")
	f.Add("status", "running")
	res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
	if err != nil {
		return 0, nil, err
	}
	ids := make([]string, 0, len(res.Items))
	for _, c := range res.Items {
		ids = append(ids, c.ID)
	}
	return len(ids), ids, nil
}

// waitHealthy waits until n containers carrying label run healthy, and
// returns their IDs.
func (b *bench) waitHealthy(ctx context.Context, label string, n int, timeout time.Duration) ([]string, error) {
	var ids []string
	err := poll(ctx, timeout, 50*time.Millisecond, fmt.Sprintf("%d healthy containers of %s", n, label), func() (bool, error) {
		got, l, err := b.healthyCount(ctx, label)
		ids = l
		return got == n, err
	})
	return ids, err
}

// demoConfig is a demoapp container as the limit and Docker's restart
// policy run it: the same healthcheck and grace as rollcall's file.
func (b *bench) demoConfig(image string) *container.Config {
	grace := 2
	return &container.Config{
		Image:       image,
		Labels:      map[string]string{runLabel: b.run},
		StopTimeout: &grace,
		Healthcheck: &container.HealthConfig{Test: []string{"CMD", "/demoapp", "-health"},
			Interval: b.interval, Timeout: time.Second, Retries: 3},
	}
}

// poll calls cond every step until it is true, an error, or timeout.
func poll(ctx context.Context, timeout, step time.Duration, what string, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(step)
	defer t.Stop()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if err != nil && ctx.Err() == nil {
			return fmt.Errorf("wait for %s: %w", what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

// cli runs the docker command line and returns its trimmed stdout.
func cli(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

func randomHex(n int) string {
	p := make([]byte, n)
	if _, err := rand.Read(p); err != nil {
		panic(err)
	}
	return hex.EncodeToString(p)
}

// containerSpec is a container the bench creates in bare API calls.
type containerSpec struct {
	config *container.Config
	host   *container.HostConfig
}

// createStart creates and starts a container: two API calls, as docker run.
func (b *bench) createStart(ctx context.Context, name string, s *containerSpec) (string, error) {
	res, err := b.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: name, Config: s.config, HostConfig: s.host})
	if err != nil {
		return "", fmt.Errorf("create %s: %w", name, err)
	}
	if _, err := b.cli.ContainerStart(ctx, res.ID, client.ContainerStartOptions{}); err != nil {
		return "", fmt.Errorf("start %s: %w", name, err)
	}
	return res.ID, nil
}

// pollHealthy inspects id every step until the engine says healthy.
func (b *bench) pollHealthy(ctx context.Context, id string, step, timeout time.Duration) error {
	return poll(ctx, timeout, step, "healthy "+id[:12], func() (bool, error) {
		r, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return false, err
		}
		st := r.Container.State
		return st != nil && st.Health != nil && st.Health.Status == container.Healthy, nil
	})
}
