package loopkit

import "sync"

// Queue is an unbounded queue of intents for a loop: Push never blocks
// and never drops; Wake says there are some to Drain. The zero Queue is
// not ready: make one with NewQueue.
type Queue[T any] struct {
	mu   sync.Mutex
	q    []T
	wake chan struct{}
}

// NewQueue returns an empty queue.
func NewQueue[T any]() *Queue[T] { return &Queue[T]{wake: NewSignal()} }

// Push appends v and wakes the loop.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	q.q = append(q.q, v)
	q.mu.Unlock()
	Signal(q.wake)
}

// Drain takes everything pushed so far, oldest first.
func (q *Queue[T]) Drain() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.q
	q.q = nil
	return out
}

// Wake receives after a Push; a receive may find the queue already
// drained.
func (q *Queue[T]) Wake() <-chan struct{} { return q.wake }
