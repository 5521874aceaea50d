// Package metrics is the agent's Prometheus metrics (DESIGN §12,
// `rollcall agent --metrics-addr`): what the sessions do, counted from the
// data they report, never from their words.
//
// The rules it keeps:
//
//   - Fed by data: a Metrics is a session.Observer. Steps are counted from
//     the session's typed step events (session.Fact: a step done or
//     failed, its action and how long it took); rollouts, holds,
//     rollbacks and the engine going away from the session's notices
//     (notify.Event, which the session makes whether or not notify: names
//     a webhook); the canary's cohorts from Canary, which the canary's
//     analysis calls with its figures; rollcall_standing from the
//     session's typed standing (Standing, called as its kind changes). No
//     log line or message is read.
//   - A registry of its own, never the global one: two agents in one test
//     binary, or a Metrics and something else that registers globally,
//     never clash. Handler serves it, with the Go runtime's and the
//     process's collectors beside rollcall's.
//   - One registry for a fleet: with Options.Hosts every rollcall series
//     carries host=NAME (the host's name in hosts:, as the log lines), and
//     each host's session is fed through Host(name). Without hosts: no
//     series has a host label.
//   - The series an operator alerts on exist from the start at 0 (steps by
//     engine action and outcome, rollouts by outcome, disconnects), so a
//     rate or an increase is defined before the first step.
//   - Bounded serving: Listen serves /metrics alone, with read, write and
//     idle timeouts, a bound on the header, at most a few scrapes at once
//     and at most maxConns connections open (limit.go).
//
// It imports engine/session, notify and reconcile (none of which links
// moby) and the Prometheus client; never engine/docker/moby, tui or cmd.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// Outcomes of a step, the outcome label of rollcall_steps_total.
const (
	OutcomeOK     = "ok"     // the step did what it was for
	OutcomeFailed = "failed" // the engine failed it, or it was cut short
)

// Path is where Listen serves the metrics.
const Path = "/metrics"

// engineActions are the steps that act on the engine: their series exist
// from the start.
var engineActions = []reconcile.Action{reconcile.ActStart, reconcile.ActStop, reconcile.ActRoll, reconcile.ActRestart, reconcile.ActUpdate}

// rolloutOutcomes are how a rollout ends.
var rolloutOutcomes = []notify.Outcome{notify.OutcomeConverged, notify.OutcomeHeld, notify.OutcomeFailed, notify.OutcomeSuperseded, notify.OutcomeStopped}

// Options configure a Metrics.
type Options struct {
	// Hosts gives every rollcall series a host label: the agent of a file
	// with hosts:, whose sessions are fed through Host(name).
	Hosts bool
}

// Metrics counts what sessions do, in a registry of its own. A Metrics
// from New feeds the series of no host (or host="" with Options.Hosts);
// Host gives the Metrics of one host, on the same registry. It is safe
// for use from several goroutines.
type Metrics struct {
	c    *set
	host string
}

var _ session.Observer = (*Metrics)(nil)

// set is the registry and its collectors, shared by every host's Metrics.
type set struct {
	reg   *prometheus.Registry
	hosts bool

	steps        *prometheus.CounterVec
	stepSeconds  *prometheus.HistogramVec
	restarts     *prometheus.CounterVec
	started      *prometheus.CounterVec
	rollouts     *prometheus.CounterVec
	holds        *prometheus.CounterVec
	rollbacks    *prometheus.CounterVec
	disconnects  *prometheus.CounterVec
	standing     *prometheus.GaugeVec
	canaryReqs   *prometheus.GaugeVec
	canaryErrs   *prometheus.GaugeVec
	canaryP50    *prometheus.GaugeVec
	canaryP95    *prometheus.GaugeVec
	canaryGauges []*prometheus.GaugeVec
}

// New returns a Metrics on a registry of its own.
func New(o Options) *Metrics {
	c := &set{reg: prometheus.NewRegistry(), hosts: o.Hosts}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, c.labels(labels...))
		c.reg.MustRegister(v)
		return v
	}
	canary := func(name, help string, labels ...string) *prometheus.GaugeVec {
		v := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, c.labels(labels...))
		c.reg.MustRegister(v)
		c.canaryGauges = append(c.canaryGauges, v)
		return v
	}
	c.steps = counter("rollcall_steps_total", "Steps that ended, by action and outcome (ok, failed).", "action", "outcome")
	c.stepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rollcall_step_duration_seconds",
		Help:    "How long the steps that ended took, drains included, by action.",
		Buckets: prometheus.ExponentialBuckets(0.1, 2, 12), // 0.1s to 3.4m
	}, c.labels("action"))
	c.reg.MustRegister(c.stepSeconds)
	c.restarts = counter("rollcall_restarts_total", "Crash restarts rollcall did, by workload.", "workload")
	c.started = counter("rollcall_rollouts_started_total", "Rollouts begun: the first step towards a desired state not yet reached.")
	c.rollouts = counter("rollcall_rollouts_total", "Rollouts that ended, by outcome (converged, held, failed, superseded, stopped).", "outcome")
	c.holds = counter("rollcall_holds_total", "Specs put on hold while the agent ran (by failure_action rollback, an operator's rollback or pin, another process), by workload.", "workload")
	c.rollbacks = counter("rollcall_rollbacks_total", "Rollbacks: failure_action rollback's stop done, or an operator's rollback begun, by workload.", "workload")
	c.disconnects = counter("rollcall_engine_disconnects_total", "Times the engine stopped answering after it had answered.")
	c.standing = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rollcall_standing",
		Help: "Where the session stands: 1 for its standing's kind (starting, converged, rolling, awaiting-approval, held, failed, blocked), 0 for the others.",
	}, c.labels("kind"))
	c.reg.MustRegister(c.standing)
	c.canaryReqs = canary("rollcall_canary_requests", "Requests a cohort answered over the canary step's window so far.", "workload", "cohort")
	c.canaryErrs = canary("rollcall_canary_errors", "Failed requests (5xx, failed dials) of a cohort over the canary step's window so far.", "workload", "cohort")
	c.canaryP50 = canary("rollcall_canary_latency_p50_seconds", "A cohort's median latency over the canary step's window so far.", "workload", "cohort")
	c.canaryP95 = canary("rollcall_canary_latency_p95_seconds", "A cohort's 95th percentile latency over the canary step's window so far.", "workload", "cohort")
	c.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := &Metrics{c: c}
	if !o.Hosts {
		m.zero()
	}
	return m
}

// labels are a vector's label names: host first, with Options.Hosts.
func (c *set) labels(names ...string) []string {
	if c.hosts {
		return append([]string{"host"}, names...)
	}
	return names
}

// Host is the Metrics of the host named name (its name in hosts:), on the
// same registry; its series exist from now on.
func (m *Metrics) Host(name string) *Metrics {
	h := &Metrics{c: m.c, host: name}
	h.zero()
	return h
}

// values are a series' label values: the host first, with Options.Hosts.
func (m *Metrics) values(vs ...string) []string {
	if m.c.hosts {
		return append([]string{m.host}, vs...)
	}
	return vs
}

// zero makes the series an operator alerts on exist, at 0.
func (m *Metrics) zero() {
	for _, a := range engineActions {
		m.c.steps.WithLabelValues(m.values(string(a), OutcomeOK)...)
		m.c.steps.WithLabelValues(m.values(string(a), OutcomeFailed)...)
	}
	for _, o := range rolloutOutcomes {
		m.c.rollouts.WithLabelValues(m.values(string(o))...)
	}
	m.c.started.WithLabelValues(m.values()...)
	m.c.disconnects.WithLabelValues(m.values()...)
	m.setStanding(session.StandingStarting)
}

// Standing sets rollcall_standing to the session's standing's kind
// (session.Observer): 1 for it, 0 for every other kind.
func (m *Metrics) Standing(st session.Standing) { m.setStanding(st.Kind) }

func (m *Metrics) setStanding(kind session.StandingKind) {
	for _, k := range session.StandingKinds() {
		v := 0.0
		if k == kind {
			v = 1
		}
		m.c.standing.WithLabelValues(m.values(k.String())...).Set(v)
	}
}

// Registry is the registry the metrics are on (for a test, or to serve it
// elsewhere).
func (m *Metrics) Registry() *prometheus.Registry { return m.c.reg }

// Event counts a step that ended (session.Observer); the other kinds of
// events are not counted.
func (m *Metrics) Fact(e session.Fact) {
	outcome := OutcomeOK
	switch e.Kind {
	case session.FactCanary:
		// each cohort's figures over the step's window so far
		j := e.Canary.Judgement
		m.Canary(e.Canary.Workload, "canary", j.Canary.Requests, j.Canary.Errors, j.Canary.P50, j.Canary.P95)
		m.Canary(e.Canary.Workload, "stable", j.Stable.Requests, j.Stable.Errors, j.Stable.P50, j.Stable.P95)
		return
	case session.FactStepDone:
	case session.FactStepFailed:
		outcome = OutcomeFailed
	default:
		return
	}
	action := string(e.Step.Action)
	m.c.steps.WithLabelValues(m.values(action, outcome)...).Inc()
	m.c.stepSeconds.WithLabelValues(m.values(action)...).Observe(e.Duration.Seconds())
	if e.Step.Action == reconcile.ActRestart && outcome == OutcomeOK {
		m.c.restarts.WithLabelValues(m.values(e.Step.Workload)...).Inc()
	}
}

// Notice counts a rollout begun or ended, a hold, a rollback and the
// engine going away (session.Observer); the other kinds are not counted.
func (m *Metrics) Notice(n notify.Event) {
	switch n.Kind {
	case notify.KindRolloutStarted:
		m.c.started.WithLabelValues(m.values()...).Inc()
	case notify.KindRolloutEnded:
		m.c.rollouts.WithLabelValues(m.values(string(n.Outcome))...).Inc()
	case notify.KindHold:
		m.c.holds.WithLabelValues(m.values(n.Workload)...).Inc()
	case notify.KindRollback:
		m.c.rollbacks.WithLabelValues(m.values(n.Workload)...).Inc()
	case notify.KindEngineLost:
		m.c.disconnects.WithLabelValues(m.values()...).Inc()
	case notify.KindAbort:
		m.CanaryEnded(n.Workload) // aborted: its figures no longer move
	case notify.KindCanaryStep:
		if c := n.Canary; c != nil && c.Step == c.Of && c.Verdict == reconcile.VerdictPass {
			m.CanaryEnded(n.Workload) // promoted: the roll goes on without it
		}
	}
}

// Canary sets a cohort's figures ("canary", "stable") of a workload's
// canary over the last analysis window: the requests it answered, those
// that failed (5xx answers and failed dials), and the latency's p50 and
// p95. The canary's analysis calls it at each interval.
func (m *Metrics) Canary(workload, cohort string, requests, failed int64, p50, p95 time.Duration) {
	vs := m.values(workload, cohort)
	m.c.canaryReqs.WithLabelValues(vs...).Set(float64(requests))
	m.c.canaryErrs.WithLabelValues(vs...).Set(float64(failed))
	m.c.canaryP50.WithLabelValues(vs...).Set(p50.Seconds())
	m.c.canaryP95.WithLabelValues(vs...).Set(p95.Seconds())
}

// CanaryEnded removes a workload's cohort figures: its canary was promoted
// or aborted, and a figure that no longer moves must not read as live.
func (m *Metrics) CanaryEnded(workload string) {
	match := prometheus.Labels{"workload": workload}
	if m.c.hosts {
		match["host"] = m.host
	}
	for _, g := range m.c.canaryGauges {
		g.DeletePartialMatch(match)
	}
}

// Handler serves the registry in Prometheus's text format (or OpenMetrics,
// as the scraper asks), with a count of the scrapes and their errors.
func (m *Metrics) Handler() http.Handler {
	h := promhttp.HandlerFor(m.c.reg, promhttp.HandlerOpts{
		Registry:            m.c.reg,
		MaxRequestsInFlight: maxScrapes,
		Timeout:             scrapeTimeout,
		EnableOpenMetrics:   true,
	})
	return promhttp.InstrumentMetricHandler(m.c.reg, h)
}

// The bounds of the server of Listen.
const (
	maxScrapes      = 4
	scrapeTimeout   = 10 * time.Second
	readTimeout     = 10 * time.Second
	writeTimeout    = 30 * time.Second
	idleTimeout     = 60 * time.Second
	maxHeaderBytes  = 16 << 10
	shutdownTimeout = 5 * time.Second
)

// readHeaderTimeout bounds how long a scrape's header may take (a var for
// the test that proves it).
var readHeaderTimeout = 5 * time.Second

// onConnLimit, if set, is called each time the server waits because it
// holds maxConns connections (for the test that proves the bound).
var onConnLimit func()

// Server serves a Metrics on one address until Close.
type Server struct {
	srv    *http.Server
	ln     net.Listener
	served chan error
}

// Listen serves m's Handler at Path on addr (host:port; port 0 picks a
// free one, Addr says which), until Close. Any other path is 404.
func Listen(addr string, m *Metrics) (*Server, error) {
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	ln := limitListen(tcp, maxConns, onConnLimit)
	mux := http.NewServeMux()
	mux.Handle(Path, m.Handler())
	s := &Server{
		srv: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       readTimeout,
			WriteTimeout:      writeTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
		},
		ln:     ln,
		served: make(chan error, 1),
	}
	go func() { s.served <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the server: it stops listening at once, lets the scrapes in
// flight end (bounded), and returns once it has. It returns why the server
// stopped serving before, if it did.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	if served := <-s.served; !errors.Is(served, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serving %s: %w", s.Addr(), served)
	}
	if err != nil {
		return fmt.Errorf("metrics: closing %s: %w", s.Addr(), err)
	}
	return nil
}
