package tui

import (
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/theme"
)

// A host's pull that holds every wave says which host and, once it
// failed, why, from the typed kind (issue 27 item 4).
func TestFleetWaitSaysWhichHostPulls(t *testing.T) {
	st := theme.New(theme.Dark)
	for _, c := range []struct {
		pull fleet.PullState
		want string
		bad  bool
	}{
		{fleet.PullState{Pending: true}, "e2 to pull", false},
		{fleet.PullState{Running: true}, "e2 pulling", false},
		{fleet.PullState{Failed: true, Kind: docker.PullUnauthorized}, "e2's pull failed: " + docker.PullUnauthorized.Text(), true},
	} {
		w := fleet.Wait{Kind: fleet.WaitPull, Host: "e2", Pull: c.pull}
		if got := waitText(w, t0, true); got != c.want {
			t.Errorf("%+v: %q, want %q", c.pull, got, c.want)
		}
		if bad := waitStyle(&st, w).GetForeground() == st.Bad.GetForeground(); bad != c.bad {
			t.Errorf("%+v: drawn as bad %v, want %v", c.pull, bad, c.bad)
		}
	}
}
