package session

import (
	"context"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// The loop's state, in the parts that own it. Each part is a struct
// embedded in loop, with the methods that keep to what it owns: a part's
// method reads and writes its own fields and what it is handed (another
// part, a time read off one of the clocks, a value of Options), and never
// reaches into the loop. The loop's own methods are the coordinators: the
// select loop (run) and what takes each message in, act, diff and the
// snapshot, whatever moves two parts at once, and whatever says something
// (note, log, event, the journal's lines), since what is said names the
// engine and the prefix. A part's methods stand beside the loop's code
// that calls them (observe.go, execute.go, holds.go, lock.go, ...); here
// they are by part:
//
//   - clocks: the wall clock and the engine's (below).
//   - observer: the event stream and the relists, the engine and whether
//     it answers, the list in hand and its plan. openEvents, relistDue
//     (coalescing), tookList, keepEvent, patchExited (a die event),
//     connect (news once per outage), needResolve, scoped (the client
//     steps act through), resolvedWorkload, engineName.
//   - desire: the desired source, the last good desired state, the
//     settle. unsettle, settleLeft, proxyAdmin.
//   - freshness (here, with its methods): whether the plan may be acted
//     on, by one rule. spend, stepEnded, stamp, listed, fresh, unspent,
//     anyStale, staleSlots, endedSincePlan.
//   - guards: what may keep every step from running. hold, unhold,
//     lockHeld, holderRead, armLockPoll, setGate, gateOnNewDesired,
//     onDetail (the paused container's detail).
//   - marks: the operator's marks on steps and the rollout. skip,
//     forgetGone, newWaits (the waits not logged yet).
//   - runner: what runs and what ran. finish, record, failed (the retry's
//     backoff), succeeded, rolledBackBy, unhold, forgetGone,
//     forgetRestarts (rule 4's reset), drainingNow,
//     restartsInFlight.
//   - disk: the workers beside the loop and what was handed to them.
//     startWorkers, writeJournal, holdsReader, writePins, diskPending,
//     diskBusy, diskWait, armDiskAlarm, turnedSlow, slowEnded, giveUp;
//     its pins (rev.pins, a pinState): reader, apply, diffed, pinnedHash,
//     written.
//
// Beside the parts, the loop keeps the mode, the notes, the proxy in front
// (proxyState, proxy.go: view) and the webhooks (notifyState, notify.go:
// followTargets).

// clocks are the loop's two clocks, named for what they measure. Each rule
// reads the one its times are on:
//
//   - wallNow, the host's own clock (time.Now), is the clock timers run
//     on, so every wait the loop sets for itself is on it: the settle
//     time, the coalescing of relists (lastFetch), a failed step's retry
//     time (retry.at, gate.Now), a pending disk write and when it turns
//     slow. So are the times that leave the process or are measured: the
//     journal's lines, holds, revisions and pins, notifications and their
//     rollout IDs, a step's began and duration, and when the list of the
//     plan it ran from started (StepRun.Listed, StepResult.Listed).
//   - engineNow, Options.Now, is the clock the engine's own times are on
//     (time.Now, or a fake engine's clock in tests). Read as a list
//     starts, it is the engine-observed time the plan is diffed at
//     (observer.observed.engine, reconcile.Observed.Now, Snapshot.PlanAt):
//     health deadlines, waits and their ends (Step.Until), min_ready,
//     crash backoff, rule 4's reset, all judged by Diff or beside it at
//     that one moment. The wake for a wait's end is timed against it
//     (armWake), and the times the session shows are read off it: notes,
//     Snapshot.At, a pause's, a rollout approval's and a running step's
//     since, the lock's since, the proxy view's At, a recreate's moment.
type clocks struct {
	wallNow   func() time.Time
	engineNow func() time.Time
}

// instant is one moment read on both clocks.
type instant struct{ engine, wall time.Time }

// observer is what the loop knows of the engine: the event stream, the
// relists, the engine's identity and connection, the last list and the
// plan diffed from it.
type observer struct {
	evc          <-chan docker.Event
	errc         <-chan error
	evCancel     context.CancelFunc
	evFailures   int // event stream failures in a row
	resub        loopkit.Alarm
	throttle     loopkit.Alarm // the next relist: coalescing, or backoff after a failed one
	resync       *time.Ticker
	wake         loopkit.Alarm // the earliest wait of the plan ends
	fetching     bool
	refetch      bool
	lastFetch    time.Time
	listFailures int // relists that failed in a row
	info         docker.EngineInfo
	infoOK       bool
	connected    bool
	engineErr    string
	// everConnected and saidDown keep the "disconnected" log line to one
	// per outage.
	everConnected bool
	saidDown      bool
	resolved      *spec.ResolvedDesired
	resolvedFP    string // the fingerprint of the desired state resolved
	reresolve     bool   // resolve the images again at the next relist (an image event, a broken stream)
	containers    []docker.Container
	plan          reconcile.Plan
	// observed is when the list the plan came from started, on both
	// clocks; its engine reading is the plan's Now (onDie moves it, not
	// the wall reading: the list is the same).
	observed     instant
	patchedID    string        // while set, the plan is of a state patched by a die event of this container
	scopedClient docker.Client // see scoped
	scopedPrefix string
	events       []docker.Event
}

// desire is the desired source, the last good desired state and its
// prefix, and the settle (wall clock).
type desire struct {
	changes   <-chan struct{}
	loading   bool
	reload    bool
	prefix    string
	desired   *spec.Desired
	desiredFP string
	sourceErr error
	recreated bool // Options.Recreate has been applied
	// settle: nothing runs before settleUntil (wall clock); the alarm
	// looks again then.
	settleUntil time.Time
	settleAlarm loopkit.Alarm
}

// freshness says whether the plan in hand may be acted on, by one rule
// (fresh): the plan was diffed from a list taken after the last time it
// was spent (spend: a step starts, an intent arrives, the desired state or
// the mode changes, a step fails or puts a spec on hold), and no step
// ended since in a slot the plan is about (stepEnded, listed). A step that
// ends well changes its own slot only: the other slots go on from the plan.
type freshness struct {
	// epoch moves whenever a plan stops being good to act on: a step
	// starts, a step ends that changed what every slot's plan hangs on (it
	// failed, or it put a spec on hold), an intent arrives, the desired
	// state or the mode changes.
	epoch     uint64
	planEpoch uint64 // epoch of the fetch the plan came from
	// A step that ends well changes its own slot only. ends counts the
	// steps that ended, planEnds the count as the plan's list began, and
	// slotEnded the slots whose last step ended after that, with the count
	// as it did: they are stale in the plan, and nothing runs in them
	// before the next list. The other slots go on from the plan.
	ends      uint64
	planEnds  uint64
	slotEnded map[string]uint64
}

// spend marks the plan in hand as no longer good to act on: the next
// steps wait for a list taken after this.
func (f *freshness) spend() { f.epoch++ }

// stepEnded records a step's end in slot; whole: what every slot's plan
// hangs on moved with it (it failed, or it put a spec on hold).
func (f *freshness) stepEnded(slot string, whole bool) {
	f.ends++
	f.slotEnded[slot] = f.ends
	if whole {
		f.spend()
	}
}

// stamp is where freshness stands now: what a list started now, and a
// step result recorded now, carry, for listed and endedSincePlan.
func (f *freshness) stamp() (epoch, ends uint64) { return f.epoch, f.ends }

// listed takes in a list that began at epoch, after ends steps had ended:
// the plan diffed from it is that fresh, and the slots whose step ended
// before it began are fresh again.
func (f *freshness) listed(epoch, ends uint64) {
	f.planEpoch, f.planEnds = epoch, ends
	for slot, n := range f.slotEnded {
		if n <= f.planEnds {
			delete(f.slotEnded, slot) // the list saw its step's end
		}
	}
}

// fresh is the one rule: the plan is of a list taken after it was last
// spent, and after every step that ended.
func (f *freshness) fresh() bool { return f.planEpoch == f.epoch && !f.anyStale() }

// unspent: the plan was not spent since its list (a step of a slot may
// have ended since: see stale).
func (f *freshness) unspent() bool { return f.planEpoch == f.epoch }

// anyStale: a step ended since the plan's list began.
func (f *freshness) anyStale() bool { return len(f.slotEnded) > 0 }

// staleSlots are the slots whose step ended since the plan's list began:
// nothing runs in them before the next list.
func (f *freshness) staleSlots() map[string]bool {
	out := make(map[string]bool, len(f.slotEnded))
	for slot := range f.slotEnded {
		out[slot] = true
	}
	return out
}

// endedSincePlan reports whether a step that ended as the n-th did so after
// the plan's list began.
func (f *freshness) endedSincePlan(n uint64) bool { return n > f.planEnds }

// guards are what may keep any step from running: the host lock, the
// holds (the files they are kept in are the disk's), the halt, the gate,
// a pause, a refusal, a question.
type guards struct {
	pause            *PauseInfo
	skipHealth       bool
	holds            map[string]map[string]bool
	holdWhys         map[string]map[string]holdWhy // what put each hold, beside holds
	blastCheck       bool
	confirm          *Confirmation
	refusal          *Refusal      // unattended: the blast radius refused the desired state
	gated            string        // why the gate is closed (Gate, Options.Gated); "" when open
	gatePulls        bool          // the closed gate lets pull steps through (Gate.Pulls)
	halted           string        // the journal failed: nothing more runs
	lockPoll         loopkit.Alarm // armed only while another session holds the lock
	lock             *state.Lock   // held: this session acts under it
	lockTaking       bool          // a take is on the lock worker, wanted or not (lock.go)
	lockLetGo        bool          // a release of lock is under way: the session no longer acts under it
	lockGen          uint64        // moves at each release: a take from before is let go of
	holderReading    bool          // a read of who holds the lock is under way
	lockPath         string
	holder           *LockHolder
	lockErr          string
	lockFree         bool // the lock this session wanted came free
	releaseAfterStep bool
}

// marks are the operator's marks on steps and on the rollout.
type marks struct {
	acked     map[string]bool // pause failures already acted on, by workload/container
	failing   map[string]bool // health failures recorded as facts, by workload/container
	recreate  map[string]time.Time
	approved  map[string]bool
	rollout   *rolloutApproval // step mode: the operator approved the whole rollout
	skipped   map[string]bool
	confirmed map[string]bool
	// waitsLogged are the plan's waits as last logged, by step key.
	waitsLogged map[string]string
}

// runner is what runs and what ran: steps in flight, their results and
// retries, the restarts issued, the rollbacks under way.
type runner struct {
	recent    []StepResult
	restarts  map[string]int        // restarts rollcall issued, by container ID
	retries   map[string]*retry     // failed steps, by key
	results   map[string]StepResult // last result, by key
	rollbacks map[string]string     // operator rollbacks under way: workload -> held hash (Observed.RollingBack)
	// rollbackStops are the operator rollback's stops in flight, by key.
	rollbackStops map[string]bool
	running       map[string]*StepRun // the steps in flight, by Step.Key()
	waiting       string              // why nothing runs, as decide last said
	rolledBack    []RollbackInfo
	// downSince is when each slot ("web/0") went down in a stop-first
	// roll this session ran, until it is ready again; lastDown how long
	// each workload's slot was down the last time (Observed.Downtime).
	downSince map[string]time.Time
	lastDown  map[string]time.Duration
}

// disk is the loop's work beside it on the disk: one worker a kind, the
// journal lines handed over and not yet written, and what the loop knows
// of the holds, revisions and pins files.
type disk struct {
	// The disk, beside the loop: each worker runs one kind of operation
	// in order, and reports on its ready channel (worker).
	journalW *loopkit.Worker[journal.Entry, error]
	holdsW   *loopkit.Worker[holdsJob, holdsWritten]
	rev      revState // revisions and pins, and their worker (revisions.go)
	// the holds file as the loop knows it (holds.go): where it is ("" until
	// the engine is known, or without StateDir), whether it was read yet
	hs          holdsState
	holdsPath   string
	holdsLoaded bool
	locks       *loopkit.Worker[lockJob, lockDone]
	journaled   bool // Options.Journal is set
	// jwait are the journal lines handed to journalW and not yet written,
	// in order, with what the loop does once each is.
	jwait []journalWait
	// diskGone: the session ended with writes the disk never took;
	// nothing more is handed to it.
	diskGone bool
	// diskAlarm wakes the loop while a write is pending, to say so;
	// slowSaid are the writes said to be slow, by kind, since when.
	diskAlarm loopkit.Alarm
	slowSaid  map[string]time.Time
}
