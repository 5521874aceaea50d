package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/demo"
	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/state"
)

// newDemoCmd is `rollcall demo`: the embedded default.
func newDemoCmd(e env, g *globals) *cobra.Command {
	var clean, simulated, headless, withRegistry bool
	var hosts int
	o := consoleOpts{}
	c := &cobra.Command{
		Use:   "demo [--clean] [--simulated | --registry] [--hosts N [--headless]]",
		Short: "Stage an out-of-date demo state and open the console on it",
		Long:  demoLong(demo.Prefix, false),
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			ctx := c.Context()
			usage := func(err error) error { return &usageError{err: err, command: c.CommandPath()} }
			switch {
			case withRegistry && (simulated || clean || c.Flags().Changed("hosts")):
				return usage(errors.New("--registry stages the one-host demo on a Docker engine: it goes with neither --simulated, --clean nor --hosts"))
			case c.Flags().Changed("hosts") && (hosts < minDemoHosts || hosts > maxDemoHosts):
				return usage(fmt.Errorf("--hosts %d: the demo runs on %d to %d simulated hosts", hosts, minDemoHosts, maxDemoHosts))
			case clean:
				// --hosts N or not: the several-host demo's files go too,
				// and its simulated hosts went with their process.
				return runDemoClean(ctx, e, g, simulated)
			case hosts > 0:
				return runDemoHosts(ctx, e, g, hosts, o, headless)
			case headless:
				return usage(errors.New("--headless goes with --hosts N"))
			}
			client, closeClient, why := demoEngine(ctx, e, g, simulated)
			defer closeClient()
			var registry string
			if withRegistry {
				if why != "" {
					return fmt.Errorf("demo --registry pushes and pulls through a Docker engine, and %s", why)
				}
				if _, ok := client.(*moby.Moby); !ok {
					return errors.New("demo --registry pushes and pulls through a Docker engine, and this engine is not one")
				}
				// The registry lives in this process: it goes when the
				// demo ends, and demo --clean removes what was pulled from it.
				reg, err := demo.StartRegistry()
				if err != nil {
					return err
				}
				defer reg.Close()
				registry = reg.Host
				fmt.Fprintf(e.stderr, "the demo's registry serves on %s (in this process, until the demo ends)\n", registry)
			}
			prefix := demoPrefix(g)
			dg := *g
			dg.prefix = prefix
			// Staging acts like any session: under the host lock of the
			// prefix, and only on its own managed containers. A simulated
			// run keeps its lock, journal and state in a folder of its own
			// that goes when it ends.
			var lock *session.Lock
			var err error
			if why != "" {
				fmt.Fprintf(e.stderr, "%s: running the demo on the in-memory fake engine (simulated)\n", why)
				run, err := newSimRun()
				if err != nil {
					return err
				}
				defer run.remove()
				dg.journal = run.journal()
				lock, err = run.lock("host")
				if err != nil {
					return err
				}
			} else if lock, err = hostLock(ctx, client, prefix); err != nil {
				return err
			}
			defer lock.Release()
			j, err := journal.Open(dg.journal, journal.Options{})
			if err != nil {
				return withHint(fmt.Errorf("journal: %w", err), "pass --journal PATH")
			}
			defer j.Close()
			path, err := demo.Stage(ctx, client, demo.StageOptions{Prefix: prefix, Dir: demo.Dir(prefix), Lock: lock, Journal: j, Log: e.stderr, Registry: registry})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "desired state: %s (edit it while the console runs)\n", path)
			return runConsole(ctx, e, &dg, client, source.File(path), o, lock)
		},
	}
	c.Flags().BoolVar(&clean, "clean", false, "remove all the demo made: its containers under its prefix, its images, its desired files and its state files (with --hosts too)")
	c.Flags().BoolVar(&simulated, "simulated", false, "use the in-memory fake engine even when a Docker engine answers")
	c.Flags().BoolVar(&withRegistry, "registry", false, "serve a registry of the demo's own on 127.0.0.1 in this process, push the demo's images to it, and run web from it: its roll begins with a pull")
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
engine, and the header says "simulated"; a simulated run keeps its journal, state and
locks in a folder of its own that goes when it ends. demo --clean removes
all the demo made: its containers, its images (the tags above and their
older builds), its desired files, the several-host demo's too, and its
state files, and the copies of the images pulled from a demo's registry.

demo --registry serves a registry of its own on 127.0.0.1 (a port the
system picks; the engine pulls from loopback over plain HTTP), pushes the
images there, and runs web from it (127.0.0.1:PORT/ and the v1 tag):
staging pulls v1, and the roll to v2 begins with its pull, before anything
of web starts or stops. The registry lives in this process and goes with it.
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

// simRunBase is where a simulated run's folder is made; "" is the system's
// temporary folder. Tests set it.
var simRunBase = ""

// simRun is where a simulated demo keeps what its sessions write: the
// journal, the revisions, holds and pins, the host locks. A simulated
// engine lives and dies with its process, so all of it goes when the run
// ends, and none of it reaches the real journal or state folder.
type simRun struct{ dir string }

func newSimRun() (*simRun, error) {
	dir, err := os.MkdirTemp(simRunBase, "rollcall-demo-run-")
	if err != nil {
		return nil, fmt.Errorf("the simulated demo's state folder: %w", err)
	}
	return &simRun{dir: dir}, nil
}

// journal is the run's journal file.
func (r *simRun) journal() string { return filepath.Join(r.dir, "journal.jsonl") }

// lock takes a host lock of the run's own, named name.
func (r *simRun) lock(name string) (*session.Lock, error) {
	lk, _, err := state.TakeLock(filepath.Join(r.dir, name+".lock"), journal.CurrentUser(), time.Now())
	return lk, err
}

// remove removes the run's folder and all in it.
func (r *simRun) remove() { _ = os.RemoveAll(r.dir) }

// runDemoClean is demo --clean: on the engine (unless --simulated, or none
// answers), the demo's containers and images, under the host lock of the
// prefix; and the demo's files, state and unheld lock files.
func runDemoClean(ctx context.Context, e env, g *globals, simulated bool) error {
	prefix := demoPrefix(g)
	var client docker.Client
	if !simulated {
		c, closeClient, err := connect(ctx, e, g)
		if err != nil {
			fmt.Fprintf(e.stderr, "no Docker engine answers (%s): removing the demo's files only\n", termSafe(oneLine(err.Error())))
		} else {
			defer closeClient()
			lock, err := hostLock(ctx, c, prefix)
			if err != nil {
				return err
			}
			defer lock.Release()
			client = c
		}
	}
	out, err := demo.Clean(ctx, client, demo.CleanOptions{Prefix: prefix, StateDir: g.stateDir(), LockDir: demo.LockDir(prefix)})
	for _, ref := range out.Images {
		fmt.Fprintf(e.stderr, "removed image %s\n", termSafe(ref))
	}
	for _, path := range out.Files {
		fmt.Fprintf(e.stderr, "removed %s\n", termSafe(path))
	}
	fmt.Fprintf(e.stderr, "removed %d demo container(s) of prefix %s, %d image(s), %d file(s)\n",
		out.Containers, termSafe(prefix), len(out.Images), len(out.Files))
	return err
}
