package session

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/source/sourcetest"
)

func mustURLSource(t *testing.T, url string, o source.URLOptions) source.Source {
	t.Helper()
	src, err := source.URL(url, o)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// The session polls the URL: a change on the server reaches the snapshot,
// a failure shows as SourceErr (a *source.StaleError) while the last good
// state stays, and the next good answer clears it.
func TestSessionFollowsURLSource(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(desiredYAML("web:v1", 1), `"a"`)
	f, clock := newEngine()
	h := newHarness(t, f, clock, "", ModeWatch)
	h.opts.Source = mustURLSource(t, cp.URL(), source.URLOptions{Interval: 10 * time.Millisecond})
	h.start()
	h.waitFor("the first state", func(s Snapshot) bool { return s.Desired != nil && s.Desired.Workloads["web"].Replicas == 1 })

	cp.Serve(desiredYAML("web:v1", 2), `"b"`)
	h.waitFor("the changed state", func(s Snapshot) bool { return s.Desired.Workloads["web"].Replicas == 2 })

	cp.Set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	snap := h.waitFor("the failure", func(s Snapshot) bool { return s.SourceErr != nil })
	var stale *source.StaleError
	if !errors.As(snap.SourceErr, &stale) || stale.LastGood.IsZero() || snap.Desired.Workloads["web"].Replicas != 2 {
		t.Fatalf("source err %v, desired %+v", snap.SourceErr, snap.Desired)
	}
	if snap.Source != cp.URL() {
		t.Errorf("Source %q, want %q", snap.Source, cp.URL())
	}

	cp.Serve(desiredYAML("web:v1", 2), `"b"`)
	h.waitFor("the recovery", func(s Snapshot) bool { return s.SourceErr == nil })
}
