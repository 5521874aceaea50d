package main

// Tests of issue 10's hostile inputs: desired-state paths that are not
// regular files, documents that grow through aliases, container labels
// that carry terminal control sequences, a panic, and no state directory.
// The file cases run the built binary as a subprocess under a time and a
// memory limit, as an operator's shell or systemd would run it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/journal"
)

// Limits of one run of the binary on a hostile file.
const (
	hostileTimeout = 10 * time.Second
	hostileMemKiB  = 3 << 20 // address space (ulimit -v): 3 GiB, of which the Go runtime reserves 1-2 at start
	hostileRSSKiB  = 200 << 10
)

// limitedRun is one run of the binary under hostileTimeout and an address
// space of hostileMemKiB, with env as its whole environment.
type limitedRun struct {
	stdout, stderr string
	code           int
	took           time.Duration
	maxRSSKiB      int64
	timedOut       bool
}

func runLimited(t *testing.T, bin string, env []string, cred *syscall.Credential, args ...string) limitedRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hostileTimeout)
	defer cancel()
	script := fmt.Sprintf(`ulimit -v %d && exec "$0" "$@"`, hostileMemKiB)
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", script, bin}, args...)...)
	cmd.Env = env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := limitedRun{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start), timedOut: ctx.Err() != nil}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		r.code = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %v: %v", args, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSKiB = ru.Maxrss
	}
	return r
}

// buildForAll builds the binary into a directory any user may read, for
// the runs under another user.
func buildForAll(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "rollcall")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// aliasBomb is issue 10's document: 5,000 environment keys behind one
// anchor, aliased by 2,000 workloads.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString("workloads:\n  w0:\n    image: app\n    environment: &env\n")
	for i := range 5000 {
		fmt.Fprintf(&b, "      KEY_%d: value-%d\n", i, i)
	}
	for i := 1; i < 2000; i++ {
		fmt.Fprintf(&b, "  w%d:\n    image: app\n    environment: *env\n", i)
	}
	return b.String()
}

// TestHostileDesiredFilesFailFast: plan and agent, pointed at a FIFO, a
// link to /dev/zero or /dev/urandom, an oversized file or an alias bomb,
// exit 1 within seconds and a few hundred MB, with an error that says
// what is wrong; never a hang, never an out-of-memory crash (whose exit
// code 2 would read as "changes pending").
func TestHostileDesiredFilesFailFast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildForAll(t)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	fifo := at("fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	composeFIFO := at("compose.yaml")
	if err := syscall.Mkfifo(composeFIFO, 0o644); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"zero.yaml": "/dev/zero", "urandom.yaml": "/dev/urandom", "docker-compose.yml": "/dev/zero"} {
		if err := os.Symlink(target, at(name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(at("alias.yaml"), []byte(aliasBomb()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("big.yaml"), []byte("workloads: {}\n"+strings.Repeat("# padding\n", 500_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	// Issue 26, row 14: numbers that drive memory or time, bounded at
	// their line:col (99999999999 replicas ran plan out of memory).
	for name, doc := range map[string]string{
		"replicas.yaml":      "workloads:\n  web:\n    image: app\n    replicas: 99999999999\n",
		"host-replicas.yaml": "workloads:\n  web: {image: app}\nhosts:\n  a: {endpoint: \"ssh://a\", replicas: {web: 10000000}}\n",
		"interval.yaml":      "workloads:\n  web:\n    image: app\n    update: {health_deadline: 876000h}\n",
		"secret.yaml":        "workloads: {web: {image: app}}\nnotify: [\"https://user:PASSW0RD@hooks.example:99999/services/SECRET\"]\n",
	} {
		if err := os.WriteFile(at(name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(at("compose"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("compose/compose.yaml"), []byte("services:\n  web:\n    image: app\n    deploy: {replicas: 99999999999}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "DOCKER_HOST=unix://" + at("no-engine.sock")}

	tests := []struct {
		rule string
		args []string
		want string
	}{
		{"plan -f replicas 99999999999", []string{"plan", "-f", at("replicas.yaml")}, at("replicas.yaml") + ":4:15: web.replicas: 99999999999 is more than 1000"},
		{"agent -f replicas 99999999999", []string{"agent", "-f", at("replicas.yaml")}, ":4:15: web.replicas: 99999999999 is more than 1000"},
		{"plan -f a host's replicas 10000000", []string{"plan", "-f", at("host-replicas.yaml")}, at("host-replicas.yaml") + ":4:44: hosts.a.replicas.web: 10000000 is more than 1000"},
		{"plan --compose deploy.replicas 99999999999", []string{"plan", "--compose", at("compose/compose.yaml")}, ":4:24: services.web.deploy.replicas: 99999999999 is more than 1000"},
		{"plan -f a 100-year deadline", []string{"plan", "-f", at("interval.yaml")}, ":4:31: web.update.health_deadline: 876000h is too long"},
		{"plan -f a broken notify URL with a password", []string{"plan", "-f", at("secret.yaml")}, `:2:10: notify[0]: "https://hooks.example:99999/…" has no valid port`},
		{"plan -f a FIFO", []string{"plan", "-f", fifo}, "is a named pipe (FIFO), not a regular file"},
		{"plan --compose a FIFO", []string{"plan", "--compose", composeFIFO}, "is a named pipe (FIFO)"},
		{"agent -f a FIFO", []string{"agent", "-f", fifo}, "is a named pipe (FIFO)"},
		{"plan -f a link to /dev/zero", []string{"plan", "-f", at("zero.yaml")}, "is a character device, not a regular file"},
		{"plan -f a link to /dev/urandom", []string{"plan", "-f", at("urandom.yaml")}, "is a character device"},
		{"plan -f a compose link to /dev/zero", []string{"plan", "-f", at("docker-compose.yml")}, "is a character device"},
		{"agent -f a link to /dev/zero", []string{"agent", "-f", at("zero.yaml")}, "is a character device"},
		{"plan -f a file over 4 MiB", []string{"plan", "-f", at("big.yaml")}, "larger than the 4 MiB limit"},
		{"plan -f an alias bomb", []string{"plan", "-f", at("alias.yaml")}, "aliases expand the document by more than 100000 nodes"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			r := runLimited(t, bin, env, nil, tt.args...)
			t.Logf("exit %d in %v, peak RSS %d MiB", r.code, r.took.Round(time.Millisecond), r.maxRSSKiB>>10)
			if r.timedOut {
				t.Fatalf("still running after %v; stderr:\n%s", hostileTimeout, r.stderr)
			}
			if r.code != exitFailed {
				t.Errorf("exit %d, want %d; stderr:\n%.2000s", r.code, exitFailed, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.want) {
				t.Errorf("stderr lacks %q:\n%.2000s", tt.want, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, "PASSW0RD") || strings.Contains(r.stdout+r.stderr, "SECRET") {
				t.Errorf("the output shows the webhook's secret:\n%.2000s", r.stdout+r.stderr)
			}
			switch {
			case raceDetector:
				// The child is started by vfork from this test binary, and
				// Linux counts the parent's resident memory at the exec in
				// the child's peak: under the race detector that alone is
				// hundreds of MiB. The address-space limit still holds the
				// child; .ci/run runs this test once without -race for the
				// peak.
			case r.maxRSSKiB > hostileRSSKiB:
				t.Errorf("peak RSS %d MiB, want at most %d MiB", r.maxRSSKiB>>10, hostileRSSKiB>>10)
			}
		})
	}
}

// checkLimitedRun fails t unless r ended within hostileTimeout with code,
// saying want on stderr, in a bounded peak of memory.
func checkLimitedRun(t *testing.T, r limitedRun, code int, want string) {
	t.Helper()
	t.Logf("exit %d in %v, peak RSS %d MiB", r.code, r.took.Round(time.Millisecond), r.maxRSSKiB>>10)
	if r.timedOut {
		t.Fatalf("still running after %v; stderr:\n%s", hostileTimeout, r.stderr)
	}
	if r.code != code {
		t.Errorf("exit %d, want %d; stderr:\n%.2000s", r.code, code, r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%.2000s", want, r.stderr)
	}
	// Under the race detector the child's peak counts the parent's memory
	// (see TestHostileDesiredFilesFailFast); the address-space limit holds.
	if !raceDetector && r.maxRSSKiB > hostileRSSKiB {
		t.Errorf("peak RSS %d MiB, want at most %d MiB", r.maxRSSKiB>>10, hostileRSSKiB>>10)
	}
}

// TestHostilePulledInFilesFailFast (issue 18, row 2): plan and agent on a
// compose file whose env_file, label_file, extends file or include is a
// link to /dev/zero, a 1 GiB sparse file or a FIFO exit 1 within seconds
// and a few hundred MB, naming the file at its reference; never a hang,
// never the out-of-memory crash whose exit 2 reads as "changes pending".
func TestHostilePulledInFilesFailFast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildForAll(t)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(at("fifo"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", at("zero")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("sparse"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(at("sparse"), 1<<30); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin", "DOCKER_HOST=unix://" + at("no-engine.sock")}
	docs := []struct{ attr, doc, at string }{
		{"env_file", "services:\n  web:\n    image: app\n    env_file: %s\n", ":4:15: "},
		{"label_file", "services:\n  web:\n    image: app\n    label_file: %s\n", ":4:17: "},
		{"extends", "services:\n  web:\n    image: app\n    extends: {file: %s, service: base}\n", ":4:21: "},
		{"include", "include: [%s]\nservices:\n  web: {image: app}\n", ":1:11: "},
	}
	for _, d := range docs {
		for target, want := range map[string]string{"zero": " is a character device", "sparse": ": larger than the 4 MiB limit", "fifo": " is a named pipe (FIFO)"} {
			t.Run(d.attr+" "+target, func(t *testing.T) {
				compose := filepath.Join(t.TempDir(), "compose.yaml")
				if err := os.Chmod(filepath.Dir(compose), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(compose, []byte(strings.ReplaceAll(d.doc, "%s", at(target))), 0o644); err != nil {
					t.Fatal(err)
				}
				r := runLimited(t, bin, env, nil, "plan", "-f", compose)
				checkLimitedRun(t, r, exitFailed, compose+d.at)
				if !strings.Contains(r.stderr, at(target)+want) {
					t.Errorf("stderr lacks %q:\n%.2000s", at(target)+want, r.stderr)
				}
				if target == "fifo" {
					r := runLimited(t, bin, env, nil, "--journal", filepath.Join(t.TempDir(), "j.jsonl"), "agent", "-f", compose)
					checkLimitedRun(t, r, exitFailed, at(target)+want)
				}
			})
		}
	}
}

// TestHostileJournalsFailFast (issue 18, row 5): history on a journal that
// is a FIFO or a link to /dev/zero exits 1 at once, naming it; on a 4 GiB
// sparse file it reads the end only, in bounded memory, and says so.
func TestHostileJournalsFailFast(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildForAll(t)
	dir := t.TempDir()
	at := func(name string) string { return filepath.Join(dir, name) }
	if err := syscall.Mkfifo(at("fifo.jsonl"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", at("zero.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(at("sparse.jsonl"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(at("sparse.jsonl"), 4<<30); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
	for _, tt := range []struct {
		journal string
		args    []string
		code    int
		want    string
	}{
		{"fifo.jsonl", []string{"history"}, exitFailed, at("fifo.jsonl") + " is a named pipe (FIFO), not a regular file"},
		{"fifo.jsonl", []string{"history", "--json", "-n", "0"}, exitFailed, "is a named pipe (FIFO)"},
		{"zero.jsonl", []string{"history", "-n", "0"}, exitFailed, at("zero.jsonl") + " is a character device, not a regular file"},
		{"sparse.jsonl", []string{"history", "-n", "0"}, exitOK, at("sparse.jsonl") + ": over 256 MiB: only its last 256 MiB read"},
	} {
		t.Run(strings.Join(append([]string{tt.journal}, tt.args...), " "), func(t *testing.T) {
			r := runLimited(t, bin, env, nil, append([]string{"--journal", at(tt.journal)}, tt.args...)...)
			checkLimitedRun(t, r, tt.code, tt.want)
		})
	}
}

// TestAPanicExitsOne: a panic inside a command is reported as a bug and
// exits 1, never 2 (plan's "changes pending").
func TestAPanicExitsOne(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	path := h.file("rollcall.yaml", "workloads: {}\n")
	var stdout, stderr syncBuffer
	e := h.env(strings.NewReader(""), &stdout, &stderr)
	e.connect = func(context.Context, string) (docker.Client, error) { panic("boom\x1b]0;pwned\x07") }
	code := run(context.Background(), e, []string{"--journal", h.journal, "plan", "-f", path})
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	mustContain(t, "stderr", stderr.String(), "rollcall: internal error: boom", "a bug")
	if strings.ContainsAny(stderr.String(), "\x1b\x07") {
		t.Errorf("the panic's text reached the terminal raw: %q", stderr.String())
	}
}

// TestAPanicOutsideACommandExitsOne: main's own recover (exitOnPanic)
// reports a panic outside run, terminal-safe, and exits 1, never 2.
func TestAPanicOutsideACommandExitsOne(t *testing.T) {
	var stderr bytes.Buffer
	code := -1
	func() {
		defer exitOnPanic(&stderr, func(c int) { code = c })
		panic("boom\x1b]0;pwned\x07")
	}()
	if code != exitFailed {
		t.Errorf("exit %d, want %d", code, exitFailed)
	}
	mustContain(t, "stderr", stderr.String(), "rollcall: internal error: boom", "a bug")
	if strings.ContainsAny(stderr.String(), "\x1b\x07") {
		t.Errorf("the panic's text reached the terminal raw: %q", stderr.String())
	}
	func() {
		defer exitOnPanic(&stderr, func(c int) { t.Errorf("exit %d without a panic", c) })
	}()
}

// evilText carries a window-title OSC, a clear screen, a clipboard write
// (OSC 52), a device-status request, a bare CR, a C1 CSI and invalid
// UTF-8, around the visible word EVIL.
const evilText = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;cHduZWQ=\x07EVIL\x1b[6n\r\u009b31m\xff"

// sgrRE matches the SGR sequences of rollcall's own styling, the only
// escape sequences allowed in styled output.
var sgrRE = regexp.MustCompile(`\x1b\[[0-9;:]*m`)

// assertTerminalSafe fails when out is not valid UTF-8, or holds a
// control character other than a newline (an ESC other than that of SGR
// styling included).
func assertTerminalSafe(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s is not valid UTF-8:\n%q", what, out)
	}
	for i, r := range sgrRE.ReplaceAllString(out, "") {
		if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			t.Errorf("%s holds control character %U at byte %d:\n%q", what, r, i, out)
			return
		}
	}
}

// TestEscapeSequencesInLabelsNeverReachTheTerminal: a managed container
// whose workload and version labels carry control sequences shows in
// plan's and history's human output with the sequences stripped, styled
// or plain, and in --json as valid JSON.
func TestEscapeSequencesInLabelsNeverReachTheTerminal(t *testing.T) {
	const desired = "prefix: rctest\nworkloads:\n  web:\n    image: demo:v2\n    version: \"2\"\n"
	for _, styled := range []bool{false, true} {
		t.Run(fmt.Sprintf("styled=%v", styled), func(t *testing.T) {
			h := newHarness(t, fake.NewManualClock(t0))
			h.terminal["stdout"] = styled
			path := h.file("rollcall.yaml", desired)
			h.fake.AddImage("demo:v1", imageV1, fake.Behaviour{})
			h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
			add := func(id, workload, version, name string) {
				labels := map[string]string{
					docker.ManagedLabel("rctest"): "true", docker.WorkloadLabel("rctest"): workload,
					docker.SlotLabel("rctest"): "0", docker.SpecLabel("rctest"): "0123456789abcdef", docker.VersionLabel("rctest"): version,
				}
				if _, err := h.fake.AddContainer(docker.Container{
					ID: strings.Repeat(id, 32), Name: name, Image: "demo:v1", ImageID: imageV1, Labels: labels,
					State: docker.StateRunning, Created: t0.Add(-time.Hour), StartedAt: t0.Add(-time.Hour),
					Limits: docker.Limits{Restart: "unless-stopped"},
				}); err != nil {
					t.Fatal(err)
				}
			}
			add("a1", "web", "1"+evilText, "rctest-web-0-01234567")
			add("b2", "web"+evilText, "1"+evilText, "rctest-evil-0-01234567")

			res := h.run("", "plan", "-f", path)
			if res.code != exitPending {
				t.Fatalf("plan: exit %d, want %d; stderr:\n%s", res.code, exitPending, res.stderr)
			}
			mustContain(t, "plan", res.stdout, "web", "EVIL")
			assertTerminalSafe(t, "plan", res.stdout)
			assertTerminalSafe(t, "plan's stderr", res.stderr)

			js := h.run("", "plan", "--json", "-f", path)
			var doc map[string]any
			if err := json.Unmarshal([]byte(js.stdout), &doc); err != nil {
				t.Errorf("plan --json is not JSON: %v\n%s", err, js.stdout)
			}

			j, err := journal.Open(h.journal, journal.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, en := range []journal.Entry{
				{Time: t0, User: "mallory" + evilText, Mode: "apply", Action: "stop", Workload: "web" + evilText, Slot: 0,
					Container: "rctest-evil-0" + evilText, Reason: "not desired" + evilText, Result: journal.ResultOK},
				{Time: t0, User: "tester", Mode: "apply", Action: "roll", Workload: "web", Slot: 0,
					Container: "rctest-web-0-01234567", Reason: "version 1" + evilText + " → 2", Result: journal.ResultFailed,
					Error: "engine said" + evilText + "\nsecond line" + strings.Repeat("x", 5000)},
			} {
				if err := j.Append(en); err != nil {
					t.Fatal(err)
				}
			}
			j.Close()
			hist := h.run("", "history")
			if hist.code != exitOK {
				t.Fatalf("history: exit %d; stderr:\n%s", hist.code, hist.stderr)
			}
			mustContain(t, "history", hist.stdout, "mallory", "EVIL", "engine said")
			assertTerminalSafe(t, "history", hist.stdout)
			for _, line := range strings.Split(hist.stdout, "\n") {
				if n := len([]rune(sgrRE.ReplaceAllString(line, ""))); n > maxLineWidth {
					t.Errorf("a history line of %d characters, want at most %d", n, maxLineWidth)
				}
			}
			hj := h.run("", "history", "--json")
			for _, line := range strings.Split(strings.TrimSpace(hj.stdout), "\n") {
				if !json.Valid([]byte(line)) {
					t.Errorf("history --json line is not JSON: %q", line)
				}
			}
		})
	}
}

// TestErrorsAreTerminalSafe: an error that quotes hostile text (a file's
// name, here) reaches stderr without its control sequences.
func TestErrorsAreTerminalSafe(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	res := h.run("", "plan", "-f", filepath.Join(h.dir, "missing"+evilText+".yaml"))
	if res.code != exitFailed {
		t.Fatalf("exit %d, want %d", res.code, exitFailed)
	}
	mustContain(t, "stderr", res.stderr, "no desired-state file", "EVIL")
	assertTerminalSafe(t, "stderr", res.stderr)

	// Go's escapes in a double-quoted string are YAML's too.
	bad := h.file("bad.yaml", "workloads:\n  "+strconv.Quote("web"+evilText)+": {image: x}\n")
	res = h.run("", "plan", "-f", bad)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want %d", res.code, exitFailed)
	}
	mustContain(t, "stderr", res.stderr, "invalid workload name")
	assertTerminalSafe(t, "stderr", res.stderr)
}

// TestNoStateDirectory: with neither XDG_STATE_HOME nor HOME (a system
// unit without User=), root keeps its journal in /var/lib/rollcall, and
// anyone else is refused with an error that says how to set the path;
// never a journal in /tmp. Commands that do not need the journal run.
func TestNoStateDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildForAll(t)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	desired := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(desired, []byte("workloads: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=/usr/bin:/bin", "DOCKER_HOST=unix://" + filepath.Join(dir, "no-engine.sock")}

	// Someone other than root: this test's user, or nobody when it runs as root.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534}
	}
	for _, args := range [][]string{{"history"}, {"apply", "-f", desired, "--yes"}, {"agent", "-f", desired}} {
		r := runLimited(t, bin, env, cred, args...)
		if r.code != exitFailed || !strings.Contains(r.stderr, "no state directory") ||
			!strings.Contains(r.stderr, "XDG_STATE_HOME or HOME, or pass --journal PATH") {
			t.Errorf("%v as a user without HOME: exit %d, stderr:\n%s\nwant exit 1 and the refusal", args, r.code, r.stderr)
		}
	}
	r := runLimited(t, bin, env, cred, "plan", "-f", desired)
	if strings.Contains(r.stderr, "state directory") || !strings.Contains(r.stderr, "engine") {
		t.Errorf("plan as a user without HOME: exit %d, stderr:\n%s\nwant it to reach the engine, which needs no journal", r.code, r.stderr)
	}
	r = runLimited(t, bin, env, cred, "--journal", filepath.Join(dir, "j.jsonl"), "history")
	if r.code != exitOK {
		t.Errorf("history --journal as a user without HOME: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	if os.Geteuid() == 0 {
		r := runLimited(t, bin, env, nil, "history")
		if r.code != exitOK || !strings.Contains(r.stderr+r.stdout, "/var/lib/rollcall/journal.jsonl") && !strings.Contains(r.stdout, "TIME") {
			t.Errorf("history as root without HOME: exit %d, stdout:\n%s\nstderr:\n%s\nwant the journal in /var/lib/rollcall", r.code, r.stdout, r.stderr)
		}
	}
}
