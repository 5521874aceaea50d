package fleet_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// startPath is the engine API's start of a container.
var startPath = regexp.MustCompile(`^(/v[0-9.]+)?/containers/[^/]+/start$`)

// killAtStart is a proxy to an engine's API socket that, once armed by the
// create of a container of image, holds that container's start and hands
// it to the test (starts), which kills the engine; the held request's
// connection is then cut. It leaves the engine as a kill -9 of dockerd
// right after a create leaves it: the container Created, never started.
type killAtStart struct {
	image  string
	armed  atomic.Bool
	fired  atomic.Bool
	starts chan struct{} // a held start: the test kills the engine
	killed chan struct{} // closed by the test once it has
}

func (k *killAtStart) serve(t *testing.T, e *dockertest.Dockerd) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "api.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", "docker"
			pr.Out.Host = pr.In.Host
		},
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.Socket)
		}},
		FlushInterval: -1,
		ErrorLog:      log.New(io.Discard, "", 0), // the engine's death is this proxy's business
	}
	srv := &http.Server{ErrorLog: log.New(io.Discard, "", 0), Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/containers/create") && !k.fired.Load() {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"Image":"`+k.image+`"`)) {
				k.armed.Store(true)
			}
		}
		if r.Method == http.MethodPost && startPath.MatchString(r.URL.Path) && k.armed.Load() && k.fired.CompareAndSwap(false, true) {
			k.starts <- struct{}{}
			<-k.killed
			panic(http.ErrAbortHandler) // the engine is gone: the connection breaks
		}
		rp.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "unix://" + sock
}

// crashFleetYAML is servedFleetYAML with restart "no" (what the engine
// leaves Exited stays so) and a short health_deadline.
func crashFleetYAML(prefix, image string, deadline time.Duration, engines []*dockertest.Dockerd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix: %s\nworkloads:\n  web:\n    image: %s\n    replicas: 1\n    restart: \"no\"\n", prefix, image)
	b.WriteString("    ports: [\"127.0.0.1::8080\"]\n")
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s, timeout: 1s, retries: 3}\n")
	fmt.Fprintf(&b, "    stop_grace_period: 2s\n    update:\n      health_deadline: %s\n", deadline)
	b.WriteString("hosts:\n")
	for _, e := range engines {
		fmt.Fprintf(&b, "  %s: {endpoint: %q}\n", e.Name, e.Host)
	}
	b.WriteString("fleet: {batch: 1}\n")
	return b.String()
}

// runFleet runs one fleet (one apply) over the engines until stop.
func runFleet(t *testing.T, text string, dial fleet.Dialer) (*realFleet, func()) {
	src := &source{text: text, ch: make(chan struct{}, 1)}
	f := fleet.New(fleet.Options{Source: src, Dial: dial, Mode: session.ModeAuto, User: "tester",
		LockDir: t.TempDir(), Settle: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Run did not return within a minute of its cancel")
		}
	}
	t.Cleanup(stop)
	return &realFleet{t: t, f: f, src: src}, stop
}

// Issue 26 row 15 on real engines: three engines, batch 1, a roll to v2.
// The second host's dockerd is killed (SIGKILL) right after its new
// container's create, before its start; the run pauses on the lost host
// and ends. Past health_deadline the engine comes back with the new
// container Created, never started, and the old one Exited. A new run
// finds it so, and the host converges on v2: nothing paused, no host
// failed, every host serving v2.
func TestFleetEngineKilledMidStartRecovers(t *testing.T) {
	engines := dockertest.StartEngines(t, 3, dockertest.DefaultBridge())
	prefix := dockertest.Prefix(t)
	v1, _ := dockertest.DemoappImage(t, "v1")
	v2, _ := dockertest.DemoappImage(t, "v2")
	clients := map[string]docker.Client{}
	for _, e := range engines {
		e.Load(t, v1)
		e.Load(t, v2)
		clients[e.Name] = e.Client(t)
	}
	victim := engines[1]
	k := &killAtStart{image: v2, starts: make(chan struct{}), killed: make(chan struct{})}
	through := k.serve(t, victim)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	viaProxy, err := moby.New(ctx, through)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { viaProxy.Close() })
	clients[victim.Name] = viaProxy
	dial := func(_ context.Context, h *spec.Host) (docker.Client, error) {
		c := clients[h.Name]
		if c == nil {
			return nil, fmt.Errorf("no engine %s", h.Name)
		}
		return c, nil
	}

	const deadline = 20 * time.Second
	first, stopFirst := runFleet(t, crashFleetYAML(prefix, v1, deadline, engines), dial)
	first.await("every engine on v1", 3*time.Minute, convergedOn(v1, 1))
	first.src.set(crashFleetYAML(prefix, v2, deadline, engines))
	select {
	case <-k.starts:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s's v2 container was not started within 3 minutes; %s", victim.Name, snapLine(first.last))
	}
	victim.Kill(t)
	killedAt := time.Now()
	close(k.killed)
	first.await(victim.Name+" lost and the rollout paused", 2*time.Minute, func(s fleet.Snapshot) bool {
		return s.Decision.Phase == fleet.PhasePaused && s.Decision.Verdict(victim.Name).Status == fleet.HostLost
	})
	stopFirst()

	// Back past the new container's health_deadline.
	time.Sleep(time.Until(killedAt.Add(deadline + 2*time.Second)))
	victim.Start(t)
	listCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	cs, err := clients[victim.Name].List(listCtx, prefix)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	created, exited := 0, 0
	for _, c := range cs {
		states = append(states, fmt.Sprintf("%s %s %s exit %d", c.Name, c.Image, c.State, c.ExitCode))
		switch {
		case c.Image == v2 && c.State == docker.StateCreated && c.StartedAt.IsZero():
			created++
		case c.Image == v1 && c.State == docker.StateExited:
			exited++
		}
	}
	t.Logf("%s back %s after the kill: %s", victim.Name, time.Since(killedAt).Round(time.Millisecond), strings.Join(states, "; "))
	if created != 1 || exited != 1 {
		t.Fatalf("%s came back as %q, not the issue's state (v2 Created, never started; v1 Exited)", victim.Name, states)
	}

	began := time.Now()
	second, _ := runFleet(t, crashFleetYAML(prefix, v2, deadline, engines), dial)
	var paused error
	done := second.await("every engine on v2", 4*time.Minute, func(s fleet.Snapshot) bool {
		for _, h := range s.Hosts {
			if h.Session.Pause != nil && paused == nil {
				paused = errors.New(h.Name + ": " + h.Session.Pause.Reason)
			}
		}
		return convergedOn(v2, 1)(s) || s.Decision.Phase == fleet.PhasePaused
	})
	if done.Decision.Phase != fleet.PhaseDone || done.Blocked != "" || paused != nil {
		t.Fatalf("the new run did not converge: pause %v; %s", paused, snapLine(done))
	}
	if len(done.Decision.Record.Failed) != 0 {
		t.Errorf("failed hosts %+v", done.Decision.Record.Failed)
	}
	t.Logf("the new run converged every host on v2 in %s", time.Since(began).Round(time.Millisecond))
	for _, e := range engines {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		got, err := answers(ctx, e, clients[e.Name], prefix)
		cancel()
		if err != nil || len(got) != 1 || got[0] != "v2" {
			t.Errorf("%s serves %v (%v), want v2", e.Name, got, err)
		}
	}
}
