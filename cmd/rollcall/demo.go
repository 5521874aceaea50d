package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/demo"
	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/source"
)

// newDemoCmd is `rollcall demo`: the embedded default.
func newDemoCmd(e env, g *globals) *cobra.Command {
	var clean, simulated, headless bool
	var hosts int
	o := consoleOpts{}
	c := &cobra.Command{
		Use:   "demo [--clean] [--simulated] [--hosts N [--headless]]",
		Short: "Stage an out-of-date demo state and open the console on it",
		Long:  demoLong(demo.Prefix, false),
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			usage := func(err error) error { return &usageError{err: err, command: c.CommandPath()} }
			switch {
			case c.Flags().Changed("hosts") && (hosts < minDemoHosts || hosts > maxDemoHosts):
				return usage(fmt.Errorf("--hosts %d: the demo runs on %d to %d simulated hosts", hosts, minDemoHosts, maxDemoHosts))
			case hosts > 0 && clean:
				return usage(errors.New("--clean goes without --hosts: the simulated hosts live and go with the process"))
			case hosts > 0:
				return runDemoHosts(ctx, e, g, hosts, o, headless)
			case headless:
				return usage(errors.New("--headless goes with --hosts N"))
			}
			client, closeClient, why := demoEngine(ctx, e, g, simulated)
			defer closeClient()
			prefix := demoPrefix(g)
			// Staging and cleaning act like any session: under the host
			// lock of the prefix, and only on its own managed containers.
			lock, err := hostLock(ctx, client, prefix)
			if err != nil {
				return err
			}
			defer lock.Release()
			dir := demo.Dir(prefix)
			if clean {
				n, err := demo.Clean(ctx, client, prefix, dir)
				fmt.Fprintf(e.stderr, "removed %d demo container(s) of prefix %s\n", n, termSafe(prefix))
				return err
			}
			if why != "" {
				fmt.Fprintf(e.stderr, "%s: running the demo on the in-memory fake engine (simulated)\n", why)
			}
			j, err := journal.Open(g.journal, journal.Options{})
			if err != nil {
				return withHint(fmt.Errorf("journal: %w", err), "pass --journal PATH")
			}
			defer j.Close()
			path, err := demo.Stage(ctx, client, demo.StageOptions{Prefix: prefix, Dir: dir, Lock: lock, Journal: j, Log: e.stderr})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "desired state: %s (edit it while the console runs)\n", path)
			dg := *g
			dg.prefix = prefix
			return runConsole(ctx, e, &dg, client, source.File(path), o, lock)
		},
	}
	c.Flags().BoolVar(&clean, "clean", false, "remove every container the demo made under its prefix, and its desired file")
	c.Flags().BoolVar(&simulated, "simulated", false, "use the in-memory fake engine even when a Docker engine answers")
	c.Flags().BoolVar(&o.watch, "watch", false, "open the console read-only")
	c.Flags().BoolVar(&o.auto, "auto", false, "let the roll run by itself")
	c.Flags().IntVar(&hosts, "hosts", 0, fmt.Sprintf("stage the demo on N simulated engines (%d-%d, the in-memory fake) and open the console of several hosts on them", minDemoHosts, maxDemoHosts))
	c.Flags().BoolVar(&headless, "headless", false, "with --hosts: roll the demo fleet out without the console, printing apply's progress lines")
	c.MarkFlagsMutuallyExclusive("watch", "auto")
	// The help names the prefix the demo would use, --prefix's if given.
	help := c.HelpFunc()
	c.SetHelpFunc(func(c *cobra.Command, args []string) {
		c.Long = demoLong(demoPrefix(g), g.prefix != "")
		help(c, args)
	})
	return c
}

// demoPrefix is the label prefix the demo runs under: --prefix, else
// demo.Prefix.
func demoPrefix(g *globals) string {
	if g.prefix != "" {
		return g.prefix
	}
	return demo.Prefix
}

// demoLong is demo's help for prefix, the one it would run under; fromFlag
// says --prefix gave it.
func demoLong(prefix string, fromFlag bool) string {
	where := "the prefix " + termSafe(prefix) + " (--prefix changes it)"
	if fromFlag {
		where = "the prefix " + termSafe(prefix) + " (from --prefix)"
	}
	return fmt.Sprintf(`demo builds the demoapp images v1 and v2 on the local engine (FROM scratch, no
registry), starts under %s
an out-of-date state (3 web replicas of v1, a crashed worker, a worker with
an old restart policy, and a workload that is no longer desired), and opens
the console on the desired state, so every kind of step appears. Approve
them with enter.

With no engine reachable, the same scenario runs on the in-memory fake
engine, and the header says "simulated". demo --clean removes all it made.
Staging, the console and --clean all take the host lock of the prefix, so
the demo never acts under another rollcall; and they never touch anything
but containers labelled %s.managed=true.

demo --hosts N stages the same state on N simulated engines (the in-memory
fake, each an engine of its own; the last runs one web replica fewer) and
opens the console of several hosts on a desired file with hosts: and
fleet: (edge-1 the canary, one host per wave, a 10s soak): approve a wave
with w, the whole fleet rollout with A; [ and ] select a host. With
--headless it rolls the fleet out without the console, printing apply's
lines.`, where, termSafe(prefix))
}

// demoEngine connects to the engine, or falls back to the fake one and says
// why.
func demoEngine(ctx context.Context, e env, g *globals, simulated bool) (docker.Client, func(), string) {
	if simulated {
		return demo.NewFake(ctx, 2*time.Second), func() {}, "--simulated"
	}
	c, closeFn, err := connect(ctx, e, g)
	if err != nil {
		return demo.NewFake(ctx, 2*time.Second), func() {}, "no Docker engine answers (" + oneLine(err.Error()) + ")"
	}
	return c, closeFn, ""
}
