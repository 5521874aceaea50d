package dockertest

// This file holds several real engines on one machine, for the tests of
// several hosts (DESIGN §11): StartEngines starts dockerd processes of a
// test's own, each a host of its own to rollcall, which the test can stop,
// kill mid-roll and start again.
//
// Each engine runs in a network namespace of its own, made by this process.
// That is a safety rule, not a convenience: in the machine's namespace a
// dockerd with --bridge=none deletes the main engine's docker0, and every
// container of the main engine then fails to start. The harness refuses to
// start an engine in the machine's namespace (see enter).
//
// Each engine has its own folder (socket, data and exec roots, pidfile,
// log) and a config file of its own, which keeps the machine's
// /etc/docker/daemon.json out (its keys clash with the flags) and names the
// engine's own key file: an engine takes its `docker info` ID from its key,
// so without one of its own every engine would have the main engine's ID
// and be one host to rollcall. The config also gives the engine a
// containerd namespace and a cgroup parent of its own (its token), by which
// the cleanup finds what it left.
//
// An engine has no images and nothing can be pulled: Load copies one from
// the main engine. Its containers are reached only from inside its
// namespace, which has nothing but its own loopback and bridges: Get and
// Dial open their sockets there. It runs with --bridge=none, so it has no
// default bridge network: a container on it needs a network the test
// creates (`docker network create`), unless the engines have DefaultBridge,
// a docker0 of their own inside their namespace.
//
// A test process that dies leaves its engines' containers behind (dockerd
// gets SIGKILL with it); the first StartEngines of a later run sweeps the
// engines of dead runs, by their run marker.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/moby"
)

// Dockerd is one engine of StartEngines. Its fields do not change; the
// engine goes away (Stop, Kill) and comes back (Start) under them.
type Dockerd struct {
	Name   string // e0, e1, …: its place in StartEngines
	Dir    string // its folder: socket, roots, config, key and log
	Socket string // its API socket, reachable from the machine's namespace
	Host   string // unix://Socket, for DOCKER_HOST, docker -H and moby.New
	ID     string // its `docker info` ID, from its own key: the same after a restart

	token  string   // its containerd namespace and cgroup parent
	bridge bool     // it has a default bridge (DefaultBridge)
	env    []string // dockerd's environment beyond this process's
	netns  *os.File // its network namespace, held open from StartEngines to the cleanup
	api    *http.Client

	mu  sync.Mutex
	run *dockerdRun // nil while the engine is not running
}

// dockerdRun is one run of an engine's dockerd.
type dockerdRun struct {
	proc *os.Process
	done <-chan error
}

const (
	// enginesPrefix starts the name of the folder of one StartEngines.
	enginesPrefix = "rollcall-engines-"
	// engineStartTimeout bounds an engine's start: a fraction of a second
	// on an idle machine, seconds on a loaded one.
	engineStartTimeout = time.Minute
	// engineStopGrace is how long Stop waits for dockerd to stop its
	// containers and end before it kills it.
	engineStopGrace = 30 * time.Second
	// engineShutdownTimeout is the grace dockerd gives each container at
	// its stop (the config's shutdown-timeout).
	engineShutdownTimeout = 10
	// getTimeout bounds one Get.
	getTimeout = 10 * time.Second
	// apiTimeout bounds one of the harness's short reads of an engine's
	// API (a ping, its info).
	apiTimeout = 5 * time.Second
	// maxSocket is the longest path a unix socket can have.
	maxSocket = 107
)

var sweepEnginesOnce sync.Once

// EngineOption changes how StartEngines sets its engines up.
type EngineOption func(*Dockerd)

// DefaultBridge gives each engine the default bridge network a host has
// (its docker0, inside the engine's namespace), so that a container with
// no network of its own is on it and its published ports answer, as on
// the main engine. Without it an engine runs with --bridge=none, and such
// a container has no network at all: it runs, its ports publish nothing.
func DefaultBridge() EngineOption { return func(e *Dockerd) { e.bridge = true } }

// StartEngines starts n engines of t's own (see Dockerd), each in its own
// network namespace, waits until each answers, checks that their IDs are
// distinct, and not the main engine's, and in t's cleanup stops them and
// removes everything they left: processes, mounts, cgroups and folders.
// It skips t (see Skip) when this machine cannot run them: not Linux, not
// root, no dockerd or docker command.
func StartEngines(t testing.TB, n int, opts ...EngineOption) []*Dockerd {
	t.Helper()
	if err := enginesCheck(); err != nil {
		Skip(t, fmt.Errorf("no engines of a test's own: %w", err))
	}
	if n < 1 {
		t.Fatalf("StartEngines(%d): want at least one", n)
	}
	began := time.Now()
	engines, stop, err := startEngines(context.Background(), n, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, e := range engines {
				t.Logf("engine %s's log, its last lines:\n%s", e.Name, e.logTail(20))
			}
		}
		if err := stop(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	t.Logf("%d engine(s) up in %s", n, time.Since(began).Round(time.Millisecond))
	return engines
}

// StartEnginesFor is StartEngines for a program that is not a test (the
// bench): the same engines, set up and checked the same way. stop stops
// them and removes everything they left, as StartEngines's cleanup does;
// the caller must call it, once, also on a signal (a dead process's
// engines wait for the next run's sweep). It fails, with nothing left
// running, when the machine cannot run engines (see StartEngines), when
// an engine does not start, or when ctx ends first.
func StartEnginesFor(ctx context.Context, n int, opts ...EngineOption) (engines []*Dockerd, stop func() error, err error) {
	if err := enginesCheck(); err != nil {
		return nil, nil, fmt.Errorf("no engines of their own here: %w", err)
	}
	if n < 1 {
		return nil, nil, fmt.Errorf("StartEnginesFor(%d): want at least one", n)
	}
	return startEngines(ctx, n, opts)
}

// startEngines lays out, starts and checks n engines. On an error it has
// removed whatever it started; otherwise stop removes it all: every
// engine's cleanup, last one first, then the folder of them all, which
// stays, with its run marker, for the next run's sweep while an engine's
// cleanup fails.
func startEngines(ctx context.Context, n int, opts []EngineOption) ([]*Dockerd, func() error, error) {
	sweepEnginesOnce.Do(func() {
		if err := sweepDeadEngines(os.TempDir(), time.Now()); err != nil {
			fmt.Fprintln(os.Stderr, "dockertest: sweep of dead runs' engines:", err)
		}
	})
	base := filepath.Join(os.TempDir(), enginesPrefix+Run+"-"+randomHex(3))
	if err := os.Mkdir(base, 0o700); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(filepath.Join(base, "run"), []byte(strings.Join(thisRun().labels(), ",")), 0o600); err != nil {
		os.RemoveAll(base)
		return nil, nil, err
	}
	var engines []*Dockerd // laid out so far
	stop := func() error {
		var errs []error
		for i := len(engines) - 1; i >= 0; i-- {
			if err := engines[i].cleanup(); err != nil {
				errs = append(errs, fmt.Errorf("engine %s: %w", engines[i].Name, err))
			}
		}
		if len(errs) > 0 {
			return fmt.Errorf("%w; %s kept, with its run marker, for the next run's sweep", errors.Join(errs...), base)
		}
		return os.RemoveAll(base)
	}
	fail := func(err error) ([]*Dockerd, func() error, error) {
		if serr := stop(); serr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", serr))
		}
		return nil, nil, err
	}
	for i := range n {
		e, err := newDockerd(base, fmt.Sprintf("e%d", i))
		if err != nil {
			return fail(err)
		}
		for _, opt := range opts {
			opt(e)
		}
		engines = append(engines, e)
	}
	for _, e := range engines { // all at once: each waits on its own
		if err := e.launch(); err != nil {
			return fail(err)
		}
	}
	for _, e := range engines {
		if err := e.ready(ctx); err != nil {
			return fail(err)
		}
	}
	if err := distinctIDs(engines, mainEngineID()); err != nil {
		return fail(err)
	}
	return engines, stop, nil
}

// enginesCheck says why this machine cannot run engines of a test's own.
func enginesCheck() error {
	if err := platformCheck(); err != nil {
		return err
	}
	for _, cmd := range []string{"dockerd", "docker"} {
		if _, err := exec.LookPath(cmd); err != nil {
			return err
		}
	}
	return nil
}

// mainEngineID is the ID of the engine the environment names, or "" when
// none answers.
func mainEngineID() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := CLI(ctx, "info", "--format", "{{.ID}}")
	if err != nil {
		return ""
	}
	return id
}

// distinctIDs checks that every engine has an ID, its own, and not the main
// engine's (main, "" when unknown): two engines of one ID are one host to
// rollcall, and a test of several hosts would test one.
func distinctIDs(engines []*Dockerd, main string) error {
	seen := map[string]string{}
	if main != "" {
		seen[main] = "the main engine"
	}
	for _, e := range engines {
		if e.ID == "" {
			return fmt.Errorf("engine %s has no ID", e.Name)
		}
		if other, ok := seen[e.ID]; ok {
			return fmt.Errorf("engine %s has the ID of %s (%s): its key file is not its own", e.Name, other, e.ID)
		}
		seen[e.ID] = "engine " + e.Name
	}
	return nil
}

// newDockerd lays out the engine called name under base and makes its
// network namespace; it starts nothing.
func newDockerd(base, name string) (*Dockerd, error) {
	dir := filepath.Join(base, name)
	e := &Dockerd{
		Name:   name,
		Dir:    dir,
		Socket: filepath.Join(dir, "docker.sock"),
		token:  filepath.Base(base) + "-" + name,
	}
	e.Host = "unix://" + e.Socket
	if len(e.Socket) > maxSocket {
		return nil, fmt.Errorf("engine %s: socket path %s is longer than %d: set TMPDIR to a shorter folder", name, e.Socket, maxSocket)
	}
	for _, d := range []string{dir, e.dataRoot(), e.execRoot()} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, fmt.Errorf("engine %s: %w", name, err)
		}
	}
	cfg, err := json.MarshalIndent(map[string]any{
		"deprecated-key-path":          filepath.Join(dir, "key.json"),
		"containerd-namespace":         e.token,
		"containerd-plugins-namespace": e.token + "-plugins",
		"cgroup-parent":                "/" + e.token,
		"shutdown-timeout":             engineShutdownTimeout,
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(e.configFile(), cfg, 0o600); err != nil {
		return nil, fmt.Errorf("engine %s: %w", name, err)
	}
	if e.netns, err = newNetns(); err != nil {
		return nil, fmt.Errorf("engine %s: %w", name, err)
	}
	e.api = &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", e.Socket)
			},
			DisableKeepAlives: true,
		},
	}
	return e, nil
}

func (e *Dockerd) dataRoot() string   { return filepath.Join(e.Dir, "data") }
func (e *Dockerd) execRoot() string   { return filepath.Join(e.Dir, "exec") }
func (e *Dockerd) configFile() string { return filepath.Join(e.Dir, "daemon.json") }
func (e *Dockerd) logFile() string    { return filepath.Join(e.Dir, "dockerd.log") }
func (e *Dockerd) pidFile() string    { return filepath.Join(e.Dir, "dockerd.pid") }

// args is dockerd's command line.
func (e *Dockerd) args() []string {
	args := []string{
		"--host", e.Host,
		"--data-root", e.dataRoot(),
		"--exec-root", e.execRoot(),
		"--pidfile", e.pidFile(),
		"--config-file", e.configFile(),
		"--iptables=false",
		"--storage-driver=vfs",
	}
	if !e.bridge {
		args = append(args, "--bridge=none")
	}
	return args
}

// launch starts dockerd in the engine's namespace, its output appended to
// its log, and returns at once.
func (e *Dockerd) launch() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run != nil {
		return fmt.Errorf("start engine %s: it runs already", e.Name)
	}
	log, err := os.OpenFile(e.logFile(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("start engine %s: %w", e.Name, err)
	}
	defer log.Close() // dockerd has its own copy
	for _, pidfile := range []string{e.pidFile(), filepath.Join(e.execRoot(), "containerd", "containerd.pid")} {
		if !livePidOf(pidfile, e.Dir) {
			os.Remove(pidfile)
		}
	}
	cmd := exec.Command("dockerd", e.args()...)
	cmd.Stdout, cmd.Stderr = log, log
	if len(e.env) > 0 {
		cmd.Env = append(os.Environ(), e.env...)
	}
	done, err := startIn(e.netns, cmd)
	if err != nil {
		return fmt.Errorf("start engine %s: %w", e.Name, err)
	}
	e.run = &dockerdRun{proc: cmd.Process, done: done}
	return nil
}

// ready waits until the engine answers, then reads its ID; a restarted
// engine must have the ID it had.
func (e *Dockerd) ready(ctx context.Context) error {
	e.mu.Lock()
	run := e.run
	e.mu.Unlock()
	if run == nil {
		return fmt.Errorf("engine %s: not started", e.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, engineStartTimeout)
	defer cancel()
	for {
		err := e.Ping(ctx)
		if err == nil {
			break
		}
		select {
		case exit := <-run.done:
			e.mu.Lock()
			e.run = nil
			e.mu.Unlock()
			return fmt.Errorf("engine %s: dockerd ended at its start (%v); its log:\n%s", e.Name, exit, e.logTail(20))
		case <-ctx.Done():
			return fmt.Errorf("engine %s: no answer (%w, %s at most): %v; its log:\n%s", e.Name, ctx.Err(), engineStartTimeout, err, e.logTail(20))
		case <-time.After(50 * time.Millisecond):
		}
	}
	var info struct{ ID string }
	if err := e.apiGet(ctx, "/info", &info); err != nil {
		return fmt.Errorf("engine %s: %w", e.Name, err)
	}
	if e.ID != "" && info.ID != e.ID {
		return fmt.Errorf("engine %s came back as %s, not %s", e.Name, info.ID, e.ID)
	}
	e.ID = info.ID
	return nil
}

// Ping returns nil when the engine answers on its socket.
func (e *Dockerd) Ping(ctx context.Context) error {
	return e.apiGet(ctx, "/_ping", nil)
}

// apiGet asks the engine's API for path, within apiTimeout, and decodes
// the JSON answer into out (when not nil).
func (e *Dockerd) apiGet(ctx context.Context, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	return e.apiCall(ctx, http.MethodGet, path, nil, out)
}

// apiCall sends method path to the engine's API, with in as its JSON
// body (when not nil), bounded by ctx alone, and decodes a JSON answer
// into out (when not nil). Any status but 2xx is an error that holds the
// engine's message.
func (e *Dockerd) apiCall(ctx context.Context, method, path string, in, out any) error {
	var reqBody io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		reqBody = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://engine"+path, reqBody)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.api.Do(req)
	if err != nil {
		return fmt.Errorf("engine %s %s %s: %w", e.Name, method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("engine %s %s %s: %w", e.Name, method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("engine %s %s %s: %s: %s", e.Name, method, path, resp.Status, bytes.TrimSpace(body))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("engine %s %s %s: %w", e.Name, method, path, err)
	}
	return nil
}

// Start starts the engine again after a Stop or a Kill, on its data root:
// with its ID, images, networks and containers. A container that a Kill
// left running is stopped at the start, as a dockerd without live restore
// does, and started again only if its restart policy says so. Start waits
// until the engine answers.
func (e *Dockerd) Start(t testing.TB) {
	t.Helper()
	if err := e.launch(); err != nil {
		t.Fatal(err)
	}
	if err := e.ready(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Stop stops the engine as its service manager would (SIGTERM: it stops
// its containers, then ends) and waits until it has ended.
func (e *Dockerd) Stop(t testing.TB) {
	t.Helper()
	if err := e.stop(); err != nil {
		t.Fatal(err)
	}
}

// Kill kills the engine's dockerd with SIGKILL, the way an engine goes
// away mid-roll: its socket stops answering at once, and so do its
// published ports (their proxies end with it), and its containerd ends.
// Its containers run on, reachable on their own addresses inside its
// namespace, as on a host whose dockerd crashed. Start brings the engine
// back; the cleanup takes whatever is left.
func (e *Dockerd) Kill(t testing.TB) {
	t.Helper()
	if err := e.kill(); err != nil {
		t.Fatal(err)
	}
}

func (e *Dockerd) stop() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run == nil {
		return fmt.Errorf("stop engine %s: it does not run", e.Name)
	}
	run := e.run
	e.run = nil
	if err := run.proc.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop engine %s: %w", e.Name, err)
	}
	select {
	case <-run.done:
		return nil
	case <-time.After(engineStopGrace):
		run.proc.Kill()
		<-run.done
		return fmt.Errorf("stop engine %s: still running %s after SIGTERM, killed", e.Name, engineStopGrace)
	}
}

func (e *Dockerd) kill() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.run == nil {
		return fmt.Errorf("kill engine %s: it does not run", e.Name)
	}
	run := e.run
	e.run = nil
	if err := run.proc.Kill(); err != nil {
		return fmt.Errorf("kill engine %s: %w", e.Name, err)
	}
	<-run.done // SIGKILL cannot be caught: it ends
	return nil
}

// killIfRunning kills the engine's dockerd (see Kill) if it runs.
func (e *Dockerd) killIfRunning() error {
	e.mu.Lock()
	running := e.run != nil
	e.mu.Unlock()
	if !running {
		return nil
	}
	return e.kill()
}

// cleanup stops the engine if it runs, then removes all it left: its
// processes (a killed engine's containers run on), its mounts, its cgroups
// and its folder.
func (e *Dockerd) cleanup() error {
	var errs []error
	e.mu.Lock()
	running := e.run != nil
	e.mu.Unlock()
	if running {
		if err := e.stop(); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, removeEngine(e.Dir, e.token))
	e.netns.Close()
	return errors.Join(errs...)
}

// removeEngine removes what the engine of dir and token left: its
// processes, then its mounts and cgroups, then its folder, which stays
// while anything else does: the next run's sweep finds the engine by it.
func removeEngine(dir, token string) error {
	if err := reap(dir, token); err != nil {
		return err
	}
	if err := errors.Join(unmountUnder(dir), removeCgroups(token)); err != nil {
		return err
	}
	return os.RemoveAll(dir)
}

// sweepDeadEngines removes the engines of every dead run (see
// marker.dead) whose folder is under tmp, and then the folder, which
// stays while any of that fails (the next run tries again).
func sweepDeadEngines(tmp string, now time.Time) error {
	bases, err := filepath.Glob(filepath.Join(tmp, enginesPrefix+"rc*"))
	if err != nil {
		return err
	}
	here := hostID()
	var errs []error
	for _, base := range bases {
		b, err := os.ReadFile(filepath.Join(base, "run"))
		if err != nil {
			continue // being laid out, or not one of ours
		}
		m, err := parseMarker(string(b))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", base, err))
			continue
		}
		if !m.dead(here, procStart, now) {
			continue
		}
		engines, _ := filepath.Glob(filepath.Join(base, "e*"))
		var failed []error
		for _, dir := range engines {
			if err := removeEngine(dir, filepath.Base(base)+"-"+filepath.Base(dir)); err != nil {
				failed = append(failed, err)
			}
		}
		if len(failed) == 0 {
			failed = append(failed, os.RemoveAll(base))
		}
		errs = append(errs, failed...)
	}
	return errors.Join(errs...)
}

// logTail is the last n lines of the engine's log.
func (e *Dockerd) logTail(n int) string {
	b, err := os.ReadFile(e.logFile())
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Load copies image from the main engine (see Engine) to this one, as
// `docker save IMAGE | docker -H HOST load` does, and checks that it has
// the same ID here.
func (e *Dockerd) Load(t testing.TB, image string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := e.load(ctx, image); err != nil {
		t.Fatal(err)
	}
}

// LoadImage is Load for a program that is not a test (see
// StartEnginesFor).
func (e *Dockerd) LoadImage(ctx context.Context, image string) error { return e.load(ctx, image) }

func (e *Dockerd) load(ctx context.Context, image string) error {
	return loadInto(ctx, []*Dockerd{e}, image)
}

// loadInto copies image from the main engine to every one of engines, at
// once, from one `docker save` of it, and checks that it has the same ID
// on each.
func loadInto(ctx context.Context, engines []*Dockerd, image string) error {
	want, err := CLI(ctx, "image", "inspect", "--format", "{{.Id}}", image)
	if err != nil {
		return fmt.Errorf("load %s: %w", image, err)
	}
	f, err := os.CreateTemp("", "rollcall-image-*.tar")
	if err != nil {
		return fmt.Errorf("load %s: %w", image, err)
	}
	tar := f.Name()
	f.Close()
	defer os.Remove(tar)
	if _, err := CLI(ctx, "save", "--output", tar, image); err != nil {
		return fmt.Errorf("load %s: %w", image, err)
	}
	errs := make([]error, len(engines))
	var wg sync.WaitGroup
	for i, e := range engines {
		wg.Go(func() {
			if _, err := e.CLI(ctx, "load", "--quiet", "--input", tar); err != nil {
				errs[i] = fmt.Errorf("load %s into engine %s: %w", image, e.Name, err)
				return
			}
			got, err := e.CLI(ctx, "image", "inspect", "--format", "{{.Id}}", image)
			if err != nil {
				errs[i] = fmt.Errorf("load %s into engine %s: %w", image, e.Name, err)
			} else if got != want {
				errs[i] = fmt.Errorf("load %s into engine %s: it is %s there, %s on the main engine", image, e.Name, got, want)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CLI runs the docker command line against this engine (see CLI).
func (e *Dockerd) CLI(ctx context.Context, args ...string) (string, error) {
	return CLI(ctx, append([]string{"--host", e.Host}, args...)...)
}

// Client returns rollcall's adapter to this engine, closed in t's cleanup.
// It is the engine's as long as it runs; across a Kill and a Start it
// reconnects by itself (a unix socket per call).
func (e *Dockerd) Client(t testing.TB) *moby.Moby {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := moby.New(ctx, e.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// Dial opens a connection from inside the engine's network namespace, to
// a container's published port on its 127.0.0.1 or to a container's own
// address: the machine's namespace reaches neither. It has the shape of
// http.Transport's DialContext, for a test's own clients and proxies.
func (e *Dockerd) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return dialIn(ctx, e.netns, network, addr)
}

// Forward makes a server of this process on loopback answer at the same
// address inside the engine's network namespace: it listens on addr
// ("127.0.0.1:port", the engine's own loopback there, where 127.0.0.0/8 is
// an insecure registry by default) and forwards each connection to addr in
// this process's namespace, until stop, which closes the listener (the
// connections in flight end by themselves). accepted, when not nil, is
// called as each connection is accepted: when the engine first asked.
func (e *Dockerd) Forward(addr string, accepted func()) (stop func(), err error) {
	l, err := listenInNS(e.netns, "tcp", addr)
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			if accepted != nil {
				accepted()
			}
			go func() {
				defer in.Close()
				out, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer out.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(out, in); done <- struct{}{} }()
				go func() { _, _ = io.Copy(in, out); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return func() { l.Close() }, nil
}

// Get sends a GET to url from inside the engine's network namespace (see
// Dial), on a connection of its own, and returns the status and the body.
func (e *Dockerd) Get(url string) (status int, body string, err error) {
	return getVia(e.Dial, url)
}

// getVia sends a GET to url on a connection of its own that dial opens,
// within getTimeout, and returns the status and the body.
func getVia(dial func(ctx context.Context, network, addr string) (net.Conn, error), url string) (status int, body string, err error) {
	c := &http.Client{
		Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true},
		Timeout:   getTimeout,
	}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}
