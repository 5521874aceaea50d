package load

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// FuzzParse checks that Parse never panics and that every failure it
// reports carries a file and a 1-based position.
func FuzzParse(f *testing.F) {
	full, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(full),
		"workloads: {}\n",
		"prefix: acme\nworkloads:\n  web: {image: x, replicas: 2, ports: [\"8080:80\"]}\n",
		"workloads:\n  a: &a {image: x, environment: [A=1]}\n  b: {<<: *a, replicas: 0}\n",
		"workloads:\n  web: {image: x, healthcheck: {test: CMD-SHELL true, disable: true}}\n",
		"workloads:\n  web: {image: x, resources: {cpus: .inf, memory: 1.5GiB}}\n",
		"workloads: {}\nproxy: {caddy_admin: \"http://127.0.0.1:2019\"}\n",
		"workloads:\n  web: {image: x}\nhosts:\n  a: {endpoint: \"ssh://d@a\", replicas: {web: 2}}\n  b: {context: bb}\nfleet: {canary: [b], batch: 50%, wait: 1m, on_failure: continue, max_failed_hosts: 1}\n",
		"workloads:\n  web: {image: x, update: {canary: {steps: [{share: 5%, for: 1m}, {share: 25%, for: 2m}], analysis: {max_error_rate: 1%, max_p95_ratio: 1.5, min_requests: 200, on_insufficient_traffic: hold}}}}\nproxy: {caddy_admin: \"http://127.0.0.1:2019\"}\n",
		"a: *x\n",
		"workloads:\n\tweb: {}\n",
		"- [\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse("fuzz.yaml", data)
		if err == nil {
			if d == nil || d.Workloads == nil {
				t.Fatalf("no error and no desired state for %q", data)
			}
			return
		}
		if d != nil {
			t.Fatalf("an error and a desired state for %q", data)
		}
		var list spec.ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error %T is not a non-empty ErrorList: %v", err, err)
		}
		for _, e := range list {
			if e == nil || e.File != "fuzz.yaml" || e.Line < 1 || e.Col < 1 || e.Msg == "" {
				t.Fatalf("entry without a position for %q: %#v", data, e)
			}
		}
	})
}
