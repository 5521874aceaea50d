package load

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// images is an ImageLookup over a fixed set, counting lookups per reference.
type images struct {
	ids   map[string]string
	calls map[string]int
}

func (im *images) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	im.calls[ref]++
	id, ok := im.ids[ref]
	if !ok {
		return docker.Image{}, errors.New("no such image")
	}
	return docker.Image{ID: id, RepoTags: []string{ref}}, nil
}

func TestResolveFailsOnlyTheWorkloadWhoseImageIsMissing(t *testing.T) {
	d, err := Parse("test.yaml", []byte(`
prefix: acme
workloads:
  web: {image: "app:v1"}
  worker: {image: "app:v1"}
  cache: {image: "missing:1"}
  cache2: {image: "missing:1"}
`))
	if err != nil {
		t.Fatal(err)
	}
	im := &images{ids: map[string]string{"app:v1": "sha256:aaa"}, calls: map[string]int{}}
	r := spec.Resolve(context.Background(), d, im)

	if r.Prefix != "acme" {
		t.Errorf("prefix %q", r.Prefix)
	}
	var names []string
	for _, w := range r.Workloads {
		names = append(names, w.Name)
	}
	if want := []string{"cache", "cache2", "web", "worker"}; !reflect.DeepEqual(names, want) {
		t.Errorf("workloads %v, want sorted %v", names, want)
	}
	for _, name := range []string{"web", "worker"} {
		w := r.Workload(name)
		if w.Err != nil || w.ImageID != "sha256:aaa" || w.Hash != spec.Hash(w.Workload, "sha256:aaa") {
			t.Errorf("%s: err %v, id %q, hash %q", name, w.Err, w.ImageID, w.Hash)
		}
	}
	for _, name := range []string{"cache", "cache2"} {
		w := r.Workload(name)
		if w.Err == nil || w.ImageID != "" || w.Hash != "" {
			t.Errorf("%s: want an error and no ID or hash; got err %v, id %q, hash %q", name, w.Err, w.ImageID, w.Hash)
		}
	}
	if im.calls["app:v1"] != 1 || im.calls["missing:1"] != 1 {
		t.Errorf("lookups %v, want one per reference", im.calls)
	}
	if r.Workload("nope") != nil {
		t.Error("Workload of an unknown name is not nil")
	}
}
