package fleet_test

// Black-box checks of the fleet on several real engines (DESIGN §11):
// a host killed mid-roll pauses the rollout while the others serve on,
// and zero downtime on each host of a real multi-engine roll.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// servedFleetYAML is the demoapp, replicas on each engine, its port 8080
// published on the engine's 127.0.0.1, rolled one host per wave after the
// canary (the first engine).
func servedFleetYAML(prefix, image string, replicas int, engines []*dockertest.Dockerd) string {
	var b strings.Builder
	fmt.Fprintf(&b, "prefix: %s\nworkloads:\n  web:\n    image: %s\n    replicas: %d\n", prefix, image, replicas)
	b.WriteString("    ports: [\"127.0.0.1::8080\"]\n")
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s, timeout: 1s, retries: 3}\n")
	b.WriteString("    stop_grace_period: 2s\n    update:\n      health_deadline: 60s\n")
	b.WriteString("hosts:\n")
	for _, e := range engines {
		fmt.Fprintf(&b, "  %s: {endpoint: %q}\n", e.Name, e.Host)
	}
	b.WriteString("fleet: {batch: 1}\n")
	return b.String()
}

// realFleet is a fleet running over real engines, from a source in memory.
type realFleet struct {
	t    *testing.T
	f    *fleet.Fleet
	src  *source
	last fleet.Snapshot
}

// startRealFleet runs the fleet in auto mode until the test ends.
func startRealFleet(t *testing.T, text string, dial fleet.Dialer) *realFleet {
	src := &source{text: text, ch: make(chan struct{}, 1)}
	f := fleet.New(fleet.Options{Source: src, Dial: dial, Mode: session.ModeAuto, User: "tester",
		LockDir: t.TempDir(), Settle: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("Run did not return within a minute of its cancel")
		}
	})
	return &realFleet{t: t, f: f, src: src}
}

// await reads snapshots until cond holds, for limit at most.
func (r *realFleet) await(what string, limit time.Duration, cond func(fleet.Snapshot) bool) fleet.Snapshot {
	r.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case s, ok := <-r.f.Snapshots():
			if !ok {
				r.t.Fatalf("waiting for %s: the fleet ended", what)
			}
			r.last = s
			if cond(s) {
				return s
			}
		case <-deadline:
			r.t.Fatalf("waiting for %s: gave up after %s; %s", what, limit, snapLine(r.last))
		}
	}
}

// snapLine is a snapshot in one line, for messages.
func snapLine(s fleet.Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s, blocked %q", fleet.PhaseName(s.Decision.Phase), s.Blocked)
	for _, w := range s.Decision.Waves {
		fmt.Fprintf(&b, "; wave %d %v status %d waits %+v", w.Index+1, w.Hosts, w.Status, w.Waits)
	}
	for _, h := range s.Hosts {
		fmt.Fprintf(&b, "; %s: verdict %+v connected %v", h.Name, h.Verdict, h.Session.Connected)
		for _, c := range h.Session.Containers {
			fmt.Fprintf(&b, " [%s %s %s/%s]", c.Name, c.Image, c.State, c.Health)
		}
	}
	return b.String()
}

// convergedOn: the rollout is done and steady, and every host runs
// replicas containers, all of image.
func convergedOn(image string, replicas int) func(fleet.Snapshot) bool {
	return func(s fleet.Snapshot) bool {
		if !s.Steady || s.Decision.Phase != fleet.PhaseDone {
			return false
		}
		for _, h := range s.Hosts {
			if len(h.Session.Containers) != replicas {
				return false
			}
			for _, c := range h.Session.Containers {
				if c.Image != image {
					return false
				}
			}
		}
		return true
	}
}

// createSeen is a client that calls seen after each create of image.
type createSeen struct {
	docker.Client
	image string
	seen  func()
}

func (c createSeen) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	id, err := c.Client.Create(ctx, s)
	if err == nil && s.Image == c.image {
		c.seen()
	}
	return id, err
}

// servedAddrs is the published 127.0.0.1 address of port 8080 of each
// running, healthy container of the prefix on an engine, as it lists them.
func servedAddrs(ctx context.Context, c docker.Client, prefix string) ([]string, error) {
	cs, err := c.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cs, func(a, b docker.Container) int { return strings.Compare(a.Name, b.Name) })
	var out []string
	for _, ct := range cs {
		if ct.State != docker.StateRunning || ct.Health != docker.HealthHealthy {
			continue
		}
		for _, p := range ct.Ports {
			if p.ContainerPort == 8080 && p.Proto == "tcp" && p.HostPort != 0 {
				out = append(out, publishedAddr(p))
				break
			}
		}
	}
	return out, nil
}

// publishedAddr is where a published port answers inside its engine's
// namespace.
func publishedAddr(p docker.PublishedPort) string {
	ip := p.HostIP
	if ip == "" || ip == "0.0.0.0" {
		ip = "127.0.0.1"
	}
	return ip + ":" + strconv.Itoa(p.HostPort)
}

// answers GETs every healthy container of an engine from inside its
// namespace and returns the version each answered ("v1", "v2"); an error
// when a container does not answer 200 with a version, or none is healthy.
func answers(ctx context.Context, e *dockertest.Dockerd, c docker.Client, prefix string) ([]string, error) {
	addrs, err := servedAddrs(ctx, c, prefix)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errors.New("no running, healthy container listed")
	}
	var out []string
	for _, a := range addrs {
		status, body, err := e.Get("http://" + a + "/")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		if status != http.StatusOK {
			return nil, fmt.Errorf("%s: %d %s", a, status, strings.TrimSpace(body))
		}
		version, _, _ := strings.Cut(body, " ")
		out = append(out, version)
	}
	return out, nil
}

// Three real engines, one replica each, one host per wave (e0 the canary,
// then e1, then e2): the fleet converges v1, then rolls v2. As soon as e1's
// new container exists, e1's engine is killed. The rollout must pause,
// naming e1 as lost; e2 never gets a v2 container; e0 serves v2 and e2
// serves v1 all along.
func TestFleetHostKilledMidRollPauses(t *testing.T) {
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
	canary, victim, last := engines[0], engines[1], engines[2]
	created := make(chan struct{})
	var once sync.Once
	dial := func(ctx context.Context, h *spec.Host) (docker.Client, error) {
		c := clients[h.Name]
		if h.Name == victim.Name {
			return createSeen{Client: c, image: v2, seen: func() { once.Do(func() { close(created) }) }}, nil
		}
		return c, nil
	}
	rf := startRealFleet(t, servedFleetYAML(prefix, v1, 1, engines), dial)
	first := rf.await("every engine on v1", 3*time.Minute, convergedOn(v1, 1))

	rf.src.set(servedFleetYAML(prefix, v2, 1, engines))
	select {
	case <-created:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%s got no v2 container within 3 minutes; %s", victim.Name, snapLine(rf.last))
	}
	killedAt := time.Now()
	victim.Kill(t)

	lost := func(s fleet.Snapshot) bool {
		return s.RolloutID != first.RolloutID && s.Decision.Phase == fleet.PhasePaused &&
			s.Decision.Verdict(victim.Name).Status == fleet.HostLost
	}
	paused := rf.await(victim.Name+" lost and the rollout paused", 2*time.Minute, lost)
	t.Logf("paused %s after the kill: blocked %q", time.Since(killedAt).Round(time.Millisecond), paused.Blocked)
	if paused.Blocked == "" || !strings.Contains(paused.Blocked, victim.Name) {
		t.Errorf("the paused rollout's Blocked is %q: it does not name the lost host %s", paused.Blocked, victim.Name)
	}
	named := false
	for _, w := range paused.Decision.Waves {
		for _, wt := range w.Waits {
			named = named || wt.Kind == fleet.WaitFailedHost && wt.Host == victim.Name && wt.Cause == fleet.CauseLost
		}
	}
	if !named {
		t.Errorf("no wave waits on %s as a lost host; %s", victim.Name, snapLine(paused))
	}

	// For some seconds: the rollout stays paused, e2 holds and never gets
	// a v2 container, e0 serves v2 and e2 serves v1.
	ctx := context.Background()
	checks := 0
	for until := time.Now().Add(10 * time.Second); time.Now().Before(until); {
		select {
		case s := <-rf.f.Snapshots():
			rf.last = s
			if s.Decision.Phase != fleet.PhasePaused {
				t.Errorf("the rollout left the paused phase: %s", snapLine(s))
			}
			if v := s.Decision.Verdict(last.Name); v.Action != fleet.Hold || v.Status != fleet.HostPending {
				t.Errorf("%s's verdict is %+v after %s was lost; want it held, pending", last.Name, v, victim.Name)
			}
		case <-time.After(500 * time.Millisecond):
		}
		cs, err := clients[last.Name].List(ctx, prefix)
		if err != nil {
			t.Fatalf("list %s: %v", last.Name, err)
		}
		for _, c := range cs {
			if c.Image != v1 {
				t.Fatalf("%s has container %s of %s after %s was lost: a later wave started", last.Name, c.Name, c.Image, victim.Name)
			}
		}
		for _, want := range []struct {
			e       *dockertest.Dockerd
			version string
		}{{canary, "v2"}, {last, "v1"}} {
			got, err := answers(ctx, want.e, clients[want.e.Name], prefix)
			if err != nil || len(got) != 1 || got[0] != want.version {
				t.Fatalf("%s answers %v (%v); want one container answering %s", want.e.Name, got, err, want.version)
			}
		}
		checks++
	}
	t.Logf("%d checks over 10s after the pause: %s served v2, %s served v1 and held, no v2 container on it", checks, canary.Name, last.Name)
	if checks < 5 {
		t.Errorf("only %d checks in 10s", checks)
	}
}

// hostClient sends GETs back to back to one engine's demoapp containers,
// from inside the engine's namespace, and tallies the answers by the phase
// each request was sent in.
//
// It routes as a load balancer following the engine would: to the
// containers the engine lists as running and healthy (relisted every
// 200ms), round robin. A request that gets no HTTP answer from one
// (refused, reset, EOF: a container stopping between two lists) goes to
// the next; when none of those answered it relists at once and tries the
// healthy containers it has not tried yet. A request fails when no
// container listed healthy gave an HTTP answer, or when the answer is not
// 200 with a version ("v1 …", "v2 …"): an answer, whatever its status, is
// final, as it is to the single-host test's proxy.
type hostClient struct {
	e      *dockertest.Dockerd
	engine docker.Client
	prefix string
	http   *http.Client
	phase  *atomic.Int32
	stop   atomic.Bool
	wg     sync.WaitGroup

	mu      sync.Mutex
	addrs   []string
	next    int
	served  [3]int
	v1, v2  [3]int
	failed  []string
	retries int
	relists int
}

func newHostClient(e *dockertest.Dockerd, engine docker.Client, prefix string, phase *atomic.Int32) *hostClient {
	h := &hostClient{e: e, engine: engine, prefix: prefix, phase: phase, http: &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{DialContext: e.Dial, MaxIdleConnsPerHost: 2,
			ResponseHeaderTimeout: 5 * time.Second, IdleConnTimeout: 10 * time.Second},
	}}
	ctx, cancel := context.WithCancel(context.Background())
	h.wg.Add(2)
	go func() {
		defer h.wg.Done()
		for ctx.Err() == nil {
			h.relist(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer h.wg.Done()
		defer cancel()
		for !h.stop.Load() {
			ph := h.phase.Load()
			version, err := h.once(ctx)
			h.mu.Lock()
			switch {
			case err != nil:
				h.failed = append(h.failed, phaseName(ph)+": "+err.Error())
			case version == "v1":
				h.served[ph]++
				h.v1[ph]++
			default:
				h.served[ph]++
				h.v2[ph]++
			}
			h.mu.Unlock()
		}
	}()
	return h
}

const (
	phaseBefore = iota
	phaseRoll
	phaseAfter
)

func phaseName(ph int32) string {
	return [...]string{"before the roll", "during the roll", "after the roll"}[ph]
}

// relist takes the engine's healthy containers; a failed list keeps the
// last ones.
func (h *hostClient) relist(ctx context.Context) []string {
	addrs, err := servedAddrs(ctx, h.engine, h.prefix)
	if err != nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.addrs = addrs
	h.relists++
	return addrs
}

// once sends one request (see hostClient) and returns the version that
// answered.
func (h *hostClient) once(ctx context.Context) (string, error) {
	h.mu.Lock()
	addrs := slices.Clone(h.addrs)
	start := h.next
	h.next++
	h.mu.Unlock()
	tried := map[string]bool{}
	var errs []error
	for round := range 2 {
		if round == 1 {
			addrs = h.relist(ctx)
		}
		for i := range addrs {
			a := addrs[(start+i)%len(addrs)]
			if tried[a] {
				continue
			}
			if len(tried) > 0 {
				h.mu.Lock()
				h.retries++
				h.mu.Unlock()
			}
			tried[a] = true
			version, answered, err := h.get(a)
			if answered {
				return version, err
			}
			errs = append(errs, fmt.Errorf("%s: %w", a, err))
		}
	}
	if len(tried) == 0 {
		return "", errors.New("no container listed running and healthy")
	}
	return "", fmt.Errorf("no healthy container answered: %w", errors.Join(errs...))
}

// get sends one GET to addr; answered: an HTTP answer came.
func (h *hostClient) get(addr string) (version string, answered bool, err error) {
	resp, err := h.http.Get("http://" + addr + "/")
	if err != nil {
		return "", false, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", false, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", true, fmt.Errorf("%s: %s: %s", addr, resp.Status, strings.TrimSpace(string(body)))
	}
	version, _, _ = strings.Cut(string(body), " ")
	if version != "v1" && version != "v2" {
		return "", true, fmt.Errorf("%s: unexpected answer %q", addr, body)
	}
	return version, true, nil
}

func (h *hostClient) servedIn(ph int) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served[ph]
}

func (h *hostClient) close() {
	h.stop.Store(true)
	h.wg.Wait()
	h.http.CloseIdleConnections()
}

// Two real engines, two replicas each: while the fleet rolls both from v1
// to v2 (the canary e0, then e1), a client per host sends GETs back to back
// to that host's healthy containers (see hostClient). Not one request may
// fail on either host.
func TestFleetZeroDowntimePerHost(t *testing.T) {
	engines := dockertest.StartEngines(t, 2, dockertest.DefaultBridge())
	prefix := dockertest.Prefix(t)
	v1, _ := dockertest.DemoappImage(t, "v1")
	v2, _ := dockertest.DemoappImage(t, "v2")
	clients := map[string]docker.Client{}
	for _, e := range engines {
		e.Load(t, v1)
		e.Load(t, v2)
		clients[e.Name] = e.Client(t)
	}
	const replicas = 2
	dial := func(ctx context.Context, h *spec.Host) (docker.Client, error) { return clients[h.Name], nil }
	rf := startRealFleet(t, servedFleetYAML(prefix, v1, replicas, engines), dial)
	first := rf.await("every engine on v1", 3*time.Minute, convergedOn(v1, replicas))

	var phase atomic.Int32
	loads := make([]*hostClient, len(engines))
	for i, e := range engines {
		loads[i] = newHostClient(e, clients[e.Name], prefix, &phase)
		defer loads[i].close()
	}
	waitServed := func(ph int) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for _, l := range loads {
			for l.servedIn(ph) < 20 {
				if time.Now().After(deadline) {
					t.Fatalf("%s: %d requests served %s within a minute", l.e.Name, l.servedIn(ph), phaseName(int32(ph)))
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	waitServed(phaseBefore)

	began := time.Now()
	phase.Store(phaseRoll)
	rf.src.set(servedFleetYAML(prefix, v2, replicas, engines))
	rf.await("every engine on v2", 5*time.Minute, func(s fleet.Snapshot) bool {
		return s.RolloutID != first.RolloutID && convergedOn(v2, replicas)(s)
	})
	phase.Store(phaseAfter)
	rollTime := time.Since(began)
	waitServed(phaseAfter)
	for _, l := range loads {
		l.close()
	}

	for _, l := range loads {
		l.mu.Lock()
		t.Logf("%s: %d requests served during the %s fleet roll (v1 %d, v2 %d), %d before, %d after, %d failed; %d retried on another container, %d lists",
			l.e.Name, l.served[phaseRoll], rollTime.Round(time.Millisecond), l.v1[phaseRoll], l.v2[phaseRoll],
			l.served[phaseBefore], l.served[phaseAfter], len(l.failed), l.retries, l.relists)
		if len(l.failed) > 0 {
			t.Errorf("%s: %d requests failed; the first: %s", l.e.Name, len(l.failed), strings.Join(l.failed[:min(len(l.failed), 10)], "; "))
		}
		if l.v1[phaseBefore] != l.served[phaseBefore] || l.v2[phaseAfter] != l.served[phaseAfter] ||
			l.v1[phaseRoll] == 0 || l.v2[phaseRoll] == 0 {
			t.Errorf("%s answers v1/v2: before the roll %d/%d, during %d/%d, after %d/%d; want only v1 before, both during, only v2 after",
				l.e.Name, l.v1[phaseBefore], l.v2[phaseBefore], l.v1[phaseRoll], l.v2[phaseRoll], l.v1[phaseAfter], l.v2[phaseAfter])
		}
		l.mu.Unlock()
	}
}
