package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// hostsYAML is mixedYAML's workloads on three hosts: edge-1 over ssh,
// edge-2 over tcp with a TLS folder beside the file (and the canary),
// edge-3 a docker context running one web replica instead of two.
var hostsYAML = strings.Replace(mixedYAML, "workloads:\n", `hosts:
  edge-1: {endpoint: "ssh://deploy@edge-1"}
  edge-2: {endpoint: "tcp://edge-2:2376", tls: certs/edge-2}
  edge-3: {context: edge-3, replicas: {web: 1}}
fleet:
  canary: [edge-2]
  batch: 1
  wait: 30s
workloads:
`, 1)

// seedConverged gives fake every slot of d's workloads, up to date and
// healthy: nothing to do.
func seedConverged(t *testing.T, f *fake.Engine, d *spec.Desired) {
	t.Helper()
	f.AddImage("demo:v2", imageV2, fake.Behaviour{})
	r := spec.Resolve(context.Background(), d, f)
	for _, name := range d.Names() {
		w := r.Workload(name)
		for slot := range w.Replicas {
			cs := reconcile.CreateSpec(d.Prefix, w, slot)
			if _, err := f.AddContainer(docker.Container{
				Name: cs.Name, Image: cs.Image, ImageID: w.ImageID, Labels: cs.Labels,
				State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true,
				Created: t0.Add(-time.Hour), StartedAt: t0.Add(-time.Hour), Limits: cs.Limits,
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// threeHosts writes hostsYAML (and edge-2's TLS folder) and gives each host
// an engine of its own: edge-1 converged, edge-2 seedMixed's state, edge-3
// empty.
func threeHosts(t *testing.T, h *harness) (string, *spec.Desired) {
	t.Helper()
	certs := filepath.Join(h.dir, "certs", "edge-2")
	if err := os.MkdirAll(certs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range tlsFiles {
		if err := os.WriteFile(filepath.Join(certs, f), []byte("test"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	path := h.file("fleet.yaml", hostsYAML)
	d, err := load.Parse(path, []byte(hostsYAML))
	if err != nil {
		t.Fatal(err)
	}
	one, _ := d.ForHost("edge-1")
	seedConverged(t, h.addHost("edge-1"), one)
	seedMixedOn(t, h.addHost("edge-2"))
	h.addHost("edge-3").AddImage("demo:v2", imageV2, fake.Behaviour{})
	return path, d
}

// hostLine is where host name's key stands in content: "line:col".
func hostLine(t *testing.T, content, name string) string {
	t.Helper()
	for i, l := range strings.Split(content, "\n") {
		if col := strings.Index(l, name+":"); col >= 0 && strings.HasPrefix(strings.TrimSpace(l), name+":") {
			return fmt.Sprintf("%d:%d", i+1, col+1)
		}
	}
	t.Fatalf("no host %s in the file", name)
	return ""
}

// maskEngines replaces the hosts' random engine IDs for a golden file.
func maskEngines(h *harness, s string) string {
	for name, c := range h.hosts {
		if info, err := c.Info(context.Background()); err == nil {
			s = strings.ReplaceAll(s, info.ID, "ENGINE-"+name)
		}
	}
	return strings.ReplaceAll(s, h.dir, "$DIR")
}

// TestPlanHosts: plan of a file with hosts: prints one block per host, in
// file order, headed by the host's name, endpoint and engine, holding that
// host's plan exactly as the plan of one host prints it; then the waves,
// canary first, and each host's state. Changes pending exit 2; nothing
// changes on any engine; each host is dialled at its endpoint, a relative
// TLS folder read from beside the file.
func TestPlanHosts(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	res := h.run("", "plan", "-f", path)
	if res.code != exitPending {
		t.Fatalf("exit %d, want %d (changes pending)\nstdout:\n%s\nstderr:\n%s", res.code, exitPending, res.stdout, res.stderr)
	}
	golden(t, "plan_hosts.golden", maskEngines(h, res.stdout))

	// edge-2's block is the single-host plan of the same state.
	single := newHarness(t, fake.NewManualClock(t0))
	one := single.run("", "plan", "-f", seedMixed(t, single))
	if one.code != exitPending {
		t.Fatalf("single-host plan: exit %d\n%s", one.code, one.stderr)
	}
	info, _ := h.hosts["edge-2"].Info(context.Background())
	block := "host edge-2  tcp://edge-2:2376  engine " + info.ID + "  docker fake (API 1.41)\n" + one.stdout + "\n"
	if !strings.Contains(res.stdout, block) {
		t.Errorf("edge-2's block is not its heading and the single-host plan:\nwant\n%s\nin\n%s", block, res.stdout)
	}
	var order []int
	for _, name := range []string{"host edge-1", "host edge-2", "host edge-3", "waves", "hosts"} {
		order = append(order, strings.Index(res.stdout, name))
	}
	if !slices.IsSorted(order) || order[0] < 0 {
		t.Errorf("blocks out of order (%v):\n%s", order, res.stdout)
	}
	mustContain(t, "fleet summary", res.stdout, "1 canary  edge-2\n", "2         edge-1\n", "3         edge-3\n",
		"edge-1  converged\n", "edge-3  2 steps: 2 start\n", "3 hosts: 1 converged · 2 not converged")

	for name, c := range h.hosts {
		if muts := c.(*fake.Engine).Mutations(); len(muts) > 0 {
			t.Errorf("plan changed %s: %q", name, muts)
		}
	}
	if ep, _ := h.dialedAt("edge-2"); ep.Host != "tcp://edge-2:2376" || ep.CertPath != filepath.Join(h.dir, "certs", "edge-2") || ep.PlainTCP {
		t.Errorf("edge-2 dialled at %+v, want its tcp endpoint with the TLS folder beside the file", ep)
	}
	if ep, _ := h.dialedAt("edge-3"); ep.Context != "edge-3" || ep.Host != "" {
		t.Errorf("edge-3 dialled at %+v, want its docker context", ep)
	}
	if ep, _ := h.dialedAt("edge-1"); ep.Host != "ssh://deploy@edge-1" {
		t.Errorf("edge-1 dialled at %+v, want its ssh endpoint", ep)
	}
}

// TestPlanHostsConverged: a fleet whose every host is converged exits 0.
func TestPlanHostsConverged(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	content := strings.Replace(mixedYAML, "workloads:\n", "hosts:\n  a: {endpoint: \"ssh://a\"}\n  b: {endpoint: \"ssh://b\", replicas: {web: 3}}\nworkloads:\n", 1)
	path := h.file("fleet.yaml", content)
	d, err := load.Parse(path, []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		hd, _ := d.ForHost(name)
		seedConverged(t, h.addHost(name), hd)
	}
	res := h.run("", "plan", "-f", path)
	if res.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "plan", res.stdout, "a  converged\n", "b  converged\n", "2 hosts: 2 converged")
}

// TestPlanHostsJSON: --json holds the fleet at the top level, its waves,
// and each host with its engine and its own plan document: edge-2's is the
// single-host plan of the same state.
func TestPlanHostsJSON(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	res := h.run("", "plan", "--json", "-f", path)
	if res.code != exitPending {
		t.Fatalf("exit %d, want 2\n%s", res.code, res.stderr)
	}
	var doc planDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.stdout)
	}
	if doc.SchemaVersion != planSchemaVersion || doc.Converged || doc.Summary != "3 hosts: 1 converged · 2 not converged" {
		t.Errorf("schema %d converged %v summary %q", doc.SchemaVersion, doc.Converged, doc.Summary)
	}
	if want := [][]string{{"edge-2"}, {"edge-1"}, {"edge-3"}}; !slices.EqualFunc(doc.Waves, want, slices.Equal) {
		t.Errorf("waves %v, want %v", doc.Waves, want)
	}
	if len(doc.Hosts) != 3 {
		t.Fatalf("hosts %+v, want 3", doc.Hosts)
	}
	wantWave := map[string]int{"edge-1": 1, "edge-2": 0, "edge-3": 2}
	wantEndpoint := map[string]string{"edge-1": "ssh://deploy@edge-1", "edge-2": "tcp://edge-2:2376", "edge-3": "context edge-3"}
	for i, hd := range doc.Hosts {
		info, _ := h.hosts[hd.Name].Info(context.Background())
		if hd.Name != []string{"edge-1", "edge-2", "edge-3"}[i] || !hd.Reachable || hd.Error != "" || hd.Plan == nil ||
			hd.EngineID != info.ID || hd.EngineVersion != info.Version || hd.Wave != wantWave[hd.Name] || hd.Endpoint != wantEndpoint[hd.Name] {
			t.Errorf("host %d: %+v", i, hd)
		}
	}
	if p := doc.Hosts[0].Plan; p == nil || !p.Converged {
		t.Errorf("edge-1's plan is not converged: %+v", p)
	}
	if p := doc.Hosts[2].Plan; p == nil || p.Summary != "2 start" {
		t.Errorf("edge-3's plan (one web replica there): %+v", p)
	}

	single := newHarness(t, fake.NewManualClock(t0))
	one := single.run("", "plan", "--json", "-f", seedMixed(t, single))
	var want planDoc
	if err := json.Unmarshal([]byte(one.stdout), &want); err != nil {
		t.Fatal(err)
	}
	got := *doc.Hosts[1].Plan
	got.Source, want.Source = "", ""
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(want)
	if string(gb) != string(wb) {
		t.Errorf("edge-2's plan document is not the single-host one:\n%s\nwant\n%s", gb, wb)
	}
}

// TestPlanHostsUnreachable: a host that does not answer is reported in its
// block, in the summary and in --json, the others are still planned, and
// plan exits 1 naming it.
func TestPlanHostsUnreachable(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	h.setHost("edge-3", nil)
	res := h.run("", "plan", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1 (a host does not answer)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "plan", res.stdout, "host edge-3  context edge-3\n  ! unreachable: connect to docker engine docker context edge-3: connection refused\n",
		"host edge-1", "host edge-2", "edge-3  unreachable: connect", "3 hosts: 1 converged · 1 not converged · 1 unreachable")
	mustContain(t, "stderr", res.stderr, "rollcall: edge-3 does not answer: connect to docker engine docker context edge-3: connection refused")

	res = h.run("", "plan", "--json", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("--json: exit %d, want 1", res.code)
	}
	var doc planDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, res.stdout)
	}
	e3 := doc.Hosts[2]
	if doc.Converged || e3.Reachable || e3.Plan != nil || !strings.Contains(e3.Error, "connection refused") || e3.EngineID != "" {
		t.Errorf("edge-3: %+v (converged %v)", e3, doc.Converged)
	}
	if !doc.Hosts[0].Reachable || doc.Hosts[0].Plan == nil {
		t.Errorf("edge-1 not planned beside an unreachable host: %+v", doc.Hosts[0])
	}
}

// TestPlanHostsOneEngineTwice: two hosts that answer with one engine ID are
// one engine: an error at the second host's file:line:col, and no plan.
func TestPlanHostsOneEngineTwice(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	h.setHost("edge-3", h.hosts["edge-1"])
	res := h.run("", "plan", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	at := path + ":" + hostLine(t, hostsYAML, "edge-3") + ": hosts.edge-3: context edge-3 reaches the engine of edge-1 (line " +
		strings.Split(hostLine(t, hostsYAML, "edge-1"), ":")[0] + ")"
	mustContain(t, "stderr", res.stderr, at, "hint: each host is one engine")
	if res.stdout != "" {
		t.Errorf("a plan was printed for a file with one engine twice:\n%s", res.stdout)
	}
}

// TestPlanHostsBadEndpoint: a host the file gets wrong (a TLS folder
// without its files) is an error at the host's file:line:col, and no host
// is dialled.
func TestPlanHostsBadEndpoint(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	if err := os.Remove(filepath.Join(h.dir, "certs", "edge-2", "key.pem")); err != nil {
		t.Fatal(err)
	}
	res := h.run("", "plan", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "stderr", res.stderr, path+":"+hostLine(t, hostsYAML, "edge-2")+": hosts.edge-2: TLS folder "+filepath.Join(h.dir, "certs", "edge-2"), "key.pem")
	for _, name := range []string{"edge-1", "edge-2", "edge-3"} {
		if ep, dialled := h.dialedAt(name); dialled {
			t.Errorf("%s was dialled (at %s) though the file is wrong", name, ep)
		}
	}
}

// TestCheckHostsValidate: an endpoint moby.Endpoint.Validate refuses is an
// error at its host's place, one per host, in file order.
func TestCheckHostsValidate(t *testing.T) {
	d := &spec.Desired{Source: "fleet.yaml", Hosts: []*spec.Host{
		{Name: "ok", Transport: spec.TransportSSH, Endpoint: "ssh://ok", Line: 3, Col: 3},
		{Name: "bare", Transport: spec.TransportTCP, Endpoint: "tcp://bare:2375", Line: 4, Col: 3},
		{Name: "both", Transport: spec.TransportUnix, Endpoint: "unix:///run/docker.sock", PlainTCP: true, Line: 7, Col: 5},
	}}
	err := checkHosts(d)
	list, isList := err.(spec.ErrorList)
	if !isList || len(list) != 2 {
		t.Fatalf("checkHosts: %v, want two errors", err)
	}
	for i, want := range []struct {
		line, col int
		msg       string
	}{{4, 3, "hosts.bare: endpoint tcp://bare:2375: tcp:// needs TLS"}, {7, 5, "hosts.both: endpoint unix:///run/docker.sock: TLS settings are for tcp:// only"}} {
		if e := list[i]; e.File != "fleet.yaml" || e.Line != want.line || e.Col != want.col || !strings.HasPrefix(e.Msg, want.msg) {
			t.Errorf("error %d: %s, want %d:%d: %s", i, e, want.line, want.col, want.msg)
		}
	}
}

// TestPlanHostsRefusesDockerHost: a hosts: file names its engines itself.
func TestPlanHostsRefusesDockerHost(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path, _ := threeHosts(t, h)
	res := h.run("", "--docker-host", "unix:///x.sock", "plan", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, "names its engines under hosts:") {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
}

// TestPrefixedSource: the fleet takes its prefix from the desired state,
// so --prefix is applied to every state its source loads, checked as the
// flag always is.
func TestPrefixedSource(t *testing.T) {
	d, err := load.Parse("fleet.yaml", []byte(hostsYAML))
	if err != nil {
		t.Fatal(err)
	}
	got, err := prefixed{source.Static("fleet.yaml", d), "acme"}.Load(context.Background())
	if err != nil || got.Prefix != "acme" {
		t.Errorf("Load with --prefix acme: prefix %q, %v", got.Prefix, err)
	}
	if _, err := (prefixed{source.Static("fleet.yaml", d), "Not Valid"}).Load(context.Background()); err == nil {
		t.Error("an invalid --prefix loaded")
	}
}
