package moby

import (
	"maps"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/rollcall/rollcall/engine/docker"
)

// listCache keeps what List learnt by inspecting each container, so that a
// relist inspects only the containers that changed: those this adapter
// changed itself (Stop, Remove, Restart, Update) or the engine's events
// named since, new ones, and any whose list summary (state, health, exit
// code) moved. It is used only while an event stream of this adapter
// is live: without events a change could go unseen, and List then inspects
// every container as before.
//
// A container this adapter is starting, stopping or removing is not
// inspected at all: the engine holds the container's lock for a start and
// for the cleanup after a stop, so its inspect would wait for the call to
// end, and with it the whole list and every other slot's next step. List
// serves instead the last inspect with the state and health the list
// itself reports, which the engine answers without that lock: the run it
// describes is the one being stopped, or none yet. (A restart is not
// served so: the last inspect is of the run before, its start time and
// health history would pass for the new run's.) The call's end counts as
// a change, so the first list after it inspects the container again.
type listCache struct {
	mu      sync.Mutex
	live    map[string]int    // event streams of this adapter that are connected, by prefix
	version map[string]uint64 // bumped by every event of the container
	entries map[string]cacheEntry
	flights map[string]flight // this adapter's calls in flight, by container
}

// flight is the calls in flight on one container.
type flight struct {
	n        int
	starting bool // one is the start of the container just created
}

type cacheEntry struct {
	c       docker.Container
	version uint64 // version[id] when the inspect started
	summary string
}

func newListCache() *listCache {
	return &listCache{live: map[string]int{}, version: map[string]uint64{}, entries: map[string]cacheEntry{},
		flights: map[string]flight{}}
}

// lookup returns what List may serve for a list item of prefix without an
// inspect: a container this adapter is acting on, as the last inspect with
// the item's state and health; else the cached inspect if it still holds,
// only while the events of that prefix are followed.
func (lc *listCache) lookup(prefix string, item container.Summary) (docker.Container, bool) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	e, ok := lc.entries[item.ID]
	if f := lc.flights[item.ID]; ok && f.n > 0 {
		c := e.copy()
		c.State = docker.State(item.State)
		if c.ImageID == "" {
			c.ImageID = item.ImageID // not in what a create asks for
		}
		if h, ok := healthOfStatus(item.Status); ok && c.State == docker.StateRunning {
			c.Health = h
		}
		c.Starting = f.starting && c.State == docker.StateCreated
		return c, true
	}
	if !ok || lc.live[prefix] == 0 || e.version != lc.version[item.ID] || e.summary != summaryOf(item) ||
		restartedSince(item.Status, e.c.StartedAt, time.Now()) {
		return docker.Container{}, false
	}
	return e.copy(), true
}

func (e cacheEntry) copy() docker.Container {
	c := e.c
	c.Labels = maps.Clone(c.Labels)
	c.Ports = append([]docker.PublishedPort(nil), c.Ports...)
	c.Networks = maps.Clone(c.Networks)
	return c
}

// begin counts a call of this adapter on container id in. The returned
// func counts it out, as a change of the container.
func (lc *listCache) begin(id string) (end func()) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.beginLocked(id, false)
}

// starting counts in the start of a container just created, c as its
// create asked for it, kept for List to serve until created has its
// inspect.
func (lc *listCache) starting(c docker.Container) (end func()) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.entries[c.ID] = cacheEntry{c: c, version: lc.version[c.ID], summary: string(docker.StateCreated)}
	return lc.beginLocked(c.ID, true)
}

func (lc *listCache) beginLocked(id string, starting bool) (end func()) {
	f := lc.flights[id]
	f.n++
	f.starting = f.starting || starting
	lc.flights[id] = f
	return func() {
		lc.mu.Lock()
		defer lc.mu.Unlock()
		lc.version[id]++
		if f := lc.flights[id]; f.n > 1 {
			f.n--
			lc.flights[id] = f
		} else {
			delete(lc.flights, id)
		}
	}
}

// healthOfStatus reads a list item's health from its status: "Up 5
// seconds (health: starting)", "Up 2 minutes (healthy)".
func healthOfStatus(status string) (docker.Health, bool) {
	for _, m := range statusGroups.FindAllStringSubmatch(status, -1) {
		switch m[1] {
		case "healthy":
			return docker.HealthHealthy, true
		case "unhealthy":
			return docker.HealthUnhealthy, true
		case "health: starting":
			return docker.HealthStarting, true
		}
	}
	return "", false
}

// versionOf is the version to record for an inspect that starts now.
func (lc *listCache) versionOf(id string) uint64 {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	return lc.version[id]
}

// store keeps an inspect's result, unless an event came in the meantime.
func (lc *listCache) store(item container.Summary, c docker.Container, version uint64) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.version[item.ID] != version {
		return
	}
	lc.entries[item.ID] = cacheEntry{c: c, version: version, summary: summaryOf(item)}
}

// created keeps the inspect of a container this adapter just created, for
// List to serve while its start is in flight (see lookup).
func (lc *listCache) created(c docker.Container) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.entries[c.ID] = cacheEntry{c: c, version: lc.version[c.ID], summary: string(docker.StateCreated)}
}

// keep drops the entries of containers no longer listed under a prefix,
// but for those this adapter is acting on: one created after the list.
func (lc *listCache) keep(listed map[string]bool, prefix string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for id, e := range lc.entries {
		if !listed[id] && lc.flights[id].n == 0 && e.c.Labels[docker.ManagedLabel(prefix)] == "true" {
			delete(lc.entries, id)
			delete(lc.version, id)
		}
	}
}

// changed records an event of the container id: its entry no longer holds.
func (lc *listCache) changed(id string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.version[id]++
}

// connected counts an event stream of prefix in (+1) or out (-1). A stream
// that breaks may have missed events: everything cached is forgotten, but
// for the containers a call is in flight on (their entries owe nothing to
// events, and the call's end makes them inspected again).
func (lc *listCache) connected(prefix string, delta int) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.live[prefix] += delta
	if delta < 0 {
		for id := range lc.entries {
			if lc.flights[id].n == 0 {
				delete(lc.entries, id)
			}
		}
	}
}

// statusGroups picks the parenthesised parts of a list item's status:
// "Up 5 minutes (healthy)" → healthy, "Exited (137) 3 seconds ago" → 137.
var statusGroups = regexp.MustCompile(`\(([^)]*)\)`)

// summaryOf is what of a list item tells that a container changed: its
// state, health and exit code, not the uptime the status also spells.
func summaryOf(item container.Summary) string {
	var b strings.Builder
	b.WriteString(string(item.State))
	for _, m := range statusGroups.FindAllStringSubmatch(item.Status, -1) {
		b.WriteString("|" + m[1])
	}
	return b.String()
}

// upFor reads how long a running container has been up from a list item's
// status ("Up 5 seconds (healthy)", "Up About a minute"), as the engine
// words it, with how coarse that wording is.
var upPattern = regexp.MustCompile(`^Up (Less than a second|About an? (minute|hour)|(\d+) (second|minute|hour|day|week|month|year)s?)`)

func upFor(status string) (up, coarse time.Duration, ok bool) {
	m := upPattern.FindStringSubmatch(status)
	if m == nil {
		return 0, 0, false
	}
	units := map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour,
		"day": 24 * time.Hour, "week": 7 * 24 * time.Hour, "month": 30 * 24 * time.Hour, "year": 365 * 24 * time.Hour}
	switch {
	case m[1] == "Less than a second":
		return 0, time.Second, true
	case m[2] != "":
		return units[m[2]], units[m[2]], true
	}
	n, err := strconv.Atoi(m[3])
	if err != nil {
		return 0, 0, false
	}
	unit := units[m[4]]
	return time.Duration(n) * unit, max(unit, 2*time.Second), true
}

// restartedSince reports whether a container the engine says has been up
// for less than the cache believes (cached start startedAt) started again
// since: a restart whose events have not come in yet.
func restartedSince(status string, startedAt, now time.Time) bool {
	up, coarse, ok := upFor(status)
	if !ok {
		return false
	}
	return now.Sub(startedAt) > up+coarse
}
