package rollcallup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	_ "github.com/caddyserver/caddy/v2/modules/filestorage"
	_ "github.com/caddyserver/caddy/v2/modules/metrics"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
)

// testSource is a `dynamic rollcall` of workload web under a prefix of the
// test's own, routing to addrs (specs[i] the spec label of addrs[i]), as
// the admin API sees it; no engine behind it.
func testSource(t *testing.T, u Upstreams, addrs, specs []string) *Upstreams {
	t.Helper()
	u.Prefix = "t-" + strings.ReplaceAll(t.Name(), "/", "-")
	if u.Workload == "" {
		u.Workload = "web"
	}
	u.Network, u.Port = "front", "8080"
	w := &watcher{cfg: u, log: zap.NewNop(), addrs: addrs, specs: specs}
	key := "test|" + u.Prefix
	watchersMu.Lock()
	watchers[key] = &watcherRef{w: w, refs: 1}
	watchersMu.Unlock()
	u.w = w
	u.wl = acquireWorkload(u.Prefix, u.Workload)
	t.Cleanup(func() {
		releaseWorkload(u.wl)
		watchersMu.Lock()
		delete(watchers, key)
		watchersMu.Unlock()
	})
	return &u
}

// setMembers changes what the source routes to, as a relist does.
func (u *Upstreams) setMembers(addrs, specs []string) {
	u.w.mu.Lock()
	u.w.addrs, u.w.specs = addrs, specs
	u.w.mu.Unlock()
}

// caddyRequest is a request as Caddy's server hands it on: with its
// variables, where the pick of a request lives.
func caddyRequest(mod func(*http.Request)) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "http://example.com/", nil)
	if mod != nil {
		mod(r)
	}
	return r.WithContext(context.WithValue(r.Context(), caddyhttp.VarsCtxKey, map[string]any{}))
}

func dials(t *testing.T, u *Upstreams, r *http.Request) []string {
	t.Helper()
	ups, err := u.GetUpstreams(r)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, up := range ups {
		out = append(out, up.Dial)
	}
	return out
}

var (
	stableAddrs = []string{"10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"}
	canaryAddrs = []string{"10.0.0.9:8080"}
	allAddrs    = append(slices.Clone(stableAddrs), canaryAddrs...)
	allSpecs    = []string{"old", "old", "", "new"} // one container from before spec labels: stable
)

// sequence returns the values in turn, over and over.
func sequence(vs ...float64) func() float64 {
	var mu sync.Mutex
	i := 0
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		v := vs[i%len(vs)]
		i++
		return v
	}
}

// TestSplitSendsTheShareToTheCanary: with no split every routable
// container is routed to, as before cohorts; with one, a request goes
// either to the canary's containers or to the others, the canary's with
// the share.
func TestSplitSendsTheShareToTheCanary(t *testing.T) {
	u := testSource(t, Upstreams{}, allAddrs, allSpecs)
	if got := dials(t, u, caddyRequest(nil)); !slices.Equal(got, allAddrs) {
		t.Fatalf("no split: routes %v, want every container %v", got, allAddrs)
	}
	for _, share := range []float64{0, 0.05, 0.2, 0.5, 1} {
		t.Run(fmt.Sprint(share), func(t *testing.T) {
			u.random = rand.New(rand.NewPCG(1, 2)).Float64
			u.wl.setSplit("new", share, time.Now())
			const n = 20000
			onCanary := 0
			for range n {
				switch got := dials(t, u, caddyRequest(nil)); {
				case slices.Equal(got, canaryAddrs):
					onCanary++
				case !slices.Equal(got, stableAddrs):
					t.Fatalf("routes %v: want the canary's %v or the stable %v", got, canaryAddrs, stableAddrs)
				}
			}
			// 4 standard deviations of a binomial(n, share) either side.
			got, tol := float64(onCanary)/n, 0.0001+4*sqrt(share*(1-share)/n)
			if got < share-tol || got > share+tol {
				t.Errorf("share %v: %d of %d requests (%.4f) on the canary", share, onCanary, n, got)
			}
		})
	}
}

func sqrt(x float64) float64 {
	z := 1.0
	for range 50 {
		z -= (z*z - x) / (2 * z)
	}
	return z
}

// TestStickyCohortKeepsAClient: by cookie or client address, a client's
// cohort is the same on every request and stays canary as the share grows;
// the shares hold over many clients; a request without the cookie is
// random.
func TestStickyCohortKeepsAClient(t *testing.T) {
	tests := []struct {
		name   string
		by     Upstreams
		client func(i int) func(*http.Request)
	}{
		{"cookie", Upstreams{CohortBy: cohortByCookie, CohortCookie: "rc"}, func(i int) func(*http.Request) {
			return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "rc", Value: "client-" + strconv.Itoa(i)}) }
		}},
		{"client address", Upstreams{CohortBy: cohortByClientIP}, func(i int) func(*http.Request) {
			return func(r *http.Request) {
				r.RemoteAddr = fmt.Sprintf("10.%d.%d.%d:%d", i>>16&255, i>>8&255, i&255, 40000+i%1000)
			}
		}},
	}
	const clients = 2000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := testSource(t, tt.by, allAddrs, allSpecs)
			u.random = func() float64 { panic("a sticky decision asked for a random number") }
			onCanary := func(share float64) map[int]bool {
				u.wl.setSplit("new", share, time.Now())
				on := map[int]bool{}
				for i := range clients {
					first := slices.Equal(dials(t, u, caddyRequest(tt.client(i))), canaryAddrs)
					if again := slices.Equal(dials(t, u, caddyRequest(tt.client(i))), canaryAddrs); again != first {
						t.Fatalf("share %v: client %d on the canary %v, then %v", share, i, first, again)
					}
					if first {
						on[i] = true
					}
				}
				return on
			}
			low, high := onCanary(0.1), onCanary(0.5)
			for i := range low {
				if !high[i] {
					t.Errorf("client %d: on the canary at 10%%, off it at 50%%", i)
				}
			}
			for share, on := range map[float64]map[int]bool{0.1: low, 0.5: high} {
				got, tol := float64(len(on))/clients, 4*sqrt(share*(1-share)/clients)
				if got < share-tol || got > share+tol {
					t.Errorf("share %v: %d of %d clients on the canary", share, len(on), clients)
				}
			}
		})
	}

	t.Run("no cookie", func(t *testing.T) {
		u := testSource(t, Upstreams{CohortBy: cohortByCookie, CohortCookie: "rc"}, allAddrs, allSpecs)
		u.wl.setSplit("new", 0.5, time.Now())
		u.random = sequence(0.1, 0.9)
		if got := dials(t, u, caddyRequest(nil)); !slices.Equal(got, canaryAddrs) {
			t.Errorf("random 0.1 < share 0.5: routes %v, want the canary", got)
		}
		if got := dials(t, u, caddyRequest(nil)); !slices.Equal(got, stableAddrs) {
			t.Errorf("random 0.9 > share 0.5: routes %v, want the stable cohort", got)
		}
	})

	t.Run("Caddy's client address", func(t *testing.T) {
		// Behind a trusted proxy Caddy's client_ip is the client's, not
		// the connection's: the decision follows it. ip is one that
		// decides otherwise than the connection's address.
		u := testSource(t, Upstreams{CohortBy: cohortByClientIP}, allAddrs, allSpecs)
		u.wl.setSplit("new", 0.5, time.Now())
		conn, ip := "192.0.2.1", ""
		for i := 0; ip == ""; i++ {
			if c := "198.51.100." + strconv.Itoa(i); (unit(c) < 0.5) != (unit(conn) < 0.5) {
				ip = c
			}
		}
		r := caddyRequest(func(r *http.Request) { r.RemoteAddr = conn + ":1234" })
		caddyhttp.SetVar(r.Context(), caddyhttp.ClientIPVarKey, ip)
		if got, want := slices.Equal(dials(t, u, r), canaryAddrs), unit(ip) < 0.5; got != want {
			t.Errorf("client_ip %s from %s: on the canary %v, want %v", ip, conn, got, want)
		}
	})
}

// TestRetryKeepsTheDecision: every GetUpstreams of one request (lb_try
// retries) goes to the cohort of the first, with rollcall_cohorts' pick or
// without it; a request outside Caddy's server decides anew each time but
// is still routed.
func TestRetryKeepsTheDecision(t *testing.T) {
	u := testSource(t, Upstreams{}, allAddrs, allSpecs)
	u.wl.setSplit("new", 0.5, time.Now())

	tries := func(r *http.Request) (out []bool) {
		for range 4 {
			got := dials(t, u, r)
			if len(got) == 0 {
				t.Fatal("routed to nothing")
			}
			out = append(out, slices.Equal(got, canaryAddrs))
		}
		return out
	}
	tests := []struct {
		name string
		req  func() *http.Request
		want []bool
	}{
		{"in Caddy, without rollcall_cohorts", func() *http.Request { return caddyRequest(nil) }, []bool{true, true, true, true}},
		{"with rollcall_cohorts' pick", func() *http.Request {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			return r.WithContext(context.WithValue(r.Context(), pickKey{}, new(pick)))
		}, []bool{true, true, true, true}},
		{"outside Caddy", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/", nil) }, []bool{true, false, true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u.random = sequence(0.1, 0.9) // canary, then stable, if asked
			if got := tries(tt.req()); !slices.Equal(got, tt.want) {
				t.Errorf("on the canary per try: %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("split changed between tries", func(t *testing.T) {
		u.random = sequence(0.4, 0.9)
		r := caddyRequest(nil)
		first := dials(t, u, r)
		u.wl.setSplit("new", 0.3, time.Now()) // 0.4 would be stable now
		if got := dials(t, u, r); !slices.Equal(got, first) || !slices.Equal(first, canaryAddrs) {
			t.Errorf("routes %v then %v: want the canary both times", first, got)
		}
		// Another canary: decided anew (0.9, stable).
		u.setMembers(allAddrs, []string{"old", "old", "", "newer"})
		u.wl.setSplit("newer", 0.5, time.Now())
		if got := dials(t, u, r); !slices.Equal(got, stableAddrs) {
			t.Errorf("a new spec: routes %v, want a new decision, the stable cohort", got)
		}
	})
}

// TestEmptyCohortFallsBack: a request never goes to a cohort with no
// routable container while the other has one, and is counted where it
// went.
func TestEmptyCohortFallsBack(t *testing.T) {
	tests := []struct {
		name        string
		specs       []string
		share       float64
		want        []string
		wantCounted cohort
	}{
		{"no canary container, share 1", []string{"old", "old", "old", "old"}, 1, allAddrs, stable},
		{"every container canary, share 0", []string{"new", "new", "new", "new"}, 0, allAddrs, canary},
		{"both there, share 1", allSpecs, 1, canaryAddrs, canary},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := testSource(t, Upstreams{}, allAddrs, tt.specs)
			u.wl.setSplit("new", tt.share, time.Now())
			p := new(pick)
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r = r.WithContext(context.WithValue(r.Context(), pickKey{}, p))
			if got := dials(t, u, r); !slices.Equal(got, tt.want) {
				t.Errorf("routes %v, want %v", got, tt.want)
			}
			if p.routed != tt.wantCounted {
				t.Errorf("counted in the %v cohort, want %v", p.routed, tt.wantCounted)
			}
		})
	}

	t.Run("canary gone between tries", func(t *testing.T) {
		u := testSource(t, Upstreams{}, allAddrs, allSpecs)
		u.wl.setSplit("new", 1, time.Now())
		r := caddyRequest(nil)
		if got := dials(t, u, r); !slices.Equal(got, canaryAddrs) {
			t.Fatalf("routes %v, want the canary", got)
		}
		u.setMembers(stableAddrs, allSpecs[:3]) // the canary turned unhealthy
		if got := dials(t, u, r); !slices.Equal(got, stableAddrs) {
			t.Errorf("retry with no canary container: routes %v, want the stable cohort", got)
		}
	})
}

// fakeClock advances by the next of its steps on every reading after
// the first.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	steps []time.Duration
	read  bool
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read && len(c.steps) > 0 {
		c.t, c.steps = c.t.Add(c.steps[0]), c.steps[1:]
	}
	c.read = !c.read
	return c.t
}

// TestHandlerCountsIntoTheCohort: rollcall_cohorts counts each request
// where `dynamic rollcall` routed it: 5xx written or returned as errors,
// failed dials as errors and dial failures, latencies in their buckets;
// a request no rollcall source routed is not counted.
func TestHandlerCountsIntoTheCohort(t *testing.T) {
	u := testSource(t, Upstreams{}, allAddrs, allSpecs)
	u.wl.setSplit("new", 0.5, time.Now())

	type req struct {
		canary  bool
		status  int   // written, or 0
		err     error // returned
		took    time.Duration
		proxied bool // went through dynamic rollcall
	}
	dialErr := caddyhttp.Error(http.StatusBadGateway, reverseproxy.NewDialError(errors.New("dial tcp 10.0.0.9:8080: connect: connection refused")))
	reqs := []req{
		{canary: true, status: 200, took: 3 * time.Millisecond, proxied: true},                    // bucket ≤5
		{canary: true, status: 503, took: 700 * time.Microsecond, proxied: true},                  // ≤1, a 5xx written
		{canary: true, err: dialErr, took: 1500 * time.Millisecond, proxied: true},                // ≤2000, dial
		{canary: true, status: 404, took: 20 * time.Millisecond, proxied: true},                   // ≤20 exactly, not an error
		{canary: false, status: 200, took: 12 * time.Second, proxied: true},                       // +Inf
		{canary: false, err: caddyhttp.Error(504, errors.New("timeout")), took: 0, proxied: true}, // ≤1
		{canary: false, err: errors.New("plain"), took: 2 * time.Millisecond, proxied: true},      // a plain error is a 500
		{canary: false, err: caddyhttp.Error(403, errors.New("no")), took: 0, proxied: true},      // not an error
		{canary: false, status: 500, took: time.Millisecond},                                      // not proxied: not counted
	}
	clock := &fakeClock{t: time.Unix(1e9, 0)}
	h := &Cohorts{now: clock.now}
	for i, rq := range reqs {
		clock.steps = append(clock.steps, rq.took)
		u.random = func() float64 {
			if rq.canary {
				return 0.1
			}
			return 0.9
		}
		next := caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			if rq.proxied {
				dials(t, u, r)
			}
			if rq.status != 0 {
				w.WriteHeader(rq.status)
			}
			return rq.err
		})
		r := caddyRequest(nil)
		if i%2 == 1 { // outside Caddy's server: the pick goes in the context
			r = httptest.NewRequest(http.MethodGet, "/", nil)
		}
		if err := h.ServeHTTP(httptest.NewRecorder(), r, next); !errors.Is(err, rq.err) {
			t.Fatalf("request %d: handler returned %v, want what the chain returned, %v", i, err, rq.err)
		}
	}

	s := u.wl.status()
	// bounds: 1 2 5 10 20 50 100 200 500 1000 2000 5000 10000 +Inf
	want := map[string]struct {
		requests, errors, dials int64
		counts                  []int64
		sumMs                   float64
	}{
		"canary": {4, 2, 1, []int64{1, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0}, 3 + 0.7 + 1500 + 20},
		"stable": {4, 2, 0, []int64{2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 12000 + 2},
	}
	for name, got := range map[string]cohortStatus{"canary": s.Cohorts.Canary, "stable": s.Cohorts.Stable} {
		w := want[name]
		if got.Requests != w.requests || got.Errors != w.errors || got.DialFailures != w.dials ||
			!slices.Equal(got.Latency.Counts, w.counts) || got.LatencySumMs != w.sumMs {
			t.Errorf("%s: %d requests, %d errors, %d dial failures, latency %v sum %v ms; want %d, %d, %d, %v, %v",
				name, got.Requests, got.Errors, got.DialFailures, got.Latency.Counts, got.LatencySumMs,
				w.requests, w.errors, w.dials, w.counts, w.sumMs)
		}
		if !slices.Equal(got.Latency.Bounds, boundsMs[:]) {
			t.Errorf("%s: bounds %v", name, got.Latency.Bounds)
		}
	}

	// Only the share changes: the counters go on. Another spec: new ones.
	since := s.Split.Since
	u.wl.setSplit("new", 0.25, since.Add(time.Hour))
	if s := u.wl.status(); s.Cohorts.Canary.Requests != 4 || !s.Split.Since.Equal(since) || s.Split.Share != 0.25 {
		t.Errorf("share changed: %d canary requests since %v, share %v; want 4, %v, 0.25", s.Cohorts.Canary.Requests, s.Split.Since, s.Split.Share, since)
	}
	u.wl.setSplit("newer", 0.25, since.Add(time.Hour))
	if s := u.wl.status(); s.Cohorts.Canary.Requests != 0 || s.Cohorts.Stable.Requests != 0 || !s.Split.Since.After(since) {
		t.Errorf("spec changed: %d canary and %d stable requests since %v; want 0, 0, a new since", s.Cohorts.Canary.Requests, s.Cohorts.Stable.Requests, s.Split.Since)
	}
}

// TestHandlerMetrics: the counters are in Caddy's metrics registry by
// workload and cohort; registering again (a reload, a second handler) is
// fine.
func TestHandlerMetrics(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	for range 2 {
		if err := registerMetrics(reg); err != nil {
			t.Fatalf("register: %v", err)
		}
	}
	value := func(name, workload, cohort string) float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["workload"] == workload && labels["cohort"] == cohort {
					if h := m.GetHistogram(); h != nil {
						return float64(h.GetSampleCount())
					}
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	u := testSource(t, Upstreams{Workload: "metrics-web"}, allAddrs, allSpecs) // the metrics' labels have no prefix
	u.wl.setSplit("new", 1, time.Now())
	names := []string{"rollcall_cohort_requests_total", "rollcall_cohort_errors_total", "rollcall_cohort_dial_failures_total", "rollcall_cohort_request_duration_seconds"}
	before := map[string]float64{} // a metric is never reset: another run of the test counted too
	for _, n := range names {
		before[n] = value(n, "metrics-web", "canary")
	}
	h := &Cohorts{}
	for _, status := range []int{200, 502} {
		h.ServeHTTP(httptest.NewRecorder(), caddyRequest(nil), caddyhttp.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
			dials(t, u, r)
			if status == 502 {
				return caddyhttp.Error(status, reverseproxy.NewDialError(errors.New("refused")))
			}
			return nil
		}))
	}
	for i, want := range []float64{2, 1, 1, 2} {
		if got := value(names[i], "metrics-web", "canary") - before[names[i]]; got != want {
			t.Errorf("%s{workload=metrics-web,cohort=canary} went up by %v, want %v", names[i], got, want)
		}
	}
}

func adminDo(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if err := serveCohorts(rec, r); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return rec.Code, rec.Body.Bytes()
}

// TestAdminCohorts: GET lists every workload with a source, its split and
// each cohort's containers and counters; PUT sets and changes the split,
// refusing a bad one with a 400 that says why; DELETE removes it; a
// workload with no source is a 404 that says so.
func TestAdminCohorts(t *testing.T) {
	u := testSource(t, Upstreams{}, allAddrs, allSpecs)
	path := "/rollcall/cohorts/" + u.Prefix + "/web"

	find := func() map[string]any {
		code, body := adminDo(t, http.MethodGet, "/rollcall/cohorts", "")
		if code != http.StatusOK {
			t.Fatalf("GET: %d %s", code, body)
		}
		var all []map[string]any
		if err := json.Unmarshal(body, &all); err != nil {
			t.Fatal(err)
		}
		for _, w := range all {
			if w["prefix"] == u.Prefix && w["workload"] == "web" {
				return w
			}
		}
		t.Fatalf("GET %s: no element for %s/web", body, u.Prefix)
		return nil
	}
	containers := func(w map[string]any, c string) []string {
		var out []string
		for _, a := range w["cohorts"].(map[string]any)[c].(map[string]any)["containers"].([]any) {
			out = append(out, a.(string))
		}
		return out
	}

	w := find()
	if w["split"] != nil || !slices.Equal(containers(w, "stable"), allAddrs) || len(containers(w, "canary")) != 0 {
		t.Errorf("no split: %v; want split null, every container stable", w)
	}

	code, body := adminDo(t, http.MethodPut, path, `{"spec":"new","share":0.05}`)
	if code != http.StatusOK {
		t.Fatalf("PUT: %d %s", code, body)
	}
	w = find()
	split, _ := w["split"].(map[string]any)
	if split["spec"] != "new" || split["share"] != 0.05 || !slices.Equal(containers(w, "canary"), canaryAddrs) || !slices.Equal(containers(w, "stable"), stableAddrs) {
		t.Errorf("after PUT: %v", w)
	}
	if _, err := time.Parse(time.RFC3339Nano, split["since"].(string)); err != nil {
		t.Errorf("since: %v", err)
	}
	stableC := w["cohorts"].(map[string]any)["stable"].(map[string]any)
	lat := stableC["latency_ms"].(map[string]any)
	if len(lat["bounds"].([]any)) != len(boundsMs) || len(lat["counts"].([]any)) != len(boundsMs)+1 {
		t.Errorf("latency_ms: %v: want %d bounds and one count more", lat, len(boundsMs))
	}
	for _, k := range []string{"requests", "errors", "dial_failures", "latency_sum_ms"} {
		if _, ok := stableC[k].(float64); !ok {
			t.Errorf("stable cohort has no number %q: %v", k, stableC)
		}
	}

	bad := []struct{ name, body string }{
		{"empty", ``},
		{"not JSON", `spec=new`},
		{"unknown field", `{"spec":"new","share":0.1,"weight":3}`},
		{"no spec", `{"share":0.1}`},
		{"empty spec", `{"spec":"","share":0.1}`},
		{"no share", `{"spec":"new"}`},
		{"share below 0", `{"spec":"new","share":-0.01}`},
		{"share above 1", `{"spec":"new","share":1.5}`},
		{"share a string", `{"spec":"new","share":"5%"}`},
		{"two values", `{"spec":"new","share":0.1}{"spec":"x","share":1}`},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			code, body := adminDo(t, http.MethodPut, path, b.body)
			var e cohortsError
			json.Unmarshal(body, &e)
			if code != http.StatusBadRequest || e.Reason != "bad_split" || e.Error == "" {
				t.Errorf("PUT %s: %d %s; want 400, reason bad_split, a message", b.body, code, body)
			}
		})
	}
	if w := find(); w["split"].(map[string]any)["share"] != 0.05 {
		t.Errorf("a refused PUT changed the split: %v", w["split"])
	}

	for _, tt := range []struct {
		method, path string
		code         int
		reason       string
	}{
		{http.MethodPut, "/rollcall/cohorts/" + u.Prefix + "/nosuch", 404, "no_source"},
		{http.MethodDelete, "/rollcall/cohorts/nosuch/web", 404, "no_source"},
		{http.MethodPut, "/rollcall/cohorts/" + u.Prefix, 400, "bad_path"},
		{http.MethodPut, path + "/extra", 400, "bad_path"},
		{http.MethodPost, path, 405, "method"},
		{http.MethodPut, "/rollcall/cohorts", 405, "method"},
	} {
		code, body := adminDo(t, tt.method, tt.path, `{"spec":"new","share":0.1}`)
		var e cohortsError
		json.Unmarshal(body, &e)
		if code != tt.code || e.Reason != tt.reason {
			t.Errorf("%s %s: %d %s; want %d, reason %s", tt.method, tt.path, code, body, tt.code, tt.reason)
		}
	}

	code, body = adminDo(t, http.MethodGet, path, "")
	var one workloadStatus
	if err := json.Unmarshal(body, &one); code != http.StatusOK || err != nil || one.Split == nil || one.Split.Spec != "new" {
		t.Errorf("GET %s: %d %s", path, code, body)
	}

	code, body = adminDo(t, http.MethodDelete, path, "")
	if code != http.StatusOK {
		t.Fatalf("DELETE: %d %s", code, body)
	}
	if w := find(); w["split"] != nil || !slices.Equal(containers(w, "stable"), allAddrs) {
		t.Errorf("after DELETE: %v; want no split, every container stable", w)
	}
}

// TestCaddyfile: cohort_by in `dynamic rollcall`, and rollcall_cohorts as
// a directive, ordered before reverse_proxy by the global option.
func TestCaddyfile(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    Upstreams
		wantErr bool
	}{
		{in: "rollcall {\n workload web\n cohort_by cookie rc_cohort\n}", want: Upstreams{Workload: "web", CohortBy: "cookie", CohortCookie: "rc_cohort"}},
		{in: "rollcall {\n cohort_by client_ip\n}", want: Upstreams{CohortBy: "client_ip"}},
		{in: "rollcall {\n cohort_by random\n}", want: Upstreams{CohortBy: "random"}},
		{in: "rollcall {\n cohort_by cookie\n}", wantErr: true},
		{in: "rollcall {\n cohort_by client_ip x\n}", wantErr: true},
		{in: "rollcall {\n cohort_by header X\n}", wantErr: true},
		{in: "rollcall {\n workload web extra\n}", wantErr: true},
	} {
		var got Upstreams
		err := got.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tt.in))
		if (err != nil) != tt.wantErr || (err == nil && (got.Workload != tt.want.Workload || got.CohortBy != tt.want.CohortBy || got.CohortCookie != tt.want.CohortCookie)) {
			t.Errorf("%q: %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
	for _, u := range []Upstreams{
		{Workload: "web", Network: "n", Port: "1", CohortBy: "header"},
		{Workload: "web", Network: "n", Port: "1", CohortBy: "cookie"},
		{Workload: "web", Network: "n", Port: "1", CohortCookie: "rc"},
	} {
		if err := u.Provision(caddy.Context{}); err == nil {
			t.Errorf("Provision(%+v): no error", u)
		}
	}

	site := ":8080 {\n\trollcall_cohorts\n\treverse_proxy {\n\t\tdynamic rollcall {\n\t\t\tworkload web\n\t\t\tnetwork front\n\t\t\tport 8080\n\t\t}\n\t}\n}\n"
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, _, err := adapter.Adapt([]byte("{\n\torder rollcall_cohorts before reverse_proxy\n}\n"+site), nil)
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	var cfg any
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	var handlers []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if h, ok := v["handler"].(string); ok {
				handlers = append(handlers, h)
			}
			for _, k := range []string{"apps", "http", "servers", "srv0", "routes", "handle"} {
				walk(v[k])
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(cfg)
	if i := slices.Index(handlers, "rollcall_cohorts"); i < 0 || i > slices.Index(handlers, "reverse_proxy") {
		t.Errorf("handlers in order %v: want rollcall_cohorts before reverse_proxy\n%s", handlers, out)
	}
	if _, _, err := adapter.Adapt([]byte(site), nil); err == nil {
		t.Error("rollcall_cohorts outside a route with no order option: adapted, want an error")
	}
	if _, _, err := adapter.Adapt([]byte("{\n\torder rollcall_cohorts before reverse_proxy\n}\n:8080 {\n\trollcall_cohorts extra\n}\n"), nil); err == nil {
		t.Error("rollcall_cohorts with an argument: adapted, want an error")
	}
}

// TestThroughCaddy runs Caddy itself: reverse_proxy with `dynamic
// rollcall` (its engine a fake on a socket, its containers servers on
// loopback addresses) behind rollcall_cohorts. The split is set on the
// admin API; the canary's 500s, and its refused dials, are counted in its
// cohort, and the stable cohort serves with no error.
func TestThroughCaddy(t *testing.T) {
	for _, env := range []string{"HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME"} {
		t.Setenv(env, t.TempDir())
	}
	// Two containers on one port: 127.0.0.2 runs spec old, 127.0.0.3 spec
	// new, which fails every request to /fail; nothing listens at 127.0.0.4.
	ln2, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatalf("a second loopback address: %v", err)
	}
	port := strconv.Itoa(ln2.Addr().(*net.TCPAddr).Port)
	ln3, err := net.Listen("tcp", "127.0.0.3:"+port)
	if err != nil {
		t.Fatal(err)
	}
	serve := func(ln net.Listener, name string) {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name == "new" && r.URL.Path == "/fail" {
				http.Error(w, "canary fails", http.StatusInternalServerError)
				return
			}
			io.WriteString(w, name)
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
	}
	serve(ln2, "old")
	serve(ln3, "new")

	labelled := func(ip, spec string) string {
		return `{"Id":"` + ip + `","Labels":{"e2e.managed":"true","e2e.workload":"web","e2e.spec":"` + spec + `"},` +
			`"NetworkSettings":{"Networks":{"front":{"IPAddress":"` + ip + `"}}}}`
	}
	eng := &fakeEngine{events: make(chan string)}
	eng.set("["+labelled("127.0.0.2", "old")+","+labelled("127.0.0.3", "new")+"]", false)
	sock := filepath.Join(t.TempDir(), "docker.sock")
	sl, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	engSrv := httptest.NewUnstartedServer(eng)
	engSrv.Listener = sl
	engSrv.Start()
	t.Cleanup(engSrv.Close) // after Caddy's stop, which ends the event stream

	free := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return l.Addr().String()
	}
	adminAddr, siteAddr := free(), free()
	cfg := map[string]any{
		"admin":   map[string]any{"listen": adminAddr, "config": map[string]any{"persist": false}},
		"logging": map[string]any{"logs": map[string]any{"default": map[string]any{"writer": map[string]any{"output": "discard"}}}},
		"storage": map[string]any{"module": "file_system", "root": t.TempDir()},
		"apps": map[string]any{"http": map[string]any{"servers": map[string]any{"e2e": map[string]any{
			"listen":          []string{siteAddr},
			"automatic_https": map[string]any{"disable": true},
			"routes": []any{map[string]any{"handle": []any{
				map[string]any{"handler": "rollcall_cohorts"},
				map[string]any{
					"handler": "reverse_proxy",
					"dynamic_upstreams": map[string]any{
						"source": "rollcall", "workload": "web", "prefix": "e2e", "network": "front", "port": port,
						"socket": sock, "refresh": "50ms",
					},
					"load_balancing": map[string]any{"try_duration": "300ms", "try_interval": "20ms"},
					"transport":      map[string]any{"protocol": "http", "dial_timeout": "200ms"},
				},
			}}},
		}}}},
	}
	raw, _ := json.Marshal(cfg)
	if err := caddy.Load(raw, true); err != nil {
		t.Fatalf("caddy: %v", err)
	}
	t.Cleanup(func() { caddy.Stop() })

	admin := func(method, path, body string) (int, []byte) {
		req, _ := http.NewRequest(method, "http://"+adminAddr+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	web := func(path string) (int, string) {
		resp, err := http.Get("http://" + siteAddr + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cohorts := func() workloadStatus {
		code, body := admin(http.MethodGet, "/rollcall/cohorts/e2e/web", "")
		var s workloadStatus
		if err := json.Unmarshal(body, &s); code != http.StatusOK || err != nil {
			t.Fatalf("GET cohorts: %d %s %v", code, body, err)
		}
		return s
	}
	for deadline := time.Now().Add(5 * time.Second); len(cohorts().Cohorts.Stable.Containers) < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the source never listed both containers: %+v", cohorts())
		}
	}

	if code, body := admin(http.MethodPut, "/rollcall/cohorts/e2e/web", `{"spec":"new","share":1}`); code != http.StatusOK {
		t.Fatalf("PUT split: %d %s", code, body)
	}
	for range 5 {
		if code, body := web("/fail"); code != http.StatusInternalServerError {
			t.Fatalf("share 1: %d %q, want the canary's 500", code, body)
		}
	}
	if code, body := admin(http.MethodPut, "/rollcall/cohorts/e2e/web", `{"spec":"new","share":0}`); code != http.StatusOK {
		t.Fatalf("PUT share 0: %d %s", code, body)
	}
	for range 3 {
		if code, body := web("/fail"); code != http.StatusOK || body != "old" {
			t.Fatalf("share 0: %d %q, want the stable container's answer", code, body)
		}
	}
	s := cohorts()
	if c := s.Cohorts.Canary; c.Requests != 5 || c.Errors != 5 || c.DialFailures != 0 || !slices.Equal(c.Containers, []string{"127.0.0.3:" + port}) {
		t.Errorf("canary: %+v; want 5 requests, 5 errors, on 127.0.0.3", c)
	}
	if c := s.Cohorts.Stable; c.Requests != 3 || c.Errors != 0 {
		t.Errorf("stable: %+v; want 3 requests, no error", c)
	}

	// The canary now refuses: every request to it is a failed dial, once
	// its retries are spent.
	eng.set("["+labelled("127.0.0.2", "old")+","+labelled("127.0.0.4", "new")+"]", false)
	for deadline := time.Now().Add(5 * time.Second); !slices.Equal(cohorts().Cohorts.Canary.Containers, []string{"127.0.0.4:" + port}); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the source never listed the refusing canary: %+v", cohorts())
		}
	}
	admin(http.MethodPut, "/rollcall/cohorts/e2e/web", `{"spec":"new","share":1}`)
	// Caddy's own metrics count it too (never reset, and the tests above
	// count into workload web as well: compare with before).
	const dialMetric = `rollcall_cohort_dial_failures_total{cohort="canary",workload="web"}`
	metric := func() float64 {
		code, body := admin(http.MethodGet, "/metrics", "")
		if code != http.StatusOK {
			t.Fatalf("GET /metrics: %d", code)
		}
		for _, l := range strings.Split(string(body), "\n") {
			if v, ok := strings.CutPrefix(l, dialMetric+" "); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("/metrics: %q: %v", l, err)
				}
				return f
			}
		}
		t.Fatalf("/metrics has no %s:\n%s", dialMetric, body)
		return 0
	}
	dialsBefore := metric()
	if code, _ := web("/"); code != http.StatusBadGateway {
		t.Errorf("refused canary: %d, want 502", code)
	}
	if c := cohorts().Cohorts.Canary; c.Requests != 6 || c.Errors != 6 || c.DialFailures != 1 {
		t.Errorf("canary after a refused dial: %+v; want 6 requests, 6 errors, 1 dial failure", c)
	}

	if got := metric() - dialsBefore; got != 1 {
		t.Errorf("Caddy's /metrics: %s went up by %v, want 1", dialMetric, got)
	}

	if code, body := admin(http.MethodDelete, "/rollcall/cohorts/e2e/web", ""); code != http.StatusOK {
		t.Fatalf("DELETE split: %d %s", code, body)
	}
	if s := cohorts(); s.Split != nil || len(s.Cohorts.Stable.Containers) != 2 || s.Cohorts.Canary.Requests != 0 {
		t.Errorf("after DELETE: %+v; want no split, both containers stable, new counters", s)
	}
}
