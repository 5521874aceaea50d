package fleet

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/reconcile/reconciletest"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// waitLimit bounds every wait of a test; a passing test takes a fraction.
const waitLimit = 15 * time.Second

// fleetYAML is a desired file: web on image, replicas slots on each of
// hosts (a 1s healthcheck), and the fleet lines given.
func fleetYAML(image string, replicas int, hosts []string, fleet ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workloads:\n  web:\n    image: %s\n    replicas: %d\n", image, replicas)
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s}\n")
	b.WriteString("    update:\n      health_deadline: 10s\n      failure_action: pause\n")
	b.WriteString("hosts:\n")
	for _, h := range hosts {
		fmt.Fprintf(&b, "  %s: {endpoint: \"unix:///run/%s.sock\"}\n", h, h)
	}
	if len(fleet) > 0 {
		b.WriteString("fleet:\n")
		for _, l := range fleet {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// memSource is a desired source held in memory, changed with Set.
type memSource struct {
	mu   sync.Mutex
	text string
	ch   chan struct{}
}

func newMemSource(text string) *memSource { return &memSource{text: text, ch: make(chan struct{}, 1)} }

func (m *memSource) Name() string { return "fleet.yaml" }

func (m *memSource) Load(context.Context) (*spec.Desired, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return load.Parse("fleet.yaml", []byte(m.text))
}

func (m *memSource) Changes(context.Context) <-chan struct{} { return m.ch }

func (m *memSource) Set(text string) {
	m.mu.Lock()
	m.text = text
	m.mu.Unlock()
	loopkit.Signal(m.ch)
}

// world is several fake engines on one clock, and a log of every
// mutating call that reached any of them, in the order they came.
type world struct {
	t       *testing.T
	clock   *fake.ManualClock
	engines map[string]*engine
	names   []string
	lockDir string

	mu  sync.Mutex
	log []mutation
	// The waves expected (expectWaves), and the image and replicas each
	// wave must be healthy on before a host of a later one gets a create.
	waves        [][]string
	waveImage    string
	waveReplicas int
}

// mutation is one mutating call, as the world's log holds it.
type mutation struct {
	host, call string
	// earlierReady: at that moment every host of the waves before this
	// host's ran every slot on the expected image, healthy (expectWaves;
	// for creates only, true for the other calls).
	earlierReady bool
	at           time.Time // by the world's clock
}

// engine is one fake engine of the world, reached through a client that
// can go away (down) and logs every mutating call to the world.
type engine struct {
	name string
	fake *fake.Engine
	w    *world
	down atomic.Bool
	// gone is closed as the engine goes away: its event streams end.
	mu   sync.Mutex
	gone chan struct{}
	// dead: the dialer does not reach it at all.
	dead atomic.Bool
	// slowList delays every List (wall time): a session slow to see its
	// engine.
	slowList atomic.Int64
}

// newWorld makes one fake engine per name, each with an engine ID of
// its own and web:v1, web:v2 (healthy 1s after start) and web:bad (never
// healthy in time).
func newWorld(t *testing.T, names ...string) *world {
	w := &world{t: t, clock: fake.NewManualClock(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)),
		engines: map[string]*engine{}, names: names, lockDir: t.TempDir()}
	for i, n := range names {
		f := fake.New(fake.Options{Clock: w.clock, Seed: int64(i + 1), Endpoint: "unix:///run/" + n + ".sock", EngineID: "engine-" + n})
		f.AddImage("web:v1", "sha256:1111", fake.Behaviour{ReadyAfter: time.Second})
		f.AddImage("web:v2", "sha256:2222", fake.Behaviour{ReadyAfter: time.Second})
		f.AddImage("web:bad", "sha256:bbbb", fake.Behaviour{ReadyAfter: time.Hour})
		w.engines[n] = &engine{name: n, fake: f, w: w, gone: make(chan struct{})}
	}
	return w
}

// seed converges every engine to image, replicas slots, and forgets the
// calls it took.
func (w *world) seed(image string, replicas int) {
	w.t.Helper()
	d, err := load.Parse("seed.yaml", []byte(fleetYAML(image, replicas, w.names)))
	if err != nil {
		w.t.Fatal(err)
	}
	d.Hosts, d.Fleet = nil, nil
	for _, n := range w.names {
		f := w.engines[n].fake
		_, err := reconciletest.Converge(context.Background(), f, d, reconciletest.Options{
			Now:       w.clock.Now,
			Sleep:     func(_ context.Context, d time.Duration) error { w.clock.Advance(d); return nil },
			MaxRounds: 100,
		})
		if err != nil {
			w.t.Fatalf("seed %s: %v", n, err)
		}
		f.ResetCalls()
	}
}

// dial is the fleet's Dialer into the world.
func (w *world) dial(ctx context.Context, h *spec.Host) (docker.Client, error) {
	e := w.engines[h.Name]
	if e == nil {
		return nil, fmt.Errorf("no engine %s", h.Name)
	}
	if e.dead.Load() {
		return nil, fmt.Errorf("dial %s: connection refused", h.Endpoint)
	}
	return e, nil
}

// goAway makes an engine stop answering: every call fails and its event
// streams end.
func (e *engine) goAway() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down.CompareAndSwap(false, true) {
		close(e.gone)
	}
}

// comeBack makes an engine that went away answer again.
func (e *engine) comeBack() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down.CompareAndSwap(true, false) {
		e.gone = make(chan struct{})
	}
}

var errGone = errors.New("engine gone: connection refused")

func (e *engine) check() error {
	if e.down.Load() {
		return errGone
	}
	return nil
}

// ready reports whether every container of an engine runs image,
// healthy, replicas of them.
func (w *world) ready(host, image string, replicas int) bool {
	cs, err := w.engines[host].fake.List(context.Background(), "rollcall")
	if err != nil || len(cs) != replicas {
		return false
	}
	for _, c := range cs {
		if c.Image != image || c.State != docker.StateRunning || c.Health != docker.HealthHealthy {
			return false
		}
	}
	return true
}

// expectWaves tells the log the waves a rollout to image should go in:
// each create is logged with whether every host of the waves before its
// host's was all healthy on image then.
func (w *world) expectWaves(image string, replicas int, waves ...[]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waves, w.waveImage, w.waveReplicas = waves, image, replicas
}

func (e *engine) record(call string) {
	m := mutation{host: e.name, call: call, earlierReady: true, at: e.w.clock.Now()}
	w := e.w
	if strings.HasPrefix(call, "create:") {
		w.mu.Lock()
		waves, img, n := w.waves, w.waveImage, w.waveReplicas
		w.mu.Unlock()
	find:
		for _, wave := range waves {
			if slices.Contains(wave, e.name) {
				break find
			}
			for _, h := range wave {
				if !w.ready(h, img, n) {
					m.earlierReady = false
				}
			}
		}
	}
	w.mu.Lock()
	w.log = append(w.log, m)
	w.mu.Unlock()
}

// mutations is the world's log so far.
func (w *world) mutations() []mutation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// mutated is the hosts that got a mutating call, in the order of their first.
func (w *world) mutated() []string {
	var out []string
	for _, m := range w.mutations() {
		if !slices.Contains(out, m.host) {
			out = append(out, m.host)
		}
	}
	return out
}

// The Client of an engine: the fake's, failing while the engine is away,
// and logging each mutating call to the world.

func (e *engine) Info(ctx context.Context) (docker.EngineInfo, error) {
	if err := e.check(); err != nil {
		return docker.EngineInfo{}, err
	}
	return e.fake.Info(ctx)
}

func (e *engine) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	if d := time.Duration(e.slowList.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return e.fake.List(ctx, prefix)
}

func (e *engine) Inspect(ctx context.Context, id string) (docker.ContainerDetail, error) {
	if err := e.check(); err != nil {
		return docker.ContainerDetail{}, err
	}
	return e.fake.Inspect(ctx, id)
}

func (e *engine) ImageInspect(ctx context.Context, ref string) (docker.Image, error) {
	if err := e.check(); err != nil {
		return docker.Image{}, err
	}
	return e.fake.ImageInspect(ctx, ref)
}

func (e *engine) Create(ctx context.Context, s docker.CreateSpec) (string, error) {
	if err := e.check(); err != nil {
		return "", err
	}
	e.record("create:" + s.Name)
	return e.fake.Create(ctx, s)
}

func (e *engine) Stop(ctx context.Context, id string, grace time.Duration) error {
	if err := e.check(); err != nil {
		return err
	}
	e.record("stop:" + id)
	return e.fake.Stop(ctx, id, grace)
}

func (e *engine) Remove(ctx context.Context, id string) error {
	if err := e.check(); err != nil {
		return err
	}
	e.record("remove:" + id)
	return e.fake.Remove(ctx, id)
}

func (e *engine) Restart(ctx context.Context, id string, grace time.Duration) error {
	if err := e.check(); err != nil {
		return err
	}
	e.record("restart:" + id)
	return e.fake.Restart(ctx, id, grace)
}

func (e *engine) Update(ctx context.Context, id string, l docker.Limits) error {
	if err := e.check(); err != nil {
		return err
	}
	e.record("update:" + id)
	return e.fake.Update(ctx, id, l)
}

func (e *engine) Exec(ctx context.Context, id string, cmd []string) (int, string, error) {
	if err := e.check(); err != nil {
		return 0, "", err
	}
	return e.fake.Exec(ctx, id, cmd)
}

func (e *engine) Logs(ctx context.Context, id string, o docker.LogOptions) (<-chan docker.LogLine, error) {
	if err := e.check(); err != nil {
		return nil, err
	}
	return e.fake.Logs(ctx, id, o)
}

// Events forwards the fake's stream until the engine goes away: then the
// stream breaks (an error) and ends.
func (e *engine) Events(ctx context.Context, prefix string, since time.Time) (<-chan docker.Event, <-chan error) {
	evc, errc := make(chan docker.Event), make(chan error, 1)
	if err := e.check(); err != nil {
		errc <- err
		close(evc)
		return evc, errc
	}
	e.mu.Lock()
	gone := e.gone
	e.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	in, inErr := e.fake.Events(ctx, prefix, since)
	go func() {
		defer cancel()
		defer close(evc)
		for {
			select {
			case <-gone:
				errc <- errGone
				return
			case <-ctx.Done():
				return
			case err, ok := <-inErr:
				if ok {
					errc <- err
					return
				}
				inErr = nil
			case ev, ok := <-in:
				if !ok {
					return
				}
				select {
				case evc <- ev:
				case <-gone:
					errc <- errGone
					return
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return evc, errc
}

var _ docker.Client = (*engine)(nil)

// run is one fleet running over the world.
type fleetRun struct {
	t    *testing.T
	w    *world
	src  *memSource
	opts Options
	f    *Fleet
	last Snapshot
	done chan error
	// cancel ends Run; stopped: stop waited for it.
	cancel  context.CancelFunc
	stopped bool
	// noRefresh keeps drive from asking the hosts for relists (each of
	// which makes a plan in the making stale).
	noRefresh bool
}

func (w *world) fleet(text string, mode session.Mode) *fleetRun {
	src := newMemSource(text)
	return &fleetRun{t: w.t, w: w, src: src, opts: Options{
		Source: src, Dial: w.dial, Mode: mode, User: "tester", Now: w.clock.Now, LockDir: w.lockDir,
		Coalesce: 2 * time.Millisecond, Settle: -1, DialTimeout: 2 * time.Second,
	}}
}

// withJournal journals the fleet to a file and returns its path.
func (r *fleetRun) withJournal() string {
	path := filepath.Join(r.t.TempDir(), "journal.jsonl")
	j, err := journal.Open(path, journal.Options{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { j.Close() })
	r.opts.Journal = j
	return path
}

func (r *fleetRun) start() *fleetRun {
	r.t.Helper()
	r.f = New(r.opts)
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.done = make(chan error, 1)
	go func() { r.done <- r.f.Run(ctx) }()
	r.t.Cleanup(r.stop)
	return r
}

// stop ends the fleet and waits for Run to return.
func (r *fleetRun) stop() {
	r.cancel()
	if r.stopped {
		return
	}
	r.stopped = true
	select {
	case err := <-r.done:
		if err != nil {
			r.t.Errorf("Run: %v", err)
		}
	case <-time.After(waitLimit):
		r.t.Errorf("Run did not return after cancel")
	}
}

// waitFor reads snapshots until cond holds, without moving the clock.
func (r *fleetRun) waitFor(what string, cond func(Snapshot) bool) Snapshot {
	r.t.Helper()
	return r.await(what, cond, false)
}

// drive reads snapshots until cond holds; whenever the fleet is quiet it
// moves the clock 500ms, lets the engines catch up, and asks every host
// for a relist.
func (r *fleetRun) drive(what string, cond func(Snapshot) bool) Snapshot {
	r.t.Helper()
	return r.await(what, cond, true)
}

func (r *fleetRun) await(what string, cond func(Snapshot) bool, move bool) Snapshot {
	r.t.Helper()
	if r.last.Seq > 0 && cond(r.last) {
		return r.last
	}
	deadline := time.After(waitLimit)
	// The clock moves every 20ms of wall time, not after 20ms without a
	// snapshot: a session whose wait ends now relists until the clock
	// moves past it, and would never fall quiet.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case snap, ok := <-r.f.Snapshots():
			if !ok {
				r.t.Fatalf("waiting for %s: the fleet ended", what)
			}
			r.last = snap
			if cond(snap) {
				return snap
			}
			continue
		case <-tick.C:
		case <-deadline:
			r.t.Fatalf("waiting for %s: gave up; last snapshot:\n%s", what, describe(r.last))
		}
		if move && !running(r.last) {
			r.w.clock.Advance(500 * time.Millisecond)
			for _, e := range r.w.engines {
				e.fake.Tick()
			}
			for _, h := range r.last.Hosts {
				if !r.noRefresh {
					r.f.Do(ToHost{Host: h.Name, Intent: session.Refresh{}})
				}
			}
		}
	}
}

// running reports whether a step runs on any host.
func running(s Snapshot) bool {
	for _, h := range s.Hosts {
		if len(h.Session.RunningSteps) > 0 {
			return true
		}
	}
	return false
}

// quiet drives the fleet on for a while (the clock moves d), so that
// whatever it would still do, it does.
func (r *fleetRun) quiet(d time.Duration) Snapshot {
	r.t.Helper()
	until := r.w.clock.Now().Add(d)
	return r.drive("the clock to move on", func(Snapshot) bool { return !r.w.clock.Now().Before(until) })
}

// describe renders a fleet snapshot for failure messages.
func describe(s Snapshot) string {
	var b strings.Builder
	fmt.Fprintf(&b, "seq %d mode %s phase %s rollout %q steady %v blocked %q lock %q src %v\n", s.Seq, s.Mode, PhaseName(s.Decision.Phase),
		s.RolloutID, s.Steady, s.Blocked, s.LockErr, s.SourceErr)
	for _, w := range s.Decision.Waves {
		fmt.Fprintf(&b, "  wave %d %v status %d waits %+v\n", w.Index+1, w.Hosts, w.Status, w.Waits)
	}
	for _, h := range s.Hosts {
		ss := h.Session
		fmt.Fprintf(&b, "  host %s: verdict %+v gate %q dial %q connected %v progress %s mode %s lock %v waiting %q plan %q\n",
			h.Name, h.Verdict, h.Gate, h.DialErr, ss.Connected, ss.Progress, ss.Mode, ss.Lock.Held, ss.Waiting, ss.Plan.SummaryLine())
		if ss.Pause != nil {
			fmt.Fprintf(&b, "    paused: %s\n", ss.Pause.Reason)
		}
		for _, st := range ss.Plan.Steps() {
			fmt.Fprintf(&b, "    step %s %s until %s (now %s): %s\n", st.Action, st.Target(), st.Until.Format(time.TimeOnly), ss.At.Format(time.TimeOnly), st.Reason)
		}
		for _, c := range ss.Containers {
			fmt.Fprintf(&b, "    container %s %s %s %s\n", c.Name, c.Image, c.State, c.Health)
		}
	}
	for _, n := range s.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n.Text)
	}
	return b.String()
}

// engineImages counts the running containers of each image on an engine,
// as the engine itself has them.
func (w *world) engineImages(host string) map[string]int {
	out := map[string]int{}
	cs, _ := w.engines[host].fake.List(context.Background(), "rollcall")
	for _, c := range cs {
		if c.State == docker.StateRunning {
			out[c.Image]++
		}
	}
	return out
}

func hasNote(s Snapshot, substr string) bool {
	for _, n := range s.Notes {
		if strings.Contains(n.Text, substr) {
			return true
		}
	}
	return false
}
