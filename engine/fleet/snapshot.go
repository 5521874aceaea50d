package fleet

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// input is everything Decide reads, from the hosts' sessions as last
// seen. A host that reaches the engine of a host before it stands as that
// host under its own name: Decide then says both are one engine.
func (r *run) input(now time.Time) Input {
	hosts := make([]Host, len(r.hosts))
	index := map[string]int{}
	for i, h := range r.hosts {
		hosts[i] = h.input(now, r.opts.LostGrace)
		index[h.name] = i
	}
	for i, h := range r.hosts {
		if h.dup != "" {
			same := hosts[index[h.dup]]
			same.Name = h.name
			hosts[i] = same
		}
	}
	return Input{Hosts: hosts, Policy: *r.desired.Fleet, Mode: r.mode, SkipUnreachable: r.opts.SkipUnreachable,
		Approved: maps.Clone(r.approved), ApprovedAll: r.approvedAll, Now: now, Record: r.rec}
}

func (r *run) snapshot() Snapshot {
	s := Snapshot{Seq: r.seq, At: r.now(), Source: r.opts.Source.Name(), Desired: r.desired, SourceErr: r.srcErr,
		Mode: r.mode, RolloutID: r.f.rolloutID(), RolloutAt: r.rolloutAt, Decision: r.dec, Approved: maps.Clone(r.approved), ApprovedAll: r.approvedAll,
		Notes: slices.Clone(r.notes), HostErrors: r.hostErrors(), LockErr: r.lockErr, Halted: r.halted}
	for _, h := range r.hosts {
		v := HostView{Name: h.name, Endpoint: hostWhere(h.spec), Dialed: h.client != nil, DialErr: h.dialErr,
			Session: h.snap, Verdict: r.dec.Verdict(h.name), EngineID: h.info.ID, Err: h.hostErr,
			Lock: HostLock{Holder: h.holder, Err: h.lockErr}, RolledBack: h.rolledBack}
		if lk := h.lock.Load(); lk.Held() {
			v.Lock.Path, v.Lock.Held = lk.Path, true
		}
		if h.sess != nil && !h.gateOpen {
			v.Gate = h.gateWhy
		}
		if h.sessErr != "" && v.DialErr == "" {
			v.DialErr = "session: " + h.sessErr
		}
		s.Hosts = append(s.Hosts, v)
	}
	s.Steady = r.steady()
	s.Blocked = r.blocked()
	s.Outcome = r.outcome(&s)
	return s
}

// outcome is where the run stands as a whole, from the fleet's decision
// and each host's standing: the one place the fleet says "done or
// failed". Over when the fleet is blocked (once it decided, or with no
// desired state: before its first decision, a host that does not answer
// may yet be left out), halted, a host's session halted or refused the
// desired state, or every host stands converged (Steady).
func (r *run) outcome(s *Snapshot) Outcome {
	var o Outcome
	decided := len(r.dec.Hosts) == len(r.hosts)
	stuck, leftOut := false, false
	for i, h := range r.hosts {
		ho := HostOutcome{Host: h.name, Plan: h.planState(), Standing: h.snap.Standing, Stuck: stuckOn(h.snap.Standing)}
		ho.LeftOut = decided && r.dec.Hosts[i].Status == HostLeftOut
		stuck, leftOut = stuck || ho.Stuck, leftOut || ho.LeftOut
		o.Hosts = append(o.Hosts, ho)
	}
	switch {
	case len(s.HostErrors) > 0 || s.Halted != "" || s.Blocked != "" && (len(r.dec.Hosts) > 0 || r.desired == nil):
		o.Kind, o.Why = OutcomeBlocked, s.Blocked
		if o.Why == "" && s.Halted != "" {
			o.Why = "halted: " + s.Halted
		}
	case stuck:
		o.Kind = OutcomeHostStuck
	case s.Steady && leftOut:
		o.Kind = OutcomeLeftOut
	case s.Steady:
		o.Kind = OutcomeConverged
	}
	return o
}

// stuckOn reports whether a host's session stands where only a human moves
// it on: halted, or refusing the desired state.
func stuckOn(st session.Standing) bool {
	if st.Kind != session.StandingFailed {
		return false
	}
	for _, c := range st.Causes {
		if c.Kind == session.CauseHalted || c.Kind == session.CauseRefused {
			return true
		}
	}
	return false
}

// hostWhere names how a host is reached, as the file writes it.
func hostWhere(h *spec.Host) string {
	if h.Transport == spec.TransportContext {
		return "context " + h.Context
	}
	return h.Endpoint
}

// steady: every host of the rollout stands converged on the desired state
// the fleet handed it (its session's standing), and the rollout is done
// (its last line journaled); in watch mode, every host stands converged.
func (r *run) steady() bool {
	if r.desired == nil || len(r.dec.Hosts) != len(r.hosts) || r.locking || r.journal.pending() > 0 {
		return false
	}
	for i, h := range r.hosts {
		if r.dec.Hosts[i].Status == HostLeftOut && r.rec.Started() {
			continue
		}
		if h.sess == nil || h.planState() != PlanConverged || h.rolledBack {
			return false
		}
	}
	return !r.mode.Acting() || r.dec.Phase == PhaseDone
}

// blocked says why the rollout cannot go on by itself; "" when it can, or
// is done.
func (r *run) blocked() string {
	var why []string
	if r.desired == nil {
		if r.srcErr != nil {
			return "no desired state: " + r.srcErr.Error()
		}
		return ""
	}
	if r.halted != "" {
		why = append(why, "halted: "+r.halted)
	}
	if r.lockErr != "" && !r.mode.Acting() {
		why = append(why, r.lockErr)
	}
	for _, e := range r.hostErrors() {
		why = append(why, e.Msg)
	}
	if !r.rec.Started() && r.mode.Acting() {
		for i, h := range r.hosts {
			decided := len(r.dec.Hosts) == len(r.hosts)
			leftOut := r.opts.SkipUnreachable && (!decided || r.dec.Hosts[i].Status == HostLeftOut) // undecided: it may be left out
			if h.dialErr != "" && !leftOut {
				msg := fmt.Sprintf("%s does not answer: %s", h.name, h.dialErr)
				if r.opts.SkipUnreachable {
					// Decided and not left out: a host of the first wave.
					msg += " (a canary host: --skip-unreachable never leaves one out)"
				}
				why = append(why, msg)
			}
		}
	}
	switch r.dec.Phase {
	case PhasePaused:
		why = append(why, "the rollout is paused: "+r.failedHosts())
	case PhaseFinishing:
		if r.startedWavesSettled() {
			why = append(why, "the rollout finished its started waves with failed hosts: "+r.failedHosts())
		}
	case PhaseRollingBack:
		if r.rollbackEnded() {
			why = append(why, "rolled back after a failure: "+r.failedHosts())
		}
	}
	return strings.Join(why, "; ")
}

func (r *run) failedHosts() string {
	var out []string
	for _, f := range r.rec.Failed {
		cause := "failed"
		if f.Cause == CauseLost {
			cause = "lost"
		}
		out = append(out, f.Host+" "+cause)
	}
	return strings.Join(out, ", ")
}

// startedWavesSettled: every host of a started wave is done or failed.
func (r *run) startedWavesSettled() bool {
	for _, v := range r.dec.Hosts {
		if v.Wave >= 0 && v.Wave < r.rec.Waves && v.Status == HostRolling {
			return false
		}
	}
	return true
}

// rollbackEnded: every host told to roll back stands converged on the
// desired state it ran before, or has none to return to.
func (r *run) rollbackEnded() bool {
	for i, h := range r.hosts {
		if r.dec.Hosts[i].Action != RollBack {
			continue
		}
		if !h.noBefore && !(h.rolledBack && h.planState() == PlanConverged) {
			return false
		}
	}
	return true
}
