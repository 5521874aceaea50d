package main

import (
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
)

// The several-host apply ends on the fleet's typed outcome and each host's
// standing, never working it out again from the hosts' snapshots or from
// words (issue 29 item 2): over when the fleet says so, its words the
// standings' own (Said), its exit code from the kind; a host's last line
// says where its session stands.
func TestApplyHostsEndsOnTheFleetsOutcome(t *testing.T) {
	refusal := session.Refusal{Stops: 3, Running: 3, Reason: "it would stop 3 of 3 running containers"}
	refused := session.Standing{Kind: session.StandingFailed, Causes: []session.Cause{{Kind: session.CauseRefused, Refusal: &refusal}}}
	for _, c := range []struct {
		name string
		out  fleet.Outcome
		done bool
		ok   bool
		why  string
	}{
		{"rolling", fleet.Outcome{}, false, false, ""},
		{"converged", fleet.Outcome{Kind: fleet.OutcomeConverged}, true, true, ""},
		{"a host refused", fleet.Outcome{Kind: fleet.OutcomeHostStuck, Hosts: []fleet.HostOutcome{{Host: "edge-1"}, {Host: "edge-2", Stuck: true, Standing: refused}}},
			true, false, "edge-2 refused: it would stop 3 of 3 running containers; nothing was stopped (pass --allow-mass-stop to do it on purpose)"},
		{"left out", fleet.Outcome{Kind: fleet.OutcomeLeftOut, Hosts: []fleet.HostOutcome{{Host: "edge-1"}, {Host: "edge-3", LeftOut: true}}},
			true, false, "every host converged but edge-3, left out (--skip-unreachable)"},
		{"blocked", fleet.Outcome{Kind: fleet.OutcomeBlocked, Why: "edge-3 does not answer: no route"}, true, false, "edge-3 does not answer: no route"},
	} {
		// The snapshot's other fields say nothing: the outcome alone decides.
		v := applyVerdict(fleet.Snapshot{Outcome: c.out})
		if v.done != c.done || v.ok() != c.ok || v.why != c.why {
			t.Errorf("%s: done %v ok %v why %q; want %v %v %q", c.name, v.done, v.ok(), v.why, c.done, c.ok, c.why)
		}
		if c.done && !c.ok && v.final(fleet.Snapshot{}) != "failed: "+c.why {
			t.Errorf("%s: final %q", c.name, v.final(fleet.Snapshot{}))
		}
	}

	rb := session.RollbackInfo{Workload: "web", Slot: 0, Hash: "0123456789abcdef", Reason: "unhealthy"}
	hv := fleet.HostView{Name: "edge-2", Dialed: true, Verdict: fleet.Verdict{Host: "edge-2", Status: fleet.HostFailed},
		Session: session.Snapshot{Seq: 9, Standing: session.Standing{Kind: session.StandingHeld,
			Causes: []session.Cause{{Kind: session.CauseRolledBack, Workload: "web", Rollback: &rb}}}}}
	line := hostFinal(hv, nil, unstarted{})
	if !strings.HasPrefix(line, "failed: nothing ran") || !strings.HasSuffix(line, "; "+hv.Session.Standing.Said()) {
		t.Errorf("host line %q: want its standing's words at the end (%q)", line, hv.Session.Standing.Said())
	}
}

// The agent across hosts stops on a host's session that halted, as the
// host's standing in the fleet's outcome says, in its words.
func TestAgentHostsStopsOnAHaltedStanding(t *testing.T) {
	halted := session.Standing{Kind: session.StandingFailed, Causes: []session.Cause{{Kind: session.CauseHalted, Why: "journal: disk full"}}}
	s := fleet.Snapshot{Hosts: []fleet.HostView{{Name: "a"}, {Name: "b"}},
		Outcome: fleet.Outcome{Kind: fleet.OutcomeHostStuck, Hosts: []fleet.HostOutcome{{Host: "a"}, {Host: "b", Stuck: true, Standing: halted}}}}
	if why, _ := agentFatal(s); why != "b halted: journal: disk full" {
		t.Errorf("agent's end %q, want b halted, in its standing's words", why)
	}
}
