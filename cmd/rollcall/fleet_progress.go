package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// fleetProgress renders a fleet rollout for a human, from its snapshots
// (typed data, never log words): each host's lines as apply prints them
// for one host (its steps as they start, drain and end, a canary step's
// readings, its plan's waits, a pause, a refusal, a rollback, its engine
// going away), each after the host's name; and the fleet's own (the rollout beginning, each wave, a
// failed host, the phase) and what the next wave waits for. A snapshot
// is the latest state: a step that starts and ends between two shows only
// as ended.
type fleetProgress struct {
	out   screen
	hosts map[string]*hostProgress
	width int
	notes map[string]bool // the fleet's notes printed: At and Text
	waits string          // the waits line last printed
	fleet *progress
}

// hostProgress is what was printed of one host.
type hostProgress struct {
	p             *progress
	started       map[string]bool   // steps seen running
	ended         map[string]bool   // steps seen ended
	drains        map[string]string // step -> its drain as last printed
	waits         map[string]bool   // wait steps printed, with their reason
	pause         string
	refusal       string
	rolled        int
	connected     bool
	everConnected bool
	// results are the steps it ran, in order, for apply --json.
	results []session.StepResult
}

func newFleetProgress(out screen, names []string) *fleetProgress {
	fp := &fleetProgress{out: out, hosts: map[string]*hostProgress{}, notes: map[string]bool{}, width: len("fleet")}
	for _, n := range names {
		fp.width = max(fp.width, len(n))
	}
	fp.fleet = &progress{out: out, prefix: fp.label("fleet")}
	for _, n := range names {
		fp.hosts[n] = &hostProgress{p: &progress{out: out, prefix: fp.label(n)}, started: map[string]bool{}, ended: map[string]bool{},
			drains: map[string]string{}, waits: map[string]bool{}}
	}
	return fp
}

// label is a line's prefix: a host's name (or "fleet"), padded.
func (fp *fleetProgress) label(name string) string {
	return fp.out.render(fp.out.st.Heading, fmt.Sprintf("%-*s", fp.width, termSafe(name))) + "  "
}

// see prints what is new in s.
func (fp *fleetProgress) see(s fleet.Snapshot) {
	for _, hv := range s.Hosts {
		if hp := fp.hosts[hv.Name]; hp != nil && hv.Session.Seq > 0 {
			hp.see(hv.Session)
		}
	}
	st := fp.out.st
	for _, n := range s.Notes {
		key := n.At.String() + "\x00" + n.Text
		if !fp.notes[key] {
			fp.notes[key] = true
			fp.fleet.print(fp.out.render(st.Note, termSafe(n.Text)))
		}
	}
	if w := nextWaits(s.Decision); w != fp.waits {
		fp.waits = w
		if w != "" {
			fp.fleet.print(fp.out.render(st.Muted, st.Glyphs.Waiting+" "+termSafe(w)))
		}
	}
}

// see prints what is new in a host's session snapshot.
func (hp *hostProgress) see(s session.Snapshot) {
	p, st := hp.p, hp.p.out.st
	switch {
	case s.Connected:
		if hp.everConnected && !hp.connected {
			p.print(p.out.render(st.OK, st.Glyphs.Done+" engine reconnected"))
		}
		hp.connected, hp.everConnected = true, true
	case hp.connected && s.EngineErr != "":
		hp.connected = false
		p.print(p.out.render(st.Bad, st.Glyphs.Warning+" engine disconnected: "+termSafe(s.EngineErr)))
	}
	for _, r := range s.RunningSteps {
		key := r.Step.Key() + "@" + r.Listed.String()
		if !hp.started[key] {
			hp.started[key] = true
			p.event(session.Fact{Kind: session.FactStepStarted, Step: r.Step})
		}
		if r.Drain == nil {
			continue
		}
		kind, state := session.FactDraining, "draining"
		if r.Drain.Ended != "" {
			kind, state = session.FactDrained, "drained"
		}
		if hp.drains[key] != state {
			hp.drains[key] = state
			p.event(session.Fact{Kind: kind, Step: r.Step, Drain: r.Drain})
		}
	}
	for i := range s.Canaries {
		// a canary step's readings: printed once per interval, however
		// many snapshots show the same one (progress.canaryReading)
		v := s.Canaries[i]
		p.event(session.Fact{Kind: session.FactCanary, Step: canaryStepIn(s, v), Canary: &v})
	}
	for _, r := range s.Recent {
		key := r.Step.Key() + "@" + r.Began.String()
		if hp.ended[key] {
			continue
		}
		hp.ended[key] = true
		hp.results = append(hp.results, r)
		if r.Err == "" {
			p.event(session.Fact{Kind: session.FactStepDone, Step: r.Step, Duration: r.Duration})
		} else {
			p.event(session.Fact{Kind: session.FactStepFailed, Step: r.Step, Duration: r.Duration, Err: errors.New(r.Err)})
		}
	}
	for _, step := range s.Plan.Steps() {
		if step.Action != reconcile.ActWait {
			continue
		}
		if key := step.Key() + "\x00" + step.Reason; !hp.waits[key] {
			hp.waits[key] = true
			p.event(session.Fact{Kind: session.FactWaiting, Step: step})
		}
	}
	if s.Pause != nil && s.Pause.Reason != hp.pause {
		p.print(p.out.render(st.Bad, st.Glyphs.Warning+" paused: "+termSafe(s.Pause.Reason)))
	}
	hp.pause = ""
	if s.Pause != nil {
		hp.pause = s.Pause.Reason
	}
	if s.Refusal != nil && s.Refusal.Reason != hp.refusal {
		p.print(p.out.render(st.Bad, st.Glyphs.Warning+" refused: "+termSafe(s.Refusal.Reason)))
	}
	hp.refusal = ""
	if s.Refusal != nil {
		hp.refusal = s.Refusal.Reason
	}
	for _, rb := range s.RolledBack[min(hp.rolled, len(s.RolledBack)):] {
		p.print(p.out.render(st.Bad, fmt.Sprintf("%s rolled back %s/%d (%s): spec %s is on hold until the desired spec changes",
			st.Glyphs.Warning, termSafe(rb.Workload), rb.Slot, termSafe(rb.Reason), shortHash(rb.Hash))))
	}
	hp.rolled = len(s.RolledBack)
}

// canaryStepIn is the running step a canary's view is of, or one made of
// the view when it is no longer running.
func canaryStepIn(s session.Snapshot, v session.CanaryView) reconcile.Step {
	for _, r := range s.RunningSteps {
		if r.Step.Canary != nil && r.Step.Workload == v.Workload && r.Step.Canary.Index == v.Step.Index {
			return r.Step
		}
	}
	st := v.Step
	return reconcile.Step{Action: reconcile.ActCanary, Workload: v.Workload, Slot: reconcile.NoSlot, Container: v.Container, Canary: &st}
}

// nextWaits says what holds the rollout now: the waits of the first wave
// that has any, "wave 2 waits: soak until 12:00:30 UTC · edge-1 healthy
// 2/3"; "" when nothing holds it. A host not listed yet is passed over:
// every host is so for a moment at the start.
func nextWaits(d fleet.Decision) string {
	for _, w := range d.Waves {
		var parts []string
		for _, wt := range w.Waits {
			if t := waitText(wt); t != "" {
				parts = append(parts, t)
			}
		}
		if len(parts) > 0 {
			return fmt.Sprintf("wave %d waits: %s", w.Index+1, strings.Join(parts, " · "))
		}
	}
	return ""
}

// waitText is one thing a wave waits for, in words; "" for what goes
// without saying (the wave before has not started, a host not listed
// yet).
func waitText(w fleet.Wait) string {
	switch w.Kind {
	case fleet.WaitPreflight:
		switch w.Problem {
		case fleet.ProblemUnreachable:
			return w.Host + " does not answer"
		case fleet.ProblemSameEngine:
			return w.Host + " is the engine of " + w.Other
		case fleet.ProblemLockNotHeld:
			return w.Host + "'s host lock is not held"
		}
	case fleet.WaitApproval:
		return "its approval"
	case fleet.WaitSoak:
		return "soak until " + w.Until.UTC().Format(time.TimeOnly) + " UTC"
	case fleet.WaitHealth:
		return fmt.Sprintf("%s up to date and healthy %d/%d", w.Host, w.Healthy, w.Slots)
	case fleet.WaitFailedHost:
		if w.Cause == fleet.CauseLost {
			return w.Host + " was lost"
		}
		return w.Host + " failed"
	case fleet.WaitWatch:
		return "watch mode"
	case fleet.WaitPull:
		switch {
		case w.Pull.Failed:
			return w.Host + "'s pull failed: " + w.Pull.Kind.Text()
		case w.Pull.Running:
			return w.Host + " pulling"
		}
		return w.Host + " to pull"
	}
	return ""
}
