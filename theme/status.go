package theme

import "charm.land/lipgloss/v2"

// Status is a state the console shows for a container or a step. Its
// string is the word shown beside its glyph; the console never shows a
// status by colour alone.
type Status string

// Container statuses.
const (
	Healthy    Status = "healthy"
	Unverified Status = "unverified" // counted healthy without a healthcheck's word (min_ready, or emergency)
	Booting    Status = "booting"
	Crashed    Status = "crashed"
	Restarting Status = "restarting"
	Paused     Status = "paused"
	Stopped    Status = "stopped" // exited cleanly, or being removed
	Missing    Status = "missing" // a desired slot with no container
	Drained    Status = "drained" // its pre_stop ran: leaving, gets no traffic
)

// Step statuses.
const (
	Queued   Status = "queued"
	Planned  Status = "planned"  // watch mode: Diff plans it, this console runs nothing
	Approved Status = "approved" // step mode: approved, waiting for its turn
	Running  Status = "running"
	Done     Status = "done"
	Failed   Status = "failed"
	Skipped  Status = "skipped"
	Waiting  Status = "waiting" // a wait step: nothing to do yet
)

// statusGlyphs are the glyphs of every status, the same in every theme.
var statusGlyphs = map[Status]string{
	Healthy:    "✓",
	Unverified: "✓",
	Booting:    "◐",
	Crashed:    "✗",
	Restarting: "↻",
	Paused:     "⏸",
	Stopped:    "■",
	Missing:    "○",
	Drained:    "⇣",
	Queued:     "…",
	Planned:    "·",
	Approved:   "☑",
	Running:    "▶",
	Done:       "✔",
	Failed:     "✘",
	Skipped:    "⤼",
	Waiting:    "◷",
}

// Glyph is the status's glyph; an unknown status gets "?".
func (s Status) Glyph() string {
	if g, ok := statusGlyphs[s]; ok {
		return g
	}
	return "?"
}

// Label is the glyph and the word: "✓ healthy".
func (s Status) Label() string { return s.Glyph() + " " + string(s) }

// StatusStyle is the colour of a status: good, under way, bad or quiet.
func (s Styles) StatusStyle(st Status) lipgloss.Style {
	switch st {
	case Healthy, Done:
		return s.OK
	case Unverified, Booting, Restarting, Approved, Waiting, Missing:
		return s.Warn
	case Crashed, Failed:
		return s.Bad
	case Running:
		return s.Heading
	default: // Paused, Stopped, Drained, Queued, Planned, Skipped
		return s.Muted
	}
}

// Status renders a status as its styled glyph and word.
func (s Styles) Status(st Status) string { return s.StatusStyle(st).Render(st.Label()) }
