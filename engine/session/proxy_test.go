package session

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/proxy"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// caddyStandIn is Caddy's admin API as far as rollcall reads it: GET
// /reverse_proxy/upstreams answers the JSON set with set, or the status
// set with fail.
type caddyStandIn struct {
	*httptest.Server
	mu     sync.Mutex
	body   string
	status int
	asked  int
}

func newCaddyStandIn(t *testing.T) *caddyStandIn {
	c := &caddyStandIn{body: "[]", status: http.StatusOK}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if r.URL.Path != "/reverse_proxy/upstreams" {
			http.NotFound(w, r)
			return
		}
		c.asked++
		w.WriteHeader(c.status)
		fmt.Fprint(w, c.body)
	}))
	t.Cleanup(c.Close)
	return c
}

// set makes the stand-in list one upstream per address, on port 8080.
func (c *caddyStandIn) set(inFlight, fails int, ips ...string) {
	var items []string
	for _, ip := range ips {
		items = append(items, fmt.Sprintf(`{"address":"%s:8080","num_requests":%d,"fails":%d}`, ip, inFlight, fails))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.body, c.status = "["+strings.Join(items, ",")+"]", http.StatusOK
}

func (c *caddyStandIn) fail(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.body, c.status = "admin endpoint disabled", status
}

func (c *caddyStandIn) questions() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked
}

func withProxy(text, admin string) string {
	return text + "proxy: {caddy_admin: \"" + admin + "\"}\n"
}

// onlyContainer is the one container of the fake engine.
func onlyContainer(t *testing.T, f *fake.Engine) docker.Container {
	t.Helper()
	cs, err := f.List(context.Background(), pfx)
	if err != nil || len(cs) != 1 {
		t.Fatalf("list: %v, %v; want one container", cs, err)
	}
	return cs[0]
}

// TestProxyViewShowsWhatTheProxyRoutesPerContainer: with proxy.caddy_admin
// in the desired state, the snapshot says per container whether the proxy
// routes to it and its requests in flight, mapped by the container's
// address.
func TestProxyViewShowsWhatTheProxyRoutesPerContainer(t *testing.T) {
	caddy := newCaddyStandIn(t)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	c := onlyContainer(t, f)
	caddy.set(2, 0, c.Networks["bridge"], "10.9.9.9")
	h := newHarness(t, f, clock, withProxy(desiredYAML("web:v1", 1), caddy.URL), ModeWatch).start()

	snap := h.waitFor("the proxy's view", func(s Snapshot) bool {
		return s.Proxy != nil && len(s.Proxy.ByContainer) > 0
	})
	want := ProxyRoute{Routed: true, InFlight: 2}
	if got := snap.Proxy.ByContainer[c.ID]; got != want || snap.Proxy.Admin != caddy.URL || snap.Proxy.Err != "" {
		t.Errorf("proxy view %+v; want %s routed as %+v", snap.Proxy, c.ID, want)
	}

	caddy.set(0, 0, "10.9.9.9") // the proxy lets go of it
	h.waitFor("the container not routed", func(s Snapshot) bool {
		r, ok := s.Proxy.ByContainer[c.ID]
		return ok && !r.Routed
	})
}

// TestProxyFailureIsNotedOnce: a proxy that does not answer shows as the
// view's error on every snapshot, and as one note, not one per question.
func TestProxyFailureIsNotedOnce(t *testing.T) {
	caddy := newCaddyStandIn(t)
	caddy.fail(http.StatusServiceUnavailable)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, withProxy(desiredYAML("web:v1", 1), caddy.URL), ModeWatch).start()

	h.waitFor("the proxy asked three times", func(s Snapshot) bool {
		return caddy.questions() >= 3 && s.Proxy != nil && s.Proxy.Err != ""
	})
	snap := h.waitFor("a snapshot after that", func(Snapshot) bool { return true })
	if n := countNotes(snap, "proxy"); n != 1 || !strings.Contains(snap.Proxy.Err, "503") {
		t.Errorf("%d proxy notes, error %q; want one note and the 503", n, snap.Proxy.Err)
	}

	caddy.set(0, 0)
	h.waitFor("the proxy back", func(s Snapshot) bool { return s.Proxy.Err == "" && hasNote(s, "answers again") })
}

// TestNoProxyNoView: without proxy.caddy_admin the snapshot has no proxy.
func TestNoProxyNoView(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeWatch).start()
	if snap := h.waitFor("a listed state", func(s Snapshot) bool { return s.Resolved != nil }); snap.Proxy != nil {
		t.Errorf("Proxy = %+v without a proxy in the desired state", snap.Proxy)
	}
}

// TestDrainWaitsForTheProxyToLetGo is the roll gate through the proxy: the
// old container's drain (60s) does not end while the proxy routes to it,
// however often it is asked, nor once the engine reports it unhealthy, and
// ends as "released" once the proxy has let go of it (its dials refused,
// nothing in flight).
func TestDrainWaitsForTheProxyToLetGo(t *testing.T) {
	caddy := newCaddyStandIn(t)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	old := onlyContainer(t, f)
	ip := old.Networks["bridge"]
	caddy.set(0, 0, ip) // listed, idle, never refused: still in rotation
	var logs syncBuffer
	h := newHarness(t, f, clock, withProxy(desiredYAML("web:v2", 1, "drain: 60s"), caddy.URL), ModeAuto)
	h.opts.Log = slog.New(slog.NewTextHandler(&logs, nil))
	h.start()

	draining := func(s Snapshot) bool {
		return s.Running != nil && s.Running.Step.ContainerID == old.ID && s.Running.Drain != nil
	}
	h.drive("the old container draining", draining)
	asked := caddy.questions()
	snap := h.waitFor("the proxy asked again and again while it routes", func(s Snapshot) bool {
		return caddy.questions() >= asked+8 || !draining(s) || s.Running.Drain.Ended != ""
	})
	if !draining(snap) || snap.Running.Drain.Ended != "" || strings.Contains(logs.String(), "ended=released") {
		t.Fatalf("the drain ended while the proxy still routes to the container:\n%s\n%s", describe(snap), logs.String())
	}
	if slices.Contains(f.Mutations(), "stop:"+old.Name) {
		t.Fatalf("the old container was stopped while the proxy routes to it")
	}
	// The engine reports it unhealthy (its pre_stop would): the proxy
	// still routes to it, so the drain goes on.
	if err := f.SetHealth(old.ID, docker.HealthUnhealthy); err != nil {
		t.Fatal(err)
	}
	asked = caddy.questions()
	snap = h.waitFor("the proxy asked again after the container turned unhealthy", func(s Snapshot) bool {
		return caddy.questions() >= asked+8 || !draining(s) || s.Running.Drain.Ended != ""
	})
	if !draining(snap) || snap.Running.Drain.Ended != "" || slices.Contains(f.Mutations(), "stop:"+old.Name) {
		t.Fatalf("the drain ended on unhealthy while the proxy still routes to the container:\n%s\n%s", describe(snap), logs.String())
	}

	caddy.set(0, 1, ip) // it refuses the proxy, and nothing is in flight
	h.waitFor("the old container gone", func(s Snapshot) bool {
		for _, c := range s.Containers {
			if c.ID == old.ID {
				return false
			}
		}
		return s.Running == nil
	})
	if !strings.Contains(logs.String(), "ended=released") {
		t.Errorf("the drain did not end as released:\n%s", logs.String())
	}
}

// TestReleasedAsksTheProxy is the drain's question to the proxy, rule by
// rule.
func TestReleasedAsksTheProxy(t *testing.T) {
	const ip = "172.18.0.5"
	step := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", ContainerID: "old", Container: "web-0-old", Drain: 1e9}
	withAddr := []docker.Container{{ID: "old", State: docker.StateRunning, Networks: map[string]string{"front": ip}}}
	tests := []struct {
		rule       string
		containers []docker.Container
		lastView   string // what the loop's last view listed: "routed", "" nothing
		answer     func(*caddyStandIn)
		want       bool
		wantErr    bool
	}{
		{"listed and idle is still in rotation", withAddr, "routed",
			func(c *caddyStandIn) { c.set(0, 0, ip) }, false, false},
		{"requests in flight hold it", withAddr, "routed",
			func(c *caddyStandIn) { c.set(3, 1, ip) }, false, false},
		{"refused with nothing in flight is released", withAddr, "routed",
			func(c *caddyStandIn) { c.set(0, 1, ip) }, true, false},
		{"no longer listed, after it was routed, is released", withAddr, "routed",
			func(c *caddyStandIn) { c.set(0, 0, "172.18.0.9") }, true, false},
		{"never listed: not behind this proxy, not its drain to end", withAddr, "",
			func(c *caddyStandIn) { c.set(0, 0, "172.18.0.9") }, false, true},
		{"an unknown address is never released", []docker.Container{{ID: "old", State: docker.StateRunning}}, "routed",
			func(c *caddyStandIn) { c.set(0, 0) }, false, true},
		{"a proxy that fails says nothing", withAddr, "routed",
			func(c *caddyStandIn) { c.fail(http.StatusInternalServerError) }, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.rule, func(t *testing.T) {
			caddy := newCaddyStandIn(t)
			l := &loop{desire: desire{desired: &spec.Desired{Proxy: &spec.Proxy{CaddyAdmin: caddy.URL}}}, observer: observer{containers: tc.containers}}
			l.proxy.admin = caddy.URL
			if tc.lastView == "routed" {
				caddy.set(0, 0, ip)
				ups, err := proxy.Upstreams(context.Background(), nil, caddy.URL)
				if err != nil {
					t.Fatal(err)
				}
				l.proxy.ups = ups
			}
			released := l.released(step)
			if released == nil {
				t.Fatal("no Released for a draining roll with a proxy")
			}
			tc.answer(caddy)
			got, err := released(context.Background(), step)
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Errorf("released = %v, %v; want %v (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}

	l := &loop{desire: desire{desired: &spec.Desired{}}}
	if l.released(step) != nil {
		t.Error("a Released without a proxy in the desired state")
	}
	l.desired.Proxy = &spec.Proxy{CaddyAdmin: "http://127.0.0.1:1"}
	noDrain := step
	noDrain.Drain = 0
	if l.released(noDrain) != nil {
		t.Error("a Released for a step that drains nothing")
	}
}

// countNotes counts what s says containing substr: its facts' words and
// its replies.
func countNotes(s Snapshot, substr string) int {
	n := 0
	for _, f := range s.Facts {
		if strings.Contains(f.Text(), substr) {
			n++
		}
	}
	for _, note := range s.Notes {
		if strings.Contains(note.Text, substr) {
			n++
		}
	}
	return n
}

// syncBuffer is a bytes.Buffer for a logger written from the loop and read
// from the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
