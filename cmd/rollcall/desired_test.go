package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/fake"
)

// composeYAML is a compose file of one service of the fake engine's image,
// healthy at once; its port publishes on every interface in compose, so
// rollcall warns.
const composeYAML = `name: demo
x-rollcall: {prefix: rctest}
services:
  web:
    image: demo:v2
    ports: ["8080"]
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
    deploy: {replicas: 2}
    stdin_open: true
    volumes: [data:/data]
volumes: {data: {}}
`

// desiredJSON is the same desired state as rollcall.yaml, written as JSON,
// as a control plane may serve it.
const desiredJSON = `{"prefix": "rctest", "workloads": {"web": {"image": "demo:v2", "replicas": 2,
  "healthcheck": {"test": ["CMD", "/demoapp", "-health"], "interval": "1s"}}}}`

func planDocOf(t *testing.T, stdout string) planDoc {
	t.Helper()
	var doc planDoc
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("stdout is not the plan document: %v\n%s", err, stdout)
	}
	return doc
}

// TestPlanReadsComposeFiles: a compose file is the desired state when -f
// names one (known by its name), when --compose names one (any name), or
// when the directory has no rollcall.yaml; its warnings go to stderr with
// their file:line:col.
func TestPlanReadsComposeFiles(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	compose := h.file("compose.yaml", composeYAML)
	stack := h.file("stack.yml", composeYAML)

	for _, args := range [][]string{{"-f", compose}, {"--compose", stack}} {
		res := h.run("", append([]string{"plan"}, args...)...)
		if res.code != exitPending {
			t.Fatalf("plan %v: exit %d, want 2\n%s", args, res.code, res.stderr)
		}
		mustContain(t, "plan", res.stdout, "web", "2 start")
		mustContain(t, "warnings", res.stderr, ":6:13: warning: services.web.ports[0]: no host_ip", ":9:5: warning: services.web.stdin_open: ignored")

		doc := planDocOf(t, h.run("", append([]string{"plan", "--json"}, args...)...).stdout)
		if doc.Prefix != "rctest" || doc.Source != args[1] || len(doc.Warnings) != 2 {
			t.Errorf("plan %v: prefix %q source %q warnings %q", args, doc.Prefix, doc.Source, doc.Warnings)
		}
	}

	// The same file under -f and a name compose does not use is read as
	// rollcall.yaml, which has no services key.
	res := h.run("", "plan", "-f", stack)
	if res.code != exitFailed || !strings.Contains(res.stderr, `rollcall calls this "workloads"`) {
		t.Errorf("plan -f stack.yml: exit %d\n%s", res.code, res.stderr)
	}

	if res := h.run("", "plan", "-f", compose, "--compose", stack); res.code != exitFailed || !strings.Contains(res.stderr, "-f and --compose both") {
		t.Errorf("-f with --compose: exit %d\n%s", res.code, res.stderr)
	}
}

// TestApplyConvergesAComposeFile: apply takes a compose file all the way.
func TestApplyConvergesAComposeFile(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	compose := h.file("compose.yaml", composeYAML)
	if res := h.run("", "apply", "--yes", "-f", compose); res.code != exitOK {
		t.Fatalf("apply: exit %d\n%s", res.code, res.stderr)
	}
	if res := h.run("", "plan", "-f", compose); res.code != exitOK {
		t.Errorf("plan after apply: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

// TestDefaultDesiredFile: with neither -f nor --compose, ./rollcall.yaml is
// read, else the first compose file of the directory; with none of them,
// the error names them all and hints at rollcall demo.
func TestDefaultDesiredFile(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	t.Chdir(h.dir)

	res := h.run("", "plan")
	if res.code != exitFailed {
		t.Fatalf("plan in an empty directory: exit %d", res.code)
	}
	mustContain(t, "stderr", res.stderr, "no desired-state file here", "rollcall.yaml", "docker-compose.yml", `"rollcall demo"`)

	h.file("docker-compose.yml", composeYAML)
	h.file("compose.yaml", strings.Replace(composeYAML, "replicas: 2", "replicas: 3", 1))
	if doc := planDocOf(t, h.run("", "plan", "--json").stdout); doc.Source != "compose.yaml" {
		t.Errorf("source %q, want compose.yaml (compose's first choice)", doc.Source)
	}

	h.file("rollcall.yaml", "prefix: rctest\nworkloads: {}\n")
	if doc := planDocOf(t, h.run("", "plan", "--json").stdout); doc.Source != "rollcall.yaml" {
		t.Errorf("source %q, want rollcall.yaml (before any compose file)", doc.Source)
	}
}

// TestPlanReadsAURL: -f http://... fetches the desired state once, as YAML
// or JSON; a bad answer is an error that names the URL without its
// secrets, and a broken document is located in it.
func TestPlanReadsAURL(t *testing.T) {
	var mu sync.Mutex
	body, status := "", http.StatusOK
	serve := func(b string, s int) { mu.Lock(); body, status = b, s; mu.Unlock() }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b, s := body, status
		mu.Unlock()
		if s != http.StatusOK {
			http.Error(w, "down", s)
			return
		}
		_, _ = w.Write([]byte(b))
	}))
	defer srv.Close()
	h := newHarness(t, fake.NewManualClock(t0))
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	url := srv.URL + "/desired.yaml"

	for _, b := range []string{desiredJSON, "prefix: rctest\nworkloads:\n  web: {image: demo:v2, replicas: 2}\n"} {
		serve(b, http.StatusOK)
		res := h.run("", "plan", "-f", url)
		if res.code != exitPending {
			t.Fatalf("plan -f %s: exit %d\n%s", url, res.code, res.stderr)
		}
		mustContain(t, "plan", res.stdout, "web", "2 start")
	}
	if doc := planDocOf(t, h.run("", "plan", "--json", "-f", url+"?token=s3cret").stdout); doc.Source != url+"?token=xxxxx" {
		t.Errorf("source %q, want the URL with its token hidden", doc.Source)
	}

	serve("prefix: rctest\nworkloads:\n  web: {image: demo:v2, replicas: many}\n", http.StatusOK)
	res := h.run("", "plan", "-f", url)
	if res.code != exitFailed || !strings.HasPrefix(res.stderr, url+":3:") {
		t.Errorf("broken document: exit %d\n%s", res.code, res.stderr)
	}

	serve("", http.StatusInternalServerError)
	res = h.run("", "plan", "-f", srv.URL+"/desired.yaml?token=s3cret")
	if res.code != exitFailed || !strings.Contains(res.stderr, "500 Internal Server Error") || strings.Contains(res.stderr, "s3cret") {
		t.Errorf("500: exit %d\n%s", res.code, res.stderr)
	}
	if n := strings.Count(strings.TrimSpace(res.stderr), "\n"); n > 0 {
		t.Errorf("error is %d lines, want one:\n%s", n+1, res.stderr)
	}
	if muts := h.fake.Mutations(); len(muts) > 0 {
		t.Errorf("plan changed the engine: %q", muts)
	}
}

// TestDesiredSourceRefusals: a URL of another scheme, --token-file without
// a URL, and a token file that cannot be read are refused before the
// engine is asked.
func TestDesiredSourceRefusals(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	h.unreachable = true
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "-f", "ftp://example.com/desired.yaml"}, "http:// or https://"},
		{[]string{"agent", "-f", h.file("rollcall.yaml", "workloads: {}\n"), "--token-file", h.file("token", "t")}, "--token-file goes with -f http(s)://"},
		{[]string{"plan", "--compose", h.file("compose.yaml", composeYAML), "--token-file", h.file("token", "t")}, "--token-file goes with -f http(s)://"},
		{[]string{"plan", "-f", "https://example.com/desired.yaml", "--token-file", h.dir}, "token file " + h.dir + ": not a regular file"},
		{[]string{"apply", "-f", "https://example.com/desired.yaml", "--token-file", h.file("empty", "\n")}, "empty"},
		{[]string{"-f", "https://example.com/desired.yaml", "--token-file", h.dir + "/none"}, "token file " + h.dir + "/none: no such file"},
	} {
		res := h.run("", tc.args...)
		if res.code != exitFailed || !strings.Contains(res.stderr, tc.want) || strings.Contains(res.stderr, "connect") {
			t.Errorf("%v: exit %d\n%s", tc.args, res.code, res.stderr)
		}
	}
}

// TestPlanSendsTheToken: plan and apply send the bearer token of
// --token-file, trimmed, and a server that refuses it is an error.
func TestPlanSendsTheToken(t *testing.T) {
	h := newHarness(t, fake.NewManualClock(t0))
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	plane := newPlaneServer(t)
	plane.set(func(p *planeServer) { p.body, p.token = desiredJSON, "s3cret" })
	url := plane.srv.URL + "/desired.json"
	token := h.file("token", "  s3cret\n")
	if res := h.run("", "plan", "-f", url, "--token-file", token); res.code != exitPending {
		t.Fatalf("plan with the token: exit %d\n%s", res.code, res.stderr)
	}
	if res := h.run("", "apply", "--yes", "-f", url, "--token-file", token); res.code != exitOK {
		t.Fatalf("apply with the token: exit %d\n%s", res.code, res.stderr)
	}
	res := h.run("", "plan", "-f", url, "--token-file", h.file("other", "wrong"))
	if res.code != exitFailed || !strings.Contains(res.stderr, "401 Unauthorized") || strings.Contains(res.stderr, "wrong") {
		t.Errorf("plan with a wrong token: exit %d\n%s", res.code, res.stderr)
	}
	if n := plane.count(http.StatusOK); n != 2 {
		t.Errorf("%d good answers, want 2", n)
	}
}

// TestAgentFollowsAComposeFile: the agent reads a compose file at start and
// again whenever it changes.
func TestAgentFollowsAComposeFile(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v2", imageV2, fake.Behaviour{})
	path := h.file("compose.yaml", composeYAML)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr), []string{"--journal", h.journal, "agent", "-f", path})
	}()
	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	if err := os.WriteFile(path, []byte(strings.Replace(composeYAML, "replicas: 2", "replicas: 3", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })
	cancel()
	if code := <-exit; code != exitOK {
		t.Errorf("agent exit %d\n%s", code, stderr.String())
	}
}
