package tui

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// large is a roll of n web slots: every slot has its v2 container, every
// tenth still holds its old v1 one, which the plan rolls.
func large(n int) session.Snapshot {
	s := base(1)
	var steps []reconcile.Step
	for i := range n {
		c := ctr("web", i, "web:v2", "sha256:2222", hashV2, "2", time.Minute)
		v := session.SlotView{Workload: "web", Slot: i, Desired: webV2(), Containers: []session.ContainerView{view(c, reconcile.RelUpToDate, true)}, Ready: true}
		if i%10 == 0 {
			old := ctr("web", i, "web:v1", "sha256:1111", hashV1, "1", time.Hour)
			v.Containers = append(v.Containers, view(old, reconcile.RelStale, true))
			st := reconcile.Step{Action: reconcile.ActRoll, Workload: "web", Slot: i, Container: old.Name,
				Reason: "image web:v1 → web:v2, version 1 → 2; " + c.Name + " is healthy"}
			steps = append(steps, st)
			s.Steps[st.Key()] = session.StepStatus{State: session.StepQueued}
		}
		s.Slots = append(s.Slots, v)
	}
	s.Progress = session.Progress{Ready: n, Total: n}
	s.Plan = reconcile.Plan{Workloads: []reconcile.WorkloadPlan{{Name: "web", Changes: []string{"~ image: web:v1 → web:v2"}, Steps: steps}}}
	s.Next = steps[0].Key()
	for i := range 50 {
		s.Events = append(s.Events, docker.Event{Time: t0.Add(time.Duration(i) * time.Second), Action: "start", Name: fmt.Sprintf("rollcall-web-%d-2222bbbb", i)})
	}
	return s
}

// BenchmarkView1000Slots: drawing the screen (120×40) of a 1,000-slot roll.
// Target: under 5 ms.
func BenchmarkView1000Slots(b *testing.B) {
	for _, th := range []theme.Name{theme.Dark, theme.Mono} {
		b.Run(string(th), func(b *testing.B) {
			m := sized(th, 120, 40, large(1000))
			m, _ = press(m, "G") // the cursor at the end: the worst scroll
			b.ReportAllocs()
			for b.Loop() {
				_ = m.View()
			}
		})
	}
}

// BenchmarkSnapshot1000Slots: taking in a 1,000-slot snapshot (building
// and sanitizing the board, filtering, laying out): the work per snapshot.
func BenchmarkSnapshot1000Slots(b *testing.B) {
	m := sized(theme.Dark, 120, 40, large(1000))
	snap := large(1000)
	b.ReportAllocs()
	for b.Loop() {
		m, _ = update(m, snapshotMsg{snap: snap, ok: true})
	}
}

// counter counts what the program writes to the terminal, and signals
// every write.
type counter struct {
	n     atomic.Int64
	wrote chan struct{}
}

func newCounter() *counter { return &counter{wrote: make(chan struct{}, 1)} }

func (c *counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	select {
	case c.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// quiet waits until nothing has been written for d, or 2s have passed (a
// spinning console is never quiet).
func (c *counter) quiet(d time.Duration) {
	limit := time.After(2 * time.Second)
	for {
		select {
		case <-c.wrote:
		case <-time.After(d):
			return
		case <-limit:
			return
		}
	}
}

// views counts View calls of the console and notes the snapshot drawn.
type views struct {
	Model
	n   *atomic.Int64
	seq *atomic.Uint64
}

func (v views) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := v.Model.Update(msg)
	return views{m.(Model), v.n, v.seq}, cmd
}

func (v views) View() tea.View {
	v.n.Add(1)
	v.seq.Store(v.board.seq)
	return v.Model.View()
}

// drawn waits until the program has drawn snapshot seq and written it out.
func drawn(tb testing.TB, seq *atomic.Uint64, want uint64, out *counter) {
	deadline := time.Now().Add(10 * time.Second)
	for seq.Load() != want {
		if time.Now().After(deadline) {
			tb.Fatalf("snapshot %d never drawn", want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The renderer flushes on its own ticker, later than View: on a loaded
	// machine well after 200ms. Wait for a write after the View (or 2s, if
	// it already happened), then for quiet.
	select {
	case <-out.wrote: // a signal left from before the View
	default:
	}
	select {
	case <-out.wrote:
	case <-time.After(2 * time.Second):
	}
	out.quiet(200 * time.Millisecond)
}

// program runs the console as a real program on a 120×40 truecolor
// terminal that has no input, fed snapshots through ch.
func program(tb testing.TB, ch chan session.Snapshot, out io.Writer, n *atomic.Int64, seq *atomic.Uint64) func() {
	m := New(Options{Theme: theme.Dark, Snapshots: ch, Do: func(session.Intent) {}})
	p := tea.NewProgram(views{m, n, seq}, tea.WithOutput(out), tea.WithInput(nil), tea.WithWindowSize(120, 40),
		tea.WithoutSignalHandler(), tea.WithColorProfile(colorprofile.TrueColor),
		tea.WithEnvironment([]string{"TERM=xterm-256color"}))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := p.Run(); err != nil {
			tb.Errorf("program: %v", err)
		}
	}()
	return func() { p.Quit(); wg.Wait() }
}

// withStatus is the mid-roll with the next step (roll web/0) in state.
func withStatus(approved bool) session.Snapshot {
	s := midRoll()
	s.Running = nil
	restart := s.Plan.Workloads[1].Steps[0]
	s.Steps[restart.Key()] = session.StepStatus{State: session.StepQueued}
	roll := s.Plan.Workloads[0].Steps[0]
	s.Steps[roll.Key()] = session.StepStatus{State: session.StepQueued, Approved: approved}
	return s
}

// BenchmarkBytesPerStatusChange: what the program writes to a 120×40
// terminal when one step's status changes (queued ↔ approved), as the
// renderer actually writes it; reported as bytes/change.
func BenchmarkBytesPerStatusChange(b *testing.B) {
	out := newCounter()
	ch := make(chan session.Snapshot, 1)
	var n atomic.Int64
	var seq atomic.Uint64
	stop := program(b, ch, out, &n, &seq)
	defer stop()
	s := withStatus(false)
	ch <- s
	drawn(b, &seq, s.Seq, out)
	first := out.n.Load()

	var total int64
	changes := 0
	for b.Loop() {
		before := out.n.Load()
		s := withStatus(changes%2 == 0)
		s.Seq += uint64(changes + 1)
		ch <- s
		drawn(b, &seq, s.Seq, out)
		total += out.n.Load() - before
		changes++
	}
	b.ReportMetric(float64(total)/float64(changes), "bytes/change")
	b.ReportMetric(float64(first), "bytes/first-frame")
}

// idleSnapshot is converged half a minute on: every age on screen is in minutes
// or hours ("10m", "3h"), the soonest to change 30s away, and nothing
// counts down.
func idleSnapshot(seq uint64) session.Snapshot {
	s := converged()
	s.Seq, s.At = seq, t0.Add(30*time.Second)
	return s
}

// TestIdleRendersNothing: with nothing changing, the console renders and
// writes nothing: no ticks, no polling; the ages on screen change only in
// 30s, and the clock waits for that. Run with -v for the figures.
func TestIdleRendersNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 2s")
	}
	out := newCounter()
	ch := make(chan session.Snapshot, 1)
	var n atomic.Int64
	var seq atomic.Uint64
	stop := program(t, ch, out, &n, &seq)
	defer stop()
	ch <- idleSnapshot(40)
	drawn(t, &seq, 40, out)

	views0, bytes0 := n.Load(), out.n.Load()
	const idle = 2 * time.Second
	time.Sleep(idle)
	renders, written := n.Load()-views0, out.n.Load()-bytes0
	t.Logf("idle %s: %d renders (%.1f/s), %d bytes written", idle, renders, float64(renders)/idle.Seconds(), written)
	if renders != 0 || written != 0 {
		t.Errorf("idle console rendered %d times and wrote %d bytes in %s, want none", renders, written, idle)
	}

	// While a step runs, the spinner turns: that is the only ticking.
	ch <- midRoll()
	drawn(t, &seq, midRoll().Seq, out)
	views0 = n.Load()
	time.Sleep(time.Second)
	spinning := n.Load() - views0
	t.Logf("a step running: %d renders/s (the spinner)", spinning)
	if spinning == 0 || spinning > 20 {
		t.Errorf("a running step gave %d renders/s, want the spinner's ~12", spinning)
	}
	ch <- idleSnapshot(99)
	drawn(t, &seq, 99, out)
	time.Sleep(200 * time.Millisecond) // a tick already on its way lands and is dropped
	views0 = n.Load()
	time.Sleep(time.Second)
	if after := n.Load() - views0; after != 0 {
		t.Errorf("after the step ended: %d renders/s, want 0 (the spinner must stop)", after)
	}
}

// BenchmarkIdleFrame: one frame of an idle console at 120×40 (issue 26
// row 19): the clock moves a second (an uptime figure changes) and the
// screen is drawn. With the demo's few slots this is what the idle
// console pays each second while a container is younger than a minute.
func BenchmarkIdleFrame(b *testing.B) {
	for _, sz := range []struct{ w, h int }{{120, 40}, {80, 24}} {
		b.Run(fmt.Sprintf("%dx%d", sz.w, sz.h), func(b *testing.B) {
			s := converged()
			for i := range s.Slots {
				for j := range s.Slots[i].Containers {
					c := &s.Slots[i].Containers[j]
					c.Created, c.StartedAt = t0.Add(-10*time.Second), t0.Add(-9*time.Second)
				}
			}
			m := sized(theme.Dark, sz.w, sz.h, s)
			at := t0
			b.ReportAllocs()
			for b.Loop() {
				at = at.Add(time.Second)
				m, _ = update(m, clockMsg{due: at, at: at})
				_ = m.View()
			}
		})
	}
}

// BenchmarkIdleProgramCPU (issue 26 row 19): the console as a real
// program on a 120×40 terminal, converged, its containers younger than a
// minute, so an uptime changes each second and the clock draws a frame
// for it; nothing else happens. Reports the process's CPU per second of
// that (utime+stime; the whole test binary, so an upper bound) and per
// frame: rollbench's idle goal is 1 ms/s (0.1 %).
func BenchmarkIdleProgramCPU(b *testing.B) {
	out := newCounter()
	ch := make(chan session.Snapshot, 1)
	var n atomic.Int64
	var seq atomic.Uint64
	stop := program(b, ch, out, &n, &seq)
	defer stop()
	s := converged()
	s.At = time.Now() // the clock moves by the wall's: ages tick in real seconds
	for i := range s.Slots {
		for j := range s.Slots[i].Containers {
			c := &s.Slots[i].Containers[j]
			c.Created, c.StartedAt = s.At.Add(-5*time.Second), s.At.Add(-4*time.Second)
		}
	}
	ch <- s
	drawn(b, &seq, s.Seq, out)
	var cpu time.Duration
	var frames int64
	var wall time.Duration
	for b.Loop() {
		v0 := n.Load()
		c0, t0 := cpuTime(), time.Now()
		time.Sleep(5 * time.Second)
		cpu += cpuTime() - c0
		wall += time.Since(t0)
		frames += n.Load() - v0
	}
	b.ReportMetric(float64(cpu.Microseconds())/wall.Seconds(), "cpu-µs/s")
	b.ReportMetric(float64(frames)/wall.Seconds(), "frames/s")
	if frames > 0 {
		b.ReportMetric(float64(cpu.Microseconds())/float64(frames), "cpu-µs/frame")
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
