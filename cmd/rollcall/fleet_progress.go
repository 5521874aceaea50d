package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/session"
)

// fleetProgress renders a fleet rollout for a human, from its snapshots
// (typed data, never log words): each host's lines as apply prints them
// for one host, read from the facts of its session (its steps as they
// start, drain and end, a canary step's readings, its plan's waits, a
// pause, a refusal, a rollback, its engine going away), each after the
// host's name; and the fleet's own (the rollout beginning, each wave, a
// failed host, the phase) and what the next wave waits for. A host's
// facts are read on from the last one printed: a step that starts and
// ends between two snapshots shows both; facts its session no longer
// carries are said to be missed.
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
	p    *progress
	seen uint64 // the last fact of its session read
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
		fp.hosts[n] = &hostProgress{p: &progress{out: out, prefix: fp.label(n)}}
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

// see prints the facts of a host's session snapshot since the last it
// read, and how many it missed when the session went faster than it read.
func (hp *hostProgress) see(s session.Snapshot) {
	facts, missed := s.FactsSince(hp.seen)
	if missed > 0 {
		st := hp.p.out.st
		hp.p.print(hp.p.out.render(st.Warn, fmt.Sprintf("%s %d %s of this host not shown: they came faster than they were read",
			st.Glyphs.Warning, missed, plural(int(missed), "event", "events"))))
	}
	for _, f := range facts {
		hp.fact(f)
	}
	hp.seen = max(hp.seen, s.LastFact())
}

// fact prints one fact of the host's session as apply does for one host.
// Not printed: a pull's progress (a line per host per tenth of its bytes),
// and the lock and the desired state the fleet takes and hands each host
// (the fleet's own lines say them).
func (hp *hostProgress) fact(f session.Fact) {
	switch f.Kind {
	case session.FactPulling, session.FactLockTaken, session.FactLockRefused, session.FactDesired:
		return
	case session.FactStepDone, session.FactStepFailed:
		if f.Result != nil {
			hp.results = append(hp.results, *f.Result)
		}
	}
	hp.p.event(f)
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
