package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/theme"
)

// apply prints a line for each progress event of a pull: the share done,
// layers and bytes.
func TestApplyPrintsPullProgress(t *testing.T) {
	var b bytes.Buffer
	p := progressOn(&b)
	s := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/app:v2"}
	for _, done := range []int64{0, 1 << 20, 4 << 20} {
		pp := reconcile.PullProgress{Step: s, PullProgress: docker.PullProgress{Layers: 4, LayersDone: int(done >> 20), Bytes: 4 << 20, BytesDone: done}}
		p.event(session.Fact{Kind: session.FactPulling, Step: s, Pull: &pp})
	}
	out := b.String()
	for _, want := range []string{"pull    web/-", "127.0.0.1:5000/team/app:v2", "pulling 0%: 0 of 4 layers, 0.0 of 4.0 MiB",
		"pulling 25%: 1 of 4 layers, 1.0 of 4.0 MiB", "pulling 100%: 4 of 4 layers, 4.0 of 4.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply's progress lacks %q:\n%s", want, out)
		}
	}
}

// vt is the little of a terminal apply's live lines use: text, \n, \r,
// erase line (CSI 2K), cursor up (CSI 1A); autowrap on and off are read
// and ignored (the lines are short here). It is what an operator sees.
type vt struct {
	lines []string
	row   int
}

func (tm *vt) write(s string) {
	if tm.lines == nil {
		tm.lines = []string{""}
	}
	for len(s) > 0 {
		switch {
		case strings.HasPrefix(s, eraseLine):
			tm.lines[tm.row], s = "", s[len(eraseLine):]
		case strings.HasPrefix(s, lineUp):
			tm.row, s = max(tm.row-1, 0), s[len(lineUp):]
		case strings.HasPrefix(s, autowrapOff), strings.HasPrefix(s, autowrapOn):
			s = s[len(autowrapOn):]
		case s[0] == '\n':
			tm.row, s = tm.row+1, s[1:]
			if tm.row == len(tm.lines) {
				tm.lines = append(tm.lines, "")
			}
		case s[0] == '\r':
			s = s[1:] // every \r here comes with an erase: the column is not kept
		case s[0] == '\x1b':
			panic("vt: unknown escape in " + strconvQuote(s))
		default:
			i := strings.IndexAny(s, "\n\r\x1b")
			if i < 0 {
				i = len(s)
			}
			tm.lines[tm.row] += s[:i]
			s = s[i:]
		}
	}
}

func strconvQuote(s string) string { return fmt.Sprintf("%q", s) }

func (tm *vt) count(sub string) int {
	n := 0
	for _, l := range tm.lines {
		if strings.Contains(l, sub) {
			n++
		}
	}
	return n
}

// termWriter feeds a term.
type termWriter struct{ tm *vt }

func (w termWriter) Write(b []byte) (int, error) { w.tm.write(string(b)); return len(b), nil }

// On a terminal, apply shows each pull in flight as one line it rewrites
// (two pulls: two lines); a line printed meanwhile goes above them; a
// pull's end replaces its line with the step's end.
func TestApplyRewritesOneLinePerPullOnATerminal(t *testing.T) {
	tm := &vt{}
	p := &progress{out: screen{w: termWriter{tm}, st: theme.New(theme.Mono)}, live: &liveLines{}}
	web := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/web:v2"}
	api := reconcile.Step{Action: reconcile.ActPull, Workload: "api", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/api:v7"}
	pulled := func(s reconcile.Step, mib int64) {
		pp := reconcile.PullProgress{Step: s, PullProgress: docker.PullProgress{Layers: 4, LayersDone: int(mib), Bytes: 4 << 20, BytesDone: mib << 20}}
		p.event(session.Fact{Kind: session.FactPulling, Step: s, Pull: &pp})
	}
	p.event(session.Fact{Kind: session.FactStepStarted, Step: web})
	for mib := range int64(4) {
		pulled(web, mib)
		if n := tm.count("pulling"); n != 1 {
			t.Fatalf("at %d MiB: %d pulling lines on screen, want 1:\n%s", mib, n, strings.Join(tm.lines, "\n"))
		}
	}
	p.event(session.Fact{Kind: session.FactStepStarted, Step: api})
	pulled(api, 1)
	pulled(web, 3)
	if n, m := tm.count("pulling"), tm.count("pulling 75%"); n != 2 || m != 1 {
		t.Fatalf("two pulls: %d pulling lines (%d of web at 75%%), want 2 (1):\n%s", n, m, strings.Join(tm.lines, "\n"))
	}
	last := tm.lines[len(tm.lines)-2:]
	if !strings.Contains(last[0], "web") || !strings.Contains(last[1], "api") {
		t.Fatalf("the pulls' lines are not last, in the order they began:\n%s", strings.Join(tm.lines, "\n"))
	}
	p.event(session.Fact{Kind: session.FactStepDone, Step: web, Duration: 2 * time.Second})
	if n := tm.count("pulling"); n != 1 || !strings.Contains(tm.lines[len(tm.lines)-1], "api") {
		t.Fatalf("web's pull done: %d pulling lines, want api's alone, last:\n%s", n, strings.Join(tm.lines, "\n"))
	}
	if tm.count("✓ pull    web/-") != 1 {
		t.Fatalf("web's end is not printed:\n%s", strings.Join(tm.lines, "\n"))
	}
	p.event(session.Fact{Kind: session.FactStepFailed, Step: api, Duration: time.Second, Err: errors.New("pull api: cancelled")})
	p.endLive()
	if n := tm.count("pulling"); n != 0 {
		t.Fatalf("every pull ended: %d pulling lines left:\n%s", n, strings.Join(tm.lines, "\n"))
	}
	t.Logf("the screen:\n%s", strings.Join(tm.lines, "\n"))
	if got := len(tm.lines); got > 6 {
		t.Fatalf("%d lines for 2 pulls of 5 reports, want a line per start and end:\n%s", got, strings.Join(tm.lines, "\n"))
	}
}

// Not on a terminal (a pipe, a CI log), each report is a line of its own,
// without an escape sequence.
func TestApplyPrintsAPullLinePerReportWhenNotATerminal(t *testing.T) {
	var b bytes.Buffer
	p := progressOn(&b)
	s := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/app:v2"}
	for tenth := range int64(11) {
		pp := reconcile.PullProgress{Step: s, PullProgress: docker.PullProgress{Layers: 1, Bytes: 10 << 20, BytesDone: tenth << 20}}
		p.event(session.Fact{Kind: session.FactPulling, Step: s, Pull: &pp})
	}
	p.event(session.Fact{Kind: session.FactStepDone, Step: s, Duration: time.Second})
	p.endLive()
	if n := strings.Count(b.String(), "\n"); n != 12 || strings.Contains(b.String(), "\x1b") || strings.Contains(b.String(), "\r") {
		t.Fatalf("%d lines, want 12 and no escape:\n%q", n, b.String())
	}
}

// apply --json: a pull step has its own part, typed: its failure's kind
// and its last progress; every other step has "pull": null.
func TestApplyJSONHasThePullsTyped(t *testing.T) {
	var b bytes.Buffer
	p := progressOn(&b)
	pull := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/web:v2"}
	start := reconcile.Step{Action: reconcile.ActStart, Workload: "web", Slot: 0, Container: "rollcall-web-0-2222bbbb"}
	for _, done := range []int{1, 2} {
		pp := reconcile.PullProgress{Step: pull, PullProgress: docker.PullProgress{Layers: 3, LayersDone: done, Bytes: 3 << 20, BytesDone: int64(done) << 20}}
		p.event(session.Fact{Kind: session.FactPulling, Step: pull, Pull: &pp})
	}
	p.event(session.Fact{Kind: session.FactStepFailed, Step: pull, Duration: time.Second, Err: errors.New("pull web: 429")})
	p.event(session.Fact{Kind: session.FactStepDone, Step: pull, Duration: time.Second}) // the retry, nothing to pull any more
	res := session.Outcome{Converged: true, Steps: []session.StepResult{
		{Step: pull, Err: "pull web: pull 127.0.0.1:5000/team/web:v2: rate limited by the registry: toomanyrequests", PullKind: docker.PullRateLimited},
		{Step: pull},
		{Step: start},
	}}
	doc := newApplyDoc(&spec.Desired{Source: "rollcall.yaml", Prefix: "rollcall"}, res, "converged", nil)
	p.pullDocs(&doc)
	var out bytes.Buffer
	if err := writeJSON(&out, doc); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Steps []struct {
			Action string           `json:"action"`
			Pull   *json.RawMessage `json:"pull"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`{"image":"127.0.0.1:5000/team/web:v2","kind":"rate-limited","layers":3,"layers_done":2,"bytes":3145728,"bytes_done":2097152}`,
		`{"image":"127.0.0.1:5000/team/web:v2","kind":"","layers":0,"layers_done":0,"bytes":0,"bytes_done":0}`,
		"",
	}
	for i, s := range got.Steps {
		var have string
		if s.Pull != nil {
			var c bytes.Buffer
			_ = json.Compact(&c, *s.Pull)
			have = c.String()
		}
		if have != want[i] {
			t.Errorf("step %d (%s): pull %s, want %s", i, s.Action, have, want[i])
		}
	}
	if !strings.Contains(out.String(), `"pull": null`) {
		t.Errorf("the start step has no \"pull\": null:\n%s", out.String())
	}
}
