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
	l.reresolve = l.reresolve || l.resolved != nil
	if l.evCancel != nil {
		l.evCancel()
	}
	ctx, cancel := context.WithCancel(l.ctx)
	l.evCancel = cancel
	l.evc, l.errc = l.raw.Events(ctx, l.prefix, time.Time{})
	l.requestFetch()
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
	l.events = append(l.events, ev)
	if len(l.events) > 2*maxEvents {
		l.events = append(l.events[:0:0], l.events[len(l.events)-maxEvents:]...)
	}
	if ev.Action == "die" {
		l.onDie(ev)
	}
	if !docker.Herald(ev.Action) {
		l.requestFetch()
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
	i := slices.IndexFunc(l.containers, func(c docker.Container) bool { return c.ID == ev.ContainerID })
	if i < 0 || l.containers[i].State != docker.StateRunning {
		return
	}
	c := l.containers[i]
	if reconcile.NormRestart(c.Limits.Restart) != "no" {
		return // the engine restarts it itself
	}
	c.State, c.Health, c.FinishedAt = docker.StateExited, docker.HealthNone, ev.Time
	if code, err := strconv.Atoi(ev.Attributes["exitCode"]); err == nil {
		c.ExitCode = code
	}
	patched := slices.Clone(l.containers)
	patched[i] = c
	l.containers = patched
	l.planNow = l.now()
	l.diff()
	l.patchedID = c.ID
	l.act()
	l.patchedID = ""
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
	l.resub.set(nextBackoff(&l.evFailures))
}

// requestFetch asks for a relist: at once when none ran for Coalesce, else
// at the end of that window; one in flight is followed by one more.
func (l *loop) requestFetch() {
	if l.fetching {
		l.refetch = true
		return
	}
	if l.throttle.armed() {
		return // already due, by coalescing or by backoff
	}
	if wait := l.opts.Coalesce - time.Since(l.lastFetch); wait > 0 {
		l.throttle.set(wait)
		return
	}
	l.startFetch()
}

type fetchResult struct {
	epoch      uint64
	ends       uint64    // the loop's count of ended steps as the list began
	at         time.Time // by Options.Now, as the list started: the plan's Now
	listed     time.Time // wall clock, as the list started
	resolvedFP string    // the desired state resolved is of this fingerprint; resolved nil: not resolved anew
	info       *docker.EngineInfo
	containers []docker.Container
	resolved   *spec.ResolvedDesired
	holds      *holdsRead // the holds file as read with the list; nil without a state directory
	pins       *pinsRead  // the pins file as read with the list, the pinned images looked up (revisions_pin.go)
	err        error
}

// startFetch lists the engine and resolves the desired state beside the loop.
func (l *loop) startFetch() {
	l.throttle.stop()
	l.fetching, l.refetch = true, false
	l.lastFetch = time.Now()
	epoch, ends := l.stamp()
	at, desired, prefix, needInfo := l.now(), l.desired, l.prefix, !l.infoOK || !l.connected
	// Images are resolved once per desired state, again after an image
	// event or a broken stream (a tag may be rebuilt), and while one of
	// them cannot be resolved.
	if !l.needResolve() {
		desired = nil
	}
	fp := l.desiredFP
	c := l.scoped() // its lists vouch for the managed containers a step may touch
	readHolds, readPins, info := l.holdsReader(), l.pinsReader(), l.info
	goReport(l, l.fetched, func() fetchResult {
		r := fetchResult{epoch: epoch, ends: ends, at: at, listed: time.Now(), resolvedFP: fp}
		if needInfo {
			info, err := c.Info(l.ctx)
			if err != nil {
				r.err = err
				return r
			}
			r.info = &info
		}
		// Resolving the images beside the list keeps a relist to the
		// slower of the two calls.
		resolved := make(chan *spec.ResolvedDesired, 1)
		go func() {
			if desired == nil {
				resolved <- nil
				return
			}
			resolved <- spec.Resolve(l.ctx, desired, c)
		}()
		r.containers, r.err = c.List(l.ctx, prefix)
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
		l.throttle.set(nextBackoff(&l.listFailures))
		return
	}
	l.listFailures = 0
	if r.info != nil {
		l.info, l.infoOK = *r.info, true
	}
	if l.evc != nil {
		l.setConnected(true, "")
	}
	l.onHoldsRead(r.holds)
	l.onPinsRead(r.pins)
	l.containers = r.containers
	if r.resolved != nil {
		l.resolved, l.resolvedFP, l.reresolve = r.resolved, r.resolvedFP, false
	}
	l.listed(r.epoch, r.ends)
	l.planNow, l.planListed = r.at, r.listed
	l.diff()
	l.recordRevisions()
	if l.mode.Acting() && l.lock == nil {
		l.takeLock()
	}
	l.readHolder()
	if l.rollout != nil && l.fresh() && l.plan.Empty() && l.rollout.fp == l.desiredFP {
		l.endRollout("the desired state is reached")
	}
	l.act()
	l.armWake()
	if l.refetch {
		l.requestFetch()
	}
}

// needResolve reports whether the next relist resolves the images anew.
func (l *loop) needResolve() bool {
	if l.desired == nil {
		return false
	}
	if l.resolved == nil || l.resolvedFP != l.desiredFP || l.reresolve {
		return true
	}
	for _, w := range l.resolved.Workloads {
		if w.Err != nil {
			return true
		}
	}
	return false
}

// diff makes the plan of the latest list and keeps the bookkeeping that
// hangs on it current.
func (l *loop) diff() {
	obs := &reconcile.Observed{Now: l.planNow, Containers: l.containers, Holds: l.holds, RollingBack: l.rollbacks,
		RecreateBefore: l.recreate, SkipHealth: l.skipHealth, Restarts: l.restarts, Restarting: l.restartsInFlight(),
		Draining: l.drainingNow()}
	if l.resolved == nil {
		l.plan = reconcile.Unresolved(l.prefix, obs) // the slots only, judged by nothing
	} else {
		r := l.applyPins() // l.resolved, with the standing pins' revisions in place
		l.plan = reconcile.Diff(r, obs)
		if l.opts.Unattended == nil {
			// The console shows the whole roll: the steps that follow
			// once the waits end. Nobody reads them headless.
			reconcile.AddThen(r, obs, &l.plan)
		}
		MarkPins(&l.plan, l.rev.pins.views)
	}
	l.dropStaleHolds()
	l.endStalePins()
	l.logWaits()
	l.forgetRestarts()
	l.forgetGoneSteps()
	l.checkFailures()
}

// drainingNow is the containers whose pre_stop ran in a stop or roll in
// flight (drained, DESIGN §1); nil when there are none.
func (l *loop) drainingNow() map[string]bool {
	var out map[string]bool
	for _, r := range l.running {
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
func (l *loop) restartsInFlight() map[string]bool {
	var out map[string]bool
	for _, r := range l.running {
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

func (l *loop) forgetRestarts() {
	if len(l.restarts) == 0 {
		return
	}
	byID := map[string]*docker.Container{}
	for i := range l.containers {
		byID[l.containers[i].ID] = &l.containers[i]
	}
	for id := range l.restarts {
		c := byID[id]
		if c == nil {
			delete(l.restarts, id)
			continue
		}
		// Diff's word on it: healthy by its healthcheck, or without one
		// past min_ready (emergency's unverified does not count).
		st, judged := l.plan.Container(id)
		verified := judged && (st.Condition == reconcile.ConditionHealthy || (st.Condition == reconcile.ConditionUnverified && !l.skipHealth))
		if verified && l.planNow.Sub(c.StartedAt) >= restartResetAfter {
			delete(l.restarts, id)
		}
	}
}

// armWake sets the wake alarm for the earliest moment the plan may change
// with no event: a wait's end, or (in auto) a failed step's retry.
func (l *loop) armWake() {
	var due []time.Duration
	for _, s := range l.plan.Steps() {
		if s.Action == reconcile.ActWait && !s.Until.IsZero() {
			due = append(due, s.Until.Sub(l.now()))
		}
	}
	if l.mode == ModeAuto {
		for _, r := range l.retries {
			due = append(due, time.Until(r.at))
		}
	}
	if len(due) == 0 {
		l.wake.stop()
		return
	}
	l.wake.set(max(slices.Min(due), l.opts.Coalesce))
}

// logWaits logs what the plan waits for (a booting container, a crash
// backoff, the next slot's turn) as it changes, for a session nobody
// watches: each wait once, and again when its reason changes.
func (l *loop) logWaits() {
	if l.opts.Log == nil && l.opts.Events == nil {
		return
	}
	now := map[string]string{}
	for _, s := range l.plan.Steps() {
		if s.Executable() {
			continue
		}
		now[s.Key()] = s.Reason
		if l.waitsLogged[s.Key()] != s.Reason {
			l.event(Event{Kind: EventWaiting, Step: s})
		}
	}
	l.waitsLogged = now
}
