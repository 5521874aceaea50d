package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/demo"
)

// TestDemoHostsHeadless: demo --hosts 3 --headless stages the demo on three
// simulated engines and rolls it out across them, edge-1 first, each host
// from its own desired state (edge-3 runs one web replica fewer, so it
// stops one more), and exits 0 with every host converged.
func TestDemoHostsHeadless(t *testing.T) {
	soak := demoSoak
	demoSoak = 500 * time.Millisecond
	t.Cleanup(func() { demoSoak = soak })
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "rctest-demo-" + hex.EncodeToString(id[:])
	t.Cleanup(func() { _ = os.RemoveAll(demo.Dir(prefix)) })
	h := newHarness(t, nil)
	simRuns := t.TempDir()
	base := simRunBase
	simRunBase = simRuns
	t.Cleanup(func() { simRunBase = base })
	res := h.run("", "--prefix", prefix, "demo", "--hosts", "3", "--headless")
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	// A simulated run leaves nothing: its journal, state and locks went
	// with its folder, and none of it reached the real journal's.
	if left, _ := os.ReadDir(simRuns); len(left) != 0 {
		t.Errorf("the simulated run left %v in its base folder", left)
	}
	if _, err := os.Stat(h.journal); !os.IsNotExist(err) {
		t.Errorf("the simulated steps reached the real journal %s (%v): %d entries", h.journal, err, len(h.journalEntries()))
	}
	for _, dir := range []string{filepath.Dir(h.journal), demo.LockDir(prefix)} {
		if m, _ := filepath.Glob(filepath.Join(dir, "*"+prefix+"*")); len(m) != 0 {
			t.Errorf("the simulated run left %v", m)
		}
	}
	lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
	if final := lines[len(lines)-1]; !strings.HasPrefix(final, "✓ converged: 3 hosts, rollout ") {
		t.Errorf("final line %q", final)
	}
	mustContain(t, "demo", res.stderr, "(rolled out once, headless: edits are not followed)", "running the demo on 3 simulated engines", "fleet   wave 1 started: edge-1",
		"fleet   wave 2 started: edge-2", "fleet   wave 3 started: edge-3")
	first := map[string]int{}
	last := map[string]int{}
	for i, l := range lines {
		host, _, _ := strings.Cut(l, " ")
		if strings.HasPrefix(l, host+"  ▸") || strings.HasPrefix(l, host+"  ✓") {
			if _, ok := first[host]; !ok {
				first[host] = i
			}
			last[host] = i
		}
	}
	if !(last["edge-1"] < first["edge-2"] && last["edge-2"] < first["edge-3"]) {
		t.Errorf("the hosts' steps overlap (first %v, last %v):\n%s", first, last, res.stderr)
	}

	d, err := load.Load(filepath.Join(demo.Dir(prefix), "fleet.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.stderr, "console") {
		t.Errorf("--headless speaks of a console:\n%s", res.stderr)
	}
	if len(d.Hosts) != 3 || d.Hosts[2].Replicas["web"] != 2 || d.Fleet.Canary[0] != "edge-1" {
		t.Errorf("the demo's fleet file: hosts %v, fleet %+v", d.HostNames(), d.Fleet)
	}
	stops := map[string]int{}
	for _, l := range lines {
		if host, rest, _ := strings.Cut(l, " "); strings.HasPrefix(strings.TrimLeft(rest, " "), "✓ stop ") {
			stops[host]++
		}
	}
	if stops["edge-3"] != stops["edge-1"]+1 || stops["edge-1"] == 0 {
		t.Errorf("stops by host %v: edge-3 (web: 2) should stop one more than edge-1", stops)
	}
}

// TestDemoHostsFlags: --hosts takes 2 to 9 hosts, and goes without
// --clean; --headless goes with --hosts.
func TestDemoHostsFlags(t *testing.T) {
	h := newHarness(t, nil)
	for _, args := range [][]string{{"--hosts", "1"}, {"--hosts", "0"}, {"--hosts", "10"}, {"--headless"}, {"--clean", "--hosts", "12"}} {
		res := h.run("", append([]string{"demo"}, args...)...)
		if res.code != exitFailed || !strings.Contains(res.stderr, "rollcall demo --help") {
			t.Errorf("demo %v: exit %d\n%s", args, res.code, res.stderr)
		}
	}
}

// TestDemoHostsConsole: the built binary's demo --hosts 3 opens the console
// of several hosts in a real terminal (tmux) on three simulated engines;
// A approves the whole fleet rollout, and every host ends done. No Docker
// engine is needed.
func TestDemoHostsConsole(t *testing.T) {
	tmux := needTmux(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	run := hex.EncodeToString(id[:])
	prefix := "rctest-demo-" + run
	t.Cleanup(func() { _ = os.RemoveAll(demo.Dir(prefix)) })
	x := newTmuxTerm(t, tmux, "rc-demo-hosts-"+run)
	x.open("demo", dir, bin, "--journal", filepath.Join(dir, "journal.jsonl"), "--prefix", prefix, "demo", "--hosts", "3")
	x.waitScreen("demo", "the three hosts", func(s string) bool {
		return strings.Contains(s, "edge-1") && strings.Contains(s, "edge-2") && strings.Contains(s, "edge-3")
	})
	x.keys("demo", true, "A")
	// a host's row: "✔ done     edge-1  5/5 healthy ..."
	doneRow := regexp.MustCompile(`\bdone +(edge-\d) `)
	x.waitScreen("demo", "every host done", func(s string) bool {
		done := map[string]bool{}
		for _, m := range doneRow.FindAllStringSubmatch(s, -1) {
			done[m[1]] = true
		}
		return len(done) == 3
	})
	x.quit("demo")
}

// TestDemoCleanWithHosts: demo --clean --hosts 3 is no usage error: it
// removes what the several-host demo wrote (fleet.yaml, hosts/*), what the
// one-host demo wrote, and the state and unheld lock files earlier runs
// left for the prefix, and says each; a file of the operator's beside them
// stays.
func TestDemoCleanWithHosts(t *testing.T) {
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	prefix := "rctest-demo-" + hex.EncodeToString(id[:])
	dir := demo.Dir(prefix)
	t.Cleanup(func() {
		_ = os.RemoveAll(dir)
		locks, _ := filepath.Glob(filepath.Join(demo.LockDir(prefix), "rollcall-"+prefix+"-*.lock"))
		for _, l := range locks {
			_ = os.Remove(l)
		}
	})
	h := newHarness(t, nil)
	write := func(path string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gone := []string{
		write(filepath.Join(dir, "fleet.yaml")), write(filepath.Join(dir, "rollcall.yaml")),
		write(filepath.Join(dir, "hosts", "edge-1", "rollcall.yaml")), write(filepath.Join(dir, "hosts", "edge-3", "rollcall.yaml")),
		write(filepath.Join(filepath.Dir(h.journal), "revisions-"+prefix+"-00112233aabb.json")),
		write(filepath.Join(demo.LockDir(prefix), "rollcall-"+prefix+"-00112233aabb.lock")),
	}
	mine := write(filepath.Join(dir, "mine.txt"))
	res := h.run("", "--prefix", prefix, "demo", "--clean", "--hosts", "3")
	if res.code != exitOK {
		t.Fatalf("exit %d\n%s", res.code, res.stderr)
	}
	for _, p := range gone {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s: still there (%v)", p, err)
		}
		mustContain(t, "demo --clean", res.stderr, "removed "+p+"\n")
	}
	if _, err := os.Stat(mine); err != nil {
		t.Errorf("the operator's file went: %v", err)
	}
	mustContain(t, "demo --clean", res.stderr, "removed 0 demo container(s) of prefix "+prefix+", 0 image(s), ")
}
