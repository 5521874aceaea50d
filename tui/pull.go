package tui

import (
	"fmt"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// pullGlyph marks a pull step's progress and its failure in the plan and
// the detail pane: the image comes down from the registry.
const pullGlyph = "⇩"

// pullRow is what the plan shows of a pull step beyond its reason, from
// the session's typed values: how far the pull in flight is, or why the
// last try failed.
type pullRow struct {
	pulling  bool                 // in flight
	progress *docker.PullProgress // in flight: how far, nil until the engine says
	kind     docker.PullKind      // failed: why, "" when it did not fail
}

// pullOf is step st's pull row, nil for a step that is no pull.
func pullOf(st reconcile.Step, s session.Snapshot) *pullRow {
	if st.Action != reconcile.ActPull {
		return nil
	}
	key, r := st.Key(), &pullRow{}
	for _, run := range s.RunningSteps {
		if run.Step.Key() == key {
			r.pulling = true
			if run.Pull != nil {
				p := run.Pull.PullProgress
				r.progress = &p
			}
		}
	}
	if s.Running != nil && s.Running.Step.Key() == key && !r.pulling {
		r.pulling = true
		if s.Running.Pull != nil {
			p := s.Running.Pull.PullProgress
			r.progress = &p
		}
	}
	if k, failed := s.PullFailed(key); failed {
		r.kind = k
	}
	return r
}

// pullKindWords is a failed pull's kind in the console's words: rendered
// from the typed kind, never read from the registry's words (those are
// shown beside, as data).
func pullKindWords(k docker.PullKind) string {
	switch k {
	case docker.PullNotFound:
		return "not found"
	case docker.PullUnauthorized:
		return "unauthorized"
	case docker.PullUnreachable:
		return "registry unreachable"
	case docker.PullRateLimited:
		return "rate limited"
	case docker.PullNoSpace:
		return "no space on the engine"
	}
	return "pull failed"
}

// pullFigures is a pull's progress in figures: "40% · 2/4 layers ·
// 1.6/4.0 MiB"; "waiting for the engine" before it says anything.
func pullFigures(p *docker.PullProgress) string {
	if p == nil {
		return "waiting for the engine"
	}
	s := fmt.Sprintf("%d%% · %d/%d layers", int(100*p.Fraction()), p.LayersDone, p.Layers)
	if p.Bytes > 0 {
		s += fmt.Sprintf(" · %.1f/%.1f MiB", float64(p.BytesDone)/(1<<20), float64(p.Bytes)/(1<<20))
	}
	return s
}

// pullBar is a pull's progress bar, width cells wide (Bubbles' progress,
// drawn once for this fraction: no animation, so nothing runs between
// snapshots); plain, without colour, on the selected line.
func pullBar(k *inks, p *docker.PullProgress, width int, plain bool) string {
	frac := 0.0
	if p != nil {
		frac = p.Fraction()
	}
	bar := k.bar
	bar.SetWidth(width)
	s := bar.ViewAs(frac)
	if plain {
		s = ansi.Strip(s)
	}
	return s
}

// pullLead is what goes in front of a pull step's reason: its bar and
// figures while it runs, its kind once it failed; "" for a pull that
// neither runs nor failed. room is the reason's column width.
func (r *pullRow) lead(k *inks, room int, plain bool) string {
	switch {
	case r == nil:
		return ""
	case r.pulling:
		w := min(max(room/4, 8), 24)
		return pullGlyph + " " + pullBar(k, r.progress, w, plain) + " " + pullFigures(r.progress) + " · "
	case r.kind != "":
		words := pullGlyph + " " + pullKindWords(r.kind)
		if !plain {
			words = k.bad.paint(words)
		}
		return words + " · "
	}
	return ""
}

// pullFailed reports whether a pull step of workload w failed and waits
// out its backoff: t sends it again at once.
func (b *board) pullFailed(w string) bool {
	for bi := range b.blocks {
		if b.blocks[bi].workload != w {
			continue
		}
		for si := range b.blocks[bi].steps {
			if r := b.blocks[bi].steps[si].pull; r != nil && r.kind != "" {
				return true
			}
		}
	}
	return false
}
