package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/theme"
)

// Options configure the console.
type Options struct {
	// Theme is the look: theme.Dark, theme.Light or theme.Mono, or
	// theme.Auto ("" too), which picks dark or light from the terminal's
	// background, asked once at start. Run makes Auto mono when NO_COLOR is
	// set, and lets an explicit colour theme win over NO_COLOR.
	Theme theme.Name
	// Version is rollcall's version, shown in the header; optional.
	Version string
	// Logs feeds the detail pane's log tail; nil: no log tail.
	Logs LogSource
	// Do receives the operator's intents. Run sets it to the session's Do;
	// tests record them.
	Do func(session.Intent)
	// Snapshots delivers the session's state. Run sets it to the session's
	// Snapshots; nil in a test that hands the model snapshots itself.
	Snapshots <-chan session.Snapshot
	// Inspect reads one container for the full-screen reader (i): its
	// health probes and how it was created. It must only read. nil: the
	// reader shows what the snapshot has.
	Inspect func(ctx context.Context, id string) (docker.ContainerDetail, error)
	// Shell is the command x runs, on the terminal, to open a shell in a
	// container (the raw ID), e.g. `docker exec -it <id> sh`. nil: x is
	// off. It is off in watch mode whatever this says.
	Shell func(id string) *exec.Cmd
	// Abandon cuts the running step short. The console calls it when the
	// operator quits at once while a step runs (q, then q again), before
	// the program ends. Run sets it to the session's Abandon when nil.
	Abandon func()

	program []tea.ProgramOption // tests: a terminal of their own
}

// rendererFPS is the most frames a second the console draws (see Run).
const rendererFPS = 30

// Run runs session s and the console on the terminal until the operator
// quits or ctx ends, and returns once the session has stopped (and so has
// released the host lock). It returns an error only when the session or the
// terminal cannot start.
func Run(ctx context.Context, s *session.Session, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Do == nil {
		opts.Do = s.Do
	}
	if opts.Snapshots == nil {
		opts.Snapshots = s.Snapshots()
	}
	if opts.Abandon == nil {
		opts.Abandon = s.Abandon
	}
	var environ []string
	opts.Theme, environ = resolveTheme(opts.Theme, os.Environ())

	m := New(opts)
	m.ctx = ctx
	// The renderer draws at most rendererFPS frames a second, and only
	// when a view changed: Bubble Tea is patched so that it sleeps while
	// idle (third_party/bubbletea/PATCHES.md). 30 a second shows a key's
	// effect within 33 ms and outpaces the spinner.
	p := tea.NewProgram(m, append([]tea.ProgramOption{tea.WithContext(ctx), tea.WithEnvironment(environ), tea.WithFPS(rendererFPS)}, opts.program...)...)

	sessErr := make(chan error, 1)
	go func() {
		err := s.Run(ctx)
		if err != nil {
			p.Send(sessionEndedMsg{})
		}
		sessErr <- err
	}()

	_, err := p.Run()
	cancel()
	serr := <-sessErr
	switch {
	case serr != nil:
		return fmt.Errorf("console: %w", serr)
	case errors.Is(err, tea.ErrProgramPanic):
		return fmt.Errorf("console: %w", err)
	case err == nil, errors.Is(err, tea.ErrInterrupted), errors.Is(err, context.Canceled):
		return nil
	case errors.Is(err, tea.ErrProgramKilled) && ctx.Err() != nil:
		return nil
	}
	return fmt.Errorf("console: %w", err)
}

// resolveTheme applies NO_COLOR (https://no-color.org) to the theme asked
// for: auto becomes mono; an explicit colour theme wins, as a
// per-invocation flag should, so NO_COLOR leaves the program's environment
// (the renderer would strip the colours otherwise). Auto without NO_COLOR
// stays auto: the model asks the terminal for its background.
func resolveTheme(n theme.Name, environ []string) (theme.Name, []string) {
	noColor := slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") && kv != "NO_COLOR=" })
	switch {
	case n == "" || n == theme.Auto:
		if noColor {
			return theme.Mono, environ
		}
		return theme.Auto, environ
	case n != theme.Mono && noColor:
		return n, slices.DeleteFunc(slices.Clone(environ), func(kv string) bool { return strings.HasPrefix(kv, "NO_COLOR=") })
	}
	return n, environ
}
