package reconcile

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// needsPull marks w as waiting for its image, as Resolve does for an image
// the engine lacks (moved: a `pull: always` tag the registry moved).
func needsPull(w *spec.Resolved, moved bool) {
	w.Pull = &spec.PullNeed{Ref: w.Image}
	if moved {
		w.Pull.Moved, w.Pull.Digest = true, "sha256:0123456789abcdef0123"
	}
	w.ImageID, w.Hash = "", ""
	w.Err = fmt.Errorf("image %s: %w", w.Image, spec.ErrPullFirst)
}

// markPulls draws which workloads of d wait for a pull; d is changed in
// place, and the names are returned.
func markPulls(t *rapid.T, d *spec.ResolvedDesired) map[string]bool {
	marked := map[string]bool{}
	for i := range d.Workloads {
		w := &d.Workloads[i]
		if w.Err == nil && rapid.IntRange(0, 2).Draw(t, w.Name+"-pull") == 0 {
			needsPull(w, rapid.Bool().Draw(t, w.Name+"-moved"))
			marked[w.Name] = true
		}
	}
	return marked
}

// Rule 0, as a property (I1's kin): a workload whose image is not on the
// engine has one step, its pull, and no start, stop, roll, restart or
// update, whatever its containers; no then row follows it; and the other
// workloads' plans are what they would be without it.
func TestRule0NothingStopsBeforeThePull(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		for range 8 {
			d := genDesired(t)
			o := genObserved(t, d)
			before := Diff(d, o)
			pulled := &spec.ResolvedDesired{Prefix: d.Prefix, Workloads: slices.Clone(d.Workloads)}
			marked := markPulls(t, pulled)
			p := Diff(pulled, o)
			AddThen(pulled, o, &p)
			for _, wp := range p.Workloads {
				if !marked[wp.Name] {
					var was WorkloadPlan
					for _, b := range before.Workloads {
						if b.Name == wp.Name {
							was = b
						}
					}
					wp.Then = nil
					if !reflect.DeepEqual(wp, was) {
						t.Fatalf("%s changed by another workload's pull:\n%s\nwas\n%s", wp.Name, p, before)
					}
					continue
				}
				w := pulled.Workload(wp.Name)
				for _, s := range append(slices.Clone(wp.Steps), wp.Then...) {
					if s.Action != ActPull {
						t.Fatalf("%s waits for its image, yet: %s\n%s", wp.Name, brief(s), p)
					}
				}
				if len(wp.Steps) != 1 || wp.Steps[0].Container != w.Image || wp.Error != "" || len(wp.Failures) > 0 {
					t.Fatalf("%s: want its pull alone:\n%s", wp.Name, p)
				}
			}
			for name := range marked {
				if !slices.ContainsFunc(p.Workloads, func(wp WorkloadPlan) bool { return wp.Name == name }) {
					t.Fatalf("%s waits for its image, and the plan does not say so:\n%s", name, p)
				}
			}
		}
	})
}

// A missing image (pull: missing, the default) is a pull step of its own,
// shown in the plan, and nothing of the workload is stopped: not the stale
// container, not the surplus. With pull: never it stays an error, and the
// plan's summary never says "nothing to do" beside it.
func TestMissingImageIsPulledFirst(t *testing.T) {
	full := resolved(workload("web", 1))
	o := observed(stale(full, "web", 0), fresh(full, "web", 1), fresh(full, "web", 2))
	d := &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"web": workload("web", 1)}}
	p := Diff(spec.Resolve(t.Context(), d, imageTable{"web:v2": false}), o)
	equalStrings(t, briefs(p), []string{"pull web/- web:v2"})
	if errs := p.Errors(); len(errs) != 0 {
		t.Fatalf("errors %q beside the pull", errs)
	}
	if s := p.Steps()[0]; s.Why.Kind != ReasonPull || !s.Executable() ||
		!strings.Contains(p.String(), "pull    -   web:v2  pull: web:v2 is not on the engine") || p.Summary() != "1 pull" {
		t.Fatalf("plan:\n%s", p)
	}

	never := workload("web", 1, func(w *spec.Workload) { w.Pull = spec.PullNever })
	d = &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"web": never}}
	p = Diff(spec.Resolve(t.Context(), d, imageTable{"web:v2": false}), o)
	if len(p.Steps()) != 0 || len(p.Errors()) != 1 || !strings.Contains(p.Errors()[0], "pull: never") {
		t.Fatalf("pull: never: %q, errors %q", briefs(p), p.Errors())
	}
	if strings.Contains(p.String(), "nothing to do") || p.Summary() != "nothing can be done: 1 workload in error" {
		t.Fatalf("a plan in error says:\n%s", p)
	}
}

// A pull step runs through the engine's Pull, with its progress; a failed
// pull is the engine's typed error, and touches nothing else.
func TestRunPull(t *testing.T) {
	d := &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"web": workload("web", 1)}}
	s := Diff(spec.Resolve(t.Context(), d, imageTable{"web:v2": false}), observed()).Steps()[0]
	r := recorderFor(observed())
	var seen []PullProgress
	if err := RunWith(t.Context(), r, s, RunOptions{OnPull: func(p PullProgress) { seen = append(seen, p) }}); err != nil {
		t.Fatal(err)
	}
	equalStrings(t, r.calls, []string{"pull:web:v2"})
	r.fail["pull:web:v2"] = &docker.PullError{Ref: "web:v2", Kind: docker.PullUnauthorized, Detail: "no basic auth credentials"}
	err := RunWith(t.Context(), r, s, RunOptions{})
	var pe *docker.PullError
	if !errors.As(err, &pe) || docker.PullKindOf(err) != docker.PullUnauthorized {
		t.Fatalf("failed pull: %v", err)
	}
	equalStrings(t, r.calls, []string{"pull:web:v2", "pull:web:v2"})
}

// pull: always with a registry that cannot say where the tag points: the
// engine's image is kept, converged, and the plan says so.
func TestRegistryThatCannotTellIsANote(t *testing.T) {
	d := resolved(workload("web", 1))
	o := observed(fresh(d, "web", 0))
	d.Workloads[0].RegistryErr = &docker.PullError{Ref: "web:v2", Kind: docker.PullRateLimited, Detail: "toomanyrequests"}
	p := Diff(d, o)
	if !p.Empty() || len(p.Errors()) != 0 || len(p.Workloads) != 1 {
		t.Fatalf("plan:\n%s", p)
	}
	want := "pull: always: the registry could not say where web:v2 points (rate limited by the registry): the engine's image is kept"
	equalStrings(t, p.Workloads[0].Notes, []string{want})
}
