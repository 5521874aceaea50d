package session

import (
	"context"
	"errors"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// errPullUnneeded is why a pull in flight is cancelled: the desired state
// changed, and no workload of it runs that image any more.
var errPullUnneeded = errors.New("cancelled: the desired state no longer needs this image")

// pullState is the pull steps in flight (DESIGN §3 Images): each runs
// under a context of its own, so that a desired change that no longer
// needs its image cancels it, and reports its progress to the loop.
type pullState struct {
	c         chan reconcile.PullProgress // from the steps' goroutines; the loop shows the latest
	cancels   map[string]context.CancelCauseFunc
	cancelled map[string]bool // keys cancelled because no longer needed
	said      map[string]int  // the mark (pullMark) last said in an event, by key
}

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
	ctx, cancel := context.WithCancelCause(parent)
	p.cancels[s.Key()] = cancel
	c := p.c
	return ctx, func(pp reconcile.PullProgress) {
		select {
		case c <- pp:
		default: // the loop is busy: a later report says as much
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
	l.event(Event{Kind: EventPulling, Step: pp.Step, Pull: &pp})
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
		cancel(errPullUnneeded)
		l.note("pull of %s for %s: %v", r.Step.Container, r.Step.Workload, errPullUnneeded)
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
