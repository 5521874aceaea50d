package main

// A compose stack on the real engine (issue 28, item 6): three services
// from one compose file, a database-like one among them writing its named
// volume, brought to converged and rolled by the built binary; the data
// written before the roll is there after it. Three probed containers.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/spec"
)

func TestRealComposeStackRollsWithItsData(t *testing.T) {
	r := newRealRig(t)
	for _, f := range []string{"app.conf", "db_password.txt"} {
		if err := os.WriteFile(filepath.Join(r.dir, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stack := func(version string) string {
		tag, _ := dockertest.DemoappImage(t, version)
		service := func(name, extra string) string {
			return fmt.Sprintf(`  %s:
    image: %s
    command: ["-listen", ":8080", "-version", %q%s]
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s, timeout: 3s, retries: 3}
    stop_grace_period: 2s
    restart: "no"
`, name, tag, version, extra)
		}
		return `name: ` + r.prefix + `
x-rollcall: {prefix: ` + r.prefix + `}
services:
` + service("db", `, "-journal", "/var/lib/db/journal"`) + `    volumes: [dbdata:/var/lib/db]
    secrets: [db_password]
` + service("web", "") + `    configs: [app_config]
    read_only: true
    tmpfs: [/tmp]
` + service("worker", "") + `
volumes:
  dbdata: {}
secrets:
  db_password: {file: ./db_password.txt}
configs:
  app_config: {file: ./app.conf}
`
	}
	path := filepath.Join(r.dir, "compose.yaml")
	write := func(version string) {
		if err := os.WriteFile(path, []byte(stack(version)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("v1")
	if res := r.run("apply", "--yes", "--timeout", "3m", "-f", path); res.code != exitOK {
		t.Fatalf("apply v1: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	before := r.journal1("db")
	if !strings.HasPrefix(before, "v1 ") {
		t.Fatalf("db's journal after v1: %q", before)
	}
	// The volume is compose's own name for it: <project>_dbdata.
	if out, err := dockertest.CLI(r.ctx, "volume", "inspect", "--format", "{{.Name}}", r.prefix+"_dbdata"); err != nil {
		t.Errorf("volume %s_dbdata: %v %s", r.prefix, err, out)
	}
	// The secret and the config are read-only files at compose's targets.
	for _, probe := range [][]string{{"db", "/run/secrets/db_password"}, {"web", "/app_config"}} {
		if got := r.mountOf(probe[0], probe[1]); got != "bind ro" {
			t.Errorf("%s: %s is %q, want a read-only bind", probe[0], probe[1], got)
		}
	}

	write("v2")
	res := r.run("plan", "--json", "-f", path)
	var doc planDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("plan --json: exit %d, %v\n%s", res.code, err, res.stdout)
	}
	moving := map[string]bool{}
	for _, w := range doc.Workloads {
		for _, s := range w.Steps {
			moving[s.Workload] = true
			if s.Workload == "db" && (s.Action != "roll" || !s.Downtime || s.StopFirst != string(spec.StopFirstData)) {
				t.Errorf("db rolls without saying its slot goes down for its data: %+v", s)
			}
			if s.Workload != "db" && s.Downtime {
				t.Errorf("%s goes down: %+v", s.Workload, s)
			}
		}
	}
	if len(moving) != 3 {
		t.Errorf("the plan moves %v, want all three services\n%s", moving, res.stdout)
	}
	if res := r.run("apply", "--yes", "--allow-mass-stop", "--timeout", "3m", "-f", path); res.code != exitOK {
		t.Fatalf("apply v2: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	if after := r.journal1("db"); !strings.HasPrefix(after, before+"v2 ") {
		t.Errorf("db's journal after the roll: %q, want %q then v2's line", after, before)
	}
	if res := r.run("plan", "-f", path); res.code != exitOK || strings.TrimSpace(res.stdout) != "nothing to do" {
		t.Errorf("plan after the roll: exit %d\n%s", res.code, res.stdout)
	}
}

// mountOf is how the running container of workload mounts target: "bind
// ro", "volume rw", or "" when it does not.
func (r *realRig) mountOf(workload, target string) string {
	r.t.Helper()
	out, err := dockertest.CLI(r.ctx, "ps", "--filter", "label="+r.prefix+".workload="+workload, "--format", "{{.ID}}")
	if err != nil || strings.TrimSpace(out) == "" {
		r.t.Fatalf("no container of %s: %v", workload, err)
	}
	id := strings.Fields(out)[0]
	out, err = dockertest.CLI(r.ctx, "inspect", "--format", "{{json .Mounts}}", id)
	if err != nil {
		r.t.Fatal(err)
	}
	var mounts []struct {
		Type        string
		Destination string
		RW          bool
	}
	if err := json.Unmarshal([]byte(out), &mounts); err != nil {
		r.t.Fatal(err)
	}
	for _, m := range mounts {
		if m.Destination == target {
			if m.RW {
				return m.Type + " rw"
			}
			return m.Type + " ro"
		}
	}
	return ""
}
