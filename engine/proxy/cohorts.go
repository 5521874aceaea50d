package proxy

// Cohorts: the canary by traffic's side of the proxy (DESIGN §12). While a
// canary runs, rollcall's `dynamic rollcall` source (examples/caddy) sends
// a share of a workload's requests to the containers of the new spec (the
// canary cohort) and the rest to the others (the stable cohort), and its
// handler rollcall_cohorts counts each cohort's requests, 5xx answers,
// failed dials and latencies. Both speak on Caddy's admin API:
//
//	GET    /rollcall/cohorts                      every workload a source routes
//	PUT    /rollcall/cohorts/{prefix}/{workload}  {"spec":"<hash>","share":0.05}
//	DELETE /rollcall/cohorts/{prefix}/{workload}  the split ends
//
// The counters run from the moment a split with its spec was set: a PUT
// that changes only the share keeps them, one with another spec or a
// DELETE starts them anew (Split.Since tells). A step's figures are
// therefore the difference of two readings (Cohort.Sub), compared between
// the cohorts over the same window.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"
)

// ErrNoCohorts is what a Caddy without rollcall's cohorts answers (a 404
// on /rollcall/cohorts: Caddy built without examples/caddy's module).
var ErrNoCohorts = errors.New("no rollcall cohorts here")

// ErrNoSource is a Caddy with rollcall's cohorts but no `dynamic rollcall`
// source for the workload under that prefix.
var ErrNoSource = errors.New("no dynamic rollcall source for the workload")

// WorkloadCohorts is one workload's split and cohorts.
type WorkloadCohorts struct {
	Prefix, Workload string
	Split            *Split // nil: no split, every container is stable
	Stable, Canary   Cohort
}

// Split is the canary's part of a workload's requests.
type Split struct {
	Spec  string    // the canary's containers carry <prefix>.spec=Spec
	Share float64   // in [0, 1]
	Since time.Time // the counters run from here
}

// Cohort is what the proxy routes to in one cohort and counted of it since
// the split was set (with no split: since it was last removed).
type Cohort struct {
	Containers   []string // routable now: "172.18.0.5:8080"
	Requests     int64
	Errors       int64 // 5xx answers, failed dials included
	DialFailures int64 // requests for which no container could be dialled
	Latency      Histogram
	LatencySum   time.Duration
}

// Histogram counts latencies in buckets: Counts[i] those of at most
// Bounds[i] milliseconds and more than Bounds[i-1]; the last count, one
// past the bounds, those above them all.
type Histogram struct {
	Bounds []float64 // milliseconds, increasing
	Counts []int64
}

// Sub is the window between an earlier reading and c. A counter that went
// backwards (the split's spec changed, or the proxy restarted) means the
// counters were reset since: the window is then c itself.
func (c Cohort) Sub(earlier Cohort) Cohort {
	e := earlier
	if c.Requests < e.Requests || c.Errors < e.Errors || c.DialFailures < e.DialFailures || c.LatencySum < e.LatencySum ||
		!slices.Equal(c.Latency.Bounds, e.Latency.Bounds) || len(c.Latency.Counts) != len(e.Latency.Counts) {
		return c
	}
	counts := make([]int64, len(c.Latency.Counts))
	for i, n := range c.Latency.Counts {
		if n < e.Latency.Counts[i] {
			return c
		}
		counts[i] = n - e.Latency.Counts[i]
	}
	return Cohort{
		Containers:   c.Containers,
		Requests:     c.Requests - e.Requests,
		Errors:       c.Errors - e.Errors,
		DialFailures: c.DialFailures - e.DialFailures,
		Latency:      Histogram{Bounds: c.Latency.Bounds, Counts: counts},
		LatencySum:   c.LatencySum - e.LatencySum,
	}
}

// ErrorRate is Errors/Requests, 0 with no requests.
func (c Cohort) ErrorRate() float64 {
	if c.Requests <= 0 {
		return 0
	}
	return float64(c.Errors) / float64(c.Requests)
}

// Quantile estimates the q-quantile (q in [0, 1]) of the latencies,
// interpolating linearly inside the bucket that holds it, as Prometheus'
// histogram_quantile does. A quantile in the last bucket (above every
// bound) is reported as its lower bound: nothing says how far above it
// is. 0 with no counts.
func (h Histogram) Quantile(q float64) time.Duration {
	var total int64
	for _, n := range h.Counts {
		total += max(n, 0)
	}
	if total == 0 || math.IsNaN(q) {
		return 0
	}
	rank := min(max(q, 0), 1) * float64(total)
	var below int64
	for i, n := range h.Counts {
		if n <= 0 {
			continue
		}
		if float64(below+n) < rank {
			below += n
			continue
		}
		lower := 0.0
		if i > 0 && len(h.Bounds) > 0 {
			lower = h.Bounds[min(i-1, len(h.Bounds)-1)]
		}
		if i >= len(h.Bounds) {
			return ms(lower)
		}
		return ms(lower + (h.Bounds[i]-lower)*(rank-float64(below))/float64(n))
	}
	return 0 // not reached: rank <= total
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// Cohorts asks Caddy's admin API at adminURL for every workload's split and
// cohorts. A Caddy without rollcall's cohorts is ErrNoCohorts. c nil means
// Client(adminURL); ctx bounds the call.
func Cohorts(ctx context.Context, c *http.Client, adminURL string) ([]WorkloadCohorts, error) {
	e := endpointOf(c, adminURL)
	const path = "/rollcall/cohorts"
	body, err := cohortsCall(ctx, e, http.MethodGet, path, nil)
	if err != nil {
		return nil, err
	}
	var raw []wireWorkload
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("caddy cohorts: GET %s: %w", e.name(path), err)
	}
	out := make([]WorkloadCohorts, 0, len(raw))
	for _, r := range raw {
		w := WorkloadCohorts{Prefix: r.Prefix, Workload: r.Workload, Stable: r.Cohorts.Stable.cohort(), Canary: r.Cohorts.Canary.cohort()}
		if r.Split != nil {
			w.Split = &Split{Spec: r.Split.Spec, Share: r.Split.Share, Since: r.Split.Since}
		}
		out = append(out, w)
	}
	return out, nil
}

// SetSplit sets or changes the workload's split: the containers of spec
// take share (in [0, 1]) of its requests. The same spec keeps the
// counters; another starts them anew. A Caddy without rollcall's cohorts
// is ErrNoCohorts, one that does not route the workload ErrNoSource.
func SetSplit(ctx context.Context, c *http.Client, adminURL, prefix, workload, spec string, share float64) error {
	if spec == "" || !(share >= 0 && share <= 1) {
		return fmt.Errorf("caddy cohorts: split %s/%s: spec %q, share %v: want a spec and a share in [0, 1]", prefix, workload, spec, share)
	}
	body, _ := json.Marshal(map[string]any{"spec": spec, "share": share})
	_, err := cohortsCall(ctx, endpointOf(c, adminURL), http.MethodPut, splitPath(prefix, workload), body)
	return err
}

// ClearSplit ends the workload's split: every container is stable again,
// and the counters start anew. Errors as SetSplit's.
func ClearSplit(ctx context.Context, c *http.Client, adminURL, prefix, workload string) error {
	_, err := cohortsCall(ctx, endpointOf(c, adminURL), http.MethodDelete, splitPath(prefix, workload), nil)
	return err
}

func splitPath(prefix, workload string) string {
	return "/rollcall/cohorts/" + url.PathEscape(prefix) + "/" + url.PathEscape(workload)
}

// cohortsCall makes one call and reads its answer whole (at most maxBody
// bytes); any status but 200 is an error naming the call and the status,
// with the module's message where it gave one.
func cohortsCall(ctx context.Context, e endpoint, method, path string, body []byte) ([]byte, error) {
	resp, err := e.do(ctx, method, path, body)
	if err != nil {
		return nil, fmt.Errorf("caddy cohorts: %s %s: %w", method, e.name(path), err)
	}
	defer resp.Body.Close()
	u := e.name(path)
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("caddy cohorts: %s %s: read: %w", method, u, err)
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("caddy cohorts: %s %s answered more than %d bytes", method, u, maxBody)
	}
	if resp.StatusCode == http.StatusOK {
		return b, nil
	}
	// The module's errors are {"error": "...", "reason": "..."}; Caddy's
	// own are {"error": "..."}; a route Caddy does not have is plain text.
	var answer struct {
		Error  string `json:"error"`
		Reason string `json:"reason"`
	}
	msg := firstLine(b)
	if json.Unmarshal(b, &answer) == nil && answer.Error != "" {
		msg = answer.Error
	}
	status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode == http.StatusNotFound && answer.Reason == "no_source":
		return nil, fmt.Errorf("caddy cohorts: %s %s: %s: %w", method, u, status, ErrNoSource)
	case resp.StatusCode == http.StatusNotFound:
		return nil, fmt.Errorf("caddy cohorts: %s %s: %s: %w", method, u, status, ErrNoCohorts)
	}
	return nil, fmt.Errorf("caddy cohorts: %s %s: %s: %s", method, u, status, msg)
}

// The admin API's JSON (examples/caddy/rollcallup/cohorts.go.txt).
type wireWorkload struct {
	Prefix   string `json:"prefix"`
	Workload string `json:"workload"`
	Split    *struct {
		Spec  string    `json:"spec"`
		Share float64   `json:"share"`
		Since time.Time `json:"since"`
	} `json:"split"`
	Cohorts struct {
		Stable wireCohort `json:"stable"`
		Canary wireCohort `json:"canary"`
	} `json:"cohorts"`
}

type wireCohort struct {
	Containers   []string `json:"containers"`
	Requests     int64    `json:"requests"`
	Errors       int64    `json:"errors"`
	DialFailures int64    `json:"dial_failures"`
	Latency      struct {
		Bounds []float64 `json:"bounds"`
		Counts []int64   `json:"counts"`
	} `json:"latency_ms"`
	LatencySumMs float64 `json:"latency_sum_ms"`
}

func (w wireCohort) cohort() Cohort {
	return Cohort{
		Containers:   w.Containers,
		Requests:     w.Requests,
		Errors:       w.Errors,
		DialFailures: w.DialFailures,
		Latency:      Histogram{Bounds: w.Latency.Bounds, Counts: w.Latency.Counts},
		LatencySum:   ms(w.LatencySumMs),
	}
}
