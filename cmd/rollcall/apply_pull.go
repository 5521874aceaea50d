package main

import (
	"fmt"
	"strings"

	"github.com/charmbracelet/colorprofile"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// pullText is a pull's progress in words: "pulling 40%: 2 of 4 layers,
// 1.6 of 4.0 MiB". The session reports it at each layer and each tenth
// of the bytes: apply prints a line for each when its output is not a
// terminal, and rewrites one line per pull on a terminal (liveLines).
func pullText(p reconcile.PullProgress) string {
	s := fmt.Sprintf("pulling %d%%: %d of %d layers", int(100*p.Fraction()), p.LayersDone, p.Layers)
	if p.Bytes > 0 {
		s += fmt.Sprintf(", %.1f of %.1f MiB", float64(p.BytesDone)/(1<<20), float64(p.Bytes)/(1<<20))
	}
	return s
}

// liveLines are the lines apply rewrites in place on a terminal: one per
// pull in flight, under every line printed so far. Another line is printed
// above them (they are erased, the line printed, and they are drawn
// again); a pull's line goes once its step ends, and its end is printed
// as a line of its own. Autowrap is off while they are drawn, so a line
// wider than the terminal is clipped, never wrapped (the erase counts
// lines).
type liveLines struct {
	keys  []string          // in the order the pulls began
	text  map[string]string // by step key
	drawn int               // lines on screen now; the cursor ends the last
}

const (
	eraseLine   = "\r\x1b[2K"
	lineUp      = "\x1b[1A"
	autowrapOff = "\x1b[?7l"
	autowrapOn  = "\x1b[?7h"
)

// liveTerminal reports whether apply's progress goes to a terminal that
// moves its cursor: not a pipe or a file, and not one whose profile strips
// every escape sequence (TERM=dumb).
func liveTerminal(e env, out screen) bool {
	w, ok := out.w.(*colorprofile.Writer)
	return ok && e.terminal(e.stderr) && w.Profile > colorprofile.NoTTY
}

// erase is what takes the drawn lines off the screen, leaving the cursor
// at the start of the first.
func (l *liveLines) erase() string {
	if l.drawn == 0 {
		return ""
	}
	s := eraseLine + strings.Repeat(lineUp+eraseLine, l.drawn-1)
	l.drawn = 0
	return s
}

// draw is what draws the lines, the cursor ending the last.
func (l *liveLines) draw() string {
	if len(l.keys) == 0 {
		return ""
	}
	lines := make([]string, len(l.keys))
	for i, k := range l.keys {
		lines[i] = l.text[k]
	}
	l.drawn = len(lines)
	return autowrapOff + strings.Join(lines, "\n") + autowrapOn
}

func (l *liveLines) set(key, text string) {
	if l.text == nil {
		l.text = map[string]string{}
	}
	if _, ok := l.text[key]; !ok {
		l.keys = append(l.keys, key)
	}
	l.text[key] = text
}

func (l *liveLines) drop(key string) {
	if _, ok := l.text[key]; !ok {
		return
	}
	delete(l.text, key)
	for i, k := range l.keys {
		if k == key {
			l.keys = append(l.keys[:i], l.keys[i+1:]...)
			break
		}
	}
}

// pulling shows a pull's progress: its line rewritten in place on a
// terminal, a line of its own otherwise. Its last progress is kept for
// apply --json.
func (p *progress) pulling(s reconcile.Step, pp reconcile.PullProgress, text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastPull == nil {
		p.lastPull = map[string]docker.PullProgress{}
	}
	p.lastPull[s.Key()] = pp.PullProgress
	if p.live == nil {
		p.out.printf("%s%s\n", p.prefix, text)
		return
	}
	erase := p.live.erase()
	p.live.set(s.Key(), p.prefix+text)
	p.out.printf("%s%s", erase, p.live.draw())
}

// pullEnded takes a pull's line off the live lines as its step ends (its
// end is printed as a line of its own), and keeps its last progress for
// apply --json, in the order pulls end.
func (p *progress) pullEnded(s reconcile.Step) {
	p.mu.Lock()
	defer p.mu.Unlock()
	last := p.lastPull[s.Key()]
	delete(p.lastPull, s.Key())
	p.pullEnds = append(p.pullEnds, pullEnd{key: s.Key(), last: last})
	if p.live == nil {
		return
	}
	erase := p.live.erase()
	p.live.drop(s.Key())
	p.out.printf("%s%s", erase, p.live.draw())
}

// endLive ends the live lines where they stand (the session ended with a
// pull in flight): the cursor goes under them, and they stay as printed.
func (p *progress) endLive() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live != nil && p.live.drawn > 0 {
		p.out.printf("\n")
		*p.live = liveLines{}
	}
}

// pullEnd is a pull step's end as apply saw it: its last progress.
type pullEnd struct {
	key  string
	last docker.PullProgress
	used bool
}

// pullDocs fills each pull step's last progress into doc's steps, in the
// order they ended.
func (p *progress) pullDocs(doc *applyDoc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range doc.Steps {
		rd := &doc.Steps[i]
		if rd.Pull == nil {
			continue
		}
		for j := range p.pullEnds {
			e := &p.pullEnds[j]
			if e.used || e.key != rd.key {
				continue
			}
			e.used = true
			rd.Pull.Layers, rd.Pull.LayersDone, rd.Pull.Bytes, rd.Pull.BytesDone = e.last.Layers, e.last.LayersDone, e.last.Bytes, e.last.BytesDone
			break
		}
	}
}

// newPullDoc is a pull step's own part of apply --json: its failure's
// kind (typed; the registry's words are in the step's error); its
// progress is filled in by progress.pullDocs.
func newPullDoc(r session.StepResult) *pullDoc {
	if r.Step.Action != reconcile.ActPull {
		return nil
	}
	return &pullDoc{Image: r.Step.Container, Kind: string(r.PullKind)}
}
