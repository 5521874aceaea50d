package loopkit

import "sync"

// Worker runs one kind of slow operation beside a loop (journal lines,
// holds writes, the lock file), one job at a time and in the order
// pushed, on a goroutine of its own. Push never blocks, nor does a
// report: the reports queue up and Ready says there are some to Take. So
// a hung disk holds up its worker, never the loop, which keeps answering
// and says what it waits for. The loop counts what it handed over and
// what came back.
type Worker[J, R any] struct {
	mu      sync.Mutex
	jobs    []J
	reports []R
	closed  bool
	wake    chan struct{} // a job was pushed, or Close was called
	ready   chan struct{} // reports wait to be taken
	done    chan struct{} // closed when the goroutine returned
}

// StartWorker starts a worker that runs do on each job pushed.
func StartWorker[J, R any](do func(J) R) *Worker[J, R] {
	w := &Worker[J, R]{wake: NewSignal(), ready: NewSignal(), done: make(chan struct{})}
	go w.run(do)
	return w
}

func (w *Worker[J, R]) run(do func(J) R) {
	defer close(w.done)
	for {
		w.mu.Lock()
		if len(w.jobs) == 0 {
			closed := w.closed
			w.mu.Unlock()
			if closed {
				return
			}
			<-w.wake
			continue
		}
		j := w.jobs[0]
		w.jobs = w.jobs[1:]
		w.mu.Unlock()
		r := do(j)
		w.mu.Lock()
		w.reports = append(w.reports, r)
		w.mu.Unlock()
		Signal(w.ready)
	}
}

// Push hands the worker a job.
func (w *Worker[J, R]) Push(j J) {
	w.mu.Lock()
	w.jobs = append(w.jobs, j)
	w.mu.Unlock()
	Signal(w.wake)
}

// Take is the reports so far, oldest first.
func (w *Worker[J, R]) Take() []R {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.reports
	w.reports = nil
	return out
}

// Ready receives after a report was added; a receive may find it taken.
func (w *Worker[J, R]) Ready() <-chan struct{} { return w.ready }

// Close lets the worker end once its jobs are done; Done says when.
func (w *Worker[J, R]) Close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	Signal(w.wake)
}

// Done is closed once the worker has ended (after Close, its jobs done).
func (w *Worker[J, R]) Done() <-chan struct{} { return w.done }
