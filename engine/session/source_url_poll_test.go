package session

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/source/sourcetest"
)

// A session on a URL source stays fresh across polls that find the
// document unchanged: a poll is not a change, so it neither makes the
// session load again nor leaves its plan waiting for the next list (which
// without an engine event is the 30s resync).
func TestSessionStaysFreshAcrossUnchangedPolls(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(desiredYAML("web:v1", 1), `"a"`)
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	h := newHarness(t, f, clock, "", ModeWatch)
	h.opts.Source = mustURLSource(t, cp.URL(), source.URLOptions{Interval: 5 * time.Millisecond})
	h.start()
	h.waitFor("a fresh, converged plan", func(s Snapshot) bool {
		return s.Fresh && s.Desired != nil && len(s.Containers) == 1 && s.Plan.Empty()
	})
	requests := cp.Requests
	from := requests()
	deadline := time.Now().Add(waitLimit)
	for requests() < from+10 {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 10 polls")
		}
		time.Sleep(time.Millisecond)
	}
	select {
	case snap := <-h.s.Snapshots(): // the latest one published, if any
		h.last = snap
	default:
	}
	if !h.last.Fresh || !h.last.Plan.Empty() {
		t.Fatalf("after 10 unchanged polls the snapshot is not fresh:\n%s", describe(h.last))
	}
}
