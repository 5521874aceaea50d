package session

import (
	"fmt"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// Revisions (DESIGN §12): each spec that reached every slot of a workload
// healthy is kept by engine/state as a revision, so that the workload can
// be returned to it (a pin, revisions_pin.go).
//
// What the session decides is here. A workload has reached its spec when
// every desired slot of it is Ready in Diff's slots (an up-to-date healthy
// container serves it) and its block of the plan has no step and no
// error: then its spec (the pinned revision's, while a pin stands) is
// recorded, with the rollout it belongs to (Options.Rollout). Only a
// session that acts under the host lock records, never in emergency mode
// (health is not known then), and only when a workload reaches another
// spec than the one this session last recorded for it, so not on every
// list. The file is written by the revisions worker, beside the loop; the
// loop only learns how it went.

// Revision is one spec of a workload that reached every slot healthy.
type Revision = state.Revision

// Revisions are the revisions kept, by workload, oldest first.
type Revisions = state.Revisions

// PinRecord is one workload pinned to a revision, as the pins file keeps it.
type PinRecord = state.Pin

// ListRevisions reads the revisions of an engine and prefix kept in dir,
// by workload, oldest first. No directory or no file means none.
func ListRevisions(dir string, info docker.EngineInfo, prefix string) (Revisions, error) {
	return state.ListRevisions(dir, info, prefix)
}

// ListPins reads the pins of an engine and prefix kept in dir, by workload.
func ListPins(dir string, info docker.EngineInfo, prefix string) ([]PinRecord, error) {
	return state.ListPins(dir, info, prefix)
}

// SetPin pins a workload to a revision in dir (`rollcall rollback`); the
// caller journals it. A running session takes it in at its next relist.
// It returns the pin it replaced, if any.
func SetPin(dir string, info docker.EngineInfo, prefix string, p PinRecord) (*PinRecord, error) {
	return state.SetPin(dir, info, prefix, p)
}

// LiftPin lifts the pin of workload kept in dir (`rollcall retry`) and
// returns it (nil: none); the caller journals it.
func LiftPin(dir string, info docker.EngineInfo, prefix, workload string) (*PinRecord, error) {
	return state.LiftPin(dir, info, prefix, workload)
}

// revJobKind is what one job of the revisions worker does.
type revJobKind int

const (
	revRecord revJobKind = iota // keep a revision
	revPick                     // read the revisions and choose the one to pin
	revSetPin                   // write a pin
	revEndPin                   // remove a pin (the same one, or any: lift)
)

// revJob is one job of the revisions worker: a read or a change of the
// revisions or pins file.
type revJob struct {
	kind revJobKind
	path string // the file it reads or changes
	rev  state.Revision
	// pick: the workload's revision number (0: the one before the
	// desired spec, against).
	workload string
	number   int
	against  string
	pin      state.Pin // set; end: the pin to remove (only if the file still has it)
	lift     bool      // end: whatever pin the workload has (retry)
	by       string    // pick: who asks
}

// revDone is what came of a revJob.
type revDone struct {
	job   revJob
	rev   state.Revision // record: as kept; pick: the one chosen
	ended *state.Pin     // end: the pin removed; nil: none was
	err   error
}

// doRev runs one job of the revisions worker, beside the loop.
func doRev(j revJob) revDone {
	d := revDone{job: j}
	switch j.kind {
	case revRecord:
		d.rev, d.err = state.RecordRevision(j.path, state.RevisionsLockWait, j.rev)
	case revPick:
		d.rev, d.err = pickRevision(j)
	case revSetPin:
		_, d.err = state.UpdatePinsFile(j.path, state.RevisionsLockWait, func(cur state.Pins) bool {
			cur[j.pin.Workload] = j.pin
			return true
		})
	case revEndPin:
		_, d.err = state.UpdatePinsFile(j.path, state.RevisionsLockWait, func(cur state.Pins) bool {
			p, ok := cur[j.pin.Workload]
			if !ok || (!j.lift && !p.Same(j.pin)) {
				return false // lifted meanwhile, or pinned anew: that pin stands
			}
			d.ended = &p
			delete(cur, j.pin.Workload)
			return true
		})
	}
	return d
}

// pickRevision reads the revisions file and chooses what a pin of
// j.workload rolls in (PickRevision).
func pickRevision(j revJob) (state.Revision, error) {
	revs, err := state.ReadRevisionsFile(j.path)
	if err != nil {
		return state.Revision{}, err
	}
	return PickRevision(revs, j.workload, j.number, j.against)
}

// PickRevision chooses what a pin of workload rolls in: its revision
// number, or (number 0) by default the one before the desired spec
// (desiredHash; Revisions.Previous). The desired spec itself is never
// pinned: lifting a pin is what returns to it.
func PickRevision(revs Revisions, workload string, number int, desiredHash string) (Revision, error) {
	if len(revs[workload]) == 0 {
		return Revision{}, fmt.Errorf("no revision of %s is kept yet (a revision is kept once a spec runs healthy on every slot)", workload)
	}
	var r Revision
	var ok bool
	if number == 0 {
		if r, ok = revs.Previous(workload, desiredHash); !ok {
			return Revision{}, fmt.Errorf("no revision of %s before the desired spec %s is kept", workload, short(desiredHash))
		}
	} else if r, ok = revs.Find(workload, number); !ok {
		return Revision{}, fmt.Errorf("no revision %d of %s is kept (kept: %s)", number, workload, revisionNumbers(revs[workload]))
	}
	if r.Hash == desiredHash {
		return Revision{}, fmt.Errorf("revision %d of %s is the desired spec: nothing to pin (a retry lifts a pin)", r.Number, workload)
	}
	return r, nil
}

// revisionNumbers lists revisions' numbers: "3, 4, 5".
func revisionNumbers(rs []state.Revision) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprint(r.Number)
	}
	return out
}

// revState is what the loop knows of the revisions and the pins files.
type revState struct {
	w *loopkit.Worker[revJob, revDone]
	// recorded is, by workload, the spec (hash and image ID) this session
	// last recorded (or is recording) as a revision.
	recorded map[string]string

	pins pinState // revisions_pin.go
}

// revisionsPath is the revisions file of the session's engine and
// prefix; "" without a state directory or before the engine is known.
func (l *loop) revisionsPath() string {
	if l.opts.StateDir == "" || !l.infoOK {
		return ""
	}
	return state.RevisionsPath(l.opts.StateDir, l.info, l.prefix)
}

// recordRevisions keeps, as a revision, the spec of each workload that
// has reached it on every slot since this session last recorded one for
// it. It runs after each diff of a fresh list.
func (l *loop) recordRevisions() {
	path := l.revisionsPath()
	diffed := l.rev.pins.diffed(l.resolved)
	if path == "" || diffed == nil || !l.mode.Acting() || !l.lockHeld() || l.skipHealth || l.diskGone {
		return
	}
	if l.rev.recorded == nil {
		l.rev.recorded = map[string]string{}
	}
	for _, w := range diffed.Workloads {
		key := w.Hash + " " + w.ImageID
		if l.rev.recorded[w.Name] == key || !workloadReached(l.plan, &w) {
			continue
		}
		l.rev.recorded[w.Name] = key
		rev := state.Revision{Workload: w.Name, Hash: w.Hash, Image: w.Image, ImageID: w.ImageID, Version: w.Version,
			At: l.wallNow().UTC(), Rollout: l.entry("").Rollout, Spec: w.Workload}
		if p, ok := l.rev.pins.disk[w.Name]; ok && p.Revision.Same(rev) {
			// A pinned revision reached again is kept as it was (its tag,
			// though its containers were created from the image ID).
			kept := p.Revision
			kept.At, kept.Rollout = rev.At, rev.Rollout
			rev = kept
		}
		l.rev.w.Push(revJob{kind: revRecord, path: path, rev: rev})
	}
}

// workloadReached reports whether the plan has every desired slot of w
// served by an up-to-date healthy container, with nothing to do or wait
// for.
func workloadReached(p reconcile.Plan, w *spec.Resolved) bool {
	if w.Err != nil || w.Replicas == 0 {
		return false
	}
	for _, wp := range p.Workloads {
		if wp.Name == w.Name && (len(wp.Steps) > 0 || wp.Error != "") {
			return false
		}
	}
	ready := 0
	for _, st := range p.Slots {
		if st.Workload != w.Name || !st.Desired {
			continue
		}
		if !st.Ready {
			return false
		}
		ready++
	}
	return ready == w.Replicas
}

// onRev takes what the revisions worker did in.
func (l *loop) onRev(d revDone) {
	switch d.job.kind {
	case revRecord:
		if d.err != nil {
			l.fact(Fact{Kind: FactStateError, StateErr: &StateError{File: StateRevisions, Write: true, Workload: d.job.rev.Workload, Hash: d.job.rev.Hash, Err: d.err.Error()}})
			return
		}
		l.log(levelInfo, "revision kept", "workload", d.rev.Workload, "revision", d.rev.Number, "spec", short(d.rev.Hash), "image", d.rev.Image)
	case revPick:
		l.onPicked(d)
	case revSetPin, revEndPin:
		l.onPinWritten(d)
	}
}
