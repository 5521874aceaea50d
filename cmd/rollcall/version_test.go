package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestVersion: version, commit and Go version always; the engine's when one
// answers, and why not otherwise, without failing.
func TestVersion(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "version")
	if res.code != exitOK {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	mustContain(t, "version", res.stdout, "rollcall ", "commit:", runtime.Version(), "engine:  fake (API 1.41) at fake:// (simulated)")

	h.unreachable = true
	res = h.run("", "version")
	if res.code != exitOK {
		t.Fatalf("exit %d with no engine: %s", res.code, res.stderr)
	}
	mustContain(t, "version", res.stdout, "engine:  not reachable: connect to docker engine")
}

// TestCommandLine: --help lists the commands; the root opens the console,
// so with no desired file it says so in one line naming `rollcall demo`; bad
// flags and arguments are one error line pointing at the command's help,
// exit 1.
func TestCommandLine(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "--help")
	if res.code != exitOK || !strings.Contains(res.stdout, "Available Commands:") || !strings.Contains(res.stdout, "demo") {
		t.Errorf("root --help: exit %d\n%s", res.code, res.stdout)
	}
	t.Chdir(t.TempDir())
	res = h.run("")
	if res.code != exitFailed || !strings.Contains(res.stderr, "rollcall demo") || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
		t.Errorf("root with no file: exit %d, stderr %q", res.code, res.stderr)
	}
	for _, args := range [][]string{
		{"plan", "--bogus"},
		{"apply", "--timeout", "soon"},
		{"--theme", "neon", "plan"},
	} {
		res := h.run("", args...)
		if res.code != exitFailed || !strings.HasPrefix(res.stderr, "rollcall: ") || !strings.Contains(res.stderr, "--help' for usage") {
			t.Errorf("%v: exit %d, stderr %q", args, res.code, res.stderr)
		}
	}
	if res := h.run("", "plan", "extra"); res.code != exitFailed || !strings.Contains(res.stderr, `unknown command "extra"`) {
		t.Errorf("plan extra: exit %d, stderr %q", res.code, res.stderr)
	}
}
