package source

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/sourcetest"
	"github.com/rollcall/rollcall/engine/spec"
)

// clockAt is a settable clock for LastGood.
type clockAt struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clockAt) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clockAt) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// An unchanged document costs a 304 and no parse: the second poll sends
// If-None-Match and gets back the very same desired state.
func TestURLSourceHonoursETag(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(desiredYAML("web:v1", 2), `"v1"`)
	src := mustURL(t, cp.URL(), URLOptions{})
	ctx := context.Background()
	first, err := src.Load(ctx)
	if err != nil || first.Workloads["web"].Replicas != 2 {
		t.Fatalf("first load: %+v, %v", first, err)
	}
	if got := cp.LastIfNoneMatch(); got != "" {
		t.Errorf("first request sent If-None-Match %q", got)
	}
	second, err := src.Load(ctx)
	if err != nil || second != first {
		t.Fatalf("second load: %p, %v; want the first state (%p) again, unparsed", second, err, first)
	}
	if got := cp.LastIfNoneMatch(); got != `"v1"` {
		t.Errorf("second request sent If-None-Match %q, want \"v1\"", got)
	}
	cp.Serve(desiredYAML("web:v2", 3), `"v2"`)
	third, err := src.Load(ctx)
	if err != nil || third.Workloads["web"].Image != "web:v2" || third.Workloads["web"].Replicas != 3 {
		t.Fatalf("load after a change: %+v, %v", third, err)
	}
}

// A server without ETags that sends the same bytes again is not parsed
// again either.
func TestURLSourceSameBytesNoReparse(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(desiredYAML("web:v1", 1), "")
	src := mustURL(t, cp.URL(), URLOptions{})
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
		answer func(cp *sourcetest.ControlPlane) func(w http.ResponseWriter, r *http.Request)
		msg    string
		slow   bool // the answer never completes: a short timeout
		// located: the error is a spec.ErrorList placed in the document.
		located bool
	}{
		{name: "500", msg: "500 Internal Server Error", answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) }
		}},
		{name: "404", msg: "404 Not Found", answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return http.NotFound
		}},
		{name: "slow answer", slow: true, msg: "no complete answer within 100ms", answer: func(cp *sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-cp.Released():
				}
			}
		}},
		{name: "slow body", slow: true, msg: "no complete answer within 100ms", answer: func(cp *sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(good)))
				_, _ = w.Write([]byte(good[:10]))
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-cp.Released():
				}
			}
		}},
		{name: "body cut short", msg: "the body was cut short", answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(len(good)))
				_, _ = w.Write([]byte(good[:len(good)/2])) // the server then closes the connection
			}
		}},
		{name: "truncated document", msg: "invalid YAML", located: true, answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte("workloads:\n  web:\n    image: web:v2\n    command: [\"-listen\", \":80\"\n"))
			}
		}},
		{name: "invalid document", msg: "replicas: expected an integer", located: true, answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				_, _ = w.Write([]byte(`{"workloads": {"web": {"image": "web:v2", "replicas": "many"}}}`))
			}
		}},
		{name: "oversized, with a length", msg: "refused: the limit is 4 MiB", answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
			return func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Length", strconv.Itoa(MaxURLBody+1))
				_, _ = w.Write([]byte(strings.Repeat("#", MaxURLBody+1)))
			}
		}},
		{name: "oversized, chunked", msg: "body over 4 MiB refused", answer: func(*sourcetest.ControlPlane) func(http.ResponseWriter, *http.Request) {
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
			cp := sourcetest.NewControlPlane(t)
			cp.Serve(good, `"good"`)
			clock := &clockAt{t: time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)}
			timeout := 10 * time.Second
			if tc.slow {
				timeout = 100 * time.Millisecond
			}
			src := mustURL(t, cp.URL(), URLOptions{Timeout: timeout, Now: clock.Now})
			ctx := context.Background()
			last, err := src.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			goodAt := clock.Now()
			clock.Set(goodAt.Add(time.Minute))

			cp.Set(tc.answer(cp))
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
			cp.Serve(good, `"good"`)
			if again, err := src.Load(ctx); err != nil || again != last {
				t.Fatalf("after recovery: %p, %v; want the last good %p", again, err, last)
			}
		})
	}
}

// Name and every error show the URL without its secrets.
func TestURLSourceRedactsSecrets(t *testing.T) {
	src := mustURL(t, "http://deploy:s3cret@127.0.0.1:1/desired.yaml?token=abc123&env=prod#frag", URLOptions{Timeout: time.Second})
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
		if _, err := URL(u, URLOptions{}); err == nil {
			t.Errorf("URL(%q) took it", u)
		}
	}
}

// Changes polls every interval and signals only an answer that differs
// from the last one loaded: a new document, a failure, the recovery; Load
// then gives that answer. Unchanged answers (304) signal nothing.
func TestURLSourceSignalsOnlyChanges(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve(desiredYAML("web:v1", 1), `"a"`)
	src := mustURL(t, cp.URL(), URLOptions{Interval: 5 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	changes := src.Changes(ctx)
	if _, err := src.Load(ctx); err != nil {
		t.Fatal(err)
	}
	requests := cp.Requests
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

	cp.Serve(desiredYAML("web:v1", 2), `"b"`)
	waitSignal(t, changes, "a new document")
	if d, err := src.Load(ctx); err != nil || d.Workloads["web"].Replicas != 2 {
		t.Fatalf("Load = %+v, %v", d, err)
	}
	cp.Set(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusBadGateway) })
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
	cp.Serve(desiredYAML("web:v1", 2), `"b"`)
	waitSignal(t, changes, "the recovery")
	if d, err := src.Load(ctx); err != nil || d.Workloads["web"].Replicas != 2 {
		t.Fatalf("Load = %+v, %v", d, err)
	}
}
