package session

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/source"
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
	Source source.Source
	// Swarm, when set, is the swarm the Client's engine manages (a
	// desired state with engine: swarm, DESIGN §13): the session drives
	// its services (swarm.go) instead of the engine's containers.
	Swarm docker.Swarm
	// Mode to start in; "" means ModeStep, the console's default.
	Mode Mode
	// Prefix overrides the desired state's label prefix (the --prefix flag).
	// "" takes the prefix of the first desired state that loads, else
	// spec.DefaultPrefix.
	Prefix string
	// Journal receives a line before and after every step and one per
	// operator decision; nil journals nothing. The lines are written
	// beside the loop, in order: a step starts only once its first line
	// is written, and while a line is being written no new step starts.
	Journal *journal.Journal
	// JournalMode names the mode in the journal ("apply", "agent", "demo");
	// "" means the session's mode.
	JournalMode string
	// LockPath is the host lock file. "" means one file per engine endpoint
	// and prefix under /run/lock (when writable) or the temp directory.
	LockPath string
	// User names the operator in the journal and the lock; "" means
	// journal.CurrentUser().
	User string
	// Now is the engine's clock: a plan is diffed at its reading as the
	// list starts, and the snapshot's times are on it; nil means time.Now.
	// Give it the fake engine's clock. Timers, the settle and the journal
	// run on the wall clock (time.Now) whatever it is.
	Now func() time.Time
	// SkipHealth starts in emergency mode (§5 rule 11).
	SkipHealth bool
	// Recreate asks for a rolling restart of every workload of the first
	// desired state (§5 rule 10).
	Recreate bool
	// Resync is how often the engine is relisted with no event; 0 means 30s.
	Resync time.Duration
	// RegistryPoll overrides the desired state's registry_poll: how often
	// the registry is asked where the `pull: always` tags point (pull.go).
	RegistryPoll time.Duration
	// Coalesce is the shortest time between two relists, so a burst of
	// events gives one; 0 means 50ms.
	Coalesce time.Duration
	// OnStep, if set, is called from the loop as a step turns running, with
	// the time by Now. It must return quickly.
	OnStep func(reconcile.Step, time.Time)

	// Unattended, when set, is the policy that stands in for the questions
	// a console asks (agent, apply, the demo's staging): see Unattended.
	Unattended *Unattended
	// Log receives a structured line for everything the session reports:
	// each step, refusals, pauses, rollbacks, the engine going and coming
	// back, the desired state loading or breaking, the lock. nil logs
	// nothing (the console shows it all instead).
	Log *slog.Logger
	// Facts, if set, gets each fact the session records (facts.go), as
	// typed values (apply renders them as human lines), called from the
	// loop: it must not block. Without it they are log lines on Log.
	Facts func(Fact)
	// Observer, if set, sees what the session reports as data, beside
	// Facts and Log (engine/metrics): see Observer.
	Observer Observer
	// Settle is how long a changed desired state must stay the same before
	// it is acted on; 0 means DefaultSettle, < 0 means not at all (tests).
	Settle time.Duration
	// StateDir keeps what outlives the process: the holds (rolled-back
	// specs), one file per engine and prefix. "" keeps them in memory.
	StateDir string
	// Lock is a host lock the caller already holds (the demo stages and
	// then opens the console under one lock). The session acts under it
	// and never releases it; LockPath is then ignored.
	Lock *Lock
	// HeldLock, when set, stands in for Lock where the caller takes and
	// lets go of the lock itself (a fleet): it is asked for the lock each
	// time an acting mode needs it, from the loop, and must return at
	// once; nil means the caller holds none, and the session watches.
	HeldLock func() *Lock

	// Host names the session's host in a fleet (DESIGN §11), for the
	// journal's lines; "" for the one engine of a file without hosts.
	Host string
	// Rollout, when set, gives the ID of the fleet rollout each journal
	// line belongs to, as the line is made, from the loop: it must
	// return at once.
	Rollout func() string
	// Gated makes the session one host of a fleet: its gate (the Gate
	// intent) starts closed, and each new desired state closes it again
	// as it loads, before anything of it can run. While the gate is
	// closed no step starts; the one in flight finishes.
	Gated bool
	// Notify tunes the posts to the webhooks of the desired state's
	// notify: (bound, tries, backoff, queue, HTTP client; notify.go); the
	// zero value is engine/notify's defaults. Its Report is the session's.
	Notify notify.Options
}

// Unattended is the policy of a session nobody watches (DESIGN §7).
//
//   - Blast radius: a desired change that stops or rolls more than half of
//     the running containers is refused and logged, and the session waits
//     for the next desired change, unless AllowMassStop.
//   - Stop-first downtime, which the desired state asks for (or a fixed host
//     port forces), runs without a question and is logged as downtime.
type Unattended struct {
	AllowMassStop bool
}

// Session is one live loop. Create it with New, start it with Run, read
// Snapshots and send intents with Do.
type Session struct {
	opts    Options
	snaps   chan Snapshot
	intents *loopkit.Queue[Intent]
	started atomic.Bool

	abandonMu sync.Mutex
	abandon   context.CancelFunc // cancels the step in flight; nil until Run
	abandoned bool

	lockWrap func(do func(lockJob) lockDone) func(lockJob) lockDone // tests: wraps the lock worker (lock.go); nil in use
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
	switch {
	case opts.Settle == 0:
		opts.Settle = DefaultSettle
	case opts.Settle < 0:
		opts.Settle = 0
	}
	return &Session{opts: opts, snaps: make(chan Snapshot, 1), intents: loopkit.NewQueue[Intent]()}
}

// Snapshots delivers the session's state after every change. It holds at
// most one snapshot: a newer one replaces an unread older one, so a slow
// reader never holds the loop up and always gets the latest. It is closed
// when Run returns.
func (s *Session) Snapshots() <-chan Snapshot { return s.snaps }

// Do hands the loop an operator intent. It never blocks and never drops:
// intents queue up in order. What came of one shows in the next snapshots
// (often as a Note).
func (s *Session) Do(i Intent) { s.intents.Push(i) }

// Abandon cuts the step in flight short (a second signal, a second `q`):
// what it only waits for (its pre_stop and drain) ends, and the journal
// marks it interrupted; an engine call it already made (a stop and its
// remove, a create and its start) is carried to its end, bounded
// (reconcile.RunWith). Without it, a session whose ctx ends lets the
// running step finish first.
func (s *Session) Abandon() {
	s.abandonMu.Lock()
	defer s.abandonMu.Unlock()
	s.abandoned = true
	if s.abandon != nil {
		s.abandon()
	}
}

// stepFinishSlack is how long past a step's own stop grace a session that
// is ending waits for it.
const stepFinishSlack = 5 * time.Second

// Run runs the loop until ctx ends. A step in flight is then carried to
// its end (bounded by its stop grace and stepFinishSlack, or cut short by
// Abandon), so no old container is left stopped and no new one created but
// never started. Then it releases the host lock, waits for its goroutines
// and closes Snapshots. It returns nil when ctx ends, and an error only when
// it cannot start (Options incomplete, or a second Run).
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
	l.startWorkers(s.opts.Journal, s.lockWorker())
	s.abandonMu.Lock()
	l.stepCtx, s.abandon = context.WithCancel(context.Background())
	if s.abandoned {
		s.abandon()
	}
	s.abandonMu.Unlock()
	defer func() {
		l.finishStep()
		l.closeNotify()
		cancel()
		s.Abandon() // nothing runs any more; frees the step context
		l.wg.Wait()
		l.releaseLock()
		l.closeWorkers()
		close(s.snaps)
	}()
	l.start()
	l.run()
	return nil
}

// finishStep waits, as the session ends, for the step in flight to end,
// journals it as any other, and abandons it after its grace and slack. It
// also lets the journal lines and the holds write under way end; a disk
// that still has not taken them a slack later is given up on.
func (l *loop) finishStep() {
	if len(l.running) == 0 && !l.diskBusy() {
		return
	}
	var grace time.Duration
	for _, r := range l.running {
		s := r.Step
		grace = max(grace, s.Grace+s.Drain)
		l.log(levelWarn, "ending: letting the running step finish", "action", string(s.Action), "target", s.Target(), "container", s.Container)
	}
	t := time.NewTimer(grace + stepFinishSlack)
	defer t.Stop()
	abandoned := false
	for len(l.running) > 0 || l.diskBusy() {
		select {
		case d := <-l.stepped:
			l.onStepped(d)
		case <-l.journalW.Ready():
			l.onJournaled(l.journalW.Take())
		case <-l.holdsW.Ready():
			for _, w := range l.holdsW.Take() {
				l.onHoldsWritten(w)
			}
		case <-t.C:
			if !abandoned {
				abandoned = true
				if len(l.running) > 0 {
					l.log(levelError, "ending: the running steps did not finish in time: abandoned", "steps", len(l.running))
					l.s.Abandon()
				}
				t.Reset(stepFinishSlack)
				continue
			}
			// The steps were abandoned a slack ago and end promptly; the
			// disk is what holds up now.
			kind, since := l.diskPending()
			l.log(levelError, "ending: the disk did not take the last writes: given up", "write", kind, "pending", l.wallNow().Sub(since).String())
			l.giveUp()
		}
		l.publish() // the end of the step is the last word
	}
}

// rolloutApproval is an approved rollout: it stands until the desired state
// it was given for (by fingerprint) is reached, or something ends it.
type rolloutApproval struct {
	fp    string
	since time.Time
}

// endRollout ends an approved rollout, and records why.
func (l *loop) endRollout(why ApprovalEnd) {
	if l.rollout == nil {
		return
	}
	l.rollout = nil
	l.fact(Fact{Kind: FactApprovalEnded, ApprovalEnd: &why})
}

// loop is the state Run owns. Only the loop goroutine touches it.
type loop struct {
	s    *Session
	opts Options
	ctx  context.Context
	wg   sync.WaitGroup
	// stepCtx is what a step runs under: not ctx, so that an ending session
	// lets the step in flight finish; Session.Abandon cancels it.
	stepCtx context.Context
	raw     docker.Client // reads, and steps while acting with the lock held
	ro      docker.Client // steps otherwise: refuses every mutating call

	// results of the goroutines beside the loop
	fetched chan fetchResult
	loaded  chan loadResult
	stepped chan stepDone
	drained chan reconcile.DrainProgress
	details chan pauseDetail
	proxied chan proxyResult

	// the parts (parts.go)
	clocks
	observer
	desire
	freshness
	guards
	marks
	runner
	disk

	mode  Mode
	notes []Note
	facts factLog // what happened (facts.go)
	// lastStanding is the standing last decided (standing.go).
	lastStanding Standing
	proxy        proxyState  // the proxy in front (proxy.go)
	pulls        pullState   // the pulls in flight (pull.go)
	canary       canaryState // the canaries by traffic (canary.go)
	notify       notifyState // the webhooks of notify: (notify.go)
	swarmState               // the swarm, on a swarm (swarm.go)

	seq uint64
}

func newLoop(ctx context.Context, s *Session) *loop {
	l := &loop{
		s: s, opts: s.opts, ctx: ctx,
		raw: s.opts.Client, ro: docker.ReadOnly(s.opts.Client),
		fetched: make(chan fetchResult), loaded: make(chan loadResult),
		stepped: make(chan stepDone, 1), drained: make(chan reconcile.DrainProgress, 8), details: make(chan pauseDetail),
		proxied: make(chan proxyResult), mode: s.opts.Mode, canary: newCanaryState(), swarmState: newSwarmState(s.opts.Swarm),
		clocks:    clocks{wallNow: time.Now, engineNow: s.opts.Now},
		guards:    guards{skipHealth: s.opts.SkipHealth, holds: map[string]map[string]bool{}, blastCheck: true},
		marks:     marks{acked: map[string]bool{}, recreate: map[string]time.Time{}, approved: map[string]bool{}, skipped: map[string]bool{}, confirmed: map[string]bool{}},
		runner:    runner{restarts: map[string]int{}, retries: map[string]*retry{}, results: map[string]StepResult{}, rollbacks: map[string]string{}, rollbackStops: map[string]bool{}, running: map[string]*StepRun{}},
		freshness: freshness{slotEnded: map[string]uint64{}},
		disk:      disk{slowSaid: map[string]time.Time{}},
	}
	if s.opts.Gated {
		l.gated = gateWaiting
	}
	return l
}

// startWorkers starts the disk workers, the journal's on jr (nil:
// nothing is journaled) and the lock's running lockDo; closeWorkers ends
// them.
func (d *disk) startWorkers(jr *journal.Journal, lockDo func(lockJob) lockDone) {
	d.journaled = jr != nil
	d.journalW = loopkit.StartWorker(func(e journal.Entry) error { return jr.Append(e) })
	d.holdsW = loopkit.StartWorker(doHolds)
	d.rev.w = loopkit.StartWorker(doRev)
	d.locks = loopkit.StartWorker(lockDo)
}

// closeWorkers ends the disk workers once they are done with what they
// were handed, as the session ends. The journal worker is waited for (up
// to stepFinishSlack, unless finishStep gave the disk up already): the lines handed over last, such as the notices the
// notifier's Close reported, are written before Run returns and the caller
// closes the journal. The lock worker is waited for (up to
// stepFinishSlack): the lock is let go of before Run returns. A lock it
// took that the loop never saw is let go of here.
func (l *loop) closeWorkers() {
	l.journalW.Close()
	l.holdsW.Close()
	l.rev.w.Close()
	l.locks.Close()
	if !l.diskGone { // a disk given up on in finishStep is not waited for again
		select { // the journal lines handed over (the notices Close reported among them) are written before Run returns, bounded
		case <-l.journalW.Done():
		case <-time.After(stepFinishSlack):
			l.log(levelError, "ending: the journal did not answer: its last lines are given up", "lines", len(l.jwait))
		}
	}
	select { // a revision or a pin handed over is written before Run returns, bounded
	case <-l.rev.w.Done():
	case <-time.After(stepFinishSlack):
		l.log(levelError, "ending: the revisions file did not answer: its last change is given up")
	}
	select {
	case <-l.locks.Done():
	case <-time.After(stepFinishSlack):
		l.log(levelError, "ending: the lock file did not answer: the host lock goes with the process")
		return
	}
	for _, d := range l.locks.Take() {
		if d.lock != nil {
			d.lock.Release()
		}
	}
}

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
	l.pollProxy()
	l.armLockPoll()
	l.publish()
}

func (l *loop) run() {
	defer l.resync.Stop()
	defer l.lockPoll.Stop()
	defer l.diskAlarm.Stop()
	defer l.proxy.alarm.Stop()
	defer l.zeroCanaries()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-l.s.intents.Wake():
			for _, i := range l.s.intents.Drain() {
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
			l.pollProxy() // the proxy may have changed
		case r := <-l.fetched:
			l.onFetched(r)
		case r := <-l.stepped:
			l.onStepped(r)
		case d := <-l.details:
			l.onDetail(d)
		case p := <-l.drained:
			l.onDrained(p)
		case p := <-l.pulls.c:
			l.onPulled(p)
		case <-l.pulls.poll.C():
			l.onRegistryPoll()
		case v := <-l.canary.c:
			l.onCanary(v)
		case r := <-l.proxied:
			l.onProxied(r)
		case <-l.proxy.alarm.C():
			l.onProxyAlarm()
		case <-l.throttle.C():
			l.throttle.Fired()
			l.startFetch()
		case <-l.resync.C:
			l.requestFetch() // a list alone: image events say when to resolve again
		case <-l.wake.C():
			l.wake.Fired()
			l.requestFetch()
		case <-l.resub.C():
			l.resub.Fired()
			l.subscribe()
		case <-l.settleAlarm.C():
			l.settleAlarm.Fired()
			l.requestFetch()
		case <-l.lockPoll.C():
			l.lockPoll.Fired()
			l.pollLock()
		case <-l.journalW.Ready():
			l.onJournaled(l.journalW.Take())
		case <-l.holdsW.Ready():
			for _, w := range l.holdsW.Take() {
				l.onHoldsWritten(w)
			}
		case <-l.locks.Ready():
			for _, d := range l.locks.Take() {
				l.onLock(d)
			}
		case <-l.rev.w.Ready():
			for _, d := range l.rev.w.Take() {
				l.onRev(d)
			}
		case <-l.diskAlarm.C():
			l.diskAlarm.Fired()
			l.onDiskAlarm()
		case <-l.notify.wake:
			l.onNotified()
		}
		l.armLockPoll()
		l.watchDisk()
		l.publish()
	}
}

// publish hands the latest snapshot over, replacing an unread one.
func (l *loop) publish() {
	l.seq++
	snap := l.snapshot()
	l.notifyTurn(&snap)
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

// reply tells the operator why an intent of theirs did nothing (watch
// mode, no such workload, nothing to confirm ...), for the snapshot's
// Notes. A reply is no record: nothing happened. Whatever happens is a
// fact (facts.go), in words where it is shown (Fact.Text).
func (l *loop) reply(format string, args ...any) {
	l.notes = append(l.notes, Note{At: l.engineNow(), Text: fmt.Sprintf(format, args...)})
	if len(l.notes) > maxNotes {
		l.notes = l.notes[len(l.notes)-maxNotes:]
	}
}

// diskSlowAfter is how long a write may be pending before the session
// says so (FactWriteSlow); its snapshot says it from the start.
const diskSlowAfter = time.Second

// diskPending is the oldest write the loop waits for, if any: "journal" or
// "holds", and since when (wall clock).
func (d *disk) diskPending() (kind string, since time.Time) {
	if len(d.jwait) > 0 {
		kind, since = "journal", d.jwait[0].since
	}
	if d.hs.writing != nil && (kind == "" || d.hs.since.Before(since)) {
		kind, since = "holds", d.hs.since
	}
	return kind, since
}

func (d *disk) diskBusy() bool { kind, _ := d.diskPending(); return kind != "" }

// diskWait is why nothing new runs while a write is pending, at now (wall
// clock); "" when none is.
func (d *disk) diskWait(now time.Time) string {
	kind, since := d.diskPending()
	if kind == "" {
		return ""
	}
	if d := now.Sub(since); d >= time.Second {
		return fmt.Sprintf("%s write pending for %s: nothing new runs until it is written", kind, d.Truncate(time.Second))
	}
	return fmt.Sprintf("%s write pending: nothing new runs until it is written", kind)
}

// watchDisk, at the end of each turn of the loop, says in the snapshot
// that nothing new runs while a write is pending (act says it again once
// the write ends), and keeps the disk alarm armed only while one is: for
// the moment it turns slow, then for each second the wait shows.
func (l *loop) watchDisk() {
	now := l.wallNow()
	if why := l.diskWait(now); why != "" {
		l.waiting = why
	}
	l.armDiskAlarm(now)
}

// armDiskAlarm keeps the disk alarm armed only while a write is pending
// at now (wall clock): for the moment it turns slow, then for each second
// the wait shows.
func (d *disk) armDiskAlarm(now time.Time) {
	kind, since := d.diskPending()
	switch {
	case kind == "":
		d.diskAlarm.Stop()
	case !d.diskAlarm.Armed():
		age := now.Sub(since)
		next := diskSlowAfter - age
		if age >= diskSlowAfter {
			next = time.Second - age%time.Second
		}
		d.diskAlarm.Set(max(next, time.Millisecond))
	}
}

// onDiskAlarm says once that a write is slow, and brings what the session
// waits for up to date.
func (l *loop) onDiskAlarm() {
	if !l.diskBusy() {
		return
	}
	if kind, pending, ok := l.turnedSlow(l.wallNow()); ok {
		l.fact(Fact{Kind: FactWriteSlow, Write: &WriteFact{Write: kind, Took: pending}})
	}
	l.act()
}

// turnedSlow reports the oldest pending write once it has been pending
// for diskSlowAfter at now (wall clock): once per write, which is said to
// be slow from then on (slowSaid, diskDone).
func (d *disk) turnedSlow(now time.Time) (kind string, pending time.Duration, ok bool) {
	kind, since := d.diskPending()
	if _, said := d.slowSaid[kind]; kind == "" || said || now.Sub(since) < diskSlowAfter {
		return "", 0, false
	}
	d.slowSaid[kind] = since
	return kind, now.Sub(since), true
}

// diskDone says that a write said to be slow ended.
func (l *loop) diskDone(kind string) {
	if took, ok := l.slowEnded(kind, l.wallNow()); ok {
		l.fact(Fact{Kind: FactWriteDone, Write: &WriteFact{Write: kind, Took: took.Truncate(100 * time.Millisecond)}})
	}
}

// slowEnded: the write of kind ended at now (wall clock); ok if it was
// said to be slow, took since it began.
func (d *disk) slowEnded(kind string, now time.Time) (took time.Duration, ok bool) {
	since, said := d.slowSaid[kind]
	if !said {
		return 0, false
	}
	delete(d.slowSaid, kind)
	return now.Sub(since), true
}

// giveUp is the end of an ending session's wait for the disk: what it was
// still to write is dropped and not waited for (a journal line's then is
// told errJournalGone), and nothing more is handed to it.
func (d *disk) giveUp() {
	d.diskGone = true
	waits := d.jwait
	d.jwait = nil
	for _, w := range waits {
		if w.then != nil {
			w.then(errJournalGone)
		}
	}
	d.hs.writing = nil
}
