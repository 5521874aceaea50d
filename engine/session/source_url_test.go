package session

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// controlPlane is a test server for the desired state: it answers with
// whatever answer holds now, and records each request's If-None-Match.
type controlPlane struct {
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, r *http.Request)
	ifNone  []string
	srv     *httptest.Server
	release chan struct{} // closed at cleanup: frees slow answers
}

func newControlPlane(t *testing.T) *controlPlane {
	cp := &controlPlane{release: make(chan struct{})}
	cp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		cp.ifNone = append(cp.ifNone, r.Header.Get("If-None-Match"))
		answer := cp.answer
		cp.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(func() { close(cp.release); cp.srv.Close() })
	return cp
}

func (cp *controlPlane) set(answer func(w http.ResponseWriter, r *http.Request)) {
	cp.mu.Lock()
	cp.answer = answer
	cp.mu.Unlock()
}

// serve answers body with etag, or 304 to a request that already has it.
func (cp *controlPlane) serve(body, etag string) {
	cp.set(func(w http.ResponseWriter, r *http.Request) {
		if etag != "" && r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		_, _ = w.Write([]byte(body))
	})
}

func (cp *controlPlane) lastIfNoneMatch() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return cp.ifNone[len(cp.ifNone)-1]
}

func (cp *controlPlane) url() string { return cp.srv.URL + "/desired.yaml" }

// clockAt is a settable clock for LastGood.
type clockAt struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clockAt) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clockAt) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func mustURLSource(t *testing.T, url string, o URLOptions) Source {
	t.Helper()
	src, err := URLSource(url, o)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// An unchanged document costs a 304 and no parse: the second poll sends
// If-None-Match and gets back the very same desired state.
func TestURLSourceHonoursETag(t *testing.T) {
	cp := newControlPlane(t)
	cp.serve(desiredYAML("web:v1", 2), `"v1"`)
	src := mustURLSource(t, cp.url(), URLOptions{})
	ctx := context.Background()
	first, err := src.Load(ctx)
	if err != nil || first.Workloads["web"].Replicas != 2 {
		t.Fatalf("first load: %+v, %v", first, err)
	}
	if got := cp.lastIfNoneMatch(); got != "" {
		t.Errorf("first request sent If-None-Match %q", got)
	}
	second, err := src.Load(ctx)
	if err != nil || second != first {
		t.Fatalf("second load: %p, %v; want the first state (%p) again, unparsed", second, err, first)
	}
	if got := cp.lastIfNoneMatch(); got != `"v1"` {
		t.Errorf("second request sent If-None-Match %q, want \"v1\"", got)
	}
	cp.serve(desiredYAML("web:v2", 3), `"v2"`)
	third, err := src.Load(ctx)
	if err != nil || third.Workloads["web"].Image != "web:v2" || third.Workloads["web"].Replicas != 3 {
		t.Fatalf("load after a change: %+v, %v", third, err)
	}
}

// A server without ETags that sends the same bytes again is not parsed
// again either.
func TestURLSourceSameBytesNoReparse(t *testing.T) {
	cp := newControlPlane(t)
	cp.serve(desiredYAML("web:v1", 1), "")
	src := mustURLSource(t, cp.url(), URLOptions{})
	first, err := src.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second, err := src.Load(context.Background()); err != nil || second != first {
		t.Fatalf("second load: %p, %v; want %p", second, err, first)
	}
}

// Every failure keeps the last good state: the load returns a *StaleError
// that says when the state was last confirmed, and the next good answer
// is taken again.
func TestURLSourceFailuresKeepLastGood(t *testing.T) {
	good := desiredYAML("web:v1", 2)
	for _, tc := range []struct {
		name   string
		answer func(cp *controlPlane) func(w http.ResponseWriter, r *http.Request)
		msg    string
		slow   bool // the answer never completes: a short timeout
		// located: the error is a spec.ErrorList placed in the document.
		located bool
	}{
		{name: "500", msg: "500 Internal Server Error", answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }
		}},
		{name: "404", msg: "404 Not Found", answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return http.NotFound
		}},
		{name: "slow answer", slow: true, msg: "no complete answer within 100ms", answer: func(cp *controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-cp.release:
				}
			}
		}},
		{name: "slow body", slow: true, msg: "no complete answer within 100ms", answer: func(cp *controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(good)))
				_, _ = w.Write([]byte(good[:10]))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-cp.release:
				}
			}
		}},
		{name: "body cut short", msg: "the body was cut short", answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(good)))
				_, _ = w.Write([]byte(good[:len(good)/2])) // the server then closes the connection
			}
		}},
		{name: "truncated document", msg: "invalid YAML", located: true, answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("workloads:\n  web:\n    image: web:v2\n    command: [\"-listen\", \":80\"\n"))
			}
		}},
		{name: "invalid document", msg: "replicas: expected an integer", located: true, answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`{"workloads": {"web": {"image": "web:v2", "replicas": "many"}}}`))
			}
		}},
		{name: "oversized, with a length", msg: "refused: the limit is 4 MiB", answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(MaxURLBody+1))
				_, _ = w.Write([]byte(strings.Repeat("#", MaxURLBody+1)))
			}
		}},
		{name: "oversized, chunked", msg: "body over 4 MiB refused", answer: func(*controlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				chunk := []byte(strings.Repeat("#", 1<<20))
				for range 5 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := newControlPlane(t)
			cp.serve(good, `"good"`)
			clock := &clockAt{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
			timeout := 10 * time.Second
			if tc.slow {
				timeout = 100 * time.Millisecond
			}
			src := mustURLSource(t, cp.url(), URLOptions{Timeout: timeout, Now: clock.Now})
			ctx := context.Background()
			last, err := src.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			goodAt := clock.Now()
			clock.Set(goodAt.Add(time.Minute))

			cp.set(tc.answer(cp))
			d, err := src.Load(ctx)
			var stale *StaleError
			if d != nil || !errors.As(err, &stale) {
				t.Fatalf("got %v, %v; want a *StaleError", d, err)
			}
			if !stale.LastGood.Equal(goodAt) {
				t.Errorf("LastGood %v, want %v", stale.LastGood, goodAt)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
			var list spec.ErrorList
			if tc.located != errors.As(err, &list) {
				t.Fatalf("located: %v, want %v: %v", !tc.located, tc.located, err)
			}
			if tc.located && (list[0].File != src.Name() || list[0].Line+list[0].Col < 3) { // not at 1:1
				t.Errorf("error at %s:%d:%d, want inside %s", list[0].File, list[0].Line, list[0].Col, src.Name())
			}

			// The good document again: its ETag still matches, so the last
			// good state comes back as it was.
			cp.serve(good, `"good"`)
			if again, err := src.Load(ctx); err != nil || again != last {
				t.Fatalf("after recovery: %p, %v; want the last good %p", again, err, last)
			}
		})
	}
}

// Name and every error show the URL without its secrets.
func TestURLSourceRedactsSecrets(t *testing.T) {
	src := mustURLSource(t, "http://deploy:s3cret@127.0.0.1:1/desired.yaml?token=abc123&env=prod#frag", URLOptions{Timeout: time.Second})
	want := "http://127.0.0.1:1/desired.yaml?env=xxxxx&token=xxxxx"
	if src.Name() != want {
		t.Errorf("Name() = %q, want %q", src.Name(), want)
	}
	_, err := src.Load(context.Background()) // nothing listens on port 1
	if err == nil {
		t.Fatal("loaded from a closed port")
	}
	for _, secret := range []string{"deploy", "s3cret", "abc123", "prod"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows %q: %v", secret, err)
		}
	}
}

func TestURLSourceRejectsOtherSchemes(t *testing.T) {
	for _, u := range []string{"ftp://host/desired.yaml", "file:///etc/rollcall.yaml", "https:///no-host", "://bad"} {
		if _, err := URLSource(u, URLOptions{}); err == nil {
			t.Errorf("URLSource(%q) took it", u)
		}
	}
}

// The session polls the URL: a change on the server reaches the snapshot,
// a failure shows as SourceErr (a *StaleError) while the last good state
// stays, and the next good answer clears it.
func TestSessionFollowsURLSource(t *testing.T) {
	cp := newControlPlane(t)
	cp.serve(desiredYAML("web:v1", 1), `"a"`)
	f, clock := newEngine()
	h := newHarness(t, f, clock, "", ModeWatch)
	h.opts.Source = mustURLSource(t, cp.url(), URLOptions{Interval: 10 * time.Millisecond})
	h.start()
	h.waitFor("the first state", func(s Snapshot) bool { return s.Desired != nil && s.Desired.Workloads["web"].Replicas == 1 })

	cp.serve(desiredYAML("web:v1", 2), `"b"`)
	h.waitFor("the changed state", func(s Snapshot) bool { return s.Desired.Workloads["web"].Replicas == 2 })

	cp.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	snap := h.waitFor("the failure", func(s Snapshot) bool { return s.SourceErr != nil })
	var stale *StaleError
	if !errors.As(snap.SourceErr, &stale) || stale.LastGood.IsZero() || snap.Desired.Workloads["web"].Replicas != 2 {
		t.Fatalf("source err %v, desired %+v", snap.SourceErr, snap.Desired)
	}
	if snap.Source != cp.url() {
		t.Errorf("Source %q, want %q", snap.Source, cp.url())
	}

	cp.serve(desiredYAML("web:v1", 2), `"b"`)
	h.waitFor("the recovery", func(s Snapshot) bool { return s.SourceErr == nil })
}

// Changes polls every interval and signals only an answer that differs
// from the last one loaded: a new document, a failure, the recovery; Load
// then gives that answer. Unchanged answers (304) signal nothing.
func TestURLSourceSignalsOnlyChanges(t *testing.T) {
	cp := newControlPlane(t)
	cp.serve(desiredYAML("web:v1", 1), `"a"`)
	src := mustURLSource(t, cp.url(), URLOptions{Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	if _, err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	requests := func() int { cp.mu.Lock(); defer cp.mu.Unlock(); return len(cp.ifNone) }
	polled := func(n int) {
		t.Helper()
		from := requests()
		deadline := time.Now().Add(waitLimit)
		for requests() < from+n {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d polls in %s", n, waitLimit)
			}
			time.Sleep(time.Millisecond)
		}
	}
	polled(5)
	select {
	case <-changes:
		t.Fatal("a signal for an unchanged document")
	default:
	}

	cp.serve(desiredYAML("web:v1", 2), `"b"`)
	waitSignal(t, changes, "a new document")
	if d, err := src.Load(ctx); err != nil || d.Workloads["web"].Replicas != 2 {
		t.Fatalf("Load = %+v, %v", d, err)
	}
	cp.set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
	waitSignal(t, changes, "a failure")
	var stale *StaleError
	if _, err := src.Load(ctx); !errors.As(err, &stale) || stale.LastGood.IsZero() {
		t.Fatalf("Load = %v, want a StaleError", err)
	}
	polled(3) // the same failure again: nothing new
	select {
	case <-changes:
		t.Fatal("a signal for the same failure")
	default:
	}
	cp.serve(desiredYAML("web:v1", 2), `"b"`)
	waitSignal(t, changes, "the recovery")
	if d, err := src.Load(ctx); err != nil || d.Workloads["web"].Replicas != 2 {
		t.Fatalf("Load = %+v, %v", d, err)
	}
}
