package session

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// Retry backoff of a step that failed at the engine, in auto mode.
const (
	retryMin = time.Second
	retryMax = time.Minute
)

type retry struct {
	n  int
	at time.Time // wall clock
}

// maxRecent is how many executed steps a snapshot lists.
const maxRecent = 20

// act runs the next step, if any may run. It is called only with a fresh
// plan: one diffed from a list taken after the last step, intent, desired
// change or mode change.
func (l *loop) act() {
	l.dropVanished()
	if l.running != nil || !l.mode.Acting() || l.lock == nil || !l.connected {
		return
	}
	l.checkBlast() // only when it could act: watching weighs nothing
	if l.pause != nil || (l.confirm != nil && l.confirm.Kind == ConfirmBlast) {
		return
	}
	if s, ok := l.rollbackStep(); ok {
		l.runStep(s)
		return
	}
	for _, s := range l.plan.Executable() {
		key := s.Key()
		switch {
		case l.skipped[key], l.rollbacks[s.Workload] != "":
			continue
		case l.mode == ModeStep && !l.approved[key]:
			continue
		case l.mode == ModeAuto && l.retries[key] != nil && time.Now().Before(l.retries[key].at):
			continue
		}
		if s.Downtime && !l.confirmed[key] {
			if l.confirm == nil {
				l.confirm = &Confirmation{Kind: ConfirmDowntime, Key: key, Step: s,
					Prompt: fmt.Sprintf("%s %s: %s", s.Action, s.Target(), s.Reason)}
			}
			continue
		}
		l.runStep(s)
		return
	}
}

// dropVanished drops approvals (and a pending downtime question) whose step
// a fresh plan no longer holds.
func (l *loop) dropVanished() {
	for key := range l.approved {
		if !inPlan(l.plan, key) {
			delete(l.approved, key)
			l.note("approved step %s is no longer in the plan: dropped", key)
		}
	}
	if c := l.confirm; c != nil && c.Kind == ConfirmDowntime && !inPlan(l.plan, c.Key) {
		l.confirm = nil
	}
}

// forgetGoneSteps drops what is kept about steps that left the plan.
func (l *loop) forgetGoneSteps() {
	keys := map[string]bool{}
	for _, s := range l.plan.Executable() {
		keys[s.Key()] = true
	}
	for _, m := range []map[string]bool{l.skipped, l.confirmed} {
		for key := range m {
			if !keys[key] {
				delete(m, key)
			}
		}
	}
	for key := range l.retries {
		if !keys[key] {
			delete(l.retries, key)
		}
	}
	for key, r := range l.results {
		if !keys[key] && r.epoch <= l.planEpoch {
			delete(l.results, key)
		}
	}
}

// checkBlast holds every step after a desired change whose plan would stop
// or roll more than half of the running managed containers.
func (l *loop) checkBlast() {
	if !l.blastCheck || l.resolved == nil {
		return
	}
	l.blastCheck = false
	running := map[string]bool{}
	for _, c := range l.containers {
		if c.State == docker.StateRunning {
			running[c.ID] = true
		}
	}
	hit := map[string]bool{}
	for _, s := range l.plan.Steps() {
		if (s.Action == reconcile.ActStop || s.Action == reconcile.ActRoll) && running[s.ContainerID] {
			hit[s.ContainerID] = true
		}
	}
	if 2*len(hit) <= len(running) {
		return
	}
	prompt := fmt.Sprintf("the new desired state stops or rolls %d of %d running containers", len(hit), len(running))
	l.confirm = &Confirmation{Kind: ConfirmBlast, Prompt: prompt}
	l.note("holding: %s; confirm to go on", prompt)
}

type stepDone struct {
	step     reconcile.Step
	mode     Mode
	began    time.Time // wall clock
	err      error
	duration time.Duration
	jerr     error
}

// runStep runs s beside the loop with the client the mode allows.
func (l *loop) runStep(s reconcile.Step) {
	l.epoch++
	now := l.now()
	l.running = &StepRun{Step: s, Since: now}
	delete(l.approved, s.Key())
	if l.opts.OnStep != nil {
		l.opts.OnStep(s, now)
	}
	c := l.ro
	if l.mode.Acting() && l.lock != nil {
		c = l.raw
	}
	mode, user, jr := l.mode, l.opts.User, l.opts.Journal
	goReport(l, l.stepped, func() stepDone {
		began := time.Now()
		err := reconcile.Run(l.ctx, c, s)
		d := stepDone{step: s, mode: mode, began: began, err: err, duration: time.Since(began)}
		if jr != nil {
			d.jerr = jr.Append(journal.FromResult(reconcile.Result{Step: s, Err: err, Duration: d.duration}, began, user, string(mode)))
		}
		return d
	})
}

func (l *loop) onStepDone(d stepDone) {
	l.epoch++
	l.running = nil
	s, key := d.step, d.step.Key()
	res := StepResult{Step: s, Mode: d.mode, Began: d.began, Duration: d.duration, epoch: l.epoch}
	if d.err != nil {
		res.Err = d.err.Error()
	}
	l.results[key] = res
	l.recent = append(l.recent, res)
	if len(l.recent) > maxRecent {
		l.recent = l.recent[len(l.recent)-maxRecent:]
	}
	delete(l.confirmed, key)
	if d.err != nil {
		r := l.retries[key]
		if r == nil {
			r = &retry{}
			l.retries[key] = r
		}
		wait := retryMin << min(r.n, 6)
		r.n++
		r.at = time.Now().Add(min(wait, retryMax))
		l.note("%s %s failed: %v", s.Action, s.Target(), d.err)
	} else {
		delete(l.retries, key)
		if s.Hold != "" {
			l.hold(s.Workload, s.Hold)
			l.note("rolled back %s: spec %s is on hold until the desired spec changes", s.Target(), short(s.Hold))
		}
		if s.Action == reconcile.ActRestart {
			l.restarts[s.ContainerID]++
		}
	}
	if d.jerr != nil {
		l.note("journal: %v", d.jerr)
	}
	if l.releaseAfterStep {
		l.releaseAfterStep = false
		l.releaseLock()
	}
	l.requestFetch()
}

func (l *loop) hold(workload, hash string) {
	if l.holds[workload] == nil {
		l.holds[workload] = map[string]bool{}
	}
	l.holds[workload][hash] = true
}

// startRollback is the operator's rollback of a workload: hold its spec at
// once; rollbackStep then stops its new containers one by one.
func (l *loop) startRollback(workload string) {
	if !l.acting("roll back") {
		return
	}
	w := l.resolvedWorkload(workload)
	if w == nil {
		l.note("roll back: no workload %q in the desired state", workload)
		return
	}
	if w.Err != nil {
		l.note("roll back %s: %v", workload, w.Err)
		return
	}
	l.hold(workload, w.Hash)
	l.rollbacks[workload] = w.Hash
	l.note("rolling back %s: spec %s on hold; its new containers stop where an older one still serves", workload, short(w.Hash))
}

// rollbackStep is the next stop of an operator rollback, worked out from the
// latest list: an up-to-date container of the held spec in a slot where an
// older container still runs. A rollback with nothing left to stop ends.
func (l *loop) rollbackStep() (reconcile.Step, bool) {
	for _, name := range sortedKeys(l.rollbacks) {
		hash := l.rollbacks[name]
		w := l.resolvedWorkload(name)
		type slotState struct {
			fresh    []docker.Container
			oldAlive bool
		}
		slots := map[int]*slotState{}
		for _, c := range l.containers {
			if c.Labels[docker.WorkloadLabel(l.prefix)] != name {
				continue
			}
			idx, err := strconv.Atoi(c.Labels[docker.SlotLabel(l.prefix)])
			if err != nil {
				continue
			}
			st := slots[idx]
			if st == nil {
				st = &slotState{}
				slots[idx] = st
			}
			if c.Labels[docker.SpecLabel(l.prefix)] == hash {
				st.fresh = append(st.fresh, c)
			} else if c.State == docker.StateRunning {
				st.oldAlive = true
			}
		}
		kept := 0
		for _, idx := range sortedKeys(slots) {
			st := slots[idx]
			if len(st.fresh) == 0 {
				continue
			}
			if !st.oldAlive {
				kept += len(st.fresh)
				continue
			}
			c := st.fresh[0]
			grace := time.Duration(0)
			if w != nil {
				grace = w.StopGrace
			}
			return reconcile.Step{Action: reconcile.ActStop, Workload: name, Slot: idx, Container: c.Name, ContainerID: c.ID,
				Grace: grace, Reason: "rollback by " + l.opts.User + ": the older container keeps serving"}, true
		}
		delete(l.rollbacks, name)
		if kept > 0 {
			l.note("rollback of %s done; %d slot(s) had finished rolling and keep the new spec", name, kept)
		} else {
			l.note("rollback of %s done", name)
		}
	}
	return reconcile.Step{}, false
}
