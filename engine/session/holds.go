package session

import (
	"slices"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/state"
)

// Holds (§5 rule 9) outlive the process: engine/state keeps them in a
// small JSON file beside the journal, one per engine and prefix, and they
// are dropped once the desired spec of their workload changes, or lifted
// by the operator (`rollcall retry WORKLOAD`, the Retry intent).
//
// What the session decides about them is here. The holds that count are
// the loop's own (l.holds): a hold stands in the plan the moment the
// session puts it. The file is written beside the loop, one write at a
// time (the holds worker): a session writes only what it changed itself (a
// hold added, a hold dropped), and reads the file again beside each
// relist, so a hold lifted by `rollcall retry` while it runs is lifted in
// it too. While a write is under way no step starts, and a plan is good
// again only from a list taken after it ended.

// Hold is one spec on hold.
type Hold = state.Hold

// ReadHolds reads the holds of an engine and prefix kept in dir: workload
// -> spec hashes on hold. No file means no holds.
func ReadHolds(dir string, info docker.EngineInfo, prefix string) (map[string]map[string]bool, error) {
	return state.ReadHolds(dir, info, prefix)
}

// ListHolds reads the holds of an engine and prefix kept in dir, sorted by
// workload, then by when they were put on hold. No file means no holds.
func ListHolds(dir string, info docker.EngineInfo, prefix string) ([]Hold, error) {
	return state.ListHolds(dir, info, prefix)
}

// LiftHolds lifts every hold of workload kept in dir for an engine and
// prefix, and returns the holds it lifted (none: the workload had none).
// It is the operator's `rollcall retry`; the caller journals it. A session
// running meanwhile lifts them too at its next relist.
func LiftHolds(dir string, info docker.EngineInfo, prefix, workload string) ([]Hold, error) {
	return state.LiftHolds(dir, info, prefix, workload)
}

// holdsState is what the loop knows of the holds file.
type holdsState struct {
	// disk is the file as last read or written; a hold in it that a later
	// read no longer has was lifted by another process (`rollcall retry`).
	disk state.Holds
	// gen moves as a write begins and as it ends: a read that began
	// before either may be older than what the write read, and is not
	// taken.
	gen uint64
	// readErr is the last read's error, said once.
	readErr string
	// writing is the write under way (one at a time), since when (wall
	// clock); again: the session's holds changed meanwhile, so another
	// write follows it.
	writing *holdsJob
	since   time.Time
	again   bool
}

// holdsRead is a read of the holds file beside the loop.
type holdsRead struct {
	gen  uint64
	path string
	recs state.Holds
	err  error
}

// holdsJob is one write of the holds file, run by the holds worker: what
// the session added and dropped since the file as it last knew it (base).
type holdsJob struct {
	path    string
	base    state.Holds
	added   []state.Hold
	dropped [][2]string // workload, hash
}

// expected is the file as the job leaves it, if nobody else changed it.
func (j *holdsJob) expected() state.Holds {
	out := j.base.Clone()
	for _, h := range j.added {
		if !out.Has(h.Workload, h.Hash) {
			out.Add(h)
		}
	}
	for _, d := range j.dropped {
		out.Remove(d[0], d[1])
	}
	return out
}

// holdsWritten is what came of a holdsJob: the file as it now keeps the
// holds.
type holdsWritten struct {
	recs state.Holds
	err  error
}

// doHolds runs one write of the holds file, beside the loop: under the
// file's lock, it adds and drops what the session changed, and keeps what
// another process changed meanwhile.
func doHolds(j holdsJob) holdsWritten {
	recs, err := state.UpdateHoldsFile(j.path, state.HoldsLockWait, func(cur state.Holds) bool {
		for _, h := range j.added {
			if !cur.Has(h.Workload, h.Hash) {
				cur.Add(h)
			}
		}
		for _, d := range j.dropped {
			cur.Remove(d[0], d[1])
		}
		return true
	})
	return holdsWritten{recs: recs, err: err}
}

// holdsReader is what a relist calls beside the loop, with the engine's
// identity, to read the holds file of prefix in the state directory dir;
// nil when holds are kept in memory (no dir).
func (d *disk) holdsReader(dir, prefix string) func(docker.EngineInfo) *holdsRead {
	if dir == "" {
		return nil
	}
	path, gen := d.holdsPath, d.hs.gen
	return func(info docker.EngineInfo) *holdsRead {
		if path == "" {
			path = state.HoldsPath(dir, info, prefix)
		}
		recs, err := state.ReadHoldsFile(path)
		return &holdsRead{gen: gen, path: path, recs: recs, err: err}
	}
}

// onHoldsRead takes a read of the holds file in, before the plan is made:
// the first one merges the holds kept from before into the session's, a
// later one lifts what another process lifted (and holds what it held).
func (l *loop) onHoldsRead(r *holdsRead) {
	if r == nil || !l.infoOK {
		return
	}
	if r.err != nil {
		if msg := r.err.Error(); msg != l.hs.readErr {
			l.hs.readErr = msg
			l.fact(Fact{Kind: FactStateError, StateErr: &StateError{File: StateHolds, Err: msg}})
		}
		if !l.holdsLoaded {
			l.holdsLoaded, l.holdsPath, l.hs.disk = true, r.path, state.Holds{}
		}
		return
	}
	l.hs.readErr = ""
	if !l.holdsLoaded {
		l.holdsLoaded, l.holdsPath = true, r.path
		l.hs.disk = state.Holds{}
		extra := false // held in memory before the file was read: written down
		for w, hs := range l.holds {
			for h := range hs {
				extra = extra || !r.recs.Has(w, h)
			}
		}
		l.takeDiskHolds(r.recs, l.hs.disk, false)
		if n := len(r.recs); n > 0 {
			l.log(levelInfo, "holds kept from before", "holds", n)
		}
		if extra {
			l.saveHolds()
		}
		return
	}
	if r.gen != l.hs.gen || r.path != l.holdsPath || l.hs.writing != nil {
		return // a write began or ended since: what it read is newer
	}
	l.takeDiskHolds(r.recs, l.hs.disk, true)
}

// takeDiskHolds brings the session's holds in line with the file as now
// read or written (recs), against the file as the session expected it
// (base): a hold base had and recs has not was lifted by another process,
// one recs has anew was put by another. What the session itself changed
// since is left as it is.
func (l *loop) takeDiskHolds(recs, base state.Holds, say bool) {
	for w, hs := range base {
		for h := range hs {
			if !recs.Has(w, h) && l.holds[w][h] {
				l.unhold(w, h)
				if say {
					l.fact(Fact{Kind: FactHoldLifted, Hold: &HoldFact{Workload: w, Hashes: []string{h}, Lifted: LiftedElsewhere}})
				}
			}
		}
	}
	for w, hs := range recs {
		for h := range hs {
			if !base.Has(w, h) && !l.holds[w][h] {
				rec := recs[w][h]
				l.guards.hold(w, h, holdWhy{rec.Cause, rec.Reason})
				if say {
					l.fact(Fact{Kind: FactHoldSet, Hold: &HoldFact{Workload: w, Hashes: []string{h}, Cause: rec.Cause, Detail: rec.Reason, Elsewhere: true}})
				}
			}
		}
	}
	l.hs.disk = recs.Clone()
}

// unhold drops one hold from the session, with what hangs on it: an
// operator rollback of that spec under way, and the automatic rollbacks
// that put it on hold (the header would say it is still on hold).
func (l *loop) unhold(w, h string) {
	l.guards.unhold(w, h)
	l.runner.unhold(w, h)
}

// unhold drops the hold of workload w's spec h.
func (g *guards) unhold(w, h string) {
	delete(g.holds[w], h)
	if len(g.holds[w]) == 0 {
		delete(g.holds, w)
	}
	delete(g.holdWhys[w], h)
	if len(g.holdWhys[w]) == 0 {
		delete(g.holdWhys, w)
	}
}

// unhold forgets the rollbacks of workload w's spec h: the operator's
// under way, and failure_action's that put it on hold.
func (r *runner) unhold(w, h string) {
	if r.rollbacks[w] == h {
		delete(r.rollbacks, w)
	}
	r.rolledBack = slices.DeleteFunc(r.rolledBack, func(rb RollbackInfo) bool { return rb.Workload == w && rb.Hash == h })
}

// saveHolds has the holds worker write down what the session changed in
// its holds since the file was last read or written (a hold added, a hold
// dropped); onHoldsWritten takes in what another process changed
// meanwhile. It writes nothing before the file was first read, nor without
// a state directory, and one write at a time: a change while one is under
// way is written when it ends. Until then no step starts (act), and the
// plan in hand is spent.
func (l *loop) saveHolds() {
	if l.holdsPath == "" || !l.holdsLoaded || l.diskGone {
		return
	}
	if l.hs.writing != nil {
		l.hs.again = true
		return
	}
	job := &holdsJob{path: l.holdsPath, base: l.hs.disk.Clone()}
	for w, hs := range l.holds {
		for h := range hs {
			if !l.hs.disk.Has(w, h) {
				why := l.holdWhy(w, h)
				job.added = append(job.added, state.Hold{Workload: w, Hash: h, Since: l.wallNow().UTC(), By: l.opts.User, Cause: why.cause, Reason: why.detail})
			}
		}
	}
	for w, hs := range l.hs.disk {
		for h := range hs {
			if !l.holds[w][h] {
				job.dropped = append(job.dropped, [2]string{w, h})
			}
		}
	}
	if len(job.added) == 0 && len(job.dropped) == 0 {
		return
	}
	l.hs.gen++
	l.hs.writing, l.hs.since = job, l.wallNow()
	l.spend()
	l.holdsW.Push(*job)
}

// onHoldsWritten takes a write of the holds file in. When the file could
// not be changed, the session's holds stand, and the next change carries
// this one.
func (l *loop) onHoldsWritten(w holdsWritten) {
	job := l.hs.writing
	if job == nil {
		return
	}
	l.hs.writing = nil
	l.hs.gen++
	l.spend()
	l.requestFetch()
	l.diskDone("holds")
	if w.err != nil {
		l.fact(Fact{Kind: FactStateError, StateErr: &StateError{File: StateHolds, Write: true, Err: w.err.Error()}})
	} else {
		l.takeDiskHolds(w.recs, job.expected(), true)
	}
	if l.hs.again {
		l.hs.again = false
		l.saveHolds()
	}
	l.act()
}

// dropStaleHolds lifts the holds of a workload whose desired spec changed
// (rule 9: "until the desired spec changes"), and of workloads no longer
// desired.
func (l *loop) dropStaleHolds() {
	if l.resolved == nil || len(l.holds) == 0 {
		return
	}
	changed := false
	for w, hs := range l.holds {
		rw := l.resolved.Workload(w)
		if rw != nil && rw.Err != nil {
			continue // not resolved: cannot tell
		}
		for h := range hs {
			if (rw == nil || rw.Hash != h) && !l.rev.pins.pinnedHash(w, h) { // a pinned revision's hold stands
				l.unhold(w, h)
				changed = true
				l.fact(Fact{Kind: FactHoldLifted, Hold: &HoldFact{Workload: w, Hashes: []string{h}, Lifted: LiftedSpecChanged}})
			}
		}
	}
	if changed {
		l.saveHolds()
	}
}

// retry is the operator's Retry: every hold of workload is lifted once its
// journal line is written (no audit, no action).
func (l *loop) retry(workload string) {
	if !l.acting("lift a hold") {
		return
	}
	pinned := l.liftPin(workload) // and its pin (revisions_pin.go)
	canary := l.liftCanaryHold(workload)
	pulled := l.retryPullNow(workload) // a failed pull goes again at once (pull.go)
	if l.resumeSwarm(workload) {       // an update Swarm paused is sent again (swarm.go)
		l.decided(Decision{Kind: DecisionRetrySwarm, Workload: workload})
		l.unpause() // the same failure paused the session: the retry is its way on
		l.spend()
		l.requestFetch()
		pulled = true
	}
	if canary {
		l.spend() // the plan in hand has the canary's hold
		l.requestFetch()
	}
	hashes := sortedKeys(l.holds[workload])
	if len(hashes) == 0 {
		if !pinned && !canary && !pulled {
			l.reply("retry %s: no spec of it is on hold", workload)
		}
		return
	}
	lift := Fact{Kind: FactHoldLifted, Hold: &HoldFact{Workload: workload, Hashes: hashes, By: l.opts.User, Lifted: LiftedByOperator}}
	l.writeFirst(lift, l.lineNow(), func(err error) {
		if err != nil {
			return // not journaled: the hold stays (no audit, no action)
		}
		for _, h := range hashes {
			l.unhold(workload, h)
		}
		l.saveHolds()
		l.fact(lift)
		l.spend() // the plan in hand has the hold
		l.requestFetch()
	})
}
