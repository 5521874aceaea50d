package fake

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
)

// ErrInjected marks a failure injected into the Fake by FailRate, FailCall
// or FailNext (with a nil error). An injected failure has no effect.
var ErrInjected = errors.New("injected failure (fake engine)")

// fakeMethods are the keys of the Client methods in the call log and in
// FailCall and FailNext: the method names in lower case.
var fakeMethods = []string{"info", "list", "inspect", "imageinspect", "create", "stop", "remove", "restart", "update", "exec", "events", "logs", "distributioninspect", "pull"}

// injector holds the failures a test injected into a fake's calls: the
// engine's (Client) and the swarm's (docker.Swarm) alike.
type injector struct {
	methods  []string // the keys of the fake's methods
	mutating []string // the interface's mutating methods (docker.Mutating, docker.SwarmMutating)
	rate     float64
	reads    bool
	counts   map[string]int     // calls so far, by method
	failAt   map[string][]int   // call numbers (1-based, absolute) that fail
	next     map[string][]error // errors for the next calls, in order
}

func newInjector(methods, mutating []string) injector {
	return injector{methods: methods, mutating: mutating,
		counts: map[string]int{}, failAt: map[string][]int{}, next: map[string][]error{}}
}

// key turns a method name ("Stop", "stop") into its key, and panics on a
// name that is not one of the fake's methods: that is a bug in the test.
func (in *injector) key(method string) string {
	k := strings.ToLower(method)
	if !slices.Contains(in.methods, k) {
		panic(fmt.Sprintf("fake: %q is not a method of this fake", method))
	}
	return k
}

func (in *injector) isMutating(key string) bool {
	return slices.ContainsFunc(in.mutating, func(m string) bool { return strings.ToLower(m) == key })
}

// mutations are the calls of calls (a fake's log) to a mutating method.
func (in *injector) mutations(calls []string) []string {
	var out []string
	for _, c := range calls {
		key, _, _ := strings.Cut(c, ":")
		if in.isMutating(key) {
			out = append(out, c)
		}
	}
	return out
}

// failCall makes the n-th call of method from now on fail (see FailCall).
func (in *injector) failCall(method string, n int) {
	k := in.key(method)
	in.failAt[k] = append(in.failAt[k], in.counts[k]+n)
}

// failNext queues err for the next call of method (see FailNext).
func (in *injector) failNext(method string, err error) {
	if err == nil {
		err = ErrInjected
	}
	k := in.key(method)
	in.next[k] = append(in.next[k], err)
}

// check counts a call and returns the error it must fail with, if any:
// its context's, then FailNext, FailCall and FailRate (draw from rng), in
// that order.
func (in *injector) check(ctx context.Context, key string, rng *rand.Rand) error {
	in.counts[key]++
	if err := ctx.Err(); err != nil {
		return err
	}
	if q := in.next[key]; len(q) > 0 {
		in.next[key] = q[1:]
		return q[0]
	}
	if i := slices.Index(in.failAt[key], in.counts[key]); i >= 0 {
		in.failAt[key] = slices.Delete(in.failAt[key], i, i+1)
		return fmt.Errorf("call %d: %w", in.counts[key], ErrInjected)
	}
	if in.rate > 0 && (in.reads || in.isMutating(key)) && rng.Float64() < in.rate {
		return ErrInjected
	}
	return nil
}

// FailRate makes each call of a mutating method fail with probability p,
// drawn from the seeded source, with an error wrapping ErrInjected and no
// effect. Reads are spared unless FailReads(true). 0 turns it off.
func (f *Engine) FailRate(p float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject.rate = p
}

// FailReads makes FailRate apply to reads (List, Inspect, ...) too.
func (f *Engine) FailReads(on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject.reads = on
}

// FailCall makes the n-th call (1-based) of method from now on fail with an
// error wrapping ErrInjected. method is a Client method name, e.g. "Create".
func (f *Engine) FailCall(method string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject.failCall(method, n)
}

// FailNext makes the next call of method fail with err (ErrInjected if nil),
// wrapped with the verb and the object. Several queue up in order.
func (f *Engine) FailNext(method string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inject.failNext(method, err)
}

// check counts a call and returns the error it must fail with, if any:
// its context's, then FailNext, FailCall and FailRate, in that order.
func (f *Engine) check(ctx context.Context, key string) error {
	return f.inject.check(ctx, key, f.rng)
}

// record appends one call to the log: "method:arg", or "method:arg!fail"
// when it returned an error.
func (f *Engine) record(key, arg string, err *error) { f.calls = appendCall(f.calls, key, arg, *err) }

func appendCall(calls []string, key, arg string, err error) []string {
	s := key
	if arg != "" {
		s += ":" + arg
	}
	if err != nil {
		s += "!fail"
	}
	return append(calls, s)
}

// Calls returns every Client call so far, in order, as "method:arg": the
// method in lower case ("create", "stop", "imageinspect", ...), the
// container's name (or the ID given, if no container has it), the image
// reference or the prefix as arg; a call that returned an error ends in
// "!fail". E.g. "create:rollcall-web-0-abcd1234", "stop:rollcall-web-0-1234abcd!fail".
func (f *Engine) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// Execs returns every command Exec ran, in order, as "name: cmd args".
func (f *Engine) Execs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.execs)
}

// CreatedWith returns the spec a container was created with (by ID, name or
// unique ID prefix); false for one that AddContainer made or that is gone.
func (f *Engine) CreatedWith(id string) (docker.CreateSpec, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.lookup(id)
	if c == nil || c.spec == nil {
		return docker.CreateSpec{}, false
	}
	return *c.spec, true
}

// Mutations returns the calls of the Mutating methods only, as Calls does.
func (f *Engine) Mutations() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inject.mutations(f.calls)
}

// ResetCalls empties the call log. FailCall still counts from when it was set.
func (f *Engine) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// Kill ends a running container's process with exitCode, as `docker kill`
// or a crash does. Unlike Stop, the restart policy applies: always and
// unless-stopped restart it, on-failure does if exitCode is not 0.
func (f *Engine) Kill(id string, exitCode int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	if c == nil {
		return fmt.Errorf("kill %s: %w", id, docker.ErrNotFound)
	}
	if c.State != docker.StateRunning {
		return fmt.Errorf("kill %s: container is %s, not running", c.Name, c.State)
	}
	f.emit(c, "kill", now, nil)
	f.log(c, now, "stderr", fmt.Sprintf("killed (exit %d)", exitCode))
	f.exit(c, now, exitCode, false, false)
	return nil
}

// SetHealth sets a container's health by hand. It sticks: the image's
// ReadyAfter no longer applies until the container starts again.
// HealthNone removes the healthcheck.
func (f *Engine) SetHealth(id string, h docker.Health) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	if c == nil {
		return fmt.Errorf("set health %s: %w", id, docker.ErrNotFound)
	}
	c.HasHealthcheck = h != docker.HealthNone
	c.readyDue = false
	c.unreadyDue = false
	f.setHealth(c, h, now, true)
	return nil
}

// SetLimits changes a container's limits by hand, as `docker update` from a
// shell does: drift for the reconciler to find. It is not in Calls.
func (f *Engine) SetLimits(id string, l docker.Limits) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	if c == nil {
		return fmt.Errorf("set limits %s: %w", id, docker.ErrNotFound)
	}
	f.setLimits(c, l, now)
	return nil
}

// AddContainer puts a container into the engine as it is, to seed a state:
// an unmanaged container, a legacy one, one mid-crash. It emits no events.
// Defaults: a generated ID, State running, Created and StartedAt now (for a
// running one), Health starting when HasHealthcheck, restart policy "no".
// If its image is known (AddImage), the image's Behaviour drives it on from
// its StartedAt; otherwise it stays as seeded until acted on. A name already
// in use is ErrConflict.
func (f *Engine) AddContainer(c docker.Container) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	if c.Name == "" {
		return "", errors.New("add container: a name is required")
	}
	if f.byName(c.Name) != nil {
		return "", fmt.Errorf("add container %s: %w", c.Name, docker.ErrConflict)
	}
	if c.ID == "" {
		c.ID = f.newID()
	}
	if _, ok := f.containers[c.ID]; ok {
		return "", fmt.Errorf("add container %s: ID %s: %w", c.Name, c.ID, docker.ErrConflict)
	}
	c = copyContainer(c)
	if c.State == "" {
		c.State = docker.StateRunning
	}
	if c.Created.IsZero() {
		c.Created = now
	}
	running := c.State == docker.StateRunning || c.State == docker.StateRestarting
	if running && c.StartedAt.IsZero() {
		c.StartedAt = now
	}
	if c.HasHealthcheck && c.Health == docker.HealthNone {
		c.Health = docker.HealthStarting
	}
	if c.Health == docker.HealthHealthy {
		c.HealthySinceStart = true
	}
	if c.Limits.Restart == "" {
		c.Limits.Restart = "no"
	}
	f.seq++
	fc := &fakeContainer{Container: c, seq: f.seq, interval: defaultProbeInterval, stopSignal: "SIGTERM"}
	if imageID, ok := f.resolveImage(c.ImageID); ok {
		fc.behaviour, fc.knownImage = f.behaviours[imageID], true
	} else if imageID, ok := f.resolveImage(c.Image); ok {
		fc.behaviour, fc.knownImage = f.behaviours[imageID], true
	}
	if c.Health != docker.HealthNone {
		fc.healthMarks = []healthMark{{at: c.StartedAt, health: c.Health}}
	}
	switch c.State {
	case docker.StateRunning:
		if fc.knownImage {
			fc.readyDue = c.HasHealthcheck && c.Health == docker.HealthStarting
			fc.readyAt = c.StartedAt.Add(fc.behaviour.ReadyAfter)
			fc.crashDue = fc.behaviour.CrashAfter > 0
			fc.crashAt = c.StartedAt.Add(fc.behaviour.CrashAfter)
		}
		fc.logs = []docker.LogLine{{Time: c.StartedAt, Stream: "stdout", Text: "starting " + c.Image + " as " + c.Name}}
	case docker.StateRestarting:
		fc.restartAt = now.Add(restartBackoff(c.RestartCount))
	}
	for _, p := range c.Ports {
		if p.HostPort >= f.nextPort {
			f.nextPort = p.HostPort + 1
		}
	}
	f.containers[c.ID] = fc
	return c.ID, nil
}
