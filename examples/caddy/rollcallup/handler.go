package rollcallup

// The handler rollcall_cohorts counts each cohort's answers: put it in
// front of reverse_proxy, in the global options
//
//	{
//		order rollcall_cohorts before reverse_proxy
//	}
//	:8080 {
//		rollcall_cohorts
//		reverse_proxy { dynamic rollcall { … } }
//	}
//
// or inside a route block, before reverse_proxy. It gives the request a
// pick, which `dynamic rollcall` fills in (the workload and the cohort it
// routed to, and the decision it keeps for retries), and, once the rest
// of the chain has answered, counts for that workload and cohort: the
// request, a 5xx answer (written, or returned as a HandlerError), a failed
// dial (reverse_proxy's 502 when no upstream could be dialled: both a 5xx
// and a dial failure), and its latency. A request that no rollcall source
// routed is not counted. GET /rollcall/cohorts shows the counters since
// the split was set; Caddy's own metrics (the admin API's /metrics) have
// them as rollcall_cohort_* by workload and cohort, never reset.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"github.com/prometheus/client_golang/prometheus"
)

func init() {
	caddy.RegisterModule(Cohorts{})
	httpcaddyfile.RegisterHandlerDirective("rollcall_cohorts", func(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
		c := new(Cohorts)
		return c, c.UnmarshalCaddyfile(h.Dispenser)
	})
}

// Cohorts is the rollcall_cohorts handler.
type Cohorts struct {
	now func() time.Time // nil: time.Now
}

// CaddyModule returns the Caddy module information.
func (Cohorts) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.handlers.rollcall_cohorts",
		New: func() caddy.Module { return new(Cohorts) },
	}
}

// Provision registers the counters in Caddy's metrics.
func (h *Cohorts) Provision(ctx caddy.Context) error {
	return registerMetrics(ctx.GetMetricsRegistry())
}

// UnmarshalCaddyfile reads `rollcall_cohorts`, which takes nothing.
func (h *Cohorts) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	if d.NextArg() {
		return d.ArgErr()
	}
	if d.NextBlock(0) {
		return d.Errf("rollcall_cohorts takes no block")
	}
	return nil
}

func (h *Cohorts) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	p := new(pick)
	if vars, ok := r.Context().Value(caddyhttp.VarsCtxKey).(map[string]any); ok {
		vars[pickVar] = p
	} else {
		r = r.WithContext(context.WithValue(r.Context(), pickKey{}, p)) // outside Caddy's server: a test
	}
	now := time.Now
	if h.now != nil {
		now = h.now
	}
	rec := caddyhttp.NewResponseRecorder(w, nil, nil)
	start := now()
	err := next.ServeHTTP(rec, r)
	took := now().Sub(start)
	failed, dial := outcome(rec.Status(), err)
	p.count(failed, dial, took)
	return err
}

// outcome reads a request's answer: a 5xx written or returned, and a
// failed dial (a reverse_proxy.DialError in what was returned).
func outcome(written int, err error) (failed, dial bool) {
	failed = written >= 500
	if err != nil {
		status := http.StatusInternalServerError
		var he caddyhttp.HandlerError
		if errors.As(err, &he) && he.StatusCode != 0 {
			status = he.StatusCode
		}
		dial = errors.As(err, new(reverseproxy.DialError))
		failed = failed || dial || status >= 500
	}
	return failed, dial
}

// count adds one answer to the cohort the request was routed to.
func (p *pick) count(failed, dial bool, took time.Duration) {
	p.mu.Lock()
	wl, t, c := p.wl, p.tally, p.routed
	p.mu.Unlock()
	if wl == nil {
		return
	}
	k := &t.cohorts[c]
	k.requests.Add(1)
	if failed {
		k.errors.Add(1)
	}
	if dial {
		k.dials.Add(1)
	}
	k.buckets[bucketOf(took)].Add(1)
	k.sumNanos.Add(int64(took))
	wl.prom[c].add(failed, dial, took)
}

// bucketOf is the latency bucket of d: the first bound it does not exceed.
func bucketOf(d time.Duration) int {
	return sort.SearchFloat64s(boundsMs[:], float64(d)/float64(time.Millisecond))
}

// Caddy's metrics of the cohorts, by workload and cohort.
var (
	metricLabels   = []string{"workload", "cohort"}
	metricRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "rollcall", Subsystem: "cohort", Name: "requests_total",
		Help: "Requests routed by dynamic rollcall, by workload and cohort.",
	}, metricLabels)
	metricErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "rollcall", Subsystem: "cohort", Name: "errors_total",
		Help: "5xx answers (failed dials included), by workload and cohort.",
	}, metricLabels)
	metricDials = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "rollcall", Subsystem: "cohort", Name: "dial_failures_total",
		Help: "Requests for which no upstream could be dialled, by workload and cohort.",
	}, metricLabels)
	metricLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "rollcall", Subsystem: "cohort", Name: "request_duration_seconds",
		Help:    "Time to answer a request, by workload and cohort.",
		Buckets: secondsBuckets(),
	}, metricLabels)
)

func secondsBuckets() []float64 {
	b := make([]float64, len(boundsMs))
	for i, ms := range boundsMs {
		b[i] = ms / 1000
	}
	return b
}

// registerMetrics registers the cohorts' metrics in reg. Caddy has a
// registry per config, and every rollcall_cohorts of a config registers:
// one already there is fine.
func registerMetrics(reg *prometheus.Registry) error {
	if reg == nil {
		return nil
	}
	for _, c := range []prometheus.Collector{metricRequests, metricErrors, metricDials, metricLatency} {
		if err := reg.Register(c); err != nil {
			if !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
				return fmt.Errorf("rollcall_cohorts: metrics: %w", err)
			}
		}
	}
	return nil
}

// promCohort is one workload's and cohort's metrics, looked up once.
type promCohort struct {
	requests, errors, dials prometheus.Counter
	latency                 prometheus.Observer
}

func newPromCohort(workload string, c cohort) promCohort {
	return promCohort{
		requests: metricRequests.WithLabelValues(workload, c.String()),
		errors:   metricErrors.WithLabelValues(workload, c.String()),
		dials:    metricDials.WithLabelValues(workload, c.String()),
		latency:  metricLatency.WithLabelValues(workload, c.String()),
	}
}

func (m promCohort) add(failed, dial bool, took time.Duration) {
	m.requests.Inc()
	if failed {
		m.errors.Inc()
	}
	if dial {
		m.dials.Inc()
	}
	m.latency.Observe(took.Seconds())
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Cohorts)(nil)
	_ caddyhttp.MiddlewareHandler = (*Cohorts)(nil)
	_ caddyfile.Unmarshaler       = (*Cohorts)(nil)
)
