package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// recorder is a Client that records every mutating call as "verb:name" and
// answers with the error scripted for it. Reads panic: Apply must not read.
type recorder struct {
	names map[string]string // container ID -> name, for readable records
	calls []string
	fail  map[string]error             // "verb:name" -> error
	owned map[string]map[string]string // name -> labels, for Inspect
}

func (r *recorder) do(verb, idOrName string) error {
	name := idOrName
	if n, ok := r.names[idOrName]; ok {
		name = n
	}
	call := verb + ":" + name
	r.calls = append(r.calls, call)
	return r.fail[call]
}

func (r *recorder) Create(_ context.Context, s docker.CreateSpec) (string, error) {
	return "new-" + s.Name, r.do("create", s.Name)
}
func (r *recorder) Stop(_ context.Context, id string, _ time.Duration) error { return r.do("stop", id) }
func (r *recorder) Remove(_ context.Context, id string) error                { return r.do("remove", id) }
func (r *recorder) Restart(_ context.Context, id string, _ time.Duration) error {
	return r.do("restart", id)
}
func (r *recorder) Update(_ context.Context, id string, _ docker.Limits) error {
	return r.do("update", id)
}
func (r *recorder) Exec(_ context.Context, id string, cmd []string) (int, string, error) {
	return 0, "", r.do("exec", id)
}
func (r *recorder) Info(context.Context) (docker.EngineInfo, error) { panic("unexpected Info") }
func (r *recorder) List(context.Context, string) ([]docker.Container, error) {
	panic("unexpected List")
}

// Inspect answers only for names in owned: the containers that a conflicting
// create finds already there.
func (r *recorder) Inspect(_ context.Context, name string) (docker.ContainerDetail, error) {
	r.calls = append(r.calls, "inspect:"+name)
	labels, ok := r.owned[name]
	if !ok {
		return docker.ContainerDetail{}, fmt.Errorf("inspect %s: %w", name, docker.ErrNotFound)
	}
	return docker.ContainerDetail{Container: docker.Container{Name: name, Labels: labels}}, nil
}
func (r *recorder) ImageInspect(context.Context, string) (docker.Image, error) {
	panic("unexpected ImageInspect")
}
func (r *recorder) Events(context.Context, string, time.Time) (<-chan docker.Event, <-chan error) {
	panic("unexpected Events")
}
func (r *recorder) Logs(context.Context, string, docker.LogOptions) (<-chan docker.LogLine, error) {
	panic("unexpected Logs")
}

func recorderFor(o *Observed) *recorder {
	r := &recorder{names: map[string]string{}, fail: map[string]error{}, owned: map[string]map[string]string{}}
	for _, c := range o.Containers {
		r.names[c.ID] = c.Name
	}
	return r
}

func TestApplyCallOrder(t *testing.T) {
	d := resolved(workload("web", 4, func(w *spec.Workload) {
		w.Update.Parallelism = 2
		w.Resources.Memory = 64 << 20
	}))
	old0, new0 := stale(d, "web", 0), fresh(d, "web", 0)
	old1 := stale(d, "web", 1)
	crashed := fresh(d, "web", 2, exited(1))
	drifted := fresh(d, "web", 3, func(c *docker.Container) { c.Limits.Memory = 0 })
	drifted.Limits.Memory = 0
	o := observed(old0, new0, old1, crashed, drifted)
	p := Diff(d, o)
	r := recorderFor(o)
	results, err := Apply(t.Context(), r, p.Steps(), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	equalStrings(t, r.calls, []string{
		"stop:" + old0.Name, "remove:" + old0.Name, // roll: stop gracefully, then remove
		"create:" + fresh(d, "web", 1).Name, // start-first: old1 untouched
		"restart:" + crashed.Name,
		"update:" + drifted.Name,
	})
	if len(results) != 4 {
		t.Fatalf("%d results, want one per executable step", len(results))
	}
}

func TestApplyFailedCreateNeverTouchesOld(t *testing.T) {
	d := resolved(workload("web", 1))
	old := stale(d, "web", 0)
	o := observed(old)
	r := recorderFor(o)
	newName := fresh(d, "web", 0).Name
	r.fail["create:"+newName] = errors.New("no space left on device")
	for round := 0; round < 3; round++ { // the failure repeats; the old one still serves
		_, err := Apply(t.Context(), r, Diff(d, o).Steps(), ApplyOptions{})
		if err == nil || !strings.Contains(err.Error(), "start web/0") || !strings.Contains(err.Error(), "no space") {
			t.Fatalf("round %d: error %v", round, err)
		}
	}
	equalStrings(t, r.calls, []string{"create:" + newName, "create:" + newName, "create:" + newName})
}

// I6: every step runs even when some fail; their errors are joined; a re-run
// where the effect is already in place is a no-op.
func TestApplyRunsEveryStepAndIsIdempotent(t *testing.T) {
	d := resolved(workload("web", 3))
	o := observed(fresh(d, "web", 0, exited(1)), fresh(resolved(workload("gone", 1)), "gone", 0))
	p := Diff(d, o)
	equalStrings(t, actions(p), []string{"stop gone/0", "restart web/0", "start web/1", "start web/2"})
	r := recorderFor(o)
	failRestart := errors.New("restart refused")
	failCreate := errors.New("create refused")
	r.fail["restart:"+o.Containers[0].Name] = failRestart
	r.fail["create:"+fresh(d, "web", 1).Name] = failCreate
	results, err := Apply(t.Context(), r, p.Steps(), ApplyOptions{})
	if len(results) != 4 || len(r.calls) != 5 {
		t.Fatalf("not every step ran: %d results, calls %q", len(results), r.calls)
	}
	if !errors.Is(err, failRestart) || !errors.Is(err, failCreate) {
		t.Fatalf("errors not joined: %v", err)
	}
	// Effects in place: names exist, containers gone.
	r2 := recorderFor(o)
	for _, s := range p.Steps() {
		switch s.Action {
		case ActStart:
			r2.fail["create:"+s.Container] = fmt.Errorf("create: %w", docker.ErrConflict)
			r2.owned[s.Container] = s.Create.Labels
		case ActStop:
			r2.fail["stop:"+s.Container] = fmt.Errorf("stop: %w", docker.ErrNotFound)
			r2.fail["remove:"+s.Container] = fmt.Errorf("remove: %w", docker.ErrNotFound)
		}
	}
	if _, err := Apply(t.Context(), r2, stepsWithout(p.Steps(), ActRestart), ApplyOptions{}); err != nil {
		t.Fatalf("re-run with effects in place: %v", err)
	}
}

func stepsWithout(steps []Step, a Action) []Step {
	var out []Step
	for _, s := range steps {
		if s.Action != a {
			out = append(out, s)
		}
	}
	return out
}

func TestApplyStopsAtCancel(t *testing.T) {
	d := resolved(workload("web", 3))
	ctx, cancel := context.WithCancel(t.Context())
	r := recorderFor(observed())
	_, err := Apply(ctx, r, Diff(d, observed()).Steps(), ApplyOptions{OnDone: func(Result) { cancel() }})
	if !errors.Is(err, context.Canceled) || len(r.calls) != 1 {
		t.Fatalf("err %v, calls %q", err, r.calls)
	}
}

func TestApplyStartOnAForeignName(t *testing.T) {
	d := resolved(workload("web", 1))
	p := Diff(d, observed())
	r := recorderFor(observed())
	name := p.Steps()[0].Container
	r.fail["create:"+name] = fmt.Errorf("create: %w", docker.ErrConflict)
	r.owned[name] = map[string]string{"other.managed": "true"} // same name, another prefix
	_, err := Apply(t.Context(), r, p.Steps(), ApplyOptions{})
	if !errors.Is(err, docker.ErrConflict) || !strings.Contains(err.Error(), "not this slot's") {
		t.Fatalf("a start on a name held by a foreign container must fail, got %v", err)
	}
	equalStrings(t, r.calls, []string{"create:" + name, "inspect:" + name})
}
