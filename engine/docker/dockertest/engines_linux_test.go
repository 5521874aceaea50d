package dockertest

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Engines of a test's own are hosts of their own: each has its own ID (not
// the main engine's), its own images and containers, reached from inside
// its network namespace; one killed stops answering while the other goes
// on, and comes back with its ID and its data. The main engine's bridge
// and containers are untouched by it all.
func TestEnginesOfTheirOwn(t *testing.T) {
	m := Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	mainInfo, err := m.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var engines []*Dockerd
	t.Run("hosts", func(t *testing.T) {
		engines = StartEngines(t, 2)
		hosts(ctx, t, mainInfo.ID, engines)
	})
	if engines == nil {
		return // skipped, or failed at the start
	}

	// Their cleanup took everything: a's dockerd was killed last, with its
	// container running.
	for _, e := range engines {
		leftNothing(t, e)
	}

	// The main engine still has its bridge, and a container on it starts.
	tag, _ := DemoappImage(t, "v1")
	mainBridgeWorks(ctx, t, tag)
}

// leftNothing checks that engine e, removed, left no process, mount,
// cgroup or folder (its own, and that of its StartEngines).
func leftNothing(t *testing.T, e *Dockerd) {
	t.Helper()
	if pids, err := leftovers(e.Dir, e.token); err != nil || len(pids) > 0 {
		t.Errorf("engine %s left processes %v (%v)", e.Name, pids, err)
	}
	if mps, err := mountsUnder(e.Dir); err != nil || len(mps) > 0 {
		t.Errorf("engine %s left mounts %v (%v)", e.Name, mps, err)
	}
	if dirs := cgroupDirs(e.token); len(dirs) > 0 {
		t.Errorf("engine %s left cgroups %v", e.Name, dirs)
	}
	if _, err := os.Stat(filepath.Dir(e.Dir)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("engine %s left its folder: %v", e.Name, err)
	}
}

// hosts checks what TestEnginesOfTheirOwn says of engines.
func hosts(ctx context.Context, t *testing.T, mainID string, engines []*Dockerd) {
	a, b := engines[0], engines[1]

	// Each ID as rollcall's adapter reads it: the engine's own.
	ids := map[string]string{mainID: "the main engine"}
	for _, e := range engines {
		info, err := e.Client(t).Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.ID != e.ID {
			t.Errorf("engine %s: the adapter reads ID %s, StartEngines %s", e.Name, info.ID, e.ID)
		}
		if other, ok := ids[info.ID]; ok {
			t.Errorf("engine %s has the ID of %s: %s", e.Name, other, info.ID)
		}
		ids[info.ID] = e.Name
	}

	// A container of a loaded image on a, its port published on a's own
	// 127.0.0.1, answers through a's namespace.
	tag, _ := DemoappImage(t, "v1")
	a.Load(t, tag)
	if _, err := b.CLI(ctx, "image", "inspect", tag); err == nil {
		t.Errorf("engine %s has %s, loaded into %s only", b.Name, tag, a.Name)
	}
	if _, err := a.CLI(ctx, "network", "create", "web"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.CLI(ctx, "run", "-d", "--name", "web", "--network", "web", "-p", "127.0.0.1::8080", tag); err != nil {
		t.Fatal(err)
	}
	port, err := a.CLI(ctx, "port", "web", "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	addr := strings.Fields(port)[0] // 127.0.0.1:NNNNN
	body := getUntil(t, a.Get, "http://"+addr+"/", 200)
	if !strings.HasPrefix(body, "v1 ") {
		t.Errorf("GET / on %s's container = %q, want v1 and its hostname", a.Name, body)
	}

	// Killed, a stops answering; b answers on.
	a.Kill(t)
	if err := a.Ping(ctx); err == nil {
		t.Errorf("engine %s answers after its Kill", a.Name)
	}
	if err := b.Ping(ctx); err != nil {
		t.Errorf("engine %s does not answer after %s's Kill: %v", b.Name, a.Name, err)
	}
	if _, err := b.CLI(ctx, "ps"); err != nil {
		t.Errorf("engine %s: %v", b.Name, err)
	}

	// Started again, a is the same host: its ID, its image, its container.
	idBefore := a.ID
	a.Start(t)
	info, err := a.Client(t).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.ID != idBefore {
		t.Errorf("engine %s came back as %s, was %s", a.Name, info.ID, idBefore)
	}
	if _, err := a.CLI(ctx, "image", "inspect", tag); err != nil {
		t.Errorf("engine %s lost %s across its restart: %v", a.Name, tag, err)
	}
	if _, err := a.CLI(ctx, "start", "web"); err != nil {
		t.Fatal(err)
	}
	port, err = a.CLI(ctx, "port", "web", "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	if body := getUntil(t, a.Get, "http://"+strings.Fields(port)[0]+"/", 200); !strings.HasPrefix(body, "v1 ") {
		t.Errorf("GET / on %s's container after the restart = %q", a.Name, body)
	}

	// b stops and starts gracefully, and is the same host too.
	b.Stop(t)
	if err := b.Ping(ctx); err == nil {
		t.Errorf("engine %s answers after its Stop", b.Name)
	}
	idBefore = b.ID
	b.Start(t)
	if id, err := b.CLI(ctx, "info", "--format", "{{.ID}}"); err != nil || id != idBefore {
		t.Errorf("engine %s came back as %q (%v), was %s", b.Name, id, err, idBefore)
	}

	// a goes away again, its container running: for the cleanup to take.
	a.Kill(t)
}

// With DefaultBridge, a container with no network of its own is on the
// engine's own docker0, and its published port answers inside the
// engine's namespace, as on a host.
func TestEnginesDefaultBridge(t *testing.T) {
	Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := StartEngines(t, 1, DefaultBridge())[0]
	tag, _ := DemoappImage(t, "v1")
	e.Load(t, tag)
	if _, err := e.CLI(ctx, "run", "-d", "--name", "web", "-p", "127.0.0.1::8080", tag); err != nil {
		t.Fatal(err)
	}
	port, err := e.CLI(ctx, "port", "web", "8080/tcp")
	if err != nil {
		t.Fatal(err)
	}
	if body := getUntil(t, e.Get, "http://"+strings.Fields(port)[0]+"/", 200); !strings.HasPrefix(body, "v1 ") {
		t.Errorf("GET / on the default bridge = %q", body)
	}
	mainBridgeWorks(ctx, t, tag)
}

// mainBridgeWorks checks that the main engine's default bridge is there
// and that a container on it starts: what a dockerd started in the
// machine's network namespace with --bridge=none breaks.
func mainBridgeWorks(ctx context.Context, t *testing.T, image string) {
	t.Helper()
	bridge, err := CLI(ctx, "network", "inspect", "bridge", "--format", `{{index .Options "com.docker.network.bridge.name"}}`)
	if err != nil {
		t.Fatalf("the main engine's bridge network: %v", err)
	}
	if _, err := net.InterfaceByName(bridge); err != nil {
		t.Errorf("the main engine's bridge %q: %v", bridge, err)
	}
	name := Prefix(t) + "-main"
	if _, err := CLI(ctx, "run", "-d", "--name", name, "--label", RunLabelArg, "-p", "127.0.0.1::8080", image); err != nil {
		t.Fatalf("a container on the main engine: %v", err)
	}
	if running, err := CLI(ctx, "inspect", "--format", "{{.State.Running}}", name); err != nil || running != "true" {
		t.Errorf("a container on the main engine: running %q, %v", running, err)
	}
}

// getUntil GETs url through get (a Get of Dockerd, Swarm or Netns) until
// it answers want (a container takes a moment to listen, an overlay a
// moment to learn its peers), and returns the body.
func getUntil(t *testing.T, get func(string) (int, string, error), url string, want int) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body, err := get(url)
		if err == nil && status == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %q, %v; want %d", url, status, body, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Two engines of one ID, or one with the main engine's, are refused: they
// would be one host to rollcall.
func TestDistinctIDs(t *testing.T) {
	engines := func(ids ...string) []*Dockerd {
		var out []*Dockerd
		for i, id := range ids {
			out = append(out, &Dockerd{Name: string(rune('a' + i)), ID: id})
		}
		return out
	}
	tests := []struct {
		name    string
		engines []*Dockerd
		main    string
		ok      bool
	}{
		{"all distinct", engines("A", "B", "C"), "M", true},
		{"all distinct, main unknown", engines("A", "B"), "", true},
		{"two alike", engines("A", "B", "A"), "M", false},
		{"one is the main engine", engines("A", "M"), "M", false},
		{"one without an ID", engines("A", ""), "M", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := distinctIDs(tt.engines, tt.main); (err == nil) != tt.ok {
				t.Errorf("distinctIDs = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

// StartEnginesFor, the entry point of a program that is not a test, leaves
// nothing behind: not when a start fails (here: its context ends before
// the engines answer), and not after its stop.
func TestStartEnginesForLeavesNothing(t *testing.T) {
	Engine(t)
	if err := enginesCheck(); err != nil {
		Skip(t, err)
	}
	ours := func() []string {
		dirs, err := filepath.Glob(filepath.Join(os.TempDir(), enginesPrefix+Run+"-*"))
		if err != nil {
			t.Fatal(err)
		}
		return dirs
	}
	before := len(ours())
	gone := func(what string, e *Dockerd) {
		t.Helper()
		if pids, err := leftovers(e.Dir, e.token); err != nil || len(pids) > 0 {
			t.Errorf("%s: engine %s left processes %v (%v)", what, e.Name, pids, err)
		}
		if mps, err := mountsUnder(e.Dir); err != nil || len(mps) > 0 {
			t.Errorf("%s: engine %s left mounts %v (%v)", what, e.Name, mps, err)
		}
	}

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if engines, stop, err := StartEnginesFor(cancelled, 2); err == nil {
		stop()
		t.Fatalf("StartEnginesFor with its context ended: %d engines, no error", len(engines))
	} else if !errors.Is(err, context.Canceled) {
		t.Errorf("StartEnginesFor with its context ended: %v, want context.Canceled in it", err)
	}
	if n := len(ours()); n != before {
		t.Errorf("a failed StartEnginesFor left %d folders of engines", n-before)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	engines, stop, err := StartEnginesFor(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := engines[0].Ping(ctx); err != nil {
		stop()
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Errorf("stop: %v", err)
	}
	gone("after stop", engines[0])
	if n := len(ours()); n != before {
		t.Errorf("stop left %d folders of engines", n-before)
	}
}
