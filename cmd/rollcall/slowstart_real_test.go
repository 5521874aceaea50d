package main

import (
	"testing"

	"github.com/rollcall/rollcall/engine/journal"
)

// TestRealEngineSlowStarterIsNotACrash (issue 11): an app ready only after
// 8s, with no start_period, turns unhealthy at about 3s (interval 1s,
// retries 3). Before its health_deadline (60s) that is booting, not a crash:
// the roll goes through with no restart.
func TestRealEngineSlowStarterIsNotACrash(t *testing.T) {
	r := newRealRig(t)
	r.mustApply(r.write("v1.yaml", realWorkload(t, "web", "v1", 1)))
	slow := r.write("v2.yaml", realWorkload(t, "web", "v2", 1,
		`args: , "-ready-delay", "8s"`, "update: {health_deadline: 60s}"))
	res := r.run("apply", "--yes", "--timeout", "2m", "-f", slow)
	if res.code != exitOK {
		t.Fatalf("apply of the slow starter: exit %d\n%s", res.code, res.stderr)
	}
	entries, err := journal.Read(r.journal, 0)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, e := range journal.Fold(entries) {
		if e.Result == journal.ResultDecision {
			continue
		}
		steps = append(steps, e.Action)
		if e.Action == "restart" {
			t.Fatalf("the slow starter was restarted as a crash: %+v", e)
		}
	}
	if len(steps) != 3 { // v1's start, then v2's start and the roll of v1
		t.Fatalf("steps %v, want start, start, roll", steps)
	}
	mustContain(t, "apply", res.stderr, "booting")
}
