package fleet

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
)

// The fleet's own journal lines: decisions (journal.ResultDecision), each
// with the host it is about ("" for the rollout as a whole) and the
// rollout's ID once it began. Every host's session writes its own lines
// to the same journal, with its host and the same rollout ID.
const (
	lineBegan       = "fleet-began"       // the rollout began: its waves
	linePreflight   = "fleet-preflight"   // a host at preflight: its engine and lock, or why it does not pass
	lineLeftOut     = "fleet-left-out"    // a host left out (SkipUnreachable)
	lineWave        = "fleet-wave"        // a wave started
	lineHostFailed  = "fleet-host-failed" // a host failed: its roll, or lost
	linePhase       = "fleet-phase"       // the rollout paused, finishes, rolls back or is done
	lineRollback    = "fleet-rollback"    // rollback_all: a host returns to its earlier desired state (or cannot)
	lineApproveWave = "approve-wave"      // step mode: the operator approved a wave
	lineApproveAll  = "approve-fleet"     // step mode: the operator approved the whole rollout (A)
)

// PhaseName is a phase as the journal and the logs write it.
func PhaseName(p Phase) string {
	switch p {
	case PhasePreflight:
		return "preflight"
	case PhaseRolling:
		return "rolling"
	case PhasePaused:
		return "paused"
	case PhaseFinishing:
		return "finishing"
	case PhaseRollingBack:
		return "rolling back"
	case PhaseDone:
		return "done"
	case PhaseWatching:
		return "watching"
	}
	return fmt.Sprintf("phase %d", int(p))
}

// newRolloutID names a rollout: when it began, and a random part so two
// fleets that begin in the same second differ.
func newRolloutID(at time.Time) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return at.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b)
}

// line journals one of the fleet's own lines, beside the loop.
func (r *run) line(action, host, reason string) {
	e := journal.Entry{Time: time.Now(), User: r.opts.User, Mode: r.journalMode(), Action: action, Slot: -1,
		Reason: reason, Result: journal.ResultDecision, Host: host, Rollout: r.f.rolloutID()}
	if r.desired != nil {
		e.Prefix = r.desired.Prefix
	}
	if h := r.host(host); h != nil {
		e.Engine = h.info.ID
	}
	r.journal.push(e)
}

func (r *run) journalMode() string {
	if r.opts.JournalMode != "" {
		return r.opts.JournalMode
	}
	return string(r.mode)
}

// onJournaled takes in what the journal wrote: a line that could not be
// written halts the fleet (no audit, no action): every gate closes.
func (r *run) onJournaled() {
	for _, err := range r.journal.take() {
		if err != nil && r.halted == "" {
			r.halted = "journal: " + err.Error()
			r.note("halted: %s; nothing more acts on any host (no audit, no action)", r.halted)
		}
	}
}

// onEvent journals and notes a fact a decision recorded for the first
// time. A rollout that begins gets its ID first, so that every line of it
// carries the ID.
func (r *run) onEvent(ev Event, now time.Time) {
	switch ev.Kind {
	case EventBegan:
		id := newRolloutID(now)
		r.f.rollout.Store(id)
		r.rolloutAt = now
		for _, h := range r.hosts {
			h.changing = h.changing[:0]
			for _, w := range h.snap.Plan.Workloads {
				if len(w.Steps) > 0 || len(w.Failures) > 0 {
					h.changing = append(h.changing, w.Name)
				}
			}
		}
		var waves []string
		for _, w := range r.dec.Waves {
			waves = append(waves, "["+strings.Join(w.Hosts, " ")+"]")
		}
		r.note("rollout %s began: waves %s", id, strings.Join(waves, " "))
		r.line(lineBegan, "", fmt.Sprintf("%s mode, waves %s, on_failure %s", r.mode, strings.Join(waves, " "), r.desired.Fleet.OnFailure))
		for _, w := range r.dec.Waves {
			for _, name := range w.Hosts {
				h := r.host(name)
				what := fmt.Sprintf("answers: engine %s (%s)", h.info.ID, h.info.Endpoint)
				if lk := h.lock.Load(); lk != nil {
					what += ", lock " + lk.Path
				}
				r.line(linePreflight, name, what)
			}
		}
	case EventLeftOut:
		why := "it does not answer"
		switch h := r.host(ev.Host); {
		case ev.PullKind != "":
			why = "its pull failed: " + ev.PullKind.Text()
		case h != nil && h.dialErr != "":
			why += ": " + h.dialErr
		}
		r.note("%s left out of the rollout (--skip-unreachable): %s", ev.Host, why)
		r.line(lineLeftOut, ev.Host, why)
	case EventWaveStarted:
		hosts := strings.Join(r.dec.Waves[ev.Wave].Hosts, ", ")
		if ev.Skipped {
			r.note("wave %d (%s): converged already", ev.Wave+1, hosts)
			r.line(lineWave, "", fmt.Sprintf("wave %d (%s): converged already, skipped", ev.Wave+1, hosts))
			return
		}
		r.note("wave %d started: %s", ev.Wave+1, hosts)
		r.line(lineWave, "", fmt.Sprintf("wave %d started: %s", ev.Wave+1, hosts))
	case EventHostFailed:
		why := r.failureText(ev)
		r.note("HOST FAILED: %s: %s; no later wave starts", ev.Host, why)
		r.line(lineHostFailed, ev.Host, why)
		if r.opts.Log != nil {
			r.opts.Log.Error("host failed: no later wave starts", "host", ev.Host, "why", why, "rollout", r.f.rolloutID())
		}
	case EventPhase:
		name := PhaseName(ev.Phase)
		switch ev.Phase {
		case PhasePaused:
			r.note("ROLLOUT PAUSED: the hosts hold where they are")
		case PhaseRollingBack:
			r.note("rollback_all: the rolled hosts return to what they ran before this rollout")
		default:
			r.note("rollout %s", name)
		}
		r.line(linePhase, "", name)
	}
}

// failureText says why a host failed, from its session's snapshot.
func (r *run) failureText(ev Event) string {
	h := r.host(ev.Host)
	if ev.Cause == CauseLost {
		why := "lost: its engine stopped answering mid-rollout"
		if h != nil && h.snap.EngineErr != "" {
			why += " (" + h.snap.EngineErr + ")"
		}
		return why
	}
	if h == nil {
		return "its roll failed"
	}
	s := h.snap
	switch {
	case s.Pause != nil && !s.Pause.ByOperator:
		return "its roll failed: " + s.Pause.Reason
	case len(s.Plan.Failures()) > 0:
		return "its roll failed: " + s.Plan.Failures()[0].Text()
	case len(s.RolledBack) > 0:
		rb := s.RolledBack[len(s.RolledBack)-1]
		return fmt.Sprintf("its roll failed: %s/%d rolled back (%s)", rb.Workload, rb.Slot, rb.Reason)
	case s.Refusal != nil:
		return "refused: " + s.Refusal.Reason
	case s.Halted != "":
		return "halted: " + s.Halted
	}
	return "its roll failed"
}

// lines are the fleet's journal lines, written beside the loop in order
// by a loopkit.Worker: push never blocks; ready says lines were written
// (or failed). Only the loop calls them.
type lines struct {
	w *loopkit.Worker[journal.Entry, error] // nil: no journal
	n int                                   // pushed and not yet taken (see pending)
}

func newLines(j *journal.Journal) *lines {
	if j == nil {
		return &lines{}
	}
	return &lines{w: loopkit.StartWorker(func(e journal.Entry) error { return j.Append(e) })}
}

func (l *lines) push(e journal.Entry) {
	if l.w == nil {
		return
	}
	l.w.Push(e)
	l.n++
}

// ready receives once lines were written; nil (never) with no journal.
func (l *lines) ready() <-chan struct{} {
	if l.w == nil {
		return nil
	}
	return l.w.Ready()
}

// pending is how many lines are still to be written, or written and not
// yet taken: a line whose failure the loop has not seen yet is pending.
func (l *lines) pending() int { return l.n }

// take is what came of the lines written since the last take.
func (l *lines) take() []error {
	if l.w == nil {
		return nil
	}
	out := l.w.Take()
	l.n -= len(out)
	return out
}

// close lets the writer end once its lines are written, waiting a few
// seconds at most: a hung disk is given up on.
func (l *lines) close() {
	if l.w == nil {
		return
	}
	l.w.Close()
	select {
	case <-l.w.Done():
	case <-time.After(5 * time.Second):
	}
}
