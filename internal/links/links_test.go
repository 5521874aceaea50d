package links

import (
	"os/exec"
	"strings"
	"testing"

	// The packages checked are linked into this test, so that go test's
	// cache keys on them: a change to any of them (an import planted) runs
	// the test again instead of replaying a pass.
	_ "github.com/rollcall/rollcall/engine/docker/dockertest"
	_ "github.com/rollcall/rollcall/engine/reconcile"
	_ "github.com/rollcall/rollcall/engine/spec"
)

const module = "github.com/rollcall/rollcall/"

// rules name, for a package (each also imported above), the import paths it must not link, directly
// or through any package it imports (go list -deps), each with why.
var rules = []struct {
	pkg       string
	forbidden []string // import paths, each with everything under it
	why       string
}{
	{"engine/spec", []string{"go.yaml.in", "gopkg.in/yaml.v2", "gopkg.in/yaml.v3", "sigs.k8s.io/yaml", "github.com/compose-spec"},
		"spec is the desired state's types and rules; reading a file is engine/source/load's"},
	{"engine/reconcile", []string{"go.yaml.in", "gopkg.in/yaml.v2", "gopkg.in/yaml.v3", "sigs.k8s.io/yaml", "github.com/compose-spec"},
		"reconcile decides from spec's types and never reads a file"},
	{"engine/docker/dockertest", []string{module + "engine/demo"},
		"the harness sits below engine/demo, whose tests use it; it builds its image with engine/docker/imagebuild"},
}

// deps is every package pkg links, as go list -deps gives them.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, msg)
	}
	return strings.Fields(string(out))
}

func TestNoForbiddenLinks(t *testing.T) {
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			all := deps(t, r.pkg)
			if len(all) == 0 || all[len(all)-1] != module+r.pkg {
				t.Fatalf("go list -deps %s gave %d packages, not ending with the package itself", r.pkg, len(all))
			}
			for _, d := range all {
				for _, f := range r.forbidden {
					if d == f || strings.HasPrefix(d, f+"/") {
						t.Errorf("%s links %s: %s", r.pkg, d, r.why)
					}
				}
			}
		})
	}
}
