package session

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// Mode is how a session acts.
type Mode string

const (
	ModeWatch Mode = "watch" // read-only
	ModeStep  Mode = "step"  // runs only approved steps
	ModeAuto  Mode = "auto"  // runs each plan as it appears
)

// Acting reports whether the mode runs steps (and so needs the host lock).
func (m Mode) Acting() bool { return m == ModeStep || m == ModeAuto }

// ParseMode reads "watch", "step" or "auto".
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeWatch, ModeStep, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("mode %q: want watch, step or auto", s)
}

// Options configure a Session. Client and Source are required.
type Options struct {
	Client docker.Client
	Source Source
	// Mode to start in; "" means ModeStep, the console's default.
	Mode Mode
	// Prefix overrides the desired state's label prefix (the --prefix flag).
	// "" takes the prefix of the first desired state that loads, else
	// spec.DefaultPrefix.
	Prefix string
	// Journal receives one entry per executed step; nil journals nothing.
	Journal *journal.Journal
	// LockPath is the host lock file. "" means one file per engine endpoint
	// and prefix under /run/lock (when writable) or the temp directory.
	LockPath string
	// User names the operator in the journal and the lock; "" means
	// journal.CurrentUser().
	User string
	// Now is the clock for diffs and snapshot times; nil means time.Now. Give
	// it the fake engine's clock.
	Now func() time.Time
	// SkipHealth starts in emergency mode (§5 rule 11).
	SkipHealth bool
	// Recreate asks for a rolling restart of every workload of the first
	// desired state (§5 rule 10).
	Recreate bool
	// Resync is how often the engine is relisted with no event; 0 means 30s.
	Resync time.Duration
	// Coalesce is the shortest time between two relists, so a burst of
	// events gives one; 0 means 50ms.
	Coalesce time.Duration
	// OnStep, if set, is called from the loop as a step turns running, with
	// the time by Now. It must return quickly.
	OnStep func(reconcile.Step, time.Time)
}

// Session is one live loop. Create it with New, start it with Run, read
// Snapshots and send intents with Do.
type Session struct {
	opts    Options
	snaps   chan Snapshot
	intents intentQueue
	started atomic.Bool
}

// New returns a session; nothing happens until Run.
func New(opts Options) *Session {
	if opts.Mode == "" {
		opts.Mode = ModeStep
	}
	if opts.User == "" {
		opts.User = journal.CurrentUser()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Resync <= 0 {
		opts.Resync = 30 * time.Second
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = 50 * time.Millisecond
	}
	return &Session{opts: opts, snaps: make(chan Snapshot, 1), intents: newIntentQueue()}
}

// Snapshots delivers the session's state after every change. It holds at
// most one snapshot: a newer one replaces an unread older one, so a slow
// reader never holds the loop up and always gets the latest. It is closed
// when Run returns.
func (s *Session) Snapshots() <-chan Snapshot { return s.snaps }

// Do hands the loop an operator intent. It never blocks and never drops:
// intents queue up in order. What came of one shows in the next snapshots
// (often as a Note).
func (s *Session) Do(i Intent) { s.intents.push(i) }

// Run runs the loop until ctx ends, then releases the host lock, waits for
// its goroutines (a running step is cancelled with ctx) and closes
// Snapshots. It returns nil when ctx ends, and an error only when it cannot
// start (Options incomplete, or a second Run).
func (s *Session) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("session: Run called twice")
	}
	if s.opts.Client == nil || s.opts.Source == nil {
		close(s.snaps)
		return errors.New("session: Options.Client and Options.Source are required")
	}
	if _, err := ParseMode(string(s.opts.Mode)); err != nil {
		close(s.snaps)
		return fmt.Errorf("session: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := newLoop(ctx, s)
	defer func() {
		cancel()
		l.wg.Wait()
		l.releaseLock()
		close(s.snaps)
	}()
	l.start()
	l.run()
	return nil
}

// loop is the state Run owns. Only the loop goroutine touches it.
type loop struct {
	s    *Session
	opts Options
	ctx  context.Context
	wg   sync.WaitGroup
	raw  docker.Client // reads, and steps while acting with the lock held
	ro   docker.Client // steps otherwise: refuses every mutating call

	// results of the goroutines beside the loop
	fetched chan fetchResult
	loaded  chan loadResult
	stepped chan stepDone
	details chan pauseDetail

	// desired source
	changes   <-chan struct{}
	loading   bool
	reload    bool
	prefix    string
	desired   *spec.Desired
	desiredFP string
	sourceErr error
	recreated bool // Options.Recreate has been applied

	// observer
	evc         <-chan docker.Event
	errc        <-chan error
	evCancel    context.CancelFunc
	evBackoff   time.Duration
	resub       alarm
	throttle    alarm // the next relist: coalescing, or backoff after a failed one
	resync      *time.Ticker
	wake        alarm // the earliest wait of the plan ends
	fetching    bool
	refetch     bool
	lastFetch   time.Time
	listBackoff time.Duration
	info        docker.EngineInfo
	infoOK      bool
	connected   bool
	engineErr   string

	// epoch moves whenever a plan stops being good to act on: a step starts
	// or ends, an intent arrives, the desired state or the mode changes.
	epoch     uint64
	planEpoch uint64 // epoch of the fetch the plan came from

	resolved   *spec.ResolvedDesired
	containers []docker.Container
	plan       reconcile.Plan
	planNow    time.Time

	events []docker.Event
	notes  []Note
	recent []StepResult

	// decisions
	mode       Mode
	pause      *PauseInfo
	acked      map[string]bool // pause failures already acted on, by workload/container
	skipHealth bool
	holds      map[string]map[string]bool
	recreate   map[string]time.Time
	restarts   map[string]int // restarts rollcall issued, by container ID
	approved   map[string]bool
	skipped    map[string]bool
	confirmed  map[string]bool
	retries    map[string]*retry     // failed steps, by key
	results    map[string]StepResult // last result, by key
	rollbacks  map[string]string     // operator rollbacks under way: workload -> held hash
	blastCheck bool
	confirm    *Confirmation
	running    *StepRun

	lock             *hostLock
	lockPath         string
	holder           *LockHolder
	lockErr          string
	releaseAfterStep bool

	seq uint64
}

func newLoop(ctx context.Context, s *Session) *loop {
	return &loop{
		s: s, opts: s.opts, ctx: ctx,
		raw: s.opts.Client, ro: docker.ReadOnly(s.opts.Client),
		fetched: make(chan fetchResult), loaded: make(chan loadResult),
		stepped: make(chan stepDone), details: make(chan pauseDetail),
		mode: s.opts.Mode, skipHealth: s.opts.SkipHealth,
		acked: map[string]bool{}, holds: map[string]map[string]bool{}, recreate: map[string]time.Time{},
		restarts: map[string]int{}, approved: map[string]bool{}, skipped: map[string]bool{},
		confirmed: map[string]bool{}, retries: map[string]*retry{}, results: map[string]StepResult{},
		rollbacks: map[string]string{}, blastCheck: true, connected: false,
	}
}

func (l *loop) now() time.Time { return l.opts.Now() }

// start loads the desired state (its prefix names everything the observer
// watches), subscribes to events and starts the first relist.
func (l *loop) start() {
	src := l.opts.Source
	l.changes = src.Changes(l.ctx) // before the load, so no edit slips between
	d, err := src.Load(l.ctx)
	l.onLoaded(loadResult{desired: d, err: err})
	if l.prefix == "" {
		l.prefix = l.opts.Prefix
		if l.prefix == "" {
			l.prefix = spec.DefaultPrefix
		}
	}
	l.resync = time.NewTicker(l.opts.Resync)
	l.subscribe()
	if l.mode.Acting() {
		l.takeLock()
	}
	l.publish()
}

func (l *loop) run() {
	defer l.resync.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.s.intents.wake:
			for _, i := range l.s.intents.drain() {
				l.handle(i)
			}
		case ev, ok := <-l.evc:
			if !ok {
				l.onStreamClosed()
			} else {
				l.onEvent(ev)
			}
		case err, ok := <-l.errc:
			if !ok {
				l.errc = nil
			} else {
				l.onStreamError(err)
			}
		case <-l.changes:
			l.startLoad()
		case r := <-l.loaded:
			l.onLoaded(r)
		case r := <-l.fetched:
			l.onFetched(r)
		case r := <-l.stepped:
			l.onStepDone(r)
		case d := <-l.details:
			l.onDetail(d)
		case <-l.throttle.c:
			l.throttle.fired()
			l.startFetch()
		case <-l.resync.C:
			l.requestFetch()
		case <-l.wake.c:
			l.wake.fired()
			l.requestFetch()
		case <-l.resub.c:
			l.resub.fired()
			l.subscribe()
		}
		l.publish()
	}
}

// publish hands the latest snapshot over, replacing an unread one.
func (l *loop) publish() {
	l.seq++
	snap := l.snapshot()
	for {
		select {
		case l.s.snaps <- snap:
			return
		default:
		}
		select {
		case <-l.s.snaps:
		default:
		}
	}
}

// goReport runs f beside the loop and delivers its result on ch, unless the
// session is ending.
func goReport[T any](l *loop, ch chan T, f func() T) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		r := f()
		select {
		case ch <- r:
		case <-l.ctx.Done():
		}
	}()
}

// note records something the operator should know, for the snapshot.
func (l *loop) note(format string, args ...any) {
	l.notes = append(l.notes, Note{At: l.now(), Text: fmt.Sprintf(format, args...)})
	if len(l.notes) > maxNotes {
		l.notes = l.notes[len(l.notes)-maxNotes:]
	}
}

// alarm is a one-shot timer whose channel is nil while it is not armed, so
// a select on it waits forever.
type alarm struct {
	t *time.Timer
	c <-chan time.Time
}

func (a *alarm) set(d time.Duration) {
	a.stop()
	a.t = time.NewTimer(d)
	a.c = a.t.C
}

func (a *alarm) stop() {
	if a.t != nil {
		a.t.Stop()
	}
	a.t, a.c = nil, nil
}

func (a *alarm) fired()      { a.t, a.c = nil, nil }
func (a *alarm) armed() bool { return a.c != nil }
