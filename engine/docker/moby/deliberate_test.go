package moby

// Tests of rules that each once had no fast test: broken on purpose, only a
// real-engine test failed, or none did.

import (
	"context"
	"encoding/json"
	"net/url"
	"testing"
	"time"

	"github.com/moby/moby/api/types/events"
)

// The container stream asks the engine for every action rollcall plans on,
// health changes above all (a container turning unhealthy is rule 4's), and
// for no healthcheck exec: the filter the adapter builds, as the engine API
// receives it.
func TestEventsFilterAsksForHealthStatus(t *testing.T) {
	m, stub := newEngineStub(t, "/events") // no script: the stream is held open
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, errc := m.Events(ctx, "rollcall", time.Time{})
	deadline := time.Now().Add(10 * time.Second)
	for stub.query(0) == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	q, err := url.ParseQuery(stub.query(0))
	if err != nil || q.Get("filters") == "" {
		t.Fatalf("container stream query %q (%v): want a filters parameter", stub.query(0), err)
	}
	var filters map[string]map[string]bool
	if err := json.Unmarshal([]byte(q.Get("filters")), &filters); err != nil {
		t.Fatalf("filters %q: %v", q.Get("filters"), err)
	}
	if !filters["type"]["container"] || len(filters["type"]) != 1 {
		t.Errorf("type filter %v, want container only", filters["type"])
	}
	if !filters["label"]["rollcall.managed=true"] {
		t.Errorf("label filter %v, want the managed label", filters["label"])
	}
	for _, a := range []string{"health_status", "die", "start", "create", "destroy", "oom", "kill", "stop", "restart", "update"} {
		if !filters["event"][a] {
			t.Errorf("event filter %v lacks %q", filters["event"], a)
		}
	}
	for a := range filters["event"] {
		if dropAction(events.Action(a)) {
			t.Errorf("event filter asks for %q, a healthcheck exec", a)
		}
	}
	cancel()
	for range evs {
	}
	for range errc {
	}
}
