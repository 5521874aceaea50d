package session

// Tests of guards that each once had no test: every one of them was broken
// on purpose, and the whole fast suite still passed.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// The journal line of an operator's decision binds as a step's does: when
// it cannot be written the session halts, and what was decided is not acted
// on, even though the journal would take the step's own line again.
func TestDecisionJournalFailureHalts(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep)
	path := h.withJournal()
	// Broken, the journal's path is a link to itself: every append fails
	// (its stat says ELOOP). Put back, appends work again.
	aside := path + ".aside"
	var once sync.Once
	putBack := func() {
		once.Do(func() {
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
			if err := os.Rename(aside, path); err != nil {
				t.Error(err)
			}
		})
	}
	var launched atomic.Int32
	// A step that turns running finds the journal whole again: only the
	// decision's line failed.
	h.opts.OnStep = func(reconcile.Step, time.Time) { launched.Add(1); putBack() }
	h.start()
	snap := h.waitFor("the start in the plan", func(s Snapshot) bool {
		return s.Fresh && s.Lock.Held && len(s.Plan.Executable()) == 1
	})
	if err := os.Rename(path, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(putBack)
	h.s.Do(ApproveStep{Key: snap.Plan.Executable()[0].Key()})
	snap = h.waitFor("the halt, or the approved step", func(s Snapshot) bool {
		return s.Halted != "" || s.Running != nil || len(s.Recent) > 0
	})
	h.settle()
	if m := f.Mutations(); len(m) != 0 || launched.Load() != 0 {
		t.Fatalf("the approval whose journal line failed was acted on: %d step(s) launched, mutations %q", launched.Load(), m)
	}
	if !strings.Contains(snap.Halted, "journal") {
		t.Errorf("halted %q, want the journal named", snap.Halted)
	}
}

// listGate holds one list at the door (before it reads the engine), and
// drops the events of one container, so the session learns of that
// container only from a list.
type listGate struct {
	docker.Client
	mu      sync.Mutex
	armed   bool
	held    chan struct{}
	release chan struct{}
	muted   string
}

func (g *listGate) arm(muted string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.muted = true, muted
}

func (g *listGate) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	g.mu.Lock()
	hold := g.armed
	g.armed = false
	g.mu.Unlock()
	if hold {
		close(g.held)
		select {
		case <-g.release:
		case <-ctx.Done():
		}
	}
	return g.Client.List(ctx, prefix)
}

func (g *listGate) Events(ctx context.Context, prefix string, since time.Time) (<-chan docker.Event, <-chan error) {
	in, errc := g.Client.Events(ctx, prefix, since)
	out := make(chan docker.Event)
	go func() {
		defer close(out)
		for ev := range in {
			g.mu.Lock()
			drop := ev.ContainerID != "" && ev.ContainerID == g.muted
			g.mu.Unlock()
			if drop {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, errc
}

// A list in flight when a die event launches a restart is older than that
// restart: no step runs from it, in any slot. Here the list was begun
// before web/0 died and its restart ran; it finds web/1 exited (its events
// never came), and the restart of web/1 must wait for a list begun after
// the restart of web/0.
func TestListInFlightAcrossADieRestartIsNotFresh(t *testing.T) {
	text := strings.Replace(noRestartYAML, "    restart:", "    replicas: 2\n    restart:", 1)
	f, clock := newEngine()
	seed(t, f, clock, text)
	cs, err := f.List(context.Background(), pfx)
	if err != nil || len(cs) != 2 {
		t.Fatalf("list: %v %v", cs, err)
	}
	c0, c1 := cs[0], cs[1]
	g := &listGate{Client: f, held: make(chan struct{}), release: make(chan struct{})}
	h := newHarness(t, f, clock, text, ModeAuto)
	h.opts.Client = g
	h.opts.Resync = 10 * time.Millisecond // lists come with no event, intent or step
	h.start()
	var once sync.Once
	release := func() { once.Do(func() { close(g.release) }) }
	t.Cleanup(release) // before the harness ends the session
	h.waitFor("the steady state", func(s Snapshot) bool { return s.Steady })

	g.arm(c1.ID)
	select {
	case <-g.held: // a resync list is under way
	case <-time.After(waitLimit):
		t.Fatal("no list came")
	}
	if err := f.Kill(c1.ID, 137); err != nil { // the session hears nothing of it
		t.Fatal(err)
	}
	if err := f.Kill(c0.ID, 137); err != nil { // its die event restarts it, from the state in hand
		t.Fatal(err)
	}
	restartOf := func(s Snapshot, name string) (StepResult, bool) {
		i := slices.IndexFunc(s.Recent, func(r StepResult) bool {
			return r.Step.Action == reconcile.ActRestart && r.Step.Container == name
		})
		if i < 0 {
			return StepResult{}, false
		}
		return s.Recent[i], true
	}
	snap := h.waitFor("the restart of web/0", func(s Snapshot) bool { _, ok := restartOf(s, c0.Name); return ok })
	first, _ := restartOf(snap, c0.Name)
	release()
	snap = h.waitFor("the restart of web/1", func(s Snapshot) bool { _, ok := restartOf(s, c1.Name); return ok })
	second, _ := restartOf(snap, c1.Name)
	if second.Listed.Before(first.Began) {
		t.Fatalf("the restart of web/1 ran from a list begun at %s, before the restart of web/0 began (%s)",
			second.Listed.Format(time.StampMicro), first.Began.Format(time.StampMicro))
	}
}

// An approved rollout ends when one of its steps fails: step mode then
// leaves the failed step to the operator, and does not try it again at
// once.
func TestRolloutApprovalEndsOnAFailedStep(t *testing.T) {
	f, clock := newEngine()
	f.FailNext("Create", errors.New("no space left on device"))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	snap := h.waitFor("the start in the plan", func(s Snapshot) bool { return s.Fresh && len(s.Plan.Executable()) == 1 })
	key := snap.Plan.Executable()[0].Key()
	h.s.Do(ApproveRollout{})
	snap = h.waitFor("the failure", func(s Snapshot) bool { return s.Steps[key].State == StepFailed })
	h.settle()
	h.drive("the clock to move on", func(s Snapshot) bool { return s.PlanAt.Sub(snap.PlanAt) > 3*time.Second })
	snap = h.settle()
	if n := countPrefix(f.Calls(), "create:"); n != 1 {
		t.Fatalf("%d creates, want the failed one only (calls %q)\n%s", n, f.Calls(), describe(snap))
	}
	if snap.Rollout != nil || !hasNote(snap, "rollout approval ended") {
		t.Errorf("the rollout approval outlived the failed step:\n%s", describe(snap))
	}
	// The operator's approval is the retry.
	h.s.Do(ApproveStep{Key: key})
	h.waitFor("the approved retry", func(s Snapshot) bool { return running(s, "web:v1") == 1 })
}

// A changed desired state is not acted on before it has stayed put for the
// settle time, also when its change is small enough for the blast-radius
// guard to let it through (one stop of four).
func TestSmallDesiredChangeWaitsToSettle(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 4))
	h := newHarness(t, f, clock, desiredYAML("web:v1", 4), ModeAuto)
	h.opts.Settle = time.Hour // never over within the test
	h.start()
	h.waitFor("the steady state", func(s Snapshot) bool { return s.Steady })
	h.src.Set(desiredYAML("web:v1", 3))
	snap := h.waitFor("the stop in the plan", func(s Snapshot) bool {
		return s.Desired != nil && s.Desired.Workloads["web"].Replicas == 3 &&
			slices.ContainsFunc(s.Plan.Executable(), func(st reconcile.Step) bool { return st.Action == reconcile.ActStop })
	})
	if hit, total := blastRadius(snap.Plan, snap.Containers); 2*hit > total {
		t.Fatalf("the change stops %d of %d: the blast-radius guard would hold it, not the settle time", hit, total)
	}
	snap = h.settle()
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("acted on a desired state still settling: %q", m)
	}
	if snap.Settling <= 0 || !strings.Contains(snap.Waiting, "settling") {
		t.Errorf("settling %s, waiting %q: want the settle time shown", snap.Settling, snap.Waiting)
	}
	if snap.Confirm != nil {
		t.Errorf("asks %q: want no blast-radius question", snap.Confirm.Prompt)
	}
}

// The host lock is the engine's, by its identity, not the endpoint's: two
// sessions reaching one engine by two endpoints share one lock, and the
// second drops to watch. An engine of another identity has a lock of its
// own.
func TestLockIsKeyedOnTheEngineNotTheEndpoint(t *testing.T) {
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	id, prefix := "engine-"+run, "rclk-"+run // the lock files are this run's alone
	clock := fake.NewManualClock(time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC))
	mk := func(endpoint, id string) *fake.Engine {
		f := fake.New(fake.Options{Clock: clock, Seed: 1, Endpoint: endpoint, EngineID: id})
		f.AddImage("web:v1", "sha256:1111", fake.Behaviour{ReadyAfter: time.Second})
		return f
	}
	fa, fb, fc := mk("fake://a", id), mk("fake://b", id), mk("fake://c", id+"-other")
	for _, e := range []string{id, id + "-other"} {
		path := DefaultLockPath(docker.EngineInfo{ID: e, Simulated: true}, prefix)
		t.Cleanup(func() { os.Remove(path) }) // after the sessions end
	}
	session := func(f *fake.Engine, user string) *harness {
		h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeAuto)
		h.opts.LockPath, h.opts.User, h.opts.Prefix = "", user, prefix // the default lock: by the engine
		return h.start()
	}
	a := session(fa, "alice")
	a.waitFor("the lock", func(s Snapshot) bool { return s.Lock.Held })
	b := session(fb, "bob")
	snap := b.waitFor("the lock, or the fall back to watch", func(s Snapshot) bool {
		return s.Lock.Held || s.Mode == ModeWatch && s.Lock.Holder != nil
	})
	if snap.Lock.Held || snap.Mode != ModeWatch || snap.Lock.Holder.User != "alice" {
		t.Fatalf("second endpoint of the engine: mode %s, lock held %v, holder %+v; want watch under alice's lock",
			snap.Mode, snap.Lock.Held, snap.Lock.Holder)
	}
	b.settle()
	if m := fb.Mutations(); len(m) != 0 {
		t.Errorf("the session on the second endpoint acted: %q", m)
	}
	c := session(fc, "carol")
	c.waitFor("its own lock", func(s Snapshot) bool { return s.Lock.Held && s.Mode == ModeAuto })
}

// unresolvable makes one image reference fail to resolve while gone is set,
// as an image removed and later pulled again.
type unresolvable struct {
	docker.Client
	ref  string
	gone atomic.Bool
}

func (u *unresolvable) ImageInspect(ctx context.Context, ref string) (docker.Image, error) {
	if ref == u.ref && u.gone.Load() {
		return docker.Image{}, fmt.Errorf("image %s: %w", ref, docker.ErrNotFound)
	}
	return u.Client.ImageInspect(ctx, ref)
}

// A hold stands while its workload's image cannot be resolved: "cannot
// tell" is not "the desired spec changed". Once the image is back, the held
// spec is still not started again.
func TestHoldStandsWhileTheImageCannotBeResolved(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 1))
	d, _ := load.Parse("v2.yaml", []byte(desiredYAML("web:v2", 1)))
	r := spec.Resolve(context.Background(), d, f)
	held := r.Workload("web").Hash
	if _, err := f.Create(context.Background(), *reconcile.CreateSpec(pfx, r.Workload("web"), 0)); err != nil {
		t.Fatal(err)
	}
	u := &unresolvable{Client: f, ref: "web:v2"}
	h := newHarness(t, f, clock, neverPull(desiredYAML("web:v2", 1)), ModeStep) // a missing image is not pulled: it cannot be resolved
	h.opts.Client = u
	h.start()
	h.waitFor("the plan", func(s Snapshot) bool { return s.Fresh })
	h.s.Do(Rollback{Workload: "web"})
	h.waitFor("the rollback", func(s Snapshot) bool { return hasNote(s, "rollback of web done") })
	h.s.Do(SetMode{Mode: ModeAuto})
	h.waitFor("auto, held", func(s Snapshot) bool { return s.Mode == ModeAuto && s.Fresh && len(s.Holds["web"]) == 1 })
	h.settle()
	f.ResetCalls()

	unresolved := func(s Snapshot) bool {
		if s.Resolved == nil {
			return false
		}
		w := s.Resolved.Workload("web")
		return w != nil && w.Err != nil
	}
	u.gone.Store(true)
	f.AddImage("unrelated:1", "", fake.Behaviour{}) // an image event: the images are resolved again
	h.waitFor("the image unresolved", func(s Snapshot) bool { return unresolved(s) && s.Fresh })
	h.settle()
	u.gone.Store(false)
	f.AddImage("unrelated:2", "", fake.Behaviour{})
	h.waitFor("the image back", func(s Snapshot) bool { return !unresolved(s) && s.Resolved != nil && s.Fresh })
	snap := h.settle()
	if hs := snap.Holds["web"]; !slices.Equal(hs, []string{held}) {
		t.Errorf("holds %v, want %s kept", snap.Holds, short(held))
	}
	if m := f.Mutations(); len(m) != 0 {
		t.Fatalf("the held spec was started again: %q\n%s", m, describe(snap))
	}
	if running(snap, "web:v1") != 1 {
		t.Errorf("the old container should keep serving:\n%s", describe(snap))
	}
}
