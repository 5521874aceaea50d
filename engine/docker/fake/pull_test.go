package fake

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// The fake's registry: a served image is pulled with its progress, the
// engine has it after (with its digest and a "pull" event); a tag moved in
// the registry changes the distribution digest and not the engine's image
// until the next pull.
func TestFakePullFromItsRegistry(t *testing.T) {
	f, _ := newTestFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	events, _ := f.Events(ctx, "rollcall", time.Time{})
	if _, err := f.ImageInspect(ctx, "reg/app:v1"); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("before the pull: %v, want not found", err)
	}
	d1 := f.Serve("reg/app:v1", "sha256:app1", Behaviour{}, 4)
	var seen []docker.PullProgress
	img, err := f.Pull(ctx, "reg/app:v1", func(p docker.PullProgress) { seen = append(seen, p) })
	if err != nil || img.ID != "sha256:app1" || !slices.Equal(img.RepoDigests, []string{"reg/app@" + d1}) {
		t.Fatalf("pull = %+v, %v", img, err)
	}
	if len(seen) < 2 || seen[0].LayersDone != 0 || seen[len(seen)-1].LayersDone != 4 || seen[len(seen)-1].BytesDone != 4<<20 {
		t.Fatalf("progress %+v: want from 0 to 4 layers, 4 MiB", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].BytesDone < seen[i-1].BytesDone {
			t.Fatalf("progress went back: %+v", seen)
		}
	}
	if got, err := f.ImageInspect(ctx, "reg/app:v1"); err != nil || got.ID != "sha256:app1" {
		t.Fatalf("after the pull: %+v, %v", got, err)
	}
	if ev := <-events; ev.Type != docker.EventImage || ev.Action != "pull" || ev.Name != "reg/app:v1" {
		t.Fatalf("event %+v, want an image pull", ev)
	}

	d2 := f.Serve("reg/app:v1", "sha256:app2", Behaviour{}, 1)
	if d2 == d1 {
		t.Fatal("a moved tag kept its digest")
	}
	if got, err := f.DistributionInspect(ctx, "reg/app:v1"); err != nil || got != d2 {
		t.Fatalf("distribution inspect = %q, %v; want %q", got, err, d2)
	}
	if got, _ := f.ImageInspect(ctx, "reg/app:v1"); got.ID != "sha256:app1" {
		t.Fatalf("the engine's tag moved without a pull: %+v", got)
	}
	if img, err := f.Pull(ctx, "reg/app@"+d1, nil); err != nil || img.ID != "sha256:app1" {
		t.Fatalf("pull by digest = %+v, %v", img, err)
	}
}

// Every failure is typed, with the registry's words as data; a failed or
// cancelled pull leaves the engine without the image.
func TestFakePullFailures(t *testing.T) {
	f, _ := newTestFake(t)
	ctx := context.Background()
	if _, err := f.Pull(ctx, "reg/none:v1", nil); docker.PullKindOf(err) != docker.PullNotFound {
		t.Fatalf("unknown ref: %v, want not found", err)
	}
	f.Serve("reg/app:v1", "sha256:app1", Behaviour{}, 2)
	for _, k := range docker.PullKinds {
		f.FailPulls("reg/app:v1", &docker.PullError{Kind: k, Detail: "the registry's words"})
		_, err := f.Pull(ctx, "reg/app:v1", nil)
		var pe *docker.PullError
		if !errors.As(err, &pe) || pe.Kind != k || pe.Ref != "reg/app:v1" || pe.Detail != "the registry's words" {
			t.Fatalf("kind %s: err %#v", k, err)
		}
		if _, err := f.DistributionInspect(ctx, "reg/app:v1"); docker.PullKindOf(err) != k {
			t.Fatalf("kind %s: distribution inspect %v", k, err)
		}
	}
	f.FailPulls("reg/app:v1", nil)

	release := f.HoldPulls("reg/app:v1")
	defer release()
	cctx, cancel := context.WithCancel(ctx)
	half := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := f.Pull(cctx, "reg/app:v1", func(p docker.PullProgress) {
			if p.LayersDone == 1 {
				close(half)
			}
		})
		done <- err
	}()
	<-half
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pull: %v", err)
	}
	if _, err := f.ImageInspect(ctx, "reg/app:v1"); !errors.Is(err, docker.ErrNotFound) {
		t.Fatalf("a cancelled pull left the image: %v", err)
	}
	release()
	if _, err := f.Pull(ctx, "reg/app:v1", nil); err != nil {
		t.Fatalf("released pull: %v", err)
	}
}
