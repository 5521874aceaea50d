package tui

import (
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// The fleet fixtures: three hosts, each with a session snapshot of the
// one-host fixtures, and the fleet's decision made by fleet.Decide itself
// (a pure function), round by round, so the waves, their waits and each
// host's verdict are what the fleet would say.

var fleetPolicy = spec.Fleet{Canary: []string{"edge-1"}, Batch: spec.Batch{Count: 1}, Wait: 2 * time.Minute, OnFailure: spec.OnFailurePause}

// onHost is session snapshot s as host name's session sends it.
func onHost(name string, seq uint64, s session.Snapshot) session.Snapshot {
	s.Seq = seq
	s.Engine.Endpoint = "ssh://deploy@" + name
	s.Lock.Path = "/run/lock/rollcall-" + name + ".lock"
	return s
}

// facts is what the fleet reads of a host's session, for Decide.
func facts(name string, s session.Snapshot) fleet.Host {
	plan := fleet.PlanRolling
	if s.Standing.Kind == session.StandingConverged {
		plan = fleet.PlanConverged
	}
	return fleet.Host{Name: name, EngineID: "engine-of-" + name, Reachable: s.Connected, LockHeld: s.Lock.Held,
		Plan: plan, Healthy: s.Progress.Ready, Slots: s.Progress.Total}
}

// round is one decision of a rollout: the hosts' facts at a moment.
type round struct {
	at       time.Time
	approved map[int]bool
	hosts    []fleet.Host
}

// decideRounds runs Decide round after round, each with the record of the
// one before, and returns the last decision.
func decideRounds(mode session.Mode, rounds ...round) fleet.Decision {
	var d fleet.Decision
	for _, r := range rounds {
		d = fleet.Decide(fleet.Input{Hosts: r.hosts, Policy: fleetPolicy, Mode: mode, Approved: r.approved, Now: r.at, Record: d.Record})
	}
	return d
}

// fleetOf is the fleet's snapshot of the hosts' sessions (in file order)
// and the decision d.
func fleetOf(seq uint64, mode session.Mode, d fleet.Decision, approved map[int]bool, names []string, sessions ...session.Snapshot) fleet.Snapshot {
	s := fleet.Snapshot{Seq: seq, At: t0, Source: "rollcall.yaml", Desired: &spec.Desired{Prefix: pfx}, Mode: mode,
		RolloutID: "rollout-7f3a9c", Decision: d, Approved: approved}
	for i, name := range names {
		s.Hosts = append(s.Hosts, fleet.HostView{Name: name, Endpoint: "ssh://deploy@" + name, Dialed: true,
			Session: sessions[i], Verdict: d.Verdict(name)})
	}
	return s
}

var edges = []string{"edge-1", "edge-2", "edge-3"}

// pendingHost is a host whose wave has not started: its session plans the
// roll and runs nothing (the fleet holds it).
func pendingHost(seq uint64) session.Snapshot {
	s := onHost("edge-3", seq, staged())
	s.Waiting = "held by the fleet: its wave has not started"
	return s
}

// fleetMidRoll: the canary edge-1 rolled and is done, edge-2's wave runs
// (web rolls, the worker restarts), and edge-3 waits for edge-2 to be
// healthy, then for its approval.
func fleetMidRoll() fleet.Snapshot {
	e1, e2, e3 := onHost("edge-1", 40, converged()), onHost("edge-2", 57, midRoll()), pendingHost(12)
	before := onHost("edge-1", 1, staged())
	d := decideRounds(session.ModeStep,
		round{t0.Add(-10 * time.Minute), map[int]bool{0: true}, []fleet.Host{facts("edge-1", before), facts("edge-2", e2), facts("edge-3", e3)}},
		round{t0.Add(-5 * time.Minute), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}},
		round{t0, map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}},
	)
	s := fleetOf(90, session.ModeStep, d, map[int]bool{0: true, 1: true}, edges, e1, e2, e3)
	s.Notes = []session.Note{{At: t0.Add(-3 * time.Minute), Text: "wave 2 started: edge-2"}}
	return s
}

// fleetSoak: edge-1 and edge-2 are done; edge-3's wave waits for the soak
// after edge-2's wave (40s left) and for its approval.
func fleetSoak() fleet.Snapshot {
	e1, e2, e3 := onHost("edge-1", 40, converged()), onHost("edge-2", 61, converged()), pendingHost(12)
	rolling := onHost("edge-2", 57, midRoll())
	before := onHost("edge-1", 1, staged())
	d := decideRounds(session.ModeStep,
		round{t0.Add(-20 * time.Minute), map[int]bool{0: true}, []fleet.Host{facts("edge-1", before), facts("edge-2", rolling), facts("edge-3", e3)}},
		round{t0.Add(-15 * time.Minute), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", rolling), facts("edge-3", e3)}},
		round{t0.Add(-12 * time.Minute), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", rolling), facts("edge-3", e3)}},
		round{t0.Add(-80 * time.Second), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}},
		round{t0, map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}},
	)
	return fleetOf(120, session.ModeStep, d, map[int]bool{0: true, 1: true}, edges, e1, e2, e3)
}

// soakAtRest is fleetSoak half a minute on: every age on screen is in
// minutes or hours, the soonest to change 30s away, and only the soak
// (10s left) counts down.
func soakAtRest() fleet.Snapshot {
	s := fleetSoak()
	s.At = t0.Add(30 * time.Second)
	for i := range s.Hosts {
		s.Hosts[i].Session.At = s.At
		s.Hosts[i].Session.Running = nil
	}
	return s
}

// fleetPaused: edge-2 went away mid-roll: it is lost, and the rollout
// pauses, loudly; edge-3's wave does not start.
func fleetPaused() fleet.Snapshot {
	e1, e2, e3 := onHost("edge-1", 40, converged()), onHost("edge-2", 58, midRoll()), pendingHost(12)
	e2.Connected, e2.Running = false, nil
	e2.EngineErr = "error during connect: ssh: connect to host edge-2 port 22: Connection refused"
	e2.Standing = session.Standing{Kind: session.StandingBlocked, Causes: []session.Cause{{Kind: session.CauseEngine, Why: e2.EngineErr}}}
	before := onHost("edge-1", 1, staged())
	live := onHost("edge-2", 57, midRoll())
	d := decideRounds(session.ModeStep,
		round{t0.Add(-10 * time.Minute), map[int]bool{0: true}, []fleet.Host{facts("edge-1", before), facts("edge-2", live), facts("edge-3", e3)}},
		round{t0.Add(-5 * time.Minute), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", live), facts("edge-3", e3)}},
		round{t0.Add(-time.Minute), map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", live), facts("edge-3", e3)}},
		round{t0, map[int]bool{0: true, 1: true}, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}},
	)
	return fleetOf(95, session.ModeStep, d, map[int]bool{0: true, 1: true}, edges, e1, e2, e3)
}

// fleetWatching: a second console watches the mid-roll across the hosts:
// alice's rollcall holds every lock.
func fleetWatching() fleet.Snapshot {
	alice := session.LockInfo{Holder: &session.LockHolder{User: "alice", PID: 4242, Since: t0.Add(-time.Hour)}}
	e1, e2, e3 := onHost("edge-1", 40, converged()), onHost("edge-2", 57, watching()), pendingHost(12)
	for _, s := range []*session.Snapshot{&e1, &e2, &e3} {
		s.Mode, s.Lock = session.ModeWatch, alice
	}
	d := decideRounds(session.ModeWatch, round{t0, nil, []fleet.Host{facts("edge-1", e1), facts("edge-2", e2), facts("edge-3", e3)}})
	return fleetOf(91, session.ModeWatch, d, nil, edges, e1, e2, e3)
}

// fleetConverged: every host done, nothing to do, and every age on screen
// in minutes or more, the soonest to change 30s on: an idle console.
func fleetConverged(seq uint64) fleet.Snapshot {
	var ss []session.Snapshot
	var hosts []fleet.Host
	for i, name := range edges {
		s := onHost(name, uint64(40+i), idleSnapshot(40))
		ss = append(ss, s)
		hosts = append(hosts, facts(name, s))
	}
	d := decideRounds(session.ModeStep, round{t0, nil, hosts})
	s := fleetOf(seq, session.ModeStep, d, nil, edges, ss...)
	s.At, s.Outcome = t0.Add(30*time.Second), fleet.Outcome{Kind: fleet.OutcomeConverged}
	return s
}

// fupdate feeds the fleet console one message.
func fupdate(m FleetModel, msg tea.Msg) (FleetModel, tea.Cmd) {
	nm, cmd := m.Update(msg)
	return nm.(FleetModel), cmd
}

// fsized is a fleet console of theme th at w×h showing s.
func fsized(th theme.Name, w, h int, s fleet.Snapshot, opts ...func(*FleetOptions)) FleetModel {
	o := FleetOptions{Theme: th}
	for _, f := range opts {
		f(&o)
	}
	m := NewFleet(o)
	m, _ = fupdate(m, tea.WindowSizeMsg{Width: w, Height: h})
	m, _ = fupdate(m, fleetSnapshotMsg{snap: s, ok: true})
	return m
}

// fpress sends a key to the fleet console, and runs what it returns (the
// intents it sends).
func fpress(m FleetModel, k string) FleetModel {
	m, cmd := fupdate(m, keyMsg(k))
	run(cmd)
	return m
}

// fleetRecorder collects the intents the fleet console sends.
type fleetRecorder struct {
	mu  sync.Mutex
	got []fleet.Intent
}

func (r *fleetRecorder) do(i fleet.Intent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, i)
}

func (r *fleetRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

func (r *fleetRecorder) take() []fleet.Intent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.got
	r.got = nil
	return out
}
