package load

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

type platformImages map[string]docker.Image

func (t platformImages) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	if img, ok := t[ref]; ok {
		return img, nil
	}
	return docker.Image{}, docker.ErrNotFound
}

// platform: is checked against the image: another platform is an error
// of that workload, which then neither starts nor stops anything.
func TestPlatformIsCheckedAgainstTheImage(t *testing.T) {
	d := mustParse(t, "workloads:\n  a: {image: arm, platform: linux/amd64}\n  b: {image: amd, platform: linux/amd64}\n"+
		"  c: {image: arm, platform: linux/arm64}\n  d: {image: unknown, platform: linux/amd64}\n  e: {image: arm}\n")
	images := platformImages{
		"arm":     {ID: "sha256:a", OS: "linux", Architecture: "arm64", Variant: "v8"},
		"amd":     {ID: "sha256:b", OS: "linux", Architecture: "amd64"},
		"unknown": {ID: "sha256:c"},
	}
	r := spec.Resolve(context.Background(), d, images)
	if a := r.Workload("a"); !errors.Is(a.Err, spec.ErrPlatform) || !strings.Contains(a.Err.Error(), "is linux/arm64/v8, not linux/amd64") || a.Hash != "" {
		t.Errorf("a: %v", a.Err)
	}
	for _, name := range []string{"b", "c", "d", "e"} {
		if w := r.Workload(name); w.Err != nil || w.Hash == "" {
			t.Errorf("%s: %v", name, w.Err)
		}
	}
	_, err := Parse("x.yaml", []byte("workloads:\n  a: {image: x, platform: amd64}\n"))
	if err == nil || !strings.Contains(err.Error(), `x.yaml:2:27: a.platform: invalid platform "amd64"`) {
		t.Errorf("bad platform: %v", err)
	}
	c, err := ParseCompose("compose.yaml", []byte("services:\n  a: {image: x, platform: linux/arm64}\n"), nil)
	if err != nil || c.Workloads["a"].Platform != "linux/arm64" || len(c.Warnings) != 0 {
		t.Errorf("compose: %v %+v", err, c)
	}
}
