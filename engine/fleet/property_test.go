package fleet

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"pgregory.net/rapid"
)

// TestDecideProperties runs random rollouts: random hosts, policies and
// modes, hosts that progress when told to act and that fail, go away, come
// back, lose their lock or turn unhealthy at random, and approvals given at
// random. After every decision:
//
//   - no host of a wave acts while a host of an earlier wave is not
//     converged and healthy, and a host acts only when it answers, holds
//     its lock and its wave started;
//   - nothing acts when preflight fails, and then no wave starts;
//   - watch mode acts on nothing and records nothing;
//   - a host left out, or lost, never acts or rolls back again;
//   - no wave starts after a failure, and started waves never go back;
//   - a wave with work starts only approved in step mode, and only after
//     the soak;
//   - rollback happens only under rollback_all, on hosts of started waves;
//   - while a host of the rollout has a pull left (and none failed), no
//     host acts and no wave starts; only hosts with a pull left pull, at
//     most MaxPulls at once.
func TestDecideProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "hosts")
		// A calm fleet starts out passing preflight, so that rollouts get
		// to their later waves.
		calm := rapid.Bool().Draw(t, "calm")
		hosts := make([]Host, n)
		names := make([]string, n)
		for i := range hosts {
			names[i] = fmt.Sprintf("h%d", i)
			id := fmt.Sprintf("id%d", i)
			if i > 0 && !calm && rapid.IntRange(0, 9).Draw(t, "same engine") == 0 {
				id = fmt.Sprintf("id%d", i-1)
			}
			h := Host{Name: names[i], EngineID: id, Reachable: rapid.IntRange(0, 9).Draw(t, "reachable") > 0,
				LockHeld: rapid.IntRange(0, 9).Draw(t, "locked") > 0, Slots: rapid.IntRange(0, 3).Draw(t, "slots")}
			if calm {
				h.Reachable, h.LockHeld = true, true
			}
			switch rapid.IntRange(0, 9).Draw(t, "plan") {
			case 0:
				h.Plan = PlanUnknown
				if calm {
					h.Plan = PlanRolling
				}
			case 1:
				h.Plan = PlanFailed
			case 2, 3, 4:
				h.Plan, h.Healthy = PlanConverged, h.Slots
			default:
				h.Plan = PlanRolling
			}
			pull(t, &h)
			hosts[i] = h
		}
		policy := spec.Fleet{
			Canary:    subset(t, names),
			Wait:      time.Duration(rapid.IntRange(0, 3).Draw(t, "wait")) * time.Second,
			OnFailure: rapid.SampledFrom([]string{spec.OnFailurePause, spec.OnFailureRollbackAll, spec.OnFailureContinue}).Draw(t, "on_failure"),
		}
		if rapid.Bool().Draw(t, "share") {
			policy.Batch.Share = rapid.IntRange(1, 100).Draw(t, "percent")
		} else {
			policy.Batch.Count = rapid.IntRange(1, n+1).Draw(t, "count")
		}
		if policy.OnFailure == spec.OnFailureContinue {
			policy.MaxFailedHosts = rapid.IntRange(1, 3).Draw(t, "max_failed_hosts")
		}
		mode := rapid.SampledFrom([]session.Mode{session.ModeAuto, session.ModeStep, session.ModeWatch}).Draw(t, "mode")
		skip := rapid.Bool().Draw(t, "skip-unreachable")
		approved := map[int]bool{}
		all := false
		clock := now
		var rec Record
		var last Decision
		for step := range 25 {
			if step > 0 {
				for i := range hosts {
					evolve(t, &hosts[i], last.Verdict(hosts[i].Name).Action)
				}
				clock = clock.Add(time.Duration(rapid.IntRange(0, 2000).Draw(t, "tick")) * time.Millisecond)
				switch rapid.IntRange(0, 9).Draw(t, "operator") {
				case 0:
					all = true
				case 1, 2, 3:
					approved[rapid.IntRange(0, n).Draw(t, "approve")] = true
				case 4:
					mode = rapid.SampledFrom([]session.Mode{session.ModeAuto, session.ModeStep, session.ModeWatch}).Draw(t, "mode")
				}
			}
			in := Input{Hosts: slices.Clone(hosts), Policy: policy, Mode: mode, SkipUnreachable: skip,
				Approved: approved, ApprovedAll: all, Now: clock, Record: rec}
			d := Decide(in)
			checkDecision(t, in, d)
			rec, last = d.Record, d
		}
	})
}

// subset picks some of names (possibly none: the default canary).
func subset(t *rapid.T, names []string) []string {
	var out []string
	for _, n := range names {
		if rapid.IntRange(0, 3).Draw(t, "canary "+n) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// evolve moves a host on: a host that acts or rolls back converges
// (mostly), and any host may fail, go away, come back, lose or regain its
// lock, get its first plan, or turn unhealthy.
func evolve(t *rapid.T, h *Host, a Action) {
	switch e := rapid.IntRange(0, 79).Draw(t, "event "+h.Name); {
	case e == 0:
		h.Reachable = false
	case e == 1:
		h.Plan = PlanFailed
	case e == 2:
		h.LockHeld = false
	case e == 3:
		if h.Plan == PlanConverged && h.Slots > 0 {
			h.Healthy = h.Slots - 1
		}
	case e < 12:
		h.Reachable = true
	case e < 20:
		h.LockHeld = true
	case e < 28:
		if h.Plan == PlanUnknown {
			h.Plan = PlanRolling
		}
	case e < 32:
		pull(t, h)
	default:
		switch {
		case a == Pull && h.Reachable:
			h.Pull = PullState{}
		case a != Hold && h.Reachable:
			h.Plan, h.Healthy, h.Pull = PlanConverged, h.Slots, PullState{}
		}
	}
}

// pull gives a host, at random, a pull left: running, failed or to come.
func pull(t *rapid.T, h *Host) {
	switch rapid.IntRange(0, 5).Draw(t, "pull "+h.Name) {
	case 0:
		h.Pull = PullState{Pending: true}
	case 1:
		h.Pull = PullState{Pending: true, Running: true}
	case 2:
		h.Pull = PullState{Pending: true, Failed: true, Kind: docker.PullUnreachable}
	default:
		return
	}
	if h.Plan != PlanUnknown {
		h.Plan = PlanRolling
	}
}

func checkDecision(t *rapid.T, in Input, d Decision) {
	rec := d.Record
	if len(d.Hosts) != len(in.Hosts) {
		t.Fatalf("%d verdicts for %d hosts", len(d.Hosts), len(in.Hosts))
	}
	byName := map[string]Host{}
	for i, h := range in.Hosts {
		byName[h.Name] = h
		if d.Hosts[i].Host != h.Name {
			t.Fatalf("verdict %d is for %s, want %s", i, d.Hosts[i].Host, h.Name)
		}
	}
	// The waves hold every host not left out, once, the canary first.
	var inWaves []string
	for _, w := range d.Waves {
		if len(w.Hosts) == 0 {
			t.Fatalf("an empty wave: %+v", d.Waves)
		}
		inWaves = append(inWaves, w.Hosts...)
	}
	for _, h := range in.Hosts {
		left := slices.Contains(rec.Left, h.Name)
		if c := count(inWaves, h.Name); left && c != 0 || !left && in.Mode.Acting() && c != 1 {
			t.Fatalf("host %s (left out %v) is in %d waves: %+v", h.Name, left, c, d.Waves)
		}
		if left && slices.Contains(Waves(hostNames(in.Hosts), in.Policy)[0], h.Name) {
			t.Fatalf("the canary %s was left out", h.Name)
		}
	}
	for i, v := range d.Hosts {
		h := in.Hosts[i]
		if v.Action == Hold {
			continue
		}
		if !in.Mode.Acting() {
			t.Fatalf("watch mode: %s gets action %d", v.Host, v.Action)
		}
		if v.Action == Pull {
			if v.Wave < 0 || !h.Pull.Pending || !h.Reachable || !h.LockHeld {
				t.Fatalf("%s of wave %d pulls: %+v", v.Host, v.Wave, h)
			}
			continue
		}
		if v.Wave < 0 || v.Wave >= rec.Waves {
			t.Fatalf("%s of wave %d acts (%d) with %d waves started", v.Host, v.Wave, v.Action, rec.Waves)
		}
		if !h.Reachable || !h.LockHeld {
			t.Fatalf("%s acts (%d) unreachable or unlocked: %+v", v.Host, v.Action, h)
		}
		if f, ok := rec.failed(v.Host); ok && f.Cause == CauseLost {
			t.Fatalf("lost host %s acts (%d)", v.Host, v.Action)
		}
		switch v.Action {
		case Act:
			// Only a continue that finishes the started waves lets a
			// failed host of an earlier wave be passed over.
			for _, w := range d.Waves[:v.Wave] {
				for _, e := range w.Hosts {
					if f, ok := rec.failed(e); ok && d.Phase == PhaseFinishing {
						if f.Cause != CauseRollFailed || in.Policy.OnFailure != spec.OnFailureContinue || len(rec.Failed) > in.Policy.MaxFailedHosts {
							t.Fatalf("finishing with failed host %+v under %s, max %d", f, in.Policy.OnFailure, in.Policy.MaxFailedHosts)
						}
						continue
					}
					if !byName[e].Done() {
						t.Fatalf("%s of wave %d acts while %s of wave %d is not converged and healthy: %+v",
							v.Host, v.Wave, e, w.Index, byName[e])
					}
				}
			}
			if d.Phase == PhasePaused {
				if f, ok := rec.failed(v.Host); !ok || f.Cause != CauseRollFailed {
					t.Fatalf("paused: %s acts and is no failed host", v.Host)
				}
			}
		case RollBack:
			if d.Phase != PhaseRollingBack || in.Policy.OnFailure != spec.OnFailureRollbackAll {
				t.Fatalf("%s rolls back in phase %d under %s", v.Host, d.Phase, in.Policy.OnFailure)
			}
		}
	}
	// continue goes on: while it finishes, a host of a started wave that
	// answers and holds its lock acts once every host of the earlier
	// waves is converged and healthy or failed.
	if d.Phase == PhaseFinishing {
		for i, v := range d.Hosts {
			h := in.Hosts[i]
			if v.Wave < 0 || v.Wave >= rec.Waves || !h.Reachable || !h.LockHeld {
				continue
			}
			gated := false
			for _, w := range d.Waves[:v.Wave] {
				for _, e := range w.Hosts {
					if _, failed := rec.failed(e); !failed && !byName[e].Done() {
						gated = true
					}
				}
			}
			if !gated && v.Action != Act {
				t.Fatalf("continue: %s of wave %d holds (%d) with nothing before it but done or failed hosts", v.Host, v.Wave, v.Action)
			}
		}
	}
	if !in.Mode.Acting() {
		if d.Phase != PhaseWatching || !equalRecords(d.Record, in.Record) {
			t.Fatalf("watch mode: phase %d, record %+v from %+v", d.Phase, d.Record, in.Record)
		}
		return
	}
	if !in.Record.Started() && preflightFails(in) {
		if rec.Waves != 0 || d.Phase != PhasePreflight {
			t.Fatalf("preflight fails, yet %d waves started (phase %d)", rec.Waves, d.Phase)
		}
		for _, v := range d.Hosts {
			if v.Action != Hold {
				t.Fatalf("preflight fails, yet %s gets action %d", v.Host, v.Action)
			}
		}
	}
	// Pull before any other step, on every host of the rollout.
	pulls, pulling := 0, false
	for _, v := range d.Hosts {
		if v.Action == Pull {
			pulls++
		}
		if _, failed := rec.failed(v.Host); v.Wave >= 0 && !failed && byName[v.Host].Pull.Pending {
			pulling = true
		}
	}
	if pulls > MaxPulls {
		t.Fatalf("%d hosts pull at once, at most %d", pulls, MaxPulls)
	}
	if pulling && len(rec.Failed) == 0 {
		for _, v := range d.Hosts {
			if v.Action == Act || v.Action == RollBack {
				t.Fatalf("%s gets action %d while a host of the rollout has a pull left: %+v", v.Host, v.Action, in.Hosts)
			}
		}
		if rec.Waves != in.Record.Waves {
			t.Fatalf("wave %d started while a host of the rollout has a pull left: %+v", rec.Waves-1, in.Hosts)
		}
	}
	if rec.Waves < in.Record.Waves || len(rec.Failed) < len(in.Record.Failed) {
		t.Fatalf("the record went back: %+v from %+v", rec, in.Record)
	}
	if len(in.Record.Failed) > 0 && rec.Waves != in.Record.Waves {
		t.Fatalf("wave %d started after %s failed", rec.Waves-1, in.Record.Failed[0].Host)
	}
	// A wave with work that starts now is approved in step mode and
	// waited the soak out. Its work is what it had when it started.
	for k := in.Record.Waves; k < rec.Waves; k++ {
		work := slices.ContainsFunc(d.Waves[k].Hosts, func(n string) bool { return !byName[n].Done() })
		if !work {
			continue
		}
		if in.Mode == session.ModeStep && !in.ApprovedAll && !in.Approved[k] {
			t.Fatalf("wave %d started unapproved in step mode", k)
		}
		if in.Record.SoakDue && in.Policy.Wait > 0 &&
			(in.Record.DoneAt.IsZero() || in.Now.Before(in.Record.DoneAt.Add(in.Policy.Wait))) {
			t.Fatalf("wave %d started at %v, within the soak from %v (%s)", k, in.Now, in.Record.DoneAt, in.Policy.Wait)
		}
	}
}

// preflightFails is the preflight rule, written out on its own: some host
// that is not left out does not answer, has no plan yet, does not hold its
// lock, or shares its engine with another.
func preflightFails(in Input) bool {
	first := Waves(hostNames(in.Hosts), in.Policy)[0]
	engines := map[string]bool{}
	for _, h := range in.Hosts {
		canLeave := in.SkipUnreachable && !slices.Contains(first, h.Name)
		switch {
		case (!h.Reachable || h.Pull.Failed && !h.Pull.Running) && canLeave:
			continue
		case !h.Reachable, h.EngineID == "", h.Plan == PlanUnknown, !h.LockHeld, engines[h.EngineID]:
			return true
		}
		engines[h.EngineID] = true
	}
	return false
}

func hostNames(hs []Host) []string {
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
	}
	return names
}

func count(s []string, v string) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}

func equalRecords(a, b Record) bool {
	return a.Waves == b.Waves && slices.Equal(a.Left, b.Left) && a.SoakDue == b.SoakDue && a.DoneAt.Equal(b.DoneAt) &&
		slices.Equal(a.Failed, b.Failed) && a.RollingBack == b.RollingBack && a.Phase == b.Phase
}
