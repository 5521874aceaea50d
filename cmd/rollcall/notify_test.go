package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rollcall/rollcall/engine/notify"
)

// sampleHook is a webhook that answers status and keeps what it got.
type sampleHook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []notify.Event
	auth   []string
}

func newSampleHook(t *testing.T, status int) *sampleHook {
	t.Helper()
	h := &sampleHook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var e notify.Event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("not one event: %v\n%s", err, body)
		}
		h.mu.Lock()
		h.events = append(h.events, e)
		h.auth = append(h.auth, r.Header.Get("Authorization"))
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *sampleHook) got() ([]notify.Event, []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.events, h.auth
}

// notify-test posts one sample to each webhook, with the token of its
// token_file (read from beside the file), shows each answer by scheme and
// host only, and exits 1 when one did not take it.
func TestNotifyTestPostsASampleToEachWebhook(t *testing.T) {
	h := newHarness(t, nil)
	good := newSampleHook(t, http.StatusNoContent)
	bad := newSampleHook(t, http.StatusForbidden)
	if err := os.WriteFile(filepath.Join(h.dir, "hook.token"), []byte("t0k3n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := h.file("rollcall.yaml", fmt.Sprintf("workloads: {}\nnotify:\n  - {url: %q, token_file: hook.token}\n  - %q\n",
		good.srv.URL+"/hooks/s3cret", bad.srv.URL+"/hooks/other"))

	res := h.run("", "notify-test", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1 (one webhook answered 403)\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	mustContain(t, "stdout", res.stdout, good.srv.URL+"/…  204 No Content", bad.srv.URL+"/…  failed: ", "403 Forbidden")
	mustContain(t, "stderr", res.stderr, "1 of 2 webhooks did not take the sample")
	for _, out := range []string{res.stdout, res.stderr} {
		if strings.Contains(out, "s3cret") || strings.Contains(out, "t0k3n") {
			t.Errorf("output shows a secret:\n%s", out)
		}
	}
	for _, hook := range []*sampleHook{good, bad} {
		events, _ := hook.got()
		if len(events) != 1 || events[0].Kind != notify.KindTest || events[0].SchemaVersion != notify.SchemaVersion || events[0].User == "" {
			t.Errorf("events %+v, want one sample", events)
		}
	}
	if _, auth := good.got(); auth[0] != "Bearer t0k3n" {
		t.Errorf("Authorization %q, want the token_file's", auth[0])
	}

	ok := h.file("ok.yaml", fmt.Sprintf("workloads: {}\nnotify: [%q]\n", good.srv.URL))
	if res := h.run("", "notify-test", "-f", ok); res.code != exitOK || !strings.Contains(res.stdout, "204 No Content") {
		t.Errorf("every webhook answered: exit %d\n%s%s", res.code, res.stdout, res.stderr)
	}
}

func TestNotifyTestWithoutWebhooksFails(t *testing.T) {
	h := newHarness(t, nil)
	path := h.file("rollcall.yaml", "workloads: {}\n")
	res := h.run("", "notify-test", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1", res.code)
	}
	mustContain(t, "stderr", res.stderr, "names no webhook", "notify:")

	bad := h.file("bad.yaml", "workloads: {}\nnotify: [\"ftp://x\"]\n")
	res = h.run("", "notify-test", "-f", bad)
	mustContain(t, "stderr", res.stderr, bad+":2:10:", "not an http or https URL")
}

// TestNotifyTestTellsWebhooksOnOneHostApart: the URLs are shown by scheme
// and host only, so two webhooks on one host would print the same name;
// each answer names its entry of notify: (index and line), so the one that
// failed can be found.
func TestNotifyTestTellsWebhooksOnOneHostApart(t *testing.T) {
	h := newHarness(t, nil)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/bad") {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(hook.Close)
	path := h.file("rollcall.yaml", fmt.Sprintf("workloads: {}\nnotify:\n  - %q\n  - %q\n", hook.URL+"/good", hook.URL+"/bad"))
	res := h.run("", "notify-test", "-f", path)
	if res.code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s%s", res.code, res.stdout, res.stderr)
	}
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one line per webhook:\n%s", res.stdout)
	}
	for _, want := range []string{"notify[0] (line 3)  " + hook.URL + "/…  200 OK", "notify[1] (line 4)  " + hook.URL + "/…  failed: "} {
		found := false
		for _, l := range lines {
			found = found || strings.HasPrefix(l, want)
		}
		if !found {
			t.Errorf("no line starts with %q:\n%s", want, res.stdout)
		}
	}
}
