package session

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// maxNotes is how many recent notes a snapshot carries.
const maxNotes = 20

// Snapshot is the session's whole state at one moment: everything the
// console draws and the headless commands report. It is a value: nothing
// in it changes after it is sent, and a reader must not change it either.
type Snapshot struct {
	Seq uint64    // grows with every snapshot
	At  time.Time // by Options.Now

	// Desired source.
	Source    string                // Source.Name()
	Desired   *spec.Desired         // the last good desired state; nil until one loads
	SourceErr error                 // the last load failed (a spec.ErrorList has lines); Desired is the one before
	Resolved  *spec.ResolvedDesired // Desired with images resolved, as of the last list
	Prefix    string

	// Engine.
	Engine    docker.EngineInfo
	Connected bool
	EngineErr string // why not connected

	// Actual state and the plan.
	Containers []docker.Container
	Plan       reconcile.Plan
	PlanAt     time.Time             // the Now the plan was diffed at
	Steps      map[string]StepStatus // by Step.Key(), for the plan's executable steps
	Next       string                // key of the first step not yet run or skipped: what `enter` approves
	Running    *StepRun              // a step running now (the first of RunningSteps), if any; it may have left the plan already
	// RunningSteps are all the steps in flight, in the order they started:
	// steps of different slots run at once.
	RunningSteps []StepRun
	Recent       []StepResult // the last steps run, oldest first
	Slots        []SlotView
	Progress     Progress

	// Mode and guards.
	Mode       Mode
	Pause      *PauseInfo // nil unless paused
	SkipHealth bool       // emergency: shown in red while on
	Confirm    *Confirmation
	Holds      map[string][]string // workload -> spec hashes on hold (rolled back)
	Pins       []PinView           // workloads pinned to a revision, by workload (revisions_pin.go)
	// Canaries are the canary steps under way, or just ended, by workload (canary.go).
	Canaries []CanaryView
	Lock     LockInfo

	Events []docker.Event // the last engine events, oldest first
	// Facts are the last facts of the session (facts.go), oldest first:
	// what happened, typed and numbered. FactsSince reads them on.
	Facts []Fact
	// Notes are the session's replies to the operator's intents that it
	// did not act on (watch mode, no such workload, nothing to confirm),
	// oldest first: words, not a record. Whatever happened is in Facts,
	// with its words at the edge (Fact.Text).
	Notes []Note

	// Why nothing runs now, as the session decided ("" when a step runs or
	// nothing is left to run).
	Waiting string
	// Gated says why the caller's gate (Gate, Options.Gated) holds every
	// step; "" when it is open.
	Gated string
	// Settling is how long the changed desired state must still stay put
	// before it is acted on.
	Settling time.Duration
	// Fresh: the plan was diffed from a list taken after the last step,
	// intent and desired change, and no step runs. Steady is Fresh with
	// nothing left to do or wait for: the desired state is reached.
	Fresh  bool
	Steady bool
	// Refusal is set while an unattended session refuses a desired state
	// for its blast radius; it waits for the next desired change.
	Refusal *Refusal
	// Halted says why nothing runs any more: the journal cannot be written.
	Halted string
	// Rollout is set while the operator's approval of the whole rollout
	// stands (step mode).
	Rollout *RolloutInfo
	// RolledBack lists the rollbacks by failure_action, oldest first: what
	// was stopped, and which spec is on hold.
	RolledBack []RollbackInfo
	// Proxy is what the proxy in front routes to, when the desired state
	// names one (proxy.caddy_admin); nil otherwise.
	Proxy *ProxyView
	// Standing is where the session stands as a whole, and why
	// (standing.go): what apply, the fleet, the console's header and the
	// metrics read.
	Standing Standing
}

// RolloutInfo is an approved rollout under way.
type RolloutInfo struct {
	By    string
	Since time.Time
	Left  int // steps left in the plan, those to come ("then") included
}

// Refusal is a desired state an unattended session will not act on.
type Refusal struct {
	Stops, Running int // the running containers it would stop or roll, of all
	Reason         string
}

// RollbackInfo is one automatic rollback: a new container that missed its
// health deadline was stopped, the old one kept serving, and the spec is on
// hold until the desired spec changes.
type RollbackInfo struct {
	Workload  string
	Slot      int
	Container string // the new container that was stopped
	Hash      string // the spec on hold
	Reason    string
	At        time.Time
}

// StepState is where a step of the plan stands.
type StepState string

const (
	StepQueued  StepState = "queued"
	StepRunning StepState = "running"
	StepDone    StepState = "done"
	StepFailed  StepState = "failed"
	StepSkipped StepState = "skipped"
)

// StepStatus is the status of one executable step of the plan.
type StepStatus struct {
	State        StepState
	Approved     bool      // step mode: approved, waiting for its turn
	NeedsConfirm bool      // stop-first: runs only after Confirm(yes)
	Err          string    // failed: the engine's error
	At           time.Time // running: since; done or failed: when it ran (wall clock)
	RetryAt      time.Time // failed, auto mode: tried again then (wall clock)
}

// StepRun is the step running now.
type StepRun struct {
	Step   reconcile.Step
	Since  time.Time // by Options.Now
	Listed time.Time // wall clock: when the list it was planned from was taken
	// Drain is where a stop or roll stands in its drain (pre_stop, then
	// the wait before the stop); nil until it drains. Its Text says it:
	// "draining web-0-73f3 (pre_stop ran, 3s left)".
	Drain *reconcile.DrainProgress
	// Pull is how far a pull step's pull is (layers and bytes); nil until
	// the engine says.
	Pull *reconcile.PullProgress
}

// StepResult is one step the session ran.
type StepResult struct {
	Step     reconcile.Step
	Mode     Mode
	Began    time.Time // wall clock
	Duration time.Duration
	Err      string // "" when it succeeded
	// Created is the ID the engine gave the container a start made ("" for
	// any other step, and for a start that failed).
	Created string
	// Judgement is a canary step's last comparison of its cohorts (nil for
	// any other step, and for a canary step that measured nothing).
	Judgement *reconcile.Judgement
	// ProxyFault is what went wrong at the proxy in a canary's start or
	// step ("" for none): a split that could not be set first, lifted, or
	// kept, or a share that could not be set to 0.
	ProxyFault reconcile.ProxyFault
	// PullKind is why a pull step failed, as data (its Err has the
	// registry's words); "" for any other step, and for a pull that did not fail.
	PullKind docker.PullKind
	// Listed is when the engine list the step was planned from was taken
	// (wall clock): always after every step that started before it, and
	// after every step of its slot that ended before it began.
	Listed time.Time

	ends uint64 // the loop's count of ended steps, this one included: orders results against plans
}

// ConfirmKind says what a confirmation is about.
type ConfirmKind string

const (
	ConfirmDowntime ConfirmKind = "downtime"     // a stop-first step
	ConfirmBlast    ConfirmKind = "blast-radius" // a desired change that stops most containers
)

// Confirmation is a question for the operator, answered with Confirm.
// Destructive questions default to No in the console.
type Confirmation struct {
	Kind     ConfirmKind
	Prompt   string
	Key      string         // downtime: the step's key
	Step     reconcile.Step // downtime: the step
	Declined bool           // blast radius: answered no; the guard still holds
}

// PauseInfo says why the session is paused.
type PauseInfo struct {
	Reason     string
	ByOperator bool
	Since      time.Time
	// For a failure with failure_action pause: the container, its last
	// health probe and its last log lines (fetched after the pause).
	Workload  string
	Container string
	Health    string
	Logs      []string
	DetailErr string
}

// LockInfo is the state of the host lock.
type LockInfo struct {
	Path   string      // "" until known
	Held   bool        // this session holds it
	Holder *LockHolder // another session holds it
	Err    string      // why the last attempt failed
	Free   bool        // the lock this session wanted came free: SetMode takes it
}

// Note is one message in words: the session's reply to an intent it did
// not act on (Snapshot.Notes), or a fleet's own (engine/fleet).
type Note struct {
	At   time.Time
	Text string
}

// Progress counts desired slots served by an up-to-date healthy container.
type Progress struct{ Ready, Total int }

func (p Progress) String() string { return fmt.Sprintf("%d/%d", p.Ready, p.Total) }

// Done reports whether every desired slot is up-to-date and healthy.
func (p Progress) Done() bool { return p.Ready == p.Total }

// SlotView is one row of the console's slots pane: a slot of a workload,
// what it should run and the containers in it, as Diff classified them
// (reconcile.SlotState). Surplus slots, extra workloads and orphans (Slot
// reconcile.NoSlot) get rows with no Desired.
type SlotView struct {
	Workload   string
	Slot       int
	Desired    *DesiredSlot
	Containers []ContainerView // the up-to-date ones first, as Diff ranks them, then the others, oldest first
	Ready      bool            // an up-to-date healthy container serves the slot (Diff's SlotState.Ready)
	// Wait is what the slot waits for and until when (Diff's), if anything.
	Wait  reconcile.WaitKind
	Until time.Time
}

// DesiredSlot is what a slot should run.
type DesiredSlot struct {
	Image   string
	ImageID string
	Version string
	Hash    string
	Limits  docker.Limits
	Err     string // the image could not be resolved
}

// ContainerView is one container in a slot, with Diff's judgement of it.
type ContainerView struct {
	docker.Container
	Relation  reconcile.Relation
	Condition reconcile.Condition
	Serves    bool // it serves its slot
	Drift     []reconcile.Drift
}

func (l *loop) snapshot() Snapshot {
	s := Snapshot{
		Seq: l.seq, At: l.engineNow(),
		Source: l.opts.Source.Name(), Desired: l.desired, SourceErr: l.sourceErr, Resolved: l.resolved, Prefix: l.prefix,
		Engine: l.info, Connected: l.connected, EngineErr: l.engineErr,
		Containers: l.containers, Plan: l.plan, PlanAt: l.observed.engine,
		Mode: l.mode, SkipHealth: l.skipHealth,
		Recent: slices.Clone(l.recent), Notes: slices.Clone(l.notes),
		Lock:    LockInfo{Path: l.lockPath, Held: l.lock != nil, Err: l.lockErr, Free: l.lockFree && l.lock == nil},
		Waiting: l.waiting, Gated: l.gated, Settling: l.settleLeft(l.wallNow()), Halted: l.halted,
		RolledBack: slices.Clone(l.rolledBack), Proxy: l.proxy.view(l.containers),
		Facts: l.facts.last(),
	}
	s.Fresh = l.fresh() && !l.loading && !l.fetching && len(l.running) == 0 && l.resolved != nil && l.connected && !l.diskBusy()
	s.Steady = s.Fresh && l.plan.Empty() && len(l.plan.Errors()) == 0 && s.Settling == 0
	if l.refusal != nil {
		r := *l.refusal
		s.Refusal = &r
	}
	if l.rollout != nil {
		s.Rollout = &RolloutInfo{By: l.opts.User, Since: l.rollout.since, Left: len(l.plan.Executable()) + len(l.plan.Then())}
	}
	if n := len(l.events); n > maxEvents {
		s.Events = slices.Clone(l.events[n-maxEvents:])
	} else {
		s.Events = slices.Clone(l.events)
	}
	if l.holder != nil {
		h := *l.holder
		s.Lock.Holder = &h
	}
	if l.pause != nil {
		p := *l.pause
		p.Logs = slices.Clone(p.Logs)
		s.Pause = &p
	}
	if l.confirm != nil {
		c := *l.confirm
		s.Confirm = &c
	}
	for _, key := range sortedKeys(l.running) {
		r := *l.running[key]
		if r.Drain != nil {
			d := *r.Drain
			r.Drain = &d
		}
		s.RunningSteps = append(s.RunningSteps, r)
	}
	slices.SortStableFunc(s.RunningSteps, func(a, b StepRun) int { return a.Since.Compare(b.Since) })
	if len(s.RunningSteps) > 0 {
		s.Running = &s.RunningSteps[0]
	}
	if len(l.holds) > 0 {
		s.Holds = map[string][]string{}
		for w, hs := range l.holds {
			s.Holds[w] = slices.Sorted(maps.Keys(hs))
		}
	}
	s.Steps, s.Next = l.stepStatuses()
	s.Pins = slices.Clone(l.rev.pins.views)
	s.Canaries = l.canaryViews()
	s.Slots, s.Progress = SlotViews(l.rev.pins.diffed(l.resolved), &l.plan, l.containers)
	s.Standing = l.standing(&s)
	return s
}

func (l *loop) stepStatuses() (map[string]StepStatus, string) {
	out := map[string]StepStatus{}
	next := ""
	for _, st := range l.plan.Executable() {
		key := st.Key()
		ss := StepStatus{State: StepQueued, Approved: l.approved[key],
			NeedsConfirm: st.Downtime && !l.confirmed[key]}
		res, ran := l.results[key]
		switch {
		case l.running[key] != nil:
			ss.State, ss.At = StepRunning, l.running[key].Since
		case ran && l.endedSincePlan(res.ends): // it ended after this plan's list began
			ss.State, ss.At, ss.Err = StepDone, res.Began, res.Err
			if res.Err != "" {
				ss.State = StepFailed
			}
		case l.retries[key] != nil:
			ss.State, ss.At, ss.Err, ss.RetryAt = StepFailed, res.Began, res.Err, l.retries[key].at
		case l.skipped[key]:
			ss.State = StepSkipped
		}
		if next == "" && (ss.State == StepQueued || (ss.State == StepFailed && l.retries[key] != nil)) {
			next = key
		}
		out[key] = ss
	}
	return out, next
}

// SlotViews lays the containers out by workload and slot beside what each
// slot should run, as Diff classified them (the plan's Slots), and counts
// the slots that are up-to-date and healthy. Nothing is classified here.
func SlotViews(r *spec.ResolvedDesired, plan *reconcile.Plan, cs []docker.Container) ([]SlotView, Progress) {
	byID := make(map[string]*docker.Container, len(cs))
	for i := range cs {
		byID[cs[i].ID] = &cs[i]
	}
	views := make([]SlotView, 0, len(plan.Slots))
	var progress Progress
	progress.Ready, progress.Total = plan.Progress()
	for _, st := range plan.Slots {
		v := SlotView{Workload: st.Workload, Slot: st.Slot, Ready: st.Ready, Wait: st.Wait, Until: st.Until,
			Containers: make([]ContainerView, 0, len(st.Containers))}
		if st.Desired && r != nil {
			if w := r.Workload(st.Workload); w != nil {
				v.Desired = desiredSlot(w)
			}
		}
		for _, c := range st.Containers {
			if ct := byID[c.ID]; ct != nil {
				v.Containers = append(v.Containers, ContainerView{Container: *ct, Relation: c.Relation, Condition: c.Condition, Serves: c.Serves, Drift: c.Drift})
			}
		}
		views = append(views, v)
	}
	return views, progress
}

func desiredSlot(w *spec.Resolved) *DesiredSlot {
	d := &DesiredSlot{Image: w.Image, ImageID: w.ImageID, Version: w.Version, Hash: w.Hash,
		Limits: reconcile.DesiredLimits(w.Workload)}
	if w.Err != nil {
		d.Err = w.Err.Error()
	}
	return d
}

// short is a spec hash as the plan shows it.
func short(hash string) string {
	if len(hash) > 8 {
		return hash[:8]
	}
	return hash
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

// resolvedWorkload is the resolved desired workload called name, or nil.
func (o *observer) resolvedWorkload(name string) *spec.Resolved {
	if o.resolved == nil {
		return nil
	}
	return o.resolved.Workload(name)
}
