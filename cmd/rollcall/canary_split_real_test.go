package main

// The canary's split on the real engine through real Caddy (issue 26 rows
// 1, 2, 9, 10, 20; DESIGN §12): the canary serves nothing before a step's
// share sends it requests, a Caddy restarted mid-step has the split set
// again and the step judged on a window of its own, and a canary whose
// share cannot be set to 0 (the admin API cut) is stopped through the
// engine. rollcall reaches Caddy's admin API, and the clients its front,
// through relays of the test's own: a relay can be cut, and it finds Caddy
// again where a restart put its ports.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/proxy"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
)

// tcpRelay forwards every connection it accepts on loopback to where
// upstream says (resolved again when a dial fails), until cut.
type tcpRelay struct {
	ln       net.Listener
	upstream func() (network, addr string)
	mu       sync.Mutex
	network  string
	addr     string
	conns    map[net.Conn]bool
	cut      bool
}

func newRelay(t *testing.T, upstream func() (string, string)) *tcpRelay {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &tcpRelay{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	r.network, r.addr = upstream()
	go r.serve()
	t.Cleanup(r.close)
	return r
}

func (r *tcpRelay) url() string { return "http://" + r.ln.Addr().String() }

func (r *tcpRelay) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.pipe(c)
	}
}

func (r *tcpRelay) pipe(c net.Conn) {
	r.mu.Lock()
	network, addr, cut := r.network, r.addr, r.cut
	r.mu.Unlock()
	if cut {
		c.Close()
		return
	}
	up, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		network, addr = r.upstream()
		r.mu.Lock()
		r.network, r.addr = network, addr
		r.mu.Unlock()
		if up, err = net.DialTimeout(network, addr, 2*time.Second); err != nil {
			c.Close()
			return
		}
	}
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	r.conns[c], r.conns[up] = true, true
	r.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); done <- struct{}{} }()
	go func() { io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	r.mu.Lock()
	delete(r.conns, c)
	delete(r.conns, up)
	r.mu.Unlock()
}

// close cuts the relay: no new connection, and every open one closed.
func (r *tcpRelay) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cut = true
	r.ln.Close()
	for c := range r.conns {
		c.Close()
	}
}

// TestRealEngineCanarySplitThroughCaddy: see the file comment.
func TestRealEngineCanarySplitThroughCaddy(t *testing.T) {
	m := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	caddy := caddyImage(t, ctx)
	prefix := dockertest.Prefix(t)
	image, _ := dockertest.DemoappImage(t, "v1")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)
	network, _, caddyAdmin := startCaddy(t, ctx, caddy, prefix)

	// Where Caddy's ports are now: a restart may publish them anew.
	port := func(p string) (string, string) {
		out, err := dockertest.CLI(ctx, "port", prefix+"-caddy", p)
		if err != nil {
			return "tcp", "127.0.0.1:1" // not up yet: the dial fails, and the next one asks again
		}
		return "tcp", strings.Split(out, "\n")[0]
	}
	adminNow := func() string { return caddyAdmin } // a unix socket's path does not move
	adminUp := func() (string, string) {
		if p, ok := strings.CutPrefix(caddyAdmin, "unix://"); ok {
			return "unix", p
		}
		return port("2019/tcp")
	}
	if u, err := url.Parse(caddyAdmin); err == nil && u.Scheme == "http" {
		adminNow = func() string { _, a := port("2019/tcp"); return "http://" + a }
	}
	admin := newRelay(t, adminUp)
	front := newRelay(t, func() (string, string) { return port("8080/tcp") })
	frontURL := front.url() + "/"

	// web's cohorts as Caddy has them, read from Caddy itself.
	cohorts := func() (proxy.WorkloadCohorts, error) {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		defer ccancel()
		all, err := proxy.Cohorts(cctx, nil, adminNow())
		if err != nil {
			return proxy.WorkloadCohorts{}, err
		}
		for _, c := range all {
			if c.Prefix == prefix && c.Workload == "web" {
				return c, nil
			}
		}
		return proxy.WorkloadCohorts{}, errors.New("no web cohorts")
	}
	awaitSplit := func(what string, cond func(*proxy.Split) bool) proxy.WorkloadCohorts {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			c, err := cohorts()
			if err == nil && cond(c.Split) {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: split %+v, %v", what, c.Split, err)
			}
		}
	}

	file := filepath.Join(dir, "rollcall.yaml")
	base := canaryWorkload{prefix: prefix, image: image, network: network, admin: admin.url(), args: []string{"-latency", demoLatency}}
	write := func(w canaryWorkload) {
		t.Helper()
		if err := os.WriteFile(file, []byte(w.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v1 := base
	v1.version = "v1"
	write(v1)
	if res := runBinary(t, ctx, bin, "apply", "--yes", "--timeout", "3m", "-f", file); res.code != exitOK {
		t.Fatalf("first apply: exit %d\n%s", res.code, res.stderr)
	}

	// Rows 1, 2, 9, 20: a step-mode session, as the console's, with a
	// canary answering 500 to one request in ten, and on_insufficient_traffic
	// pass, so that a step judged on lost counters would pass.
	bad := base
	bad.version, bad.args = "v2", append(bad.args, "-fail-every", "10")
	bad.canary = "{steps: [{share: 20%, for: 30s}], analysis: {interval: 3s, max_error_rate: 2%, min_requests: 30, on_insufficient_traffic: pass}}"
	write(bad)
	stop := make(chan struct{})
	tally, wait := sendPOSTs(ctx, frontURL, 2, stop)
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wait()
	}()
	var logs syncBuffer
	s := session.New(session.Options{
		Client: m, Source: source.File(file), Mode: session.ModeStep, User: "tester",
		LockPath: filepath.Join(dir, "rollcall.lock"), StateDir: filepath.Join(dir, "state"), Settle: -1,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	ended := false
	endSession := func() {
		if ended {
			return
		}
		ended = true
		scancel()
		if err := <-done; err != nil {
			t.Errorf("session: %v", err)
		}
	}
	defer endSession()
	w := &sessionWatch{t: t, s: s}
	await := w.await
	stepOf := func(action reconcile.Action) func(session.Snapshot) bool {
		return func(sn session.Snapshot) bool {
			for _, st := range sn.Plan.Executable() {
				if st.Action == action && sn.Fresh {
					return true
				}
			}
			return false
		}
	}
	keyOf := func(action reconcile.Action) reconcile.Step {
		for _, st := range w.last.Plan.Executable() {
			if st.Action == action {
				return st
			}
		}
		t.Fatalf("no %s step in the plan:\n%s", action, w.last.Plan)
		return reconcile.Step{}
	}
	await("the canary's start", time.Minute, stepOf(reconcile.ActStart))
	start := keyOf(reconcile.ActStart)
	s.Do(session.ApproveStep{Key: start.Key()})
	await("the canary healthy, its first step waiting for approval", 2*time.Minute, stepOf(reconcile.ActCanary))
	step := keyOf(reconcile.ActCanary)
	for _, c := range w.last.Containers {
		if c.Name == start.Container && (c.State != docker.StateRunning || c.Health != docker.HealthHealthy) {
			t.Fatalf("canary %s %s %s, want running and healthy before its step", c.Name, c.State, c.Health)
		}
	}
	// Caddy routes to the healthy canary (its source lists it) while the
	// clients send; the canary must answer none of it before its step.
	var before proxy.WorkloadCohorts
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		c, err := cohorts()
		if err == nil && len(c.Stable.Containers)+len(c.Canary.Containers) == 3 && c.Stable.Requests+c.Canary.Requests >= 200 {
			before = c // Caddy lists the canary, in whichever cohort
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Caddy never listed the canary beside 200 requests: %+v, %v", c, err)
		}
	}
	tally.mu.Lock()
	v2Before := tally.ok["v2"] + tally.failed["v2"]
	tally.mu.Unlock()
	t.Logf("before the first step: split %+v; canary %d requests, stable %d; clients %s", before.Split, before.Canary.Requests, before.Stable.Requests, tally)
	if before.Split == nil || before.Split.Share != 0 || before.Split.Spec != step.Canary.Spec || len(before.Canary.Containers) != 1 || before.Canary.Requests != 0 || v2Before != 0 {
		t.Errorf("before the first step: split %+v, %d canary requests counted, %d answers from v2; want a share-0 split of spec %s and not one request to the canary",
			before.Split, before.Canary.Requests, v2Before, step.Canary.Spec)
	}

	// Row 9: Caddy restarted once the step's share is set.
	s.Do(session.ApproveStep{Key: step.Key()})
	awaitSplit("the first step's share", func(sp *proxy.Split) bool { return sp != nil && sp.Share == 0.2 })
	if _, err := dockertest.CLI(ctx, "restart", "-t", "0", prefix+"-caddy"); err != nil {
		t.Fatal(err)
	}
	var judged *session.StepResult
	await("the canary step's end", 3*time.Minute, func(sn session.Snapshot) bool {
		for i := range sn.Recent {
			if r := sn.Recent[i]; r.Step.Action == reconcile.ActCanary && r.Judgement != nil {
				judged = &r
				return true
			}
		}
		return false
	})
	j := judged.Judgement
	t.Logf("after Caddy's restart: %s, split lost %d times: %s (err %q)", j.Verdict, j.SplitLosses, j, judged.Err)
	if j.Verdict != reconcile.VerdictFail || j.Check != reconcile.CheckErrorRate || j.SplitLosses < 1 {
		t.Errorf("the step after Caddy's restart: %s on %s, split lost %d times; want it failed on max_error_rate on a window after the split was set again",
			j.Verdict, j.Check, j.SplitLosses)
	}
	lostFact := false
	for _, f := range w.last.Facts {
		lostFact = lostFact || f.Kind == session.FactSplitLost
	}
	if !lostFact {
		t.Errorf("no fact says the split was lost and set again")
	}
	await("the canary rolled back", 2*time.Minute, func(sn session.Snapshot) bool {
		n := 0
		for _, c := range sn.Containers {
			if c.Name == start.Container {
				n++
			}
		}
		return n == 0 && sn.Running == nil
	})
	endSession()
	close(stop)
	wait()
	t.Logf("step mode and Caddy's restart: clients %s", tally)

	// Row 10: the admin API cut once a good canary's share is set; apply
	// must leave no canary serving when it ends.
	good := base
	good.version = "v3"
	good.canary = "{steps: [{share: 20%, for: 60s}], analysis: {interval: 2s, max_error_rate: 2%, min_requests: 30}}"
	write(good)
	stop = make(chan struct{})
	tally, wait = sendPOSTs(ctx, frontURL, 2, stop)
	applied := make(chan binResult, 1)
	go func() { applied <- runBinary(t, ctx, bin, "apply", "--yes", "--timeout", "45s", "-f", file) }()
	awaitSplit("the v3 canary's share", func(sp *proxy.Split) bool { return sp != nil && sp.Share == 0.2 })
	admin.close()
	cut := time.Now()
	// The failed step stops the canary itself, while apply still runs;
	// the session's end is only the last resort.
	v3Running := func() bool {
		out, err := dockertest.CLI(ctx, "ps", "-q", "--filter", "status=running", "--filter", "label="+docker.VersionLabel(prefix)+"=v3")
		return err != nil || strings.TrimSpace(out) != ""
	}
	var res binResult
	var stoppedAfter time.Duration
wait:
	for {
		select {
		case res = <-applied:
			break wait
		case <-time.After(500 * time.Millisecond):
			if stoppedAfter == 0 && !v3Running() {
				stoppedAfter = time.Since(cut)
			}
		}
	}
	close(stop)
	wait()
	t.Logf("admin API cut: the canary stopped %s after the cut, apply exit %d %s after it; clients %s",
		stoppedAfter.Round(100*time.Millisecond), res.code, time.Since(cut).Round(100*time.Millisecond), tally)
	if stoppedAfter == 0 {
		t.Errorf("the v3 canary was not stopped while apply ran with its admin API cut: the failed step must stop it through the engine")
	}
	if res.code == exitOK {
		t.Errorf("apply with its admin API cut: exit 0, want a failure\n%s", res.stderr)
	}
	if strings.Contains(res.stderr, "canary share set to 0") || !strings.Contains(res.stderr, "could not be set to 0") {
		t.Errorf("apply's log does not say the share could not be set to 0 (or says it was):\n%s", res.stderr)
	}
	out, err := dockertest.CLI(ctx, "ps", "-q", "--filter", "label="+docker.VersionLabel(prefix)+"=v3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "" {
		t.Errorf("a v3 canary still runs after apply ended with its admin API cut: %q", out)
	}
	if c, err := cohorts(); err != nil || len(c.Canary.Containers) != 0 {
		t.Errorf("after the cut: Caddy's canary cohort %+v (%v), want no container", c.Canary.Containers, err)
	} else {
		t.Logf("after the cut: Caddy's split is still %+v (the PUT of share 0 never reached it), its canary cohort empty", c.Split)
	}
}
