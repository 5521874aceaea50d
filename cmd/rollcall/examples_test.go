package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/spec"
)

// TestExampleFileParses: examples/rollcall.yaml is a valid desired state, and
// says what its comments say, with no warnings.
func TestExampleFileParses(t *testing.T) {
	const path = "../../examples/rollcall.yaml"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := load.Parse(path, data)
	if err != nil {
		t.Fatalf("example does not parse:\n%v", err)
	}
	if len(d.Warnings) > 0 {
		t.Errorf("example has warnings: %v", spec.ErrorList(d.Warnings))
	}
	w := d.Workloads["web"]
	switch {
	case w == nil:
		t.Fatal("no workload web")
	case w.Image != "rollcall-demoapp:v2" || w.Replicas != 3:
		t.Errorf("image %q replicas %d", w.Image, w.Replicas)
	case w.Healthcheck == nil || !slices.Equal(w.Healthcheck.Test, []string{"CMD", "/demoapp", "-health"}):
		t.Errorf("healthcheck %+v", w.Healthcheck)
	case len(w.Ports) != 1 || w.Ports[0] != (spec.Port{HostIP: "127.0.0.1", ContainerPort: 8080, Proto: "tcp"}):
		t.Errorf("ports %+v", w.Ports)
	}
}

// shippedAdmin is the admin socket of the shipped Caddyfile, as the
// examples name it: examples/Caddyfile's admin line at its mount point.
const shippedAdmin = "unix:///run/rollcall-caddy/admin.sock"

// parseExample parses examples/name with the spec loader, with no error
// and no warning.
func parseExample(t *testing.T, name string, data []byte) *spec.Desired {
	t.Helper()
	d, err := load.Parse(name, data)
	if err != nil {
		t.Fatalf("%s does not parse:\n%v", name, err)
	}
	if len(d.Warnings) > 0 {
		t.Errorf("%s has warnings: %v", name, spec.ErrorList(d.Warnings))
	}
	return d
}

// TestProxiedExamplesParse: examples/proxied.yaml and examples/canary.yaml
// are valid desired states that reach Caddy's admin API on the shipped
// Caddyfile's socket, and canary.yaml's recipe (its comments and the
// README's) turns it into the bad v3 and then the good one, each still
// valid, with short steps.
func TestProxiedExamplesParse(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile("../../examples/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	caddyfile := string(read("Caddyfile"))
	if !strings.Contains(caddyfile, "\tadmin unix/"+strings.TrimPrefix(shippedAdmin, "unix://")+"|") {
		t.Errorf("examples/Caddyfile's admin is not on %s", shippedAdmin)
	}
	proxied := parseExample(t, "proxied.yaml", read("proxied.yaml"))
	if proxied.Proxy == nil || proxied.Proxy.CaddyAdmin != shippedAdmin {
		t.Errorf("proxied.yaml: proxy %+v, want caddy_admin %s", proxied.Proxy, shippedAdmin)
	}

	src := string(read("canary.yaml"))
	d := parseExample(t, "canary.yaml", []byte(src))
	web := d.Workloads["web"]
	switch {
	case d.Proxy == nil || d.Proxy.CaddyAdmin != shippedAdmin:
		t.Errorf("canary.yaml: proxy %+v, want caddy_admin %s", d.Proxy, shippedAdmin)
	case web == nil || web.Update.Canary == nil:
		t.Fatalf("canary.yaml: no web canary: %+v", web)
	case web.Image != "rollcall-demoapp:v2" || !slices.Equal(web.Command, []string{"-listen", ":8080", "-version", "v2"}):
		t.Errorf("canary.yaml: web runs %s %q, want the demo image's v2", web.Image, web.Command)
	}
	steps := web.Update.Canary.Steps
	if len(steps) != 2 || steps[0].For+steps[1].For > time.Minute {
		t.Errorf("canary.yaml: steps %+v, want two short ones", steps)
	}

	// The recipe's two edits: sed -i '/^    command:/s/OLD/NEW/'.
	edit := func(src, old, new string) string {
		var out []string
		n := 0
		for _, line := range strings.Split(src, "\n") {
			if strings.HasPrefix(line, "    command:") && strings.Contains(line, old) {
				line = strings.Replace(line, old, new, 1)
				n++
			}
			out = append(out, line)
		}
		if n != 1 {
			t.Fatalf("the recipe's edit %q → %q changes %d command lines of canary.yaml, want 1", old, new, n)
		}
		return strings.Join(out, "\n")
	}
	for _, sed := range []string{
		`sed -i '/^    command:/s/"v2"]/"v3", "-fail-every", "5"]/' /tmp/canary.yaml`,
		`sed -i '/^    command:/s/, "-fail-every", "5"//' /tmp/canary.yaml`,
	} {
		if !strings.Contains(src, sed) {
			t.Errorf("canary.yaml's comments no longer say %s", sed)
		}
	}
	bad := edit(src, `"v2"]`, `"v3", "-fail-every", "5"]`)
	if w := parseExample(t, "canary.yaml (bad v3)", []byte(bad)).Workloads["web"]; !slices.Equal(w.Command, []string{"-listen", ":8080", "-version", "v3", "-fail-every", "5"}) {
		t.Errorf("bad v3 runs %q", w.Command)
	}
	good := edit(bad, `, "-fail-every", "5"`, "")
	if w := parseExample(t, "canary.yaml (good v3)", []byte(good)).Workloads["web"]; !slices.Equal(w.Command, []string{"-listen", ":8080", "-version", "v3"}) {
		t.Errorf("good v3 runs %q", w.Command)
	}
}
