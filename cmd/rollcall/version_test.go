package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/demo"
	"github.com/rollcall/rollcall/engine/journal"
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

// TestVersionOf: the commit comes from -ldflags when set, else from the
// VCS revision, time and modified flag Go stamps into a build in a git
// clone, else from a pseudo-version's revision; with none of them it says
// why it is unknown.
func TestVersionOf(t *testing.T) {
	vcs := &debug.BuildInfo{Main: debug.Module{Path: "github.com/rollcall/rollcall", Version: "v0.0.0-20260301120000-0123456789ab+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "-trimpath", Value: "true"},
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-03-01T12:00:00Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	clean := &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba9876543210"}, {Key: "vcs.modified", Value: "false"}}}
	for _, tc := range []struct {
		name                 string
		ldVersion, ldCommit  string
		info                 *debug.BuildInfo
		wantVersion, wantRev string
	}{
		{"a git clone", "", "", vcs, "v0.0.0-20260301120000-0123456789ab+dirty",
			"0123456789abcdef0123456789abcdef01234567 2026-03-01T12:00:00Z (modified)"},
		{"clean, no time", "", "", clean, "v1.2.3", "fedcba9876543210"},
		{"ldflags win", "v9.9.9", "abc123", vcs, "v9.9.9", "abc123"},
		{"ldflags version only", "v9.9.9", "", clean, "v9.9.9", "fedcba9876543210"},
		{"go install of a commit", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260301120000-0123456789ab"}},
			"v0.0.0-20260301120000-0123456789ab", "0123456789ab 2026-03-01T12:00:00Z"},
		{"pseudo-version after a tag", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.4-0.20260301120000-0123456789ab+dirty"}},
			"v1.2.4-0.20260301120000-0123456789ab+dirty", "0123456789ab 2026-03-01T12:00:00Z (modified)"},
		{"-buildvcs=false", "", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "(devel)", noVCS},
		{"a tag", "", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3", noVCS},
		{"no build info", "", "", nil, "unknown", noVCS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, rev := versionOf(tc.ldVersion, tc.ldCommit, tc.info)
			if v != tc.wantVersion || rev != tc.wantRev {
				t.Errorf("versionOf = %q, %q; want %q, %q", v, rev, tc.wantVersion, tc.wantRev)
			}
		})
	}
}

// TestHelpNits: --journal's help names one default; demo's help names the
// prefix the demo would run under, --prefix's when given; a mistyped
// command gets a suggestion, and any word the root does not know is an
// unknown command.
func TestHelpNits(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "--help")
	var journalLine string
	for _, l := range strings.Split(res.stdout, "\n") {
		if strings.Contains(l, "--journal") {
			journalLine = l
		}
	}
	want := 1
	if p, err := journal.DefaultPath(); err != nil || p == "" {
		want = 0
	}
	if n := strings.Count(journalLine, "default"); journalLine == "" || n != want {
		t.Errorf("--journal's help names %d defaults, want %d: %q", n, want, journalLine)
	}

	res = h.run("", "--prefix", "acme", "demo", "--help")
	if res.code != exitOK || strings.Contains(res.stdout, demo.Prefix) {
		t.Errorf("demo --help under --prefix acme names %s (exit %d):\n%s", demo.Prefix, res.code, res.stdout)
	}
	mustContain(t, "demo --help --prefix acme", res.stdout, "under the prefix acme", "acme.managed=true")
	res = h.run("", "demo", "--help")
	mustContain(t, "demo --help", res.stdout, "under the prefix "+demo.Prefix, demo.Prefix+".managed=true")
	if res = h.run("", "help", "--prefix", "acme", "demo"); !strings.Contains(res.stdout, "under the prefix acme") {
		t.Errorf("help --prefix acme demo:\n%s", res.stdout)
	}

	for _, tc := range []struct{ args, want []string }{
		{[]string{"aply"}, []string{`unknown command "aply"`, "Did you mean this? apply", "rollcall --help"}},
		{[]string{"--watch", "histroy"}, []string{`unknown command "histroy"`, "Did you mean this? history"}},
		{[]string{"xyzzy"}, []string{`unknown command "xyzzy"`}},
	} {
		res := h.run("", tc.args...)
		if res.code != exitFailed {
			t.Errorf("%v: exit %d, want %d", tc.args, res.code, exitFailed)
		}
		mustContain(t, fmt.Sprint(tc.args), res.stderr, tc.want...)
	}
	if res := h.run("", "xyzzy"); strings.Contains(res.stderr, "Did you mean") {
		t.Errorf("xyzzy gets a suggestion: %q", res.stderr)
	}
}
