package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/moby/moby/client"
)

// rollConfig is one roll the bench measures: replicas at a parallelism.
type rollConfig struct{ replicas, parallelism int }

func (c rollConfig) String() string {
	return fmt.Sprintf("%d replicas, parallelism %d", c.replicas, c.parallelism)
}

// A roller sets up v1 (untimed), rolls to v2 (timed) and removes what it
// made. Each tool's time ends where its roll is over as the tool sees it:
// rollcall's at apply's exit, Swarm's at the last old task's die event (its
// CLI would add a 5s verify), the limit's once the last old container is
// removed.
type roller func(ctx context.Context, b *bench, c rollConfig) (time.Duration, error)

var rollers = map[string]roller{"rollcall": rollRollcall, "swarm": rollSwarm, "limit": rollLimit, "before": rollBefore}

// rollBefore is rollRollcall with the rollcall built from -before's tree:
// the same file, the same timing, the same checks. Trials run one at a
// time, so the bench's binary is swapped for the trial's length.
func rollBefore(ctx context.Context, b *bench, c rollConfig) (time.Duration, error) {
	if b.before == "" {
		return 0, errors.New("no -before tree")
	}
	this := b.rollcall
	b.rollcall = b.before
	defer func() { b.rollcall = this }()
	return rollRollcall(ctx, b, c)
}

// rollcallFile is the desired file of a roll: the demoapp image of version,
// probed every interval, start-first at the parallelism.
func rollcallFile(prefix, image string, c rollConfig, interval time.Duration, restart string) string {
	return fmt.Sprintf(`prefix: %s
workloads:
  web:
    image: %s
    replicas: %d
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: %s, timeout: 1s, retries: 3}
    stop_grace_period: 2s
    restart: %q
    update: {parallelism: %d, order: start-first}
`, prefix, image, c.replicas, interval, restart, c.parallelism)
}

// rollRollcall times `rollcall apply --yes --allow-mass-stop` of v2 over v1,
// from the start of the process to its exit.
func rollRollcall(ctx context.Context, b *bench, c rollConfig) (time.Duration, error) {
	prefix := b.name("rc")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer b.teardown(prefix)
	journal := filepath.Join(dir, "state", "journal.jsonl")
	var files [2]string
	for i, v := range []string{"v1", "v2"} {
		files[i] = filepath.Join(dir, v+".yaml")
		if err := os.WriteFile(files[i], []byte(rollcallFile(prefix, b.tag(v, false), c, b.interval, "no")), 0o644); err != nil {
			return 0, err
		}
	}
	if _, err := b.apply(ctx, journal, files[0]); err != nil {
		return 0, fmt.Errorf("set up v1: %w", err)
	}
	d, err := b.timedApply(ctx, dir, prefix, journal, files[1], c.String())
	if err != nil {
		return 0, fmt.Errorf("roll to v2: %w", err)
	}
	if n, _, err := b.healthyCount(ctx, prefix+".managed=true"); err != nil || n != c.replicas {
		return 0, fmt.Errorf("after apply: %d healthy containers, want %d (%v)", n, c.replicas, err)
	}
	return d, nil
}

// timedApply is the timed apply of a rollcall trial (of prefix, in dir):
// with -trace, through a counting proxy, and the trace of it logged as
// what.
func (b *bench) timedApply(ctx context.Context, dir, prefix, journal, file, what string) (time.Duration, error) {
	var px *proxy
	var extra []string
	t := &trace{}
	if b.trace {
		var err error
		if px, err = startProxy(filepath.Join(dir, "docker.sock"), b.socket()); err != nil {
			return 0, err
		}
		defer px.close()
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		t.watchEvents(tctx, b, prefix+".managed=true")
		extra = []string{"--docker-host", "unix://" + filepath.Join(dir, "docker.sock")}
	}
	t0 := time.Now()
	d, err := b.apply(ctx, journal, file, extra...)
	b.cpu = b.lastCPU
	if px != nil {
		time.Sleep(200 * time.Millisecond) // the last events
		t.add(t0, "apply v2 starts")
		t.add(t0.Add(d), "apply v2 exits")
		t.addCalls(px, t0)
		t.addJournal(journal)
		t.print(b, fmt.Sprintf("rollcall apply, %s (through the proxy)", what), t0)
	}
	return d, err
}

// apply runs rollcall apply on file and returns how long the process ran.
func (b *bench) apply(ctx context.Context, journal, file string, extra ...string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	args := append([]string{"--journal", journal}, extra...)
	cmd := exec.CommandContext(ctx, b.rollcall, append(args, "apply", "--yes", "--allow-mass-stop", "-f", file)...)
	cmd.Stderr = &stderr
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if cmd.ProcessState != nil {
		b.lastCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil {
		return 0, fmt.Errorf("rollcall apply: %w: %s", err, lastLines(stderr.String(), 5))
	}
	return d, nil
}

// rollSwarm times `docker service update --image` of a start-first service
// from the call to the die event of its last old task.
func rollSwarm(ctx context.Context, b *bench, c rollConfig) (time.Duration, error) {
	svc := b.name("sw")
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli(cctx, "service", "rm", svc); err != nil {
			b.log("remove service %s: %v", svc, err)
		}
		b.teardown(svc)
	}()
	_, err := cli(ctx, "service", "create", "--detach", "--no-resolve-image", "--name", svc,
		"--replicas", fmt.Sprint(c.replicas), "--update-parallelism", fmt.Sprint(c.parallelism),
		"--update-order", "start-first", "--update-delay", "0s", "--stop-grace-period", "2s",
		b.tag("v1", true))
	if err != nil {
		return 0, err
	}
	label := "com.docker.swarm.service.name=" + svc
	old, err := b.waitHealthy(ctx, label, c.replicas, 3*time.Minute)
	if err != nil {
		return 0, err
	}
	ectx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	f := client.Filters{}
	f.Add("type", "container")
	f.Add("label", label)
	f.Add("event", "die")
	ev := b.cli.Events(ectx, client.EventsListOptions{Filters: f})
	t0 := time.Now()
	if _, err := cli(ctx, "service", "update", "--detach", "--no-resolve-image", "--image", b.tag("v2", true), svc); err != nil {
		return 0, err
	}
	left := map[string]bool{}
	for _, id := range old {
		left[id] = true
	}
	var last time.Time
	for len(left) > 0 {
		select {
		case m := <-ev.Messages:
			if left[m.Actor.ID] {
				delete(left, m.Actor.ID)
				last = time.Unix(0, m.TimeNano)
			}
		case err := <-ev.Err:
			return 0, fmt.Errorf("events of %s: %w (%d old tasks still up)", svc, err, len(left))
		case <-ectx.Done():
			return 0, fmt.Errorf("roll of %s: %d old tasks still up: %w", svc, len(left), ectx.Err())
		}
	}
	return last.Sub(t0), nil
}

// rollLimit is the same roll in bare API calls: per slot, create and start
// v2, inspect every 20ms until healthy, then stop and remove v1. Up to
// parallelism slots are mid-roll at once; a slot stops being mid-roll once
// its new container is healthy, so the next one starts while the old one
// stops, as the rules let rollcall do too.
func rollLimit(ctx context.Context, b *bench, c rollConfig) (time.Duration, error) {
	base := b.name("lim")
	defer b.teardown(base)
	l, err := b.limitSetUp(ctx, base, c)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	err = l.roll(ctx)
	d := time.Since(t0)
	if err != nil {
		return 0, err
	}
	return d, nil
}

// limitRoll is the limit's roll of one engine: its v1 containers, up and
// healthy, and what it rolls them to.
type limitRoll struct {
	b    *bench
	base string
	c    rollConfig
	old  []string // v1's container IDs, by slot
	to   string   // the image v2 is; "" is the run's demoapp v2
}

// limitSetUp starts c.replicas v1 containers named after base on b's
// engine and waits until they are healthy (untimed).
func (b *bench) limitSetUp(ctx context.Context, base string, c rollConfig) (*limitRoll, error) {
	l := &limitRoll{b: b, base: base, c: c, old: make([]string, c.replicas)}
	errs := make([]error, c.replicas)
	var wg sync.WaitGroup
	for i := range c.replicas {
		wg.Go(func() { l.old[i], errs[i] = b.createStart(ctx, fmt.Sprintf("%s-%d-v1", base, i), l.spec("v1")) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if _, err := b.waitHealthy(ctx, "rollbench.trial="+base, c.replicas, 3*time.Minute); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *limitRoll) spec(v string) *containerSpec {
	image := l.b.tag(v, false)
	if v == "v2" && l.to != "" {
		image = l.to
	}
	conf := l.b.demoConfig(image)
	conf.Labels["rollbench.trial"] = l.base
	return &containerSpec{config: conf}
}

// roll rolls every slot to v2, up to parallelism slots at once (see
// rollLimit), and returns once the last old container is removed.
func (l *limitRoll) roll(ctx context.Context) error {
	b, c := l.b, l.c
	errs := make([]error, c.replicas)
	var wg sync.WaitGroup
	slots := make(chan struct{}, c.parallelism)
	for i := range c.replicas {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Go(func() {
			released := false
			release := func() {
				if !released {
					released = true
					<-slots
				}
			}
			defer release()
			id, err := b.createStart(ctx, fmt.Sprintf("%s-%d-v2", l.base, i), l.spec("v2"))
			if err == nil {
				err = b.pollHealthy(ctx, id, 20*time.Millisecond, 2*time.Minute)
			}
			release()
			if err == nil {
				grace := 2
				if _, err = b.cli.ContainerStop(ctx, l.old[i], client.ContainerStopOptions{Timeout: &grace}); err == nil {
					_, err = b.cli.ContainerRemove(ctx, l.old[i], client.ContainerRemoveOptions{RemoveVolumes: true})
				}
			}
			errs[i] = err
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// teardown removes every container of prefix and waits until they are gone.
func (b *bench) teardown(prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.removeContainers(ctx, prefix); err != nil {
		b.log("teardown %s: %v", prefix, err)
	}
	if err := b.waitGone(ctx, prefix); err != nil {
		b.log("teardown %s: %v", prefix, err)
	}
}

func lastLines(s string, n int) string {
	lines := bytes.Split(bytes.TrimSpace([]byte(s)), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte(" | ")))
}
