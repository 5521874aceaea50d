package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/charmbracelet/x/ansi"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

const mixedYAML = `prefix: rctest
workloads:
  api:
    image: demo:v2
    replicas: 1
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
  web:
    image: demo:v2
    version: "2"
    replicas: 2
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`

const (
	imageV1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	imageV2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// seedMixed writes mixedYAML and seeds the fake engine, frozen at t0, with
// a state that needs every kind of step:
//   - web/0: an up-to-date healthy container and a v1 one beside it (roll);
//   - web/1: an up-to-date container killed by OOM (restart);
//   - web/2: an up-to-date container past replicas 2 (surplus stop);
//   - worker/0: a workload that is no longer desired (extra stop);
//   - api/0: nothing yet (start).
func seedMixed(t *testing.T, h *harness) string {
	t.Helper()
	path := h.file("rollcall.yaml", mixedYAML)
	seedMixedOn(t, h.fake)
	return path
}

// seedMixedOn seeds fake with seedMixed's state.
func seedMixedOn(t *testing.T, f *fake.Engine) {
	t.Helper()
	f.AddImage("demo:v1", imageV1, fake.Behaviour{})
	f.AddImage("demo:v2", imageV2, fake.Behaviour{})
	d, err := load.Parse("mixed.yaml", []byte(mixedYAML))
	if err != nil {
		t.Fatal(err)
	}
	r := spec.Resolve(context.Background(), d, f)
	web := r.Workload("web")
	up := func(id string, slot int, mods ...func(*docker.Container)) {
		cs := reconcile.CreateSpec(d.Prefix, web, slot)
		c := docker.Container{
			ID: strings.Repeat(id, 64/len(id)), Name: cs.Name, Image: cs.Image, ImageID: web.ImageID, Labels: cs.Labels,
			State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
			Created: t0.Add(-time.Hour), StartedAt: t0.Add(-time.Hour), Limits: cs.Limits,
		}
		for _, m := range mods {
			m(&c)
		}
		if _, err := f.AddContainer(c); err != nil {
			t.Fatal(err)
		}
	}
	old := func(id, workload string, slot int, name string) {
		labels := map[string]string{
			docker.ManagedLabel(d.Prefix): "true", docker.WorkloadLabel(d.Prefix): workload,
			docker.SlotLabel(d.Prefix): string(rune('0' + slot)), docker.SpecLabel(d.Prefix): "0123456789abcdef", docker.VersionLabel(d.Prefix): "1",
		}
		c := docker.Container{
			ID: strings.Repeat(id, 64/len(id)), Name: name, Image: "demo:v1", ImageID: imageV1, Labels: labels,
			State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
			Created: t0.Add(-2 * time.Hour), StartedAt: t0.Add(-2 * time.Hour), Limits: docker.Limits{Restart: "unless-stopped"},
		}
		if _, err := f.AddContainer(c); err != nil {
			t.Fatal(err)
		}
	}
	up("a0", 0)
	old("b0", "web", 0, "rctest-web-0-01234567")
	up("a1", 1, func(c *docker.Container) {
		c.State, c.ExitCode, c.OOMKilled, c.Health = docker.StateExited, 137, true, docker.HealthNone
		// Recent: a container that missed its health deadline is a
		// failure to pause on, not a crash to restart.
		c.Created, c.StartedAt, c.FinishedAt = t0.Add(-30*time.Second), t0.Add(-30*time.Second), t0.Add(-10*time.Second)
	})
	up("a2", 2)
	old("c0", "worker", 0, "rctest-worker-0-01234567")
}

// TestPlanGolden: the plan of a fixed state, plain (piped) and as JSON,
// matches the golden files; pending changes exit 2.
func TestPlanGolden(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"plan.golden", nil},
		{"plan.json.golden", []string{"--json"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			h := newHarness(t, fake.NewManualClock(t0))
			path := seedMixed(t, h)
			res := h.run("", append([]string{"plan", "-f", path}, tc.args...)...)
			if res.code != exitPending {
				t.Fatalf("exit %d, want %d (pending); stderr:\n%s", res.code, exitPending, res.stderr)
			}
			golden(t, tc.golden, strings.ReplaceAll(res.stdout, h.dir, "$DIR"))
			again := h.run("", append([]string{"plan", "-f", path}, tc.args...)...)
			if again.stdout != res.stdout {
				t.Errorf("two plans of one state differ:\n%s\n---\n%s", res.stdout, again.stdout)
			}
			if muts := h.fake.Mutations(); len(muts) > 0 {
				t.Errorf("plan changed the engine: %q", muts)
			}
		})
	}
}

// TestPlanJSONSchema: the JSON document holds every documented field, with
// [] rather than null, and null for a slot-less step's slot.
func TestPlanJSONSchema(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	res := h.run("", "plan", "--json", "-f", path)
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.stdout)
	}
	for _, k := range []string{"source", "prefix", "converged", "summary", "workloads", "notes", "warnings"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("top level lacks %q", k)
		}
	}
	if doc["converged"] != false || doc["prefix"] != "rctest" {
		t.Errorf("converged=%v prefix=%v", doc["converged"], doc["prefix"])
	}
	ws := doc["workloads"].([]any)
	for _, w := range ws {
		wm := w.(map[string]any)
		for _, k := range []string{"name", "changes", "error", "failures", "steps", "notes"} {
			if v, ok := wm[k]; !ok || v == nil {
				t.Errorf("workload %v: %q missing or null", wm["name"], k)
			}
		}
		for _, s := range wm["steps"].([]any) {
			sm := s.(map[string]any)
			for _, k := range []string{"action", "workload", "slot", "container", "container_id", "reason", "until", "downtime"} {
				if _, ok := sm[k]; !ok {
					t.Errorf("step %v lacks %q", sm, k)
				}
			}
		}
	}
}

// TestPlanExitCodes: 0 converged, 2 pending, 1 for every error, with the
// error on stderr in one line (or file:line:col for a broken file).
func TestPlanExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		file        string // "" means no file at all
		seed        bool
		setup       func(t *testing.T, h *harness) string // seeds the engine, returns the file
		unreachable bool
		code        int
		json        string // what --json says of convergence, when set
		stderr      []string
	}{
		{name: "converged: nothing desired, nothing running", file: "prefix: rctest\nworkloads: {}\n", code: exitOK},
		{name: "pending", seed: true, code: exitPending},
		// Only a wait (a container still booting): nothing to run, but the
		// desired state is not reached yet.
		{name: "waits only", setup: seedBooting, code: exitPending, json: `"converged": false`},
		{name: "converged: every slot runs the desired spec, healthy", setup: seedHealthy, code: exitOK, json: `"converged": true`},
		{name: "missing file", code: exitFailed, stderr: []string{"no desired-state file at $DIR/absent.yaml", `"rollcall demo"`}},
		{name: "broken file", file: "workloads:\n  web:\n    image: demo:v2\n    replicas: many\n", code: exitFailed,
			stderr: []string{"$DIR/rollcall.yaml:4:15: ", "replicas"}},
		{name: "unknown key", file: "workloads:\n  web:\n    imag: demo:v2\n", code: exitFailed,
			stderr: []string{"$DIR/rollcall.yaml:3:5: ", "hint:"}},
		{name: "unreachable engine", file: "workloads: {}\n", unreachable: true, code: exitFailed,
			stderr: []string{"rollcall: connect to docker engine", "--docker-host"}},
		// An image the engine lacks is pulled first (a pull step: pending);
		// with pull: never it is an error.
		{name: "image missing", file: "workloads:\n  web: {image: nope:v1}\n", code: exitPending},
		{name: "image missing, pull never", file: "workloads:\n  web: {image: nope:v1, pull: never}\n", code: exitFailed,
			stderr: []string{"rollcall: cannot converge: web: image nope:v1", "pull: never"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, fake.NewManualClock(t0))
			h.unreachable = tc.unreachable
			path := h.dir + "/absent.yaml"
			switch {
			case tc.seed:
				path = seedMixed(t, h)
			case tc.setup != nil:
				path = tc.setup(t, h)
			case tc.file != "":
				path = h.file("rollcall.yaml", tc.file)
			}
			res := h.run("", "plan", "-f", path)
			if res.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", res.code, tc.code, res.stdout, res.stderr)
			}
			stderr := strings.ReplaceAll(res.stderr, h.dir, "$DIR")
			mustContain(t, "stderr", stderr, tc.stderr...)
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Errorf("stack trace on stderr:\n%s", stderr)
			}
			if tc.json != "" {
				res := h.run("", "plan", "--json", "-f", path)
				if res.code != tc.code {
					t.Errorf("--json: exit %d, want %d", res.code, tc.code)
				}
				mustContain(t, "--json", res.stdout, tc.json)
			}
			if tc.code == exitFailed && !strings.Contains(tc.name, "broken") && !strings.Contains(tc.name, "unknown") {
				if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 {
					t.Errorf("error is %d lines, want one:\n%s", n+1, stderr)
				}
			}
		})
	}
}

const oneWebYAML = `prefix: rctest
workloads:
  web:
    image: demo:v2
    replicas: 1
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
    update: {health_deadline: 1m}
`

// seedOneWeb writes oneWebYAML and seeds web/0 with an up-to-date
// container of an image that behaves as b, changed by mods.
func seedOneWeb(t *testing.T, h *harness, b fake.Behaviour, mods ...func(*docker.Container)) string {
	t.Helper()
	path := h.file("rollcall.yaml", oneWebYAML)
	h.fake.AddImage("demo:v2", imageV2, b)
	d, err := load.Parse(path, []byte(oneWebYAML))
	if err != nil {
		t.Fatal(err)
	}
	web := spec.Resolve(context.Background(), d, h.fake).Workload("web")
	cs := reconcile.CreateSpec(d.Prefix, web, 0)
	c := docker.Container{
		ID: strings.Repeat("d0", 32), Name: cs.Name, Image: cs.Image, ImageID: web.ImageID, Labels: cs.Labels,
		State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
		Created: t0.Add(-time.Hour), StartedAt: t0.Add(-time.Hour), Limits: cs.Limits,
	}
	for _, m := range mods {
		m(&c)
	}
	if _, err := h.fake.AddContainer(c); err != nil {
		t.Fatal(err)
	}
	return path
}

func seedHealthy(t *testing.T, h *harness) string { return seedOneWeb(t, h, fake.Behaviour{}) }

// seedBooting: web/0's only container is up to date and still starting,
// well within its health deadline: the plan is one wait.
func seedBooting(t *testing.T, h *harness) string {
	return seedOneWeb(t, h, fake.Behaviour{ReadyAfter: time.Hour}, func(c *docker.Container) {
		c.Health, c.Created, c.StartedAt = docker.HealthStarting, t0.Add(-2*time.Second), t0.Add(-2*time.Second)
	})
}

// TestPlanPrefixOverride: --prefix replaces the file's prefix, and a bad
// one is refused before the engine is asked.
func TestPlanPrefixOverride(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	res := h.run("", "--prefix", "other", "plan", "--json", "-f", path)
	if res.code != exitPending { // api still needs a start under any prefix
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	mustContain(t, "stdout", res.stdout, `"prefix": "other"`)
	if strings.Contains(res.stdout, "rctest-web-0-01234567") {
		t.Errorf("containers of prefix rctest showed up under --prefix other:\n%s", res.stdout)
	}
	res = h.run("", "--prefix", "Not A Prefix", "plan", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1", res.code)
	}
	mustContain(t, "stderr", res.stderr, "--prefix", "not a valid label prefix")
}

// TestStyledPlanCommandMatchesPlain: through the command, on a terminal the tree is styled, and with the
// escape sequences stripped it is exactly the plain tree, in every theme.
func TestStyledPlanCommandMatchesPlain(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	plain := h.run("", "plan", "-f", path).stdout
	h.terminal["stdout"] = true
	for _, th := range []string{"auto", "dark", "light", "mono"} {
		res := h.run("", "--theme", th, "plan", "-f", path)
		if !strings.Contains(res.stdout, "\x1b[") {
			t.Errorf("theme %s: no styling on a terminal", th)
		}
		if got := ansi.Strip(res.stdout); got != plain {
			t.Errorf("theme %s: stripped styled plan differs from the plain one:\n%s\n---\n%s", th, got, plain)
		}
	}
}

// TestNoColor: NO_COLOR turns colour off under --theme auto (bold and faint
// stay), an explicit colour theme wins over it, and piped output has no
// escape sequences at all.
func TestNoColor(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := seedMixed(t, h)
	if out := h.run("", "plan", "-f", path).stdout; strings.Contains(out, "\x1b") {
		t.Errorf("piped plan has escape sequences:\n%q", out)
	}
	h.terminal["stdout"] = true
	h.environ = []string{"NO_COLOR=1"}
	auto := h.run("", "plan", "-f", path).stdout
	if strings.Contains(auto, "38;") || !strings.Contains(auto, "\x1b[1m") {
		t.Errorf("NO_COLOR under auto: want bold and no colour, got:\n%q", auto)
	}
	if dark := h.run("", "--theme", "dark", "plan", "-f", path).stdout; !strings.Contains(dark, "38;") {
		t.Errorf("--theme dark under NO_COLOR has no colour:\n%q", dark)
	}
}

// holdWeb rolls web (rollbackYAML) out on v1, then to a v3 that never
// turns healthy: v3 is rolled back and put on hold, both slots keep v1.
// It returns the desired file, on v3.
func holdWeb(t *testing.T, h *harness) string {
	t.Helper()
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	h.fake.AddImage("demo:v3", "", fake.Behaviour{ReadyAfter: time.Hour})
	path := h.file("rollcall.yaml", strings.Replace(rollbackYAML, "%s", "v1", 1))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitOK {
		t.Fatalf("v1: exit %d\n%s", res.code, res.stderr)
	}
	h.file("rollcall.yaml", strings.Replace(rollbackYAML, "%s", "v3", 1))
	if res := h.run("", "apply", "--yes", "--timeout", "20s", "-f", path); res.code != exitFailed {
		t.Fatalf("v3: exit %d, want 1 (rolled back)\n%s", res.code, res.stderr)
	}
	return path
}

// heldHash is the spec hash of web as path desires it.
func heldHash(t *testing.T, h *harness, path string) string {
	t.Helper()
	d, err := loadDesired(context.Background(), h.env(strings.NewReader(""), &syncBuffer{}, &syncBuffer{}), desiredFlags{file: path}, "")
	if err != nil {
		t.Fatal(err)
	}
	return spec.Resolve(context.Background(), d, h.fake).Workload("web").Hash
}

// TestPlanHoldIsNotConverged (DESIGN §9): a rolled-back spec on hold keeps
// its slots off the desired spec, so plan exits 2 although nothing can
// run; it shows the hold and how to lift it, and --json says converged
// false with the hold.
func TestPlanHoldIsNotConverged(t *testing.T) {
	h := newHarness(t, nil)
	path := holdWeb(t, h)
	hash := heldHash(t, h, path)

	res := h.run("", "plan", "-f", path)
	if res.code != exitPending {
		t.Fatalf("exit %d, want 2 (a hold keeps web off its desired spec)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "plan", res.stdout, "on hold: web spec "+hash[:8], "by "+journal.CurrentUser(), "not healthy within health_deadline 1s",
		"slots 0, 1 not started", "rollcall retry web")

	res = h.run("", "plan", "--json", "-f", path)
	if res.code != exitPending {
		t.Fatalf("--json: exit %d, want 2", res.code)
	}
	var doc struct {
		SchemaVersion int  `json:"schema_version"`
		Converged     bool `json:"converged"`
		Holds         []struct {
			Workload string     `json:"workload"`
			Hash     string     `json:"hash"`
			Since    *time.Time `json:"since"`
			By       string     `json:"by"`
			Cause    string     `json:"cause"`
			Reason   string     `json:"reason"`
			Slots    []int      `json:"slots"`
		} `json:"holds"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.stdout)
	}
	if doc.Converged {
		t.Errorf("converged: true while web is on hold:\n%s", res.stdout)
	}
	if doc.SchemaVersion < 3 {
		t.Errorf("schema_version %d, want 3 or more (holds added in 3)", doc.SchemaVersion)
	}
	if len(doc.Holds) != 1 {
		t.Fatalf("holds %+v, want web's one", doc.Holds)
	}
	hd := doc.Holds[0]
	if hd.Workload != "web" || hd.Hash != hash || hd.By != journal.CurrentUser() || hd.Since == nil || hd.Since.IsZero() ||
		hd.Cause != "failure-action" || !strings.HasPrefix(hd.Reason, "rolled back by failure_action: web/") ||
		!strings.Contains(hd.Reason, "health_deadline") || len(hd.Slots) != 2 || hd.Slots[0] != 0 || hd.Slots[1] != 1 {
		t.Errorf("hold %+v, want web %s by the user since a time, slots [0 1], with its reason", hd, hash)
	}
}
