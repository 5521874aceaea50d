package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/loopkit"
)

// Defaults of Options.
const (
	DefaultTimeout = 5 * time.Second
	DefaultTries   = 5
	DefaultBackoff = time.Second
	DefaultQueue   = 64
)

// Options tune a Notifier; the zero value is the defaults.
type Options struct {
	// Timeout bounds each post, from the dial to the answer's end; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// Tries is how often one event is posted to one URL before it counts
	// as failed; 0 means DefaultTries.
	Tries int
	// Backoff is the wait after the first failed try, doubling after each
	// further one; 0 means DefaultBackoff.
	Backoff time.Duration
	// Queue is how many events wait per URL; when it is full, the oldest
	// is dropped. 0 means DefaultQueue.
	Queue int
	// Client posts; nil means a client of the notifier's own, which
	// follows no redirect (a redirected POST is a failure).
	Client *http.Client
	// Report, if set, gets the outcome of every event at every URL:
	// delivered, failed or dropped. It is called from the notifier's
	// goroutines and from Send, never under a lock of the notifier; it
	// must return quickly.
	Report func(Report)
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Tries <= 0 {
		o.Tries = DefaultTries
	}
	if o.Backoff <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return o
}

// Result is what came of one event at one URL.
type Result string

const (
	Delivered Result = "delivered" // a try was answered 2xx
	Failed    Result = "failed"    // every try failed, or an answer no retry can change (4xx but 408 and 429, 3xx)
	Dropped   Result = "dropped"   // never tried to the end: the queue was full, the URL left the list, or Close cut it short
)

// Report is the outcome of one event at one URL.
type Report struct {
	Result Result
	// Target names the URL as Target.Name does: never its path, query or
	// token.
	Target string
	Event  Event
	Tries  int   // posts made
	Status int   // the last answer's HTTP status; 0 when none came
	Err    error // why it failed or was dropped; nil when delivered
}

// Notifier posts events to its targets, each URL with a queue and a
// goroutine of its own: a URL that hangs holds up only its own events,
// and Send never waits for any. Create it with New, end it with Close.
type Notifier struct {
	opts Options

	mu      sync.Mutex
	closed  bool
	senders map[Target]*sender
	order   []*sender // in the order SetTargets listed them
	wg      sync.WaitGroup
}

// New returns a notifier with no targets.
func New(o Options) *Notifier {
	return &Notifier{opts: o.withDefaults(), senders: map[Target]*sender{}}
}

// SetTargets makes ts the URLs that later events go to. A URL kept keeps
// its queue; one that left the list stops, and what it still held is
// dropped (and reported so).
func (n *Notifier) SetTargets(ts []Target) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	keep := make(map[Target]bool, len(ts))
	order := make([]*sender, 0, len(ts))
	for _, t := range ts {
		if keep[t] {
			continue
		}
		keep[t] = true
		s := n.senders[t]
		if s == nil {
			s = n.start(t)
		}
		order = append(order, s)
	}
	for t, s := range n.senders {
		if !keep[t] {
			s.stop(errLeft)
			delete(n.senders, t)
		}
	}
	n.order = order
}

// Targets are the URLs events go to now, in order.
func (n *Notifier) Targets() []Target {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Target, len(n.order))
	for i, s := range n.order {
		out[i] = s.t
	}
	return out
}

// Send queues e for every target and returns at once. It sets
// SchemaVersion, Time when it is zero and Text when it is empty. A queue that is full drops its
// oldest event, which is reported as dropped.
func (n *Notifier) Send(e Event) {
	e = stamp(e)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	var drops []Report
	for _, s := range n.order {
		if r, dropped := s.push(e); dropped {
			drops = append(drops, r)
		}
	}
	n.mu.Unlock()
	for _, r := range drops {
		n.report(r)
	}
}

// Close sends what is queued until ctx ends, then cuts the posts in
// flight and drops the rest, reported as dropped. It returns once every
// goroutine has, with every report made. Send does nothing after it.
func (n *Notifier) Close(ctx context.Context) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	senders := n.order
	for _, s := range n.senders {
		s.finish()
	}
	n.mu.Unlock()
	done := make(chan struct{})
	go func() {
		n.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		for _, s := range senders {
			s.stop(errClosed)
		}
		<-done
	}
}

// stamp sets what Send sets.
func stamp(e Event) Event {
	e.SchemaVersion = SchemaVersion
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	if e.Text == "" {
		e.Text = e.Summary()
	}
	return e
}

func (n *Notifier) report(r Report) {
	if n.opts.Report != nil {
		n.opts.Report(r)
	}
}

var (
	errLeft   = errors.New("the URL left notify: before it was sent")
	errClosed = errors.New("not sent: the session ended first")
	errFull   = errors.New("the queue was full: dropped, oldest first")
)

// start runs the sender of t; under n.mu.
func (n *Notifier) start(t Target) *sender {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &sender{n: n, t: t, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1)}
	n.senders[t] = s
	n.wg.Add(1)
	go s.run()
	return s
}

// sender is one URL's queue and the goroutine that posts it, in order.
type sender struct {
	n      *Notifier
	t      Target
	ctx    context.Context // cancelled (with the cause) when the sender stops
	cancel context.CancelCauseFunc
	wake   chan struct{}

	mu        sync.Mutex
	queue     []Event
	missed    int  // events this URL did not get since the last it got
	finishing bool // send what is queued, then end
}

// push queues e, dropping the oldest when the queue is full: that one is
// returned, to be reported.
func (s *sender) push(e Event) (Report, bool) {
	s.mu.Lock()
	var r Report
	dropped := false
	if len(s.queue) >= s.n.opts.Queue {
		r = Report{Result: Dropped, Target: s.t.Name(), Event: s.queue[0], Err: errFull}
		s.queue = s.queue[1:]
		s.missed++
		dropped = true
	}
	s.queue = append(s.queue, e)
	s.mu.Unlock()
	loopkit.Signal(s.wake)
	return r, dropped
}

func (s *sender) finish() {
	s.mu.Lock()
	s.finishing = true
	s.mu.Unlock()
	loopkit.Signal(s.wake)
}

func (s *sender) stop(why error) { s.cancel(why) }

// next waits for the next event; false once the sender is to end.
func (s *sender) next() (Event, int, bool) {
	for {
		s.mu.Lock()
		switch {
		case s.ctx.Err() != nil:
			s.mu.Unlock()
			return Event{}, 0, false
		case len(s.queue) > 0:
			e := s.queue[0]
			s.queue = s.queue[1:]
			missed := s.missed
			s.mu.Unlock()
			return e, missed, true
		case s.finishing:
			s.mu.Unlock()
			return Event{}, 0, false
		}
		s.mu.Unlock()
		select {
		case <-s.wake:
		case <-s.ctx.Done():
		}
	}
}

func (s *sender) run() {
	defer s.n.wg.Done()
	defer s.cancel(nil)
	for {
		e, missed, ok := s.next()
		if !ok {
			break
		}
		e.Missed = missed
		r := s.deliver(e)
		s.mu.Lock()
		if r.Result == Delivered {
			s.missed -= missed
		} else {
			s.missed++
		}
		s.mu.Unlock()
		s.n.report(r)
	}
	s.mu.Lock()
	rest := s.queue
	s.queue = nil
	s.mu.Unlock()
	why := context.Cause(s.ctx)
	for _, e := range rest {
		s.n.report(Report{Result: Dropped, Target: s.t.Name(), Event: e, Err: why})
	}
}

// deliver posts e until a try is answered 2xx, the tries run out, an
// answer says a retry cannot help, or the sender stops.
func (s *sender) deliver(e Event) Report {
	o := s.n.opts
	r := Report{Result: Failed, Target: s.t.Name(), Event: e}
	body, err := json.Marshal(e)
	if err != nil { // plain data always marshals
		r.Err = err
		return r
	}
	wait := o.Backoff
	for {
		r.Tries++
		r.Status, r.Err = post(s.ctx, o, s.t, body)
		switch {
		case r.Err == nil:
			r.Result = Delivered
			return r
		case s.ctx.Err() != nil: // stopped: cut short, not failed
			r.Result = Dropped
			return r
		}
		if !retryable(r.Status) || r.Tries >= o.Tries {
			return r
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			r.Result, r.Err = Dropped, fmt.Errorf("%w (after %d tries: %v)", context.Cause(s.ctx), r.Tries, r.Err)
			return r
		}
		wait *= 2
	}
}

// retryable: no answer at all (0), a timeout or rate limit, or a server's
// error. Anything else the server said on purpose.
func retryable(status int) bool {
	return status == 0 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// Post makes one try of e to t, bounded by o's Timeout, and says what came
// of it: `rollcall notify-test` sends its sample with it.
func Post(ctx context.Context, t Target, e Event, o Options) Report {
	o = o.withDefaults()
	e = stamp(e)
	r := Report{Result: Failed, Target: t.Name(), Event: e, Tries: 1}
	body, err := json.Marshal(e)
	if err != nil {
		r.Err = err
		return r
	}
	if r.Status, r.Err = post(ctx, o, t, body); r.Err == nil {
		r.Result = Delivered
	}
	return r
}

// maxAnswer is how much of an answer is read (and thrown away, so that the
// connection can be used again).
const maxAnswer = 64 << 10

// post makes one try: the status, and an error unless it was 2xx. No error
// holds the URL's path or query, nor the token.
func post(ctx context.Context, o Options, t Target, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("POST %s: invalid URL", t.Name())
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rollcall-notify/"+fmt.Sprint(SchemaVersion))
	if t.TokenFile != "" {
		token, err := readToken(t.TokenFile)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := o.Client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("POST %s: %s", t.Name(), why(ctx, err, o.Timeout))
	}
	_, rerr := io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	switch {
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		// The status's own text, not the server's (which could be anything).
		return resp.StatusCode, fmt.Errorf("POST %s: answered %d %s", t.Name(), resp.StatusCode, http.StatusText(resp.StatusCode))
	case rerr != nil && ctx.Err() != nil:
		return 0, fmt.Errorf("POST %s: %s", t.Name(), why(ctx, rerr, o.Timeout))
	}
	return resp.StatusCode, nil
}

// why is a failed request's cause without the URL that net/http puts in
// its errors: a webhook's path is often its secret.
func why(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s", timeout)
	}
	if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
		return cause.Error()
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return err.Error()
}
