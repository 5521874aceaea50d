package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/theme"
	"github.com/rollcall/rollcall/tui"
)

// consoleOpts are the flags of the console (the root command).
type consoleOpts struct {
	desired    desiredFlags
	watch      bool
	auto       bool
	recreate   bool
	skipHealth bool
	shell      string       // what x runs in a container with docker exec -it; "" turns x off
	swarm      docker.Swarm // engine: swarm: the swarm the console drives (swarm.go)
}

// addConsole makes the root command open the console.
func addConsole(root *cobra.Command, e env, g *globals) {
	o := &consoleOpts{}
	fileFlag(root, &o.desired)
	f := root.Flags()
	f.BoolVar(&o.watch, "watch", false, "read-only: watch, never act (for incidents)")
	f.BoolVar(&o.auto, "auto", false, "run each plan as it appears (default: step, each step approved)")
	f.BoolVar(&o.recreate, "recreate", false, "rolling restart: every container counts as stale and rolls slot by slot")
	f.BoolVar(&o.skipHealth, "skip-health", false, "emergency: count running containers healthy at once (shown in red)")
	f.StringVar(&o.shell, "shell", "sh", `the command x runs in the selected container with "docker exec -it" ("" turns x off; never in --watch)`)
	root.MarkFlagsMutuallyExclusive("watch", "auto")
	root.RunE = func(c *cobra.Command, _ []string) error {
		src, err := o.desired.choose(e)
		if err != nil {
			return err
		}
		source, err := src.open()
		if err != nil {
			return err
		}
		// A file with hosts: is the console of several hosts; one that
		// does not load now is the session's to show, as it always was.
		if d, err := source.Load(c.Context()); err == nil && len(d.Hosts) > 0 {
			if err := noDockerHost(g, d); err != nil {
				return err
			}
			if err := checkHosts(d); err != nil {
				return err
			}
			return runFleetConsole(c.Context(), e, g, source, d, fleetDialer(e, baseDir(d.Source)), *o)
		}
		client, closeClient, err := connect(c.Context(), e, g)
		if err != nil {
			return err
		}
		defer closeClient()
		if d, err := source.Load(c.Context()); err == nil {
			if client, o.swarm, err = engineFor(c.Context(), client, d); err != nil {
				return err
			}
		}
		return runConsole(c.Context(), e, g, client, source, *o, nil)
	}
}

// consoleSetup is what every console starts from, one host or several: its
// mode from the flags, the journal it acts under (none when it only
// watches) and its theme.
func consoleSetup(g *globals, o consoleOpts) (session.Mode, *journal.Journal, theme.Name, error) {
	mode := session.ModeStep
	switch {
	case o.watch:
		mode = session.ModeWatch
	case o.auto:
		mode = session.ModeAuto
	}
	name, err := theme.ParseName(g.theme)
	if err != nil {
		return "", nil, "", usageErr(err)
	}
	if mode == session.ModeWatch {
		return mode, nil, name, nil
	}
	j, err := journal.Open(g.journal, journal.Options{})
	if err != nil {
		return "", nil, "", withHint(fmt.Errorf("journal: %w", err), "pass --journal PATH, or --watch to only look")
	}
	return mode, j, name, nil
}

// runConsole opens the console on a session over client and source. lock,
// when not nil, is the host lock the caller holds for the session to act
// under (the demo's).
func runConsole(ctx context.Context, e env, g *globals, client docker.Client, source source.Source, o consoleOpts, lock *session.Lock) error {
	mode, j, name, err := consoleSetup(g, o)
	if err != nil {
		return err
	}
	if j != nil {
		defer j.Close()
	}
	s := session.New(session.Options{
		Client: client, Swarm: o.swarm, Source: source, Mode: mode, Prefix: g.prefix, Journal: j,
		Now: e.now, SkipHealth: o.skipHealth, Recreate: o.recreate, Lock: lock, StateDir: g.stateDir(),
	})
	defer abandonOn(e.abandon, s)() // a second signal cuts the step in flight short
	v, _ := buildVersion()
	// x execs through the docker CLI on the engine rollcall is connected
	// to, whatever the CLI's own context names; none on a simulated one.
	var shell func(string) *exec.Cmd
	if info, err := client.Info(ctx); err == nil && !info.Simulated {
		shell = shellCommand(o.shell, info.Endpoint)
	}
	return tui.Run(ctx, s, tui.Options{
		Theme:   name,
		Version: v,
		Logs: func(ctx context.Context, id string) (<-chan docker.LogLine, error) {
			return client.Logs(ctx, id, docker.LogOptions{Tail: 200, Follow: true})
		},
		Inspect: client.Inspect,
		Shell:   shell,
	})
}

// shellCommand is what x runs: the docker CLI's exec on the engine at host
// (DOCKER_HOST outranks the CLI's current context).
// An image without the command (FROM scratch has no shell) fails there,
// and the console says so.
func shellCommand(shell, host string) func(id string) *exec.Cmd {
	argv := strings.Fields(shell)
	if len(argv) == 0 {
		return nil
	}
	return func(id string) *exec.Cmd {
		cmd := exec.Command("docker", append([]string{"exec", "-it", id}, argv...)...)
		if host != "" {
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
		}
		return cmd
	}
}
