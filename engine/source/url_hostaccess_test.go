package source

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/source/sourcetest"
	"github.com/rollcall/rollcall/engine/spec"
)

// A served desired state that reaches into the host (a bind mount of /,
// privileged) is refused unless the operator allows it: whoever controls
// the server would otherwise own the host.
func TestURLSourceRefusesHostAccess(t *testing.T) {
	doc := "workloads:\n  web:\n    image: web:v1\n    volumes: [\"/:/host\"]\n    privileged: true\n  api:\n    image: api:v1\n"
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(doc, "")
	_, err := mustURL(t, cp.URL(), URLOptions{}).Load(context.Background())
	var he *spec.HostAccessError
	if !errors.As(err, &he) || len(he.What) != 1 || !strings.Contains(err.Error(), "web: bind / (line 4); privileged") {
		t.Fatalf("load: %v, want a refusal naming web's bind and privileged", err)
	}
	d, err := mustURL(t, cp.URL(), URLOptions{AllowHostAccess: true}).Load(context.Background())
	if err != nil || len(d.Workloads["web"].Mounts) != 1 {
		t.Fatalf("allowed: %v", err)
	}
}
