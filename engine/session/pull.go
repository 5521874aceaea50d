package session

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// errPullUnneeded is why a pull in flight is cancelled: the desired state
// changed, and no workload of it runs that image any more.
var errPullUnneeded = errors.New("cancelled: the desired state no longer needs this image")

// errPullSessionEnded is why a pull in flight is cancelled as the session
// ends (q in the console, a signal to apply or the agent): the journal
// says so.
var errPullSessionEnded = errors.New("cancelled: the session ended (q or a signal)")

// pullState is the pull steps in flight (DESIGN §3 Images): each runs
// under a context of its own, so that a desired change that no longer
// needs its image cancels it, and reports its progress to the loop.
type pullState struct {
	c         chan reconcile.PullProgress // from the steps' goroutines; the loop shows the latest
	cancels   map[string]context.CancelCauseFunc
	cancelled map[string]bool // keys cancelled because no longer needed
	said      map[string]int  // the mark (pullMark) last said in an event, by key

	// The registry poll (registry_poll): the images are resolved again
	// every so often while a workload follows a tag (`pull: always`).
	poll     loopkit.Alarm
	awaiting bool // the poll fired: its resolve is not taken in yet
	pollMiss int  // polls in a row the registry could not answer: the next waits longer
	asked    askedRegistry
}

// askedRegistry keeps what the registry said of each tag (its digest, or
// its error) from one registry poll to the next: the images are resolved
// at many relists (a pull pending, an image event), and the registry is
// asked once per poll, never at each of them.
type askedRegistry struct {
	mu      sync.Mutex
	answers map[string]answer
}

type answer struct {
	digest string
	err    error
}

// forget makes the next resolve ask the registry again.
func (a *askedRegistry) forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = nil
}

// over is c, asking the registry through a once per poll.
func (a *askedRegistry) over(c docker.Client) spec.RegistryLookup { return askedOnce{Client: c, a: a} }

type askedOnce struct {
	docker.Client
	a *askedRegistry
}

// DistributionInspect answers from the last poll's answer, or asks the
// registry (beside the loop) and keeps its answer. The end of the
// session's context is not kept as an answer.
func (o askedOnce) DistributionInspect(ctx context.Context, ref string) (string, error) {
	o.a.mu.Lock()
	got, ok := o.a.answers[ref]
	o.a.mu.Unlock()
	if ok {
		return got.digest, got.err
	}
	digest, err := o.Client.DistributionInspect(ctx, ref)
	if ctx.Err() == nil {
		o.a.mu.Lock()
		if o.a.answers == nil {
			o.a.answers = map[string]answer{}
		}
		o.a.answers[ref] = answer{digest, err}
		o.a.mu.Unlock()
	}
	return digest, err
}

// maxPollWait bounds how long a registry that cannot answer makes the
// poll wait.
const maxPollWait = time.Hour

// pullMark is what an event is said for: each layer done, and each tenth
// of the bytes.
func pullMark(p reconcile.PullProgress) int { return p.LayersDone*100 + int(10*p.Fraction()) }

// pullRun is what a pull step s runs under: a context of its own under
// parent, and the progress callback that hands its progress to the loop
// without ever blocking the pull. Called on the loop.
func (l *loop) pullRun(parent context.Context, s reconcile.Step) (context.Context, func(reconcile.PullProgress)) {
	p := &l.pulls
	if p.c == nil {
		p.c = make(chan reconcile.PullProgress, 8)
		p.cancels, p.cancelled, p.said = map[string]context.CancelCauseFunc{}, map[string]bool{}, map[string]int{}
	}
	// Not a child of parent's cancellation, which would carry no cause:
	// the end of parent cancels it with errPullSessionEnded.
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(parent))
	stop := context.AfterFunc(parent, func() { cancel(errPullSessionEnded) })
	p.cancels[s.Key()] = func(cause error) { stop(); cancel(cause) }
	c := p.c
	return ctx, func(pp reconcile.PullProgress) {
		for { // never blocks: with the loop busy, the oldest report goes, so the last one always reaches it
			select {
			case c <- pp:
				return
			default:
			}
			select {
			case <-c:
			default:
			}
		}
	}
}

// drainPullProgress takes every progress report waiting.
func (l *loop) drainPullProgress() {
	for l.pulls.c != nil {
		select {
		case pp := <-l.pulls.c:
			l.onPulled(pp)
		default:
			return
		}
	}
}

// onPulled shows a pull's progress in its running step, and reports it as
// an event each time a layer or a tenth of the bytes is done.
func (l *loop) onPulled(pp reconcile.PullProgress) {
	r := l.running[pp.Step.Key()]
	if r == nil {
		return
	}
	r.Pull = &pp
	if n, ok := l.pulls.said[pp.Step.Key()]; ok && n == pullMark(pp) {
		return
	}
	l.pulls.said[pp.Step.Key()] = pullMark(pp)
	l.fact(Fact{Kind: FactPulling, Step: pp.Step, Pull: &pp})
}

// cancelUnneededPulls cancels each pull in flight whose image no workload
// of the desired state runs any more. A pull the desired state still
// needs goes on, whatever the plan says meanwhile (its image may be there
// already, the pull ending).
func (l *loop) cancelUnneededPulls() {
	if len(l.pulls.cancels) == 0 || l.desired == nil {
		return
	}
	for key, r := range l.running {
		cancel := l.pulls.cancels[key]
		if cancel == nil || l.pulls.cancelled[key] {
			continue
		}
		if w := l.desired.Workloads[r.Step.Workload]; w != nil && w.Image == r.Step.Container {
			continue
		}
		l.pulls.cancelled[key] = true
		cancel(errPullUnneeded) // its step's end says so (FactStepFailed, errPullUnneeded)
	}
}

// endPull forgets the pull step with key as it ends, and reports whether
// it was cancelled for being no longer needed (then it is not a failure:
// nothing is retried).
func (l *loop) endPull(key string) (cancelled bool) {
	p := &l.pulls
	if cancel := p.cancels[key]; cancel != nil {
		cancel(nil)
	}
	cancelled = p.cancelled[key]
	delete(p.cancels, key)
	delete(p.cancelled, key)
	delete(p.said, key)
	return cancelled
}

// pullKind is the kind of a pull step's failure, "" for any other step.
func pullKind(s reconcile.Step, err error) docker.PullKind {
	if s.Action != reconcile.ActPull {
		return ""
	}
	return docker.PullKindOf(err)
}

// armRegistryPoll starts the registry poll while the desired state follows
// a tag, and stops it once it does not. The poll's resolve taken in, a
// registry that could not answer (rate limited, unreachable, its own
// error) doubles the next wait, up to maxPollWait, and is said; one that
// answered brings it back to registry_poll. Each wait is jittered by a
// tenth, so that agents started together do not ask together.
func (l *loop) armRegistryPoll() {
	p := &l.pulls
	if l.desired == nil || !l.desired.FollowsTags() {
		p.poll.Stop()
		p.awaiting, p.pollMiss = false, 0
		return
	}
	if p.awaiting {
		if l.reresolve || l.resolved == nil {
			return // its resolve is still to come
		}
		p.awaiting = false
		if miss := registryMiss(l.resolved); miss != nil {
			p.pollMiss++
			miss.RetryIn = l.pollWait()
			l.fact(Fact{Kind: FactRegistryMiss, Registry: miss})
		} else {
			p.pollMiss = 0
		}
	}
	if p.poll.Armed() {
		return
	}
	wait := l.pollWait()
	wait += time.Duration((rand.Float64()*0.2 - 0.1) * float64(wait))
	p.poll.Set(wait)
}

// pollWait is how long the next registry poll waits, without its jitter.
func (l *loop) pollWait() time.Duration {
	every := l.desired.RegistryPollEvery()
	if l.opts.RegistryPoll > 0 {
		every = l.opts.RegistryPoll
	}
	return min(every<<min(l.pulls.pollMiss, 16), max(every, maxPollWait))
}

// onRegistryPoll resolves the images again at the next relist: a tag the
// registry moved is then a pull.
func (l *loop) onRegistryPoll() {
	l.pulls.poll.Fired()
	l.pulls.awaiting = true
	l.pulls.asked.forget()
	l.reresolve = true
	l.requestFetch()
}

// registryMiss is the first followed tag the registry could not tell
// where it points, nil when it told for every one.
func registryMiss(r *spec.ResolvedDesired) *RegistryMiss {
	for _, w := range r.Workloads {
		if w.RegistryErr != nil {
			return &RegistryMiss{Image: w.Image, Kind: docker.PullKindOf(w.RegistryErr)}
		}
	}
	return nil
}

// retryPullNow makes a failed pull of workload's, waiting out its
// backoff, go again at once (the Retry intent: the console's `t`): its
// failures are forgotten. It reports whether there was one.
func (l *loop) retryPullNow(workload string) bool {
	for _, s := range l.plan.Executable() {
		if s.Action != reconcile.ActPull || s.Workload != workload || l.retries[s.Key()] == nil {
			continue
		}
		delete(l.retries, s.Key())
		l.decided(Decision{Kind: DecisionRetryPull, Workload: workload, Image: s.Container})
		return true
	}
	return false
}
