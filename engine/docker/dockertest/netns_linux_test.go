package dockertest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needRoot skips t (see Skip) where engines cannot run.
func needRoot(t *testing.T) {
	t.Helper()
	if err := platformCheck(); err != nil {
		Skip(t, err)
	}
}

// nsLink is what /proc/PID/ns/net reads for the namespace ns.
func nsLink(t *testing.T, ns *os.File) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Fstat(int(ns.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("net:[%d]", st.Ino)
}

func newTestNetns(t *testing.T) *os.File {
	t.Helper()
	ns, err := newNetns()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// An engine's process runs in the engine's namespace, never the machine's:
// there a dockerd with --bridge=none takes the main engine's docker0 away.
func TestEngineProcessesStartOnlyInTheirOwnNamespace(t *testing.T) {
	needRoot(t)
	ns := newTestNetns(t)
	host, err := machineNS()
	if err != nil {
		t.Fatal(err)
	}
	if nsLink(t, ns) == nsLink(t, host) {
		t.Fatalf("newNetns made no namespace of its own: %s", nsLink(t, ns))
	}

	var out strings.Builder
	cmd := exec.Command("readlink", "/proc/self/ns/net")
	cmd.Stdout = &out
	done, err := startIn(ns, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(out.String()), nsLink(t, ns); got != want {
		t.Errorf("the process ran in %s, want the engine's %s (the machine's is %s)", got, want, nsLink(t, host))
	}

	refused := exec.Command("true")
	if _, err := startIn(host, refused); !errors.Is(err, errMachineNS) {
		t.Errorf("startIn(the machine's namespace) = %v, want %v", err, errMachineNS)
	}
	if refused.Process != nil {
		t.Errorf("startIn(the machine's namespace) started pid %d", refused.Process.Pid)
	}
	// No goroutine is left in the engine's namespace: this one and the
	// machine agree.
	if here, err := threadNS(); err == nil {
		runtime.LockOSThread()
		if got := nsLink(t, here); got != nsLink(t, host) {
			t.Errorf("a goroutine runs in %s after startIn, not the machine's %s", got, nsLink(t, host))
		}
		runtime.UnlockOSThread()
		here.Close()
	}
}

// Dial reaches a listener inside the engine's namespace, by address or by
// "localhost"; the same address from the machine's namespace is not it.
func TestDialReachesTheEngineNamespace(t *testing.T) {
	needRoot(t)
	ns := newTestNetns(t)
	const greeting = "from inside"
	ln := listenIn(t, ns)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, greeting)
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, addr := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		c, err := dialIn(ctx, ns, "tcp", addr)
		if err != nil {
			t.Errorf("dialIn(%s): %v", addr, err)
			continue
		}
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.TrimSpace(line) != greeting {
			t.Errorf("dialIn(%s) read %q, want %q", addr, line, greeting)
		}
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, 2*time.Second); err == nil {
		c.SetReadDeadline(time.Now().Add(time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if strings.TrimSpace(line) == greeting {
			t.Error("the machine's namespace reaches the listener inside the engine's")
		}
	}
}

// listenIn listens on 127.0.0.1 inside ns, until t ends.
func listenIn(t *testing.T, ns *os.File) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := enter(ns); err != nil {
			ch <- result{err: err}
			return
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		leave()
		ch <- result{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

// The sweep takes everything a dead run's engines left: their processes
// and those processes' children, the processes in their cgroups, their
// mounts, cgroups and folders; a live run's engines stay as they are.
func TestSweepRemovesDeadRunsEngines(t *testing.T) {
	needRoot(t)
	tmp := t.TempDir()
	now := time.Now()

	gone := exec.Command("true") // a pid that no process has any more
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := marker{run: "rc00000001", host: hostID(), pid: gone.Process.Pid, start: 1, began: now}
	deadBase, deadDir := layOutEngine(t, tmp, dead, "aaaaaa")
	alive := thisRun()
	liveBase, liveDir := layOutEngine(t, tmp, alive, "bbbbbb")
	deadToken := filepath.Base(deadBase) + "-e0"
	liveToken := filepath.Base(liveBase) + "-e0"
	t.Cleanup(func() { removeCgroups(deadToken) }) // once the processes are gone: cleanups run last first
	// The dead engine's dockerd-like process, with a child of its own.
	parent := startGroup(t, exec.Command("sh", "-c", "sleep 600 & wait", filepath.Join(deadDir, "exec", "x")))
	// A container-like process, found only by its cgroup.
	inCgroup := startGroup(t, inCgroupCommand(t, deadToken))
	// A process of the live engine, with a child of its own.
	live := startGroup(t, exec.Command("sh", "-c", "sleep 600 & wait", filepath.Join(liveDir, "exec", "x")))
	// A mount under the dead engine's data root.
	mnt := filepath.Join(deadDir, "data", "shm")
	if err := os.Mkdir(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		pids, err := leftovers(deadDir, deadToken)
		if err == nil && len(pids) == 3 { // sh, its sleep, the cgroup's
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dead engine's processes: %v, %v; want 3", pids, err)
		}
	}

	if err := sweepDeadEngines(tmp, now); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*exec.Cmd{parent, inCgroup} {
		if err := c.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
			t.Errorf("%s: %v, want killed", c, err)
		}
	}
	if pids, err := leftovers(deadDir, deadToken); err != nil || len(pids) > 0 {
		t.Errorf("the dead engine's processes after the sweep: %v, %v", pids, err)
	}
	if mps, _ := mountsUnder(deadBase); len(mps) > 0 {
		t.Errorf("still mounted: %v", mps)
	}
	if dirs := cgroupDirs(deadToken); len(dirs) > 0 {
		t.Errorf("cgroups left: %v", dirs)
	}
	if _, err := os.Stat(deadBase); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v, want it removed", deadBase, err)
	}
	if _, err := os.Stat(filepath.Join(liveBase, "run")); err != nil {
		t.Errorf("the live run's engines: %v", err)
	}
	if pids, err := leftovers(liveDir, liveToken); err != nil || len(pids) != 2 {
		t.Errorf("the live run's engine's processes after the sweep: %v, %v; want its 2", pids, err)
	}
	if p, ok := readProc(live.Process.Pid); !ok || !p.live() {
		t.Error("the sweep killed a live run's engine")
	}
}

// startGroup starts c in a process group of its own, which t's cleanup
// kills, whatever the code under test did.
func startGroup(t *testing.T, c *exec.Cmd) *exec.Cmd {
	t.Helper()
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Kill(-c.Process.Pid, unix.SIGKILL)
		c.Wait()
	})
	return c
}

// layOutEngine makes the folder of one StartEngines of run m, with an
// engine e0 in it, under tmp.
func layOutEngine(t *testing.T, tmp string, m marker, hex string) (base, dir string) {
	t.Helper()
	base = filepath.Join(tmp, enginesPrefix+m.run+"-"+hex)
	dir = filepath.Join(base, "e0")
	for _, d := range []string{dir + "/data", dir + "/exec"} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "run"), []byte(strings.Join(m.labels(), ",")), 0o600); err != nil {
		t.Fatal(err)
	}
	return base, dir
}

// inCgroupCommand is a command that moves itself into a cgroup under
// token before it sleeps, as dockerd puts a container under its cgroup
// parent, in one hierarchy; it names no folder of the engine. The caller
// removes the cgroup once the process is gone.
func inCgroupCommand(t *testing.T, token string) *exec.Cmd {
	t.Helper()
	root := "/sys/fs/cgroup/pids" // cgroup v1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		root = "/sys/fs/cgroup" // v2
	}
	cg := filepath.Join(root, token, "container")
	if err := os.MkdirAll(cg, 0o755); err != nil {
		t.Skipf("no cgroup to put a process in: %v", err)
	}
	return exec.Command("sh", "-c", `echo $$ > "$0" && exec sleep 600`, filepath.Join(cg, "cgroup.procs"))
}

// A pidfile holds an engine's process only while that process lives and is
// the engine's: a dead engine's containerd is a zombie for a while, and a
// pid is used again; a dockerd that finds either waits on it for ever.
func TestLivePidOf(t *testing.T) {
	dir := t.TempDir()
	pidfile := func(pid int) string {
		p := filepath.Join(dir, fmt.Sprintf("%d.pid", pid))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("%d\n", pid)), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	engine := startGroup(t, exec.Command("sh", "-c", "sleep 600; :", filepath.Join(dir, "exec", "x")))
	other := startGroup(t, exec.Command("sleep", "600"))
	zombie := startGroup(t, exec.Command("sh", "-c", "exit 0", filepath.Join(dir, "exec", "x")))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if p, ok := readProc(zombie.Process.Pid); ok && p.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the exited child never turned zombie")
		}
	}
	garbage := filepath.Join(dir, "garbage.pid")
	os.WriteFile(garbage, []byte("not a pid"), 0o600)
	tests := []struct {
		name, path string
		want       bool
	}{
		{"the engine's live process", pidfile(engine.Process.Pid), true},
		{"another process under the pid", pidfile(other.Process.Pid), false},
		{"a zombie", pidfile(zombie.Process.Pid), false},
		{"no pidfile", filepath.Join(dir, "none.pid"), false},
		{"no pid in it", garbage, false},
	}
	for _, tt := range tests {
		if got := livePidOf(tt.path, dir); got != tt.want {
			t.Errorf("%s: livePidOf = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Mount points come back as mountinfo escapes them.
func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/tmp/a`:          "/tmp/a",
		`/tmp/a\040b`:     "/tmp/a b",
		`/tmp/t\011ab\\`:  "/tmp/t\tab\\\\",
		`/tmp/short\04`:   `/tmp/short\04`,
		`/tmp/not\999oct`: `/tmp/not\999oct`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
