package dockertest

// This file holds what an engine of StartEngines needs of Linux: a network
// namespace of its own, made and entered from this process (no unshare or
// nsenter binary), its processes started inside it, sockets opened inside
// it, and what a dead engine leaves behind (processes, mounts, cgroups)
// found and removed.
//
// A namespace is entered by one OS thread: the goroutine that enters one
// locks itself to its thread and leaves it either back in this process's
// namespace or never unlocked, so that the runtime ends the thread with the
// goroutine and no other goroutine ever runs in the engine's namespace.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// hostNS is this process's network namespace, the machine's, opened at
// package init, before any goroutine here has entered another one. It is
// not /proc/self/ns/net read later: that is the main thread's, and a
// goroutine that locks its thread may be on the main one.
var hostNS, hostNSErr = threadNS()

// machineNS returns the machine's network namespace.
func machineNS() (*os.File, error) { return hostNS, hostNSErr }

// sameNS reports whether the namespace files a and b are one namespace.
func sameNS(a, b *os.File) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Fstat(int(a.Fd()), &sa); err != nil {
		return false, err
	}
	if err := unix.Fstat(int(b.Fd()), &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino, nil
}

// threadNS opens the calling thread's network namespace.
func threadNS() (*os.File, error) { return os.Open("/proc/thread-self/ns/net") }

// newNetns makes a network namespace with its loopback up and returns it
// open; it lives while the file is open or a process runs in it.
func newNetns() (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread() // unchanged
			ch <- result{err: fmt.Errorf("new network namespace: %w", err)}
			return
		}
		defer leave()
		f, err := threadNS()
		if err == nil {
			err = loopbackUp()
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			ch <- result{err: fmt.Errorf("new network namespace: %w", err)}
			return
		}
		ch <- result{f: f}
	}()
	r := <-ch
	return r.f, r.err
}

// loopbackUp sets lo up in the calling thread's network namespace (a new
// one has it down, and a port published on 127.0.0.1 needs it).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("lo up: %w", err)
	}
	return nil
}

// errMachineNS refuses to run anything of an engine in the machine's
// network namespace: a dockerd there with --bridge=none deletes the main
// engine's docker0, and every container of the main engine then fails to
// start.
var errMachineNS = errors.New("refused: that is the machine's network namespace, where a second dockerd breaks the main engine's bridge")

// enter moves the calling thread, locked to its goroutine, into ns, and
// checks that it is there and that ns is not the machine's.
func enter(ns *os.File) error {
	host, err := machineNS()
	if err != nil {
		return err
	}
	if same, err := sameNS(ns, host); err != nil || same {
		return errors.Join(errMachineNS, err)
	}
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	here, err := threadNS()
	if err != nil {
		return err
	}
	defer here.Close()
	if same, err := sameNS(here, ns); err != nil || !same {
		return errors.Join(errors.New("the thread is not in the engine's network namespace"), err)
	}
	return nil
}

// leave moves the calling thread back to the machine's namespace and
// unlocks it; a thread that cannot go back stays locked, and so ends with
// its goroutine.
func leave() {
	host, err := machineNS()
	if err == nil && unix.Setns(int(host.Fd()), unix.CLONE_NEWNET) == nil {
		runtime.UnlockOSThread()
	}
}

// startIn starts cmd inside ns and returns at once; exited gets cmd's end.
// The process gets SIGKILL when the thread that started it ends (so when
// this process dies: the thread lives until the process ends), and a
// process group of its own, so that a ^C to the test reaches only the
// test, whose cleanup then stops the engine.
func startIn(ns *os.File, cmd *exec.Cmd) (exited <-chan error, err error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
	started := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is the process's parent, then ends in ns
		if err := enter(ns); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		done <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	return done, nil
}

// dialIn opens a connection from inside ns. The socket is made on a thread
// in ns and keeps to ns for its life, whichever thread uses it after. A
// host name is resolved first, from here (the hosts file): an address
// with several families would be dialled by goroutines of the dialer's own,
// on threads outside ns.
func dialIn(ctx context.Context, ns *os.File, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if net.ParseIP(host) == nil {
		ips, err := net.DefaultResolver.LookupIP(ctx, "ip", host)
		if err != nil {
			return nil, err
		}
		slices.SortStableFunc(ips, func(a, b net.IP) int { // IPv4 first, as "localhost" means 127.0.0.1 to a container's published port
			return boolInt(a.To4() == nil) - boolInt(b.To4() == nil)
		})
		addr = net.JoinHostPort(ips[0].String(), port)
	}
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := enter(ns); err != nil {
			ch <- result{err: err}
			return // locked: the thread ends, wherever it is
		}
		d := net.Dialer{FallbackDelay: -1} // one address, dialled on this goroutine
		c, err := d.DialContext(ctx, network, addr)
		leave()
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// proc is one process as /proc shows it.
type proc struct {
	pid, ppid int
	state     byte // R, S, D, Z (a zombie: dead, not yet reaped), …
	args      []string
}

// live reports whether p runs: a zombie is dead, even to kill(pid, 0).
func (p proc) live() bool { return p.state != 'Z' && p.state != 'X' }

// readProc reads the process pid from /proc; false when it is gone.
func readProc(pid int) (proc, bool) {
	dir := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return proc{}, false
	}
	i := strings.LastIndexByte(string(stat), ')') // the command, in parentheses, may hold anything
	if i < 0 {
		return proc{}, false
	}
	f := strings.Fields(string(stat[i+1:])) // state, ppid, …
	if len(f) < 2 || len(f[0]) != 1 {
		return proc{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	cmdline, _ := os.ReadFile(dir + "/cmdline")
	return proc{pid: pid, ppid: ppid, state: f[0][0], args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}, true
}

// of reports whether p belongs to the engine of dir or token: an argument
// under dir (its dockerd, containerd and containerd's shims) or equal to
// token (its containerd namespace, on a shim of a system containerd).
func (p proc) of(dir, token string) bool {
	for _, a := range p.args {
		if strings.Contains(a, dir+"/") || (token != "" && a == token) {
			return true
		}
	}
	return false
}

// livePidOf reports whether the pid in the pidfile at path is a live
// process of the engine of dir. A dead engine's pidfile (its containerd
// dies with it, a zombie until the machine's init reaps it) makes the next
// dockerd wait on that pid for ever: it counts a zombie as alive.
func livePidOf(path, dir string) bool {
	b, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return false
	}
	p, ok := readProc(pid)
	return ok && p.live() && p.of(dir, "")
}

// procs lists the processes of this pid namespace.
func procs() ([]proc, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []proc
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readProc(pid); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// leftovers are the pids of what an engine of dir and token left running:
// a process of it (see proc.of), a process in one of its cgroups (its
// containers), and every descendant of those; zombies are dead already.
func leftovers(dir, token string) ([]int, error) {
	ps, err := procs()
	if err != nil {
		return nil, err
	}
	picked := map[int]bool{}
	for _, p := range ps {
		if p.of(dir, token) {
			picked[p.pid] = true
		}
	}
	for _, pid := range cgroupProcs(token) {
		if _, listed := picked[pid]; !listed {
			if p, ok := readProc(pid); ok { // started after the list
				ps = append(ps, p)
			}
		}
		picked[pid] = true
	}
	for grew := true; grew; { // descendants, through any depth
		grew = false
		for _, p := range ps {
			if picked[p.ppid] && !picked[p.pid] {
				picked[p.pid], grew = true, true
			}
		}
	}
	var pids []int
	for _, p := range ps {
		if picked[p.pid] && p.live() && p.pid != os.Getpid() && !slices.Contains(pids, p.pid) {
			pids = append(pids, p.pid)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// reap kills what an engine of dir and token left running (see
// leftovers), until nothing is left or a deadline passes.
func reap(dir, token string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		pids, err := leftovers(dir, token)
		if err != nil {
			return err
		}
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of %s still run after SIGKILL: %v", dir, pids)
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cgroupDirs are the folders of the cgroup parent named token, in every
// hierarchy (cgroup v1's, one per controller, or v2's one).
func cgroupDirs(token string) []string {
	var dirs []string
	for _, pattern := range []string{"/sys/fs/cgroup/" + token, "/sys/fs/cgroup/*/" + token} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	return dirs
}

// cgroupProcs are the processes in the cgroups under token.
func cgroupProcs(token string) []int {
	var pids []int
	for _, root := range cgroupDirs(token) {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || d.Name() != "cgroup.procs" {
				return nil
			}
			b, _ := os.ReadFile(path)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
			return nil
		})
	}
	return pids
}

// removeCgroups removes the cgroups under token, deepest first. Their
// processes must be gone.
func removeCgroups(token string) error {
	var errs []error
	for _, root := range cgroupDirs(token) {
		var dirs []string
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for _, d := range slices.Backward(dirs) {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d, err))
			}
		}
	}
	return errors.Join(errs...)
}

// mountsUnder are the mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		mp := unescapeMount(f[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out, nil
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or under dir (a mount stacked on
// another takes a second round).
func unmountUnder(dir string) error {
	for range 5 {
		mps, err := mountsUnder(dir)
		if err != nil || len(mps) == 0 {
			return err
		}
		for _, mp := range mps {
			unix.Unmount(mp, unix.MNT_DETACH)
		}
	}
	mps, err := mountsUnder(dir)
	if err == nil && len(mps) > 0 {
		err = fmt.Errorf("still mounted: %v", mps)
	}
	return err
}

// platformCheck says why engines cannot run here, or nil.
func platformCheck() error {
	if os.Geteuid() != 0 {
		return errors.New("several engines need root (a network namespace, dockerd)")
	}
	return nil
}

// listenInNS opens a listener inside ns (see dialIn): its connections come
// from inside ns, and its Accept runs on any thread.
func listenInNS(ns *os.File, network, addr string) (net.Listener, error) {
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		if err := enter(ns); err != nil {
			ch <- result{err: err}
			return // locked: the thread ends, wherever it is
		}
		l, err := net.Listen(network, addr)
		leave()
		ch <- result{l, err}
	}()
	r := <-ch
	return r.l, r.err
}
