package demoapp_test

import (
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
)

func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }

// On the real engine, the demoapp image runs /demoapp with the version as
// its default command and label, and brings no healthcheck of its own:
// rollcall sets one per container.
func TestRealDemoappImage(t *testing.T) {
	tag, id := dockertest.DemoappImage(t, "v1")
	out, err := dockertest.CLI(t.Context(), "image", "inspect", "--format", "{{json .Config}}", tag)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Entrypoint, Cmd []string
		Labels          map[string]string
		Healthcheck     any
	}
	if err := json.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/demoapp"}) || !slices.Equal(cfg.Cmd, []string{"-version", "v1"}) ||
		cfg.Labels["rollcall.demoapp.version"] != "v1" || cfg.Healthcheck != nil {
		t.Errorf("image %s config = %+v, want entrypoint /demoapp, cmd -version v1, the version label and no healthcheck", tag, cfg)
	}
	if _, v2 := dockertest.DemoappImage(t, "v2"); v2 == id {
		t.Errorf("v1 and v2 are one image, %s", id)
	}
}
