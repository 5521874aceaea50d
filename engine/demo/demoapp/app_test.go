package demoapp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    config
		wantErr bool
	}{
		{name: "defaults", args: nil, want: config{listen: ":8080", version: "v1", exitCode: 1, graceful: true, method: "GET"}},
		{
			name: "every flag",
			args: []string{"-listen", ":9090", "-version", "v2", "-ready-delay", "2s", "-fail-health-after", "1m",
				"-crash-after", "30s", "-exit-code", "3", "-health", "-drain", "-graceful=false", "-latency", "50ms"},
			want: config{listen: ":9090", version: "v2", readyDelay: 2 * time.Second, failHealthAfter: time.Minute,
				crashAfter: 30 * time.Second, exitCode: 3, health: true, drain: true, latency: 50 * time.Millisecond, method: "GET"},
		},
		{name: "bad duration", args: []string{"-ready-delay", "soon"}, wantErr: true},
		{name: "negative duration", args: []string{"-crash-after", "-1s"}, wantErr: true},
		{name: "unknown flag", args: []string{"-nope"}, wantErr: true},
		{name: "stray argument", args: []string{"serve"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			got, err := parseFlags(tt.args, &errOut)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parseFlags(%q) = %+v, want an error", tt.args, got)
				}
				if errOut.Len() == 0 {
					t.Errorf("parseFlags(%q) printed nothing on error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseFlags(%q): %v", tt.args, err)
			}
			if got != tt.want {
				t.Errorf("parseFlags(%q) = %+v, want %+v", tt.args, got, tt.want)
			}
		})
	}
}

// clock is a settable time source for the handler.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestHandler(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg := config{version: "v7", readyDelay: time.Second, failHealthAfter: 10 * time.Second}
	tests := []struct {
		name       string
		method     string
		path       string
		up         time.Duration
		wantCode   int
		wantBody   string
		wantStderr bool
	}{
		{name: "root answers version and hostname", path: "/", wantCode: 200, wantBody: "v7 box-1\n"},
		{name: "not ready before ready-delay", path: "/healthz", up: 500 * time.Millisecond, wantCode: 503, wantBody: "not ready", wantStderr: true},
		{name: "healthy at ready-delay", path: "/healthz", up: time.Second, wantCode: 200, wantBody: "ok"},
		{name: "healthy before fail-health-after", path: "/healthz", up: 9 * time.Second, wantCode: 200, wantBody: "ok"},
		{name: "failing from fail-health-after on", path: "/healthz", up: 10 * time.Second, wantCode: 503, wantBody: "failing", wantStderr: true},
		{name: "root still answers while unhealthy", path: "/", up: time.Hour, wantCode: 200, wantBody: "v7 box-1\n"},
		{name: "unknown path", path: "/nope", wantCode: 404},
		{name: "POST answers too", method: http.MethodPost, path: "/", wantCode: 200, wantBody: "v7 box-1\n"},
		{name: "PUT refused", method: http.MethodPut, path: "/", wantCode: 405},
		{name: "POST refused elsewhere", method: http.MethodPost, path: "/healthz", wantCode: 405},
		{name: "drain answers", path: "/drain", wantCode: 200, wantBody: "draining", wantStderr: true},
		{name: "drain by POST", method: http.MethodPost, path: "/drain", wantCode: 200, wantBody: "draining", wantStderr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errLog bytes.Buffer
			clk := &clock{t: start.Add(tt.up)}
			a := newApp(cfg, "box-1", start, &errLog)
			a.now = clk.now
			method := tt.method
			if method == "" {
				method = http.MethodGet
			}
			rec := httptest.NewRecorder()
			a.ServeHTTP(rec, httptest.NewRequest(method, tt.path, nil))
			if rec.Code != tt.wantCode {
				t.Errorf("%s %s after %s: code %d, want %d", method, tt.path, tt.up, rec.Code, tt.wantCode)
			}
			if !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Errorf("%s %s after %s: body %q, want it to contain %q", method, tt.path, tt.up, rec.Body, tt.wantBody)
			}
			if got := errLog.Len() > 0; got != tt.wantStderr {
				t.Errorf("%s %s after %s: logged to stderr = %v (%q), want %v", method, tt.path, tt.up, got, errLog.String(), tt.wantStderr)
			}
		})
	}
}

func TestHealthNeverFailsWithoutFailHealthAfter(t *testing.T) {
	start := time.Now()
	a := newApp(config{}, "h", start, io.Discard)
	a.now = func() time.Time { return start.Add(1000 * time.Hour) }
	if ok, why := a.healthy(); !ok {
		t.Errorf("healthy() = false (%s), want true with -fail-health-after 0", why)
	}
}

func TestProbe(t *testing.T) {
	var mu sync.Mutex
	code := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			t.Errorf("probe asked %s, want /healthz", r.URL.Path)
		}
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(code)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	listen := ":" + port

	if err := probe(listen, "/healthz", time.Second); err != nil {
		t.Errorf("probe(%s) on a 200 answer: %v, want nil", listen, err)
	}
	mu.Lock()
	code = http.StatusServiceUnavailable
	mu.Unlock()
	if err := probe(listen, "/healthz", time.Second); err == nil {
		t.Errorf("probe(%s) on a 503 answer: nil, want an error", listen)
	}
	if code := Main([]string{"-health", "-listen", listen}, io.Discard, io.Discard); code != 1 {
		t.Errorf("run -health on a 503 answer: exit %d, want 1", code)
	}
	srv.Close()
	if err := probe(listen, "/healthz", time.Second); err == nil {
		t.Errorf("probe(%s) with nothing listening: nil, want an error", listen)
	}
	if err := probe("8080", "/healthz", time.Second); err == nil {
		t.Error("probe with a -listen lacking a port: nil, want an error")
	}
}

// TestServeDrainsInFlight checks the zero-downtime contract: after the stop
// signal, a request already in flight still gets its full answer.
func TestServeDrainsInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	entered := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "done")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, h, &out, serveOptions{graceful: true}) }()

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()

	select {
	case <-entered:
	case <-time.After(5 * time.Second):
		t.Fatal("request never reached the handler")
	}
	cancel() // the stop signal, mid-request
	select {
	case err := <-served:
		t.Fatalf("serve returned %v before the in-flight request finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)

	select {
	case r := <-got:
		if r.err != nil || r.body != "done" {
			t.Errorf("in-flight request: body %q, err %v; want \"done\", nil", r.body, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("in-flight request never finished")
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve: %v, want nil after a graceful shutdown", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after shutdown")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("still accepting connections after shutdown")
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "serving") || !strings.Contains(lines[1], "shut down") {
		t.Errorf("stdout = %q, want one start line and one shutdown line", out.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDrainFailsHealthAndKeepsServing: after -drain, the serving process
// fails its healthcheck and still answers on /, and -drain exits 0 only when
// the app took it.
func TestDrainFailsHealthAndKeepsServing(t *testing.T) {
	a := newApp(config{version: "v1"}, "box", time.Now(), io.Discard)
	srv := httptest.NewServer(a)
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	listen := ":" + port
	if code := Main([]string{"-health", "-listen", listen}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("-health before the drain: exit %d, want 0", code)
	}
	if code := Main([]string{"-drain", "-listen", listen}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("-drain: exit %d, want 0", code)
	}
	if code := Main([]string{"-health", "-listen", listen}, io.Discard, io.Discard); code != 1 {
		t.Errorf("-health after the drain: exit %d, want 1", code)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "v1 box\n" {
		t.Errorf("/ while draining: %d %q, want 200 \"v1 box\\n\"", resp.StatusCode, body)
	}
	srv.Close()
	if code := Main([]string{"-drain", "-listen", listen}, io.Discard, io.Discard); code != 1 {
		t.Errorf("-drain with nothing listening: exit %d, want 1", code)
	}
}

// TestServeNotGracefulDropsInFlight is the control of the zero-downtime
// test: with -graceful=false the stop signal cuts a request in flight.
func TestServeNotGracefulDropsInFlight(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(config{version: "v1", latency: 5 * time.Second}, "box", time.Now(), io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- serve(ctx, ln, a, io.Discard, serveOptions{}) }()
	got := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				err = errNone
			}
		}
		got <- err
	}()
	time.Sleep(200 * time.Millisecond) // the request is in its latency
	cancel()
	select {
	case err := <-got:
		if err == errNone {
			t.Error("the in-flight request got an answer; want it cut")
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the in-flight request was neither answered nor cut")
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
}

var errNone = errors.New("answered")

// TestDrainLeavesRotationWithoutFailingARequest: once drained, the server
// answers the request in flight, the next one on a connection already open
// and requests on new connections, each with "Connection: close" (the
// client drops the connection rather than the server closing it idle); it
// never stops accepting before its stop, since a listener closed under a
// proxy resets what the kernel accepted; its healthcheck says 503
// "draining" and a second -drain is taken. The stop then closes the
// listener once the requests in flight are answered.
func TestDrainLeavesRotationWithoutFailingARequest(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := newApp(config{version: "v1", latency: 300 * time.Millisecond}, "box", time.Now(), io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serve(ctx, ln, a, io.Discard, serveOptions{graceful: true})
	}()
	base := "http://" + ln.Addr().String()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	get := func(c *http.Client, url string) (*http.Response, string, error) {
		resp, err := c.Get(url)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	// One keep-alive connection, opened before the drain, spoken to raw so
	// that no client library hides its Connection header.
	kept, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	keptReader := bufio.NewReader(kept)
	askKept := func() (*http.Response, string, error) {
		kept.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(kept, "GET / HTTP/1.1\r\nHost: box\r\n\r\n"); err != nil {
			return nil, "", err
		}
		resp, err := http.ReadResponse(keptReader, nil)
		if err != nil {
			return nil, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp, string(b), err
	}
	// (ReadResponse takes "Connection: close" out of the header into Close.)
	if resp, body, err := askKept(); err != nil || body != "v1 box\n" || resp.Close {
		t.Fatalf("before the drain: %v %q %v", err, body, resp)
	}

	// A request in flight when the drain comes.
	inflight := make(chan string, 1)
	go func() {
		c := &http.Client{Timeout: 5 * time.Second}
		_, body, err := get(c, base+"/")
		if err != nil {
			body = "error: " + err.Error()
		}
		inflight <- body
	}()
	time.Sleep(100 * time.Millisecond)
	if code := Main([]string{"-drain", "-listen", ":" + port}, io.Discard, io.Discard); code != 0 {
		t.Fatalf("-drain: exit %d, want 0", code)
	}
	if got := <-inflight; got != "v1 box\n" {
		t.Errorf("the request in flight at the drain: %q, want its answer", got)
	}

	// The kept connection gets one more answer, marked to close.
	resp, body, err := askKept()
	if err != nil || body != "v1 box\n" || !resp.Close {
		t.Errorf("on the connection open before the drain: %v %q %v; want the answer with Connection: close", err, body, resp)
	}
	// New connections are still accepted and answered, marked to close:
	// the proxy leaves by health, not by refusal.
	for i := range 3 {
		resp, body, err := get(&http.Client{Timeout: 5 * time.Second}, base+"/")
		if err != nil || body != "v1 box\n" || !resp.Close {
			t.Errorf("new connection %d after the drain: %v %q; want the answer with Connection: close", i, err, body)
		}
	}
	var errOut bytes.Buffer
	if health := Main([]string{"-health", "-listen", ":" + port}, io.Discard, &errOut); health != 1 || !strings.Contains(errOut.String(), "draining") {
		t.Errorf("-health after the drain: exit %d %q, want 1 and a 503 that says draining", health, errOut.String())
	}
	if code := Main([]string{"-drain", "-listen", ":" + port}, io.Discard, io.Discard); code != 0 {
		t.Errorf("a second -drain: exit %d, want 0", code)
	}

	// The stop: a request in flight is answered, then the listener closes.
	go func() {
		_, body, err := get(&http.Client{Timeout: 5 * time.Second}, base+"/")
		if err != nil {
			body = "error: " + err.Error()
		}
		inflight <- body
	}()
	time.Sleep(100 * time.Millisecond)
	cancel()
	if got := <-inflight; got != "v1 box\n" {
		t.Errorf("the request in flight at the stop: %q, want its answer", got)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("serve after a drain and the stop signal: %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("serve did not return after the stop signal")
	}
	if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("still accepting after shutdown")
	}
}

// -fail-every N answers 500 to every Nth request on /, and only those: a
// bad version for a canary to catch.
func TestFailEveryAnswers500ToEveryNth(t *testing.T) {
	a := newApp(config{version: "v2", failEvery: 3}, "box", time.Now(), io.Discard)
	var codes []int
	for range 6 {
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", strings.NewReader("ping")))
		codes = append(codes, rec.Code)
	}
	if want := []int{200, 200, 500, 200, 200, 500}; !slices.Equal(codes, want) {
		t.Errorf("codes %v, want %v", codes, want)
	}
	if _, err := parseFlags([]string{"-fail-every", "-1"}, io.Discard); err == nil {
		t.Error("-fail-every -1 parsed")
	}
}

// TestHelpListsEverySwitch: -help (and --help) exits 0 and lists every
// switch with its meaning, the README's demoapp section names each one,
// and -fail-every, the bad version of the canary recipe, is among them.
func TestHelpListsEverySwitch(t *testing.T) {
	readme, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### demoapp's switches")
	section, _, _ = strings.Cut(section, "\n#")
	if !ok {
		t.Fatal(`README.md has no "### demoapp's switches" section`)
	}
	for _, arg := range []string{"-help", "--help", "-h"} {
		var out, errOut strings.Builder
		if code := Main([]string{arg}, &out, &errOut); code != 0 {
			t.Errorf("demoapp %s: exit %d, want 0", arg, code)
		}
		help := out.String() + errOut.String()
		var names []string
		newFlagSet(&config{}, io.Discard).VisitAll(func(f *flag.Flag) {
			names = append(names, f.Name)
			if !strings.Contains(help, "  -"+f.Name+" ") && !strings.Contains(help, "  -"+f.Name+"\n") || !strings.Contains(help, f.Usage) {
				t.Errorf("demoapp %s does not list -%s (%s):\n%s", arg, f.Name, f.Usage, help)
			}
		})
		if !slices.Contains(names, "fail-every") || !slices.Contains(names, "fetch") {
			t.Errorf("switches %v: want -fail-every and -fetch among them", names)
		}
		if arg != "-help" {
			continue
		}
		for _, n := range names {
			if !strings.Contains(section, "`-"+n) {
				t.Errorf("README's demoapp section does not name -%s", n)
			}
		}
	}
}

// TestFetch: -fetch sends one request as asked and prints the answer; no
// answer (a port nobody listens on) is exit 1, which is what the admin
// socket test reads from a workload container.
func TestFetch(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = r.Method + " " + r.URL.Path + " " + r.Header.Get("Content-Type") + " " + string(b)
		w.WriteHeader(http.StatusTeapot)
		io.WriteString(w, "short and stout")
	}))
	defer srv.Close()
	var out, errOut strings.Builder
	if code := Main([]string{"-fetch", srv.URL + "/rollcall/cohorts/p/web", "-method", "PUT", "-data", `{"share":1}`}, &out, &errOut); code != 0 {
		t.Fatalf("-fetch of a server that answers: exit %d, want 0; %s", code, errOut.String())
	}
	if want := `PUT /rollcall/cohorts/p/web application/json {"share":1}`; got != want {
		t.Errorf("the server got %q, want %q", got, want)
	}
	if want := "418 I'm a teapot\nshort and stout\n"; out.String() != want {
		t.Errorf("-fetch printed %q, want %q", out.String(), want)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"-fetch", "http://" + addr + "/config/"}, &out, &errOut); code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "refused") {
		t.Errorf("-fetch of a closed port: exit %d, stdout %q, stderr %q; want 1, nothing, connection refused", code, out.String(), errOut.String())
	}
}

// -journal appends a line per start and serves the file: the data a
// volume test checks outlives the container.
func TestJournalKeepsALinePerStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal")
	for _, v := range []string{"v1", "v2"} {
		if err := appendLine(path, v+" host"); err != nil {
			t.Fatal(err)
		}
	}
	a := newApp(config{journal: path}, "host", time.Now(), io.Discard)
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/journal", nil))
	if rec.Code != http.StatusOK || rec.Body.String() != "v1 host\nv2 host\n" {
		t.Errorf("GET /journal: %d %q", rec.Code, rec.Body.String())
	}
	rec = httptest.NewRecorder()
	newApp(config{}, "host", time.Now(), io.Discard).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/journal", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("without -journal: %d", rec.Code)
	}
}
