// Package demoapp is the tiny HTTP workload that rollcall's demo, tests and
// benchmarks roll, and the FROM scratch image it ships in (image.go). The
// program runs from cmd/demoapp, and from rollcall itself when rollcall is
// started as "demoapp" (the image's /demoapp) or as `rollcall demoapp`: that
// is how a built or installed rollcall stages its demo with no Go toolchain
// and no source tree. A scratch image has no shell, libc or any other file,
// so the program depends on none.
//
//	GET|POST /    "<version> <hostname>\n" (after -latency; 500 to every -fail-every'th); a POST's body is read and dropped
//	GET /healthz  200 "ok" while ready, healthy and not draining, 503 otherwise
//	GET|POST /drain  starts draining (see below)
//
// Its faults are scripted by flags: it turns healthy after -ready-delay, turns
// unhealthy after -fail-health-after, and exits with -exit-code after
// -crash-after. With -health it is its own exec-form healthcheck: it probes
// /healthz on the -listen port and exits 0 or 1, because a scratch image has
// no curl or wget. A container serving on another port than :8080 needs the
// same -listen in its healthcheck: ["CMD", "/demoapp", "-health", "-listen", ":9090"].
// With -drain it is its own pre_stop, ["CMD", "/demoapp", "-drain"]: it asks
// /drain on the -listen port (a scratch image has no /tmp to touch a file
// in, so the signal is an HTTP call on loopback). The serving process then
// leaves a proxy's rotation without failing a request:
//   - /healthz fails from then on, so the engine reports it unhealthy and a
//     proxy that routes by health (Caddy's `dynamic rollcall`, Traefik's
//     Docker provider) stops sending to it;
//   - it goes on accepting and answering, in-flight requests and new ones
//     alike, since the proxy may still send some until it has seen the
//     health change. It never closes its listener before its stop: closing
//     a listener resets the connections the kernel has accepted and the
//     process has not, and a POST a proxy sent on one is a failed request
//     it cannot retry;
//   - every answer from then on carries "Connection: close", so the proxy
//     drops each connection after its answer instead of the server closing
//     idle ones under it at the stop.
//
// On SIGTERM or SIGINT it stops accepting, lets in-flight requests finish
// (up to 10s) and exits 0, which is what a zero-downtime roll relies on
// (the proxy no longer dials it by then: rollcall stops an old container
// only after its drain).
// -graceful=false turns that off, for the control run of the zero-downtime
// test: it then closes every connection at once, in-flight ones too.
// It logs one line per start and per shutdown to stdout, and every failed
// health answer to stderr.
//
// With -fetch URL it is an HTTP client instead, for a scratch image that has
// no curl: it sends one request (-method, -data), prints the answer's status
// and body, and exits 0 on any answer, 1 on none (refused, timed out). The
// tests run it on a workload network to show what a workload can reach.
//
// It imports only the standard library: it is linked into rollcall and into
// the demo image, and must not pull the engine, the console or moby along.
package demoapp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// config is the parsed command line.
type config struct {
	listen          string
	version         string
	readyDelay      time.Duration
	failHealthAfter time.Duration
	crashAfter      time.Duration
	exitCode        int
	health          bool
	drain           bool
	graceful        bool
	latency         time.Duration
	failEvery       int
	fetch           string // -fetch URL: one request, then exit
	method          string
	data            string
	journal         string // -journal FILE: a line per start, served on /journal
}

// usageHead is what -help says before the switches.
const usageHead = `Usage: demoapp [switches]

The tiny HTTP workload of rollcall's demo, tests and examples (a FROM scratch
image, rollcall-demoapp:<version>). It serves:
  GET|POST /       "<version> <hostname>" (after -latency; 500 to every -fail-every'th)
  GET /healthz     200 while ready, healthy and not draining, 503 otherwise
  GET|POST /drain  starts draining: /healthz fails from then on, / still answers
It is its own healthcheck (-health), pre_stop (-drain) and HTTP client (-fetch),
since a scratch image has no shell, curl or wget.

Switches:
`

const shutdownGrace = 10 * time.Second

// Main runs the program with args (without the program name) and returns
// its exit code: 0 after a clean shutdown or a healthy -health probe, 1 on
// failure, 2 on a bad command line. It returns only once the server has shut
// down; -crash-after exits the process on its own.
func Main(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if cfg.health {
		if err := probe(cfg.listen, "/healthz", time.Second); err != nil {
			fmt.Fprintln(stderr, "demoapp: health:", err)
			return 1
		}
		return 0
	}
	if cfg.fetch != "" {
		return fetch(cfg, stdout, stderr)
	}
	if cfg.drain {
		if err := probe(cfg.listen, "/drain", time.Second); err != nil {
			fmt.Fprintln(stderr, "demoapp: drain:", err)
			return 1
		}
		fmt.Fprintln(stdout, "demoapp: draining")
		return 0
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	if cfg.crashAfter > 0 {
		time.AfterFunc(cfg.crashAfter, func() {
			fmt.Fprintf(stderr, "demoapp: crashing after %s with exit code %d\n", cfg.crashAfter, cfg.exitCode)
			os.Exit(cfg.exitCode)
		})
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		fmt.Fprintln(stderr, "demoapp:", err)
		return 1
	}
	hostname, _ := os.Hostname()
	if cfg.journal != "" {
		if err := appendLine(cfg.journal, cfg.version+" "+hostname); err != nil {
			fmt.Fprintln(stderr, "demoapp: journal:", err)
			return 1
		}
	}
	a := newApp(cfg, hostname, time.Now(), stderr)
	if err := serve(ctx, ln, a, stdout, serveOptions{graceful: cfg.graceful}); err != nil {
		fmt.Fprintln(stderr, "demoapp:", err)
		return 1
	}
	return 0
}

// appendLine appends line to the file at path, creating it, and syncs it.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// parseFlags parses args; errors and usage go to errOut.
func parseFlags(args []string, errOut io.Writer) (config, error) {
	var cfg config
	fs := newFlagSet(&cfg, errOut)
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if cfg.failEvery < 0 {
		err := fmt.Errorf("-fail-every must not be negative, got %d", cfg.failEvery)
		fmt.Fprintln(errOut, "demoapp:", err)
		return config{}, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments: %q", fs.Args())
		fmt.Fprintln(errOut, "demoapp:", err)
		return config{}, err
	}
	for name, d := range map[string]time.Duration{"ready-delay": cfg.readyDelay, "fail-health-after": cfg.failHealthAfter, "crash-after": cfg.crashAfter, "latency": cfg.latency} {
		if d < 0 {
			err := fmt.Errorf("-%s must not be negative, got %s", name, d)
			fmt.Fprintln(errOut, "demoapp:", err)
			return config{}, err
		}
	}
	return cfg, nil
}

// newFlagSet is demoapp's command line, read into cfg; errors and usage
// go to errOut.
func newFlagSet(cfg *config, errOut io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("demoapp", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.listen, "listen", ":8080", "address to serve HTTP on")
	fs.StringVar(&cfg.version, "version", "v1", "version string answered on /")
	fs.DurationVar(&cfg.readyDelay, "ready-delay", 0, "health fails until this long after start")
	fs.DurationVar(&cfg.failHealthAfter, "fail-health-after", 0, "health fails from this long after start on (0: never)")
	fs.DurationVar(&cfg.crashAfter, "crash-after", 0, "exit with -exit-code this long after start (0: never)")
	fs.IntVar(&cfg.exitCode, "exit-code", 1, "exit code used by -crash-after")
	fs.BoolVar(&cfg.health, "health", false, "probe /healthz on the -listen port and exit 0 if healthy, else 1")
	fs.BoolVar(&cfg.drain, "drain", false, "tell the app on the -listen port to drain (its health fails from then on) and exit 0 if it took it, else 1")
	fs.BoolVar(&cfg.graceful, "graceful", true, "on SIGTERM finish in-flight requests before exiting; false closes them at once")
	fs.DurationVar(&cfg.latency, "latency", 0, "how long each answer on / takes")
	fs.IntVar(&cfg.failEvery, "fail-every", 0, "answer 500 to every Nth request on / (0: never): a bad version for a canary to catch")
	fs.StringVar(&cfg.fetch, "fetch", "", "send one request to this http URL, print the answer's status and body and exit 0, or 1 with no answer (refused, timed out after 3s)")
	fs.StringVar(&cfg.method, "method", http.MethodGet, "the method of -fetch")
	fs.StringVar(&cfg.data, "data", "", "the body of -fetch, sent as application/json")
	fs.StringVar(&cfg.journal, "journal", "", "append \"<version> <hostname>\" to this file at each start (exit 1 if it cannot) and serve the file on GET /journal: data that must outlive the container")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	return fs
}

// app answers the endpoints. now is a field so tests can move time.
type app struct {
	cfg      config
	hostname string
	started  time.Time
	now      func() time.Time
	errLog   io.Writer
	draining atomic.Bool
	served   atomic.Int64 // requests on /, for -fail-every
}

func newApp(cfg config, hostname string, started time.Time, errLog io.Writer) *app {
	return &app{cfg: cfg, hostname: hostname, started: started, now: time.Now, errLog: errLog}
}

// healthy reports whether /healthz answers 200, and why not otherwise.
func (a *app) healthy() (bool, string) {
	up := a.now().Sub(a.started)
	switch {
	case a.draining.Load():
		return false, "draining"
	case up < a.cfg.readyDelay:
		return false, fmt.Sprintf("not ready: up %s, ready after %s", up.Round(time.Millisecond), a.cfg.readyDelay)
	case a.cfg.failHealthAfter > 0 && up >= a.cfg.failHealthAfter:
		return false, fmt.Sprintf("failing: up %s, unhealthy from %s on", up.Round(time.Millisecond), a.cfg.failHealthAfter)
	}
	return true, ""
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/drain" && (r.Method == http.MethodGet || r.Method == http.MethodPost) {
		if !a.draining.Swap(true) {
			fmt.Fprintln(a.errLog, "demoapp: draining: health fails from now on; still serving until the stop")
		}
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, "draining")
		return
	}
	if a.draining.Load() {
		// The client drops this connection after the answer: no idle
		// connection is left for the server to close under a request.
		w.Header().Set("Connection", "close")
	}
	if r.Method == http.MethodPost && r.URL.Path == "/" {
		io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	} else if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		if r.URL.Path == "/" {
			w.Header().Set("Allow", "GET, HEAD, POST")
		}
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		if a.cfg.latency > 0 {
			select {
			case <-time.After(a.cfg.latency):
			case <-r.Context().Done():
				return
			}
		}
		if n := a.served.Add(1); a.cfg.failEvery > 0 && n%int64(a.cfg.failEvery) == 0 {
			http.Error(w, a.cfg.version+" "+a.hostname+": failing one request in "+strconv.Itoa(a.cfg.failEvery), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "%s %s\n", a.cfg.version, a.hostname)
	case "/journal":
		b, err := os.ReadFile(a.cfg.journal)
		if a.cfg.journal == "" || err != nil {
			http.Error(w, "no journal", http.StatusNotFound)
			return
		}
		w.Write(b)
	case "/healthz":
		ok, why := a.healthy()
		if !ok {
			fmt.Fprintln(a.errLog, "demoapp: health:", why)
			http.Error(w, why, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, "ok")
	default:
		http.NotFound(w, r)
	}
}

// serveOptions shape how serve ends.
type serveOptions struct {
	// graceful: once ctx ends, finish in-flight requests (up to
	// shutdownGrace); otherwise close every connection at once.
	graceful bool
}

// serve answers on ln until ctx ends, then drains in-flight requests; not
// graceful, it closes them at once.
func serve(ctx context.Context, ln net.Listener, h http.Handler, out io.Writer, o serveOptions) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	fmt.Fprintf(out, "demoapp: serving on %s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	if !o.graceful {
		srv.Close()
		<-served
		fmt.Fprintln(out, "demoapp: closed every connection (-graceful=false)")
		return nil
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(out, "demoapp: shut down")
	return nil
}

// fetchTimeout bounds -fetch: an address that drops packets is no answer.
const fetchTimeout = 3 * time.Second

// fetch is -fetch: one request, its answer's status line and body (at most
// 4 KiB) on stdout; exit 0 on any answer, 1 on none.
func fetch(cfg config, stdout, stderr io.Writer) int {
	var body io.Reader
	if cfg.data != "" {
		body = strings.NewReader(cfg.data)
	}
	req, err := http.NewRequest(cfg.method, cfg.fetch, body)
	if err != nil {
		fmt.Fprintln(stderr, "demoapp: fetch:", err)
		return 1
	}
	if cfg.data != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	c := &http.Client{Timeout: fetchTimeout, Transport: &http.Transport{}} // no proxy from the environment
	resp, err := c.Do(req)
	if err != nil {
		fmt.Fprintln(stderr, "demoapp: fetch:", err)
		return 1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	fmt.Fprintf(stdout, "%s\n%s\n", resp.Status, b)
	return 0
}

// probe asks path (/healthz, /drain) on the loopback port of listen, so the
// call runs inside the container's own network namespace.
func probe(listen, path string, timeout time.Duration) error {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("parse -listen %q: %w", listen, err)
	}
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get("http://" + net.JoinHostPort("127.0.0.1", port) + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	return nil
}
