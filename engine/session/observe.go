package session

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// Backoff of the event stream's re-subscription and of relists that fail.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// maxEvents is how many recent engine events a snapshot carries.
const maxEvents = 100

// nextBackoff counts one more failure in a row and returns the wait.
func nextBackoff(n *int) time.Duration {
	*n++
	return reconcile.Backoff(*n, backoffMin, backoffMax)
}

// subscribe (re)opens the event stream, then relists: whatever happened
// while no stream was open shows up in the list, and the images are
// resolved again (their events of the gap are lost).
func (l *loop) subscribe() {
	l.openEvents(l.ctx, l.raw, l.prefix)
	l.requestFetch()
}

// openEvents (re)opens the event stream of c, under ctx, for the managed
// containers of prefix; the images are to be resolved again.
func (o *observer) openEvents(ctx context.Context, c docker.Client, prefix string) {
	o.reresolve = o.reresolve || o.resolved != nil
	if o.evCancel != nil {
		o.evCancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	o.evCancel = cancel
	o.evc, o.errc = c.Events(ctx, prefix, time.Time{})
}

func (l *loop) onEvent(ev docker.Event) {
	l.evFailures = 0
	if ev.Type == docker.EventImage {
		// A tag may point at another image now: resolve the desired
		// images again, with a relist (the events pane is containers').
		l.reresolve = true
		l.requestFetch()
		return
	}
	l.keepEvent(ev)
	if ev.Action == "die" {
		l.onDie(ev)
	}
	if !docker.Herald(ev.Action) {
		l.requestFetch()
	}
}

// keepEvent keeps a container's event for the snapshot: the last
// maxEvents at least.
func (o *observer) keepEvent(ev docker.Event) {
	o.events = append(o.events, ev)
	if len(o.events) > 2*maxEvents {
		o.events = append(o.events[:0:0], o.events[len(o.events)-maxEvents:]...)
	}
}

// onDie acts on a container's exit at once, without waiting for the relist
// the event also asks for: the container is patched as exited in the state
// in hand and the plan diffed again. From that patched plan only the
// restart of that container may run (rule 4: a restart touches nothing
// else); every other step, a stop above all, waits for a fresh list. A
// container whose restart policy has the engine restart it is left to the
// engine (rule 12).
func (l *loop) onDie(ev docker.Event) {
	if l.resolved == nil || !l.fresh() || l.loading {
		return // the state in hand is already out of date: the relist decides
	}
	if !l.patchExited(ev) {
		return
	}
	l.observed.engine = l.engineNow()
	l.diff()
	l.patchedID = ev.ContainerID
	l.act()
	l.patchedID = ""
}

// patchExited patches the container of a die event as exited in the list
// in hand (a copy), and reports whether it did: not for a container that
// was not running, nor for one the engine restarts itself.
func (o *observer) patchExited(ev docker.Event) bool {
	i := slices.IndexFunc(o.containers, func(c docker.Container) bool { return c.ID == ev.ContainerID })
	if i < 0 || o.containers[i].State != docker.StateRunning {
		return false
	}
	c := o.containers[i]
	if reconcile.NormRestart(c.Limits.Restart) != "no" {
		return false // the engine restarts it itself
	}
	c.State, c.Health, c.FinishedAt = docker.StateExited, docker.HealthNone, ev.Time
	if code, err := strconv.Atoi(ev.Attributes["exitCode"]); err == nil {
		c.ExitCode = code
	}
	patched := slices.Clone(o.containers)
	patched[i] = c
	o.containers = patched
	return true
}

// onStreamError: the stream broke (it may still be reconnecting by itself,
// as the moby adapter's does). Relist to learn whether the engine answers,
// and resolve the images again: an engine that restarted forgot the image
// events of before.
func (l *loop) onStreamError(err error) {
	l.setConnected(false, "engine disconnected: "+err.Error())
	l.reresolve = true
	l.requestFetch()
}

// onStreamClosed: the stream is gone for good; subscribe again after a backoff.
func (l *loop) onStreamClosed() {
	l.evc, l.errc = nil, nil
	why := l.engineErr
	if why == "" {
		why = "engine disconnected: event stream closed"
	}
	l.setConnected(false, why)
	l.resub.Set(nextBackoff(&l.evFailures))
}

// requestFetch asks for a relist: at once when none ran for Coalesce, else
// at the end of that window; one in flight is followed by one more.
func (l *loop) requestFetch() {
	if l.relistDue(l.opts.Coalesce, l.wallNow()) {
		l.startFetch()
	}
}

// relistDue takes a request for a relist at now (wall clock): true when it
// starts now; else it follows the one in flight, or it is due already, or
// the throttle is set for the end of the coalesce window.
func (o *observer) relistDue(coalesce time.Duration, now time.Time) bool {
	if o.fetching {
		o.refetch = true
		return false
	}
	if o.throttle.Armed() {
		return false // already due, by coalescing or by backoff
	}
	if wait := coalesce - now.Sub(o.lastFetch); wait > 0 {
		o.throttle.Set(wait)
		return false
	}
	return true
}

type fetchResult struct {
	epoch      uint64
	ends       uint64  // the loop's count of ended steps as the list began
	at         instant // as the list started: its engine reading is the plan's Now
	resolvedFP string  // the desired state resolved is of this fingerprint; resolved nil: not resolved anew
	info       *docker.EngineInfo
	containers []docker.Container
	swarm      *reconcile.SwarmObserved // on a swarm: the services, tasks and nodes read
	resolved   *spec.ResolvedDesired
	holds      *holdsRead // the holds file as read with the list; nil without a state directory
	pins       *pinsRead  // the pins file as read with the list, the pinned images looked up (revisions_pin.go)
	err        error
}

// startFetch lists the engine and resolves the desired state beside the loop.
func (l *loop) startFetch() {
	l.throttle.Stop()
	l.fetching, l.refetch = true, false
	l.lastFetch = l.wallNow()
	epoch, ends := l.stamp()
	at, desired, prefix, needInfo := l.engineNow(), l.desired, l.prefix, !l.infoOK || !l.connected
	// Images are resolved once per desired state, again after an image
	// event or a broken stream (a tag may be rebuilt), and while one of
	// them cannot be resolved.
	if !l.needResolve(l.desired, l.desiredFP) {
		desired = nil
	}
	fp := l.desiredFP
	c := l.scoped(l.raw, l.prefix) // its lists vouch for the managed containers a step may touch
	if desired != nil && (l.resolved == nil || l.resolvedFP != fp) {
		l.pulls.asked.forget() // a new desired state: its tags are asked anew
	}
	images := l.pulls.asked.over(c) // the registry is asked once per poll (pull.go)
	readHolds, readPins, info := l.holdsReader(l.opts.StateDir, l.prefix), l.rev.pins.reader(l.opts.StateDir, l.prefix), l.info
	sw := l.swarmRaw
	goReport(l, l.fetched, func() fetchResult {
		r := fetchResult{epoch: epoch, ends: ends, at: instant{engine: at, wall: l.wallNow()}, resolvedFP: fp}
		if needInfo {
			info, err := c.Info(l.ctx)
			if err != nil {
				r.err = err
				return r
			}
			r.info = &info
		}
		if sw != nil {
			// A swarm: its cluster ID names it (swarm.go).
			read, err := readSwarm(l.ctx, sw, prefix, needInfo)
			if err != nil {
				r.err = err
				return r
			}
			if read.info != nil {
				r.info.ID, r.info.Swarm = read.info.ClusterID, true
			}
			r.swarm = read.obs
		}
		// Resolving the images beside the list keeps a relist to the
		// slower of the two calls.
		resolved := make(chan *spec.ResolvedDesired, 1)
		go func() {
			if desired == nil {
				resolved <- nil
				return
			}
			resolved <- spec.Resolve(l.ctx, desired, images)
		}()
		if r.swarm != nil {
			r.containers = reconcile.SwarmContainers(prefix, r.swarm) // the tasks, shown as containers
		} else {
			r.containers, r.err = c.List(l.ctx, prefix)
		}
		r.resolved = <-resolved
		if readHolds != nil && r.err == nil {
			// Beside the loop too: a hold lifted by `rollcall retry`
			// meanwhile is lifted in this session (holds.go).
			if r.info != nil {
				info = *r.info
			}
			r.holds = readHolds(info)
		}
		if readPins != nil && r.err == nil {
			if r.info != nil {
				info = *r.info
			}
			r.pins = readPins(l.ctx, c, info)
		}
		return r
	})
}

func (l *loop) onFetched(r fetchResult) {
	l.fetching = false
	if r.err != nil {
		l.setConnected(false, "engine disconnected: "+r.err.Error())
		l.throttle.Set(nextBackoff(&l.listFailures))
		return
	}
	l.tookList(r)
	if r.swarm != nil {
		l.swarmObs = r.swarm
	}
	if l.evc != nil {
		l.setConnected(true, "")
	}
	l.onHoldsRead(r.holds)
	l.onPinsRead(r.pins)
	l.listed(r.epoch, r.ends)
	l.diff()
	l.recordRevisions()
	if l.mode.Acting() && l.lock == nil {
		l.takeLock()
	}
	l.readHolder()
	if l.rollout != nil && l.fresh() && l.plan.Empty() && l.rollout.fp == l.desiredFP {
		l.endRollout(ApprovalEnd{Cause: ApprovalReached})
	}
	l.act()
	l.armWake()
	if l.refetch {
		l.requestFetch()
	}
}

// tookList takes in a list that succeeded: the engine's identity, the
// containers, the images resolved with it, and when it started.
func (o *observer) tookList(r fetchResult) {
	o.listFailures = 0
	if r.info != nil {
		o.info, o.infoOK = *r.info, true
	}
	o.containers = r.containers
	if r.resolved != nil {
		o.resolved, o.resolvedFP, o.reresolve = r.resolved, r.resolvedFP, false
	}
	o.observed = r.at
}

// needResolve reports whether the next relist resolves the images anew,
// for the desired state d of fingerprint fp.
func (o *observer) needResolve(d *spec.Desired, fp string) bool {
	if d == nil {
		return false
	}
	if o.resolved == nil || o.resolvedFP != fp || o.reresolve {
		return true
	}
	for _, w := range o.resolved.Workloads {
		if w.Err != nil {
			return true
		}
	}
	return false
}

// diff makes the plan of the latest list and keeps the bookkeeping that
// hangs on it current.
func (l *loop) diff() {
	l.cancelUnneededPulls()
	l.armRegistryPoll()
	obs := &reconcile.Observed{Canary: l.canary.progress, Now: l.observed.engine, Containers: l.containers, Holds: l.holds, RollingBack: l.rollbacks,
		RecreateBefore: l.recreate, SkipHealth: l.skipHealth, Restarts: l.restarts, Restarting: l.restartsInFlight(),
		Draining: l.drainingNow(), Downtime: l.lastDown}
	plan := func() {
		if l.resolved == nil {
			l.plan = reconcile.Unresolved(l.prefix, obs) // the slots only, judged by nothing
			return
		}
		r := l.rev.pins.apply(l.resolved) // with the standing pins' revisions in place
		if l.onSwarm() {
			l.plan = reconcile.DiffSwarm(r, l.swarmObserved())
			MarkPins(&l.plan, l.rev.pins.views)
			return
		}
		l.plan = reconcile.Diff(r, obs)
		if l.opts.Unattended == nil {
			// The console shows the whole roll: the steps that follow
			// once the waits end. Nobody reads them headless.
			reconcile.AddThen(r, obs, &l.plan)
		}
		MarkPins(&l.plan, l.rev.pins.views)
	}
	plan()
	if l.backUp() {
		// A slot is back up: the next stop-first steps say how long
		// it was down.
		obs.Downtime = l.lastDown
		plan()
	}
	l.dropStaleHolds()
	l.endStalePins()
	l.logWaits()
	l.forgetRestarts(&l.observer, l.skipHealth)
	l.forgetGoneSteps()
	l.checkFailures()
}

// drainingNow is the containers whose pre_stop ran in a stop or roll in
// flight (drained, DESIGN §1); nil when there are none.
func (rn *runner) drainingNow() map[string]bool {
	var out map[string]bool
	for _, r := range rn.running {
		if r.Drain != nil { // its drain began: it is leaving
			if out == nil {
				out = map[string]bool{}
			}
			out[r.Step.ContainerID] = true
		}
	}
	return out
}

// restartsInFlight is the containers whose restart step runs now, for
// rule 4's limit on restarts at once; nil when there are none.
func (rn *runner) restartsInFlight() map[string]bool {
	var out map[string]bool
	for _, r := range rn.running {
		if r.Step.Action == reconcile.ActRestart {
			if out == nil {
				out = map[string]bool{}
			}
			out[r.Step.ContainerID] = true
		}
	}
	return out
}

// restartResetAfter is how long a container rollcall restarted must run
// healthy before its crash backoff starts over, as docker's restart manager.
const restartResetAfter = 10 * time.Second

// forgetRestarts forgets the restarts of the containers gone from o's
// list, and of those its plan says have run healthy for
// restartResetAfter by the plan's Now (skipHealth: emergency, whose
// unverified does not count).
func (rn *runner) forgetRestarts(o *observer, skipHealth bool) {
	if len(rn.restarts) == 0 {
		return
	}
	byID := map[string]*docker.Container{}
	for i := range o.containers {
		byID[o.containers[i].ID] = &o.containers[i]
	}
	for id := range rn.restarts {
		c := byID[id]
		if c == nil {
			delete(rn.restarts, id)
			continue
		}
		// Diff's word on it: healthy by its healthcheck, or without one
		// past min_ready (emergency's unverified does not count).
		st, judged := o.plan.Container(id)
		verified := judged && (st.Condition == reconcile.ConditionHealthy || (st.Condition == reconcile.ConditionUnverified && !skipHealth))
		if verified && o.observed.engine.Sub(c.StartedAt) >= restartResetAfter {
			delete(rn.restarts, id)
		}
	}
}

// armWake sets the wake alarm for the earliest moment the plan may change
// with no event: a wait's end, or (in auto) a failed step's retry.
func (l *loop) armWake() {
	var due []time.Duration
	for _, s := range l.plan.Steps() {
		if s.Action == reconcile.ActWait && !s.Until.IsZero() {
			due = append(due, s.Until.Sub(l.engineNow()))
		}
	}
	if l.mode == ModeAuto {
		for _, r := range l.retries {
			due = append(due, r.at.Sub(l.wallNow()))
		}
	}
	if l.onSwarm() {
		due = append(due, l.swarmPoll()) // Swarm says nothing of its tasks by itself
	}
	if len(due) == 0 {
		l.wake.Stop()
		return
	}
	l.wake.Set(max(slices.Min(due), l.opts.Coalesce))
}

// logWaits logs what the plan waits for (a booting container, a crash
// backoff, the next slot's turn) as it changes, for a session nobody
// watches: each wait once, and again when its reason changes.
func (l *loop) logWaits() {
	if l.opts.Log == nil && l.opts.Facts == nil {
		return
	}
	for _, s := range l.newWaits(l.plan) {
		l.fact(Fact{Kind: FactWaiting, Step: s})
	}
}

// newWaits are the waits of p not logged yet as they read now, in the
// plan's order; they are logged from now on.
func (m *marks) newWaits(p reconcile.Plan) []reconcile.Step {
	var out []reconcile.Step
	now := map[string]string{}
	for _, s := range p.Steps() {
		if s.Executable() {
			continue
		}
		now[s.Key()] = s.Reason
		if m.waitsLogged[s.Key()] != s.Reason {
			out = append(out, s)
		}
	}
	m.waitsLogged = now
	return out
}
