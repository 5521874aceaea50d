package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
)

const agentYAML = `prefix: rctest
workloads:
  web:
    image: demo:v1
    replicas: %d
    restart: "no"
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: 1s}
`

func agentFile(replicas int) string {
	return strings.Replace(agentYAML, "%d", string(rune('0'+replicas)), 1)
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// healthyRunning counts the running, healthy containers of prefix rctest.
func healthyRunning(f *fake.Engine) int {
	cs, err := f.List(context.Background(), "rctest")
	if err != nil {
		return -1
	}
	n := 0
	for _, c := range cs {
		if c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
			n++
		}
	}
	return n
}

// TestAgent: the agent converges, heals a killed container on its event,
// keeps the last good state (and the containers) when the file breaks,
// logging the error with its location, follows the file once it is fixed,
// journals every step, and exits 0 when its context ends (SIGTERM).
func TestAgent(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	path := h.file("rollcall.yaml", agentFile(2))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr), []string{"--journal", h.journal, "agent", "-f", path})
	}()

	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })

	cs, _ := h.fake.List(context.Background(), "rctest")
	if err := h.fake.Kill(cs[0].ID, 137); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, "the killed container restarted", 5*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	t.Logf("killed container healthy again after %s", time.Since(killed).Round(time.Millisecond))

	if err := os.WriteFile(path, []byte("workloads:\n  web:\n    image: demo:v1\n    replicas: -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken file logged", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), `"msg":"desired state broken: keeping the last good one"`)
	})
	mustContain(t, "agent log", stderr.String(), `"line":4`, `"col":15`, `"file":"`+path+`"`)
	if n := healthyRunning(h.fake); n != 2 {
		t.Errorf("%d healthy containers after the file broke, want 2 (last good state)", n)
	}

	if err := os.WriteFile(path, []byte(agentFile(3)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })

	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Errorf("agent exit %d on SIGTERM, want 0", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("agent did not stop on cancel")
	}
	log := stderr.String()
	mustContain(t, "agent log", log, `"msg":"agent started"`, `"msg":"step started"`, `"msg":"desired state loaded"`, `"msg":"agent stopped"`)
	uniqueJSONKeys(t, log)
	steps := strings.Count(log, `"msg":"step done"`) + strings.Count(log, `"msg":"step failed"`)
	entries := h.journalEntries()
	if steps < 4 || len(entries) != steps {
		t.Errorf("%d steps logged, %d journal lines; want equal, at least 4 (2 starts, a restart, a start)", steps, len(entries))
	}
	for _, e := range entries {
		if e.Mode != "agent" {
			t.Errorf("journal entry mode %q, want agent", e.Mode)
		}
	}
	if strings.Contains(log, "panic") || stdout.String() != "" {
		t.Errorf("stdout %q; log:\n%s", stdout.String(), log)
	}
}

// TestAgentNeedsAGoodFileToStart: with nothing good to keep, the agent
// refuses to start, with the file's error.
func TestAgentNeedsAGoodFileToStart(t *testing.T) {
	h := newHarness(t, nil)
	res := h.run("", "agent", "-f", h.dir+"/absent.yaml")
	if res.code != exitFailed || !strings.Contains(res.stderr, "no desired-state file at") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
	path := h.file("rollcall.yaml", "workloads: [\n")
	res = h.run("", "agent", "-f", path)
	if res.code != exitFailed || !strings.Contains(res.stderr, path+":") {
		t.Errorf("exit %d, stderr %q", res.code, res.stderr)
	}
}

// planeServer is a control plane for the agent's tests: it serves body
// with etag (304 to a request that has it), only to a request bearing
// the token (or one of tokens), or fails with status; it counts what it
// answered and the tokens it was sent.
type planeServer struct {
	mu         sync.Mutex
	body, etag string
	token      string
	tokens     map[string]bool // also accepted
	status     int             // not 0: every answer is this status
	answered   map[int]int
	sent       map[string]int // bearer tokens received
	srv        *httptest.Server
}

func newPlaneServer(t *testing.T) *planeServer {
	p := &planeServer{answered: map[int]int{}, sent: map[string]int{}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		p.sent[token]++
		code := http.StatusOK
		switch {
		case p.status != 0:
			code = p.status
		case token != p.token && !p.tokens[token]:
			code = http.StatusUnauthorized
		case p.etag != "" && r.Header.Get("If-None-Match") == p.etag:
			code = http.StatusNotModified
		}
		p.answered[code]++
		if code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
		w.Header().Set("ETag", p.etag)
		_, _ = w.Write([]byte(p.body))
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *planeServer) set(f func(p *planeServer)) { p.mu.Lock(); f(p); p.mu.Unlock() }

func (p *planeServer) count(code int) int { p.mu.Lock(); defer p.mu.Unlock(); return p.answered[code] }

func (p *planeServer) sentToken(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent[token]
}

// fastPolls makes URL sources poll every 20ms for the test.
func fastPolls(t *testing.T) {
	urlInterval = 20 * time.Millisecond
	t.Cleanup(func() { urlInterval = 0 })
}

// TestAgentFollowsAURL: the agent takes its desired state from a control
// plane: it sends the bearer token of --token-file (read again at each
// poll, so a rotated token is used), polls with If-None-Match and keeps its
// state on a 304, follows a new document, keeps the last good state (and
// the containers) when the server fails, logs that, and never logs the
// token.
func TestAgentFollowsAURL(t *testing.T) {
	fastPolls(t)
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	plane := newPlaneServer(t)
	plane.set(func(p *planeServer) { p.body, p.etag, p.token = agentFile(2), `"v1"`, "tok-one" })
	tokenFile := h.file("token", "tok-one\n")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr),
			[]string{"--journal", h.journal, "agent", "-f", plane.srv.URL + "/desired.yaml", "--token-file", tokenFile})
	}()
	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })
	seen := plane.count(http.StatusNotModified)
	waitFor(t, "more polls answered 304", 10*time.Second, func() bool { return plane.count(http.StatusNotModified) >= seen+3 })
	if n := healthyRunning(h.fake); n != 2 {
		t.Errorf("%d healthy containers after 304s, want 2", n)
	}
	if n := plane.count(http.StatusUnauthorized); n != 0 {
		t.Errorf("%d requests without the token", n)
	}

	// The token rotates: the server takes both while the file changes,
	// then only the new one, with a new document.
	plane.set(func(p *planeServer) { p.tokens = map[string]bool{"tok-two": true} })
	if err := os.WriteFile(tokenFile, []byte("tok-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rotated token sent", 10*time.Second, func() bool { return plane.sentToken("tok-two") > 0 })
	plane.set(func(p *planeServer) { p.body, p.etag, p.token, p.tokens = agentFile(3), `"v2"`, "tok-two", nil })
	waitFor(t, "3 healthy containers", 15*time.Second, func() bool { return healthyRunning(h.fake) == 3 })

	// The server fails: the last good state stays, and so do the containers.
	plane.set(func(p *planeServer) { p.status = http.StatusServiceUnavailable })
	waitFor(t, "the failure logged", 10*time.Second, func() bool {
		return strings.Contains(stderr.String(), `"msg":"desired state broken: keeping the last good one"`)
	})
	muts := len(h.fake.Mutations())
	failed := plane.count(http.StatusServiceUnavailable)
	waitFor(t, "more failed polls", 10*time.Second, func() bool { return plane.count(http.StatusServiceUnavailable) >= failed+5 })
	if n := healthyRunning(h.fake); n != 3 {
		t.Errorf("%d healthy containers while the server fails, want 3 (last good state)", n)
	}
	if m := h.fake.Mutations(); len(m) != muts {
		t.Errorf("the agent acted while the server failed: %q", m[muts:])
	}
	mustContain(t, "agent log", stderr.String(), "503 Service Unavailable")

	// Back, with a new document: followed again.
	plane.set(func(p *planeServer) { p.status, p.body, p.etag = 0, agentFile(2), `"v3"` })
	waitFor(t, "2 healthy containers again", 15*time.Second, func() bool {
		cs, _ := h.fake.List(context.Background(), "rctest")
		return healthyRunning(h.fake) == 2 && len(cs) == 2
	})

	cancel()
	select {
	case code := <-exit:
		if code != exitOK {
			t.Errorf("agent exit %d on SIGTERM, want 0\n%s", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("agent did not stop on cancel")
	}
	log := stderr.String()
	mustContain(t, "agent log", log, `"msg":"agent started"`, `"source":"`+plane.srv.URL+`/desired.yaml"`, `"msg":"desired state readable again"`)
	if strings.Contains(log, "tok-") {
		t.Errorf("the log shows the token:\n%s", log)
	}
	if n := plane.count(http.StatusUnauthorized); n != 0 {
		t.Errorf("%d requests without the current token", n)
	}
}

// TestAgentURLMustAnswerAtStart: with nothing good to keep, an agent
// whose URL does not answer, or whose token file cannot be read, refuses
// to start, saying why, before it connects to the engine.
func TestAgentURLMustAnswerAtStart(t *testing.T) {
	h := newHarness(t, nil)
	h.unreachable = true
	plane := newPlaneServer(t)
	plane.set(func(p *planeServer) { p.status = http.StatusInternalServerError })
	url := plane.srv.URL + "/desired.yaml"
	res := h.run("", "agent", "-f", url)
	if res.code != exitFailed || !strings.Contains(res.stderr, "500 Internal Server Error") || strings.Contains(res.stderr, "connect") {
		t.Errorf("server failing: exit %d\n%s", res.code, res.stderr)
	}
	missing := h.dir + "/no-token"
	res = h.run("", "agent", "-f", url, "--token-file", missing)
	if res.code != exitFailed || !strings.Contains(res.stderr, "token file "+missing) || plane.count(http.StatusInternalServerError) != 1 {
		t.Errorf("token file missing: exit %d, %d requests\n%s", res.code, plane.count(http.StatusInternalServerError), res.stderr)
	}
}

// TestAgentFollowsAConfigMapSwap: the agent's file is a Kubernetes
// ConfigMap volume's, rollcall.yaml -> ..data/rollcall.yaml and ..data ->
// ..a; the update swaps ..data to ..b (replicas 2 -> 3) with a rename, and
// the agent follows it.
func TestAgentFollowsAConfigMapSwap(t *testing.T) {
	h := newHarness(t, nil)
	h.fake.AddImage("demo:v1", "", fake.Behaviour{})
	vol := filepath.Join(h.dir, "config")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for gen, replicas := range map[string]int{"..a": 2, "..b": 3} {
		must(os.MkdirAll(filepath.Join(vol, gen), 0o755))
		must(os.WriteFile(filepath.Join(vol, gen, "rollcall.yaml"), []byte(agentFile(replicas)), 0o644))
	}
	must(os.Symlink("..a", filepath.Join(vol, "..data")))
	must(os.Symlink("..data/rollcall.yaml", filepath.Join(vol, "rollcall.yaml")))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	exit := make(chan int, 1)
	go func() {
		exit <- run(ctx, h.env(strings.NewReader(""), &stdout, &stderr),
			[]string{"--journal", h.journal, "agent", "-f", filepath.Join(vol, "rollcall.yaml")})
	}()
	waitFor(t, "2 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 2 })

	must(os.Symlink("..b", filepath.Join(vol, "..tmp")))
	must(os.Rename(filepath.Join(vol, "..tmp"), filepath.Join(vol, "..data")))
	must(os.RemoveAll(filepath.Join(vol, "..a")))
	waitFor(t, "3 healthy containers", 10*time.Second, func() bool { return healthyRunning(h.fake) == 3 })
	cancel()
	if code := <-exit; code != exitOK {
		t.Errorf("agent exit %d\n%s", code, stderr.String())
	}
}

// uniqueJSONKeys fails t for any JSON log line of log whose object has a
// key twice (slog writes every attribute given, and a reader keeps only one
// of two "prefix" keys).
func uniqueJSONKeys(t *testing.T, log string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		if dup := duplicateJSONKey(line); dup != "" {
			t.Errorf("log line has the key %q twice: %s", dup, line)
		}
	}
}

// duplicateJSONKey is a key that appears twice in one object of the JSON
// text line, "" if none does (or the line is no JSON).
func duplicateJSONKey(line string) string {
	dec := json.NewDecoder(strings.NewReader(line))
	type frame struct {
		object bool
		keys   map[string]bool
		atKey  bool // the next string token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.atKey {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return k
				}
				top.keys[k] = true
				top.atKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{object: true, keys: map[string]bool{}, atKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: the object around it expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].atKey = true
		}
	}
}

func TestDuplicateJSONKey(t *testing.T) {
	for line, want := range map[string]string{
		`{"a":1,"b":{"a":2},"c":[{"a":1},{"a":2}]}`: "",
		`{"a":1,"b":2,"a":3}`:                       "a",
		`{"a":{"x":1,"x":2}}`:                       "x",
		`{"a":[1,{"y":1}],"a":1}`:                   "a",
	} {
		if got := duplicateJSONKey(line); got != want {
			t.Errorf("duplicateJSONKey(%s) = %q, want %q", line, got, want)
		}
	}
}
