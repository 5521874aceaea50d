// Package dockertest is the one harness of rollcall's tests against the real
// Docker engine (DESIGN §10). A test takes the shared adapter from Engine, a
// label prefix of its own from Prefix (every container and network of it is
// removed in cleanup) and the demoapp image from DemoappImage. A package's
// TestMain runs its tests under Main, which then removes all the run made.
//
// Tests skip only when no engine answers and ROLLCALL_REQUIRE_DOCKER is not
// "1"; with it set (CI sets it), a missing engine fails them. Everything a
// run makes is named after Run, so concurrent runs never see each other;
// image tags are the run's own too (DemoappTag, ImageTag), never the
// demo's. A run killed by a timeout or a panic is swept by the next one,
// by its name and its run label (see run.go); a run alive is never touched.
//
// It needs the go command (demoapp is compiled from this module, statically)
// and the docker command line (for the sweep and image removal, which the
// adapter has no call for). It imports engine/docker and engine/docker/imagebuild
// only, never engine/demo, reconcile or session, so that their internal
// tests can use it.
package dockertest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// RequireEnv is the variable that turns a missing engine from a skip into
// a failure when it is "1".
const RequireEnv = "ROLLCALL_REQUIRE_DOCKER"

// Run names this test process: "rc" and 8 hex digits. Every prefix and
// image tag the process makes starts with it.
var Run = "rc" + randomHex(4)

// setupTimeout bounds connecting to the engine, compiling demoapp and
// building one image.
const setupTimeout = 5 * time.Minute

var (
	engineOnce sync.Once
	engine     *moby.Moby
	engineErr  error
	noEngine   bool // engineErr means no engine answered, not a broken setup

	mu       sync.Mutex
	binDir   string                // the compiled demoapp's folder, removed by Main
	binPath  string                // the compiled demoapp, once it is
	images   = map[string]string{} // version → ID of DemoappImage's builds
	prefixes = map[string]string{} // prefix → the test holding it
)

// Main runs m's tests, then force-removes every container and network left
// with a label or name of this run, its image tags and the images it
// built, and its marker. Use it as
// func TestMain(m *testing.M) { os.Exit(dockertest.Main(m)) }.
func Main(m *testing.M) int {
	code := m.Run()
	if engine != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := endRun(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "dockertest: sweep of the run:", err)
		}
		cancel()
		engine.Close()
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// Skip skips t for want of what err describes (an engine, tmux), or fails
// it when ROLLCALL_REQUIRE_DOCKER is "1".
func Skip(t testing.TB, err error) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%v, and %s=1", err, RequireEnv)
	}
	t.Skipf("%v (set %s=1 to fail instead)", err, RequireEnv)
}

// Engine returns the process's adapter to the engine the environment names
// (DOCKER_HOST, as the docker CLI reads it), or skips t (see Skip) when no
// engine answers. Main closes it; tests must not. Its first call leaves the
// run's marker and sweeps what dead runs left.
func Engine(t testing.TB) *moby.Moby {
	t.Helper()
	engineOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		m, err := moby.New(ctx, "")
		if err != nil {
			engineErr, noEngine = err, true
			return
		}
		if _, err := exec.LookPath("docker"); err != nil {
			m.Close()
			engineErr = fmt.Errorf("the real-engine tests need the docker command line: %w", err)
			return
		}
		if err := beginRun(ctx); err != nil {
			m.Close()
			engineErr = err
			return
		}
		engine = m
	})
	if noEngine {
		Skip(t, fmt.Errorf("no docker engine: %w", engineErr))
	}
	if engineErr != nil {
		t.Fatal(engineErr)
	}
	return engine
}

var notAlnum = regexp.MustCompile(`[^a-z0-9]+`)

// maxPrefix is how long a prefix Prefix makes: rollcall.yaml takes up to
// 40 characters, which leaves a test room for prefixes of its own made from
// this one (prefix+"-web").
const maxPrefix = 32

// Prefix returns a label prefix of t's own, made of Run and t's name
// ("rc1a2b3c4d-realcrashsurplusext"; a long name is cut and ends in a hash
// of the whole), and in t's cleanup force-removes every container of it
// (see Sweep), then every network of it. It skips t when there is no
// engine.
func Prefix(t testing.TB) string {
	t.Helper()
	Engine(t)
	p := prefixFor(t.Name())
	mu.Lock()
	other, taken := prefixes[p]
	prefixes[p] = t.Name()
	mu.Unlock()
	if taken {
		t.Fatalf("prefix %s is %s's too: rename one of the tests", p, other)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := Sweep(ctx, p); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := sweepNetworks(ctx, func(name, labels string) bool { return ofPrefix(p, name, labels) }); err != nil {
			t.Errorf("cleanup: networks of %s: %v", p, err)
		}
		// A volume's name is <prefix>_<key> (or the slot's own,
		// <prefix>_<workload>_<slot>_<target>).
		if err := sweepVolumes(ctx, func(name, labels string) bool {
			return strings.HasPrefix(name, p+"_") || ofPrefix(p, "", labels)
		}); err != nil {
			t.Errorf("cleanup: volumes of %s: %v", p, err)
		}
		mu.Lock()
		delete(prefixes, p) // free again for -count > 1
		mu.Unlock()
	})
	return p
}

// prefixFor is the prefix of the test called name.
func prefixFor(name string) string {
	short := strings.Trim(notAlnum.ReplaceAllString(strings.ToLower(strings.TrimPrefix(name, "Test")), "-"), "-")
	if room := maxPrefix - len(Run) - 1; len(short) > room {
		h := fnv.New32a()
		h.Write([]byte(name))
		short = strings.TrimRight(short[:room-5], "-") + "-" + fmt.Sprintf("%08x", h.Sum32())[:4]
	}
	return Run + "-" + short
}

// Sweep force-removes every container of prefix: one with a label whose key
// starts with prefix and then "." or "-" (managed or not, or of a prefix
// made from this one), or a name that starts with prefix and "-".
func Sweep(ctx context.Context, prefix string) error {
	if err := sweepContainers(ctx, func(names, labels string) bool { return ofPrefix(prefix, names, labels) }); err != nil {
		return fmt.Errorf("sweep %s: %w", prefix, err)
	}
	return nil
}

// ofPrefix reports whether a container or network of names and labels (as
// docker ps or docker network ls print them) belongs to prefix.
func ofPrefix(prefix, names, labels string) bool {
	for _, n := range strings.Split(names, ",") {
		if strings.HasPrefix(strings.TrimPrefix(n, "/"), prefix+"-") {
			return true
		}
	}
	for _, kv := range strings.Split(labels, ",") {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, prefix+".") || strings.HasPrefix(k, prefix+"-") {
			return true
		}
	}
	return false
}

// CLI runs the docker command line, for what rollcall never does itself
// (kill, update or start a container by hand), and returns its stdout.
func CLI(ctx context.Context, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// DemoappTag is the tag DemoappImage gives the image of version: one of the
// run's own (ImageTag), never the demo's rollcall-demoapp:v1 or :v2.
func DemoappTag(version string) string { return ImageTag("demoapp", version) }

// DemoappImage builds the demoapp image of version (its default command
// answers "<version> <hostname>"), once per process, and returns its tag
// (DemoappTag) and ID. It skips t when there is no engine; Main removes it.
func DemoappImage(t testing.TB, version string) (tag, id string) {
	t.Helper()
	m := Engine(t)
	tag = DemoappTag(version)
	mu.Lock()
	defer mu.Unlock()
	if id, ok := images[version]; ok {
		return tag, id
	}
	id = buildLocked(t, m, tag, version)
	images[version] = id
	return tag, id
}

// BuildDemoapp builds the demoapp image of version under tag, anew on every
// call (so a test can move a tag), and returns its ID. tag is one of the
// run's (ImageTag, or a repository and the test's prefix as the tag). It
// skips t when there is no engine; Main removes tag and the image once the
// run is over.
func BuildDemoapp(t testing.TB, tag, version string) string {
	t.Helper()
	m := Engine(t)
	mu.Lock()
	defer mu.Unlock()
	return buildLocked(t, m, tag, version)
}

func buildLocked(t testing.TB, m *moby.Moby, tag, version string) string {
	t.Helper()
	bin, err := demoappBinaryLocked()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	id, err := imagebuild.BuildImage(ctx, runBuilder{m}, bin, tag, version)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// DemoappImageWithVolume builds the demoapp image of version under tag,
// declaring VOLUME at target, as database images do; Main removes it.
func DemoappImageWithVolume(t testing.TB, tag, version, target string) string {
	t.Helper()
	return buildVariant(t, tag, version, func(files map[string][]byte) {
		files["Dockerfile"] = fmt.Appendf(files["Dockerfile"], "VOLUME %s\n", target)
	})
}

// buildVariant builds the demoapp image of version under tag, its build
// context changed by edit first, and returns its ID; Main removes tag once
// the run is over.
func buildVariant(t testing.TB, tag, version string, edit func(files map[string][]byte)) string {
	t.Helper()
	m := Engine(t)
	mu.Lock()
	defer mu.Unlock()
	bin, err := demoappBinaryLocked()
	if err != nil {
		t.Fatal(err)
	}
	files, err := imagebuild.ImageFiles(bin, version)
	if err != nil {
		t.Fatal(err)
	}
	edit(files)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	id, err := runBuilder{m}.BuildImage(ctx, tag, files)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// DemoappBinary compiles cmd/demoapp statically (CGO_ENABLED=0) for Linux,
// once per process, and returns its path; Main removes it.
func DemoappBinary(t testing.TB) string {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	bin, err := demoappBinaryLocked()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func demoappBinaryLocked() (string, error) {
	if binPath != "" {
		return binPath, nil
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "rollcall-demoapp-")
		if err != nil {
			return "", fmt.Errorf("compile demoapp: %w", err)
		}
		binDir = dir
	}
	out := filepath.Join(binDir, "demoapp")
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", out, "github.com/rollcall/rollcall/cmd/demoapp")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("compile demoapp: %w: %s", err, bytes.TrimSpace(msg))
	}
	binPath = out
	return out, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
