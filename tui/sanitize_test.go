package tui

import (
	"errors"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// evil carries a window-title OSC ended by BEL, a clear-screen CSI, a bare
// carriage return, a C1 CSI and a lone ESC.
const evil = "\x1b]0;evil\x07\x1b[2J\rX\u009b31m\x1b"

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rollcall-web-0-2222bbbb", "rollcall-web-0-2222bbbb"},
		{"web" + evil, "webX31m"},
		{"a\tb\nc", "a b c"},
		{"bad utf8 \xff!", "bad utf8 \uFFFD!"},
		{"image web:v1 → web:v2", "image web:v1 → web:v2"},
		{"\x1b[31mred\x1b[0m", "red"},
		{"del\x7f", "del"},
	} {
		if got := sanitize(tc.in); got != tc.want {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// hostile is a snapshot where every string the engine or the desired state
// gives carries control sequences.
func hostile() session.Snapshot {
	s := paused()
	name := "rollcall-web-0" + evil
	s.Slots[0].Containers[0].Name = name
	s.Slots[0].Containers[0].Image = "web:v2" + evil
	s.Slots[0].Containers[0].State = docker.State("running" + evil)
	s.Slots[0].Containers[1].Labels[docker.VersionLabel(pfx)] = "1" + evil
	s.Slots[0].Desired.Image = "web:v2" + evil
	s.Slots[0].Desired.Version = "2" + evil
	s.Slots = append(s.Slots, session.SlotView{Workload: "evil" + evil, Slot: 0, Containers: []session.ContainerView{
		view(docker.Container{ID: "ab" + evil, Name: "x" + evil, Image: "y" + evil, State: docker.StateExited, ExitCode: 1, Error: "no" + evil}, reconcile.RelExtra, false)}})
	s.Source = "rollcall.yaml" + evil
	s.Engine.Endpoint = "unix:///var/run/docker.sock" + evil
	s.Engine.Version = "27" + evil
	s.Pause.Reason = "web/0 " + name + ": booting" + evil
	s.Pause.Container = name
	s.Pause.Health = "exit 1: " + evil + "\nsecond line" + evil
	s.Pause.Logs = []string{"log " + evil, "\x1b[2J\rcleared"}
	s.Pause.DetailErr = "err" + evil
	s.Plan.Workloads[0].Changes = append(s.Plan.Workloads[0].Changes, "~ image: "+evil)
	s.Plan.Workloads[0].Notes = []string{"note" + evil}
	s.Plan.Workloads[0].Failures[0].Container = name
	s.Plan.Workloads[0].Steps = append(s.Plan.Workloads[0].Steps, reconcile.Step{Action: reconcile.ActStop,
		Workload: "web", Slot: 3, Container: name, Reason: "surplus" + evil})
	s.Plan.Workloads = append(s.Plan.Workloads, reconcile.WorkloadPlan{Name: "img" + evil, Error: "image missing" + evil})
	s.Plan.Notes = []string{"plan note" + evil}
	st := s.Plan.Workloads[0].Steps[3]
	s.Steps = map[string]session.StepStatus{st.Key(): {State: session.StepFailed, Err: "create: " + evil + "\nmore"}}
	s.Events = append(s.Events, docker.Event{Time: t0, Action: "die" + evil, Name: name, Attributes: map[string]string{"exitCode": evil, "signal" + evil: "9"}})
	s.Notes = append(s.Notes, session.Note{At: t0, Text: "note " + evil})
	s.Facts = append(s.Facts, session.Fact{Seq: 1, Kind: session.FactDesiredError, EngineAt: t0, Source: "rollcall.yaml" + evil, Err: errors.New("bad" + evil)},
		session.Fact{Seq: 2, Kind: session.FactStepFailed, EngineAt: t0, Step: st, Err: errors.New("create: " + evil)})
	s.SourceErr = errors.New("rollcall.yaml:3:5: bad" + evil + "\nline two")
	s.EngineErr = "gone" + evil
	s.Lock = session.LockInfo{Holder: &session.LockHolder{User: "mallory" + evil, PID: 1, Since: t0}, Err: "locked" + evil}
	s.Holds = map[string][]string{"web" + evil: {"deadbeef" + evil}}
	s.Confirm = &session.Confirmation{Kind: session.ConfirmDowntime, Prompt: "stop " + name + "?", Step: st, Key: st.Key()}
	return s
}

// TestRenderStripsControlSequences: a container whose name, image, health
// output and log lines carry ESC ] 0 ; … BEL, ESC [ 2 J and a bare CR
// renders with none of them: rendered in mono, the only escape sequences
// left are the console's own SGR styling, and no CR or BEL at all.
func TestRenderStripsControlSequences(t *testing.T) {
	logs := newFakeLogs()
	snap := hostile()
	for _, size := range [][2]int{{80, 24}, {120, 40}, {200, 60}} {
		for _, th := range []theme.Name{theme.Mono, theme.Dark} {
			c := &console{t: t, rec: &recorder{}}
			c.m = sized(th, size[0], size[1], snap, func(o *Options) { o.Logs = logs.source; o.Do = c.rec.do })
			screens := []string{c.m.View().Content}
			c.keys("n") // answer the question, so the panes show
			screens = append(screens, c.m.View().Content)
			c.keys("l")
			id := snap.Slots[0].Containers[0].ID
			logs.streams[id] <- docker.LogLine{Time: t0, Stream: "stderr", Text: "line " + evil}
			logs.streams[id] <- docker.LogLine{Time: t0, Stream: "stdout", Text: "\x1b[2J\r\x1b]0;evil\x07"}
			c.settle()
			screens = append(screens, c.m.View().Content)
			c.keys("d", "G", "tab", "G", "tab", "?")
			screens = append(screens, c.m.View().Content)
			c.keys("?", "E")
			screens = append(screens, c.m.View().Content)
			for i, screen := range screens {
				rest := sgr.ReplaceAllString(screen, "")
				for _, bad := range []string{"\x1b", "\x07", "\r", "\u009b", "]0;", "[2J"} {
					if strings.Contains(rest, bad) {
						t.Errorf("%s %dx%d screen %d holds %q:\n%q", th, size[0], size[1], i, bad, rest)
					}
				}
			}
			if !strings.Contains(screens[2], "line X31m") {
				t.Errorf("%s %dx%d: the log line is not shown:\n%s", th, size[0], size[1], screens[2])
			}
		}
	}
}
