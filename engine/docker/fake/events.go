package fake

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// maxHistory is how many recent events the Fake keeps for replay.
const maxHistory = 1000

type eventSub struct {
	prefix string
	feed   *feed[docker.Event]
	errc   chan error
}

// emit records an event about c and hands it to the subscribers whose
// prefix marks c as managed. Attributes carry the labels, name and image,
// as docker's do.
func (f *Engine) emit(c *fakeContainer, action string, at time.Time, extra map[string]string) {
	attrs := copyMap(c.Labels)
	if attrs == nil {
		attrs = map[string]string{}
	}
	attrs["name"] = c.Name
	attrs["image"] = c.Image
	for k, v := range extra {
		attrs[k] = v
	}
	f.publish(docker.Event{Time: at, Action: action, ContainerID: c.ID, Name: c.Name, Attributes: attrs})
}

// emitImage records an image event and hands it to every subscriber: image
// events carry no container label, and every session resolves images.
func (f *Engine) emitImage(action, ref, id string, at time.Time) {
	f.publish(docker.Event{Time: at, Type: docker.EventImage, Action: action, Name: ref, Attributes: map[string]string{"name": ref, "id": id}})
}

// publish keeps ev in the history and hands it to the subscribers that get
// it (isManaged).
func (f *Engine) publish(ev docker.Event) {
	f.history = append(f.history, ev)
	if len(f.history) > 2*maxHistory {
		f.history = append(f.history[:0:0], f.history[len(f.history)-maxHistory:]...)
	}
	live := f.subs[:0]
	for _, s := range f.subs {
		if s.feed.gone.Load() {
			continue
		}
		live = append(live, s)
		if isManaged(ev, s.prefix) {
			s.feed.push(copyEvent(ev))
		}
	}
	clear(f.subs[len(live):])
	f.subs = live
}

func (f *Engine) recentHistory() []docker.Event {
	if len(f.history) > maxHistory {
		return f.history[len(f.history)-maxHistory:]
	}
	return f.history
}

// isManaged reports whether a subscriber of prefix gets ev: a managed
// container's event, or any image's.
func isManaged(ev docker.Event, prefix string) bool {
	return ev.Type == docker.EventImage || ev.Attributes[docker.ManagedLabel(prefix)] == "true"
}

// BreakEvents breaks every open event stream, as a lost engine connection
// does: each subscriber gets err on its error channel, then its event
// channel closes once the events already queued are delivered.
func (f *Engine) BreakEvents(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.subs {
		select {
		case s.errc <- err:
		default:
		}
		s.feed.end()
	}
	f.subs = nil
}

// feed delivers values to a reader in order without ever blocking the
// writer: a queue drained by its own goroutine into out. out closes when ctx
// ends, or after end once the queue is drained.
type feed[T any] struct {
	mu    sync.Mutex
	queue []T
	ended bool
	wake  chan struct{}
	out   chan T
	gone  atomic.Bool // the pump has stopped; pushes are pointless
}

func newFeed[T any](ctx context.Context, backlog []T) *feed[T] {
	fd := &feed[T]{queue: backlog, wake: make(chan struct{}, 1), out: make(chan T)}
	go fd.pump(ctx)
	return fd
}

func (fd *feed[T]) push(v T) {
	fd.mu.Lock()
	fd.queue = append(fd.queue, v)
	fd.mu.Unlock()
	fd.poke()
}

func (fd *feed[T]) end() {
	fd.mu.Lock()
	fd.ended = true
	fd.mu.Unlock()
	fd.poke()
}

func (fd *feed[T]) poke() {
	select {
	case fd.wake <- struct{}{}:
	default:
	}
}

func (fd *feed[T]) pump(ctx context.Context) {
	defer close(fd.out)
	defer fd.gone.Store(true)
	for ctx.Err() == nil {
		fd.mu.Lock()
		if len(fd.queue) == 0 {
			ended := fd.ended
			fd.mu.Unlock()
			if ended {
				return
			}
			select {
			case <-fd.wake:
				continue
			case <-ctx.Done():
				return
			}
		}
		v := fd.queue[0]
		var zero T
		fd.queue[0] = zero
		fd.queue = fd.queue[1:]
		fd.mu.Unlock()
		select {
		case fd.out <- v:
		case <-ctx.Done():
			return
		}
	}
}
