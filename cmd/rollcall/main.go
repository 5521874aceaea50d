// Command rollcall rolls containers on Docker hosts, one or several, without
// downtime.
//
// This package is flags and wiring only: it reads the desired-state file
// (engine/source/load, into engine/spec's types), talks to the engine
// (engine/docker), lets engine/reconcile decide and act, and writes the audit trail (engine/journal). What it adds is
// presentation: the styled plan tree (render.go), the --json documents
// (jsondoc.go), progress lines and exit codes. It holds no loop: the
// console, apply, agent and demo each run an engine/session session.
//
// Tests build the command tree with newRoot over an env (streams, a client
// factory, a clock), so they run every command on the fake engine.
//
//	rollcall plan    [-f FILE] [--json]         exit 0 converged, 2 changes pending, 1 error
//	rollcall apply   [-f FILE] [--yes] [--timeout D] [--json] [--recreate] [--skip-health]
//	                                             exit 0 converged, 1 failed, timed out or refused
//	rollcall agent   [-f FILE]                  converge forever (systemd); exit 0 on SIGTERM/SIGINT
//	rollcall history [-n N] [--json]            the journal, newest last
//	rollcall history --revisions [WORKLOAD]     the revisions kept, newest first
//	rollcall rollback WORKLOAD [--to REV]       pin a revision until the desired spec changes, journaled
//	rollcall retry   WORKLOAD [-f FILE]         lift a hold (a rolled-back spec) or a pin, journaled
//	rollcall version
//
// Global flags: --docker-host (default: DOCKER_HOST and friends, as the docker
// CLI reads them), --prefix (overrides the file's), --journal, --theme
// auto|dark|light|mono. -f/--file and --compose belong to the commands that
// read the desired state (desired.go): -f takes a rollcall.yaml, a compose
// file (known by its name: compose.yaml, docker-compose.yml, ...) or an
// http(s) URL serving rollcall.yaml as YAML or JSON; --compose takes a
// compose file of any name. With neither, ./rollcall.yaml is read, else the
// first compose file of the directory.
//
// Errors go to stderr as one line "rollcall: ..." with a hint where one helps;
// errors in the desired-state file are printed as "file:line:col: message" so
// editors can jump to them. Human output is styled only on a terminal, and
// NO_COLOR turns colour off unless --theme names a colour theme.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/theme"
)

func main() {
	defer exitOnPanic(os.Stderr, os.Exit)
	if code, ok := runAsDemoapp(os.Args); ok { // the demo image's /demoapp
		os.Exit(code)
	}
	// The first SIGINT or SIGTERM ends the command's context, so it lets
	// the step in flight finish, winds down and says where it stopped; the
	// second abandons that step; the third kills the process (signals.go).
	ctx, abandon, stop := notifySignals(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := productionEnv()
	e.abandon = abandon
	code := run(ctx, e, os.Args[1:])
	stop()
	os.Exit(code)
}

// env is everything the commands take from the world, so tests can put a
// fake engine, buffers and a fixed clock in its place.
type env struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// connect opens the engine at host; "" means from the environment.
	connect func(ctx context.Context, host string) (docker.Client, error)
	// dialHost opens the engine of host name of a hosts: file (hosts.go),
	// at ep, which has passed Validate.
	dialHost func(ctx context.Context, name string, ep moby.Endpoint) (docker.Client, error)
	now      func() time.Time
	environ  []string
	// terminal reports whether one of stdin, stdout and stderr is a terminal.
	terminal func(f any) bool
	// darkBackground asks the terminal for its background; only --theme auto calls it.
	darkBackground func() bool
	// abandon closes on the second SIGINT or SIGTERM: a running session
	// then abandons the step in flight (abandonOn). nil never closes.
	abandon <-chan struct{}
}

func productionEnv() env {
	return env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		connect: func(ctx context.Context, host string) (docker.Client, error) {
			m, err := moby.New(ctx, host)
			if err != nil {
				return nil, err // not a typed nil inside the interface
			}
			return m, nil
		},
		dialHost: func(ctx context.Context, _ string, ep moby.Endpoint) (docker.Client, error) {
			m, err := moby.Dial(ctx, ep)
			if err != nil {
				return nil, err
			}
			return m, nil
		},
		now:     time.Now,
		environ: os.Environ(),
		terminal: func(f any) bool {
			fd, ok := f.(interface{ Fd() uintptr })
			return ok && term.IsTerminal(int(fd.Fd()))
		},
		darkBackground: func() bool { return lipgloss.HasDarkBackground(os.Stdin, os.Stdout) },
	}
}

// getenv reads one variable of the environment e was given.
func (e env) getenv(key string) string {
	for i := len(e.environ) - 1; i >= 0; i-- {
		if k, v, ok := cutEnv(e.environ[i]); ok && k == key {
			return v
		}
	}
	return ""
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// globals are the flags every command shares.
type globals struct {
	dockerHost string
	prefix     string
	journal    string
	theme      string
	// lockDir is where a fleet keeps its host locks; "" is the default.
	// Not a flag: the simulated demo sets it to its run's folder.
	lockDir string
}

// run executes one command line and returns the process exit code. A
// panic is a bug: it is reported and exits 1, never 2, which plan keeps
// for "changes pending" (a crash of the Go runtime itself exits 2, which
// is why every read is bounded).
func run(ctx context.Context, e env, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			reportPanic(e.stderr, r)
			code = exitFailed
		}
	}()
	root := newRoot(e)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	return report(e.stderr, err)
}

// exitOnPanic, deferred by main, reports a panic on the main goroutine
// outside run (which recovers the commands' own) and exits 1: a crash
// never exits 2, plan's "changes pending". It cannot catch everything: a
// panic on another goroutine, or a fatal error of the Go runtime itself
// (out of memory, a concurrent map write), ends the process with exit 2
// before any deferred call runs. That is why every read is bounded
// (spec.ReadFile, and through it every file a compose document pulls in;
// journal.ScanContext): the bound, not this recover, is what keeps
// /dev/zero from becoming an out-of-memory exit 2.
func exitOnPanic(w io.Writer, exit func(int)) {
	if r := recover(); r != nil {
		reportPanic(w, r)
		exit(exitFailed)
	}
}

func reportPanic(w io.Writer, r any) {
	fmt.Fprintf(w, "rollcall: internal error: %s (a bug: please report it with this trace)\n%s", termSafe(fmt.Sprint(r)), debug.Stack())
}

// newRoot builds the command tree. The root command opens the console.
func newRoot(e env) *cobra.Command {
	g := &globals{}
	// Without a state directory the journal has no default: a command
	// that needs it says so (needsJournal), the others run.
	journalPath, journalErr := journal.DefaultPath()
	root := &cobra.Command{
		Use:   "rollcall [-f FILE] [--watch|--auto]",
		Short: "Zero-downtime container rollouts on Docker hosts, one or several",
		Long: `rollcall converges the containers of a Docker host towards a desired-state
file (rollcall.yaml), one slot at a time, without downtime; a file with
hosts: rolls several hosts out, in waves, the canary host(s) first.

  rollcall           the console: approve the plan step by step (--auto: let it
                     run, --watch: read-only, for incidents)
  rollcall demo      stage an out-of-date demo state and open the console on it
  rollcall plan      show what would change (exit 2 if anything would)
  rollcall apply     converge now, headless
  rollcall agent     converge forever (for systemd)
  rollcall history   the journal of executed steps
  rollcall rollback  pin a workload to an earlier revision
  rollcall retry     lift the hold on a rolled-back workload, or its pin`,
		SilenceErrors: true,
		SilenceUsage:  true,
		// The root takes no arguments: a word that is no command is a
		// mistyped one, and gets cobra's suggestions.
		SuggestionsMinimumDistance: 2,
		Args:                       unknownCommand,
		PersistentPreRunE: func(c *cobra.Command, _ []string) error {
			if _, err := theme.ParseName(g.theme); err != nil {
				return usageErr(err)
			}
			if g.journal == "" && needsJournal(c) {
				if journalErr == nil {
					journalErr = errors.New("--journal is empty")
				}
				return fmt.Errorf("journal: %w", journalErr)
			}
			return nil
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{err: err, command: c.CommandPath()}
	})

	pf := root.PersistentFlags()
	pf.StringVar(&g.dockerHost, "docker-host", "", "engine endpoint, e.g. unix:///var/run/docker.sock (default: DOCKER_HOST, as the docker CLI)")
	pf.StringVar(&g.prefix, "prefix", "", "label prefix of the managed containers (overrides the file's prefix)")
	pf.StringVar(&g.journal, "journal", journalPath, journalUsage(journalPath))
	pf.StringVar(&g.theme, "theme", string(theme.Auto), "colours on a terminal: auto, dark, light or mono (NO_COLOR means mono under auto)")

	root.AddCommand(
		newPlanCmd(e, g),
		newApplyCmd(e, g),
		newAgentCmd(e, g),
		newHistoryCmd(e, g),
		newRetryCmd(e, g),
		newNotifyTestCmd(e, g),
		newRollbackCmd(e, g),
		newVersionCmd(e, g),
		newDemoCmd(e, g),
		newDemoappCmd(e),
	)
	addConsole(root, e, g)
	return root
}

// journalUsage is --journal's help. Cobra adds the default, the path
// journal.DefaultPath found, so the text only says where that is; with no
// state directory there is no default, and the text says so.
func journalUsage(defaultPath string) string {
	const usage = "journal file: one JSON line per executed step"
	if defaultPath == "" {
		return usage + " (none: XDG_STATE_HOME and HOME are unset and rollcall does not run as root)"
	}
	return usage + ", kept in $XDG_STATE_HOME/rollcall, else ~/.local/state/rollcall, else (as root) /var/lib/rollcall"
}

// unknownCommand refuses any argument to the root: the first one names no
// command, so it says which it may have meant ("rollcall aply": apply).
func unknownCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], c.CommandPath())
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		err = fmt.Errorf("%w. Did you mean this? %s", err, strings.Join(s, ", "))
	}
	return &usageError{err: err, command: c.CommandPath()}
}

// needsJournal reports whether command c, as its flags stand, reads or
// writes the journal: apply, agent and history do, and so does the console
// (of demo too) unless it only watches.
func needsJournal(c *cobra.Command) bool {
	set := func(name string) bool {
		v, err := c.Flags().GetBool(name)
		return err == nil && v
	}
	switch {
	case !c.HasParent():
		return !set("watch")
	case c.Name() == "demo":
		return !set("watch") && !set("clean")
	}
	return c.Name() == "apply" || c.Name() == "agent" || c.Name() == "history" || c.Name() == "retry" || c.Name() == "rollback"
}

// stateDir is where what outlives a run (the holds) is kept: beside the
// journal; "" when there is no journal path, so nothing is read from or
// written to the working directory by mistake.
func (g *globals) stateDir() string {
	if g.journal == "" {
		return ""
	}
	return filepath.Dir(g.journal)
}
