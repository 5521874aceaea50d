package fleet

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// host is one host of the fleet, as the run knows it. Only the loop
// touches it, but for lock (read by its session's loop) and inbox (filled
// by the goroutine reading its session's snapshots).
type host struct {
	name string
	spec *spec.Host

	// Preflight: its client and engine, or why it has none.
	client  docker.Client
	info    docker.EngineInfo
	dialErr string
	dup     string      // the host named first in the file whose engine this one is
	hostErr *spec.Error // dup, as an error at its line in the file
	lock    atomic.Pointer[session.Lock]
	lockErr string // why its lock could not be taken
	holder  *session.LockHolder

	sess    *session.Session
	sessErr string // its session could not start
	src     *hostSource
	inbox   inbox
	snap    session.Snapshot // the latest of its session
	// standing is the last standing its session decided of want (the
	// desired state the fleet handed it), and standingOf the want it was
	// decided of: the host's plan state (planState). Reset by setWant.
	standing   session.Standing
	standingOf *spec.Desired

	// What its session should run now, and since when (by Options.Now).
	want      *spec.Desired
	wantSince time.Time
	// convergedUnder is the last desired state its session was seen
	// converged and healthy under; before is the one it was converged
	// under before this rollout (where rollback_all returns it).
	convergedUnder *spec.Desired
	before         *spec.Desired
	rolledBack     bool // rollback_all handed it before (or pinned its revisions)
	noBefore       bool // rollback_all found nothing to return to, and said so
	// changing are the workloads this rollout changes on the host: those
	// with steps in its plan as the rollout began. With no before (a
	// process that never saw the host converged: apply), rollback_all pins
	// each to its revision before the desired spec (DESIGN §12).
	changing []string

	everConnected bool
	downSince     time.Time // by Options.Now: since when it is not connected; zero while it is

	// The gate as last sent to its session; approvedFor is the desired
	// state its session's rollout was approved for (step mode).
	gateOpen    bool
	gatePulls   bool // closed, it lets the pull steps through
	gateWhy     string
	approvedFor *spec.Desired
}

// observe takes in a snapshot of the host's session.
func (h *host) observe(s session.Snapshot, now time.Time) {
	h.snap = s
	if ofWant(s, h.want) && decides(s.Standing) {
		h.standing, h.standingOf = s.Standing, h.want
	}
	switch {
	case s.Connected:
		h.everConnected, h.downSince = true, time.Time{}
	case h.everConnected && h.downSince.IsZero():
		h.downSince = now
	}
	if h.planState() == PlanConverged && s.Progress.Done() {
		h.convergedUnder = h.want
	}
}

// reachable reports whether the host answers, for Decide: a host that
// was never dialled does not; a session that has not listed yet does (it
// answered at preflight), unless its lists fail; one that was connected
// does for grace after it last was, so a blip is not a lost host.
func (h *host) reachable(now time.Time, grace time.Duration) bool {
	switch {
	case h.sess == nil:
		return false
	case h.snap.Seq == 0 || h.snap.Connected:
		return true
	case !h.everConnected:
		return h.snap.EngineErr == ""
	}
	return now.Sub(h.downSince) < grace
}

// graceEnds is when a host that went away counts as lost; zero for one
// that did not.
func (h *host) graceEnds(grace time.Duration) time.Time {
	if h.downSince.IsZero() {
		return time.Time{}
	}
	return h.downSince.Add(grace)
}

// input is the host as Decide reads it.
func (h *host) input(now time.Time, grace time.Duration) Host {
	in := Host{Name: h.name, EngineID: h.info.ID}
	if h.sess == nil {
		return in
	}
	in.Reachable = h.reachable(now, grace)
	in.LockHeld = h.lock.Load().Held() && h.snap.Lock.Held
	in.Plan = h.planState()
	in.Healthy, in.Slots = h.snap.Progress.Ready, h.snap.Progress.Total
	if in.Plan != PlanUnknown {
		in.Pull = pullState(h.snap)
	}
	return in
}

// pullState is where a session's pull steps stand: left in its plan or
// running, and whether the last try of one failed, and why.
func pullState(s session.Snapshot) PullState {
	var p PullState
	for _, r := range s.RunningSteps {
		if r.Step.Action == reconcile.ActPull {
			p.Pending, p.Running = true, true
		}
	}
	for _, st := range s.Plan.Executable() {
		if st.Action != reconcile.ActPull {
			continue
		}
		p.Pending = true
		if k, failed := s.PullFailed(st.Key()); failed {
			p.Failed, p.Kind = true, k
		}
	}
	return p
}

// planState is where the host's session stands with the desired state the
// fleet handed it (since then), as its session's standing says: unknown
// until its snapshot is of that desired state (its images resolved from
// that very state, the state settled, so a rollout does not begin on a
// file mid-edit) and its session decided a standing of it; then read from
// that standing (planOf).
//
// The standing is the session's last decision until a fresh plan decides
// again (Pending): a relist does not move it, so a done canary does not
// turn undone at each resync and hold the waves after it back and forth.
// A standing blocked by the engine or the lock is not taken either: the
// fleet reads those itself (Reachable, LockHeld), and keeps the last.
func (h *host) planState() PlanState {
	if h.standingOf == nil || !samePlan(h.standingOf, h.want) || !ofWant(h.snap, h.want) || h.snap.Settling > 0 {
		return PlanUnknown
	}
	return planOf(h.standing, h.wantSince)
}

// ofWant reports whether a session's snapshot is of the desired state
// want: loaded, and its images resolved from that very state, so that the
// plan and the standing decided of it are want's.
func ofWant(s session.Snapshot, want *spec.Desired) bool {
	return s.Seq > 0 && want != nil && samePlan(s.Desired, want) && resolvedFrom(s.Resolved, want)
}

// decides reports whether a standing is a decision the fleet takes as the
// host's: a fresh one, not starting, not blocked by the engine or the lock.
func decides(st session.Standing) bool {
	if st.Pending || st.Kind == session.StandingStarting {
		return false
	}
	if st.Kind == session.StandingBlocked {
		for _, c := range st.Causes {
			if c.Kind == session.CauseEngine || c.Kind == session.CauseLock {
				return false
			}
		}
	}
	return true
}

// planOf is the fleet's plan state of a host whose session stands at st,
// with the desired state the fleet handed it since then. Failed: a new
// container misses its health deadline now (Standing.Failing, whatever
// its failure_action: continue goes on rolling, and the fleet's on_failure
// decides), it halted, refused the desired state, paused on a failure
// (failure_action pause), or rolled a slot back by failure_action since
// then; an
// operator's pause, a hold, a canary holding for traffic and a workload it
// cannot act on yet (an image to pull: its pulls say why) are not a failed
// roll, and keep it rolling. Converged: its standing is.
func planOf(st session.Standing, since time.Time) PlanState {
	if len(st.Failing) > 0 { // a new container missed its deadline: whatever its failure_action does next
		return PlanFailed
	}
	for _, c := range st.Causes {
		switch c.Kind {
		case session.CauseHalted, session.CauseRefused, session.CauseFailurePause:
			return PlanFailed
		case session.CauseRolledBack:
			if !c.Rollback.At.Before(since) {
				return PlanFailed
			}
		}
	}
	if st.Kind == session.StandingConverged {
		return PlanConverged
	}
	return PlanRolling
}

// samePlan reports whether a session that has loaded got runs the plan of
// want: got is want, or the state want was handed over in place of, of
// the very same workloads (handOver), whose other keys the session takes
// without planning again.
func samePlan(got, want *spec.Desired) bool {
	if got == want {
		return true
	}
	return got != nil && want != nil && got.Prefix == want.Prefix &&
		reflect.ValueOf(got.Workloads).UnsafePointer() == reflect.ValueOf(want.Workloads).UnsafePointer()
}

// resolvedFrom reports whether r was resolved from d itself (its
// workloads are d's), so that the plan diffed from it is d's.
func resolvedFrom(r *spec.ResolvedDesired, d *spec.Desired) bool {
	if r == nil || len(r.Workloads) != len(d.Workloads) {
		return false
	}
	for _, w := range r.Workloads {
		if d.Workloads[w.Name] != w.Workload {
			return false
		}
	}
	return true
}

func (h *host) releaseLock() {
	if lk := h.lock.Swap(nil); lk != nil {
		lk.Release()
	}
}

func (h *host) closeClient() {
	if c, ok := h.client.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}

// inbox holds the latest snapshot of a host's session, for the loop:
// latest wins, as the session's own channel.
type inbox struct {
	mu   sync.Mutex
	snap session.Snapshot
	new  bool
	err  error
}

func (b *inbox) put(s session.Snapshot) {
	b.mu.Lock()
	b.snap, b.new = s, true
	b.mu.Unlock()
}

func (b *inbox) fail(err error) {
	b.mu.Lock()
	b.err = err
	b.mu.Unlock()
}

func (b *inbox) take() (session.Snapshot, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ok := b.new
	b.new = false
	return b.snap, ok, b.err
}

// hostSource is one host's view of the fleet's desired source: the
// desired state the fleet hands that host (its ForHost, or for
// rollback_all the one it ran before), and a signal each time it changes.
type hostSource struct {
	name string
	mu   sync.Mutex
	d    *spec.Desired
	ch   chan struct{}
}

func newHostSource(name string, d *spec.Desired) *hostSource {
	return &hostSource{name: name, d: d, ch: make(chan struct{}, 1)}
}

func (s *hostSource) Name() string { return s.name }

func (s *hostSource) Load(context.Context) (*spec.Desired, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.d, nil
}

func (s *hostSource) Changes(context.Context) <-chan struct{} { return s.ch }

func (s *hostSource) set(d *spec.Desired) {
	s.mu.Lock()
	s.d = d
	s.mu.Unlock()
	loopkit.Signal(s.ch)
}
