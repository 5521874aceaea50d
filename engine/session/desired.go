package session

import (
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/spec"
)

// DefaultSettle is how long a changed desired state must stay the same
// before a session acts on it, so a writer that pauses mid-file (a valid
// first half, then the rest) is never acted on.
const DefaultSettle = 2 * time.Second

type loadResult struct {
	desired *spec.Desired
	err     error
}

// startLoad loads the source beside the loop; a change during a load
// loads again after it. Until it is loaded nothing runs: the state in hand
// may be the one the change replaces.
func (l *loop) startLoad() {
	l.spend()
	if l.loading {
		l.reload = true
		return
	}
	l.loading = true
	src := l.opts.Source
	goReport(l, l.loaded, func() loadResult {
		d, err := src.Load(l.ctx)
		return loadResult{desired: d, err: err}
	})
}

// onLoaded takes a loaded desired state, or keeps the last good one and
// shows the error.
func (l *loop) onLoaded(r loadResult) {
	l.loading = false
	if l.reload {
		l.reload = false
		defer l.startLoad()
	}
	if r.err != nil {
		if l.ctx.Err() == nil {
			if l.sourceErr == nil || l.sourceErr.Error() != r.err.Error() {
				l.logSourceErr(r.err)
			}
			l.sourceErr = r.err
			// A file in flux: whatever it settles to must then stay put
			// for the whole settle time.
			l.unsettle(l.wallNow(), l.opts.Settle)
		}
		return
	}
	d := r.desired
	if l.opts.Prefix != "" && d.Prefix != l.opts.Prefix {
		cp := *d
		cp.Prefix = l.opts.Prefix
		d = &cp
	}
	if d.OnSwarm() != l.onSwarm() {
		// What the session drives was chosen as it started (Options.Swarm):
		// a plain engine's containers or a swarm's services.
		have, want := "a plain engine", "a swarm (engine: swarm)"
		if l.onSwarm() {
			have, want = want, "a plain engine (engine: docker)"
		}
		err := fmt.Errorf("%s: asks for %s, while this session drives %s: restart rollcall to change it; the last good desired state stays", d.Source, want, have)
		if l.sourceErr == nil || l.sourceErr.Error() != err.Error() {
			l.logSourceErr(err)
		}
		l.sourceErr = err
		return
	}
	switch {
	case l.prefix == "":
		l.prefix = d.Prefix
	case d.Prefix != l.prefix && l.desired == nil && l.opts.Prefix == "":
		// The first good desired state after a broken start: its prefix
		// replaces the default that stood in.
		l.prefix = d.Prefix
		l.subscribe()
		if l.lock != nil && l.opts.LockPath == "" && !l.callerLocks() {
			l.releaseLock()
			l.takeLock()
		}
	case d.Prefix != l.prefix:
		err := fmt.Errorf("%s: prefix %q differs from the running session's %q: restart rollcall to change it; the last good desired state stays", d.Source, d.Prefix, l.prefix)
		if l.sourceErr == nil || l.sourceErr.Error() != err.Error() {
			l.logSourceErr(err)
		}
		l.sourceErr = err
		return
	}
	again := l.sourceErr != nil
	l.sourceErr = nil
	fp := loopkit.PlanFingerprint(d)
	if l.desired != nil && fp == l.desiredFP {
		// Same prefix and workloads: its other keys (notify, proxy,
		// registry_poll, warnings) are taken as they come, with no new plan.
		l.desired = d
		if again {
			l.fact(Fact{Kind: FactDesired, Source: l.opts.Source.Name(), Workloads: len(d.Workloads), Again: true})
		}
		return
	}
	first := l.desired == nil
	l.desired, l.desiredFP = d, fp
	l.gateOnNewDesired(l.opts.Gated)
	if !first {
		l.unsettle(l.wallNow(), l.opts.Settle)
	}
	// log adds the prefix (the session's, which d's is by now).
	l.fact(Fact{Kind: FactDesired, Source: l.opts.Source.Name(), Workloads: len(d.Workloads), Again: again, Changed: true})
	if l.opts.Recreate && !l.recreated {
		l.recreated = true
		at := l.engineNow()
		for name := range d.Workloads {
			l.recreate[name] = at
		}
	}
	l.spend()
	if l.rollout != nil && l.rollout.fp != fp {
		l.endRollout(ApprovalEnd{Cause: ApprovalDesiredChange})
	}
	l.blastCheck = true
	l.refusal = nil // weighed again against the new plan
	if l.confirm != nil && l.confirm.Kind == ConfirmBlast {
		l.confirm = nil
	}
	if p := l.pause; p != nil && !p.ByOperator {
		// A failure pause is about the spec that failed; a new desired
		// state is the fix, or is weighed on its own.
		l.fact(Fact{Kind: FactResumed, Pause: p, ByChange: true})
		l.pause = nil
	}
	if l.resync != nil { // after start: the first relist is started by subscribe
		l.requestFetch()
	}
}

// unsettle starts the settle time over at now (wall clock): nothing runs
// until the desired source has been quiet for settle (Options.Settle).
func (d *desire) unsettle(now time.Time, settle time.Duration) {
	d.settleUntil = now.Add(settle)
	d.settleAlarm.Set(settle)
}

// settleLeft is how long, from now (wall clock), the desired state still
// has to stay put.
func (d *desire) settleLeft(now time.Time) time.Duration {
	return max(d.settleUntil.Sub(now), 0)
}

func (l *loop) logSourceErr(err error) {
	l.fact(Fact{Kind: FactDesiredError, Source: l.opts.Source.Name(), Err: err})
}
