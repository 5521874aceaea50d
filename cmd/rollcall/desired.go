package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

const missingFileHint = `write one, starting from examples/rollcall.yaml; point -f at yours; or run "rollcall demo" to try rollcall on a demo state`

// loadDesired reads the desired-state file and applies --prefix. A missing
// file is one line naming the path; a broken one is the spec's ErrorList,
// every entry with its file:line:col.
func loadDesired(path, prefix string) (*spec.Desired, error) {
	d, _, err := readDesired(path, prefix)
	return d, err
}

// readDesired is loadDesired that also returns the bytes it parsed.
func readDesired(path, prefix string) (*spec.Desired, []byte, error) {
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, withHint(fmt.Errorf("no desired-state file at %s", path), missingFileHint)
	case err != nil:
		return nil, nil, fmt.Errorf("read desired state: %w", err)
	}
	d, err := parseDesired(path, data, prefix)
	return d, data, err
}

// parseDesired parses a desired-state document read from path.
func parseDesired(path string, data []byte, prefix string) (*spec.Desired, error) {
	d, err := spec.Parse(path, data)
	if err != nil {
		return nil, err // an ErrorList: every entry has its file:line:col
	}
	if prefix != "" {
		// The override goes through the loader, so it meets the rules the
		// file's own prefix meets, with the same message.
		if _, err := spec.Parse("--prefix", []byte("prefix: "+strconv.Quote(prefix)+"\nworkloads: {}\n")); err != nil {
			return nil, usageErr(fmt.Errorf("--prefix %q: not a valid label prefix: lowercase letters, digits, '-' and '.', starting with a letter, at most 40 characters", prefix))
		}
		d.Prefix = prefix
	}
	return d, nil
}

// printWarnings shows the spec's warnings, in the errors' own file:line:col form.
func printWarnings(w io.Writer, d *spec.Desired) {
	for _, e := range d.Warnings {
		fmt.Fprintf(w, "%s:%d:%d: warning: %s\n", e.File, e.Line, e.Col, e.Msg)
		if e.Hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", e.Hint)
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
}

// currentPlan observes the engine once and diffs it against d.
func currentPlan(ctx context.Context, c docker.Client, d *spec.Desired, o observation) (reconcile.Plan, error) {
	containers, err := c.List(ctx, d.Prefix)
	if err != nil {
		return reconcile.Plan{}, withHint(err, engineHint)
	}
	resolved := spec.Resolve(ctx, d, c)
	return reconcile.Diff(resolved, &reconcile.Observed{
		Now: o.now, Containers: containers, SkipHealth: o.skipHealth, RecreateBefore: o.recreateBefore,
	}), nil
}

// converged is the plan's verdict: nothing to do or wait for, and no
// workload that cannot be acted on.
func converged(p reconcile.Plan) bool { return p.Empty() && len(p.Errors()) == 0 }
