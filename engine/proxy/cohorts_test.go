package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

var bounds = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

// counts puts n at the bucket indexes of at (index: count), the rest 0.
func counts(at map[int]int64) []int64 {
	c := make([]int64, len(bounds)+1)
	for i, n := range at {
		c[i] = n
	}
	return c
}

// with is c changed by f (c's slices are not shared).
func with(c Cohort, f func(*Cohort)) Cohort {
	c.Latency.Counts = append([]int64(nil), c.Latency.Counts...)
	f(&c)
	return c
}

func TestCohortSub(t *testing.T) {
	earlier := Cohort{Requests: 100, Errors: 3, DialFailures: 1, LatencySum: 2 * time.Second,
		Latency: Histogram{Bounds: bounds, Counts: counts(map[int]int64{2: 60, 3: 40})}}
	now := Cohort{Containers: []string{"172.18.0.5:8080"}, Requests: 150, Errors: 5, DialFailures: 1, LatencySum: 3 * time.Second,
		Latency: Histogram{Bounds: bounds, Counts: counts(map[int]int64{2: 80, 3: 60, 13: 10})}}
	tests := []struct {
		name         string
		now, earlier Cohort
		want         Cohort
	}{
		{"the window between two readings", now, earlier, Cohort{Containers: now.Containers, Requests: 50, Errors: 2, LatencySum: time.Second,
			Latency: Histogram{Bounds: bounds, Counts: counts(map[int]int64{2: 20, 3: 20, 13: 10})}}},
		{"no earlier reading", now, Cohort{}, now},
		{"requests went backwards: reset", with(now, func(c *Cohort) { c.Requests = 140 }), now, with(now, func(c *Cohort) { c.Requests = 140 })},
		{"errors went backwards: reset", with(now, func(c *Cohort) { c.Errors = 4 }), now, with(now, func(c *Cohort) { c.Errors = 4 })},
		{"dial failures went backwards: reset", with(now, func(c *Cohort) { c.DialFailures = 0 }), now, with(now, func(c *Cohort) { c.DialFailures = 0 })},
		{"latency sum went backwards: reset", with(now, func(c *Cohort) { c.LatencySum = time.Second }), now, with(now, func(c *Cohort) { c.LatencySum = time.Second })},
		{"a bucket went backwards: reset", with(now, func(c *Cohort) { c.Latency.Counts = counts(map[int]int64{2: 79, 3: 61, 13: 10}) }), now,
			with(now, func(c *Cohort) { c.Latency.Counts = counts(map[int]int64{2: 79, 3: 61, 13: 10}) })},
		{"other bounds: not comparable, reset", now, Cohort{Latency: Histogram{Bounds: []float64{1, 10}, Counts: []int64{0, 0, 0}}}, now},
		{"same reading: nothing in between", now, now, Cohort{Containers: now.Containers, Latency: Histogram{Bounds: bounds, Counts: counts(nil)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.now.Sub(tt.earlier); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Sub =\n %+v\nwant\n %+v", got, tt.want)
			}
		})
	}
	// Sub never changes the readings it is given.
	if !reflect.DeepEqual(now.Latency.Counts, counts(map[int]int64{2: 80, 3: 60, 13: 10})) {
		t.Errorf("Sub changed its receiver's counts: %v", now.Latency.Counts)
	}
}

func TestCohortErrorRate(t *testing.T) {
	tests := []struct {
		c    Cohort
		want float64
	}{
		{Cohort{}, 0},
		{Cohort{Requests: 200}, 0},
		{Cohort{Requests: 200, Errors: 10}, 0.05},
		{Cohort{Requests: 3, Errors: 3}, 1},
	}
	for _, tt := range tests {
		if got := tt.c.ErrorRate(); got != tt.want {
			t.Errorf("%d errors of %d requests: ErrorRate = %v, want %v", tt.c.Errors, tt.c.Requests, got, tt.want)
		}
	}
}

func TestHistogramQuantile(t *testing.T) {
	ms := func(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }
	tests := []struct {
		name   string
		counts []int64
		q      float64
		want   time.Duration
	}{
		{"no counts", counts(nil), 0.95, 0},
		{"no buckets at all", nil, 0.5, 0},
		{"median inside one bucket (2, 5]", counts(map[int]int64{2: 10}), 0.5, ms(3.5)},
		{"p75 inside one bucket (2, 5]", counts(map[int]int64{2: 100}), 0.75, ms(4.25)},
		{"first bucket starts at 0", counts(map[int]int64{0: 4}), 0.5, ms(0.5)},
		// 90 in (5,10], 10 in (100,200]: rank 95 is 5 of 10 into (100,200].
		{"p95 across buckets", counts(map[int]int64{3: 90, 7: 10}), 0.95, ms(150)},
		{"p50 across buckets", counts(map[int]int64{3: 80, 7: 20}), 0.5, ms(8.125)}, // 50 of 80 into (5,10]
		{"rank on a bucket's edge", counts(map[int]int64{3: 50, 7: 50}), 0.5, ms(10)},
		{"empty buckets between are skipped", counts(map[int]int64{0: 1, 12: 1}), 1, ms(10000)},
		{"above every bound: the lower bound", counts(map[int]int64{13: 5}), 0.95, ms(10000)},
		{"q 0: the lowest bucket's lower bound", counts(map[int]int64{4: 3, 5: 3}), 0, ms(10)},
		{"q 1: the highest bucket's upper bound", counts(map[int]int64{4: 3, 5: 3}), 1, ms(50)},
		{"q above 1 is 1", counts(map[int]int64{4: 3, 5: 3}), 7, ms(50)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Histogram{Bounds: bounds, Counts: tt.counts}
			if got := h.Quantile(tt.q); got != tt.want {
				t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

// cohortsAnswer is what rollcall's Caddy module answers on GET
// /rollcall/cohorts: one workload with a split, one without.
const cohortsAnswer = `[
 {"prefix":"rollcall","workload":"api","split":null,
  "cohorts":{"stable":{"containers":["172.18.0.7:8080"],"requests":7,"errors":0,"dial_failures":0,
    "latency_ms":{"bounds":[1,2,5,10,20,50,100,200,500,1000,2000,5000,10000],"counts":[7,0,0,0,0,0,0,0,0,0,0,0,0,0]},"latency_sum_ms":3.5},
   "canary":{"containers":[],"requests":0,"errors":0,"dial_failures":0,
    "latency_ms":{"bounds":[1,2,5,10,20,50,100,200,500,1000,2000,5000,10000],"counts":[0,0,0,0,0,0,0,0,0,0,0,0,0,0]},"latency_sum_ms":0}}},
 {"prefix":"rollcall","workload":"web","split":{"spec":"abc123","share":0.05,"since":"2026-05-01T10:00:00.123456789Z"},
  "cohorts":{"stable":{"containers":["172.18.0.3:8080","172.18.0.4:8080"],"requests":1900,"errors":2,"dial_failures":0,
    "latency_ms":{"bounds":[1,2,5,10,20,50,100,200,500,1000,2000,5000,10000],"counts":[0,100,1700,100,0,0,0,0,0,0,0,0,0,0]},"latency_sum_ms":6650.25},
   "canary":{"containers":["172.18.0.5:8080"],"requests":100,"errors":10,"dial_failures":1,
    "latency_ms":{"bounds":[1,2,5,10,20,50,100,200,500,1000,2000,5000,10000],"counts":[0,0,50,40,0,0,0,0,0,0,0,0,0,10]},"latency_sum_ms":120500}}}
]`

// fakeCohorts is rollcall's cohorts module as far as the client sees it:
// it serves cohortsAnswer and records the splits set.
type fakeCohorts struct {
	mu    sync.Mutex
	calls []string // "PUT /rollcall/cohorts/rollcall/web {...}"
}

func (f *fakeCohorts) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(body)))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/rollcall/cohorts" && r.Method == http.MethodGet:
		io.WriteString(w, cohortsAnswer)
	case r.URL.Path == "/rollcall/cohorts/rollcall/web":
		io.WriteString(w, `{"prefix":"rollcall","workload":"web"}`)
	case strings.HasPrefix(r.URL.Path, "/rollcall/cohorts/"):
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":"no dynamic rollcall source for workload \"x\" of prefix \"rollcall\"","reason":"no_source"}`)
	default:
		http.NotFound(w, r)
	}
}

func TestCohortsReadsTheModulesAnswer(t *testing.T) {
	srv := httptest.NewServer(&fakeCohorts{})
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	got, err := Cohorts(ctx, srv.Client(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	h := func(c ...int64) Histogram { return Histogram{Bounds: bounds, Counts: c} }
	want := []WorkloadCohorts{
		{Prefix: "rollcall", Workload: "api",
			Stable: Cohort{Containers: []string{"172.18.0.7:8080"}, Requests: 7, Latency: h(7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), LatencySum: 3500 * time.Microsecond},
			Canary: Cohort{Containers: []string{}, Latency: h(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)}},
		{Prefix: "rollcall", Workload: "web",
			Split:  &Split{Spec: "abc123", Share: 0.05, Since: time.Date(2026, 5, 1, 10, 0, 0, 123456789, time.UTC)},
			Stable: Cohort{Containers: []string{"172.18.0.3:8080", "172.18.0.4:8080"}, Requests: 1900, Errors: 2, Latency: h(0, 100, 1700, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), LatencySum: 6650250 * time.Microsecond},
			Canary: Cohort{Containers: []string{"172.18.0.5:8080"}, Requests: 100, Errors: 10, DialFailures: 1, Latency: h(0, 0, 50, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10), LatencySum: 120500 * time.Millisecond}},
	}
	if len(got) != len(want) {
		t.Fatalf("Cohorts = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if (g.Split == nil) != (w.Split == nil) || (g.Split != nil && (g.Split.Spec != w.Split.Spec || g.Split.Share != w.Split.Share || !g.Split.Since.Equal(w.Split.Since))) {
			t.Errorf("%s: split %+v, want %+v", w.Workload, g.Split, w.Split)
		}
		g.Split, w.Split = nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Errorf("workload %d =\n %+v\nwant\n %+v", i, g, w)
		}
	}
	// What a canary step reads of it: the canary's error rate and p95.
	if web := got[1]; web.Canary.ErrorRate() != 0.1 || web.Canary.Latency.Quantile(0.95) != 10*time.Second || web.Stable.Latency.Quantile(0.5) != 3500*time.Microsecond {
		t.Errorf("web: canary error rate %v p95 %v, stable p50 %v", web.Canary.ErrorRate(), web.Canary.Latency.Quantile(0.95), web.Stable.Latency.Quantile(0.5))
	}
}

func TestSetAndClearSplit(t *testing.T) {
	f := &fakeCohorts{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if err := SetSplit(ctx, srv.Client(), srv.URL, "rollcall", "web", "abc123", 0.05); err != nil {
		t.Fatal(err)
	}
	if err := ClearSplit(ctx, srv.Client(), srv.URL+"/", "rollcall", "web"); err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 2 || f.calls[1] != "DELETE /rollcall/cohorts/rollcall/web" {
		t.Fatalf("calls %q", f.calls)
	}
	method, body, _ := strings.Cut(strings.TrimPrefix(f.calls[0], "PUT /rollcall/cohorts/rollcall/web"), " ")
	var split map[string]any
	if method != "" || json.Unmarshal([]byte(body), &split) != nil || !reflect.DeepEqual(split, map[string]any{"spec": "abc123", "share": 0.05}) {
		t.Errorf("PUT call %q: want PUT /rollcall/cohorts/rollcall/web {\"spec\":\"abc123\",\"share\":0.05}", f.calls[0])
	}

	// A split the module would refuse is not sent.
	for _, bad := range []struct {
		spec  string
		share float64
	}{{"", 0.1}, {"abc", -0.1}, {"abc", 1.01}} {
		if err := SetSplit(ctx, srv.Client(), srv.URL, "rollcall", "web", bad.spec, bad.share); err == nil {
			t.Errorf("SetSplit(%q, %v): no error", bad.spec, bad.share)
		}
	}
	if len(f.calls) != 2 {
		t.Errorf("a refused split was sent: %q", f.calls[2:])
	}
}

func TestCohortsErrors(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		wantIs  error  // nil: any error
		wantIn  string // in the message
	}{
		{"Caddy without rollcall's module", http.NotFound, ErrNoCohorts, "404 Not Found"},
		{"no source for the workload", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/rollcall/cohorts" {
				io.WriteString(w, "[]")
				return
			}
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":"no dynamic rollcall source for workload \"web\" of prefix \"rollcall\"","reason":"no_source"}`)
		}, ErrNoSource, "404 Not Found"},
		{"a split refused", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":"share 2 is not in [0, 1]","reason":"bad_split"}`)
		}, nil, "400 Bad Request: share 2 is not in [0, 1]"},
		{"admin API refuses the origin", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, `{"error":"host not allowed: 127.0.0.1:40000"}`)
		}, nil, "403 Forbidden: host not allowed"},
		{"an answer too long", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "["+strings.Repeat(" ", maxBody)+"]")
		}, nil, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			calls := map[string]error{}
			if _, err := Cohorts(ctx, srv.Client(), srv.URL); tt.name != "no source for the workload" {
				calls["GET "+srv.URL+"/rollcall/cohorts"] = err
			} else if err != nil {
				t.Errorf("Cohorts: %v, want the empty list", err)
			}
			if tt.name != "an answer too long" {
				calls["PUT "+srv.URL+"/rollcall/cohorts/rollcall/web"] = SetSplit(ctx, srv.Client(), srv.URL, "rollcall", "web", "abc", 0.5)
				calls["DELETE "+srv.URL+"/rollcall/cohorts/rollcall/web"] = ClearSplit(ctx, srv.Client(), srv.URL, "rollcall", "web")
			}
			for call, err := range calls {
				switch {
				case err == nil:
					t.Errorf("%s: no error", call)
				case tt.wantIs != nil && !errors.Is(err, tt.wantIs):
					t.Errorf("%s: %v, want errors.Is %v", call, err, tt.wantIs)
				case tt.wantIs == nil && (errors.Is(err, ErrNoCohorts) || errors.Is(err, ErrNoSource)):
					t.Errorf("%s: %v is a missing module or source", call, err)
				case !strings.Contains(err.Error(), call) || !strings.Contains(err.Error(), tt.wantIn):
					t.Errorf("%s: %q: want the call and %q in it", call, err, tt.wantIn)
				}
			}
		})
	}
}
