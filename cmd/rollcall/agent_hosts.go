package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/metrics"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// `rollcall agent` of a file with hosts: the fleet runtime in auto mode
// under the unattended policy, as the agent runs one session: until
// SIGTERM or SIGINT, following the desired source. Its log is the fleet's
// (every host's session lines carry host=NAME, the fleet's own its
// rollout), as JSON lines. What the fleet cannot get past by itself is
// logged each time it changes and waited out, as a pause is, but for
// what no later desired state can mend in this process: a host the file
// gets wrong, a host that did not answer at preflight (it stays
// unreachable for the rest of the run; the agent exits 1 for systemd to
// start it again), a lock held elsewhere, the journal.

// agentHosts are the agent's flags that matter with hosts:.
type agentHosts struct {
	allowMassStop, skipUnreachable bool
	metricsAddr                    string // --metrics-addr: every host's series on one registry, with host=NAME
}

func runAgentHosts(ctx context.Context, e env, g *globals, source source.Source, d *spec.Desired, o agentHosts) error {
	if err := noDockerHost(g, d); err != nil {
		return err
	}
	if err := checkHosts(d); err != nil {
		return err
	}
	j, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return withHint(err, "pass --journal PATH to keep it elsewhere")
	}
	defer j.Close()
	log := slog.New(slog.NewJSONHandler(e.stderr, nil))
	log.Info("agent started", "source", source.Name(), "prefix", d.Prefix, "workloads", len(d.Workloads), "hosts", len(d.Hosts))
	m, stopMetrics, err := serveMetrics(log, o.metricsAddr, metrics.Options{Hosts: true})
	if err != nil {
		return err
	}
	defer stopMetrics()
	var observer func(string) session.Observer
	if m != nil {
		observer = func(host string) session.Observer { return m.Host(host) }
	}
	f := fleet.New(fleet.Options{
		Source: prefixed{source, g.prefix}, Dial: fleetDialer(e, baseDir(d.Source)), Mode: session.ModeAuto,
		SkipUnreachable: o.skipUnreachable, Journal: j, JournalMode: "agent", Now: e.now, StateDir: g.stateDir(),
		Unattended: &session.Unattended{AllowMassStop: o.allowMassStop}, Log: log, Observer: observer,
	})
	blocked := ""
	var fatal string
	var hostErrs spec.ErrorList
	_, _, err = driveFleet(ctx, f, e.abandon, func(s fleet.Snapshot) bool {
		if s.Blocked != blocked && len(s.Decision.Hosts) > 0 {
			blocked = s.Blocked
			if blocked != "" {
				log.Error("fleet blocked: waiting", "why", blocked, "rollout", s.RolloutID)
			}
		}
		if fatal != "" {
			return false
		}
		fatal, hostErrs = agentFatal(s)
		return fatal != ""
	})
	if err != nil {
		return err
	}
	if fatal != "" {
		log.Error("agent stopped", "error", fatal)
		if len(hostErrs) > 0 {
			return hostErrs
		}
		return &exitError{code: exitFailed, err: errors.New(fatal)}
	}
	log.Info("agent stopped")
	return nil
}

// agentFatal is what ends the agent, not converged: what nothing in this
// process mends. "" while it goes on.
func agentFatal(s fleet.Snapshot) (string, spec.ErrorList) {
	switch {
	case len(s.HostErrors) > 0:
		return s.Blocked, s.HostErrors
	case s.Halted != "":
		return "halted: " + s.Halted, nil
	case s.LockErr != "":
		return s.LockErr, nil
	}
	for _, h := range s.Outcome.Hosts {
		// a host's session that halted, as its standing says
		if st := h.Standing; st.Kind == session.StandingFailed && len(st.Causes) > 0 && st.Causes[0].Kind == session.CauseHalted {
			return h.Host + " " + st.Said(), nil
		}
	}
	switch {
	case len(s.Decision.Hosts) == 0 || s.Decision.Record.Started():
		return "", nil
	}
	for i, hv := range s.Hosts {
		if hv.DialErr != "" && s.Decision.Hosts[i].Status != fleet.HostLeftOut {
			return s.Blocked, nil
		}
	}
	return "", nil
}
