package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// apply's line for a wave held by a host's pull names the host and, once
// the pull failed, its kind (issue 27 item 4).
func TestWaitTextNamesAHostsPull(t *testing.T) {
	for _, c := range []struct {
		pull fleet.PullState
		want string
	}{
		{fleet.PullState{Pending: true}, "e2 to pull"},
		{fleet.PullState{Running: true}, "e2 pulling"},
		{fleet.PullState{Failed: true, Kind: docker.PullUnreachable}, "e2's pull failed: " + docker.PullUnreachable.Text()},
	} {
		if got := waitText(fleet.Wait{Kind: fleet.WaitPull, Host: "e2", Pull: c.pull}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pull, got, c.want)
		}
	}
}

// A host's lines are read from its session's facts, not worked out from
// two snapshots (issue 29 item 3): a step that starts and ends between
// two fleet snapshots still prints its start and its end, a snapshot seen
// again prints nothing, and facts the session no longer carries are said
// to be missed.
func TestFleetProgressReadsEachHostsFacts(t *testing.T) {
	var b bytes.Buffer
	fp := newFleetProgress(screen{w: &b, st: theme.New(theme.Mono)}, []string{"edge-1"})
	roll := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: 0, Container: "t-web-0-aaaa", Reason: "image changed"}
	first := session.Snapshot{Seq: 1, Connected: true, Facts: []session.Fact{{Seq: 1, Kind: session.FactEngineUp}}}
	fp.see(fleet.Snapshot{Hosts: []fleet.HostView{{Name: "edge-1", Session: first}}})
	// Between the two fleet snapshots the step started and ended: no
	// snapshot shows it running.
	result := session.StepResult{Step: roll, Began: t0, Duration: 2 * time.Second}
	second := session.Snapshot{Seq: 5, Connected: true, Recent: []session.StepResult{result}, Facts: append(first.Facts,
		session.Fact{Seq: 2, Kind: session.FactStepStarted, Step: roll},
		session.Fact{Seq: 3, Kind: session.FactStepDone, Step: roll, Duration: 2 * time.Second, Result: &result})}
	for range 2 {
		fp.see(fleet.Snapshot{Hosts: []fleet.HostView{{Name: "edge-1", Session: second}}})
	}
	out := b.String()
	for _, want := range []string{"edge-1  ▸ roll    web/0    t-web-0-aaaa  image changed\n", "edge-1  ✓ roll    web/0    t-web-0-aaaa  2s\n"} {
		if strings.Count(out, want) != 1 {
			t.Errorf("%q printed %d times, want once:\n%s", want, strings.Count(out, want), out)
		}
	}
	if hp := fp.hosts["edge-1"]; len(hp.results) != 1 || hp.results[0].Step.Key() != roll.Key() {
		t.Errorf("results %+v, want the roll", hp.results)
	}
	// The session went on past what its snapshots carry: facts 4 to 9
	// are gone from the next one.
	b.Reset()
	third := session.Snapshot{Seq: 9, Connected: true, Facts: []session.Fact{{Seq: 10, Kind: session.FactEngineUp}}}
	fp.see(fleet.Snapshot{Hosts: []fleet.HostView{{Name: "edge-1", Session: third}}})
	if !strings.Contains(b.String(), "edge-1  ! 6 events of this host not shown") {
		t.Errorf("missed facts not said:\n%s", b.String())
	}
}
