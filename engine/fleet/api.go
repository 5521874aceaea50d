package fleet

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// The fleet's runtime: one session per host of the desired file's hosts:,
// and a loop above them that feeds Decide and applies its verdicts. What
// the console and the headless commands read of it is a Snapshot; what
// they ask of it is an Intent.

// Dialer reaches a host's engine. The fleet closes what it returns when
// it ends, if it has a Close method.
type Dialer func(ctx context.Context, h *spec.Host) (docker.Client, error)

// Options configure a Fleet. Source and Dial are required; the source's
// desired state must have hosts:.
type Options struct {
	Source source.Source // the desired file, with hosts: and fleet:
	Dial   Dialer
	Mode   session.Mode // "" means ModeStep
	// SkipUnreachable leaves a host that does not answer at preflight out
	// of the rollout (journaled), unless it is a canary host.
	SkipUnreachable bool
	// Journal gets every host's lines, each with its host and the
	// rollout's ID, and the fleet's own decisions.
	Journal     *journal.Journal
	JournalMode string
	User        string
	// LockDir holds one host lock per engine ID and prefix; "" is the
	// session's default place.
	LockDir  string
	StateDir string
	Now      func() time.Time
	// Unattended: agent and apply (no questions; see session.Unattended).
	Unattended *session.Unattended
	Log        *slog.Logger
	Settle     time.Duration
	Resync     time.Duration
	Coalesce   time.Duration
	// Observer, if set, gives each host's session its Observer
	// (session.Options.Observer): the agent's metrics, by host.
	Observer func(host string) session.Observer

	// DialTimeout bounds each host's dial and its first Info at
	// preflight; 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// DialParallel is how many hosts are dialled at once; 0 means
	// DefaultDialParallel.
	DialParallel int
	// LostGrace is how long a host that was connected may stay
	// disconnected before it counts as lost; 0 means DefaultLostGrace.
	LostGrace time.Duration
}

// Snapshot is the fleet at one moment: a value, never changed after it
// is sent.
type Snapshot struct {
	Seq       uint64
	At        time.Time
	Source    string
	Desired   *spec.Desired // the last good desired state; nil until one loads
	SourceErr error
	Mode      session.Mode
	// RolloutID is on every journal line of this rollout, on every host;
	// "" before one began.
	RolloutID string
	RolloutAt time.Time  // when it began (by Options.Now); zero before
	Decision  Decision   // the last decision: phase, waves and their waits, each host's verdict
	Hosts     []HostView // in file order
	// Approved are the waves approved in step mode; All: the whole rollout (A).
	Approved    map[int]bool
	ApprovedAll bool
	// Steady: every host's session stands converged on the desired state
	// the fleet handed it and the rollout is done (or watch mode sees
	// nothing to do). A host left out (SkipUnreachable) is not counted;
	// its HostView says so.
	Steady bool
	// Outcome is where the run stands as a whole, and each host: what
	// apply ends on and takes its exit code from.
	Outcome Outcome
	Notes   []session.Note // the fleet's own, oldest first

	// Blocked says why the rollout cannot go on by itself ("" when it
	// can, or is done): a host that did not answer at preflight, two hosts
	// on one engine, a lock held elsewhere, a failed host that paused it,
	// a rollback_all that ended, the journal. apply exits 1 on it.
	Blocked string
	// HostErrors are the hosts found to be one engine at preflight, each
	// an error at its line in the file.
	HostErrors spec.ErrorList
	// LockErr says whose lock kept the fleet from acting (it watches
	// instead; SetMode to step or auto tries again); "" when none did.
	LockErr string
	// Halted: a line of the fleet's own could not be journaled, and
	// nothing acts on any host.
	Halted string
}

// HostView is one host: how it is reached and its session's snapshot.
type HostView struct {
	Name     string
	Endpoint string // as written: "ssh://deploy@edge-1", or "context edge-3"
	Dialed   bool   // a client was made (the host may still not answer)
	DialErr  string // why the client could not be made
	// Session is the host's own snapshot: engine, connection, lock, slots,
	// plan, progress. Zero until its session sent one.
	Session session.Snapshot
	Verdict Verdict // the last decision's for this host

	// EngineID is the engine's identity as it answered at preflight; ""
	// when it did not.
	EngineID string
	// Err is set for a host that reaches the engine of a host named
	// before it: an error at its line in the file. It has no session.
	Err *spec.Error
	// Lock is the fleet's hold on the host's lock.
	Lock HostLock
	// Gate is why the fleet holds the host (its session's gate is
	// closed); "" while the host may act.
	Gate string
	// RolledBack: rollback_all handed the host the desired state it ran
	// before this rollout.
	RolledBack bool
}

// OutcomeKind is where a fleet run stands as a whole.
type OutcomeKind int

const (
	OutcomeRolling   OutcomeKind = iota // not over: hosts roll, a wave waits, or the hosts are being reached
	OutcomeConverged                    // Steady, and no host was left out
	OutcomeLeftOut                      // Steady but for the hosts left out (SkipUnreachable): not converged
	OutcomeBlocked                      // it cannot go on by itself: Blocked says why (HostErrors, Halted)
	OutcomeHostStuck                    // a host's session halted or refused the desired state: nothing more runs there by itself (Outcome.Hosts)
)

var outcomeNames = [...]string{OutcomeRolling: "rolling", OutcomeConverged: "converged", OutcomeLeftOut: "left-out",
	OutcomeBlocked: "blocked", OutcomeHostStuck: "host-stuck"}

// String is the kind as apply --json names it.
func (k OutcomeKind) String() string {
	if int(k) < len(outcomeNames) {
		return outcomeNames[k]
	}
	return fmt.Sprintf("outcome(%d)", int(k))
}

// MarshalText names the kind in JSON.
func (k OutcomeKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Outcome is where a fleet run stands, decided once, in the fleet, from
// its decision and each host's session's standing.
type Outcome struct {
	Kind OutcomeKind
	// Why is OutcomeBlocked's reason (Blocked, or the halt); "" otherwise.
	Why   string
	Hosts []HostOutcome // in file order
}

// Over reports whether nothing more happens by itself.
func (o Outcome) Over() bool { return o.Kind != OutcomeRolling }

// OK reports whether every host converged on what the fleet handed it.
func (o Outcome) OK() bool { return o.Kind == OutcomeConverged }

// HostOutcome is one host's part in the outcome.
type HostOutcome struct {
	Host string
	// Plan is where the host stands with the desired state the fleet
	// handed it, as its session's standing says (PlanUnknown until its
	// session decided one of it).
	Plan PlanState
	// Standing is the host's session's own standing (its words: Said).
	Standing session.Standing
	LeftOut  bool // SkipUnreachable left it out of the rollout
	// Stuck: its session halted, or refused the desired state, and waits
	// for a human (OutcomeHostStuck).
	Stuck bool
}

// HostLock is the fleet's hold on one host's lock.
type HostLock struct {
	Path   string              // "" when not held
	Held   bool                // the fleet holds it
	Holder *session.LockHolder // another session holds it (the preflight failed there)
	Err    string              // why it could not be taken
}

// Intent is something the operator asks of the fleet, sent with Do.
type Intent interface{ fleetIntent() }

type (
	// ApproveWave approves wave Index in step mode.
	ApproveWave struct{ Index int }
	// ApproveAll approves the whole fleet rollout (A), every wave.
	ApproveAll struct{}
	// SetMode changes the mode of the fleet and every host's session.
	SetMode struct{ Mode session.Mode }
	// ToHost passes a session intent to one host's session (approve a step
	// there, inspect, retry, ...).
	ToHost struct {
		Host   string
		Intent session.Intent
	}
)

func (ApproveWave) fleetIntent() {}
func (ApproveAll) fleetIntent()  {}
func (SetMode) fleetIntent()     {}
func (ToHost) fleetIntent()      {}
