package moby

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// Reconnect backoff of the event stream.
const (
	eventsBackoffMin = 100 * time.Millisecond
	eventsBackoffMax = 5 * time.Second
	// eventsHealthyConn is how long a connection must last for the backoff
	// to start over at the minimum, even if it carried no event.
	eventsHealthyConn = 5 * time.Second
)

// Events streams the engine's container events for containers labelled
// <prefix>.managed=true, from since on (zero: from now), and every image's
// tag, untag, delete, load, import and pull (Type EventImage), on a second
// connection: an image's events carry no container label, and one tag
// rebuilt in place is all it takes to make containers stale.
//
// The streams survive the engine: when a connection breaks, it reconnects
// by itself with backoff (100ms doubling to 5s) and resumes from the last
// event it delivered, so nothing in the gap is lost and nothing is
// delivered twice. Every connection error is offered on the error channel
// (buffered 1, sent without blocking, so a slow reader sees the latest state
// rather than a backlog), for the caller to show "engine disconnected"; an
// error does not end the stream. Both channels are closed when ctx ends, and
// only then.
//
// Healthcheck probes make the engine emit exec_create, exec_start and
// exec_die at every interval. The engine filters them out itself: the
// stream asks only for the container events in streamedActions, so probes
// never cross the socket (dropAction still drops any that would). Health
// changes arrive as "health_status: healthy" and "health_status: unhealthy"
// (the engine matches "health_status" against the part before the colon).
func (m *Moby) Events(ctx context.Context, prefix string, since time.Time) (<-chan docker.Event, <-chan error) {
	out := make(chan docker.Event)
	errc := make(chan error, 1)
	containers := client.Filters{}
	containers.Add("type", string(events.ContainerEventType))
	containers.Add("label", docker.ManagedLabel(prefix)+"=true")
	for _, a := range streamedActions {
		containers.Add("event", a)
	}
	images := client.Filters{}
	images.Add("type", string(events.ImageEventType))
	for _, a := range imageActions {
		images.Add("event", a)
	}
	var wg sync.WaitGroup
	wg.Go(func() { m.streamEvents(ctx, containers, prefix, since, out, errc) })
	wg.Go(func() { m.streamEvents(ctx, images, "", since, out, errc) })
	go func() {
		wg.Wait()
		close(errc)
		close(out)
	}()
	return out, errc
}

// streamEvents runs one filtered stream, reconnecting, until ctx ends. A
// container stream (prefix set) keeps the list cache told.
func (m *Moby) streamEvents(ctx context.Context, f client.Filters, prefix string, since time.Time, out chan<- docker.Event, errc chan error) {
	var seen eventCursor
	resume := since // where the next connection starts; zero: live only
	backoff := eventsBackoffMin
	for {
		opts := client.EventsListOptions{Filters: f}
		if !resume.IsZero() {
			opts.Since = formatEventTime(resume)
		}
		connected := time.Now()
		if prefix != "" {
			m.cache.connected(prefix, +1)
		}
		delivered, err := m.pumpEvents(ctx, opts, &seen, out)
		if prefix != "" {
			m.cache.connected(prefix, -1)
		}
		if ctx.Err() != nil {
			return
		}
		// Resume from the last delivered event; with none yet, from the
		// first connection, so the gap is covered either way.
		if last := seen.time(); !last.IsZero() {
			resume = last
		} else if resume.IsZero() {
			resume = connected
		}
		if delivered || time.Since(connected) >= eventsHealthyConn {
			backoff = eventsBackoffMin
		}
		offerError(errc, fmt.Errorf("engine events: %w (reconnecting in %s)", err, backoff))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, eventsBackoffMax)
	}
}

// pumpEvents runs one connection until it breaks or ctx ends. It reports
// whether it delivered anything, and the error that ended the connection.
func (m *Moby) pumpEvents(ctx context.Context, opts client.EventsListOptions, seen *eventCursor, out chan<- docker.Event) (bool, error) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the client's goroutine too
	res := m.cli.Events(cctx, opts)
	delivered := false
	for {
		select {
		case <-ctx.Done():
			return delivered, ctx.Err()
		case err := <-res.Err:
			if err == nil {
				err = fmt.Errorf("stream closed")
			}
			return delivered, err
		case msg := <-res.Messages:
			if msg.Type == events.ContainerEventType && !docker.Herald(string(msg.Action)) {
				// A kill or an OOM only announces the die that follows:
				// inspecting the container now would wait on the engine
				// until it is down, and hold up every relist meanwhile.
				m.cache.changed(msg.Actor.ID)
			}
			if !seen.advance(msg) || dropAction(msg.Action) {
				continue
			}
			select {
			case out <- eventFromMessage(msg):
				delivered = true
			case <-ctx.Done():
				return delivered, ctx.Err()
			}
		}
	}
}

// offerError sends err without blocking; a pending older error is replaced.
func offerError(errc chan error, err error) {
	for {
		select {
		case errc <- err:
			return
		default:
		}
		select {
		case <-errc:
		default:
		}
	}
}

// eventCursor remembers where the stream is, so a resumed stream (whose
// "since" is inclusive) does not deliver an event twice.
type eventCursor struct {
	nano   int64               // time of the last delivered event
	atNano map[string]struct{} // id+action of the events delivered at nano
}

// advance reports whether msg is new, and if so moves the cursor past it.
func (c *eventCursor) advance(msg events.Message) bool {
	t := msg.TimeNano
	if t == 0 {
		t = msg.Time * int64(time.Second)
	}
	key := msg.Actor.ID + "\x00" + string(msg.Action)
	switch {
	case t < c.nano:
		return false
	case t == c.nano:
		if _, dup := c.atNano[key]; dup {
			return false
		}
	default:
		c.nano = t
		c.atNano = map[string]struct{}{}
	}
	c.atNano[key] = struct{}{}
	return true
}

func (c *eventCursor) time() time.Time {
	if c.nano == 0 {
		return time.Time{}
	}
	return time.Unix(0, c.nano)
}

// streamedActions are the container events rollcall subscribes to: every
// change of a container's state, health, limits or existence. Not exec_*
// (a healthcheck probe at every interval), attach, copy, export, top,
// resize or commit, which change nothing rollcall plans on.
var streamedActions = []string{
	"create", "start", "restart", "stop", "kill", "die", "oom", "destroy", "rename",
	"update", "pause", "unpause", "health_status",
}

// imageActions are the image events that may move a tag: rollcall resolves
// the desired images again on each.
var imageActions = []string{"tag", "untag", "delete", "load", "import", "pull"}

// dropAction reports the actions rollcall never shows: healthcheck execs.
func dropAction(a events.Action) bool {
	return strings.HasPrefix(string(a), "exec_")
}

func eventFromMessage(msg events.Message) docker.Event {
	t := time.Unix(0, msg.TimeNano)
	if msg.TimeNano == 0 {
		t = time.Unix(msg.Time, 0)
	}
	if msg.Type == events.ImageEventType {
		name := msg.Actor.Attributes["name"]
		if name == "" {
			name = msg.Actor.ID
		}
		return docker.Event{Time: t, Type: docker.EventImage, Action: string(msg.Action), Name: name, Attributes: maps.Clone(msg.Actor.Attributes)}
	}
	return docker.Event{
		Time:        t,
		Action:      string(msg.Action),
		ContainerID: msg.Actor.ID,
		Name:        msg.Actor.Attributes["name"],
		Attributes:  maps.Clone(msg.Actor.Attributes),
	}
}

// formatEventTime writes t as the engine's "seconds.nanoseconds", which
// keeps full precision (RFC 3339 would too, but is parsed in local time
// when it lacks a zone).
func formatEventTime(t time.Time) string {
	return strconv.FormatInt(t.Unix(), 10) + "." + fmt.Sprintf("%09d", t.Nanosecond())
}
