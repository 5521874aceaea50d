package moby

import (
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/rollcall/rollcall/engine/docker"
)

func TestListCacheHoldsOnlyWhileNothingChanged(t *testing.T) {
	now := time.Now()
	item := container.Summary{ID: "c1", State: "running", Status: "Up 5 minutes (healthy)"}
	c := docker.Container{ID: "c1", State: docker.StateRunning, StartedAt: now.Add(-5 * time.Minute), Labels: map[string]string{docker.ManagedLabel("rc"): "true"}}
	fresh := func() *listCache {
		lc := newListCache()
		lc.connected("rc", +1)
		lc.store(item, c, lc.versionOf("c1"))
		return lc
	}
	if _, ok := fresh().lookup("rc", item); !ok {
		t.Fatal("an unchanged container is inspected again")
	}
	tests := []struct {
		name   string
		change func(lc *listCache, it *container.Summary)
	}{
		{"an event named it", func(lc *listCache, _ *container.Summary) { lc.changed("c1") }},
		{"its health moved", func(_ *listCache, it *container.Summary) { it.Status = "Up 5 minutes (unhealthy)" }},
		{"its state moved", func(_ *listCache, it *container.Summary) { it.State, it.Status = "exited", "Exited (137) 1 second ago" }},
		{"it restarted before its events came", func(_ *listCache, it *container.Summary) { it.Status = "Up 3 seconds (healthy)" }},
		{"the event stream broke", func(lc *listCache, _ *container.Summary) { lc.connected("rc", -1); lc.connected("rc", +1) }},
		{"no stream follows the prefix", func(lc *listCache, _ *container.Summary) { lc.connected("rc", -1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc, it := fresh(), item
			tt.change(lc, &it)
			if _, ok := lc.lookup("rc", it); ok {
				t.Fatal("the cached inspect was used")
			}
		})
	}
	// An event during the inspect: its result is not kept.
	lc := newListCache()
	lc.connected("rc", +1)
	v := lc.versionOf("c1")
	lc.changed("c1")
	lc.store(item, c, v)
	if _, ok := lc.lookup("rc", item); ok {
		t.Fatal("an inspect raced by an event was kept")
	}
	if _, ok := fresh().lookup("other", item); ok {
		t.Fatal("used for a prefix whose events nobody follows")
	}
}

func TestUpFor(t *testing.T) {
	for status, want := range map[string]time.Duration{
		"Up Less than a second": 0, "Up 5 seconds (healthy)": 5 * time.Second, "Up About a minute": time.Minute,
		"Up 3 minutes": 3 * time.Minute, "Up About an hour (unhealthy)": time.Hour, "Up 2 days": 48 * time.Hour,
	} {
		if got, _, ok := upFor(status); !ok || got != want {
			t.Errorf("upFor(%q) = %s %v, want %s", status, got, ok, want)
		}
	}
	if _, _, ok := upFor("Exited (0) 3 seconds ago"); ok {
		t.Error("an exited status reads as up")
	}
}

// What the adapter is acting on is served from the cache only while the
// call is in flight, and a list taken before the create does not drop it.
func TestListCacheServesACallInFlightUntilItEnds(t *testing.T) {
	lc := newListCache()
	lc.connected("rc", +1)
	item := container.Summary{ID: "c1", State: "created", Status: "Created", ImageID: "sha256:2222"}
	// Served from what the create asked for, before its own inspect.
	end := lc.starting(docker.Container{ID: "c1", State: docker.StateCreated, Labels: map[string]string{docker.ManagedLabel("rc"): "true"}})
	if c, ok := lc.lookup("rc", item); !ok || !c.Starting || c.ImageID != "sha256:2222" {
		t.Fatalf("before its inspect: served %v, starting %v, image %q; want served, starting, the list's image", ok, c.Starting, c.ImageID)
	}
	lc.created(docker.Container{ID: "c1", State: docker.StateCreated, ImageID: "sha256:2222", Labels: map[string]string{docker.ManagedLabel("rc"): "true"}})
	lc.keep(map[string]bool{}, "rc") // a list that began before the create
	lc.connected("rc", -1)           // the event stream broke meanwhile
	c, ok := lc.lookup("rc", item)
	if !ok || !c.Starting {
		t.Fatalf("during the start: served %v, starting %v; want served, starting", ok, c.Starting)
	}
	end()
	lc.connected("rc", +1)
	if _, ok := lc.lookup("rc", item); ok {
		t.Error("the inspect from before the start still holds after it")
	}
}
