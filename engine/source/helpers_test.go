package source

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

const pfx = "rollcall"

// waitLimit bounds every wait of a test; a passing test takes a fraction.
const waitLimit = 5 * time.Second

// desiredYAML is a one-workload desired state: web on image, replicas
// slots, a 1s healthcheck.
func desiredYAML(image string, replicas int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "workloads:\n  web:\n    image: %s\n    replicas: %d\n", image, replicas)
	b.WriteString("    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s}\n")
	return b.String()
}

func waitSignal(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(waitLimit):
		t.Fatalf("no change signalled after %s", what)
	}
}

func mustURL(t *testing.T, url string, o URLOptions) Source {
	t.Helper()
	src, err := URL(url, o)
	if err != nil {
		t.Fatal(err)
	}
	return src
}
