package main

// Images from a registry (issue 27) on the real engine, driven through the
// built binary: a registry in the test process on loopback
// (dockertest.StartRegistry), an image pushed to it and removed from the
// engine, and `apply` pulling it through the engine with the docker CLI's
// credentials (a temp DOCKER_CONFIG). No test runs more than 2 containers.

import (
	"encoding/base64"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
)

// pushed builds a demoapp image of version with a layer of its own, pushes
// it to reg as repo:version and removes it from the engine: the engine
// then lacks it. It returns the reference to pull it by.
func pushed(t *testing.T, reg *dockertest.Registry, repo, version string) string {
	t.Helper()
	local := dockertest.ImageTag("pushed", version)
	dockertest.BuildForRegistry(t, local, version, 1<<20)
	ref := reg.Push(t, local, repo+":"+version)
	dockertest.RemoveLocal(t, local)
	dockertest.RemoveLocal(t, ref)
	return ref
}

// registryWorkload is a workload of image ref (a demoapp of version).
func registryWorkload(ref, version string, replicas int) string {
	return "  web:\n    image: " + ref + "\n    replicas: " + strconv.Itoa(replicas) +
		"\n    command: [\"-listen\", \":8080\", \"-version\", \"" + version + "\"]\n" +
		"    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s, timeout: 1s, retries: 3}\n" +
		"    stop_grace_period: 2s\n"
}

// A cold apply of an image that is only in the registry pulls it through
// the engine, then starts it: the plan shows the pull, the journal has it.
func TestRealApplyPullsFromARegistry(t *testing.T) {
	r := newRealRig(t)
	reg := dockertest.StartRegistry(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, t.TempDir()))
	ref := pushed(t, reg, dockertest.Repo("cold"), "v1")
	path := r.write("rollcall.yaml", registryWorkload(ref, "v1", 2))

	res := r.run("plan", "-f", path)
	if res.code != exitPending || !strings.Contains(res.stdout, "pull    -   "+ref) || strings.Contains(res.stdout, "nothing to do") {
		t.Fatalf("plan: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	applied := r.mustApply(path)
	if !strings.Contains(applied.stderr, "pull    web/-") || !strings.Contains(applied.stderr, "pulling ") {
		t.Errorf("apply did not show its pull and its progress:\n%s", applied.stderr)
	}
	if ids := r.healthy("web"); len(ids) != 2 {
		t.Fatalf("after apply: %s", describe(r.prefix, r.list()))
	}
	for _, c := range r.list() {
		if c.Image != ref {
			t.Fatalf("container %s runs %s, want %s", c.Name, c.Image, ref)
		}
	}
	j, err := os.ReadFile(r.journal)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(j), `"action":"pull"`); n != 2 {
		t.Errorf("journal: %d pull lines, want 2 (started, ok):\n%s", n, j)
	}
}

// Behind basic auth: with the credentials in the docker config, apply
// pulls and converges; without them, or with a wrong password, a roll to a
// new tag holds (the pull fails as unauthorized, retried) with every old
// container serving, and no password is ever printed: not on stdout,
// stderr or in the journal, neither as is nor encoded.
func TestRealPullNeedsTheCredentials(t *testing.T) {
	r := newRealRig(t)
	const user, password = "ci", "rollcall-s3cret-pa55word"
	reg := dockertest.StartRegistry(t, dockertest.WithBasicAuth(user, password))
	v1 := pushed(t, reg, dockertest.Repo("auth"), "v1")
	v2 := pushed(t, reg, dockertest.Repo("auth"), "v2")
	const wrong = "wr0ng-" + password

	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, t.TempDir()))
	outputs := map[string]string{"apply with credentials": r.mustApply(r.write("v1.yaml", registryWorkload(v1, "v1", 2))).stderr}
	before := r.healthy("web")
	if len(before) != 2 {
		t.Fatalf("v1 with credentials: %s", describe(r.prefix, r.list()))
	}

	v2File := r.write("v2.yaml", registryWorkload(v2, "v2", 2))
	for name, config := range map[string]string{"none": t.TempDir(), "a wrong password": dockertest.DockerConfigWith(t, t.TempDir(), reg.Host, user, wrong)} {
		t.Setenv("DOCKER_CONFIG", config)
		res := r.run("apply", "--yes", "--timeout", "10s", "-f", v2File)
		if res.code == exitOK {
			t.Fatalf("apply with credentials %s converged:\n%s", name, res.stderr)
		}
		if !strings.Contains(res.stderr, "unauthorized") {
			t.Errorf("apply with credentials %s does not say unauthorized:\n%s", name, res.stderr)
		}
		if after := r.healthy("web"); !slices.Equal(after, before) {
			t.Fatalf("credentials %s: a container was touched for an image that is not there: before %v, after %v: %s",
				name, before, after, describe(r.prefix, r.list()))
		}
		outputs["stdout with credentials "+name], outputs["stderr with credentials "+name] = res.stdout, res.stderr
	}
	j, err := os.ReadFile(r.journal)
	if err != nil {
		t.Fatal(err)
	}
	outputs["journal"] = string(j)
	if !strings.Contains(string(j), `"action":"pull"`) {
		t.Errorf("the journal has no pull:\n%s", j)
	}
	for where, text := range outputs {
		for _, p := range []string{password, wrong} {
			if leaked(text, p) {
				t.Errorf("the password %q is in %s, as is or encoded:\n%s", p, where, text)
			}
		}
	}
}

var base64ish = regexp.MustCompile(`[A-Za-z0-9+/_-]{12,}={0,2}`)

// leaked reports whether text holds secret as is, or inside anything
// base64 (standard or URL, padded or not: basic auth, the engine's
// X-Registry-Auth header) that decodes to text holding it.
func leaked(text, secret string) bool {
	if strings.Contains(text, secret) {
		return true
	}
	for _, tok := range base64ish.FindAllString(text, -1) {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			if b, err := enc.DecodeString(tok); err == nil && strings.Contains(string(b), secret) {
				return true
			}
		}
	}
	return false
}

func TestLeakedFindsEncodedSecrets(t *testing.T) {
	const secret = "s3cret-pa55"
	header := base64.URLEncoding.EncodeToString([]byte(`{"username":"ci","password":"` + secret + `","serveraddress":"127.0.0.1:5000"}`))
	for _, text := range []string{"x " + secret + " y", "auth " + header + ".", base64.StdEncoding.EncodeToString([]byte("ci:" + secret))} {
		if !leaked(text, secret) {
			t.Errorf("leaked(%q) is false", text)
		}
	}
	if leaked("pull 127.0.0.1:5000/team/app:v2: unauthorized: authentication required", secret) {
		t.Error("leaked found a secret in a plain error")
	}
}

// pull: always follows a tag moved in the registry: the next apply pulls
// it and rolls; pull: missing keeps the engine's image of the tag; once
// pulled, the tag is converged (the registry's digest is the image's).
func TestRealPullAlwaysFollowsAMovedTag(t *testing.T) {
	r := newRealRig(t)
	reg := dockertest.StartRegistry(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, t.TempDir()))
	repo := dockertest.Repo("moved")
	push := func(version string) (ref, id string) {
		local := dockertest.ImageTag("moved", version)
		id = dockertest.BuildForRegistry(t, local, version, 1<<20)
		ref = reg.Push(t, local, repo+":live")
		dockertest.RemoveLocal(t, local)
		return ref, id
	}
	ref, id1 := push("v1")
	dockertest.RemoveLocal(t, ref)
	always := r.write("always.yaml", registryWorkload(ref, "live", 1)+"    pull: always\n")
	missing := r.write("missing.yaml", registryWorkload(ref, "live", 1)+"    pull: missing\n")
	imageOf := func() string {
		cs := r.list()
		if len(cs) != 1 {
			t.Fatalf("containers: %s", describe(r.prefix, cs))
		}
		return cs[0].ImageID
	}
	r.mustApply(always)
	if got := imageOf(); got != id1 {
		t.Fatalf("after the first apply: image %s, want %s", got, id1)
	}
	if res := r.run("plan", "-f", always); res.code != exitOK {
		t.Fatalf("plan of always, the tag where it was: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}

	_, id2 := push("v2") // the tag moves in the registry
	if res := r.run("plan", "-f", missing); res.code != exitOK {
		t.Fatalf("plan of missing after the tag moved: exit %d, want converged (the engine's tag)\n%s%s", res.code, res.stdout, res.stderr)
	}
	res := r.run("plan", "-f", always)
	if res.code != exitPending || !strings.Contains(res.stdout, "pull: the registry moved "+ref) {
		t.Fatalf("plan of always after the tag moved: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	r.mustApply(always)
	if got := imageOf(); got != id2 {
		t.Fatalf("after the tag moved: image %s, want %s", got, id2)
	}
	if res := r.run("plan", "-f", always); res.code != exitOK {
		t.Fatalf("plan of always once pulled: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// The registry goes away mid-pull: the pull fails (or apply's timeout cuts
// it), and every old container serves on, untouched.
func TestRealRegistryGoneMidPull(t *testing.T) {
	r := newRealRig(t)
	reg := dockertest.StartRegistry(t)
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, t.TempDir()))
	v2 := pushed(t, reg, dockertest.Repo("gone"), "v2")
	v1, _ := dockertest.DemoappImage(t, "v1") // on the engine: no pull
	r.mustApply(r.write("v1.yaml", registryWorkload(v1, "v1", 2)))
	before := r.healthy("web")
	if len(before) != 2 {
		t.Fatalf("v1: %s", describe(r.prefix, r.list()))
	}

	reg.StallBlobs()
	p := r.start(r.journal, "apply", "--yes", "--timeout", "20s", "-f", r.write("v2.yaml", registryWorkload(v2, "v2", 2)))
	select {
	case <-reg.Stalled():
	case <-p.done:
		t.Fatalf("apply ended before its pull downloaded anything: exit %d\n%s", p.code, p.stderr.String())
	}
	if after := r.healthy("web"); !slices.Equal(after, before) {
		t.Fatalf("mid-pull, a container was touched: before %v, after %v", before, after)
	}
	reg.StopPulls()
	if code := p.wait(t, time.Minute); code == exitOK {
		t.Fatalf("apply converged without its image:\n%s", p.stderr.String())
	}
	if after := r.healthy("web"); !slices.Equal(after, before) {
		t.Fatalf("the registry went away mid-pull, and a container was touched: before %v, after %v: %s",
			before, after, describe(r.prefix, r.list()))
	}
	if _, err := r.m.ImageInspect(r.ctx, v2); err == nil {
		t.Error("the image is on the engine after a pull that never finished")
	}
}
