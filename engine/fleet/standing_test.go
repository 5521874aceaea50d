package fleet

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// desiredWeb is a desired state of one workload, web.
func desiredWeb() *spec.Desired {
	return &spec.Desired{Prefix: "t", Workloads: map[string]*spec.Workload{"web": {Name: "web"}}}
}

// snapOf is a host's session snapshot of want (its images resolved from
// want itself), standing at st.
func snapOf(want *spec.Desired, seq uint64, st session.Standing) session.Snapshot {
	r := &spec.ResolvedDesired{Prefix: want.Prefix}
	for _, w := range want.Workloads {
		r.Workloads = append(r.Workloads, spec.Resolved{Workload: w})
	}
	return session.Snapshot{Seq: seq, Desired: want, Resolved: r, Connected: true, Standing: st}
}

// oneHostRun is a run of one host, a, handed want, its rollout done.
func oneHostRun(want *spec.Desired, since time.Time) (*run, *host) {
	// Its gate is closed already (setWant asks no session to close it).
	h := &host{name: "a", sess: new(session.Session), want: want, wantSince: since, src: newHostSource("t", want), gateWhy: "test"}
	r := &run{desired: want, hosts: []*host{h}, mode: session.ModeAuto, journal: &lines{},
		opts: Options{Now: func() time.Time { return since.Add(time.Minute) }},
		dec:  Decision{Phase: PhaseDone, Hosts: []Verdict{{Host: "a", Status: HostDone}}}}
	return r, h
}

// The fleet reads each host's plan state, its steady and its outcome
// from the host session's standing (issue 29 item 2): a relist, which
// leaves the session's last decision standing (Pending), does not make a
// converged fleet unsteady; a standing the session decided before the
// fleet handed it a new desired state is not taken as one of it; a
// rollback by failure_action since then fails the host, one from before
// does not; a refusal is over for apply.
func TestFleetReadsTheHostsStanding(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	want := desiredWeb()
	r, h := oneHostRun(want, t0)
	converged := session.Standing{Kind: session.StandingConverged}

	s := snapOf(want, 1, converged)
	s.Fresh, s.Steady = true, true
	h.observe(s, t0)
	if got := h.planState(); got != PlanConverged || !r.steady() {
		t.Fatalf("decided converged: plan state %d, steady %v", got, r.steady())
	}
	if o := r.outcome(&Snapshot{Steady: r.steady()}); o.Kind != OutcomeConverged || o.Hosts[0].Plan != PlanConverged {
		t.Errorf("outcome %+v, want converged", o)
	}

	// A relist: not fresh, not steady, the last decision stands.
	relist := converged
	relist.Pending = true
	h.observe(snapOf(want, 2, relist), t0)
	if got := h.planState(); got != PlanConverged || !r.steady() {
		t.Errorf("during a relist: plan state %d, steady %v; want the last decision, converged", got, r.steady())
	}
	// The engine blinks: the fleet reads that itself (Reachable), and
	// keeps the host's last decision.
	down := snapOf(want, 3, session.Standing{Kind: session.StandingBlocked, Causes: []session.Cause{{Kind: session.CauseEngine, Why: "gone"}}})
	down.Connected, down.EngineErr = false, "gone"
	h.observe(down, t0)
	if got := h.planState(); got != PlanConverged {
		t.Errorf("engine away: plan state %d, want the last decision, converged", got)
	}

	// A new desired state handed over: the converged decision was of the
	// one before. A snapshot of the new one whose standing is still that
	// decision (pending: the disk busy after the list) is not converged.
	next := desiredWeb()
	r.desired = next
	r.setWant(h, next, "test")
	stale := snapOf(next, 4, relist)
	stale.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{Name: "web", Steps: []reconcile.Step{{Action: reconcile.ActStart, Workload: "web"}}}}}
	h.observe(stale, t0)
	if got := h.planState(); got == PlanConverged || r.steady() {
		t.Errorf("a standing decided before the new desired state: plan state %d, steady %v; want not converged", got, r.steady())
	}
	h.observe(snapOf(next, 5, session.Standing{Kind: session.StandingRolling}), t0)
	if got := h.planState(); got != PlanRolling {
		t.Errorf("decided rolling: plan state %d", got)
	}

	// Rolled back by failure_action: after the hand-over it fails the
	// host; before it, it does not.
	since := h.wantSince
	held := func(at time.Time) session.Standing {
		rb := session.RollbackInfo{Workload: "web", Slot: 1, Hash: "abc", At: at}
		return session.Standing{Kind: session.StandingHeld, Causes: []session.Cause{{Kind: session.CauseRolledBack, Workload: "web", Rollback: &rb}}}
	}
	h.observe(snapOf(next, 6, held(since.Add(-time.Second))), t0)
	if got := h.planState(); got != PlanRolling {
		t.Errorf("a rollback from before the hand-over: plan state %d, want rolling", got)
	}
	h.observe(snapOf(next, 7, held(since.Add(time.Second))), t0)
	if got := h.planState(); got != PlanFailed {
		t.Errorf("a rollback since the hand-over: plan state %d, want failed", got)
	}
	// An operator's pause is not a failed roll.
	pause := session.PauseInfo{ByOperator: true, Reason: "look"}
	h.observe(snapOf(next, 8, session.Standing{Kind: session.StandingHeld, Causes: []session.Cause{{Kind: session.CauseOperatorPause, Pause: &pause}}}), t0)
	if got := h.planState(); got != PlanRolling {
		t.Errorf("the operator's pause: plan state %d, want rolling", got)
	}

	// A refusal: the host is stuck, the run over for apply.
	ref := session.Refusal{Stops: 3, Running: 3, Reason: "it would stop 3 of 3"}
	h.observe(snapOf(next, 9, session.Standing{Kind: session.StandingFailed, Causes: []session.Cause{{Kind: session.CauseRefused, Refusal: &ref}}}), t0)
	o := r.outcome(&Snapshot{Steady: r.steady()})
	if got := h.planState(); got != PlanFailed || o.Kind != OutcomeHostStuck || !o.Hosts[0].Stuck || !o.Over() || o.OK() {
		t.Errorf("refused: plan state %d, outcome %+v; want failed, host stuck", got, o)
	}
}

// A failed pull's kind is read from the session's facts (the last step
// failed fact of that pull), not looked for in its recent steps: a
// snapshot whose Recent no longer has it still says why (issue 29 item 3).
func TestFleetPullKindFromFacts(t *testing.T) {
	pull := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot}
	s := session.Snapshot{
		Plan:  reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{Name: "web", Steps: []reconcile.Step{pull}}}},
		Steps: map[string]session.StepStatus{pull.Key(): {State: session.StepFailed}},
		Facts: []session.Fact{
			{Seq: 1, Kind: session.FactStepFailed, Step: pull, Result: &session.StepResult{Step: pull, Err: "no such host", PullKind: docker.PullUnreachable}},
			{Seq: 2, Kind: session.FactWaiting, Step: reconcile.Step{Action: reconcile.ActWait, Workload: "web"}},
		},
	}
	p := pullState(s)
	if !p.Pending || !p.Failed || p.Kind != docker.PullUnreachable {
		t.Errorf("pull state %+v, want pending, failed, %s", p, docker.PullUnreachable)
	}
}

// A host whose session sees a new container miss its health deadline is
// a failed host for the fleet's on_failure, whatever the workload's
// failure_action: with continue its session rolls on (its standing stays
// rolling), and only the standing's Failing says so.
func TestFleetCountsAFailingHostFailed(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	st := session.Standing{Kind: session.StandingRolling,
		Failing: []reconcile.Failure{{Workload: "web", Slot: 0, Container: "web-0-bad", Action: "continue"}}}
	if got := planOf(st, t0); got != PlanFailed {
		t.Fatalf("plan state %v of a host whose new container failed (continue), want failed", got)
	}
	st.Failing = nil
	if got := planOf(st, t0); got != PlanRolling {
		t.Fatalf("plan state %v once it no longer fails, want rolling", got)
	}
}
