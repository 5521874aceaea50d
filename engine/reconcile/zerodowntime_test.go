package reconcile_test

// The zero-downtime proof (DESIGN §10): while a client sends requests without
// pause through a proxy that routes only to healthy containers, Converge
// rolls three replicas from v1 to v2. Not one request may fail.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
)

// healthyProxy is a test-only HTTP reverse proxy that routes to the healthy
// containers of one workload, through their published loopback ports, the
// way Traefik's Docker provider does:
//
//   - It subscribes to the engine's events for the prefix, then lists.
//   - On every event, and every relistEvery as a fallback, it relists and
//     replaces its backends with the workload's running containers whose
//     health is healthy, in slot order, and picks among them round-robin.
//   - On a kill, stop or die event it drops the container at once, before
//     relisting, and keeps it out until it starts again: a container draining
//     after SIGTERM still reads running and healthy. On health_status:
//     unhealthy it drops the container at once too.
//   - When a backend fails below HTTP (no answer at all: refused, reset, EOF),
//     it retries a GET on each other backend in turn, as Traefik's retry
//     middleware does. An HTTP answer, whatever its status, is passed on.
//
// The retry is needed because the engine reports "kill" only after it has
// delivered the stop signal, and demoapp closes its listener at once on
// SIGTERM (it finishes the requests it has). A request routed in the
// moment between reaches docker-proxy, which accepts the connection and
// then finds nothing listening behind it.
type healthyProxy struct {
	engine   docker.Client
	prefix   string
	workload string

	mu       sync.Mutex
	backends []backend
	stopping map[string]bool // IDs seen killed, stopped or dead, until they start again
	next     int

	transport *http.Transport
	relists   atomic.Int64
	retries   atomic.Int64
	retryErrs sync.Map // error text -> true, for the log
}

type backend struct {
	id   string
	name string
	addr string // 127.0.0.1:port
}

const relistEvery = 500 * time.Millisecond

func newHealthyProxy(engine docker.Client, prefix, workload string) *healthyProxy {
	return &healthyProxy{
		engine: engine, prefix: prefix, workload: workload,
		stopping: map[string]bool{},
		transport: &http.Transport{
			MaxIdleConnsPerHost:   8,
			ResponseHeaderTimeout: 5 * time.Second,
			IdleConnTimeout:       10 * time.Second,
		},
	}
}

// run follows the engine until ctx ends.
func (p *healthyProxy) run(ctx context.Context) {
	events, _ := p.engine.Events(ctx, p.prefix, time.Time{}) // errors: the fallback relist covers them
	kick := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range events { // closed when ctx ends
			p.onEvent(ev)
			select {
			case kick <- struct{}{}:
			default:
			}
		}
	}()
	defer func() { <-done }()
	tick := time.NewTicker(relistEvery)
	defer tick.Stop()
	for {
		p.relist(ctx)
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-tick.C:
		}
	}
}

func (p *healthyProxy) onEvent(ev docker.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev.Action {
	case "kill", "stop", "die":
		p.stopping[ev.ContainerID] = true
		p.drop(ev.ContainerID)
	case "health_status: unhealthy":
		p.drop(ev.ContainerID)
	case "start":
		delete(p.stopping, ev.ContainerID)
	}
}

func (p *healthyProxy) drop(id string) {
	p.backends = slices.DeleteFunc(p.backends, func(b backend) bool { return b.id == id })
}

func (p *healthyProxy) relist(ctx context.Context) {
	cs, err := p.engine.List(ctx, p.prefix)
	if err != nil {
		return // keep the backends; the next event or tick tries again
	}
	p.relists.Add(1)
	slices.SortFunc(cs, func(a, b docker.Container) int { return strings.Compare(a.Name, b.Name) })
	var fresh []backend
	for _, c := range cs {
		if c.Labels[docker.WorkloadLabel(p.prefix)] != p.workload || c.State != docker.StateRunning || c.Health != docker.HealthHealthy {
			continue
		}
		for _, port := range c.Ports {
			if port.ContainerPort == 8080 && port.Proto == "tcp" && port.HostPort != 0 {
				fresh = append(fresh, backend{id: c.ID, name: c.Name, addr: port.HostIP + ":" + strconv.Itoa(port.HostPort)})
				break
			}
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Filtered now, not before the list: an event that came while listing wins.
	p.backends = slices.DeleteFunc(fresh, func(b backend) bool { return p.stopping[b.id] })
}

// pick returns the next backend round-robin, skipping those tried already.
func (p *healthyProxy) pick(tried map[string]bool) (backend, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range p.backends {
		b := p.backends[p.next%len(p.backends)]
		p.next++
		if !tried[b.id] {
			return b, true
		}
	}
	return backend{}, false
}

func (p *healthyProxy) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.backends)
}

func (p *healthyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "the test proxy only forwards GET", http.StatusMethodNotAllowed)
		return
	}
	tried := map[string]bool{}
	var errs []error
	for {
		b, ok := p.pick(tried)
		if !ok {
			break
		}
		if len(tried) > 0 {
			p.retries.Add(1)
		}
		tried[b.id] = true
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.URL.Scheme, out.URL.Host, out.Host = "http", b.addr, b.addr
		resp, err := p.transport.RoundTrip(out)
		if err != nil {
			p.retryErrs.Store(err.Error(), true)
			errs = append(errs, fmt.Errorf("%s: %w", b.name, err))
			continue
		}
		defer resp.Body.Close()
		maps.Copy(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
		return
	}
	http.Error(w, fmt.Sprintf("no healthy backend answered: %v", errors.Join(errs...)), http.StatusBadGateway)
}

// loadClient sends GETs through the proxy without pause and tallies the
// answers by the phase in which each request was sent.
type loadClient struct {
	url    string
	client *http.Client
	phase  atomic.Int32 // phaseBefore, phaseRoll, phaseAfter
	stop   atomic.Bool
	wg     sync.WaitGroup

	mu     sync.Mutex
	served [3]int
	v1, v2 [3]int
	failed []string
}

const (
	phaseBefore = iota
	phaseRoll
	phaseAfter
)

var phaseName = [...]string{"before the roll", "during the roll", "after the roll"}

func newLoadClient(url string, workers int) *loadClient {
	l := &loadClient{url: url, client: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: workers},
	}}
	for range workers {
		l.wg.Add(1)
		go l.work()
	}
	return l
}

func (l *loadClient) work() {
	defer l.wg.Done()
	for !l.stop.Load() {
		ph := l.phase.Load() // the phase the request was sent in
		version, err := l.once()
		l.mu.Lock()
		switch {
		case err != nil:
			l.failed = append(l.failed, phaseName[ph]+": "+err.Error())
		case version == "v1":
			l.served[ph]++
			l.v1[ph]++
		default:
			l.served[ph]++
			l.v2[ph]++
		}
		l.mu.Unlock()
	}
}

// once sends one request and returns the version that answered: the body
// must be "v1 <hostname>" or "v2 <hostname>".
func (l *loadClient) once() (string, error) {
	resp, err := l.client.Get(l.url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	version, _, _ := strings.Cut(string(body), " ")
	if version != "v1" && version != "v2" {
		return "", fmt.Errorf("unexpected answer %q", body)
	}
	return version, nil
}

func (l *loadClient) servedIn(ph int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served[ph]
}

func (l *loadClient) close() {
	l.stop.Store(true)
	l.wg.Wait()
	l.client.CloseIdleConnections()
}

// slotWatch checks, while a roll runs, that every slot of a workload has a
// healthy container at every moment, with two witnesses:
//
//   - samples: a List every 50ms, taking running and healthy as the engine
//     reports them. The samples can be further apart: the engine answers an
//     inspect of a container only once that container has finished starting.
//   - the event stream, which misses no moment: from a List of the steady
//     state before the roll, a container counts healthy from its
//     "health_status: healthy" until its kill, die, stop, destroy or
//     "health_status: unhealthy" (stricter than the engine, which calls a
//     container draining after SIGTERM healthy until it exits), and every
//     slot is checked after every event.
type slotWatch struct {
	engine   docker.Client
	prefix   string
	workload string
	slots    int
	began    time.Time
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// samples
	samples    int
	maxGap     time.Duration
	violations []string

	// events
	mu        sync.Mutex
	events    int
	destroyed map[string]bool
	eventErrs []string
}

// watchSlots starts both witnesses; the workload must be converged and
// steady (no container changing) when it is called.
func watchSlots(t *testing.T, ctx context.Context, engine docker.Client, prefix, workload string, slots int) *slotWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &slotWatch{engine: engine, prefix: prefix, workload: workload, slots: slots,
		began: time.Now(), cancel: cancel, destroyed: map[string]bool{}}
	events, _ := engine.Events(ctx, prefix, w.began)
	seed, err := engine.List(ctx, prefix)
	if err != nil {
		cancel()
		t.Fatalf("List: %v", err)
	}
	healthy := map[string]string{} // container ID -> slot
	for _, c := range seed {
		if c.Labels[docker.WorkloadLabel(prefix)] == workload && c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
			healthy[c.ID] = c.Labels[docker.SlotLabel(prefix)]
		}
	}
	if missing := w.uncovered(healthy); len(missing) > 0 {
		cancel()
		t.Fatalf("before the roll, slots %v have no healthy container", missing)
	}
	w.wg.Add(2)
	go w.followEvents(events, healthy)
	go w.sample(ctx)
	return w
}

// uncovered returns the slots without a healthy container.
func (w *slotWatch) uncovered(healthy map[string]string) []int {
	var out []int
	for i := range w.slots {
		found := false
		for _, slot := range healthy {
			found = found || slot == strconv.Itoa(i)
		}
		if !found {
			out = append(out, i)
		}
	}
	return out
}

func (w *slotWatch) followEvents(events <-chan docker.Event, healthy map[string]string) {
	defer w.wg.Done()
	for ev := range events { // closed when the watch is cancelled
		if ev.Attributes[docker.WorkloadLabel(w.prefix)] != w.workload {
			continue
		}
		switch ev.Action {
		case "health_status: healthy":
			healthy[ev.ContainerID] = ev.Attributes[docker.SlotLabel(w.prefix)]
		case "kill", "die", "stop", "destroy", "health_status: unhealthy":
			delete(healthy, ev.ContainerID)
		}
		w.mu.Lock()
		w.events++
		if ev.Action == "destroy" {
			w.destroyed[ev.ContainerID] = true
		}
		if missing := w.uncovered(healthy); len(missing) > 0 {
			w.eventErrs = append(w.eventErrs, fmt.Sprintf("%s: after %q of %s, slots %v have no healthy container",
				ev.Time.Sub(w.began).Round(time.Millisecond), ev.Action, ev.Name, missing))
		}
		w.mu.Unlock()
	}
}

func (w *slotWatch) sample(ctx context.Context) {
	defer w.wg.Done()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	last := w.began
	for {
		cs, err := w.engine.List(ctx, w.prefix)
		if ctx.Err() != nil {
			return
		}
		w.maxGap = max(w.maxGap, time.Since(last))
		last = time.Now()
		at := last.Sub(w.began).Round(time.Millisecond)
		if err != nil {
			w.violations = append(w.violations, fmt.Sprintf("%s: list: %v", at, err))
		} else {
			w.samples++
			healthy := map[string]string{}
			var seen []string
			for _, c := range cs {
				if c.Labels[docker.WorkloadLabel(w.prefix)] != w.workload {
					continue
				}
				seen = append(seen, fmt.Sprintf("%s %s/%s", c.Name, c.State, c.Health))
				if c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
					healthy[c.ID] = c.Labels[docker.SlotLabel(w.prefix)]
				}
			}
			if missing := w.uncovered(healthy); len(missing) > 0 {
				w.violations = append(w.violations, fmt.Sprintf("%s: slots %v have no healthy container: %v", at, missing, seen))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// finish waits until the event witness has seen every container of gone
// destroyed, so it covered the whole roll, then stops both witnesses.
func (w *slotWatch) finish(t *testing.T, gone []string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		w.mu.Lock()
		seen := 0
		for _, id := range gone {
			if w.destroyed[id] {
				seen++
			}
		}
		w.mu.Unlock()
		if seen == len(gone) {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the event witness saw %d of the %d old containers destroyed within 20s", seen, len(gone))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.cancel()
	w.wg.Wait()
}

func TestRealZeroDowntimeRoll(t *testing.T) {
	rt := newRealTest(t)
	const replicas = 3
	v1 := rt.desired(demoWorkload("web", imageV1, replicas, "stop_grace_period: 10s"))
	v2 := rt.desired(demoWorkload("web", imageV2, replicas, "stop_grace_period: 10s"))
	rt.converge(v1, reconciletest.Options{})
	old := rt.converged(v1)["web"]

	pctx, pcancel := context.WithCancel(rt.ctx)
	proxy := newHealthyProxy(rt.engine, rt.prefix, "web")
	proxyDone := make(chan struct{})
	go func() { defer close(proxyDone); proxy.run(pctx) }()
	front := httptest.NewServer(proxy)
	defer func() {
		front.Close()
		pcancel()
		<-proxyDone
		proxy.transport.CloseIdleConnections()
	}()
	rt.waitFor("the proxy routes to every v1 container", 20*time.Second, func() (bool, string) {
		n := proxy.count()
		return n == replicas, fmt.Sprintf("%d backends", n)
	})

	// Two clients: under load one alone served under 500 requests in a
	// roll (469 beside a second suite), too few to count as evidence.
	load := newLoadClient(front.URL+"/", 2)
	defer load.close()
	rt.waitFor("the client is served before the roll", 20*time.Second, func() (bool, string) {
		n := load.servedIn(phaseBefore)
		return n >= 50, fmt.Sprintf("%d served", n)
	})

	watch := watchSlots(t, rt.ctx, rt.engine, rt.prefix, "web", replicas)
	began := time.Now()
	load.phase.Store(phaseRoll)
	results, err := rt.tryConverge(rt.ctx, v2, reconciletest.Options{})
	load.phase.Store(phaseAfter)
	rollTime := time.Since(began)
	watch.finish(t, ids(old))
	if err != nil {
		t.Fatalf("Converge v1 → v2: %v", err)
	}
	rt.waitFor("the client is served after the roll", 20*time.Second, func() (bool, string) {
		n := load.servedIn(phaseAfter)
		return n >= 50, fmt.Sprintf("%d served", n)
	})
	load.close()

	if got := actions(t, results); !maps.Equal(got, map[reconcile.Action]int{reconcile.ActStart: replicas, reconcile.ActRoll: replicas}) {
		t.Errorf("v1 → v2 executed %v; want %d starts and %d rolls", got, replicas, replicas)
	}
	rt.converged(v2)

	var retryErrs []string
	proxy.retryErrs.Range(func(k, _ any) bool { retryErrs = append(retryErrs, k.(string)); return true })
	t.Logf("zero downtime: %d requests served during the %s roll (%d before, %d after), %d failed; "+
		"the proxy retried %d on another backend %v and relisted %d times; slots checked at %d samples, at most %s apart, and at %d events",
		load.served[phaseRoll], rollTime.Round(time.Millisecond), load.served[phaseBefore], load.served[phaseAfter],
		len(load.failed), proxy.retries.Load(), retryErrs, proxy.relists.Load(), watch.samples, watch.maxGap.Round(time.Millisecond), watch.events)

	if len(load.failed) > 0 {
		t.Errorf("%d requests failed; the first: %s", len(load.failed), strings.Join(load.failed[:min(len(load.failed), 10)], "; "))
	}
	if n := load.served[phaseRoll]; n < 500 {
		t.Errorf("%d requests served during the roll, want at least 500", n)
	}
	if load.v1[phaseBefore] != load.served[phaseBefore] || load.v2[phaseAfter] != load.served[phaseAfter] ||
		load.v1[phaseRoll] == 0 || load.v2[phaseRoll] == 0 {
		t.Errorf("answers v1/v2: before the roll %d/%d, during %d/%d, after %d/%d; want only v1 before, both during, only v2 after",
			load.v1[phaseBefore], load.v2[phaseBefore], load.v1[phaseRoll], load.v2[phaseRoll], load.v1[phaseAfter], load.v2[phaseAfter])
	}
	if watch.samples < 5 {
		t.Errorf("only %d slot samples during the roll, want a continuous record", watch.samples)
	}
	if len(watch.violations) > 0 {
		t.Errorf("%d samples found a slot without a healthy container; the first:\n%s",
			len(watch.violations), strings.Join(watch.violations[:min(len(watch.violations), 5)], "\n"))
	}
	if len(watch.eventErrs) > 0 {
		t.Errorf("the event stream shows a slot without a healthy container %d times; the first:\n%s",
			len(watch.eventErrs), strings.Join(watch.eventErrs[:min(len(watch.eventErrs), 5)], "\n"))
	}
}
