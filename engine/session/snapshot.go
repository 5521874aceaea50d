package session

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
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
	Lock       LockInfo

	Events []docker.Event // the last engine events, oldest first
	Notes  []Note         // what the session wants the operator to know, oldest first

	// Why nothing runs now, as the session decided ("" when a step runs or
	// nothing is left to run).
	Waiting string
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
}

// StepResult is one step the session ran.
type StepResult struct {
	Step     reconcile.Step
	Mode     Mode
	Began    time.Time // wall clock
	Duration time.Duration
	Err      string // "" when it succeeded
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

// Note is one message from the session: a dropped step, a refusal, a
// failure, a confirmation.
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
// what it should run and the containers in it. Surplus slots, extra
// workloads and orphans (Slot reconcile.NoSlot) get rows with no Desired.
type SlotView struct {
	Workload   string
	Slot       int
	Desired    *DesiredSlot
	Containers []ContainerView // the one serving the slot first, then the others
	Ready      bool            // an up-to-date healthy container serves the slot
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

// ContainerStatus is what a container is to its slot (DESIGN §1).
type ContainerStatus string

const (
	StatusUpToDate    ContainerStatus = "up-to-date"
	StatusNeedsUpdate ContainerStatus = "needs-update"
	StatusStale       ContainerStatus = "stale"
	StatusLegacy      ContainerStatus = "legacy"
	StatusDuplicate   ContainerStatus = "duplicate"
	StatusSurplus     ContainerStatus = "surplus"
	StatusExtra       ContainerStatus = "extra"
	StatusOrphan      ContainerStatus = "orphan"
	StatusUnknown     ContainerStatus = "unknown" // the desired image is not resolved
)

// ContainerView is one container in a slot.
type ContainerView struct {
	docker.Container
	Status     ContainerStatus
	Healthy    bool
	Unverified bool // counted healthy without a healthcheck's word (min_ready, or emergency)
}

func (l *loop) snapshot() Snapshot {
	s := Snapshot{
		Seq: l.seq, At: l.now(),
		Source: l.opts.Source.Name(), Desired: l.desired, SourceErr: l.sourceErr, Resolved: l.resolved, Prefix: l.prefix,
		Engine: l.info, Connected: l.connected, EngineErr: l.engineErr,
		Containers: l.containers, Plan: l.plan, PlanAt: l.planNow,
		Mode: l.mode, SkipHealth: l.skipHealth,
		Recent: slices.Clone(l.recent), Notes: slices.Clone(l.notes),
		Lock:    LockInfo{Path: l.lockPath, Held: l.lock != nil, Err: l.lockErr, Free: l.lockFree && l.lock == nil},
		Waiting: l.waiting, Settling: l.settleLeft(), Halted: l.halted,
		RolledBack: slices.Clone(l.rolledBack), Proxy: l.proxyView(),
	}
	s.Fresh = l.planEpoch == l.epoch && !l.loading && !l.fetching && len(l.running) == 0 && !l.anyStale() && l.resolved != nil && l.connected
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
	s.Slots, s.Progress = slotViews(l.resolved, l.containers, l.prefix, l.planNow, l.skipHealth, l.recreate)
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
		case ran && res.ends > l.planEnds: // it ended after this plan's list began
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

// slotViews lays the containers out by workload and slot beside what each
// slot should run, and counts the slots that are up-to-date and healthy.
func slotViews(r *spec.ResolvedDesired, cs []docker.Container, prefix string, now time.Time, skipHealth bool, recreate map[string]time.Time) ([]SlotView, Progress) {
	type slotKey struct {
		workload string
		slot     int
	}
	grouped := map[slotKey][]docker.Container{}
	workloads := map[string]bool{}
	for _, c := range cs {
		name := c.Labels[docker.WorkloadLabel(prefix)]
		if name == "" {
			continue // not ours to place; the plan notes it
		}
		slot, err := strconv.Atoi(c.Labels[docker.SlotLabel(prefix)])
		if err != nil || slot < 0 {
			slot = reconcile.NoSlot
		}
		grouped[slotKey{name, slot}] = append(grouped[slotKey{name, slot}], c)
		workloads[name] = true
	}
	if r != nil {
		for _, w := range r.Workloads {
			workloads[w.Name] = true
		}
	}

	var views []SlotView
	var progress Progress
	for _, name := range slices.Sorted(maps.Keys(workloads)) {
		var w *spec.Resolved
		if r != nil {
			w = r.Workload(name)
		}
		slots := map[int]bool{}
		if w != nil {
			for i := range w.Replicas {
				slots[i] = true
			}
		}
		for k := range grouped {
			if k.workload == name {
				slots[k.slot] = true
			}
		}
		order := slices.SortedFunc(maps.Keys(slots), func(a, b int) int {
			if (a == reconcile.NoSlot) != (b == reconcile.NoSlot) {
				if a == reconcile.NoSlot {
					return 1
				}
				return -1
			}
			return cmp.Compare(a, b)
		})
		for _, idx := range order {
			v := SlotView{Workload: name, Slot: idx}
			desired := w != nil && idx >= 0 && idx < w.Replicas
			if desired {
				v.Desired = desiredSlot(w)
				progress.Total++
			}
			v.Containers = placeContainers(grouped[slotKey{name, idx}], w, desired, idx, prefix, now, skipHealth, recreate[name])
			if desired && len(v.Containers) > 0 {
				p := v.Containers[0]
				v.Ready = (p.Status == StatusUpToDate || p.Status == StatusNeedsUpdate) && p.Healthy
			}
			if v.Ready {
				progress.Ready++
			}
			views = append(views, v)
		}
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

// placeContainers classifies a slot's containers and orders them: the
// up-to-date ones first (healthy, then oldest: the first serves the slot,
// the rest are duplicates), then the others, oldest first.
func placeContainers(cs []docker.Container, w *spec.Resolved, desired bool, slot int, prefix string, now time.Time, skipHealth bool, recreate time.Time) []ContainerView {
	minReady := spec.DefaultMinReady
	if w != nil {
		minReady = w.Update.MinReady
	}
	var want docker.Limits
	if w != nil {
		want = reconcile.DesiredLimits(w.Workload)
	}
	views := make([]ContainerView, 0, len(cs))
	for _, c := range cs {
		v := ContainerView{Container: c}
		v.Healthy = reconcile.Healthy(&c, minReady, now, skipHealth)
		v.Unverified = v.Healthy && (skipHealth || !c.HasHealthcheck)
		_, hasSpec := c.Labels[docker.SpecLabel(prefix)]
		switch {
		case w == nil:
			v.Status = StatusExtra
		case slot == reconcile.NoSlot:
			v.Status = StatusOrphan
		case !desired:
			v.Status = StatusSurplus
		case w.Err != nil:
			v.Status = StatusUnknown
		case reconcile.UpToDate(prefix, w, &c, recreate):
			v.Status = StatusUpToDate
			if !reconcile.LimitsEqual(c.Limits, want) {
				v.Status = StatusNeedsUpdate
			}
		case !hasSpec:
			v.Status = StatusLegacy
		default:
			v.Status = StatusStale
		}
		views = append(views, v)
	}
	// The up-to-date ones first, in the order Diff picks the one that serves
	// the slot; the rest of them are duplicates. Then the others, oldest first.
	fresh := func(v ContainerView) bool { return v.Status == StatusUpToDate || v.Status == StatusNeedsUpdate }
	var ranked []*docker.Container
	for i := range views {
		if fresh(views[i]) {
			ranked = append(ranked, &views[i].Container)
		}
	}
	if w != nil { // without a desired workload nothing is up-to-date
		reconcile.SortFreshFor(ranked, w.Workload, now, skipHealth) // as Diff ranks them
	}
	rank := make(map[string]int, len(ranked))
	for i, c := range ranked {
		rank[c.ID] = i
	}
	slices.SortStableFunc(views, func(a, b ContainerView) int {
		if fa, fb := fresh(a), fresh(b); fa != fb {
			if fa {
				return -1
			}
			return 1
		} else if fa {
			return cmp.Compare(rank[a.ID], rank[b.ID])
		}
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	for i := 1; i < len(views) && fresh(views[i]); i++ {
		views[i].Status = StatusDuplicate
	}
	return views
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
func (l *loop) resolvedWorkload(name string) *spec.Resolved {
	if l.resolved == nil {
		return nil
	}
	return l.resolved.Workload(name)
}
