package fleet

import (
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// PlanState is where a host's session stands with its desired state.
type PlanState int

const (
	PlanUnknown   PlanState = iota // no plan yet: the session has not listed its engine
	PlanRolling                    // steps are left to take, or under way
	PlanConverged                  // nothing left to do
	PlanFailed                     // its roll failed; the session follows the workloads' failure_action
)

// Host is one host as its session reports it.
type Host struct {
	Name      string // as in the file
	EngineID  string // the engine's `docker info` ID; "" until it answered
	Reachable bool   // the session reaches its engine now
	LockHeld  bool   // this rollcall holds the host's lock
	Plan      PlanState
	// Healthy of Slots are up to date and healthy: "k/N".
	Healthy, Slots int
	Pull           PullState // its session's pull steps of this desired state
}

// PullState is where a host's pulls of the desired state's images stand: its
// plan has a pull step left (Pending), one runs now (Running), or the last
// try of one failed (Failed, of Kind) and waits out its backoff.
type PullState struct {
	Pending, Running, Failed bool
	Kind                     docker.PullKind // Failed: why, as data
}

// MaxPulls is how many hosts pull at once before a rollout's first
// non-pull step: the rest wait for a turn.
const MaxPulls = 4

// Done reports whether the host is converged and healthy: it answers, has
// nothing left to do, and every slot is up to date and healthy.
func (h Host) Done() bool {
	return h.Reachable && h.Plan == PlanConverged && h.Healthy == h.Slots
}

// Input is everything a fleet decision depends on. The caller fills it in
// from its sessions and keeps Record from the decision before.
type Input struct {
	Hosts           []Host // every host of the file, in file order
	Policy          spec.Fleet
	Mode            session.Mode
	SkipUnreachable bool         // leave a host out that does not answer at preflight
	Approved        map[int]bool // step mode: the waves the operator approved, by index
	ApprovedAll     bool         // step mode: the whole fleet rollout is approved (A)
	Now             time.Time
	Record          Record
}

// Record is what a rollout remembers from one decision to the next. The
// zero Record is a rollout that has not started.
type Record struct {
	Waves int // waves started so far; 0 until preflight passed and the first one went
	// Left holds the hosts left out at preflight (SkipUnreachable): until
	// the first wave starts, those that would be; then fixed.
	Left    []string
	SoakDue bool      // a started wave rolled something: the next waits Policy.Wait
	DoneAt  time.Time // when every started wave was last seen converged and healthy; zero while one is not
	Failed  []Failure // failed hosts, in the order seen; a host fails once
	// RollingBack is set once rollback_all began: it goes on whatever
	// happens next.
	RollingBack bool
	Phase       Phase // of the last decision
}

// Started reports whether the rollout passed preflight and its first wave
// went.
func (r Record) Started() bool { return r.Waves > 0 }

// failed returns the failure of host, if it failed.
func (r Record) failed(host string) (Failure, bool) {
	for _, f := range r.Failed {
		if f.Host == host {
			return f, true
		}
	}
	return Failure{}, false
}

// Cause is why a host failed.
type Cause int

const (
	CauseRollFailed Cause = iota + 1 // its session's roll failed
	CauseLost                        // it stopped answering after its wave started
)

// Failure is one failed host.
type Failure struct {
	Host  string
	Wave  int
	Cause Cause
	At    time.Time
}

// Phase is where the rollout stands.
type Phase int

const (
	PhasePreflight   Phase = iota // the first wave has not started; its Waits say why
	PhaseRolling                  // waves are under way
	PhasePaused                   // a failure stopped the rollout; the hosts hold where they are
	PhaseFinishing                // continue: a host failed, no later wave starts, the started ones finish
	PhaseRollingBack              // rollback_all: the hosts of the started waves roll back
	PhaseDone                     // every host of the rollout is converged and healthy
	PhaseWatching                 // watch mode: nothing acts
)

// Action is what a host's session may do now.
type Action int

const (
	Hold     Action = iota // take no step
	Act                    // run its plan, under its own session's rules
	RollBack               // roll back to the revision it ran before this rollout
	Pull                   // run its pull steps only: a host of the rollout has an image to pull
)

// HostStatus is a host's part in the rollout, for a view.
type HostStatus int

const (
	HostPending HostStatus = iota // its wave has not started
	HostRolling                   // its wave started; it is not converged and healthy
	HostDone                      // converged and healthy
	HostFailed                    // its roll failed in this rollout
	HostLost                      // it stopped answering mid-rollout
	HostLeftOut                   // left out at preflight
)

// Verdict is the decision for one host.
type Verdict struct {
	Host   string
	Wave   int // index into Decision.Waves; -1 when left out
	Action Action
	Status HostStatus
}

// WaveStatus is where one wave stands.
type WaveStatus int

const (
	WavePending  WaveStatus = iota // not started
	WaveRolling                    // started; a host of it is not converged and healthy
	WaveComplete                   // started; every host converged and healthy
)

// Wave is one wave of the rollout and what it waits for.
type Wave struct {
	Index  int
	Hosts  []string
	Status WaveStatus
	Waits  []Wait // empty when nothing holds it
}

// WaitKind is why a wave does not go (or, started, why its hosts hold).
type WaitKind int

const (
	WaitPreflight   WaitKind = iota + 1 // a host fails a check (Problem) that must pass before it acts
	WaitApproval                        // step mode: the operator approves the wave, or the whole rollout
	WaitSoak                            // the soak after the wave before: until Until
	WaitHealth                          // a host of an earlier wave is not converged and healthy (Healthy/Slots)
	WaitFailedHost                      // a host failed (Cause): no later wave starts
	WaitEarlierWave                     // the wave before (Wave) has not started
	WaitWatch                           // watch mode acts on nothing
	WaitPull                            // Host has a pull left (Pull.Kind set when its last try failed): no host runs anything else
)

// Problem is the preflight check a host fails.
type Problem int

const (
	ProblemUnreachable Problem = iota + 1 // it does not answer
	ProblemUnobserved                     // it answers, but its session has no plan (or engine ID) yet
	ProblemSameEngine                     // its engine is that of another host (Other)
	ProblemLockNotHeld                    // its lock is not held
)

// Wait is one thing a wave waits for; the fields its Kind names are set.
type Wait struct {
	Kind    WaitKind
	Host    string    // WaitPreflight, WaitHealth, WaitFailedHost
	Problem Problem   // WaitPreflight
	Other   string    // WaitPreflight with ProblemSameEngine: the host named first
	Cause   Cause     // WaitFailedHost
	Until   time.Time // WaitSoak
	Wave    int       // WaitEarlierWave
	// Healthy of Slots, for WaitHealth.
	Healthy, Slots int
	Pull           PullState // WaitPull: the host's pulls
}

// EventKind names a fact a decision recorded for the first time.
type EventKind int

const (
	EventBegan       EventKind = iota + 1 // preflight passed and the first wave started: a new rollout
	EventLeftOut                          // Host was left out at preflight (SkipUnreachable)
	EventWaveStarted                      // Wave started; Skipped when every host of it was done already
	EventHostFailed                       // Host failed (Cause)
	EventPhase                            // the rollout entered Phase: paused, finishing, rolling back or done
)

// Event is one fact for the journal.
type Event struct {
	Kind    EventKind
	Wave    int
	Host    string
	Cause   Cause
	Skipped bool
	Phase   Phase
	// EventLeftOut: the host's pull failed (of this kind) rather than
	// it not answering; "" for a host that does not answer.
	PullKind docker.PullKind
}

// Decision is what the fleet does now.
type Decision struct {
	Phase  Phase
	Waves  []Wave
	Hosts  []Verdict // one per input host, in the same order
	Events []Event   // facts first recorded by this decision, in order
	Record Record    // to pass to the next decision
	// WakeAt is when to decide again though nothing else changed (the
	// end of a soak); zero for none.
	WakeAt time.Time
}

// Verdict returns the verdict for host; Hold for a host not in the input.
func (d Decision) Verdict(host string) Verdict {
	for _, v := range d.Hosts {
		if v.Host == host {
			return v
		}
	}
	return Verdict{Host: host, Wave: -1}
}

// Decide is the fleet's "what acts now": a pure function of the hosts'
// states, the policy, the mode, the approvals, the clock and the record of
// the rollout so far. The rules are the package's (doc.go); in their order:
//
//  1. watch mode acts on nothing and records nothing;
//  2. until the first wave starts, a host that fails preflight holds
//     every host (with SkipUnreachable, one that does not answer and is no
//     canary is left out instead), and a fleet already converged starts
//     nothing;
//  3. a host of a started wave that failed or stopped answering is
//     failed, once; with a failure on_failure (or the lost host) decides,
//     and no later wave starts;
//  4. otherwise the next wave starts when every earlier wave is converged
//     and healthy, the soak is over, its hosts pass preflight, and, in step
//     mode, it is approved; a wave with nothing to do starts at once.
//
// A host of a started wave acts only while every host of every earlier
// wave is converged and healthy, answers, and holds its lock.
func Decide(in Input) Decision {
	rec := in.Record
	rec.Left = slices.Clone(rec.Left)
	rec.Failed = slices.Clone(rec.Failed)
	c := &coordinator{in: in, rec: &rec, byName: map[string]Host{}}
	for _, h := range in.Hosts {
		c.byName[h.Name] = h
	}
	return c.decide()
}

type coordinator struct {
	in     Input
	rec    *Record
	byName map[string]Host
	waves  [][]string
	waits  [][]Wait
	events []Event
	wakeAt time.Time
	// pullTurn holds the hosts that run their pull steps now (Pull).
	pullTurn map[string]bool
	// finishing is set under on_failure continue within max_failed_hosts:
	// the failed hosts no longer gate the started waves after theirs
	// (DESIGN §11: continue goes on with the other hosts).
	finishing bool
}

func (c *coordinator) decide() Decision {
	in, rec := c.in, c.rec
	if !in.Mode.Acting() {
		c.build(rec.Left)
		for k := rec.Waves; k < len(c.waves); k++ {
			c.waits[k] = []Wait{{Kind: WaitWatch}}
		}
		return c.result(PhaseWatching, nil)
	}
	if !rec.Started() {
		left, problems := c.preflight()
		rec.Left = left
		c.build(left)
		if len(problems) > 0 {
			c.waits[0] = problems
			c.laterWaves(1)
			return c.result(PhasePreflight, nil)
		}
		if c.allDone() {
			return c.result(PhaseDone, nil)
		}
	} else {
		c.build(rec.Left)
	}
	c.recordFailures()
	if len(rec.Failed) > 0 {
		return c.onFailure()
	}
	if waits := c.pullWaits(); len(waits) > 0 {
		return c.pulling(waits)
	}
	c.advance()
	c.startedWaits()
	phase := PhaseRolling
	switch {
	case !rec.Started():
		phase = PhasePreflight
	case rec.Waves == len(c.waves) && c.allDone():
		phase = PhaseDone
	}
	return c.result(phase, c.forward)
}

// build computes the waves of the hosts not left out.
func (c *coordinator) build(left []string) {
	var names []string
	for _, h := range c.in.Hosts {
		if !slices.Contains(left, h.Name) {
			names = append(names, h.Name)
		}
	}
	c.waves = Waves(names, c.in.Policy)
	c.waits = make([][]Wait, len(c.waves))
}

// preflight checks every host before the first wave: the hosts to leave
// out, and the problems that hold the rollout.
func (c *coordinator) preflight() (left []string, problems []Wait) {
	canary := Waves(c.hostNames(), c.in.Policy)
	var firstWave []string
	if len(canary) > 0 {
		firstWave = canary[0]
	}
	engines := map[string]string{}
	for _, h := range c.in.Hosts {
		if (!h.Reachable || h.Pull.Failed && !h.Pull.Running) && c.in.SkipUnreachable && !slices.Contains(firstWave, h.Name) {
			left = append(left, h.Name)
			continue
		}
		if p, ok := c.check(h); !ok {
			problems = append(problems, p)
			continue
		}
		if first, dup := engines[h.EngineID]; dup {
			problems = append(problems, Wait{Kind: WaitPreflight, Host: h.Name, Problem: ProblemSameEngine, Other: first})
			continue
		}
		engines[h.EngineID] = h.Name
	}
	return left, problems
}

// check is the preflight of one host: it answers, has a plan and holds its
// lock.
func (c *coordinator) check(h Host) (Wait, bool) {
	w := Wait{Kind: WaitPreflight, Host: h.Name}
	switch {
	case !h.Reachable:
		w.Problem = ProblemUnreachable
	case h.EngineID == "" || h.Plan == PlanUnknown:
		w.Problem = ProblemUnobserved
	case !h.LockHeld:
		w.Problem = ProblemLockNotHeld
	default:
		return Wait{}, true
	}
	return w, false
}

// recordFailures marks the hosts of the started waves that failed or stopped
// answering, once each.
func (c *coordinator) recordFailures() {
	for k := range min(c.rec.Waves, len(c.waves)) {
		for _, name := range c.waves[k] {
			if _, done := c.rec.failed(name); done {
				continue
			}
			h := c.byName[name]
			var cause Cause
			switch {
			case !h.Reachable:
				cause = CauseLost
			case h.Plan == PlanFailed:
				cause = CauseRollFailed
			default:
				continue
			}
			c.rec.Failed = append(c.rec.Failed, Failure{Host: name, Wave: k, Cause: cause, At: c.in.Now})
			c.events = append(c.events, Event{Kind: EventHostFailed, Wave: k, Host: name, Cause: cause})
		}
	}
}

// onFailure decides a rollout with a failed host: no later wave starts, and
// the policy (or a lost host) says what the started waves do.
func (c *coordinator) onFailure() Decision {
	rec := c.rec
	lost := slices.ContainsFunc(rec.Failed, func(f Failure) bool { return f.Cause == CauseLost })
	p := c.in.Policy
	phase := PhasePaused
	switch {
	case rec.RollingBack:
		phase = PhaseRollingBack
	case lost:
	case p.OnFailure == spec.OnFailureRollbackAll:
		rec.RollingBack = true
		phase = PhaseRollingBack
	case p.OnFailure == spec.OnFailureContinue && len(rec.Failed) <= p.MaxFailedHosts:
		phase = PhaseFinishing
	}
	failed := make([]Wait, len(rec.Failed))
	for i, f := range rec.Failed {
		failed[i] = Wait{Kind: WaitFailedHost, Host: f.Host, Cause: f.Cause}
	}
	if phase == PhaseFinishing {
		c.finishing = true
		c.startedWaits()
	}
	for k := range c.waves {
		if k >= rec.Waves || phase == PhasePaused && !c.complete(k) {
			c.waits[k] = failed
		}
	}
	switch phase {
	case PhaseRollingBack:
		return c.result(phase, func(k int, h Host) Action {
			if f, ok := rec.failed(h.Name); ok && f.Cause == CauseLost || !h.Reachable || !h.LockHeld {
				return Hold
			}
			return RollBack
		})
	case PhaseFinishing:
		return c.result(phase, c.forward)
	}
	// Paused: the failed hosts that answer follow their own failure_action;
	// every other host holds.
	return c.result(phase, func(k int, h Host) Action {
		if f, ok := rec.failed(h.Name); ok && f.Cause == CauseRollFailed {
			return c.forward(k, h)
		}
		return Hold
	})
}

// startedWaits notes why hosts of the started waves hold: a host of an
// earlier wave that is not converged and healthy, or a lock no longer held.
func (c *coordinator) startedWaits() {
	for k := range min(c.rec.Waves, len(c.waves)) {
		waits := c.healthGate(k)
		for _, name := range c.waves[k] {
			h := c.byName[name]
			if _, failed := c.rec.failed(name); !failed && h.Reachable && !h.LockHeld {
				waits = append(waits, Wait{Kind: WaitPreflight, Host: name, Problem: ProblemLockNotHeld})
			}
		}
		c.waits[k] = waits
	}
}

// advance starts every wave that may start now, in order, and notes what
// the others wait for.
func (c *coordinator) advance() {
	rec, p := c.rec, c.in.Policy
	for k := rec.Waves; k < len(c.waves); k++ {
		c.soakClock()
		if health := c.healthGate(k); len(health) > 0 {
			c.waits[k] = health
			c.laterWaves(k + 1)
			return
		}
		var waits []Wait
		work := false
		for _, name := range c.waves[k] {
			h := c.byName[name]
			if w, ok := c.check(h); !ok {
				waits = append(waits, w)
			}
			work = work || !h.Done()
		}
		if len(waits) == 0 && !work {
			c.start(k, true)
			continue
		}
		if end := rec.DoneAt.Add(p.Wait); rec.SoakDue && c.in.Now.Before(end) {
			waits = append(waits, Wait{Kind: WaitSoak, Until: end})
			c.wakeAt = end
		}
		if c.needsApproval(k) {
			waits = append(waits, Wait{Kind: WaitApproval})
		}
		if len(waits) > 0 {
			c.waits[k] = waits
			c.laterWaves(k + 1)
			return
		}
		c.start(k, false)
	}
	c.soakClock()
}

// pullWaits are the hosts of the rollout (not left out, not failed) with
// a pull step left, in wave order.
func (c *coordinator) pullWaits() []Wait {
	var waits []Wait
	for _, wave := range c.waves {
		for _, name := range wave {
			if _, failed := c.rec.failed(name); failed {
				continue
			}
			if h := c.byName[name]; h.Pull.Pending {
				waits = append(waits, Wait{Kind: WaitPull, Host: name, Pull: h.Pull})
			}
		}
	}
	return waits
}

// pulling decides a rollout while a host of it has a pull left (DESIGN
// §5 rule 0 across hosts): no wave starts and no host runs anything but
// its pull steps; up to MaxPulls hosts pull at once, those pulling now
// first, then those that have not failed, then those whose last try
// failed, in wave order. In step mode the pulls wait for the first wave's
// approval (or the whole rollout's).
func (c *coordinator) pulling(waits []Wait) Decision {
	rec := c.rec
	c.startedWaits()
	for k := range min(rec.Waves, len(c.waves)) {
		c.waits[k] = append(c.waits[k], waits...)
	}
	if k := rec.Waves; k < len(c.waves) {
		c.waits[k] = slices.Clone(waits)
		if c.needsApproval(k) {
			c.waits[k] = append(c.waits[k], Wait{Kind: WaitApproval})
		}
		c.laterWaves(k + 1)
	}
	c.soakClock()
	if rec.Started() || !c.needsApproval(0) {
		rank := func(p PullState) int {
			switch {
			case p.Running:
				return 0
			case !p.Failed:
				return 1
			}
			return 2
		}
		var turns []Wait
		for _, w := range waits {
			if h := c.byName[w.Host]; h.Reachable && h.LockHeld {
				turns = append(turns, w)
			}
		}
		slices.SortStableFunc(turns, func(a, b Wait) int { return rank(a.Pull) - rank(b.Pull) })
		c.pullTurn = map[string]bool{}
		for _, w := range turns[:min(MaxPulls, len(turns))] {
			c.pullTurn[w.Host] = true
		}
	}
	phase := PhaseRolling
	if !rec.Started() {
		phase = PhasePreflight
	}
	return c.result(phase, nil)
}

// start records wave k as started.
func (c *coordinator) start(k int, skipped bool) {
	if !c.rec.Started() {
		c.events = append(c.events, Event{Kind: EventBegan})
		for _, name := range c.rec.Left {
			ev := Event{Kind: EventLeftOut, Host: name}
			if h := c.byName[name]; h.Reachable && h.Pull.Failed {
				ev.PullKind = h.Pull.Kind
			}
			c.events = append(c.events, ev)
		}
	}
	c.rec.Waves = k + 1
	if !skipped {
		c.rec.SoakDue = true
		c.rec.DoneAt = time.Time{}
	}
	c.events = append(c.events, Event{Kind: EventWaveStarted, Wave: k, Skipped: skipped})
}

// soakClock keeps DoneAt: when every started wave was first seen converged
// and healthy, zero while one is not.
func (c *coordinator) soakClock() {
	for k := range min(c.rec.Waves, len(c.waves)) {
		if !c.complete(k) {
			c.rec.DoneAt = time.Time{}
			return
		}
	}
	if c.rec.DoneAt.IsZero() {
		c.rec.DoneAt = c.in.Now
	}
}

// healthGate is what holds wave k for the waves before it: each host of
// theirs that is not converged and healthy. While a continue finishes the
// started waves, a host that failed holds none of them: it is counted
// against max_failed_hosts instead.
func (c *coordinator) healthGate(k int) []Wait {
	var waits []Wait
	for _, wave := range c.waves[:k] {
		for _, name := range wave {
			if _, failed := c.rec.failed(name); failed && c.finishing {
				continue
			}
			if h := c.byName[name]; !h.Done() {
				waits = append(waits, Wait{Kind: WaitHealth, Host: name, Healthy: h.Healthy, Slots: h.Slots})
			}
		}
	}
	return waits
}

func (c *coordinator) needsApproval(k int) bool {
	return c.in.Mode == session.ModeStep && !c.in.ApprovedAll && !c.in.Approved[k]
}

// laterWaves notes what the waves from k on wait for: the wave before, and
// their approval.
func (c *coordinator) laterWaves(from int) {
	for k := from; k < len(c.waves); k++ {
		c.waits[k] = []Wait{{Kind: WaitEarlierWave, Wave: k - 1}}
		if c.needsApproval(k) {
			c.waits[k] = append(c.waits[k], Wait{Kind: WaitApproval})
		}
	}
}

// forward is the action of a host of a started wave k while the rollout
// goes forward: it acts while every earlier wave is converged and healthy,
// and it answers and holds its lock. (A lost host never gets here: a lost
// host pauses the rollout, or a rollback_all under way passes it over.)
func (c *coordinator) forward(k int, h Host) Action {
	if !h.Reachable || !h.LockHeld || len(c.healthGate(k)) > 0 {
		return Hold
	}
	return Act
}

// complete reports whether every host of wave k is converged and healthy.
func (c *coordinator) complete(k int) bool {
	for _, name := range c.waves[k] {
		if !c.byName[name].Done() {
			return false
		}
	}
	return true
}

func (c *coordinator) allDone() bool {
	for k := range c.waves {
		if !c.complete(k) {
			return false
		}
	}
	return true
}

func (c *coordinator) hostNames() []string {
	names := make([]string, len(c.in.Hosts))
	for i, h := range c.in.Hosts {
		names[i] = h.Name
	}
	return names
}

// result assembles the decision. act is the action of a host of a started
// wave; nil holds them all.
func (c *coordinator) result(phase Phase, act func(k int, h Host) Action) Decision {
	rec := c.rec
	if phase != rec.Phase && phase >= PhasePaused && phase <= PhaseDone && rec.Started() {
		c.events = append(c.events, Event{Kind: EventPhase, Phase: phase})
	}
	if phase != PhaseWatching {
		rec.Phase = phase
	}
	d := Decision{Phase: phase, Events: c.events, WakeAt: c.wakeAt}
	waveOf := map[string]int{}
	for k, hosts := range c.waves {
		status := WavePending
		if k < rec.Waves {
			status = WaveRolling
			if c.complete(k) {
				status = WaveComplete
			}
		}
		d.Waves = append(d.Waves, Wave{Index: k, Hosts: hosts, Status: status, Waits: c.waits[k]})
		for _, h := range hosts {
			waveOf[h] = k
		}
	}
	for _, h := range c.in.Hosts {
		v := Verdict{Host: h.Name, Wave: -1, Status: HostLeftOut}
		k, in := waveOf[h.Name]
		if in {
			v.Wave = k
			v.Status = c.status(k, h)
			if act != nil && k < rec.Waves {
				v.Action = act(k, h)
			}
			if c.pullTurn[h.Name] {
				v.Action = Pull
			}
		}
		d.Hosts = append(d.Hosts, v)
	}
	// In watch mode nothing above changed rec: it goes back as it came.
	d.Record = *rec
	return d
}

func (c *coordinator) status(k int, h Host) HostStatus {
	if f, ok := c.rec.failed(h.Name); ok {
		if f.Cause == CauseLost {
			return HostLost
		}
		return HostFailed
	}
	switch {
	case h.Done():
		return HostDone
	case k < c.rec.Waves:
		return HostRolling
	}
	return HostPending
}
