package session

import (
	"fmt"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/reconcile"
)

// gate is everything "what runs next" depends on besides the plan: the
// mode, the guards, the operator's marks on steps, and the time. The loop
// fills it in; decide reads it and nothing else.
type gate struct {
	Now        time.Time // wall clock: retry times are wall clock
	Mode       Mode
	Unattended bool // no one to ask: stop-first runs unasked (and is logged)
	LockHeld   bool
	Connected  bool
	Fresh      bool // the plan was diffed from a list taken after the last step started, and the last intent or change
	// Busy holds the slots ("workload/slot") a running step acts on, and
	// Stale those whose step ended after the plan's list began: no second
	// step runs in a slot before the first ended and a list saw its end.
	Busy  map[string]bool
	Stale map[string]bool
	// Room is how many more steps may run at once; 0 means none.
	Room       int
	Halted     bool // the journal cannot be written: no audit, no action
	Paused     bool
	Gated      string        // the caller's gate is closed (Gate): why; "" when open
	GatedPulls bool          // the closed gate lets pull steps through (Gate.Pulls)
	Blast      bool          // a blast-radius question or refusal holds every step
	SettleLeft time.Duration // the desired state changed less than the settle time ago

	Approved  map[string]bool // step mode: steps the operator let run
	Rollout   bool            // step mode: the operator approved the whole rollout
	Skipped   map[string]bool
	Confirmed map[string]bool      // stop-first steps the operator said yes to
	RetryAt   map[string]time.Time // auto: a failed step is not tried again before (step mode: the operator's approval is the retry)
	// RollingBack holds the workloads of an operator rollback under way;
	// Rollback is its next stop, if any.
	RollingBack map[string]bool
	Rollback    *reconcile.Step
}

// decision is what the loop does now: run steps, ask a question, or wait
// (and why).
type decision struct {
	Run  []reconcile.Step // to start now, each in a slot of its own
	Ask  *Confirmation    // a stop-first step waits for the operator's yes
	Wait string           // why nothing runs; "" when Run is set or nothing is left to run
}

// decide is "what runs next": a pure function of the plan's executable
// steps and the gate. Its order is the order of the guards:
//
//   - nothing runs in watch mode, without the host lock, with a journal
//     that cannot be written, while the engine is unreachable, from a plan
//     older than the last change, while the desired state is still
//     settling, or without room for one more step;
//   - an operator rollback runs first, even while paused or held by the
//     blast radius: it is an explicit order to stop a new container where
//     an old one still serves;
//   - a pause, then the caller's closed gate (Gate), then a blast-radius
//     question (or refusal), holds every step (a gate that lets pulls
//     through holds every other);
//   - then the plan's steps in order: skipped ones, those of a workload
//     being rolled back, those of a slot a running step acts on or whose
//     step ended after the plan's list began (the plan does not know what
//     it did; the other slots' steps run from it, as they would have had
//     that end come a moment later),
//     unapproved ones in step mode and, in auto, failed ones before their
//     retry time are passed over; a stop-first step asks first unless no
//     one is there to ask. Every step left runs at once, one per slot, up
//     to Room: Diff already keeps a workload's rolls within its
//     parallelism, so the steps of one plan are safe to run together.
func decide(steps []reconcile.Step, g gate) decision {
	switch {
	case !g.Mode.Acting():
		return decision{Wait: "watch mode is read-only"}
	case !g.LockHeld:
		return decision{Wait: "the host lock is not held"}
	case g.Halted:
		return decision{Wait: "halted: the journal cannot be written"}
	case !g.Connected:
		return decision{Wait: "the engine is not connected"}
	case !g.Fresh:
		return decision{Wait: "waiting for a fresh list of the engine"}
	case g.SettleLeft > 0:
		return decision{Wait: fmt.Sprintf("the desired state changed: settling (%s left)", g.SettleLeft.Round(100*time.Millisecond))}
	case g.Room <= 0:
		return decision{Wait: "steps are running"}
	case g.Rollback != nil:
		if g.Busy[slotOf(*g.Rollback)] || g.Stale[slotOf(*g.Rollback)] {
			return decision{Wait: "the rollback waits for the step of its slot, and a list after it"}
		}
		return decision{Run: []reconcile.Step{*g.Rollback}}
	case g.Paused:
		return decision{Wait: "paused"}
	case g.Gated != "" && !g.GatedPulls:
		return decision{Wait: "gated: " + g.Gated}
	case g.Blast:
		return decision{Wait: "held by the blast-radius guard"}
	}
	var ask *Confirmation
	var run []reconcile.Step
	taken := map[string]bool{}
	stale := false
	for _, s := range steps {
		if len(run) >= g.Room {
			break
		}
		key := s.Key()
		switch {
		case g.Skipped[key], g.RollingBack[s.Workload], g.Busy[slotOf(s)], taken[slotOf(s)]:
			continue
		case g.Gated != "" && s.Action != reconcile.ActPull:
			continue
		case g.Stale[slotOf(s)]:
			stale = true
			continue
		case g.Mode == ModeStep && !g.Approved[key] && !g.Rollout:
			continue
		case g.Mode == ModeAuto && g.Now.Before(g.RetryAt[key]):
			continue
		}
		if s.Downtime && !g.Confirmed[key] && !g.Unattended {
			if ask == nil {
				ask = &Confirmation{Kind: ConfirmDowntime, Key: key, Step: s,
					Prompt: fmt.Sprintf("%s %s: %s", s.Action, s.Target(), s.Reason)}
			}
			continue
		}
		taken[slotOf(s)] = true
		run = append(run, s)
	}
	switch {
	case len(run) > 0:
		return decision{Run: run, Ask: ask}
	case g.Gated != "":
		return decision{Wait: "gated: " + g.Gated}
	case ask != nil:
		return decision{Ask: ask, Wait: "a stop-first step waits for confirmation"}
	case stale:
		return decision{Wait: "waiting for a fresh list of the engine"}
	case g.Mode == ModeStep && len(steps) > 0:
		return decision{Wait: "waiting for approval"}
	}
	return decision{}
}

// slotOf names the slot a step acts on: "workload/slot".
func slotOf(s reconcile.Step) string { return s.Workload + "/" + strconv.Itoa(s.Slot) }
