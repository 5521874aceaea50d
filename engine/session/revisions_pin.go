package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/engine/state"
)

// Pins (DESIGN §12): `rollcall rollback WORKLOAD` (the Pin intent, `u` in
// the console) pins a workload to a revision. While the pin stands, the
// workload's desired spec is held (not started) and the pinned revision
// is what Diff rolls in, under every rule of §5, drains included: the
// workload's resolved spec is replaced by the revision's before Diff, so
// nothing else of the session knows a pin from a desired change.
//
//   - The revision gives what its hash covers (image, command,
//     environment, …); replicas, resources, restart policy, stop grace and
//     the update policy stay the desired state's: they are how the
//     workload runs and rolls now, and a revision kept is named by its
//     hash alone.
//   - The pinned image is looked up on the engine by its ID beside each
//     relist. An image gone is an error on that workload, in the plan as a
//     missing image is: nothing of it is started or stopped. A tag that
//     names another image now has the containers created from the image ID.
//   - A pin stands while the desired spec is the one it was set against
//     (its hash). Once the desired spec changes, or the workload leaves the
//     desired state, it no longer applies, and an acting session ends it
//     (journaled, "unpin"); a desired image that cannot be resolved keeps it
//     standing (the change cannot be told). `rollcall retry` (the Retry
//     intent) lifts it (journaled).
//   - The plan shows a standing pin in its workload's block (a note), and
//     its slots as held off the desired spec, so the desired state is not
//     reached while it stands (`plan` exits 2).
//
// The pins file is read beside each relist, as the holds file is: a pin
// set or lifted by `rollcall rollback` or `rollcall retry` while a session
// runs is taken in at its next relist. A session writes the file (pin,
// end, lift) through its revisions worker, journaled first, and takes the
// change in from the read that follows the write.

// Pin pins a workload to one of its revisions: Revision is its number
// (history --revisions), 0 the one before the desired spec. Refused in
// watch mode.
type Pin struct {
	Workload string
	Revision int
}

func (Pin) intent() {}

// PinView is one pin as the session (or a plan) applies it.
type PinView struct {
	PinRecord
	// Standing: the desired spec is still the one the pin was set against
	// (or cannot be resolved): the pinned revision is what runs.
	Standing bool
	// Desired is the workload's desired spec hash now; "" when it is not
	// desired any more or its image cannot be resolved.
	Desired string
	// Err says why the pinned revision cannot be rolled in (its image is
	// gone from the engine); the workload is an error in the plan then.
	Err string
	// FromImageID: the revision's tag names another image now, so its
	// containers are created from the image ID.
	FromImageID bool

	replicas int
}

// pinImage is a pinned revision's image as looked up on the engine.
type pinImage struct {
	imageID string // the revision's, as looked up
	ref     string // what its containers are created from: the tag, or the ID when the tag moved
	err     error
}

// lookupPinImages looks the pinned revisions' images up on the engine, by
// workload.
func lookupPinImages(ctx context.Context, images spec.ImageLookup, pins []state.Pin) map[string]pinImage {
	out := map[string]pinImage{}
	for _, p := range pins {
		r := p.Revision
		pi := pinImage{imageID: r.ImageID, ref: r.Image}
		img, err := images.ImageInspect(ctx, r.ImageID)
		switch {
		case err != nil:
			pi.err = fmt.Errorf("pinned revision %d: image %s (%s) is gone from the engine: %w", r.Number, r.Image, shortImageID(r.ImageID), err)
		case img.ID != r.ImageID:
			pi.err = fmt.Errorf("pinned revision %d: image %s is %s on the engine, not the revision's %s", r.Number, r.Image, shortImageID(img.ID), shortImageID(r.ImageID))
		default:
			if byTag, err := images.ImageInspect(ctx, r.Image); err != nil || byTag.ID != r.ImageID {
				pi.ref = r.ImageID
			}
		}
		out[p.Workload] = pi
	}
	return out
}

// pinDesired is r with the standing pins' revisions in place of their
// workloads' desired specs, and every pin as it applies. r is not changed.
func pinDesired(r *spec.ResolvedDesired, pins state.Pins, images map[string]pinImage) (*spec.ResolvedDesired, []PinView) {
	if r == nil || len(pins) == 0 {
		return r, nil
	}
	out := &spec.ResolvedDesired{Prefix: r.Prefix, Workloads: slices.Clone(r.Workloads)}
	var views []PinView
	for _, p := range pins.List() {
		v := PinView{PinRecord: p}
		i := slices.IndexFunc(out.Workloads, func(w spec.Resolved) bool { return w.Name == p.Workload })
		if i < 0 {
			views = append(views, v)
			continue
		}
		rw := out.Workloads[i]
		if rw.Err == nil {
			v.Desired = rw.Hash
		}
		v.Standing = rw.Err != nil || rw.Hash == p.Against
		v.replicas = rw.Replicas
		if !v.Standing {
			views = append(views, v)
			continue
		}
		img, ok := images[p.Workload]
		switch {
		case !ok || img.imageID != p.Revision.ImageID:
			// Pinned since the last relist: looked up at the next one.
			out.Workloads[i] = spec.Resolved{Workload: rw.Workload, Err: fmt.Errorf("pinned revision %d: image %s not looked up yet", p.Revision.Number, p.Revision.Image)}
			v.Err = out.Workloads[i].Err.Error()
		case img.err != nil:
			out.Workloads[i] = spec.Resolved{Workload: rw.Workload, Err: img.err}
			v.Err = img.err.Error()
		default:
			w := *p.Revision.Spec
			d := rw.Workload
			w.Name, w.Image = d.Name, img.ref
			w.Replicas, w.Resources, w.Restart, w.StopGrace, w.Update = d.Replicas, d.Resources, d.Restart, d.StopGrace, d.Update
			// A revision ran healthy on every slot before: going back to
			// it is the way out of a bad version, not one more version to
			// try, so it rolls in with no canary.
			w.Update.Canary = nil
			out.Workloads[i] = spec.Resolved{Workload: &w, ImageID: p.Revision.ImageID, Hash: p.Revision.Hash}
			v.FromImageID = img.ref != p.Revision.Image
		}
		views = append(views, v)
	}
	return out, views
}

// Pinned is r with the standing pins in place (as a session applies them),
// the pinned images looked up on the engine, and every pin as it applies:
// for a one-shot plan. MarkPins then marks the plan diffed from it.
func Pinned(ctx context.Context, images spec.ImageLookup, r *spec.ResolvedDesired, pins []PinRecord) (*spec.ResolvedDesired, []PinView) {
	byWorkload := state.Pins{}
	for _, p := range pins {
		byWorkload[p.Workload] = p
	}
	return pinDesired(r, byWorkload, lookupPinImages(ctx, images, pins))
}

// MarkPins marks in p, diffed from a desired state with pins in place,
// what each standing pin keeps off the desired spec: a note in its
// workload's block (who, when, which revision), and its slots as held off
// the desired spec (WorkloadPlan.Held, with the desired hash), so the
// desired state is not reached while the pin stands.
func MarkPins(p *reconcile.Plan, views []PinView) {
	for _, v := range views {
		if !v.Standing {
			continue
		}
		i := slices.IndexFunc(p.Workloads, func(w reconcile.WorkloadPlan) bool { return w.Name == v.Workload })
		if i < 0 {
			i, _ = slices.BinarySearchFunc(p.Workloads, v.Workload, func(w reconcile.WorkloadPlan, name string) int {
				return strings.Compare(w.Name, name)
			})
			p.Workloads = slices.Insert(p.Workloads, i, reconcile.WorkloadPlan{Name: v.Workload})
		}
		wp := &p.Workloads[i]
		wp.Notes = append(slices.Clone(wp.Notes), v.Line())
		wp.Held, wp.HeldSpec = nil, v.Against
		for slot := range v.replicas {
			wp.Held = append(wp.Held, slot)
		}
	}
}

// Line is the pin as the plan says it: which revision, who, since when,
// and what it holds.
func (v PinView) Line() string {
	r := v.Revision
	line := fmt.Sprintf("pinned to revision %d (spec %s, %s", r.Number, short(r.Hash), r.Image)
	if r.Version != "" {
		line += ", version " + r.Version
	}
	line += ")"
	if v.By != "" {
		line += " by " + v.By
	}
	if !v.Since.IsZero() {
		line += " since " + v.Since.UTC().Format(time.DateTime) + " UTC"
	}
	if !v.Standing {
		return line + ": the desired spec changed, so it no longer applies (the next acting session ends it)"
	}
	line += fmt.Sprintf(": the desired spec %s is held until it changes, or `rollcall retry %s`", short(v.Against), v.Workload)
	if v.FromImageID {
		line += fmt.Sprintf("; %s names another image now: created from %s", r.Image, shortImageID(r.ImageID))
	}
	return line
}

// shortImageID is an image ID as messages show it: "sha256:" and 12 hex.
func shortImageID(id string) string {
	if len(id) > 19 {
		return id[:19]
	}
	return id
}

// pinState is what the loop knows of the pins file.
type pinState struct {
	disk    state.Pins          // the pins file as last read
	images  map[string]pinImage // the pinned images as looked up with that read
	loaded  bool
	readErr string // the last read's error, said once
	// gen moves as a write begins and as it ends: a read that began before
	// either is not taken, nor one that ends while a write is under way.
	gen     uint64
	writing int
	// ending and lifting are the workloads whose pin this session is
	// ending (the desired spec changed) or lifting (Retry), for what the
	// read that follows says.
	ending, lifting map[string]bool
	// resolved is the desired state the plan was diffed from, pins in
	// place; views are the pins as they applied.
	resolved *spec.ResolvedDesired
	views    []PinView
}

// pinsRead is a read of the pins file beside the loop, with the pinned
// images looked up.
type pinsRead struct {
	gen    uint64
	pins   state.Pins
	images map[string]pinImage
	err    error
}

// pinsPath is the pins file of the session's engine and prefix; "" without
// a state directory or before the engine is known.
func (l *loop) pinsPath() string {
	if l.opts.StateDir == "" || !l.infoOK {
		return ""
	}
	return state.PinsPath(l.opts.StateDir, l.info, l.prefix)
}

// reader is what a relist calls beside the loop, with its client and the
// engine's identity, to read the pins file of prefix in the state
// directory dir and look the pinned images up; nil without one.
func (ps *pinState) reader(dir, prefix string) func(context.Context, spec.ImageLookup, docker.EngineInfo) *pinsRead {
	if dir == "" {
		return nil
	}
	gen := ps.gen
	return func(ctx context.Context, images spec.ImageLookup, info docker.EngineInfo) *pinsRead {
		pins, err := state.ReadPinsFile(state.PinsPath(dir, info, prefix))
		r := &pinsRead{gen: gen, pins: pins, err: err}
		if err == nil {
			r.images = lookupPinImages(ctx, images, pins.List())
		}
		return r
	}
}

// onPinsRead takes a read of the pins file in, before the plan is made,
// and says what changed in it since the last.
func (l *loop) onPinsRead(r *pinsRead) {
	ps := &l.rev.pins
	if r == nil || !l.infoOK || r.gen != ps.gen || ps.writing > 0 {
		return // a write began or ended since: the next read is newer
	}
	if r.err != nil {
		if msg := r.err.Error(); msg != ps.readErr {
			ps.readErr = msg
			l.fact(Fact{Kind: FactStateError, StateErr: &StateError{File: StatePins, Err: msg}})
		}
		return // the pins as last read stand
	}
	ps.readErr = ""
	if !ps.loaded {
		if len(r.pins) > 0 {
			l.log(levelInfo, "pins kept from before", "pins", len(r.pins))
		}
	} else {
		l.notePinChanges(ps.disk, r.pins)
	}
	ps.disk, ps.images, ps.loaded = r.pins, r.images, true
}

// notePinChanges says what changed between two reads of the pins file.
func (l *loop) notePinChanges(was, now state.Pins) {
	ps := &l.rev.pins
	for _, p := range now.List() {
		if old, ok := was[p.Workload]; ok && old.Same(p) {
			continue
		}
		l.fact(Fact{Kind: FactPinSet, Pin: &PinFact{Workload: p.Workload, Revision: p.Revision.Number, Hash: p.Revision.Hash, By: p.By}})
	}
	for _, p := range was.List() {
		if _, ok := now[p.Workload]; ok {
			continue
		}
		lift := &PinFact{Workload: p.Workload, Revision: p.Revision.Number, Hash: p.Revision.Hash, By: l.opts.User, Lifted: LiftedElsewhere}
		switch {
		case ps.lifting[p.Workload]:
			lift.Lifted = LiftedByOperator
		case ps.ending[p.Workload]:
			lift.Lifted = LiftedSpecChanged
		}
		delete(ps.lifting, p.Workload)
		delete(ps.ending, p.Workload)
		l.fact(Fact{Kind: FactPinLifted, Pin: lift})
	}
}

// apply is the desired state Diff plans from: r (the resolved desired
// state) with the standing pins' revisions in place. It keeps the pins as
// they applied for the snapshot and MarkPins.
func (ps *pinState) apply(r *spec.ResolvedDesired) *spec.ResolvedDesired {
	ps.resolved, ps.views = pinDesired(r, ps.disk, ps.images)
	return ps.resolved
}

// diffed is the desired state the plan was diffed from, of r (the
// resolved desired state): pins in place.
func (ps *pinState) diffed(r *spec.ResolvedDesired) *spec.ResolvedDesired {
	if ps.resolved != nil && r != nil {
		return ps.resolved
	}
	return r
}

// pinnedHash reports whether h is the revision a standing pin of workload
// w rolls in: a hold of it (its roll failed) stands though it is not the
// desired spec.
func (ps *pinState) pinnedHash(w, h string) bool {
	for _, v := range ps.views {
		if v.Workload == w && v.Standing && v.Revision.Hash == h {
			return true
		}
	}
	return false
}

// endStalePins ends, journaled, each pin that no longer stands: its
// workload's desired spec changed, or the workload is no longer desired.
// Only a session that acts under the lock writes the file; the others
// only leave such a pin out of their plan.
func (l *loop) endStalePins() {
	ps := &l.rev.pins
	path := l.pinsPath()
	if path == "" || !l.mode.Acting() || !l.lockHeld() || l.resolvedFP != l.desiredFP || l.diskGone {
		return
	}
	for _, v := range ps.views {
		if v.Standing || ps.ending[v.Workload] || ps.lifting[v.Workload] {
			continue
		}
		if ps.ending == nil {
			ps.ending = map[string]bool{}
		}
		ps.ending[v.Workload] = true
		why := "the workload is no longer desired"
		if v.Desired != "" {
			why = fmt.Sprintf("the desired spec changed (%s → %s)", short(v.Against), short(v.Desired))
		}
		p := v.PinRecord
		l.decisionThen("unpin", v.Workload, fmt.Sprintf("pin to revision %d (spec %s) ended: %s", p.Revision.Number, short(p.Revision.Hash), why), func() {
			l.writePins(revJob{kind: revEndPin, path: path, pin: p}, &l.freshness)
		})
	}
}

// pin is the operator's Pin: the revisions worker picks the revision, then
// the pin is journaled, then written.
func (l *loop) pin(i Pin) {
	if !l.acting("pin a revision") {
		return
	}
	path := l.revisionsPath()
	if path == "" {
		if l.opts.StateDir == "" {
			l.reply("pin %s: no state directory, so no revisions are kept", i.Workload)
		} else {
			l.reply("pin %s: the engine is not known yet", i.Workload)
		}
		return
	}
	rw := l.resolvedWorkload(i.Workload)
	switch {
	case rw == nil:
		l.reply("pin: no workload %q in the desired state", i.Workload)
		return
	case rw.Err != nil:
		l.reply("pin %s: the desired spec is not resolved (%v): nothing to pin it against", i.Workload, rw.Err)
		return
	}
	l.rev.w.Push(revJob{kind: revPick, path: path, workload: i.Workload, number: i.Revision, against: rw.Hash, by: l.opts.User})
}

// onPicked takes the revision a Pin chose, journals the pin and has it
// written.
func (l *loop) onPicked(d revDone) {
	j := d.job
	if d.err != nil {
		l.reply("pin %s: %v", j.workload, d.err)
		return
	}
	path := l.pinsPath()
	if path == "" || !l.acting("pin a revision") {
		return
	}
	if cur, ok := l.rev.pins.disk[j.workload]; ok && cur.Revision.Same(d.rev) && cur.Against == j.against {
		l.reply("pin %s: already pinned to revision %d", j.workload, cur.Revision.Number)
		return
	}
	p := state.Pin{Workload: j.workload, Revision: d.rev, Against: j.against, By: l.opts.User, Since: l.wallNow().UTC()}
	l.decisionThen("pin", j.workload, PinAbout(p), func() {
		l.writePins(revJob{kind: revSetPin, path: path, pin: p}, &l.freshness)
	})
}

// PinAbout is a pin as its journal line says it.
func PinAbout(p PinRecord) string {
	r := p.Revision
	return fmt.Sprintf("revision %d (spec %s, %s) pinned; the desired spec %s is held", r.Number, short(r.Hash), r.Image, short(p.Against))
}

// liftPin is Retry's part for a pin: the workload's pin is journaled as
// lifted, then removed. It reports whether there was one.
func (l *loop) liftPin(workload string) bool {
	ps := &l.rev.pins
	p, ok := ps.disk[workload]
	path := l.pinsPath()
	if !ok || path == "" || ps.lifting[workload] {
		return ok
	}
	if ps.lifting == nil {
		ps.lifting = map[string]bool{}
	}
	ps.lifting[workload] = true
	l.decisionThen("unpin", workload, fmt.Sprintf("pin to revision %d (spec %s) lifted: the desired spec %s rolls in again", p.Revision.Number, short(p.Revision.Hash), short(p.Against)), func() {
		l.writePins(revJob{kind: revEndPin, path: path, pin: p, lift: true}, &l.freshness)
	})
	return true
}

// writePins hands a change of the pins file to the revisions worker. The
// plan in hand is spent (f); the read that follows the write brings the
// change in.
func (d *disk) writePins(j revJob, f *freshness) {
	if d.diskGone {
		return
	}
	ps := &d.rev.pins
	ps.gen++
	ps.writing++
	f.spend()
	d.rev.w.Push(j)
}

// onPinWritten takes a write of the pins file in.
func (l *loop) onPinWritten(d revDone) {
	l.rev.pins.written(d)
	l.spend()
	l.requestFetch()
	if d.err != nil {
		l.fact(Fact{Kind: FactStateError, StateErr: &StateError{File: StatePins, Write: true, Workload: d.job.pin.Workload, Err: d.err.Error()}})
	}
}

// written takes a write of the pins file in: a read that began before it
// is not taken.
func (ps *pinState) written(d revDone) {
	ps.writing--
	ps.gen++
	if d.err != nil || (d.job.kind == revEndPin && d.ended == nil) {
		// Not written, or nothing to end (lifted or pinned anew
		// meanwhile): whatever the file has now is what the next read
		// says, and a pin that still does not stand is ended again.
		w := d.job.pin.Workload
		delete(ps.ending, w)
		delete(ps.lifting, w)
	}
}
