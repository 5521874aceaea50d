package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// Defaults of Options.
const (
	DefaultDialTimeout  = 15 * time.Second
	DefaultDialParallel = 4
	// DefaultLostGrace is how long a host that was connected may stay
	// disconnected before it counts as lost.
	DefaultLostGrace = 5 * time.Second
)

// Fleet is the runtime of one rollout across the hosts of a desired file.
// Create it with New, start it with Run, read Snapshots, send intents with
// Do.
type Fleet struct {
	opts    Options
	snaps   chan Snapshot
	intents *loopkit.Queue[Intent]
	started atomic.Bool
	// rollout is the ID of the rollout under way, read by every host's
	// session as it makes a journal line.
	rollout atomic.Value // string

	abandonMu sync.Mutex
	sessions  []*session.Session
	abandoned bool
}

// New returns a fleet; nothing happens until Run.
func New(opts Options) *Fleet {
	if opts.Mode == "" {
		opts.Mode = session.ModeStep
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.User == "" {
		opts.User = journal.CurrentUser()
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = DefaultDialTimeout
	}
	if opts.DialParallel <= 0 {
		opts.DialParallel = DefaultDialParallel
	}
	if opts.LostGrace <= 0 {
		opts.LostGrace = DefaultLostGrace
	}
	f := &Fleet{opts: opts, snaps: make(chan Snapshot, 1), intents: loopkit.NewQueue[Intent]()}
	f.rollout.Store("")
	return f
}

// Snapshots delivers the fleet's state after every change, latest wins: a
// newer snapshot replaces an unread older one. It is closed when Run
// returns.
func (f *Fleet) Snapshots() <-chan Snapshot { return f.snaps }

// Do hands the fleet an operator intent. It never blocks and never drops.
func (f *Fleet) Do(i Intent) { f.intents.Push(i) }

// Abandon cuts short the steps in flight on every host (session.Abandon).
func (f *Fleet) Abandon() {
	f.abandonMu.Lock()
	defer f.abandonMu.Unlock()
	f.abandoned = true
	for _, s := range f.sessions {
		s.Abandon()
	}
}

// rolloutID is the ID of the rollout under way; "" before one began.
func (f *Fleet) rolloutID() string { return f.rollout.Load().(string) }

// Run runs the fleet until ctx ends: preflight, then the coordinator
// loop. It then lets every host's session end (each carries its step in
// flight to its end), lets go of the locks, closes the clients it dialled
// and closes Snapshots. It returns nil when ctx ends, and an error only
// when it cannot start.
func (f *Fleet) Run(ctx context.Context) error {
	if !f.started.CompareAndSwap(false, true) {
		return errors.New("fleet: Run called twice")
	}
	if f.opts.Source == nil || f.opts.Dial == nil {
		close(f.snaps)
		return errors.New("fleet: Options.Source and Options.Dial are required")
	}
	if _, err := session.ParseMode(string(f.opts.Mode)); err != nil {
		close(f.snaps)
		return fmt.Errorf("fleet: %w", err)
	}
	r := newRun(ctx, f)
	defer r.end()
	if !r.preflight() {
		return nil
	}
	r.loop()
	return nil
}

// run is the state Run owns.
type run struct {
	f    *Fleet
	opts Options
	ctx  context.Context
	// sessCtx is what the sessions run under: cancelled as Run ends.
	sessCtx    context.Context
	sessCancel context.CancelFunc
	sessWG     sync.WaitGroup

	changes <-chan struct{}
	loaded  chan loadResult
	loading bool
	reload  bool

	desired *spec.Desired
	srcErr  error
	hosts   []*host

	mode        session.Mode
	rec         Record
	dec         Decision
	approved    map[int]bool
	approvedAll bool
	rolloutAt   time.Time // by Options.Now: when the rollout under way began

	// Locks: a take of them all is under way (SetMode from watch), and
	// what the last one that failed said.
	locking  bool
	lockMode session.Mode // the mode the take under way is for
	lockDone chan lockResult
	lockErr  string

	journal *lines
	halted  string // a line of the fleet's could not be written: nothing acts

	hostWake chan struct{}
	timer    loopkit.Alarm

	notes []session.Note
	seq   uint64
}

type loadResult struct {
	desired *spec.Desired
	err     error
}

func newRun(ctx context.Context, f *Fleet) *run {
	r := &run{f: f, opts: f.opts, ctx: ctx, mode: f.opts.Mode,
		loaded: make(chan loadResult, 1), lockDone: make(chan lockResult, 1), hostWake: make(chan struct{}, 1),
		approved: map[int]bool{}}
	r.sessCtx, r.sessCancel = context.WithCancel(context.Background())
	r.journal = newLines(f.opts.Journal)
	return r
}

func (r *run) now() time.Time { return r.opts.Now() }

// end lets the sessions end, then lets go of the locks and the clients,
// and closes Snapshots.
func (r *run) end() {
	r.sessCancel()
	r.sessWG.Wait()
	r.timer.Stop()
	for _, h := range r.hosts {
		h.releaseLock()
		h.closeClient()
	}
	r.journal.close()
	r.publish()
	close(r.f.snaps)
}

// preflight loads the desired state, dials every host, takes the locks
// and starts the sessions. False when ctx ended first.
func (r *run) preflight() bool {
	src := r.opts.Source
	r.changes = src.Changes(r.ctx)
	d, err := src.Load(r.ctx)
	r.takeFirst(d, err)
	r.publish()
	for r.desired == nil {
		select {
		case <-r.ctx.Done():
			return false
		case <-r.changes:
			d, err := src.Load(r.ctx)
			r.takeFirst(d, err)
			r.publish()
		}
	}
	r.dialAll()
	if r.ctx.Err() != nil {
		return false
	}
	r.sameEngines()
	if r.mode.Acting() {
		res := takeLocks(r.lockRequests(), r.opts.User, r.now())
		r.onLocks(res, r.mode)
	}
	r.startSessions()
	r.decide()
	r.publish()
	return true
}

// takeFirst takes the first desired state: it must name hosts.
func (r *run) takeFirst(d *spec.Desired, err error) {
	switch {
	case err != nil:
		r.srcErr = err
		return
	case len(d.Hosts) == 0 || d.Fleet == nil:
		r.srcErr = fmt.Errorf("%s: no hosts: a fleet needs its engines named under the hosts key", d.Source)
		return
	}
	r.srcErr = nil
	r.desired = d
	now := r.now()
	for _, sh := range d.Hosts {
		want, _ := d.ForHost(sh.Name)
		h := &host{name: sh.Name, spec: sh, src: newHostSource(r.opts.Source.Name(), want), want: want, wantSince: now}
		r.hosts = append(r.hosts, h)
	}
}

// startSessions starts one gated session per host that answered.
func (r *run) startSessions() {
	var started []*session.Session
	for _, h := range r.hosts {
		if h.client == nil || h.dup != "" {
			continue
		}
		mode := r.mode
		o := session.Options{
			Client: h.client, Source: h.src, Mode: mode, Journal: r.opts.Journal, JournalMode: r.opts.JournalMode,
			User: r.opts.User, Now: r.opts.Now, Unattended: r.opts.Unattended, Settle: r.opts.Settle,
			Resync: r.opts.Resync, Coalesce: r.opts.Coalesce, StateDir: r.opts.StateDir,
			HeldLock: h.lock.Load, Host: h.name, Rollout: r.f.rolloutID, Gated: true,
		}
		if r.opts.Log != nil {
			o.Log = r.opts.Log.With("host", h.name)
		}
		if r.opts.Observer != nil {
			o.Observer = r.opts.Observer(h.name)
		}
		h.sess = session.New(o)
		h.gateWhy = "waiting for the fleet"
		started = append(started, h.sess)
		r.sessWG.Add(2)
		go func() {
			defer r.sessWG.Done()
			if err := h.sess.Run(r.sessCtx); err != nil {
				h.inbox.fail(err)
				loopkit.Signal(r.hostWake)
			}
		}()
		go func() {
			defer r.sessWG.Done()
			for snap := range h.sess.Snapshots() {
				h.inbox.put(snap)
				loopkit.Signal(r.hostWake)
			}
		}()
	}
	r.f.abandonMu.Lock()
	r.f.sessions = started
	if r.f.abandoned {
		for _, s := range started {
			s.Abandon()
		}
	}
	r.f.abandonMu.Unlock()
}

func (r *run) loop() {
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-r.f.intents.Wake():
			for _, i := range r.f.intents.Drain() {
				r.handle(i)
			}
		case <-r.hostWake:
			r.takeSnapshots()
		case <-r.changes:
			r.startLoad()
		case res := <-r.loaded:
			r.onLoaded(res)
		case res := <-r.lockDone:
			if !r.locking { // the operator went back to watch meanwhile
				res.release()
				break
			}
			r.locking = false
			r.onLocks(res, r.lockMode)
		case <-r.journal.ready():
			r.onJournaled()
		case <-r.timer.C():
			r.timer.Fired()
		}
		r.decide()
		r.releaseWhenWatching()
		r.publish()
	}
}

// takeSnapshots takes in the latest snapshot of every host's session.
func (r *run) takeSnapshots() {
	now := r.now()
	for _, h := range r.hosts {
		snap, ok, err := h.inbox.take()
		if err != nil {
			h.sessErr = err.Error()
		}
		if !ok {
			continue
		}
		h.observe(snap, now)
	}
}

// startLoad loads the desired source beside the loop; a change during a
// load loads again after it.
func (r *run) startLoad() {
	if r.loading {
		r.reload = true
		return
	}
	r.loading = true
	src := r.opts.Source
	go func() {
		d, err := src.Load(r.ctx)
		select {
		case r.loaded <- loadResult{desired: d, err: err}:
		case <-r.ctx.Done():
		}
	}()
}

// onLoaded takes a new desired state in: a new rollout when the workloads
// of a host changed, the same rollout under a new policy otherwise.
func (r *run) onLoaded(res loadResult) {
	r.loading = false
	if r.reload {
		r.reload = false
		defer r.startLoad()
	}
	if res.err != nil {
		r.srcErr = res.err
		return
	}
	d := res.desired
	if err := r.sameHosts(d); err != nil {
		r.srcErr = err
		return
	}
	r.srcErr = nil
	r.desired = d
	// A host whose prefix and workloads did not change keeps the plan
	// its session has (and has resolved), and no new rollout begins for
	// it; whatever else changed (notify, proxy, registry_poll, ...) is
	// handed over to it at once. The others get the new state in full.
	var changed []bool
	wants := make([]*spec.Desired, len(r.hosts))
	for i, h := range r.hosts {
		wants[i], _ = d.ForHost(h.name)
		changed = append(changed, loopkit.PlanFingerprint(wants[i]) != loopkit.PlanFingerprint(h.want))
		if !changed[i] {
			r.handOver(h, wants[i])
		}
	}
	if !slices.Contains(changed, true) && !slices.ContainsFunc(r.hosts, func(h *host) bool { return h.rolledBack }) {
		return
	}
	r.rec, r.approved, r.approvedAll = Record{}, map[int]bool{}, false
	r.f.rollout.Store("")
	r.rolloutAt = time.Time{}
	const why = "a new desired state: waiting for the fleet's decision"
	for i, h := range r.hosts {
		h.approvedFor = nil
		if !changed[i] {
			h.rolledBack, h.noBefore = false, false
			r.closeGate(h, why)
			continue
		}
		if h.convergedUnder != nil && loopkit.PlanFingerprint(h.convergedUnder) != loopkit.PlanFingerprint(wants[i]) {
			h.before = h.convergedUnder
		}
		h.rolledBack, h.noBefore = false, false
		r.setWant(h, wants[i], why)
	}
	r.note("desired state changed: a new rollout, every host held until its wave")
}

// sameHosts refuses a desired state whose hosts or prefix differ from
// the running fleet's: its sessions and locks hang on them.
func (r *run) sameHosts(d *spec.Desired) error {
	if len(d.Hosts) == 0 {
		return fmt.Errorf("%s: no hosts: the running fleet keeps its last good desired state", d.Source)
	}
	if d.Prefix != r.desired.Prefix {
		return fmt.Errorf("%s: prefix %q differs from the running fleet's %q: restart rollcall to change it; the last good desired state stays",
			d.Source, d.Prefix, r.desired.Prefix)
	}
	same := len(d.Hosts) == len(r.hosts)
	for i := 0; same && i < len(d.Hosts); i++ {
		a, b := d.Hosts[i], r.hosts[i].spec
		same = a.Name == b.Name && a.Endpoint == b.Endpoint && a.Context == b.Context && a.TLS == b.TLS && a.PlainTCP == b.PlainTCP
	}
	if !same {
		return fmt.Errorf("%s: hosts: changed: restart rollcall to reach the new set; the last good desired state stays", d.Source)
	}
	return nil
}

// setWant hands a host's session a desired state: its gate is closed
// first, so nothing of it runs before a decision says so.
func (r *run) setWant(h *host, d *spec.Desired, why string) {
	h.want, h.wantSince = d, r.now()
	h.standingOf = nil // a standing of d is one its session decides from now on
	r.closeGate(h, why)
	h.src.set(d)
}

// handOver gives a host's session d, a desired state of the prefix and
// workloads it has: its other keys reach the session, which takes them
// without planning again, and the rollout stands as it is. The host's
// desired state keeps the very workloads its session resolved (planState
// reads them), and so do the states it may return to (before, and the one
// it was converged under), so a rollback_all returns the workloads, never
// an older notify or proxy.
func (r *run) handOver(h *host, d *spec.Desired) {
	if h.want == nil || loopkit.Fingerprint(d) == loopkit.Fingerprint(h.want) {
		return
	}
	rebase := func(from *spec.Desired) *spec.Desired {
		cp := *d
		cp.Workloads = from.Workloads
		return &cp
	}
	was := h.want
	h.want = rebase(was)
	keep := func(p *spec.Desired) *spec.Desired {
		switch p {
		case nil:
			return nil
		case was:
			return h.want
		}
		return rebase(p)
	}
	h.convergedUnder, h.before = keep(h.convergedUnder), keep(h.before)
	if h.approvedFor == was {
		h.approvedFor = h.want // approved already: nothing new to approve
	}
	h.src.set(h.want)
}

// note records something the operator should know, for the snapshot.
func (r *run) note(format string, args ...any) {
	r.notes = append(r.notes, session.Note{At: r.now(), Text: fmt.Sprintf(format, args...)})
	if len(r.notes) > maxNotes {
		r.notes = r.notes[len(r.notes)-maxNotes:]
	}
	if r.opts.Log != nil {
		r.opts.Log.Info(fmt.Sprintf(format, args...), "rollout", r.f.rolloutID())
	}
}

// maxNotes is how many recent notes a snapshot carries.
const maxNotes = 20

// handle applies one intent.
func (r *run) handle(i Intent) {
	switch i := i.(type) {
	case ApproveWave:
		if r.mode != session.ModeStep {
			r.note("approve wave %d: only step mode asks for wave approvals", i.Index+1)
			return
		}
		if i.Index < 0 || i.Index >= len(r.dec.Waves) {
			r.note("approve wave %d: no such wave", i.Index+1)
			return
		}
		if !r.approved[i.Index] {
			r.approved[i.Index] = true
			r.line(lineApproveWave, "", fmt.Sprintf("wave %d: %s", i.Index+1, strings.Join(r.dec.Waves[i.Index].Hosts, ", ")))
			r.note("wave %d approved by %s", i.Index+1, r.user())
		}
	case ApproveAll:
		if r.mode != session.ModeStep {
			r.note("approve the fleet rollout: only step mode asks for approvals")
			return
		}
		if !r.approvedAll {
			r.approvedAll = true
			r.line(lineApproveAll, "", fmt.Sprintf("every wave of %d", len(r.dec.Waves)))
			r.note("fleet rollout approved by %s: every wave runs, unless something fails", r.user())
		}
	case SetMode:
		r.setMode(i.Mode)
	case ToHost:
		h := r.host(i.Host)
		switch {
		case h == nil:
			r.note("%s: no such host", i.Host)
		case h.sess == nil:
			r.note("%s: no session (the host did not answer at preflight)", i.Host)
		default:
			if _, gate := i.Intent.(session.Gate); gate {
				r.note("%s: the gate is the fleet's own", i.Host)
				return
			}
			h.sess.Do(i.Intent)
		}
	}
}

func (r *run) user() string { return r.opts.User }

func (r *run) host(name string) *host {
	for _, h := range r.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// setMode switches the fleet and every host's session. An acting mode
// from watch takes every lock first, all or nothing, beside the loop.
func (r *run) setMode(m session.Mode) {
	if _, err := session.ParseMode(string(m)); err != nil {
		r.note("%v", err)
		return
	}
	switch {
	case m == r.mode && !r.locking:
		return
	case !m.Acting():
		r.mode, r.locking = m, false
		clear(r.approved)
		r.approvedAll = false
		r.eachSession(session.SetMode{Mode: m})
	case r.mode.Acting():
		r.mode = m
		clear(r.approved)
		r.approvedAll = false
		r.eachSession(session.SetMode{Mode: m})
	default:
		r.lockMode = m
		if r.locking {
			return
		}
		r.locking = true
		reqs, user, now := r.lockRequests(), r.opts.User, r.now()
		go func() {
			res := takeLocks(reqs, user, now)
			select {
			case r.lockDone <- res:
			case <-r.ctx.Done():
				res.release()
			}
		}()
	}
}

func (r *run) eachSession(i session.Intent) {
	for _, h := range r.hosts {
		if h.sess != nil {
			h.sess.Do(i)
		}
	}
}

// releaseWhenWatching lets go of the locks once the fleet watches and no
// host's session acts any more (its step in flight ended).
func (r *run) releaseWhenWatching() {
	if r.mode.Acting() || r.locking {
		return
	}
	held := false
	for _, h := range r.hosts {
		if h.lock.Load().Held() {
			held = true
		}
		if h.sess != nil && (h.snap.Mode.Acting() || len(h.snap.RunningSteps) > 0) {
			return
		}
	}
	if held {
		for _, h := range r.hosts {
			h.releaseLock()
		}
	}
}

// decide feeds Decide and carries out its decision.
func (r *run) decide() {
	if r.desired == nil {
		return
	}
	now := r.now()
	in := r.input(now)
	d := Decide(in)
	r.rec, r.dec = d.Record, d
	for _, ev := range d.Events {
		r.onEvent(ev, now)
	}
	r.apply(d)
	r.arm(now)
}

// apply opens and closes the hosts' gates as the decision says.
func (r *run) apply(d Decision) {
	for i, h := range r.hosts {
		if h.sess == nil {
			continue
		}
		v := d.Hosts[i]
		if v.Action == RollBack {
			r.rollBack(h)
		}
		why := r.holdReason(v, d)
		switch {
		case why == "" && v.Action == Pull:
			r.pullGate(h)
		case why == "":
			r.openGate(h, v.Action)
		default:
			r.closeGate(h, why)
		}
	}
}

// holdReason is why a host's gate stays closed; "" when it opens.
func (r *run) holdReason(v Verdict, d Decision) string {
	h := r.hosts[slices.IndexFunc(r.hosts, func(h *host) bool { return h.name == v.Host })]
	switch {
	case r.halted != "":
		return "the fleet's journal cannot be written: nothing acts"
	case v.Action == RollBack && !h.rolledBack:
		return "rollback_all: no earlier converged desired state for this host"
	case v.Action != Hold && !samePlan(h.snap.Desired, h.want):
		return "its session has not loaded the fleet's desired state yet"
	case v.Action != Hold && r.journal.pending() > 0 && !h.gateOpen:
		return "the fleet's journal line is being written"
	case v.Action != Hold:
		return ""
	}
	switch d.Phase {
	case PhaseWatching:
		return "watch mode"
	case PhasePreflight:
		return "preflight: the rollout has not started"
	case PhasePaused:
		return "the rollout is paused: a host failed"
	case PhaseDone:
		return "the rollout is done"
	}
	if v.Wave < 0 {
		return "left out of the rollout"
	}
	if v.Wave >= d.Record.Waves {
		return fmt.Sprintf("wave %d has not started", v.Wave+1)
	}
	return "a host of an earlier wave is not converged and healthy"
}

// openGate opens a host's gate, and in step mode approves the rollout of
// its session once per desired state handed to it.
func (r *run) openGate(h *host, a Action) {
	if !h.gateOpen {
		h.gateOpen, h.gatePulls, h.gateWhy = true, false, ""
		h.sess.Do(session.Gate{Open: true})
	}
	if r.mode == session.ModeStep && h.approvedFor != h.want {
		h.approvedFor = h.want
		h.sess.Do(session.ApproveRollout{})
	}
}

func (r *run) closeGate(h *host, why string) {
	if h.sess == nil || !h.gateOpen && !h.gatePulls && h.gateWhy == why {
		return
	}
	h.gateOpen, h.gatePulls, h.gateWhy = false, false, why
	h.sess.Do(session.Gate{Why: why})
}

// pullGate closes a host's gate but for its pull steps: a host of the
// rollout has an image to pull. In step mode it approves the rollout of
// its session (the fleet's approval stands for it), as openGate does:
// the gate holds every other step.
func (r *run) pullGate(h *host) {
	const why = "pulling: no host runs anything else until every host of the rollout has its images"
	if h.gateOpen || !h.gatePulls {
		h.gateOpen, h.gatePulls, h.gateWhy = false, true, why
		h.sess.Do(session.Gate{Why: why, Pulls: true})
	}
	if r.mode == session.ModeStep && h.approvedFor != h.want {
		h.approvedFor = h.want
		h.sess.Do(session.ApproveRollout{})
	}
}

// rollBack hands a host told to roll back the desired state it was
// converged under before this rollout, once.
func (r *run) rollBack(h *host) {
	switch {
	case h.rolledBack:
		return
	case h.before == nil && len(h.changing) > 0 && h.sess != nil && r.opts.StateDir != "":
		// Not seen converged before this rollout (apply starts cold): each
		// workload the rollout changes is pinned to its revision before the
		// desired spec, as `rollcall rollback` does, and rolls back under
		// every rule of §5 until the desired spec changes or a retry.
		h.rolledBack = true
		for _, w := range h.changing {
			h.sess.Do(session.Pin{Workload: w})
		}
		r.note("rollback_all: %s pins %s to the revision before this rollout", h.name, strings.Join(h.changing, ", "))
		r.line(lineRollback, h.name, "pinning "+strings.Join(h.changing, ", ")+" to the revision before this rollout")
		return
	case h.before == nil:
		if !h.noBefore {
			h.noBefore = true
			r.note("rollback_all: %s has no earlier converged desired state or revision to return to: it holds where it is", h.name)
			r.line(lineRollback, h.name, "nothing earlier to return to: holding")
		}
		return
	}
	h.rolledBack = true
	r.note("rollback_all: %s returns to the desired state it ran before this rollout", h.name)
	r.line(lineRollback, h.name, "returning to the desired state it was converged under before this rollout")
	r.setWant(h, h.before, "rollback_all: loading the earlier desired state")
}

// arm sets the alarm for the next moment a decision may change with
// nothing else happening: a soak's end, a lost host's grace.
func (r *run) arm(now time.Time) {
	next := r.dec.WakeAt
	for _, h := range r.hosts {
		if due := h.graceEnds(r.opts.LostGrace); due.After(now) && (next.IsZero() || due.Before(next)) {
			next = due
		}
	}
	if next.IsZero() || !next.After(now) {
		r.timer.Stop()
		return
	}
	r.timer.Set(max(next.Sub(now), 10*time.Millisecond))
}

// publish hands the latest snapshot over, replacing an unread one.
func (r *run) publish() {
	r.seq++
	snap := r.snapshot()
	for {
		select {
		case r.f.snaps <- snap:
			return
		default:
		}
		select {
		case <-r.f.snaps:
		default:
		}
	}
}
