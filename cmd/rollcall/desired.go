package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/spf13/cobra"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

const missingFileHint = `write one, starting from examples/rollcall.yaml; point -f at yours, at a compose file or at a URL; or run "rollcall demo" to try rollcall on a demo state`

// defaultFile is the desired-state file when neither -f nor --compose is
// given; when it does not exist, a compose file of the directory is taken
// (load.ComposeFileNames, in compose's order).
const defaultFile = "rollcall.yaml"

// desiredFlags say where the desired state comes from.
type desiredFlags struct {
	file      string // -f: a rollcall.yaml, a compose file (by its name) or an http(s) URL
	compose   string // --compose: a compose file, whatever its name
	tokenFile string // --token-file: the bearer token of a URL source
	// hostAccess: --allow-host-access, a URL's file may reach into the host
	hostAccess bool
}

// fileFlag registers -f/--file, --compose and --token-file on a command
// that reads the desired state.
func fileFlag(c *cobra.Command, f *desiredFlags) {
	c.Flags().StringVarP(&f.file, "file", "f", "", "desired state: a rollcall.yaml, a compose file (compose.yaml, docker-compose.yml, ...) or an http(s):// URL serving rollcall.yaml as YAML or JSON (default ./rollcall.yaml, else ./compose.yaml or another compose file name)")
	c.Flags().StringVar(&f.compose, "compose", "", "desired state from a compose file, whatever its name")
	c.Flags().StringVar(&f.tokenFile, "token-file", "", "with -f URL: a file holding a bearer token, sent as \"Authorization: Bearer ...\" and read again at each poll")
	c.Flags().BoolVar(&f.hostAccess, "allow-host-access", false, "with -f URL: let the served file bind-mount host paths, run privileged, add devices or capabilities, or use the host's network (refused otherwise)")
}

// urlInterval is how often a URL source is polled; 0 is
// source.DefaultURLInterval. Tests shorten it.
var urlInterval time.Duration

// Kinds of desired source.
const (
	sourceFile    = "file"    // rollcall.yaml
	sourceCompose = "compose" // a compose file
	sourceURL     = "url"     // a control-plane URL
)

// desiredSource is where the desired state comes from, once chosen.
type desiredSource struct {
	kind      string
	path      string   // the file, or the URL
	environ   []string // compose: what its variables are interpolated from
	tokenFile string   // url: the bearer token's file, "" for none
	// hostAccess: url, the served file may reach into the host
	// (--allow-host-access)
	hostAccess bool
}

// choose picks the desired source: --compose; else -f, a URL by its scheme
// and a compose file by its name; else ./rollcall.yaml if it exists, else
// the first compose file name that exists.
func (f desiredFlags) choose(e env) (desiredSource, error) {
	src, err := f.chooseKind(e)
	if err != nil {
		return src, err
	}
	if f.tokenFile != "" {
		if src.kind != sourceURL {
			return desiredSource{}, usageErr(errors.New("--token-file goes with -f http(s)://...: a file source has no token"))
		}
		src.tokenFile = f.tokenFile
	}
	if f.hostAccess {
		if src.kind != sourceURL {
			return desiredSource{}, usageErr(errors.New("--allow-host-access goes with -f http(s)://...: a file on this machine may reach into the host already"))
		}
		src.hostAccess = true
	}
	return src, nil
}

func (f desiredFlags) chooseKind(e env) (desiredSource, error) {
	switch {
	case f.file != "" && f.compose != "":
		return desiredSource{}, usageErr(errors.New("-f and --compose both name the desired state: give one"))
	case f.compose != "":
		return desiredSource{kind: sourceCompose, path: f.compose, environ: e.environ}, nil
	case isURL(f.file):
		if scheme := strings.ToLower(f.file[:strings.Index(f.file, "://")]); scheme != "http" && scheme != "https" {
			return desiredSource{}, usageErr(fmt.Errorf("-f %s: a URL must be http:// or https://", scheme+"://..."))
		}
		return desiredSource{kind: sourceURL, path: f.file}, nil
	case f.file != "" && load.IsComposeFile(f.file):
		return desiredSource{kind: sourceCompose, path: f.file, environ: e.environ}, nil
	case f.file != "":
		return desiredSource{kind: sourceFile, path: f.file}, nil
	}
	if _, err := os.Stat(defaultFile); err == nil {
		return desiredSource{kind: sourceFile, path: defaultFile}, nil
	}
	for _, name := range load.ComposeFileNames {
		if _, err := os.Stat(name); err == nil {
			return desiredSource{kind: sourceCompose, path: name, environ: e.environ}, nil
		}
	}
	return desiredSource{}, withHint(fmt.Errorf("no desired-state file here: no %s, and no compose file (%s)", defaultFile, strings.Join(load.ComposeFileNames, ", ")), missingFileHint)
}

func isURL(s string) bool { return strings.Contains(s, "://") }

// open returns the source as the live session reads it.
func (s desiredSource) open() (source.Source, error) {
	switch s.kind {
	case sourceURL:
		src, err := source.URL(s.path, source.URLOptions{Interval: urlInterval, TokenFile: s.tokenFile, AllowHostAccess: s.hostAccess})
		var terr *source.TokenFileError
		if errors.As(err, &terr) {
			return nil, withHint(err, "--token-file names a regular file holding the bearer token, on one line")
		}
		return src, usageErr(err)
	case sourceCompose:
		return source.Compose(s.path, s.environ), nil
	}
	return source.File(s.path), nil
}

// loadDesired reads the desired state once and applies --prefix.
func loadDesired(ctx context.Context, e env, f desiredFlags, prefix string) (*spec.Desired, error) {
	src, err := f.choose(e)
	if err != nil {
		return nil, err
	}
	s, err := src.open()
	if err != nil {
		return nil, err
	}
	return loadFrom(ctx, src, s, prefix)
}

// loadFrom loads s, the opened src, once and applies --prefix. A missing
// file is one line naming the path; a broken document is the spec's
// ErrorList, every entry with its file:line:col; a URL that does not answer
// well is one line naming the URL, without its secrets.
func loadFrom(ctx context.Context, src desiredSource, s source.Source, prefix string) (*spec.Desired, error) {
	d, err := s.Load(ctx)
	if err != nil {
		var stale *source.StaleError
		if errors.As(err, &stale) {
			err = stale.Err // a first fetch: there is no earlier state to keep
		}
		if errors.Is(err, fs.ErrNotExist) && src.kind != sourceURL {
			return nil, withHint(fmt.Errorf("no desired-state file at %s", src.path), missingFileHint)
		}
		return nil, err
	}
	return withPrefix(d, prefix)
}

// withPrefix applies --prefix, when given, to d.
func withPrefix(d *spec.Desired, prefix string) (*spec.Desired, error) {
	if prefix != "" {
		// The override goes through the loader, so it meets the rules the
		// file's own prefix meets, with the same message.
		if _, err := load.Parse("--prefix", []byte("prefix: "+strconv.Quote(prefix)+"\nworkloads: {}\n")); err != nil {
			return nil, usageErr(fmt.Errorf("--prefix %q: not a valid label prefix: lowercase letters, digits, '-' and '.', starting with a letter, at most 40 characters", prefix))
		}
		d.Prefix = prefix
	}
	return d, nil
}

// printWarnings shows the spec's warnings, in the errors' own file:line:col form.
func printWarnings(w io.Writer, d *spec.Desired) {
	for _, e := range d.Warnings {
		fmt.Fprintf(w, "%s:%d:%d: warning: %s\n", termSafe(e.File), e.Line, e.Col, termSafe(e.Msg))
		if e.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", termSafe(e.Hint))
		}
	}
}

const engineHint = "is the Docker engine running and reachable? set --docker-host or DOCKER_HOST"

// connect opens the engine. The returned close releases it.
func connect(ctx context.Context, e env, g *globals) (docker.Client, func(), error) {
	c, err := e.connect(ctx, g.dockerHost)
	if err != nil {
		return nil, nil, withHint(err, engineHint)
	}
	closeFn := func() {
		if cl, ok := c.(io.Closer); ok {
			_ = cl.Close()
		}
	}
	return c, closeFn, nil
}

// observation is how a plan is looked at: the clock, and the options of
// apply that change what Diff decides.
type observation struct {
	now            time.Time
	skipHealth     bool
	recreateBefore map[string]time.Time
	holds          map[string]map[string]bool
	pins           []session.PinRecord // rollcall rollback's: applied as a session applies them (rollback.go)
	swarm          docker.Swarm        // engine: swarm: the swarm the plan is of (swarm.go)
}

// currentPlan observes the engine once and diffs it against d.
func currentPlan(ctx context.Context, c docker.Client, d *spec.Desired, o observation) (reconcile.Plan, error) {
	if o.swarm != nil {
		obs, err := session.ReadSwarm(ctx, o.swarm, d.Prefix)
		if err != nil {
			return reconcile.Plan{}, withHint(err, engineHint)
		}
		resolved, pins := session.Pinned(ctx, c, spec.Resolve(ctx, d, c), o.pins)
		obs.Now, obs.Holds = o.now, o.holds
		p := reconcile.DiffSwarm(resolved, obs)
		session.MarkPins(&p, pins)
		return p, nil
	}
	containers, err := c.List(ctx, d.Prefix)
	if err != nil {
		return reconcile.Plan{}, withHint(err, engineHint)
	}
	resolved, pins := session.Pinned(ctx, c, spec.Resolve(ctx, d, c), o.pins)
	obs := &reconcile.Observed{
		Now: o.now, Containers: containers, SkipHealth: o.skipHealth, RecreateBefore: o.recreateBefore, Holds: o.holds,
	}
	p := reconcile.Diff(resolved, obs)
	reconcile.AddThen(resolved, obs, &p)
	session.MarkPins(&p, pins)
	return p, nil
}

// converged is the plan's verdict: nothing to do or wait for (a wait is
// not converged), no workload that cannot be acted on, and no slot kept
// off its desired spec by a hold (DESIGN §9).
func converged(p reconcile.Plan) bool {
	return p.Empty() && len(p.Errors()) == 0 && len(heldSlots(p)) == 0
}

// hostLock takes the host lock for prefix on the engine, as a console in step
// or auto mode does, so a headless command never acts beside one.
func hostLock(ctx context.Context, c docker.Client, prefix string) (*session.Lock, error) {
	info, err := c.Info(ctx)
	if err != nil {
		return nil, withHint(err, engineHint)
	}
	lock, err := session.AcquireLock(info, prefix, journal.CurrentUser())
	if errors.Is(err, session.ErrLocked) {
		return nil, withHint(err, "another rollcall acts on this engine and prefix; wait for it, or watch with `rollcall --watch`")
	}
	return lock, err
}

// planHolds reads the holds (rolled-back specs) kept beside the journal for
// the engine and prefix, so a one-shot plan shows them as a session would.
// Holds that cannot be read are left out of the plan, with a warning.
func planHolds(ctx context.Context, c docker.Client, g *globals, prefix string, warn io.Writer) map[string]map[string]bool {
	info, err := c.Info(ctx)
	if err != nil {
		return nil
	}
	holds, err := session.ReadHolds(g.stateDir(), info, prefix)
	if err != nil {
		fmt.Fprintf(warn, "warning: %s\n", termSafe(err.Error()))
	}
	return holds
}
