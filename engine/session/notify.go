package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/notify"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// This file posts what the session does to the webhooks of the desired
// state's notify: (DESIGN §12), through engine/notify, which never blocks:
// the loop hands an event over and goes on. What is posted is read, as the
// loop publishes each snapshot (notifyTurn), off the facts recorded since
// the last turn (facts.go) and the snapshot's standing (standing.go):
// nothing is worked out by comparing one snapshot with the last.
//
//   - rollout_started: the first step begins (FactStepStarted) towards a
//     desired state (by fingerprint) not yet reached, with the workloads
//     it changes (from the images their older containers run, to the
//     desired one) and the steps planned; rollout_ended: the standing ends
//     it (rolloutEnd: converged, failed, or held by a hold or a canary
//     that holds, never an operator's pause nor a wait for approval), a
//     newer desired state comes first (superseded), or the session ends
//     first (stopped), with the steps run and failed (FactStepDone,
//     FactStepFailed), the slots ready, and how long it took. A desired state reached without a step,
//     and a crash restart after it was reached, are no rollout.
//   - step_failed: FactStepFailed, once per run of failures (auto's
//     retries that fail again are not posted: Fact.Failures);
//     health_failed: FactHealthFailed, a new container that missed its
//     health deadline, with its failure_action; rollback: FactRolledBack
//     (failure_action rollback's stop done), or an operator's rollback
//     begun (FactHoldSet by HoldByOperator); hold: FactHoldSet, whoever put
//     it (its typed cause says who: the operator, failure_action, a
//     canary's abort, another process); pin: FactPinSet, a workload pinned
//     to a revision (rollcall rollback, u), posted once the plan runs it
//     (its view stands), whose roll back is a rollout of its own;
//     engine_lost, engine_back: FactEngineDown (after it once answered)
//     and FactEngineUp.
//   - Only a session that acts (step or auto, under the host lock) posts,
//     so that a console watching beside the agent does not post the
//     agent's rollouts a second time; a rollout it began is ended even if
//     it stopped acting since. The holds and pins kept from before the
//     session, read from the state directory, are no facts: they are not
//     posted again.
//   - A post that failed (every try) or was dropped is a fact
//     (FactNoticeFailed): shown, logged and journaled as a decision line
//     (action notify-failed or notify-dropped, the URL named by scheme
//     and host only, the error);
//     an ending session waits up to one post's bound for what is queued.

// notifyState is what the loop keeps of the webhooks; only the loop
// touches it, but for the reports (mu).
type notifyState struct {
	n       *notify.Notifier // nil until a desired state names notify:
	targets []notify.Target

	mu      sync.Mutex
	reports []notify.Report
	// wake says reports wait to be taken; nil (a select waits forever)
	// until n exists.
	wake chan struct{}

	reached reachedState // the desired state and holds last seen steady
	open    *openRollout // the rollout under way, if any
	// next is the ID the rollout toward nextFP opens with, given to the
	// journal lines of its first steps, which begin before a snapshot
	// opens it (stepRollout).
	next, nextFP string
	seq          uint64             // the last fact a turn read
	pinsDue      map[string]PinFact // pins set, by workload, to post once the plan runs them
	lost         bool               // the engine was seen lost
	lostPosted   bool               // and engine_lost was posted (acting then): engine_back follows it

	standing     StandingKind // the standing's kind Options.Observer was last told
	standingSaid bool         // and it was told one
}

// openRollout is a rollout under way.
type openRollout struct {
	fp      string
	id      string
	since   time.Time // wall clock
	steps   int       // steps that ended since it began
	failed  int
	changes []notify.Change
}

// notifyTurn, at each publish, posts what the facts recorded since the
// last one say happened, and tells Options.Observer of a standing of
// another kind.
func (l *loop) notifyTurn(s *Snapshot) {
	ns := &l.notify
	ns.followTargets(l.desired, l.opts.Notify)
	l.observeStanding(s.Standing)
	acting := l.mode.Acting() && l.lockHeld()
	post := func(e notify.Event) {
		if acting {
			l.send(e)
		}
	}
	facts, missed := s.FactsSince(ns.seq)
	if missed > 0 {
		l.log(levelWarn, "notifications: facts missed", "missed", missed)
	}
	ns.seq = max(ns.seq, s.LastFact())

	if o := ns.open; o != nil && o.fp != l.desiredFP {
		l.endRolloutNotice(s, notify.OutcomeSuperseded)
	}
	started := false
	for _, f := range facts {
		switch f.Kind {
		case FactPinSet:
			if ns.pinsDue == nil {
				ns.pinsDue = map[string]PinFact{}
			}
			ns.pinsDue[f.Pin.Workload] = *f.Pin
		case FactPinLifted:
			delete(ns.pinsDue, f.Pin.Workload)
		case FactStepStarted:
			started = true
		}
	}
	l.notifyPins(s, post) // before the rollout it sets off
	if started {
		l.openRollout(s, acting)
	}
	for _, f := range facts {
		l.notifyFact(s, f, acting, post)
	}
	if outcome, ends := rolloutEnd(s.Standing); ends && ns.open != nil {
		l.endRolloutNotice(s, outcome)
	}
	if s.Steady {
		ns.reached = reachedOf(l.desiredFP, s)
	}
}

// rolloutEnd is whether the standing st ends the rollout under way, and
// how: converged, failed, or held (a spec on hold, a canary that holds
// on too little traffic). An operator's pause does not end it, nor does a
// question or a step waiting for approval, a roll under way, a blocked
// session, or a standing not decided afresh (Pending): each of them
// goes on to one of the ends, or to a newer desired state.
func rolloutEnd(st Standing) (notify.Outcome, bool) {
	if st.Pending {
		return "", false
	}
	switch st.Kind {
	case StandingConverged:
		return notify.OutcomeConverged, true
	case StandingFailed:
		return notify.OutcomeFailed, true
	case StandingHeld:
		for _, c := range st.Causes {
			if c.Kind == CauseOperatorPause {
				return "", false
			}
		}
		return notify.OutcomeHeld, true
	}
	return "", false
}

// observeStanding tells Options.Observer of st when its kind is not the
// one it was last told.
func (l *loop) observeStanding(st Standing) {
	ns := &l.notify
	if l.opts.Observer == nil || (ns.standingSaid && ns.standing == st.Kind) {
		return
	}
	ns.standing, ns.standingSaid = st.Kind, true
	l.opts.Observer.Standing(st)
}

// notifyFact posts (with post, while acting) what the fact f says
// happened, if it is posted.
func (l *loop) notifyFact(s *Snapshot, f Fact, acting bool, post func(notify.Event)) {
	ns := &l.notify
	switch f.Kind {
	case FactStepDone:
		if ns.open != nil {
			ns.open.steps++
		}
	case FactStepFailed:
		if ns.open != nil {
			ns.open.steps++
			ns.open.failed++
		}
		if f.Failures > 1 {
			return // failed again on a retry: posted at its first failure
		}
		st := f.Step
		e := l.notifyEvent(notify.KindStepFailed, st.Workload, st.Slot)
		e.Container, e.Action, e.Reason, e.Error = st.Container, string(st.Action), st.Reason, f.Err.Error()
		e.DurationMS = f.Duration.Milliseconds()
		e.FromImage, e.ToImage = containerImage(s, st.ContainerID), desiredImage(s, st.Workload)
		post(e)
	case FactHealthFailed:
		x := f.Failure
		e := l.notifyEvent(notify.KindHealthFailed, x.Workload, x.Slot)
		e.Container, e.Action, e.Reason = x.Container, x.Action, x.Reason
		e.ToImage = desiredImage(s, x.Workload)
		post(e)
	case FactRolledBack:
		r := f.Rollback
		e := l.notifyEvent(notify.KindRollback, r.Workload, r.Slot)
		e.Container, e.Spec, e.Reason = r.Container, r.Hash, r.Reason
		e.ToImage = desiredImage(s, r.Workload)
		e.FromImage = firstOf(olderImages(s, r.Workload, r.Slot))
		post(e)
	case FactHoldSet:
		h := f.Hold
		for _, hash := range h.Hashes {
			if h.Cause == state.HoldByOperator && !h.Elsewhere { // the operator's rollback begins
				e := l.notifyEvent(notify.KindRollback, h.Workload, reconcile.NoSlot)
				e.Spec, e.Operator, e.Reason = hash, true, "rolled back by "+h.By
				e.ToImage = desiredImage(s, h.Workload)
				e.FromImage = firstOf(olderImages(s, h.Workload, reconcile.NoSlot))
				post(e)
			}
			e := l.notifyEvent(notify.KindHold, h.Workload, reconcile.NoSlot)
			e.Spec, e.Reason = hash, h.why()
			e.ToImage = desiredImage(s, h.Workload)
			post(e)
		}
	case FactEngineDown:
		if ns.lost || !l.everConnected {
			return
		}
		ns.lost, ns.lostPosted = true, acting
		e := l.notifyEvent(notify.KindEngineLost, "", reconcile.NoSlot)
		e.Error = f.Why
		post(e)
	case FactEngineUp:
		if ns.lost && ns.lostPosted { // a return only follows a loss that was posted
			post(l.notifyEvent(notify.KindEngineBack, "", reconcile.NoSlot))
		}
		ns.lost, ns.lostPosted = false, false
	}
}

// send hands e to the notifier, which never blocks, and to
// Options.Observer.
func (l *loop) send(e notify.Event) {
	if l.opts.Observer != nil {
		l.opts.Observer.Notice(e)
	}
	if l.notify.n != nil {
		l.notify.n.Send(e)
	}
}

// openRollout opens a rollout as a step begins towards a desired state not
// yet reached (see the top of this file).
func (l *loop) openRollout(s *Snapshot, acting bool) {
	ns := &l.notify
	if ns.open != nil || !acting || reachedOf(l.desiredFP, s) == ns.reached || l.desired == nil {
		return
	}
	o := &openRollout{fp: l.desiredFP, since: l.wallNow(), changes: changes(s)}
	o.id = rolloutIDOf(o.since, o.fp)
	if ns.nextFP == o.fp && ns.next != "" {
		o.id = ns.next // its first steps' journal lines carry it already
	}
	ns.next, ns.nextFP = "", ""
	ns.open = o
	e := l.notifyEvent(notify.KindRolloutStarted, "", reconcile.NoSlot)
	e.Workloads = o.changes
	e.Counts = notify.Counts{Steps: len(s.Plan.Executable()) + len(s.Plan.Then()), Ready: s.Progress.Ready, Total: s.Progress.Total, Held: heldSlots(s.Plan)}
	l.send(e)
}

// endRolloutNotice posts the end of the rollout under way.
func (l *loop) endRolloutNotice(s *Snapshot, outcome notify.Outcome) {
	ns := &l.notify
	o := ns.open
	e := l.notifyEvent(notify.KindRolloutEnded, "", reconcile.NoSlot)
	ns.open = nil
	e.Rollout = l.rolloutID(o)
	e.Outcome, e.Workloads = outcome, o.changes
	e.DurationMS = l.wallNow().Sub(o.since).Milliseconds()
	e.Counts = notify.Counts{Steps: o.steps, Failed: o.failed, Ready: s.Progress.Ready, Total: s.Progress.Total, Held: heldSlots(s.Plan)}
	l.send(e)
}

// notifyPins posts each pin set since the session began (FactPinSet)
// once the plan runs it: its view stands (the desired spec it holds is
// the desired one), and says what it changes (DESIGN §12: "rollout's
// start, end, failure, rollback, hold and pin are posted").
func (l *loop) notifyPins(s *Snapshot, post func(notify.Event)) {
	ns := &l.notify
	for _, v := range s.Pins {
		p, due := ns.pinsDue[v.Workload]
		if !due || !v.Standing || v.Revision.Hash != p.Hash {
			continue
		}
		delete(ns.pinsDue, v.Workload)
		e := l.notifyEvent(notify.KindPin, v.Workload, reconcile.NoSlot)
		e.Spec, e.Operator, e.ToImage = v.Against, true, v.Revision.Image
		e.FromImage = firstOf(olderImages(s, v.Workload, reconcile.NoSlot))
		e.Reason = PinAbout(v.PinRecord) + " (by " + v.By + ")"
		e.Error = v.Err
		post(e)
	}
}

// followTargets keeps the notifier's URLs those of the desired state d,
// starting it (with o, Options.Notify) at the first desired state that
// names any.
func (ns *notifyState) followTargets(d *spec.Desired, o notify.Options) {
	ts := notify.TargetsOf(d)
	if slices.Equal(ts, ns.targets) {
		return
	}
	ns.targets = ts
	if ns.n == nil {
		o.Report = ns.add
		ns.wake = make(chan struct{}, 1)
		ns.n = notify.New(o)
	}
	ns.n.SetTargets(ts)
}

// add takes a report in, from the notifier's goroutines.
func (ns *notifyState) add(r notify.Report) {
	if r.Result == notify.Delivered {
		return
	}
	ns.mu.Lock()
	ns.reports = append(ns.reports, r)
	ns.mu.Unlock()
	loopkit.Signal(ns.wake)
}

func (ns *notifyState) take() []notify.Report {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := ns.reports
	ns.reports = nil
	return out
}

// onNotified records each post that failed or was dropped
// (FactNoticeFailed), which the console shows, the agent logs and the
// journal keeps.
func (l *loop) onNotified() {
	for _, r := range l.notify.take() {
		l.notifyFailed(r)
	}
}

// notifyFailed records a post that failed or was dropped: its words, its
// log line and its journal line are made from the fact.
func (l *loop) notifyFailed(r notify.Report) {
	l.fact(Fact{Kind: FactNoticeFailed, Notice: &r})
}

// closeNotify, as the session ends, ends the rollout under way (stopped),
// gives what is queued up to one post's bound, and journals (as the disk
// still allows) and logs what did not go.
func (l *loop) closeNotify() {
	ns := &l.notify
	if ns.n == nil {
		return
	}
	if ns.open != nil {
		snap := l.snapshot()
		l.endRolloutNotice(&snap, notify.OutcomeStopped)
	}
	bound := l.opts.Notify.Timeout
	if bound <= 0 {
		bound = notify.DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	ns.n.Close(ctx)
	l.onNotified()
}

// notifyEvent is an event of kind with who and where filled in.
func (l *loop) notifyEvent(kind notify.Kind, workload string, slot int) notify.Event {
	e := notify.Event{Kind: kind, Time: l.wallNow(), Rollout: l.rolloutID(l.notify.open), Host: l.opts.Host,
		Prefix: l.prefix, User: l.opts.User, Workload: workload, Slot: slot}
	if l.infoOK {
		e.Engine = l.engineName()
	}
	return e
}

// rolloutIDOf is the ID of a rollout toward the desired state fp, opened
// at since: "<UTC start>-<8 hex of the desired state>".
func rolloutIDOf(since time.Time, fp string) string {
	sum := sha256.Sum256([]byte(fp))
	return since.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(sum[:4])
}

// stepRollout is the rollout a step that begins now belongs to, for its
// journal lines: the fleet's, the one under way, or the one its start
// opens, when the desired state differs from the one last reached (a
// crash restart in a steady state is no rollout: "").
func (l *loop) stepRollout() string {
	if id := l.rolloutID(l.notify.open); id != "" {
		return id
	}
	ns := &l.notify
	if l.desired == nil || ns.reached.fp == l.desiredFP {
		return ""
	}
	if ns.nextFP != l.desiredFP || ns.next == "" {
		ns.next, ns.nextFP = rolloutIDOf(l.wallNow(), l.desiredFP), l.desiredFP
	}
	return ns.next
}

// rolloutID is the fleet's rollout ID when there is one, else o's.
func (l *loop) rolloutID(o *openRollout) string {
	if l.opts.Rollout != nil {
		if id := l.opts.Rollout(); id != "" {
			return id
		}
	}
	if o != nil {
		return o.id
	}
	return ""
}

// reachedState names a steady state: the desired state, the holds and
// the standing pins. A retry lifts a hold, and the roll that follows is a
// rollout again; so is the roll a pin (rollcall rollback) sets off, and
// the one back once it is lifted; a crash restart while the holds stand
// is not.
type reachedState struct{ fp, holds string }

func reachedOf(fp string, s *Snapshot) reachedState {
	var b strings.Builder
	for _, w := range sortedKeys(s.Holds) {
		b.WriteString(w + "=" + strings.Join(s.Holds[w], ",") + ";")
	}
	for _, v := range s.Pins {
		if v.Standing {
			b.WriteString("pin:" + v.Workload + "=" + v.Revision.Hash + ";")
		}
	}
	return reachedState{fp: fp, holds: b.String()}
}

// changes are the workloads the plan changes: those with a step to run
// now or later.
func changes(s *Snapshot) []notify.Change {
	var out []notify.Change
	for _, wp := range s.Plan.Workloads {
		if len(wp.Steps) == 0 && len(wp.Then) == 0 {
			continue
		}
		c := notify.Change{Workload: wp.Name, FromImages: olderImages(s, wp.Name, reconcile.NoSlot)}
		if s.Resolved != nil {
			if w := s.Resolved.Workload(wp.Name); w != nil {
				c.ToImage, c.Version, c.Replicas = w.Image, w.Version, w.Replicas
			}
		}
		for _, v := range s.Pins { // a pinned workload rolls to its revision, not the desired spec
			if v.Standing && v.Workload == wp.Name {
				c.ToImage, c.Version = v.Revision.Image, v.Revision.Version
			}
		}
		out = append(out, c)
	}
	return out
}

// olderImages are the images of a workload's containers that are not up
// to date, in one slot or (NoSlot) in all, sorted.
func olderImages(s *Snapshot, workload string, slot int) []string {
	var out []string
	for _, v := range s.Slots {
		if v.Workload != workload || (slot != reconcile.NoSlot && v.Slot != slot) {
			continue
		}
		for _, c := range v.Containers {
			if !c.Relation.Fresh() && !slices.Contains(out, c.Image) {
				out = append(out, c.Image)
			}
		}
	}
	slices.Sort(out)
	return out
}

func desiredImage(s *Snapshot, workload string) string {
	if s.Resolved != nil {
		if w := s.Resolved.Workload(workload); w != nil {
			return w.Image
		}
	}
	return ""
}

func containerImage(s *Snapshot, id string) string {
	for _, c := range s.Containers {
		if c.ID == id && id != "" {
			return c.Image
		}
	}
	return ""
}

func heldSlots(p reconcile.Plan) int {
	n := 0
	for _, wp := range p.Workloads {
		n += len(wp.Held)
	}
	return n
}

func firstOf(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}
