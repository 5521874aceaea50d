package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
)

// TestRealEngineOperatorRollbackThroughCaddy (issue 19 item 3): an operator
// rollback (the console's r) mid-roll, through Caddy with clients sending
// POSTs back to back, stops the new container with Diff's own stop: its
// pre_stop exec'd and the drain waiting for Caddy to let go. Not one request
// fails, and every drain ends "released".
func TestRealEngineOperatorRollbackThroughCaddy(t *testing.T) {
	m := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	caddy := caddyImage(t, ctx)
	prefix := dockertest.Prefix(t)
	image, _ := dockertest.DemoappImage(t, "v1")
	dir := t.TempDir()
	bin := buildRollcall(t, ctx, dir)

	network, url, admin := startCaddy(t, ctx, caddy, prefix)

	file := filepath.Join(dir, "rollcall.yaml")
	base := proxyWorkload{prefix: prefix, image: image, network: network, admin: admin, strategy: "rolling", drain: true, healthDeadline: "30s"}
	write := func(version string) {
		w := base
		w.version = version
		if err := os.WriteFile(file, []byte(w.yaml()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("v1")
	if res := runBinary(t, ctx, bin, "apply", "--yes", "--timeout", "3m", "-f", file); res.code != exitOK {
		t.Fatalf("first apply: exit %d\n%s", res.code, res.stderr)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if v, err := post(ctx, http.DefaultClient, url); err == nil && v == "v1" {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("no answer through Caddy 30s after the first apply: %v", err)
		}
	}

	// A step-mode session, as the console's: v2 desired, one start approved.
	write("v2")
	var logs syncBuffer
	s := session.New(session.Options{
		Client: m, Source: source.File(file), Mode: session.ModeStep, User: "tester",
		LockPath: filepath.Join(dir, "rollcall.lock"), StateDir: filepath.Join(dir, "state"), Settle: -1,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	sctx, scancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(sctx) }()
	defer func() {
		scancel()
		if err := <-done; err != nil {
			t.Errorf("session: %v", err)
		}
	}()
	w := &sessionWatch{t: t, s: s}
	await := w.await
	var start reconcile.Step
	await("the start of v2", time.Minute, func(sn session.Snapshot) bool {
		for _, st := range sn.Plan.Executable() {
			if st.Action == reconcile.ActStart && sn.Fresh {
				start = st
				return true
			}
		}
		return false
	})
	s.Do(session.ApproveStep{Key: start.Key()})
	var newID string
	await("the new container healthy and routed by Caddy", 2*time.Minute, func(sn session.Snapshot) bool {
		for _, c := range sn.Containers {
			if c.Name == start.Container && c.State == docker.StateRunning && c.Health == docker.HealthHealthy {
				if r, ok := sn.Proxy.Route(c.ID); ok && r.Routed {
					newID = c.ID
					return true
				}
			}
		}
		return false
	})

	stop := make(chan struct{})
	got := make(chan phaseResult, 1)
	pctx, pcancel := context.WithTimeout(ctx, proxyPhaseDeadline)
	defer pcancel()
	go func() { got <- traffic(pctx, "operator rollback", url, proxyClients, maxPerClient, stop) }()
	time.Sleep(time.Second) // the clients reach both versions before the rollback
	s.Do(session.Rollback{Workload: "web"})
	await("the rollback done", 2*time.Minute, func(sn session.Snapshot) bool {
		for _, f := range sn.Facts {
			if f.Kind == session.FactRollbackEnded && f.RollbackEnd != nil && f.RollbackEnd.Workload == "web" {
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // and after: Caddy's refresh of "web"
	close(stop)
	res := <-got
	t.Log(res)
	for _, e := range res.firstErrs {
		t.Logf("  failed: %s", e)
	}
	if res.failures > 0 || res.requests < minPerScenario {
		t.Errorf("%d of %d requests failed through Caddy during the rollback; want 0 of at least %d", res.failures, res.requests, minPerScenario)
	}
	if res.versions["v2"] == 0 {
		t.Errorf("no answer from v2 before the rollback (%v): the rollback stopped nothing that served", res.versions)
	}

	var stops, released int
	for _, line := range strings.Split(logs.String(), "\n") {
		var e struct {
			Msg, Action, Container, Ended string
			PreStopRan                    bool `json:"pre_stop_ran"`
		}
		if json.Unmarshal([]byte(line), &e) != nil {
			continue
		}
		switch {
		case e.Msg == "step started" && e.Action == "stop":
			stops++
			if e.Container != start.Container {
				t.Errorf("the rollback stopped %s, want only %s", e.Container, start.Container)
			}
		case e.Msg == "drained":
			if e.Ended != "released" || !e.PreStopRan {
				t.Errorf("drain of %s ended %q, pre_stop ran %v; want released by Caddy after its pre_stop", e.Container, e.Ended, e.PreStopRan)
			}
			released++
		}
	}
	if stops != 1 || released != 1 {
		t.Errorf("%d stop(s), %d drain(s) released; want the new container's one, drained\n%s", stops, released, logs.String())
	}
	if _, err := m.Inspect(ctx, newID); err == nil {
		t.Errorf("the new container %s is still there after the rollback", start.Container)
	}
}

// sessionWatch follows a session's snapshots in a real-engine test: await
// waits, bounded, for one that meets cond, asking for a refresh each
// second that brings none; last is the latest seen.
type sessionWatch struct {
	t    *testing.T
	s    *session.Session
	last session.Snapshot
}

func (w *sessionWatch) await(what string, limit time.Duration, cond func(session.Snapshot) bool) {
	w.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case w.last = <-w.s.Snapshots():
			if cond(w.last) {
				return
			}
		case <-time.After(time.Second):
			w.s.Do(session.Refresh{})
		case <-deadline:
			w.t.Fatalf("waiting for %s: gave up; plan:\n%s", what, w.last.Plan)
		}
	}
}
