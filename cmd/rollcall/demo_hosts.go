package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/demo"
	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// `rollcall demo --hosts N`: the demo on N simulated engines (the
// in-memory fake, each with an engine ID of its own), staged each as the
// demo stages one host, under a desired file with hosts: (the last host
// runs one web replica fewer, so the hosts differ) and fleet: (the first
// host the canary, one host per wave, a short soak), and the console of
// several hosts on it. The hosts' endpoints in the file are never
// dialled: the demo hands the fleet its fakes by name.

const (
	minDemoHosts = 2
	maxDemoHosts = 9
)

// demoSoak is the demo fleet's fleet.wait, so the soak shows; tests
// shorten it.
var demoSoak = 10 * time.Second

// demoHostNames are the names of n demo hosts.
func demoHostNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("edge-%d", i+1)
	}
	return names
}

// newDemoFake is one simulated demo engine: demo.NewFake's, with an
// engine ID of its own (so it is a host of its own), on real time.
func newDemoFake(ctx context.Context, name, run string) *fake.Engine {
	f := fake.New(fake.Options{Endpoint: "fake://rollcall-demo/" + name, EngineID: "rollcall-demo-" + run + "-" + name,
		Seed: time.Now().UnixNano()})
	f.AddImage(demo.ImageV1, "", fake.Behaviour{ReadyAfter: 2 * time.Second})
	f.AddImage(demo.ImageV2, "", fake.Behaviour{ReadyAfter: 2 * time.Second})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.Tick()
			}
		}
	}()
	return f
}

// demoHostsYAML is the desired file of the demo on names: the one-host
// demo's desired state (single), with hosts: and fleet:.
func demoHostsYAML(single string, names []string) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(single, "\n"))
	b.WriteString("\n# Simulated engines: `rollcall demo --hosts` runs them in memory and never\n# dials these endpoints.\nhosts:\n")
	for i, n := range names {
		fmt.Fprintf(&b, "  %s: {endpoint: \"unix:///run/rollcall-demo/%s.sock\"", n, n)
		if i == len(names)-1 {
			b.WriteString(", replicas: {web: 2}")
		}
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "fleet:\n  canary: [%s]\n  batch: 1\n  wait: %s\n  on_failure: pause\n", names[0], demoSoak)
	return b.String()
}

// runDemoHosts stages the demo on n simulated hosts and opens the console
// of several hosts on it (headless: apply's output, with o.headless).
func runDemoHosts(ctx context.Context, e env, g *globals, n int, o consoleOpts, headless bool) error {
	var id [4]byte
	if _, err := rand.Read(id[:]); err != nil {
		return err
	}
	run := hex.EncodeToString(id[:])
	prefix := demoPrefix(g)
	names := demoHostNames(n)
	fakes := map[string]docker.Client{}
	// The simulated hosts' journal, state and locks live in a folder of
	// the run's own, and go with it.
	sim, err := newSimRun()
	if err != nil {
		return err
	}
	defer sim.remove()
	dg := *g
	dg.prefix, dg.journal, dg.lockDir = prefix, sim.journal(), sim.dir
	j, err := journal.Open(dg.journal, journal.Options{})
	if err != nil {
		return withHint(fmt.Errorf("journal: %w", err), "pass --journal PATH")
	}
	fmt.Fprintf(e.stderr, "--hosts %d: running the demo on %d simulated engines (the in-memory fake)\n", n, n)
	dir := demo.Dir(prefix)
	for _, name := range names {
		fakes[name] = newDemoFake(ctx, name, run)
	}
	// Each host is staged as the demo stages one, all at once.
	paths := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			paths[i], errs[i] = stageDemoHost(ctx, fakes[name], prefix, filepath.Join(dir, "hosts", name), j, sim)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("stage the demo on %s: %w", name, errs[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		j.Close()
		return err
	}
	single, err := os.ReadFile(paths[0])
	if err != nil {
		j.Close()
		return err
	}
	fmt.Fprintf(e.stderr, "staged the out-of-date state on %s under prefix %s\n", strings.Join(names, ", "), termSafe(prefix))
	j.Close()
	path := filepath.Join(dir, "fleet.yaml")
	if err := os.WriteFile(path, []byte(demoHostsYAML(string(single), names)), 0o644); err != nil {
		return err
	}
	if headless {
		fmt.Fprintf(e.stderr, "desired state: %s (rolled out once, headless: edits are not followed)\n", path)
	} else {
		fmt.Fprintf(e.stderr, "desired state: %s (edit it while the console runs)\n", path)
	}
	dial := func(_ context.Context, h *spec.Host) (docker.Client, error) {
		if c, ok := fakes[h.Name]; ok {
			return c, nil
		}
		return nil, errors.New("no simulated engine for host " + h.Name + " (the demo's hosts are " + strings.Join(names, ", ") + ")")
	}
	source := source.File(path)
	d, err := source.Load(ctx)
	if err != nil {
		return fmt.Errorf("demo desired state: %w", err) // a bug in this file
	}
	if headless {
		return runDemoHostsHeadless(ctx, e, &dg, d, dial)
	}
	return runFleetConsole(ctx, e, &dg, source, d, dial, o)
}

// stageDemoHost stages the one-host demo on f, under a host lock of the
// simulated run's, let go of once staged: the fleet takes every host's
// lock itself.
func stageDemoHost(ctx context.Context, f docker.Client, prefix, dir string, j *journal.Journal, sim *simRun) (string, error) {
	info, err := f.Info(ctx)
	if err != nil {
		return "", err
	}
	lock, err := sim.lock("stage-" + info.ID)
	if err != nil {
		return "", err
	}
	defer lock.Release()
	return demo.Stage(ctx, f, demo.StageOptions{Prefix: prefix, Dir: dir, Lock: lock, Journal: j})
}

// runDemoHostsHeadless rolls the demo fleet out as apply does, with its
// progress lines: the demo without a terminal (--headless).
func runDemoHostsHeadless(ctx context.Context, e env, g *globals, d *spec.Desired, dial fleet.Dialer) error {
	j, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return withHint(fmt.Errorf("journal: %w", err), "pass --journal PATH")
	}
	defer j.Close()
	out := screenFor(e, g, e.stderr)
	f := fleet.New(fleet.Options{Source: source.Static(d.Source, d), Dial: dial, Mode: session.ModeAuto, Journal: j,
		JournalMode: "demo", Now: e.now, StateDir: g.stateDir(), LockDir: g.lockDir, Unattended: &session.Unattended{AllowMassStop: true}})
	prog := newFleetProgress(out, d.HostNames())
	var verdict fleetOutcome
	last, _, err := driveFleet(ctx, f, e.abandon, func(s fleet.Snapshot) bool {
		prog.see(s)
		if !verdict.done {
			verdict = applyVerdict(s)
		}
		return verdict.done
	})
	if err != nil {
		return err
	}
	if !verdict.done {
		verdict = fleetOutcome{done: true, why: "interrupted; left: " + fleetLeft(last)}
	}
	final := verdict.final(last)
	if verdict.ok() {
		out.printf("%s\n", out.render(out.st.OK, out.st.Glyphs.Done+" "+termSafe(final)))
		return nil
	}
	out.printf("%s\n", out.render(out.st.Bad, out.st.Glyphs.Failed+" "+termSafe(final)))
	return &exitError{code: exitFailed}
}
