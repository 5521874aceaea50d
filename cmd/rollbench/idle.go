package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// idleResult is what one rollcall process cost over a window while
// nothing changed: 3 replicas up to date and healthy, probed every interval.
type idleResult struct {
	window time.Duration
	calls  counts        // what crossed the proxy; with several hosts, all of them
	hosts  []counts      // with several hosts, each one's, in file order; nil with one
	cpu    time.Duration // utime+stime over the window
	rssKB  int
}

func (r idleResult) perMinute(n int) float64 {
	return float64(n) * float64(time.Minute) / float64(r.window)
}

func (r idleResult) execEvents() int { return r.calls.execEvents() }

func (c counts) execEvents() int {
	n := 0
	for a, k := range c.events {
		if strings.HasPrefix(a, "exec_") {
			n += k
		}
	}
	return n
}

// idle converges 3 replicas, then runs rollcall as what ("agent" or
// "console") through a counting proxy, lets it settle for warmUp, and
// measures it over window.
func idle(ctx context.Context, b *bench, what string, warmUp, window time.Duration) (idleResult, error) {
	prefix := b.name("idle")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return idleResult{}, err
	}
	defer b.teardown(prefix)
	file := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(file, []byte(rollcallFile(prefix, b.tag("v1", false), rollConfig{3, 1}, b.interval, "no")), 0o644); err != nil {
		return idleResult{}, err
	}
	journal := filepath.Join(dir, "state", "journal.jsonl")
	if _, err := b.apply(ctx, journal, file); err != nil {
		return idleResult{}, err
	}
	px, err := startProxy(filepath.Join(dir, "docker.sock"), b.socket())
	if err != nil {
		return idleResult{}, err
	}
	defer px.close()
	return b.idleRun(ctx, what, dir, file, []*proxy{px}, warmUp, window)
}

// idleRun runs rollcall as what ("agent" or "console") on file, its
// journal in dir, through dir's docker.sock when there is one (else the
// file names its hosts), lets it settle for warmUp, and measures it over
// window: the calls and events that cross each of pxs, its CPU and RSS.
func (b *bench) idleRun(ctx context.Context, what, dir, file string, pxs []*proxy, warmUp, window time.Duration) (idleResult, error) {
	journal := filepath.Join(dir, "state", "journal.jsonl")
	dockerHost := ""
	if sock := filepath.Join(dir, "docker.sock"); fileExists(sock) {
		dockerHost = " --docker-host unix://" + sock
	}
	var pid int
	var alive func() error
	switch what {
	case "agent":
		p, err := b.start(ctx, dir, "agent", "-f", file)
		if err != nil {
			return idleResult{}, err
		}
		defer p.stop()
		pid = p.cmd.Process.Pid
		alive = func() error {
			select {
			case <-p.done:
				return fmt.Errorf("agent exited: %s", p.tail(5))
			default:
				return nil
			}
		}
	case "console":
		t, err := startTmux(ctx, b.run, fmt.Sprintf("exec %s --journal %s%s -f %s", b.rollcall, journal, dockerHost, file))
		if err != nil {
			return idleResult{}, err
		}
		defer t.stop()
		pid = t.pid
		alive = func() error {
			if syscall.Kill(pid, 0) != nil {
				return fmt.Errorf("console exited: %s", t.screen())
			}
			return nil
		}
	default:
		return idleResult{}, fmt.Errorf("idle: unknown %q", what)
	}

	select {
	case <-time.After(warmUp):
	case <-ctx.Done():
		return idleResult{}, ctx.Err()
	}
	if err := alive(); err != nil {
		return idleResult{}, err
	}
	cpu0, err := cpuTime(pid)
	if err != nil {
		return idleResult{}, err
	}
	t0 := time.Now()
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return idleResult{}, ctx.Err()
	}
	cpu1, err := cpuTime(pid)
	t1 := time.Now()
	if err != nil {
		return idleResult{}, err
	}
	if err := alive(); err != nil {
		return idleResult{}, err
	}
	rss, err := rssKB(pid)
	if err != nil {
		return idleResult{}, err
	}
	r := idleResult{window: t1.Sub(t0), cpu: cpu1 - cpu0, rssKB: rss}
	if len(pxs) == 1 {
		r.calls = pxs[0].window(t0, t1)
		return r, nil
	}
	r.calls = counts{calls: map[string]int{}, events: map[string]int{}}
	for _, px := range pxs {
		c := px.window(t0, t1)
		r.hosts = append(r.hosts, c)
		r.calls.add(c)
	}
	return r, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go runs on.
const clockTick = 10 * time.Millisecond

// cpuTime is the user plus system time pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:]) // from field 3 (state) on
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// rssKB is pid's resident set size.
func rssKB(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// tmuxSession is a detached tmux server of its own, running one command
// in a 120×40 terminal.
type tmuxSession struct {
	socket string
	pid    int
}

func startTmux(ctx context.Context, name, command string) (*tmuxSession, error) {
	t := &tmuxSession{socket: name}
	if _, err := tmux(ctx, t.socket, "new-session", "-d", "-x", "120", "-y", "40", command); err != nil {
		return nil, err
	}
	out, err := tmux(ctx, t.socket, "list-panes", "-F", "#{pane_pid}")
	if err != nil {
		t.stop()
		return nil, err
	}
	if t.pid, err = strconv.Atoi(strings.TrimSpace(out)); err != nil {
		t.stop()
		return nil, fmt.Errorf("tmux pane pid %q: %w", out, err)
	}
	return t, nil
}

func (t *tmuxSession) screen() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := tmux(ctx, t.socket, "capture-pane", "-p")
	if err != nil {
		return err.Error()
	}
	return lastLines(out, 8)
}

// stop ends the tmux server, which hangs up on the console, and waits up
// to 15s for the console to go.
func (t *tmuxSession) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = tmux(ctx, t.socket, "kill-server")
	for i := 0; i < 150 && t.pid > 0 && syscall.Kill(t.pid, 0) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	if t.pid > 0 && syscall.Kill(t.pid, 0) == nil {
		_ = syscall.Kill(t.pid, syscall.SIGKILL)
	}
}

func tmux(ctx context.Context, socket string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "tmux", append([]string{"-L", socket}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("tmux %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
