package fleet

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/session"
)

const regImage = "reg/web:v3"

// serveEverywhere makes every engine's registry serve regImage, healthy
// 1s after start, in layers layers.
func (w *world) serveEverywhere(layers int) {
	for _, n := range w.names {
		w.engines[n].fake.Serve(regImage, "sha256:3333", fake.Behaviour{ReadyAfter: time.Second}, layers)
	}
}

// pullsOf counts the pulls that reached host's engine.
func (w *world) pullsOf(host string) int {
	n := 0
	for _, m := range w.mutations() {
		if m.host == host && strings.HasPrefix(m.call, "pull:") {
			n++
		}
	}
	return n
}

// touched is every mutating call that is no pull: what touches a container.
func (w *world) touched() []mutation {
	var out []mutation
	for _, m := range w.mutations() {
		if !strings.HasPrefix(m.call, "pull:") {
			out = append(out, m)
		}
	}
	return out
}

// pullWait is the WaitPull of host in the fleet's first wave not started.
func pullWait(s Snapshot, host string) (Wait, bool) {
	for _, wv := range s.Decision.Waves {
		if wv.Status != WavePending {
			continue
		}
		for _, w := range wv.Waits {
			if w.Kind == WaitPull && w.Host == host {
				return w, true
			}
		}
		return Wait{}, false
	}
	return Wait{}, false
}

// Three hosts roll to an image only their registries have. Every host
// pulls before wave 0 touches anything, all at once: c's pull is held
// halfway while a's completes and b's fails (registry unreachable).
// While b's pull fails the rollout holds with nothing stopped, created or
// touched anywhere, the fleet's view saying b and the kind, and b's pull
// is tried again with the backoff. Once b's registry answers, the pull
// succeeds and the rollout runs, canary first.
func TestFleetPullsEverywhereBeforeWaveZero(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.serveEverywhere(2)
	w.engines["b"].fake.FailPulls(regImage, &docker.PullError{Kind: docker.PullUnreachable, Detail: "dial tcp 10.0.0.1:5000: connect: connection refused"})
	release := w.engines["c"].fake.HoldPulls(regImage)
	w.expectWaves(regImage, 2, []string{"a"}, []string{"b"}, []string{"c"})
	r := w.fleet(fleetYAML(regImage, 2, abc, "batch: 1"), session.ModeAuto).start()

	// c's pull is held; a's is done and b's failed meanwhile: they ran at
	// once, none waiting for another.
	snap := r.drive("a pulled, b's pull failed, c's held", func(s Snapshot) bool {
		bw, bOK := pullWait(s, "b")
		cw, cOK := pullWait(s, "c")
		_, aOK := pullWait(s, "a")
		return !aOK && bOK && bw.Pull.Failed && cOK && cw.Pull.Running && w.pullsOf("a") == 1
	})
	if got := w.touched(); len(got) != 0 {
		t.Fatalf("containers touched while pulls were left: %+v", got)
	}
	if snap.Decision.Record.Started() || snap.Decision.Phase != PhasePreflight {
		t.Fatalf("the rollout started with pulls left: %+v", snap.Decision.Record)
	}
	if bw, _ := pullWait(snap, "b"); bw.Pull.Kind != docker.PullUnreachable {
		t.Errorf("b's wait %+v, want the kind unreachable", bw)
	}
	if v := snap.Decision.Verdict("a"); v.Action != Hold {
		t.Errorf("a pulled, yet its action is %d while others pull", v.Action)
	}
	release()

	// b's registry stays unreachable: c's pull completes, the rollout
	// holds, b's pull is tried again, and nothing is touched anywhere.
	snap = r.drive("c pulled, b tried again", func(s Snapshot) bool {
		_, cOK := pullWait(s, "c")
		return !cOK && w.pullsOf("b") >= 2
	})
	snap = r.quiet(5 * time.Second)
	if got := w.touched(); len(got) != 0 {
		t.Fatalf("containers touched while b's pull failed: %+v", got)
	}
	if _, ok := pullWait(snap, "b"); !ok || snap.Decision.Record.Started() {
		t.Fatalf("b's pull failed, yet the rollout is %+v, waits %+v", snap.Decision.Record, snap.Decision.Waves)
	}
	for _, h := range abc {
		if got := w.engineImages(h); got["web:v1"] != 2 || len(got) != 1 {
			t.Errorf("%s runs %v while b's pull fails, want its 2 web:v1 untouched", h, got)
		}
	}

	// b's registry answers: the pull succeeds and the rollout runs.
	w.engines["b"].fake.FailPulls(regImage, nil)
	r.drive("the rollout to finish", doneAll)
	last := 0
	for i, m := range w.mutations() {
		if m.host == "b" && strings.HasPrefix(m.call, "pull:") {
			last = i
		}
	}
	if first := slices.IndexFunc(w.mutations(), func(m mutation) bool { return !strings.HasPrefix(m.call, "pull:") }); first < last {
		t.Errorf("%+v came before b's last pull", w.mutations()[first])
	}
	for _, m := range w.mutations() {
		if !m.earlierReady {
			t.Errorf("%s on %s before the earlier waves were all healthy", m.call, m.host)
		}
	}
	var order []string
	for _, m := range w.touched() {
		if !slices.Contains(order, m.host) {
			order = append(order, m.host)
		}
	}
	if !slices.Equal(order, abc) {
		t.Errorf("hosts' containers touched in the order %v, want %v", order, abc)
	}
	for _, h := range abc {
		if got := w.engineImages(h); got[regImage] != 2 || len(got) != 1 {
			t.Errorf("%s runs %v, want 2 %s", h, got, regImage)
		}
	}
}

// With --skip-unreachable, a host whose pull fails is left out of the
// rollout, journaled with the pull's kind, and the others roll; it is
// never the canary: a canary whose pull fails holds the rollout.
func TestFleetSkipsAHostWhosePullFails(t *testing.T) {
	w := newWorld(t, abc...)
	w.seed("web:v1", 2)
	w.serveEverywhere(2)
	w.engines["c"].fake.FailPulls(regImage, &docker.PullError{Kind: docker.PullNotFound, Status: 404, Detail: "manifest unknown"})
	r := w.fleet(fleetYAML(regImage, 2, abc, "batch: 1"), session.ModeAuto)
	r.opts.SkipUnreachable = true
	r.start()
	snap := r.drive("the rollout to finish without c", doneAll)
	if !slices.Equal(snap.Decision.Record.Left, []string{"c"}) {
		t.Fatalf("left out %v, want [c]", snap.Decision.Record.Left)
	}
	if !hasNote(snap, "c left out of the rollout (--skip-unreachable): its pull failed: ") {
		t.Errorf("no note says c was left out for its pull: %+v", snap.Notes)
	}
	if got := w.engineImages("c"); got["web:v1"] != 2 || len(got) != 1 {
		t.Errorf("c runs %v, want its 2 web:v1 untouched", got)
	}
	for _, m := range w.touched() {
		if m.host == "c" {
			t.Errorf("%s on c, left out", m.call)
		}
	}

	w2 := newWorld(t, abc...)
	w2.seed("web:v1", 2)
	w2.serveEverywhere(2)
	w2.engines["a"].fake.FailPulls(regImage, &docker.PullError{Kind: docker.PullNotFound, Status: 404, Detail: "manifest unknown"})
	r2 := w2.fleet(fleetYAML(regImage, 2, abc, "batch: 1"), session.ModeAuto)
	r2.opts.SkipUnreachable = true
	r2.start()
	r2.drive("b and c pulled, a's pull failed", func(s Snapshot) bool {
		aw, ok := pullWait(s, "a")
		return ok && aw.Pull.Failed && w2.pullsOf("b") == 1 && w2.pullsOf("c") == 1
	})
	snap = r2.quiet(5 * time.Second)
	if len(snap.Decision.Record.Left) != 0 || snap.Decision.Record.Started() {
		t.Fatalf("the canary's pull failed: left out %v, record %+v", snap.Decision.Record.Left, snap.Decision.Record)
	}
	if got := w2.touched(); len(got) != 0 {
		t.Fatalf("containers touched while the canary's pull fails: %+v", got)
	}
}
