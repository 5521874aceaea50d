package main

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// Agent timing.
const (
	agentResync     = 30 * time.Second      // converge again even when nothing was heard
	agentCoalesce   = 50 * time.Millisecond // a burst of events makes one pass
	agentMaxBackoff = 30 * time.Second      // reconnecting the event stream
)

func newAgentCmd(e env, g *globals) *cobra.Command {
	var file desiredFlags
	c := &cobra.Command{
		Use:   "agent [-f FILE]",
		Short: "Converge forever: the headless loop, for systemd",
		Long: `Converge, then wait for a change and converge again, until SIGTERM or SIGINT.
A change is an engine event on a managed container, a change of the desired
file, or a resync every 30s. Logs go to stderr as JSON lines (log/slog), one
per executed step; every step is also written to the journal (mode "agent").

The desired file must load at start. Once running, a broken or half-written
file keeps the last good desired state, and the error is logged with its
file, line and column. A new container that misses its health deadline with
failure_action pause stops the agent acting until the file or the engine
changes; rollback and continue act as the file says.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			d, _, src, err := readDesired(e, file, g.prefix)
			if err != nil {
				return err
			}
			source, err := src.open()
			if err != nil {
				return err
			}
			client, closeClient, err := connect(ctx, e, g)
			if err != nil {
				return err
			}
			defer closeClient()
			release, err := hostLock(ctx, client, d.Prefix)
			if err != nil {
				return err
			}
			defer release()
			j, err := journal.Open(g.journal, journal.Options{})
			if err != nil {
				return withHint(err, "pass --journal PATH to keep it elsewhere")
			}
			defer j.Close()
			a := &agent{
				client: client, path: src.path, source: source, prefix: g.prefix, journal: j, user: journal.CurrentUser(),
				log: slog.New(slog.NewJSONHandler(e.stderr, nil)), now: e.now,
				desired: d, kick: make(chan struct{}, 1),
			}
			return a.run(ctx)
		},
	}
	fileFlag(c, &file)
	return c
}

// agent is the headless converge loop. It keeps the last good desired state
// and the holds (rolled-back specs) across passes.
type agent struct {
	client  docker.Client
	path    string
	source  session.Source // the file (or compose project), watched as the console watches it
	prefix  string         // --prefix, "" for the file's
	journal *journal.Journal
	user    string
	log     *slog.Logger
	now     func() time.Time

	desired   *spec.Desired
	lastErr   string // the last load error logged, to log it once
	holds     map[string]map[string]bool
	restarts  map[string]int // restarts issued, so the crash backoff grows across passes
	stepBegan time.Time

	dirty atomic.Bool   // the file changed since it was last read
	kick  chan struct{} // poked by the watchers: something may have changed

	mu          sync.Mutex
	stopEvents  context.CancelFunc
	eventPrefix string
}

// errReload ends a pass early: the desired file changed.
var errReload = errors.New("desired file changed")

func (a *agent) run(ctx context.Context) error {
	a.log.Info("agent started", "file", a.path, "prefix", a.desired.Prefix, "workloads", len(a.desired.Workloads))
	a.followEvents(ctx, a.desired.Prefix)
	go a.watchSource(ctx)
	for {
		a.dirty.Store(false)
		a.reload(ctx)
		a.pass(ctx)
		if ctx.Err() != nil {
			break
		}
		if !a.dirty.Load() {
			resync := time.NewTimer(agentResync)
			select {
			case <-ctx.Done():
			case <-a.kick:
			case <-resync.C:
			}
			resync.Stop()
		}
		if sleep(ctx, agentCoalesce) != nil {
			break
		}
		select {
		case <-a.kick:
		default:
		}
	}
	a.log.Info("agent stopped")
	return nil
}

// pass converges once against the last good desired state.
func (a *agent) pass(ctx context.Context) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rep, err := reconcile.Converge(pctx, a.client, a.desired, reconcile.ConvergeOptions{
		Now:      a.now,
		Holds:    a.holds,
		Restarts: a.restarts,
		Sleep:    a.sleep,
		OnPlan: func(int, reconcile.Plan) {
			if a.dirty.Load() {
				cancel() // do not act on a plan for a file that has changed
			}
		},
		Apply: reconcile.ApplyOptions{OnStart: a.stepStarted, OnDone: a.stepDone},
	})
	a.holds, a.restarts = rep.Holds, rep.Restarts
	switch {
	case ctx.Err() != nil:
	case err == nil && rep.Steps > 0:
		a.log.Info("converged", "rounds", rep.Rounds, "steps", rep.Steps, "failed", rep.Failed)
	case err == nil:
		a.log.Debug("steady", "rounds", rep.Rounds)
	case errors.Is(err, errReload) || a.dirty.Load():
		a.log.Info("desired file changed: planning again")
	case errors.Is(err, reconcile.ErrPaused):
		a.log.Error("paused: a human has to look", "error", err.Error())
	default:
		a.log.Error("not converged", "error", err.Error(), "left", rep.Last.Summary())
	}
}

// sleep is Converge's pause between rounds: cut short by any kick (look
// again sooner), and ended by a change of the desired file.
func (a *agent) sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-a.kick:
	}
	if a.dirty.Load() {
		return errReload
	}
	return nil
}

func (a *agent) stepStarted(s reconcile.Step) {
	a.stepBegan = a.now()
	a.log.Info("step started", "action", string(s.Action), "target", s.Target(), "container", s.Container, "reason", s.Reason)
}

func (a *agent) stepDone(r reconcile.Result) {
	s := r.Step
	attrs := []any{"action", string(s.Action), "target", s.Target(), "container", s.Container, "duration_ms", r.Duration.Milliseconds()}
	if r.Err != nil {
		a.log.Error("step failed", append(attrs, "error", r.Err.Error())...)
	} else {
		a.log.Info("step done", attrs...)
	}
	if err := a.journal.Append(journal.FromResult(r, a.stepBegan, a.user, "agent")); err != nil {
		a.log.Error("journal", "error", err.Error())
	}
}

// reload loads the desired state from the source. A file that cannot be
// read or does not parse keeps the last good state, and says why once.
func (a *agent) reload(ctx context.Context) {
	d, err := a.source.Load(ctx)
	if err == nil {
		d, err = withPrefix(d, a.prefix)
	}
	if err != nil {
		if err.Error() == a.lastErr {
			return
		}
		a.lastErr = err.Error()
		var list spec.ErrorList
		if errors.As(err, &list) {
			for _, e := range list {
				a.log.Error("desired file broken: keeping the last good state",
					"file", e.File, "line", e.Line, "col", e.Col, "error", e.Msg, "hint", e.Hint)
			}
			return
		}
		a.log.Error("desired file broken: keeping the last good state", "file", a.path, "error", err.Error())
		return
	}
	a.lastErr = ""
	if a.desired != nil && d.Prefix != a.desired.Prefix {
		// Following a new prefix would orphan every container of the old one
		// and start a second set beside them; the session refuses it too.
		a.log.Error("desired file changes the label prefix: keeping the last good state",
			"file", a.path, "prefix", a.desired.Prefix, "new_prefix", d.Prefix)
		return
	}
	if a.desired != nil && reflect.DeepEqual(d.Workloads, a.desired.Workloads) {
		return
	}
	a.desired = d
	a.log.Info("desired state loaded", "file", a.path, "prefix", d.Prefix, "workloads", len(d.Workloads))
	a.followEvents(ctx, d.Prefix)
}

// watchSource marks the desired state dirty when the source says it changed
// (fsnotify on its directory, settled, as the console's session uses it).
func (a *agent) watchSource(ctx context.Context) {
	for range a.source.Changes(ctx) {
		a.dirty.Store(true)
		a.poke()
	}
}

// followEvents (re)subscribes to the engine events of prefix.
func (a *agent) followEvents(ctx context.Context, prefix string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopEvents != nil && a.eventPrefix == prefix {
		return
	}
	if a.stopEvents != nil {
		a.stopEvents()
	}
	ectx, cancel := context.WithCancel(ctx)
	a.stopEvents, a.eventPrefix = cancel, prefix
	go a.watchEvents(ectx, prefix)
}

// watchEvents pokes the loop on every event of a managed container, and
// reconnects with backoff when the stream breaks.
func (a *agent) watchEvents(ctx context.Context, prefix string) {
	backoff := time.Second
	for ctx.Err() == nil {
		events, errs := a.client.Events(ctx, prefix, time.Time{})
		for range events {
			a.poke()
			backoff = time.Second
		}
		if ctx.Err() != nil {
			return
		}
		var err error
		select {
		case err = <-errs:
		default:
			err = errors.New("stream ended")
		}
		a.log.Warn("engine event stream broke: reconnecting", "error", err.Error(), "backoff", backoff.String())
		if sleep(ctx, backoff) != nil {
			return
		}
		backoff = min(2*backoff, agentMaxBackoff)
		a.poke() // relist: events may have been missed
	}
}

func (a *agent) poke() {
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
