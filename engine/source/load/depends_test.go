package load

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// depends_on: a list of names (started), or a mapping of each name to its
// condition; compose's long and short syntax map onto the same, and the
// field changes no hash.
func TestParseDependsOn(t *testing.T) {
	d := mustParse(t, `
workloads:
  db: {image: db:1}
  cache: {image: cache:1}
  migrate: {image: app:1, depends_on: [db]}
  web:
    image: app:1
    depends_on:
      db: {condition: healthy}
      cache:
      migrate: {condition: completed}
`)
	want := []spec.Dependency{{Workload: "db", Condition: spec.DependHealthy}, {Workload: "cache", Condition: spec.DependStarted}, {Workload: "migrate", Condition: spec.DependCompleted}}
	if got := d.Workloads["web"].DependsOn; !reflect.DeepEqual(got, want) {
		t.Errorf("web depends on %+v, want %+v", got, want)
	}
	if got := d.Workloads["migrate"].DependsOn; !reflect.DeepEqual(got, []spec.Dependency{{Workload: "db", Condition: spec.DependStarted}}) {
		t.Errorf("migrate depends on %+v", got)
	}
	plain := *d.Workloads["web"]
	plain.DependsOn = nil
	if spec.Hash(&plain, "sha256:1") != spec.Hash(d.Workloads["web"], "sha256:1") {
		t.Error("depends_on is in the spec hash")
	}

	fromCompose, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(`
services:
  db: {image: db:1}
  cache: {image: cache:1}
  migrate: {image: app:1, depends_on: [db]}
  web:
    image: app:1
    depends_on:
      db: {condition: service_healthy}
      cache: {condition: service_started}
      migrate: {condition: service_completed_successfully}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fromCompose.Warnings) != 0 {
		t.Errorf("warnings: %v", spec.ErrorList(fromCompose.Warnings))
	}
	// compose's mapping comes sorted by name; rollcall.yaml keeps file order.
	wantCompose := []spec.Dependency{{Workload: "cache", Condition: spec.DependStarted}, {Workload: "db", Condition: spec.DependHealthy}, {Workload: "migrate", Condition: spec.DependCompleted}}
	if got := fromCompose.Workloads["web"].DependsOn; !reflect.DeepEqual(got, wantCompose) {
		t.Errorf("compose: web depends on %+v, want %+v", got, wantCompose)
	}
	if got := fromCompose.Workloads["migrate"].DependsOn; !reflect.DeepEqual(got, []spec.Dependency{{Workload: "db", Condition: spec.DependStarted}}) {
		t.Errorf("compose: migrate depends on %+v", got)
	}
}

// An unknown name, a cycle (a workload on itself, or through others), a
// bad condition are errors at the entry.
func TestDependsOnErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"unknown workload", "workloads:\n  web: {image: a, depends_on: [dbb]}\n  db: {image: b}\n",
			2, 32, `web.depends_on[0]: unknown workload "dbb"`, "db, web"},
		{"itself", "workloads:\n  web:\n    image: a\n    depends_on: {web: }\n",
			4, 18, "web.depends_on.web: dependency cycle: web → web", "drop one"},
		{"a cycle through two", "workloads:\n  a: {image: x, depends_on: [b]}\n  b: {image: x, depends_on: [c]}\n  c: {image: x, depends_on: [a]}\n",
			4, 30, "c.depends_on[0]: dependency cycle: a → b → c → a", ""},
		{"bad condition", "workloads:\n  db: {image: b}\n  web: {image: a, depends_on: {db: {condition: ready}}}\n",
			3, 48, `web.depends_on.db.condition: unknown value "ready"`, "started, healthy, completed"},
		{"twice", "workloads:\n  db: {image: b}\n  web: {image: a, depends_on: [db, db]}\n",
			3, 36, `web.depends_on[1]: "db" is listed twice`, ""},
		{"not a list", "workloads:\n  db: {image: b}\n  web: {image: a, depends_on: db}\n",
			3, 31, "web.depends_on: expected a list or a mapping", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("rollcall.yaml", []byte(tc.src))
			var list spec.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %v, want an ErrorList", err)
			}
			for _, e := range list {
				if strings.Contains(e.Msg, tc.msg) {
					if e.Line != tc.line || e.Col != tc.col || !strings.Contains(e.Hint, tc.hint) {
						t.Errorf("at %d:%d hint %q, want %d:%d hint with %q", e.Line, e.Col, e.Hint, tc.line, tc.col, tc.hint)
					}
					return
				}
			}
			t.Errorf("no error %q in %v", tc.msg, list)
		})
	}
}

// In a compose file, a cycle is an error at a depends_on of it; restart: true is a warning; a dependency left out by its
// profiles that is not required is dropped, as compose drops it.
func TestComposeDependsOn(t *testing.T) {
	name := filepath.Join(t.TempDir(), "compose.yaml")
	_, err := ParseCompose(name, []byte("services:\n  a:\n    image: x\n    depends_on: [b]\n  b:\n    image: x\n    depends_on:\n      a: {condition: service_started}\n"), nil)
	// compose-go finds the cycle first, from either end.
	var list spec.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || !strings.Contains(list[0].Msg, "dependency cycle detected") ||
		!(list[0].Line == 4 && list[0].Col == 5 || list[0].Line == 8 && list[0].Col == 7) || !strings.Contains(list[0].Hint, "depends_on") {
		t.Fatalf("cycle: %v", err)
	}
	d, err := ParseCompose(name, []byte(`
services:
  web:
    image: x
    depends_on:
      db: {condition: service_healthy, restart: true}
      debug: {condition: service_started, required: false}
  db: {image: y}
  debug: {image: z, profiles: [debug]}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Workloads["web"].DependsOn; !reflect.DeepEqual(got, []spec.Dependency{{Workload: "db", Condition: spec.DependHealthy}}) {
		t.Errorf("web depends on %+v", got)
	}
	var restart bool
	for _, w := range d.Warnings {
		if strings.HasPrefix(w.Msg, "services.web.depends_on.db.restart: ignored") {
			restart = w.Line == 6
		}
	}
	if !restart {
		t.Errorf("no restart warning at line 6 in %v", spec.ErrorList(d.Warnings))
	}
}
