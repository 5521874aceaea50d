package fleet

import (
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

var now = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// fiveHosts are a..e, each answering, locked, with a roll to do (0/3):
// under the default policy the waves are [a] [b c] [d e].
func fiveHosts() []Host {
	var hs []Host
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		hs = append(hs, Host{Name: n, EngineID: "id-" + n, Reachable: true, LockHeld: true, Plan: PlanRolling, Slots: 3})
	}
	return hs
}

func done(h *Host)      { h.Plan, h.Healthy = PlanConverged, h.Slots }
func unhealthy(h *Host) { h.Plan, h.Healthy = PlanConverged, h.Slots-1 }
func failed(h *Host)    { h.Plan = PlanFailed }
func lost(h *Host)      { h.Reachable = false }

// started is the record of a rollout whose first n waves started.
func started(n int) Record { return Record{Waves: n, SoakDue: true, Phase: PhaseRolling} }

func failure(host string, wave int, cause Cause, at time.Time) Failure {
	return Failure{Host: host, Wave: wave, Cause: cause, At: at}
}

// TestDecide is the fleet's "what acts now" as a table: preflight, the
// waves and their gates, step approvals, and each failure policy.
func TestDecide(t *testing.T) {
	pause := spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 2}, OnFailure: spec.OnFailurePause}
	tests := []struct {
		name  string
		hosts map[string]func(*Host)
		in    func(in *Input)
		phase Phase
		act   []string // hosts whose action is Act
		back  []string // hosts whose action is RollBack
		waves int      // Record.Waves after
		waits map[int][]Wait
		event []Event
	}{
		// Preflight.
		{name: "auto: preflight passes and the canary starts", phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Slots: 3}}, 2: {{Kind: WaitEarlierWave, Wave: 1}}},
			event: []Event{{Kind: EventBegan}, {Kind: EventWaveStarted, Wave: 0}}},
		{name: "preflight: a host that does not answer holds every host", hosts: map[string]func(*Host){"e": lost},
			phase: PhasePreflight, waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "e", Problem: ProblemUnreachable}}}},
		{name: "preflight: a lock not taken holds every host", hosts: map[string]func(*Host){"c": func(h *Host) { h.LockHeld = false }},
			phase: PhasePreflight, waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "c", Problem: ProblemLockNotHeld}}}},
		{name: "preflight: a host without a plan yet holds every host", hosts: map[string]func(*Host){"d": func(h *Host) { h.Plan = PlanUnknown }},
			phase: PhasePreflight, waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "d", Problem: ProblemUnobserved}}}},
		{name: "preflight: two hosts, one engine", hosts: map[string]func(*Host){"c": func(h *Host) { h.EngineID = "id-b" }},
			phase: PhasePreflight, waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "c", Problem: ProblemSameEngine, Other: "b"}}}},
		{name: "preflight: every problem is listed, and the later waves wait for the first",
			hosts: map[string]func(*Host){"b": lost, "e": func(h *Host) { h.LockHeld = false }}, phase: PhasePreflight,
			waits: map[int][]Wait{
				0: {{Kind: WaitPreflight, Host: "b", Problem: ProblemUnreachable}, {Kind: WaitPreflight, Host: "e", Problem: ProblemLockNotHeld}},
				1: {{Kind: WaitEarlierWave, Wave: 0}}, 2: {{Kind: WaitEarlierWave, Wave: 1}}}},
		{name: "skip-unreachable leaves a dead host out, and says so", hosts: map[string]func(*Host){"c": lost},
			in: func(in *Input) { in.SkipUnreachable = true }, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Slots: 3}}},
			event: []Event{{Kind: EventBegan}, {Kind: EventLeftOut, Host: "c"}, {Kind: EventWaveStarted, Wave: 0}}},
		{name: "skip-unreachable never leaves the canary out", hosts: map[string]func(*Host){"a": lost},
			in: func(in *Input) { in.SkipUnreachable = true }, phase: PhasePreflight,
			waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "a", Problem: ProblemUnreachable}}}},
		{name: "skip-unreachable does not skip a host locked by another", hosts: map[string]func(*Host){"c": func(h *Host) { h.LockHeld = false }},
			in: func(in *Input) { in.SkipUnreachable = true }, phase: PhasePreflight,
			waits: map[int][]Wait{0: {{Kind: WaitPreflight, Host: "c", Problem: ProblemLockNotHeld}}}},
		{name: "a converged fleet starts nothing", hosts: map[string]func(*Host){"a": done, "b": done, "c": done, "d": done, "e": done},
			phase: PhaseDone},
		{name: "watch mode acts on nothing, takes no lock and records nothing",
			hosts: map[string]func(*Host){"c": func(h *Host) { h.LockHeld = false }},
			in:    func(in *Input) { in.Mode = session.ModeWatch }, phase: PhaseWatching,
			waits: map[int][]Wait{0: {{Kind: WaitWatch}}, 2: {{Kind: WaitWatch}}}},
		{name: "watch mode holds a rollout under way", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) { in.Mode, in.Record = session.ModeWatch, started(2) }, phase: PhaseWatching, waves: 2,
			waits: map[int][]Wait{1: nil, 2: {{Kind: WaitWatch}}}},

		// Step mode.
		{name: "step: the canary waits for its approval", in: func(in *Input) { in.Mode = session.ModeStep }, phase: PhasePreflight,
			waits: map[int][]Wait{0: {{Kind: WaitApproval}}, 1: {{Kind: WaitEarlierWave, Wave: 0}, {Kind: WaitApproval}}}},
		{name: "step: an approved canary starts", in: func(in *Input) { in.Mode, in.Approved = session.ModeStep, map[int]bool{0: true} },
			phase: PhaseRolling, act: []string{"a"}, waves: 1,
			event: []Event{{Kind: EventBegan}, {Kind: EventWaveStarted, Wave: 0}}},
		{name: "step: the next wave waits for its own approval", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) {
				in.Mode, in.Approved, in.Record = session.ModeStep, map[int]bool{0: true}, started(1)
			}, phase: PhaseRolling, act: []string{"a"}, waves: 1, waits: map[int][]Wait{1: {{Kind: WaitApproval}}}},
		{name: "step: A approves the whole fleet rollout", hosts: map[string]func(*Host){"a": done},
			in:    func(in *Input) { in.Mode, in.ApprovedAll, in.Record = session.ModeStep, true, started(1) },
			phase: PhaseRolling, act: []string{"a", "b", "c"}, waves: 2, event: []Event{{Kind: EventWaveStarted, Wave: 1}}},
		{name: "step: an approval ahead of its wave waits for the gate", hosts: map[string]func(*Host){"a": unhealthy},
			in: func(in *Input) {
				in.Mode, in.Approved, in.Record = session.ModeStep, map[int]bool{1: true}, started(1)
			}, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Healthy: 2, Slots: 3}}}},

		// Waves, the health gate and the soak.
		{name: "the next wave starts once the canary is converged and healthy", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) { in.Record = started(1) }, phase: PhaseRolling, act: []string{"a", "b", "c"}, waves: 2,
			waits: map[int][]Wait{2: {{Kind: WaitHealth, Host: "b", Slots: 3}, {Kind: WaitHealth, Host: "c", Slots: 3}}},
			event: []Event{{Kind: EventWaveStarted, Wave: 1}}},
		{name: "a converged canary with a slot unhealthy holds the next wave", hosts: map[string]func(*Host){"a": unhealthy},
			in: func(in *Input) { in.Record = started(1) }, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Healthy: 2, Slots: 3}}}},
		{name: "a canary that turns unhealthy holds the started waves after it",
			hosts: map[string]func(*Host){"a": unhealthy},
			in:    func(in *Input) { in.Record = started(2) }, phase: PhaseRolling, act: []string{"a"}, waves: 2,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Healthy: 2, Slots: 3}}}},
		{name: "the soak starts when the canary is seen healthy", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) { in.Policy.Wait, in.Record = time.Minute, started(1) }, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitSoak, Until: now.Add(time.Minute)}}}},
		{name: "the soak holds the next wave until its end", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) {
				in.Policy.Wait, in.Record = time.Minute, started(1)
				in.Record.DoneAt = now.Add(-59 * time.Second)
			}, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitSoak, Until: now.Add(time.Second)}}}},
		{name: "after the soak the next wave starts", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) {
				in.Policy.Wait, in.Record = time.Minute, started(1)
				in.Record.DoneAt = now.Add(-time.Minute)
			}, phase: PhaseRolling, act: []string{"a", "b", "c"}, waves: 2, event: []Event{{Kind: EventWaveStarted, Wave: 1}}},
		{name: "a canary unhealthy during the soak starts it over", hosts: map[string]func(*Host){"a": unhealthy},
			in: func(in *Input) {
				in.Policy.Wait, in.Record = time.Minute, started(1)
				in.Record.DoneAt = now.Add(-2 * time.Minute)
			}, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "a", Healthy: 2, Slots: 3}}}},
		{name: "step: the soak and the approval are waited for together", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) {
				in.Mode, in.Policy.Wait, in.Record = session.ModeStep, time.Minute, started(1)
				in.Record.DoneAt = now
			}, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitSoak, Until: now.Add(time.Minute)}, {Kind: WaitApproval}}}},
		{name: "a rerun skips the waves that are done, without soak or approval",
			hosts: map[string]func(*Host){"a": done, "b": done, "c": done},
			in: func(in *Input) {
				in.Mode, in.Policy.Wait, in.Approved = session.ModeStep, time.Hour, map[int]bool{2: true}
			}, phase: PhaseRolling, act: []string{"a", "b", "c", "d", "e"}, waves: 3,
			event: []Event{{Kind: EventBegan}, {Kind: EventWaveStarted, Wave: 0, Skipped: true},
				{Kind: EventWaveStarted, Wave: 1, Skipped: true}, {Kind: EventWaveStarted, Wave: 2}}},
		{name: "a rerun asks for the first wave with work", hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) { in.Mode = session.ModeStep }, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitApproval}}},
			event: []Event{{Kind: EventBegan}, {Kind: EventWaveStarted, Wave: 0, Skipped: true}}},
		{name: "every wave converged and healthy is done", hosts: map[string]func(*Host){"a": done, "b": done, "c": done, "d": done, "e": done},
			in: func(in *Input) { in.Record = started(3) }, phase: PhaseDone, act: []string{"a", "b", "c", "d", "e"}, waves: 3,
			event: []Event{{Kind: EventPhase, Phase: PhaseDone}}},
		{name: "a host of the next wave that does not answer holds that wave, and is no failure",
			hosts: map[string]func(*Host){"a": done, "c": lost},
			in:    func(in *Input) { in.Record = started(1) }, phase: PhaseRolling, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitPreflight, Host: "c", Problem: ProblemUnreachable}}}},
		{name: "a host that lost its lock holds, and its wave says why",
			hosts: map[string]func(*Host){"a": done, "b": func(h *Host) { h.LockHeld = false }},
			in:    func(in *Input) { in.Record = started(2) }, phase: PhaseRolling, act: []string{"a", "c"}, waves: 2,
			waits: map[int][]Wait{1: {{Kind: WaitPreflight, Host: "b", Problem: ProblemLockNotHeld}}}},
		{name: "a left-out host stays out", hosts: map[string]func(*Host){"a": done, "b": done, "c": done},
			in: func(in *Input) {
				in.Record = started(2)
				in.Record.Left = []string{"e"}
			}, phase: PhaseRolling, act: []string{"a", "b", "c", "d"}, waves: 3, event: []Event{{Kind: EventWaveStarted, Wave: 2}}},

		// Failure.
		{name: "pause: a failed host holds every other host, and no later wave starts",
			hosts: map[string]func(*Host){"a": done, "b": failed},
			in:    func(in *Input) { in.Record = started(2) }, phase: PhasePaused, act: []string{"b"}, waves: 2,
			waits: map[int][]Wait{1: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}, 2: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "b", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhasePaused}}},
		{name: "pause: a failed host stays failed once its session rolled it back", hosts: map[string]func(*Host){"a": done, "b": done, "c": done},
			in: func(in *Input) {
				in.Record = started(2)
				in.Record.Failed, in.Record.Phase = []Failure{failure("b", 1, CauseRollFailed, now)}, PhasePaused
			}, phase: PhasePaused, waves: 2, act: []string{"b"},
			waits: map[int][]Wait{1: nil, 2: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}}},
		{name: "a failure in the canary stops the rollout", hosts: map[string]func(*Host){"a": failed},
			in: func(in *Input) { in.Record = started(1) }, phase: PhasePaused, act: []string{"a"}, waves: 1,
			waits: map[int][]Wait{1: {{Kind: WaitFailedHost, Host: "a", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 0, Host: "a", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhasePaused}}},
		{name: "continue: the started waves finish, and no later wave starts",
			hosts: map[string]func(*Host){"a": done, "b": failed},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 1, started(2)
			}, phase: PhaseFinishing, act: []string{"a", "b", "c"}, waves: 2,
			waits: map[int][]Wait{1: nil, 2: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "b", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhaseFinishing}}},
		{name: "continue: no later wave starts once the others finished",
			hosts: map[string]func(*Host){"a": done, "b": failed, "c": done},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 1, started(2)
				in.Record.Failed, in.Record.Phase = []Failure{failure("b", 1, CauseRollFailed, now)}, PhaseFinishing
			}, phase: PhaseFinishing, act: []string{"a", "b", "c"}, waves: 2,
			waits: map[int][]Wait{2: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}}},
		{name: "continue: a canary that fails after the next wave began holds none of it",
			hosts: map[string]func(*Host){"a": failed},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 1, started(2)
			}, phase: PhaseFinishing, act: []string{"a", "b", "c"}, waves: 2,
			waits: map[int][]Wait{1: nil, 2: {{Kind: WaitFailedHost, Host: "a", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 0, Host: "a", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhaseFinishing}}},
		{name: "continue: a host of the failed canary's wave still gates the next",
			hosts: map[string]func(*Host){"a": failed},
			in: func(in *Input) {
				in.Policy.Canary = []string{"a", "b"}
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 1, started(2)
			}, phase: PhaseFinishing, act: []string{"a", "b"}, waves: 2,
			waits: map[int][]Wait{1: {{Kind: WaitHealth, Host: "b", Slots: 3}}, 2: {{Kind: WaitFailedHost, Host: "a", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 0, Host: "a", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhaseFinishing}}},
		{name: "continue past max_failed_hosts pauses",
			hosts: map[string]func(*Host){"a": done, "b": failed, "c": failed},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 1, started(2)
			}, phase: PhasePaused, act: []string{"b", "c"}, waves: 2,
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "b", Cause: CauseRollFailed},
				{Kind: EventHostFailed, Wave: 1, Host: "c", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhasePaused}}},
		{name: "rollback_all: every host of the started waves rolls back",
			hosts: map[string]func(*Host){"a": done, "b": failed},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Record = spec.OnFailureRollbackAll, started(2)
			}, phase: PhaseRollingBack, back: []string{"a", "b", "c"}, waves: 2,
			waits: map[int][]Wait{1: nil, 2: {{Kind: WaitFailedHost, Host: "b", Cause: CauseRollFailed}}},
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "b", Cause: CauseRollFailed}, {Kind: EventPhase, Phase: PhaseRollingBack}}},
		{name: "a lost host pauses, whatever the policy says",
			hosts: map[string]func(*Host){"a": done, "c": lost},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Policy.MaxFailedHosts, in.Record = spec.OnFailureContinue, 3, started(2)
			}, phase: PhasePaused, waves: 2,
			waits: map[int][]Wait{2: {{Kind: WaitFailedHost, Host: "c", Cause: CauseLost}}},
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "c", Cause: CauseLost}, {Kind: EventPhase, Phase: PhasePaused}}},
		{name: "a lost host pauses before a rollback_all",
			hosts: map[string]func(*Host){"a": done, "c": lost},
			in:    func(in *Input) { in.Policy.OnFailure, in.Record = spec.OnFailureRollbackAll, started(2) },
			phase: PhasePaused, waves: 2,
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "c", Cause: CauseLost}, {Kind: EventPhase, Phase: PhasePaused}}},
		{name: "a rollback_all under way goes on when a host is lost",
			hosts: map[string]func(*Host){"a": done, "b": failed, "c": lost},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Record = spec.OnFailureRollbackAll, started(2)
				in.Record.Failed, in.Record.RollingBack, in.Record.Phase = []Failure{failure("b", 1, CauseRollFailed, now)}, true, PhaseRollingBack
			}, phase: PhaseRollingBack, back: []string{"a", "b"}, waves: 2,
			event: []Event{{Kind: EventHostFailed, Wave: 1, Host: "c", Cause: CauseLost}}},
		{name: "a rollback_all under way passes over a lost host that answers again",
			hosts: map[string]func(*Host){"a": done, "b": failed},
			in: func(in *Input) {
				in.Policy.OnFailure, in.Record = spec.OnFailureRollbackAll, started(2)
				in.Record.Failed = []Failure{failure("b", 1, CauseRollFailed, now), failure("c", 1, CauseLost, now)}
				in.Record.RollingBack, in.Record.Phase = true, PhaseRollingBack
			}, phase: PhaseRollingBack, back: []string{"a", "b"}, waves: 2},
		{name: "nothing more runs on a lost host when it answers again",
			hosts: map[string]func(*Host){"a": done},
			in: func(in *Input) {
				in.Record = started(2)
				in.Record.Failed, in.Record.Phase = []Failure{failure("c", 1, CauseLost, now)}, PhasePaused
			}, phase: PhasePaused, waves: 2},
		{name: "a host of a wave not started that fails its plan is no failure of the rollout",
			hosts: map[string]func(*Host){"e": failed},
			in:    func(in *Input) { in.Record = started(1) }, phase: PhaseRolling, act: []string{"a"}, waves: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hosts := fiveHosts()
			for i := range hosts {
				if f := tt.hosts[hosts[i].Name]; f != nil {
					f(&hosts[i])
				}
			}
			in := Input{Hosts: hosts, Policy: pause, Mode: session.ModeAuto, Now: now}
			if tt.in != nil {
				tt.in(&in)
			}
			before := in.Record
			d := Decide(in)
			if d.Phase != tt.phase {
				t.Errorf("phase %d, want %d", d.Phase, tt.phase)
			}
			if got := withAction(d, Act); !slices.Equal(got, tt.act) {
				t.Errorf("acting %q, want %q", got, tt.act)
			}
			if got := withAction(d, RollBack); !slices.Equal(got, tt.back) {
				t.Errorf("rolling back %q, want %q", got, tt.back)
			}
			if d.Record.Waves != tt.waves {
				t.Errorf("waves started %d, want %d", d.Record.Waves, tt.waves)
			}
			for k, want := range tt.waits {
				if k >= len(d.Waves) {
					t.Errorf("no wave %d", k)
					continue
				}
				if got := d.Waves[k].Waits; !reflect.DeepEqual(got, want) {
					t.Errorf("wave %d waits for %+v, want %+v", k, got, want)
				}
			}
			if !reflect.DeepEqual(d.Events, tt.event) {
				t.Errorf("events %+v, want %+v", d.Events, tt.event)
			}
			if in.Mode == session.ModeWatch && !reflect.DeepEqual(d.Record, before) {
				t.Errorf("watch mode recorded %+v", d.Record)
			}
		})
	}
}

func withAction(d Decision, a Action) []string {
	var names []string
	for _, v := range d.Hosts {
		if v.Action == a {
			names = append(names, v.Host)
		}
	}
	return names
}

func TestDecideRecordsWhatItSaw(t *testing.T) {
	pause := spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 2}, Wait: time.Minute, OnFailure: spec.OnFailurePause}
	hosts := fiveHosts()
	in := Input{Hosts: hosts, Policy: pause, Mode: session.ModeAuto, Now: now, SkipUnreachable: true}
	hosts[4].Reachable = false
	d := Decide(in)
	if !slices.Equal(d.Record.Left, []string{"e"}) || d.Record.Waves != 1 || !d.Record.SoakDue {
		t.Fatalf("record after preflight: %+v", d.Record)
	}
	if v := d.Verdict("e"); v.Wave != -1 || v.Status != HostLeftOut || v.Action != Hold {
		t.Errorf("left-out host: %+v", v)
	}
	if got := len(d.Waves); got != 3 || !slices.Equal(d.Waves[2].Hosts, []string{"d"}) {
		t.Errorf("waves without e: %+v", d.Waves)
	}
	// The canary turns healthy: the soak clock starts, and the decision
	// asks to be woken at its end.
	done(&hosts[0])
	in.Now, in.Record = now.Add(10*time.Second), d.Record
	d = Decide(in)
	if !d.Record.DoneAt.Equal(in.Now) || !d.WakeAt.Equal(in.Now.Add(time.Minute)) {
		t.Errorf("DoneAt %v WakeAt %v, want %v and a minute later", d.Record.DoneAt, d.WakeAt, in.Now)
	}
	if d.Waves[0].Status != WaveComplete || d.Waves[1].Status != WavePending {
		t.Errorf("wave statuses %d %d", d.Waves[0].Status, d.Waves[1].Status)
	}
	// The soak is over: wave 1 starts, and b's failure later is recorded
	// once, with the time it was seen.
	in.Now, in.Record = in.Now.Add(time.Minute), d.Record
	d = Decide(in)
	if d.Record.Waves != 2 || d.Verdict("b").Status != HostRolling || d.Verdict("d").Status != HostPending {
		t.Fatalf("after the soak: %+v", d)
	}
	failed(&hosts[1])
	in.Now, in.Record = in.Now.Add(time.Second), d.Record
	d = Decide(in)
	want := []Failure{failure("b", 1, CauseRollFailed, in.Now)}
	if !reflect.DeepEqual(d.Record.Failed, want) || d.Verdict("b").Status != HostFailed {
		t.Errorf("failed %+v, want %+v", d.Record.Failed, want)
	}
	in.Now, in.Record = in.Now.Add(time.Second), d.Record
	if d = Decide(in); len(d.Events) != 0 || len(d.Record.Failed) != 1 {
		t.Errorf("a failure recorded twice: events %+v failed %+v", d.Events, d.Record.Failed)
	}
}

func TestDecideDoesNotShareTheCallersRecord(t *testing.T) {
	hosts := fiveHosts()
	done(&hosts[0])
	failed(&hosts[1])
	rec := started(2)
	rec.Failed = make([]Failure, 0, 4) // room to append into
	in := Input{Hosts: hosts, Policy: spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 2}}, Mode: session.ModeAuto, Now: now, Record: rec}
	d := Decide(in)
	if len(d.Record.Failed) != 1 {
		t.Fatalf("failed %+v, want b", d.Record.Failed)
	}
	if spare := rec.Failed[:1]; spare[0] != (Failure{}) {
		t.Errorf("Decide wrote into the caller's record: %+v", spare)
	}
}

func TestWaves(t *testing.T) {
	hosts := []string{"a", "b", "c", "d", "e"}
	tests := []struct {
		rule   string
		hosts  []string
		policy spec.Fleet
		want   [][]string
	}{
		{"the first host is the canary by default", hosts, spec.Fleet{Batch: spec.Batch{Count: 2}},
			[][]string{{"a"}, {"b", "c"}, {"d", "e"}}},
		{"canary hosts go first, in file order; the rest keep file order", hosts, spec.Fleet{Canary: []string{"d", "b"}, Batch: spec.Batch{Count: 2}},
			[][]string{{"b", "d"}, {"a", "c"}, {"e"}}},
		{"a share rounds down", hosts, spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Share: 50}},
			[][]string{{"a"}, {"b", "c"}, {"d", "e"}}},
		{"a small share is one host a wave", hosts, spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Share: 10}},
			[][]string{{"a"}, {"b"}, {"c"}, {"d"}, {"e"}}},
		{"a share of one host is that host", []string{"a"}, spec.Fleet{Batch: spec.Batch{Share: 50}}, [][]string{{"a"}}},
		{"100% is every other host at once", hosts, spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Share: 100}},
			[][]string{{"a"}, {"b", "c", "d", "e"}}},
		{"every host a canary is one wave", []string{"a", "b"}, spec.Fleet{Canary: []string{"a", "b"}, Batch: spec.Batch{Count: 1}},
			[][]string{{"a", "b"}}},
		{"a canary left out falls back to the first host", []string{"b", "c"}, spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 1}},
			[][]string{{"b"}, {"c"}}},
		{"no hosts, no waves", nil, spec.Fleet{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := Waves(tt.hosts, tt.policy); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLockOrderIsByEngineID(t *testing.T) {
	hosts := []Host{
		{Name: "edge-1", EngineID: "ZZZ"},
		{Name: "edge-2", EngineID: "AAA"},
		{Name: "edge-3"}, // has not answered
		{Name: "edge-4", EngineID: "MMM"},
		{Name: "edge-0", EngineID: "MMM"}, // one engine twice: preflight refuses it; the order is still total
	}
	want := []string{"edge-2", "edge-0", "edge-4", "edge-1"}
	if got := LockOrder(hosts); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	// The order does not depend on the order of the file: two operators
	// with the hosts in different orders lock in the same order.
	slices.Reverse(hosts)
	if got := LockOrder(hosts); !slices.Equal(got, want) {
		t.Errorf("reversed: got %q, want %q", got, want)
	}
}
