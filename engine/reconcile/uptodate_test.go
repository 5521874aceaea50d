package reconcile

import (
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// A tag that moved between resolve and create: the container carries the
// desired spec label, but the engine created it from the image the tag
// named a moment later. It is not up-to-date, so its slot gets a container
// of the desired image.
func TestUpToDateNeedsTheResolvedImageID(t *testing.T) {
	d := resolved(workload("web", 1))
	w := d.Workload("web")
	c := fresh(d, "web", 0, func(c *docker.Container) { c.ImageID = "sha256:moved" })
	if c.Labels[docker.SpecLabel(pfx)] != w.Hash {
		t.Fatalf("the container must carry the desired spec label for this test")
	}
	if UpToDate(pfx, w, &c, time.Time{}) {
		t.Fatalf("a container of image %s counts as up-to-date for %s", c.ImageID, w.ImageID)
	}
	if got := actions(Diff(d, observed(c))); len(got) != 1 || got[0] != "start web/0" {
		t.Fatalf("plan %q, want a start of the desired image", got)
	}
}
