package load

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// update.delay is a Go duration, >= 0, 0 by default, and out of the spec
// hash like the rest of the update policy.
func TestParseUpdateDelay(t *testing.T) {
	w := mustParse(t, "workloads:\n  web:\n    image: app\n    update: {delay: 1m30s}\n").Workloads["web"]
	if w.Update.Delay != 90*time.Second {
		t.Fatalf("delay = %s", w.Update.Delay)
	}
	none := mustParse(t, "workloads:\n  web:\n    image: app\n").Workloads["web"]
	if none.Update.Delay != 0 {
		t.Fatalf("default delay = %s", none.Update.Delay)
	}
	if spec.Hash(w, "sha256:1") != spec.Hash(none, "sha256:1") {
		t.Error("update.delay is in the spec hash")
	}
	for src, msg := range map[string]string{
		"delay: -1s": "web.update.delay: duration -1s must not be negative",
		"delay: 10":  "web.update.delay: 10 is a bare number",
		"delay: 2y":  `web.update.delay: invalid duration "2y"`,
	} {
		_, err := Parse("rollcall.yaml", []byte("workloads:\n  web:\n    image: app\n    update: {"+src+"}\n"))
		var list spec.ErrorList
		if !errors.As(err, &list) || len(list) != 1 || !strings.Contains(list[0].Msg, msg) || list[0].Line != 4 {
			t.Errorf("%s: got %v, want %q at line 4", src, err, msg)
		}
	}
}
