package demo

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rollcall/rollcall/engine/docker/imagebuild"
)

// Images are the tags the demo's two versions run under. `rollcall demo`
// uses the demo's own, DefaultImages; a test passes tags of its own run, so
// that a demo an operator has running on the same host never sees its tags
// rebuilt.
type Images struct{ V1, V2 string }

// DefaultImages are the demo's own tags, ImageV1 and ImageV2.
var DefaultImages = Images{V1: ImageV1, V2: ImageV2}

// orDefault is img, or DefaultImages where img names none.
func (img Images) orDefault() Images {
	if img == (Images{}) {
		return DefaultImages
	}
	return img
}

// buildImages builds the demo's images, img.V1 and img.V2, FROM scratch
// with b (the local engine) from the executable exe. "" means this
// process's own executable, since rollcall runs as demoapp when it is
// started under that name: so a built or installed rollcall stages its demo
// with no Go toolchain and no source tree. A test binary is no demoapp:
// tests pass a compiled one.
func buildImages(ctx context.Context, b imagebuild.Builder, exe string, img Images, log io.Writer) error {
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("build the demo images: find this program: %w", err)
		}
		exe = self
	}
	for _, i := range []struct{ tag, version string }{{img.V1, "v1"}, {img.V2, "v2"}} {
		fmt.Fprintf(log, "building %s (FROM scratch, on the local engine)\n", i.tag)
		if _, err := imagebuild.BuildImage(ctx, b, exe, i.tag, i.version); err != nil {
			return fmt.Errorf("build %s: %w", i.tag, err)
		}
	}
	return nil
}
