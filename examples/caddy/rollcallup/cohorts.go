package rollcallup

// Cohorts: canary by traffic (DESIGN §12). A workload may have a split: its
// containers whose <prefix>.spec label is the split's spec form the canary
// cohort, all its other routable containers the stable one, and
// `dynamic rollcall` sends each request to the canary with the split's
// share. rollcall sets and reads splits on Caddy's admin API, with no
// reload:
//
//	GET    /rollcall/cohorts                      every workload a source routes
//	GET    /rollcall/cohorts/{prefix}/{workload}  one of them
//	PUT    /rollcall/cohorts/{prefix}/{workload}  {"spec":"<hash>","share":0.05}
//	DELETE /rollcall/cohorts/{prefix}/{workload}  no split: every container is stable
//
// A PUT that changes only the share keeps the counters; one with another
// spec, and a DELETE, start them anew (the split's "since" tells a reader).
// A workload's split and counters are shared by all its sources and live
// as long as one of them is provisioned, so a reload keeps them.
//
// The decision: random per request, or sticky (cohort_by): a hash of a
// cookie's value or of the client's address, mapped to [0,1) and compared
// with the share, so a client on the canary stays there as the share grows.
// It is kept in the request's pick (see pickOf), so a retry (lb_try_*)
// goes to the same cohort. A cohort with no routable container is never
// chosen while the other has one: a split never fails a request.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"go.uber.org/zap"
)

// How `dynamic rollcall` chooses a request's cohort (cohort_by).
const (
	cohortByRandom   = "random"
	cohortByCookie   = "cookie"
	cohortByClientIP = "client_ip"
)

// cohort is stable or canary; it indexes a workload's counters.
type cohort int

const (
	stable cohort = iota
	canary
)

func (c cohort) String() string {
	if c == canary {
		return "canary"
	}
	return "stable"
}

// boundsMs are the upper bounds of the latency buckets, in milliseconds;
// one bucket more holds the rest (+Inf).
var boundsMs = [...]float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000}

type workloadKey struct{ prefix, name string }

// workload is the split and the counters of one (prefix, workload).
type workload struct {
	key  workloadKey
	refs int // provisioned sources; guarded by watchersMu

	mu   sync.Mutex // serialises changes of view
	view atomic.Pointer[view]
	prom [2]promCohort // Caddy's metrics, by cohort
}

// view is what a request reads of its workload, in one load: the split
// and the counters it goes into. A new spec brings new counters.
type view struct {
	split *split // nil: no split, every container is stable
	tally *tally
}

type split struct {
	Spec  string    `json:"spec"`
	Share float64   `json:"share"`
	Since time.Time `json:"since"` // the counters run from here
}

type tally struct{ cohorts [2]counters }

// counters are one cohort's, since its split was set. Writers add in the
// order of the fields and readers load in the reverse order, so a reading
// never has more errors than requests, nor more dial failures than errors.
type counters struct {
	requests atomic.Int64
	errors   atomic.Int64 // 5xx answers, failed dials included
	dials    atomic.Int64 // no upstream could be dialled
	buckets  [len(boundsMs) + 1]atomic.Int64
	sumNanos atomic.Int64
}

// workloads holds every workload a source is provisioned for; guarded by
// watchersMu, as the watchers are.
var workloads = map[workloadKey]*workload{}

func acquireWorkload(prefix, name string) *workload {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	k := workloadKey{prefix, name}
	wl := workloads[k]
	if wl == nil {
		wl = &workload{key: k}
		wl.view.Store(&view{tally: new(tally)})
		for c := range wl.prom {
			wl.prom[c] = newPromCohort(name, cohort(c))
		}
		workloads[k] = wl
	}
	wl.refs++
	return wl
}

func releaseWorkload(wl *workload) {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	if wl.refs--; wl.refs <= 0 && workloads[wl.key] == wl {
		delete(workloads, wl.key)
	}
}

func lookupWorkload(prefix, name string) *workload {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	return workloads[workloadKey{prefix, name}]
}

// setSplit sets or changes the split: the same spec keeps the counters.
func (wl *workload) setSplit(spec string, share float64, now time.Time) {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	old := wl.view.Load()
	if old.split != nil && old.split.Spec == spec {
		s := *old.split
		s.Share = share
		wl.view.Store(&view{split: &s, tally: old.tally})
		return
	}
	wl.view.Store(&view{split: &split{Spec: spec, Share: share, Since: now}, tally: new(tally)})
}

// clearSplit removes the split, and its counters with it.
func (wl *workload) clearSplit() {
	wl.mu.Lock()
	defer wl.mu.Unlock()
	if wl.view.Load().split != nil {
		wl.view.Store(&view{tally: new(tally)})
	}
}

// pick is one request's: the cohort `dynamic rollcall` decided on (kept
// for its retries) and the one it routed to last (counted by
// rollcall_cohorts). GetUpstreams and the handler run in the request's
// goroutine; the lock is for a handler that proxies from another.
type pick struct {
	mu      sync.Mutex
	wl      *workload // nil: no rollcall source routed the request
	tally   *tally
	decided bool
	canary  bool // the decision
	routed  cohort
}

// decide returns the request's decision for wl under counters t, made by
// fresh the first time (or when the split's spec changed since). A nil
// pick (a request outside Caddy's server) decides anew every time.
func (p *pick) decide(wl *workload, t *tally, fresh func() bool) bool {
	if p == nil {
		return fresh()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.decided || p.wl != wl || p.tally != t {
		p.wl, p.tally, p.canary, p.decided = wl, t, fresh(), true
	}
	return p.canary
}

// took records the cohort the request was routed to.
func (p *pick) took(wl *workload, t *tally, c cohort) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wl != wl || p.tally != t {
		p.decided = false
	}
	p.wl, p.tally, p.routed = wl, t, c
}

// pickKey holds a request's pick in its context where it has no Caddy
// variables (pickVar), as in a test.
type pickKey struct{}

// pickVar is the Caddy request variable that holds the request's pick. A
// variable, not a context value, so that rollcall_cohorts need not copy
// the request (a copy would part it from Caddy's placeholders).
const pickVar = "rollcall.cohort_pick"

// pickOf returns the request's pick: the one rollcall_cohorts made, or,
// without that handler, one kept in the request's variables from its first
// GetUpstreams on, so that retries keep the decision either way. nil
// outside Caddy's server.
func pickOf(r *http.Request) *pick {
	ctx := r.Context()
	if p, ok := ctx.Value(pickKey{}).(*pick); ok {
		return p
	}
	vars, ok := ctx.Value(caddyhttp.VarsCtxKey).(map[string]any)
	if !ok {
		return nil
	}
	if p, ok := vars[pickVar].(*pick); ok {
		return p
	}
	p := new(pick)
	vars[pickVar] = p
	return p
}

// route returns the addresses the request may go to: all routable
// containers with no split; with one, those of the request's cohort, or of
// the other cohort when its own has none.
func (u *Upstreams) route(r *http.Request) []string {
	addrs, specs := u.w.members()
	v := u.wl.view.Load()
	p := pickOf(r)
	if v.split == nil {
		p.took(u.wl, v.tally, stable)
		return addrs
	}
	var in [2][]string
	for i, a := range addrs {
		c := stable
		if i < len(specs) && specs[i] == v.split.Spec {
			c = canary
		}
		in[c] = append(in[c], a)
	}
	c := stable
	if p.decide(u.wl, v.tally, func() bool { return u.decide(r, v.split.Share) }) {
		c = canary
	}
	if len(in[c]) == 0 {
		c = 1 - c
		if len(in[c]) == 0 {
			c = 1 - c // neither has one: count it where it was meant to go
		}
	}
	p.took(u.wl, v.tally, c)
	return in[c]
}

// decide tells whether a request goes to the canary with this share.
func (u *Upstreams) decide(r *http.Request, share float64) bool {
	switch u.CohortBy {
	case cohortByCookie:
		if ck, err := r.Cookie(u.CohortCookie); err == nil && ck.Value != "" {
			return unit(ck.Value) < share
		}
	case cohortByClientIP:
		return unit(clientIP(r)) < share
	}
	if u.random != nil {
		return u.random() < share
	}
	return rand.Float64() < share
}

// clientIP is the client's address as Caddy determined it (trusted proxies
// applied), else the connection's.
func clientIP(r *http.Request) string {
	if ip, ok := caddyhttp.GetVar(r.Context(), caddyhttp.ClientIPVarKey).(string); ok && ip != "" {
		return ip
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// unit maps s to [0,1), uniformly and the same in every process: FNV-1a,
// then murmur3's finaliser so that values that differ only in their last
// bytes (client-1, client-2) spread over the whole range.
func unit(s string) float64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return float64(h>>11) / (1 << 53)
}

// adminCohorts serves /rollcall/cohorts on Caddy's admin API.
type adminCohorts struct{}

func (adminCohorts) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.rollcall_cohorts",
		New: func() caddy.Module { return new(adminCohorts) },
	}
}

func (adminCohorts) Routes() []caddy.AdminRoute {
	h := caddy.AdminHandlerFunc(serveCohorts)
	return []caddy.AdminRoute{{Pattern: "/rollcall/cohorts", Handler: h}, {Pattern: "/rollcall/cohorts/", Handler: h}}
}

// workloadStatus is one workload's part of GET /rollcall/cohorts.
type workloadStatus struct {
	Prefix   string `json:"prefix"`
	Workload string `json:"workload"`
	Split    *split `json:"split"` // null: none
	Cohorts  struct {
		Stable cohortStatus `json:"stable"`
		Canary cohortStatus `json:"canary"`
	} `json:"cohorts"`
}

type cohortStatus struct {
	Containers   []string  `json:"containers"` // routable now
	Requests     int64     `json:"requests"`
	Errors       int64     `json:"errors"`
	DialFailures int64     `json:"dial_failures"`
	Latency      histogram `json:"latency_ms"`
	LatencySumMs float64   `json:"latency_sum_ms"`
}

// histogram: Counts[i] counts the requests that took at most Bounds[i] ms
// and more than Bounds[i-1]; the last one, those above every bound.
type histogram struct {
	Bounds []float64 `json:"bounds"`
	Counts []int64   `json:"counts"`
}

func (k *counters) status(containers []string) cohortStatus {
	s := cohortStatus{Containers: containers, Latency: histogram{Bounds: boundsMs[:], Counts: make([]int64, len(k.buckets))}}
	s.LatencySumMs = float64(k.sumNanos.Load()) / 1e6
	for i := range k.buckets {
		s.Latency.Counts[i] = k.buckets[i].Load()
	}
	s.DialFailures = k.dials.Load()
	s.Errors = k.errors.Load()
	s.Requests = k.requests.Load()
	return s
}

// status reads wl: its split, counters, and what its sources route to now,
// by cohort. The caller must not hold watchersMu.
func (wl *workload) status() workloadStatus {
	type member struct{ addr, spec string }
	var ms []member
	watchersMu.Lock()
	for _, ref := range watchers {
		if ref.w.cfg.Prefix != wl.key.prefix || ref.w.cfg.Workload != wl.key.name {
			continue
		}
		addrs, specs := ref.w.members()
		for i, a := range addrs {
			m := member{addr: a}
			if i < len(specs) {
				m.spec = specs[i]
			}
			ms = append(ms, m)
		}
	}
	watchersMu.Unlock()
	v := wl.view.Load()
	in := [2][]string{{}, {}}
	for _, m := range ms {
		c := stable
		if v.split != nil && m.spec == v.split.Spec {
			c = canary
		}
		in[c] = append(in[c], m.addr)
	}
	for c := range in {
		slices.Sort(in[c])
		in[c] = slices.Compact(in[c])
	}
	s := workloadStatus{Prefix: wl.key.prefix, Workload: wl.key.name, Split: v.split}
	s.Cohorts.Stable = v.tally.cohorts[stable].status(in[stable])
	s.Cohorts.Canary = v.tally.cohorts[canary].status(in[canary])
	return s
}

// cohortsError is the body of every error the cohorts routes answer.
// Reason is for programs: "no_source" (404: no `dynamic rollcall` of that
// workload here), "bad_split" or "bad_path" (400), "method" (405).
type cohortsError struct {
	Error  string `json:"error"`
	Reason string `json:"reason"`
}

func serveCohorts(rw http.ResponseWriter, r *http.Request) error {
	rest, _ := strings.CutPrefix(r.URL.Path, "/rollcall/cohorts")
	rest = strings.Trim(rest, "/")
	if rest == "" {
		if r.Method != http.MethodGet {
			rw.Header().Set("Allow", http.MethodGet)
			return answer(rw, http.StatusMethodNotAllowed, cohortsError{"method not allowed: GET /rollcall/cohorts", "method"})
		}
		watchersMu.Lock()
		wls := make([]*workload, 0, len(workloads))
		for _, wl := range workloads {
			wls = append(wls, wl)
		}
		watchersMu.Unlock()
		out := make([]workloadStatus, 0, len(wls))
		for _, wl := range wls {
			out = append(out, wl.status())
		}
		slices.SortFunc(out, func(a, b workloadStatus) int {
			return cmp.Or(strings.Compare(a.Prefix, b.Prefix), strings.Compare(a.Workload, b.Workload))
		})
		return answer(rw, http.StatusOK, out)
	}
	prefix, name, ok := strings.Cut(rest, "/")
	if !ok || prefix == "" || name == "" || strings.Contains(name, "/") {
		return answer(rw, http.StatusBadRequest, cohortsError{fmt.Sprintf("%s: want /rollcall/cohorts/{prefix}/{workload}", r.URL.Path), "bad_path"})
	}
	wl := lookupWorkload(prefix, name)
	if wl == nil {
		return answer(rw, http.StatusNotFound, cohortsError{fmt.Sprintf("no dynamic rollcall source for workload %q of prefix %q", name, prefix), "no_source"})
	}
	switch r.Method {
	case http.MethodGet:
	case http.MethodPut:
		spec, share, err := readSplit(r.Body)
		if err != nil {
			return answer(rw, http.StatusBadRequest, cohortsError{fmt.Sprintf("PUT %s: %v", r.URL.Path, err), "bad_split"})
		}
		wl.setSplit(spec, share, time.Now().UTC())
		caddy.Log().Named("rollcall").Info("cohort split", zap.String("prefix", prefix), zap.String("workload", name),
			zap.String("spec", spec), zap.Float64("share", share))
	case http.MethodDelete:
		wl.clearSplit()
		caddy.Log().Named("rollcall").Info("cohort split removed", zap.String("prefix", prefix), zap.String("workload", name))
	default:
		rw.Header().Set("Allow", "GET, PUT, DELETE")
		return answer(rw, http.StatusMethodNotAllowed, cohortsError{"method not allowed: GET, PUT or DELETE " + r.URL.Path, "method"})
	}
	return answer(rw, http.StatusOK, wl.status())
}

// readSplit reads a PUT's body: {"spec":"<hash>","share":0.05}.
func readSplit(body io.Reader) (spec string, share float64, err error) {
	var s struct {
		Spec  *string  `json:"spec"`
		Share *float64 `json:"share"`
	}
	dec := json.NewDecoder(io.LimitReader(body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return "", 0, fmt.Errorf(`body: %v (want {"spec":"<hash>","share":0.05})`, err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return "", 0, fmt.Errorf("body: more than one JSON value")
	}
	switch {
	case s.Spec == nil || *s.Spec == "":
		return "", 0, fmt.Errorf("spec is required: the <prefix>.spec label of the canary's containers")
	case s.Share == nil:
		return "", 0, fmt.Errorf("share is required: the canary's share of the requests, in [0, 1]")
	case !(*s.Share >= 0 && *s.Share <= 1):
		return "", 0, fmt.Errorf("share %v is not in [0, 1]", *s.Share)
	}
	return *s.Spec, *s.Share, nil
}

func answer(rw http.ResponseWriter, status int, v any) error {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	return json.NewEncoder(rw).Encode(v)
}
