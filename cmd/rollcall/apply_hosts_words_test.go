package main

import (
	"testing"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/spec"
)

// TestNoWordsFleetFailure: apply --json's error is the failure itself, not
// apply's last line with its "failed: " cut off again (issue 29).
func TestNoWordsFleetFailure(t *testing.T) {
	v := fleetOutcome{done: true, why: "edge-2 halted: disk full",
		errs: spec.ErrorList{{File: "rollcall.yaml", Line: 3, Col: 1, Msg: "one engine twice"}}}
	if got, want := v.failure(), "one engine twice; edge-2 halted: disk full"; got != want {
		t.Errorf("failure() = %q, want %q", got, want)
	}
	if got, want := v.final(fleet.Snapshot{}), "failed: "+v.failure(); got != want {
		t.Errorf("final() = %q, want %q", got, want)
	}
}
