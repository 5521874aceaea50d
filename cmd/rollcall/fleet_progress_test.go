package main

import (
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
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
