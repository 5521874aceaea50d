package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// This file holds the drain before a stop (DESIGN §3 pre_stop and
// update.drain): what a container takes along at create (its pre_stop
// label, its DNS aliases), what a stop step carries, and how Run drains.

// preStopTimeout bounds the pre_stop command itself. A pre_stop should tell
// the process to drain and return; the waiting is the drain's.
const preStopTimeout = 30 * time.Second

// drainPoll is how often a drain looks at the container by default.
const drainPoll = 250 * time.Millisecond

// ErrPreStop marks a step whose pre_stop failed (it could not run, or it
// exited nonzero). The step went on: it waited the drain and stopped the
// container anyway, so the effect is in place; the error says what the
// operator asked for and did not get.
var ErrPreStop = errors.New("pre_stop failed")

// preStopLabel is the value of the pre-stop label for w: its pre_stop as a
// JSON list, "" for none.
func preStopLabel(w *spec.Workload) string {
	if len(w.PreStop) == 0 {
		return ""
	}
	b, err := json.Marshal(w.PreStop)
	if err != nil {
		panic("reconcile: pre_stop label: " + err.Error()) // a []string always marshals
	}
	return string(b)
}

// networkAliases are the DNS aliases of w's containers on each of its
// networks: the workload name, as compose gives a service's name, then the
// aliases w adds. The engine's own networks (bridge, host, none) take none.
func networkAliases(w *spec.Workload) map[string][]string {
	var out map[string][]string
	for _, n := range w.Networks {
		if spec.PredefinedNetwork(n) {
			continue
		}
		if out == nil {
			out = map[string][]string{}
		}
		out[n] = append([]string{w.Name}, w.Aliases[n]...)
	}
	return out
}

// drainOf is what a stop of c runs first: the pre_stop c was created with
// (its label; an unreadable one is none) and the drain. A container that is
// not running serves nothing and drains nothing.
func drainOf(prefix string, c *docker.Container, drain time.Duration) ([]string, time.Duration) {
	if c == nil || c.State != docker.StateRunning {
		return nil, 0
	}
	var cmd []string
	if v := c.Labels[docker.PreStopLabel(prefix)]; v != "" {
		if err := json.Unmarshal([]byte(v), &cmd); err != nil {
			cmd = nil
		}
	}
	return cmd, drain
}

// addDrains gives every stop and roll step of a running container its
// pre_stop and drain.
func addDrains(prefix string, wp *WorkloadPlan, cs []*docker.Container, drain time.Duration) {
	var byID map[string]*docker.Container
	for i := range wp.Steps {
		s := &wp.Steps[i]
		canary := s.Action == ActCanary && s.Canary != nil
		if s.Action != ActStop && s.Action != ActRoll && !canary {
			continue
		}
		if byID == nil {
			byID = make(map[string]*docker.Container, len(cs))
			for _, c := range cs {
				byID[c.ID] = c
			}
		}
		switch c := byID[s.ContainerID]; {
		case canary:
			// Not the step's own drain: the canary step stops nothing
			// unless its share cannot be set to 0 (StopOf).
			if c := byID[s.Canary.ContainerID]; c != nil {
				s.Canary.PreStop, s.Canary.Drain = drainOf(prefix, c, drain)
			}
		case c != nil:
			s.PreStop, s.Drain = drainOf(prefix, c, drain)
		}
	}
}

// DrainText describes a step's drain for the plan: "pre_stop /app -drain,
// drain ≤5s"; "" when the step drains nothing.
func (s Step) DrainText() string {
	var parts []string
	if len(s.PreStop) > 0 {
		parts = append(parts, "pre_stop "+strings.Join(s.PreStop, " "))
	}
	if s.Drain > 0 {
		parts = append(parts, "drain ≤"+s.Drain.String())
	}
	return strings.Join(parts, ", ")
}

// RunOptions observe and extend a step as it runs. The zero value is ready
// for the real engine.
type RunOptions struct {
	// OnDrain is told each phase of a drain: once pre_stop has run (or
	// failed) and the wait begins, and once the wait ends.
	OnDrain func(DrainProgress)
	// Released, when set, reports whether the proxy in front no longer
	// routes to the container (DESIGN §3 proxy.caddy_admin); the drain ends
	// early once it does, and then only then. An error says the proxy
	// cannot tell (it does not answer, or the container is not behind it):
	// the engine's health decides, as with no proxy.
	Released func(ctx context.Context, s Step) (bool, error)
	// Now and Sleep are the clock of the drain wait (default: real time).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Poll is how often the drain looks at the container (default 250ms).
	Poll time.Duration
	// Created, when set, is told the ID of the container a start made
	// (or found made by the same start before: a name taken by this
	// slot's container), once the start has succeeded.
	Created func(id string)
	// Canary runs a canary step (ActCanary) through the proxy: it sets the
	// step's share of the traffic, compares the cohorts every interval,
	// sends the share to 0 at once when a check fails, and returns the
	// last judgement: VerdictFail as soon as a check failed, else the
	// judgement at the step's end. An error says it could not measure.
	// Unset, a canary step fails: there is no proxy to split the traffic.
	Canary func(ctx context.Context, s Step) (Judgement, error)
	// Split sets the split of a start's SplitFirst spec at share 0 in the
	// proxy, before the container is created. Unset, such a start fails:
	// there is no proxy to keep the canary from serving.
	Split func(ctx context.Context, s Step) error
	// OnPull, when set, is told a pull step's progress, on the step's
	// goroutine (pull.go).
	OnPull func(PullProgress)
}

// DrainProgress is where a step's drain stands.
type DrainProgress struct {
	Step       Step
	PreStopRan bool      // the pre_stop command ran (whatever its exit code)
	PreStopErr error     // it could not run, or exited nonzero (wraps ErrPreStop)
	Until      time.Time // the wait ends by then at the latest
	// Ended says why the wait ended; "" while it goes on: "unhealthy",
	// "released" (the proxy let go), "stopped" (not running any more),
	// "gone", or "timeout" (the whole drain passed).
	Ended string
}

// Text renders the drain for the console at now: "draining web-0-73f3
// (pre_stop ran, 3s left)".
func (p DrainProgress) Text(now time.Time) string {
	var what []string
	switch {
	case p.PreStopErr != nil:
		what = append(what, "pre_stop failed")
	case p.PreStopRan:
		what = append(what, "pre_stop ran")
	}
	if p.Ended != "" {
		what = append(what, p.Ended)
	} else if !p.Until.IsZero() {
		left := max(p.Until.Sub(now), 0).Round(time.Second)
		what = append(what, fmt.Sprintf("%s left", left))
	}
	text := "draining " + p.Step.Container
	if len(what) > 0 {
		text += " (" + strings.Join(what, ", ") + ")"
	}
	return text
}

func (o *RunOptions) defaults() {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sleep == nil {
		o.Sleep = Sleep
	}
	if o.Poll <= 0 {
		o.Poll = drainPoll
	}
}

// drain runs s's pre_stop in the container and waits up to s.Drain, cut
// short once the container is no longer running, or released by the proxy
// (behind one that answers), or else unhealthy. It reports gone when the container no longer exists, so the
// stop is a no-op (I6); err wraps ErrPreStop when pre_stop failed, and is
// ctx's error when ctx ended.
func drain(ctx context.Context, c docker.Client, s Step, o RunOptions) (gone bool, err error) {
	o.defaults()
	p := DrainProgress{Step: s}
	report := func() {
		if o.OnDrain != nil {
			o.OnDrain(p)
		}
	}
	if len(s.PreStop) > 0 {
		ectx, cancel := context.WithTimeout(ctx, preStopTimeout)
		code, out, err := c.Exec(ectx, s.ContainerID, s.PreStop)
		cancel()
		switch {
		case errors.Is(err, docker.ErrNotFound):
			return true, nil
		case ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil:
			p.PreStopErr = fmt.Errorf("%w: %s: %w", ErrPreStop, strings.Join(s.PreStop, " "), err)
		case code != 0:
			p.PreStopRan = true
			p.PreStopErr = fmt.Errorf("%w: %s: exit %d: %s", ErrPreStop, strings.Join(s.PreStop, " "), code, lastLine(out))
		default:
			p.PreStopRan = true
		}
	}
	p.Until = o.Now().Add(s.Drain)
	report()
	for {
		unhealthy := false
		d, err := c.Inspect(ctx, s.ContainerID)
		switch {
		case errors.Is(err, docker.ErrNotFound):
			return true, nil
		case err != nil && ctx.Err() != nil:
			return false, ctx.Err()
		case err != nil:
			// Not knowing is no reason to stop sooner: wait on.
		case d.State != docker.StateRunning:
			// A pre_stop that failed on a container that had stopped by
			// itself meanwhile has nothing left to do.
			p.Ended, p.PreStopErr = "stopped", nil
		case d.Health == docker.HealthUnhealthy:
			unhealthy = true
		}
		if p.Ended == "" {
			p.Ended = drainEnd(ctx, s, o, unhealthy)
		}
		now := o.Now()
		if p.Ended == "" && !now.Before(p.Until) {
			p.Ended = "timeout"
		}
		if p.Ended != "" {
			report()
			return false, p.PreStopErr
		}
		if err := o.Sleep(ctx, min(o.Poll, p.Until.Sub(now))); err != nil {
			return false, err
		}
	}
}

// drainEnd says whether a running container's drain may end now, and why.
// Behind a proxy that answers, only the proxy letting go ends it: the
// engine reporting the container unhealthy says the proxy will let go, not
// that it has, and a stop before it has closes a listener the proxy still
// dials. Without a proxy, or one that cannot tell (an error), unhealthy
// ends it.
func drainEnd(ctx context.Context, s Step, o RunOptions, unhealthy bool) string {
	if o.Released != nil {
		ok, err := o.Released(ctx, s)
		switch {
		case err == nil && ok:
			return "released"
		case err == nil:
			return "" // still routed: wait on, unhealthy or not
		}
	}
	if unhealthy {
		return "unhealthy"
	}
	return ""
}

// lastLine is the last non-empty line of a command's output, for messages.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Sleep waits d, cut short by ctx (whose error it then returns): the
// default clock of a drain's wait, and of any wait beside the loop.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
