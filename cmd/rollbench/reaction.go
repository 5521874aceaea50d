package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// reaction is what followed one host SIGKILL of a container's process, each
// time since the kill; zero where it did not apply (Docker makes no call).
type reaction struct {
	die, call, running, healthy time.Duration
	kill                        time.Time
}

// reactors measure one kill each: rollcall's agent (restart: "no", so the
// engine leaves the crash to it) and Docker's own restart: unless-stopped.
var reactors = map[string]func(ctx context.Context, b *bench) (reaction, error){
	"rollcall": reactRollcall, "docker": reactDocker,
}

// settle is how long a healthy container runs before it is killed, so the
// agent is idle and Docker's restart backoff is at its start.
const settle = 1500 * time.Millisecond

func reactRollcall(ctx context.Context, b *bench) (reaction, error) {
	prefix := b.name("rx")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return reaction{}, err
	}
	defer b.teardown(prefix)
	file := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(file, []byte(rollcallFile(prefix, b.tag("v1", false), rollConfig{1, 1}, b.interval, "no")), 0o644); err != nil {
		return reaction{}, err
	}
	px, err := startProxy(filepath.Join(dir, "docker.sock"), b.socket())
	if err != nil {
		return reaction{}, err
	}
	defer px.close()
	agent, err := b.start(ctx, dir, "agent", "-f", file)
	if err != nil {
		return reaction{}, err
	}
	defer agent.stop()
	ids, err := b.waitHealthy(ctx, prefix+".managed=true", 1, time.Minute)
	if err != nil {
		return reaction{}, fmt.Errorf("%w; agent: %s", err, agent.tail(5))
	}
	time.Sleep(settle)
	var t *trace
	if b.trace {
		t = &trace{}
		tctx, cancel := context.WithCancel(ctx)
		defer cancel()
		t.watchEvents(tctx, b, prefix+".managed=true")
	}
	r, err := b.killAndWatch(ctx, ids[0], func(after time.Time) (time.Time, bool) {
		for _, c := range px.callsSince(after) {
			if c.route == "POST /containers/{id}/restart" {
				return c.at, true
			}
		}
		return time.Time{}, false
	})
	if err != nil {
		return r, fmt.Errorf("%w; agent: %s", err, agent.tail(5))
	}
	if t != nil {
		time.Sleep(200 * time.Millisecond) // the last events
		t.add(r.kill, "kill -9")
		t.addCalls(px, r.kill.Add(-time.Second))
		agent.mu.Lock()
		t.addLog(agent.log)
		agent.mu.Unlock()
		t.print(b, "rollcall's reaction to a kill -9", r.kill)
	}
	return r, nil
}

func reactDocker(ctx context.Context, b *bench) (reaction, error) {
	name := b.name("dk")
	defer b.teardown(name)
	conf := b.demoConfig(b.tag("v1", false))
	conf.Labels["rollbench.trial"] = name
	id, err := b.createStart(ctx, name+"-0", &containerSpec{config: conf,
		host: &container.HostConfig{RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyUnlessStopped}}})
	if err != nil {
		return reaction{}, err
	}
	if err := b.pollHealthy(ctx, id, 50*time.Millisecond, time.Minute); err != nil {
		return reaction{}, err
	}
	time.Sleep(settle)
	return b.killAndWatch(ctx, id, nil)
}

// killAndWatch SIGKILLs id's main process from the host and times its die
// event, the restart call (found by called, when given), its next start
// event and its next healthy event.
func (b *bench) killAndWatch(ctx context.Context, id string, called func(after time.Time) (time.Time, bool)) (reaction, error) {
	r, err := b.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return reaction{}, err
	}
	if r.Container.State == nil || r.Container.State.Pid == 0 {
		return reaction{}, fmt.Errorf("container %s has no process", id[:12])
	}
	ectx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	f := client.Filters{}
	f.Add("type", "container")
	f.Add("container", id)
	ev := b.cli.Events(ectx, client.EventsListOptions{Filters: f})
	kill := time.Now()
	if err := syscall.Kill(r.Container.State.Pid, syscall.SIGKILL); err != nil {
		return reaction{}, fmt.Errorf("kill -9 %d: %w", r.Container.State.Pid, err)
	}
	var died, started, healthy time.Time
	for healthy.IsZero() {
		select {
		case m := <-ev.Messages:
			at := time.Unix(0, m.TimeNano)
			switch a := string(m.Action); {
			case a == "die" && died.IsZero():
				died = at
			case a == "start" && !died.IsZero() && started.IsZero():
				started = at
			case a == "health_status: healthy" && !started.IsZero():
				healthy = at
			}
		case err := <-ev.Err:
			return reaction{}, fmt.Errorf("events of %s: %w", id[:12], err)
		case <-ectx.Done():
			return reaction{}, fmt.Errorf("%s not healthy again 30s after the kill (died %v, started %v)", id[:12], !died.IsZero(), !started.IsZero())
		}
	}
	res := reaction{kill: kill, die: died.Sub(kill), running: started.Sub(kill), healthy: healthy.Sub(kill)}
	if called != nil {
		at, ok := called(kill)
		if !ok {
			return res, errors.New("no restart call crossed the proxy")
		}
		res.call = at.Sub(kill)
	}
	return res, nil
}

// socket is the engine's unix socket, which the proxy relays to.
func (b *bench) socket() string {
	return strings.TrimPrefix(b.cli.DaemonHost(), "unix://")
}

// proc is rollcall running in the background, its stderr kept.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	log  []string
}

// start starts rollcall with args, its journal in dir, through the proxy
// in dir when there is one.
func (b *bench) start(ctx context.Context, dir string, args ...string) (*proc, error) {
	all := []string{"--journal", filepath.Join(dir, "state", "journal.jsonl")}
	if _, err := os.Stat(filepath.Join(dir, "docker.sock")); err == nil {
		all = append(all, "--docker-host", "unix://"+filepath.Join(dir, "docker.sock"))
	}
	cmd := exec.Command(b.rollcall, append(all, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.log = append(p.log, sc.Text())
			p.mu.Unlock()
		}
		_, _ = io.Copy(io.Discard, stderr)
		_ = cmd.Wait()
		close(p.done)
	}()
	go func() {
		select {
		case <-ctx.Done():
			p.stop()
		case <-p.done:
		}
	}()
	return p, nil
}

// stop sends SIGTERM, and SIGKILL if the process still runs 15s later.
func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) tail(n int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return lastLines(strings.Join(p.log, "\n"), n)
}
