package demo

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/rollcall/rollcall/engine/demo/demoapp"
	"github.com/rollcall/rollcall/engine/docker"
)

// buildImages builds the demo's images, ImageV1 and ImageV2, FROM scratch on
// m from the executable exe. "" means this process's own executable, since
// rollcall runs as demoapp when it is started under that name: so a built or
// installed rollcall stages its demo with no Go toolchain and no source tree.
// A test binary is no demoapp: tests pass a compiled one.
func buildImages(ctx context.Context, m *docker.Moby, exe string, log io.Writer) error {
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("build the demo images: find this program: %w", err)
		}
		exe = self
	}
	for _, img := range []struct{ tag, version string }{{ImageV1, "v1"}, {ImageV2, "v2"}} {
		fmt.Fprintf(log, "building %s (FROM scratch, on the local engine)\n", img.tag)
		if _, err := demoapp.BuildImage(ctx, m, exe, img.tag, img.version); err != nil {
			return fmt.Errorf("build %s: %w", img.tag, err)
		}
	}
	return nil
}
