package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/metrics"
	"github.com/rollcall/rollcall/engine/session"
)

func newAgentCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	var allowMassStop, skipUnreachable bool
	var metricsAddr string
	c := &cobra.Command{
		Use:   "agent [-f FILE|URL] [--token-file PATH] [--skip-unreachable] [--metrics-addr HOST:PORT]",
		Short: "Converge forever: the headless loop, for systemd",
		Long: `Converge, then keep converging as the engine or the desired state changes,
until SIGTERM or SIGINT. The desired state is a file, followed however it is
replaced (in place, by rename, through symbolic links such as a Kubernetes
ConfigMap's), or an http(s) URL, polled every 5s with ETag (--token-file
sends a bearer token read from a file at each poll). It is the console's session in auto mode, with the
unattended policy in place of the questions a console asks:

  - a desired change that would stop or roll more than half of the running
    containers is refused and logged, and the agent waits for the next
    desired change (--allow-mass-stop lets it through);
  - stop-first steps the file asks for run, logged as downtime;
  - a changed desired state is acted on only once it parses and has stayed
    the same for the settle time (2s); a broken file, or a URL that fails
    or answers a broken document, keeps the last good state, and the error
    is logged (with its file, line and column for a broken document);
  - failure_action pause stops acting until the desired state changes;
    rollback and continue act as the file says; holds outlive the process.

Logs go to stderr as JSON lines (log/slog): every step as it starts and
ends, refusals, pauses, rollbacks, the engine disconnecting and coming back.
Every step is also journaled (mode "agent"). The desired state must load at
start. On a signal the step in flight is finished first. If the journal
cannot be written, the agent stops acting and exits 1.

--metrics-addr HOST:PORT serves Prometheus metrics at /metrics there (off
by default; :PORT listens on every interface, 127.0.0.1:PORT on this
machine only; the address bound is logged, so port 0 picks a free one):
rollcall_steps_total{action,outcome}, rollcall_step_duration_seconds,
rollcall_rollouts_started_total, rollcall_rollouts_total{outcome},
rollcall_holds_total{workload}, rollcall_rollbacks_total{workload},
rollcall_restarts_total{workload}, rollcall_engine_disconnects_total, the
canary's cohort figures (rollcall_canary_requests, _errors,
_latency_p50_seconds, _latency_p95_seconds by workload and cohort), and
the Go runtime's and the process's. With hosts:, every rollcall series
carries host=NAME. An address that cannot be listened on is an error at
start.

With hosts: in the file (several engines), the agent runs the fleet: each
host its own session as above (its log lines carry host=NAME), and the
rollout across them in waves, canary first, as apply runs it (see rollcall
apply --help); every change of the desired state is a new rollout. What
stops the rollout (a failed host) is logged and waited out until the next
desired change. The agent exits 1 at once when a host does not answer at
start (systemd then starts it again; --skip-unreachable leaves such a host
out, never a canary host), when two hosts reach one engine (at the
second's file:line:col), or when a host's lock is held elsewhere.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			src, err := file.choose(e)
			if err != nil {
				return err
			}
			source, err := src.open()
			if err != nil {
				return err
			}
			d, err := loadFrom(ctx, src, source, g.prefix)
			if err != nil {
				return err
			}
			if len(d.Hosts) > 0 {
				return runAgentHosts(ctx, e, g, source, d, agentHosts{allowMassStop: allowMassStop, skipUnreachable: skipUnreachable, metricsAddr: metricsAddr})
			}
			client, closeClient, err := connect(ctx, e, g)
			if err != nil {
				return err
			}
			defer closeClient()
			client, sw, err := engineFor(ctx, client, d)
			if err != nil {
				return err
			}
			lock, err := hostLock(ctx, client, d.Prefix)
			if err != nil {
				return err
			}
			defer lock.Release()
			j, err := journal.Open(g.journal, journal.Options{})
			if err != nil {
				return withHint(err, "pass --journal PATH to keep it elsewhere")
			}
			defer j.Close()
			log := slog.New(slog.NewJSONHandler(e.stderr, nil))
			log.Info("agent started", "source", source.Name(), "prefix", d.Prefix, "workloads", len(d.Workloads))
			m, stopMetrics, err := serveMetrics(log, metricsAddr, metrics.Options{})
			if err != nil {
				return err
			}
			defer stopMetrics()
			var observer session.Observer
			if m != nil {
				observer = m
			}
			s := session.New(session.Options{
				Client: client, Swarm: sw, Source: source, Mode: session.ModeAuto, Prefix: g.prefix,
				Journal: j, JournalMode: "agent", Lock: lock, Now: e.now, StateDir: g.stateDir(),
				Unattended: &session.Unattended{AllowMassStop: allowMassStop}, Log: log, Observer: observer,
			})
			defer abandonOn(e.abandon, s)() // a second signal cuts the step in flight short
			res := session.Serve(ctx, s)
			if !res.Converged {
				log.Error("agent stopped", "error", res.Reason)
				return &exitError{code: exitFailed, err: errors.New(res.Reason)}
			}
			log.Info("agent stopped")
			return nil
		},
	}
	fileFlag(c, &file)
	c.Flags().BoolVar(&allowMassStop, "allow-mass-stop", false, "let a desired change stop or roll more than half of the running containers (refused and logged otherwise)")
	c.Flags().BoolVar(&skipUnreachable, "skip-unreachable", false, "with hosts: leave a host that does not answer at start out of the rollout, journaled (never a canary host)")
	c.Flags().StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://HOST:PORT/metrics (e.g. 127.0.0.1:9464; off when empty)")
	return c
}

// serveMetrics serves the agent's metrics on addr until the returned stop
// is called, and logs the address bound; with addr "" it serves nothing
// and the Metrics is nil.
func serveMetrics(log *slog.Logger, addr string, o metrics.Options) (*metrics.Metrics, func(), error) {
	if addr == "" {
		return nil, func() {}, nil
	}
	m := metrics.New(o)
	srv, err := metrics.Listen(addr, m)
	if err != nil {
		return nil, nil, withHint(fmt.Errorf("--metrics-addr: %w", err), "give a free HOST:PORT, such as 127.0.0.1:9464")
	}
	log.Info("metrics listening", "addr", srv.Addr().String(), "path", metrics.Path)
	return m, func() {
		if err := srv.Close(); err != nil {
			log.Warn("metrics server", "error", err.Error())
		}
	}, nil
}
