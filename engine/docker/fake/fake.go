// Package fake is an in-memory container engine that implements
// docker.Client, for tests, the demo and benchmarks. It imports no moby
// package.
package fake

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// Engine is an in-memory container engine that implements docker.Client. Tests, the
// demo and benchmarks use it in place of a real engine.
//
// Rules it keeps:
//   - Time moves only with its Clock. Every state change that time causes
//     (a container turning healthy, crashing, being restarted by its restart
//     policy) is worked out lazily, in time order, at the start of every call
//     and on Tick. Drive it with a ManualClock to make a test exact.
//   - Given the same seed, clock and call sequence, two fakes hand out the
//     same container IDs, host ports, injected failures and events.
//   - How a container behaves (ready after a while, unhealthy, crashing,
//     failing to start) is decided by its image's Behaviour, set with AddImage.
//   - Methods acting on a container accept its ID, a unique ID prefix, or its
//     name, as the docker engine does.
//   - Every Client call is recorded in Calls as "method:arg", with the
//     container's name as arg where there is one. A call that returned an
//     error is recorded with a "!fail" suffix. The test helpers (Kill,
//     SetHealth, SetLimits, AddContainer, AddImage, Tick) are not recorded.
//
// An Engine is safe for concurrent use.
type Engine struct {
	mu       sync.Mutex
	clock    Clock
	rng      *rand.Rand
	endpoint string
	engineID string

	behaviours map[string]Behaviour // by image ID
	tags       map[string]string    // image reference -> image ID

	containers map[string]*fakeContainer // by ID
	seq        int                       // creation order, the tie-break for simultaneous transitions
	nextPort   int                       // next ephemeral host port
	subnets    map[string]int            // network name -> its /16's second octet, in order of first use

	calls  []string
	execs  []string // "name: cmd args", every command run by Exec
	inject injector

	history []docker.Event // recent events, for replay to new subscribers
	subs    []*eventSub

	reg registry // what Pull and DistributionInspect reach (pull.go)
}

// Options configure a Fake.
type Options struct {
	Clock    Clock  // nil: real time
	Seed     int64  // seeds IDs and injected failures
	Endpoint string // reported by Info; "" means "fake://"
	// EngineID is the identity Info reports (EngineInfo.ID); "" means
	// "fake:" and the endpoint. Two fakes with one EngineID stand for two
	// endpoints of one engine.
	EngineID string
}

// Clock tells the time. The Fake reads it; tests move a ManualClock.
type Clock interface{ Now() time.Time }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// fakeEpoch is where a zero ManualClock starts, so that no time the Fake
// reports is the zero time (callers read a zero StartedAt as "never").
var fakeEpoch = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// ManualClock is a Clock that moves only when told. The zero value reads
// 2025-01-01T12:00:00Z. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock { return &ManualClock{now: start} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.read()
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.read().Add(d)
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *ManualClock) read() time.Time {
	if c.now.IsZero() {
		return fakeEpoch
	}
	return c.now
}

// firstEphemeralPort is where docker's ephemeral host ports start on Linux.
const firstEphemeralPort = 32768

// New returns an empty engine: no images, no containers.
func New(opts Options) *Engine {
	clock := opts.Clock
	if clock == nil {
		clock = realClock{}
	}
	endpoint := opts.Endpoint
	if endpoint == "" {
		endpoint = "fake://"
	}
	seed := uint64(opts.Seed)
	return &Engine{
		clock:      clock,
		rng:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		endpoint:   endpoint,
		engineID:   cmp.Or(opts.EngineID, "fake:"+endpoint),
		behaviours: map[string]Behaviour{},
		tags:       map[string]string{},
		containers: map[string]*fakeContainer{},
		nextPort:   firstEphemeralPort,
		inject:     newInjector(fakeMethods, docker.Mutating),
	}
}

var _ docker.Client = (*Engine)(nil)

// Info describes the fake engine.
func (f *Engine) Info(ctx context.Context) (_ docker.EngineInfo, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	defer f.record("info", "", &err)
	if err := f.check(ctx, "info"); err != nil {
		return docker.EngineInfo{}, fmt.Errorf("info: %w", err)
	}
	return docker.EngineInfo{ID: f.engineID, Endpoint: f.endpoint, Version: "fake", APIVersion: "1.41", Simulated: true}, nil
}

// List returns copies of the containers labelled <prefix>.managed=true,
// sorted by name.
func (f *Engine) List(ctx context.Context, prefix string) (_ []docker.Container, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	defer f.record("list", prefix, &err)
	if err := f.check(ctx, "list"); err != nil {
		return nil, fmt.Errorf("list %s: %w", prefix, err)
	}
	var out []docker.Container
	for _, c := range f.containers {
		if c.Labels[docker.ManagedLabel(prefix)] == "true" {
			out = append(out, copyContainer(c.Container))
		}
	}
	slices.SortFunc(out, func(a, b docker.Container) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Inspect returns a copy of one container with its recent health probes.
func (f *Engine) Inspect(ctx context.Context, id string) (_ docker.ContainerDetail, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("inspect", nameOr(c, id), &err)
	if err := f.check(ctx, "inspect"); err != nil {
		return docker.ContainerDetail{}, fmt.Errorf("inspect %s: %w", id, err)
	}
	if c == nil {
		return docker.ContainerDetail{}, fmt.Errorf("inspect %s: %w", id, docker.ErrNotFound)
	}
	return docker.ContainerDetail{Container: copyContainer(c.Container), HealthLog: c.healthLog(now), Config: c.config()}, nil
}

// config is how the container was created. The fake's images have no
// command, entrypoint or environment of their own, so the create's is all
// there is. A container seeded by AddContainer was created by no spec: its
// config is empty but for its stop signal.
func (c *fakeContainer) config() docker.ContainerConfig {
	cfg := docker.ContainerConfig{StopSignal: c.stopSignal, ImageKnown: c.knownImage}
	s := c.spec
	if s == nil {
		return cfg
	}
	cfg.Cmd = slices.Clone(s.Command)
	cfg.Env = slices.Clone(s.Env)
	if hc := s.Healthcheck; hc != nil && !(len(hc.Test) > 0 && hc.Test[0] == "NONE") {
		h := *hc
		h.Test = slices.Clone(hc.Test)
		cfg.Healthcheck = &h
	}
	for _, p := range s.Ports {
		if p.Proto == "" {
			p.Proto = "tcp"
		}
		if p.HostIP == "" {
			p.HostIP = "127.0.0.1"
		}
		cfg.Ports = append(cfg.Ports, p)
	}
	docker.SortPortSpecs(cfg.Ports)
	cfg.Networks = slices.Clone(s.Networks)
	slices.Sort(cfg.Networks)
	cfg.Mounts = slices.Clone(s.Mounts)
	cfg.ReadOnly = s.ReadOnly
	cfg.Entrypoint = slices.Clone(s.Options.Entrypoint)
	if m := s.Options.NetworkMode; m != "" {
		cfg.Networks = []string{m} // as the engine reports host and none
	}
	return cfg
}

// ImageInspect resolves a reference or an image ID.
func (f *Engine) ImageInspect(ctx context.Context, ref string) (_ docker.Image, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	defer f.record("imageinspect", ref, &err)
	if err := f.check(ctx, "imageinspect"); err != nil {
		return docker.Image{}, fmt.Errorf("image %s: %w", ref, err)
	}
	id, ok := f.resolveImage(ref)
	if !ok {
		return docker.Image{}, fmt.Errorf("image %s: %w", ref, docker.ErrNotFound)
	}
	img := docker.Image{ID: id, RepoDigests: slices.Clone(f.reg.pulled[id]), Volumes: slices.Sorted(slices.Values(f.behaviours[id].Volumes))}
	for tag, tid := range f.tags {
		if tid == id {
			img.RepoTags = append(img.RepoTags, tag)
		}
	}
	slices.Sort(img.RepoTags)
	return img, nil
}

// Create creates and starts a container. When the image's Behaviour has
// FailStart, or a fixed host port is taken, the start fails and the container
// is removed again.
func (f *Engine) Create(ctx context.Context, spec docker.CreateSpec) (_ string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	defer f.record("create", spec.Name, &err)
	if err := f.check(ctx, "create"); err != nil {
		return "", fmt.Errorf("create %s: %w", spec.Name, err)
	}
	if spec.Name == "" {
		return "", errors.New("create: a container name is required")
	}
	if f.byName(spec.Name) != nil {
		return "", fmt.Errorf("create %s: %w", spec.Name, docker.ErrConflict)
	}
	imageID, ok := f.resolveImage(spec.Image)
	if !ok {
		return "", fmt.Errorf("create %s: image %s: %w", spec.Name, spec.Image, docker.ErrNotFound)
	}
	c := f.newContainer(spec, imageID, now)
	if err := f.start(c, now); err != nil {
		f.destroy(c, now)
		return "", fmt.Errorf("create %s: start: %w", spec.Name, err)
	}
	return c.ID, nil
}

// Stop stops a running or restarting container with exit code 0. A container
// stopped this way is never restarted by its restart policy. Stopping a
// stopped container does nothing.
func (f *Engine) Stop(ctx context.Context, id string, grace time.Duration) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("stop", nameOr(c, id), &err)
	if err := f.check(ctx, "stop"); err != nil {
		return fmt.Errorf("stop %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return fmt.Errorf("stop %s: %w", id, docker.ErrNotFound)
	}
	f.stop(c, now)
	return nil
}

// Remove removes a container that is not running.
func (f *Engine) Remove(ctx context.Context, id string) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("remove", nameOr(c, id), &err)
	if err := f.check(ctx, "remove"); err != nil {
		return fmt.Errorf("remove %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return fmt.Errorf("remove %s: %w", id, docker.ErrNotFound)
	}
	if c.State == docker.StateRunning || c.State == docker.StateRestarting {
		return fmt.Errorf("remove %s: container is %s, stop it first", c.Name, c.State)
	}
	f.destroy(c, now)
	return nil
}

// Restart stops a container if it runs and starts it again: same ID, a new
// StartedAt, health back to starting. RestartCount, which counts restarts by
// the restart policy, is unchanged, as in docker.
func (f *Engine) Restart(ctx context.Context, id string, grace time.Duration) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("restart", nameOr(c, id), &err)
	if err := f.check(ctx, "restart"); err != nil {
		return fmt.Errorf("restart %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return fmt.Errorf("restart %s: %w", id, docker.ErrNotFound)
	}
	f.stop(c, now)
	if err := f.start(c, now); err != nil {
		return fmt.Errorf("restart %s: %w", c.Name, err)
	}
	f.emit(c, "restart", now, nil)
	return nil
}

// Update changes a container's limits in place: same ID, same StartedAt. An
// empty restart policy leaves the current one, as docker update does.
func (f *Engine) Update(ctx context.Context, id string, limits docker.Limits) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("update", nameOr(c, id), &err)
	if err := f.check(ctx, "update"); err != nil {
		return fmt.Errorf("update %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return fmt.Errorf("update %s: %w", id, docker.ErrNotFound)
	}
	f.setLimits(c, limits, now)
	return nil
}

// Exec runs a command in a running container. The image's Behaviour says
// how it ends (ExecExitCode) and what it does (ExecDrains: the container
// turns unhealthy one probe interval later, as demoapp -drain makes it).
// The command is recorded in Execs.
func (f *Engine) Exec(ctx context.Context, id string, cmd []string) (_ int, _ string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.advance()
	c := f.lookup(id)
	defer f.record("exec", nameOr(c, id), &err)
	if err := f.check(ctx, "exec"); err != nil {
		return 0, "", fmt.Errorf("exec %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return 0, "", fmt.Errorf("exec %s: %w", id, docker.ErrNotFound)
	}
	if len(cmd) == 0 {
		return 0, "", fmt.Errorf("exec %s: empty command", c.Name)
	}
	if c.State != docker.StateRunning {
		return 0, "", fmt.Errorf("exec %s: container %s is not running", cmd[0], c.Name)
	}
	f.execs = append(f.execs, c.Name+": "+strings.Join(cmd, " "))
	code := c.behaviour.ExecExitCode
	f.log(c, now, "stdout", "exec "+strings.Join(cmd, " "))
	if code != 0 {
		return code, fmt.Sprintf("%s: exit status %d", cmd[0], code), nil
	}
	if c.behaviour.ExecDrains && c.HasHealthcheck && !c.drainDue {
		c.drainDue = true
		c.drainAt = now.Add(c.interval)
	}
	return 0, "", nil
}

// Events streams the events of containers labelled <prefix>.managed=true.
// With a non-zero since, buffered events at or after since (the last 1000
// at most) are replayed first. The event channel closes when ctx ends or the
// stream breaks (an injected failure, BreakEvents); in the latter case one
// error is sent on the error channel first. The error channel is never
// closed.
func (f *Engine) Events(ctx context.Context, prefix string, since time.Time) (<-chan docker.Event, <-chan error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	errc := make(chan error, 1)
	var err error
	defer f.record("events", prefix, &err)
	if err = f.check(ctx, "events"); err != nil {
		errc <- fmt.Errorf("events %s: %w", prefix, err)
		events := make(chan docker.Event)
		close(events)
		return events, errc
	}
	var backlog []docker.Event
	if !since.IsZero() {
		for _, ev := range f.recentHistory() {
			if !ev.Time.Before(since) && isManaged(ev, prefix) {
				backlog = append(backlog, copyEvent(ev))
			}
		}
	}
	sub := &eventSub{prefix: prefix, feed: newFeed(ctx, backlog), errc: errc}
	f.subs = append(f.subs, sub)
	return sub.feed.out, errc
}

// Logs returns a container's synthetic log lines: a few per lifecycle
// change, on stdout and stderr. With Follow, the channel stays open for new
// lines until ctx ends or the container is removed.
func (f *Engine) Logs(ctx context.Context, id string, opts docker.LogOptions) (_ <-chan docker.LogLine, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	c := f.lookup(id)
	defer f.record("logs", nameOr(c, id), &err)
	if err := f.check(ctx, "logs"); err != nil {
		return nil, fmt.Errorf("logs %s: %w", nameOr(c, id), err)
	}
	if c == nil {
		return nil, fmt.Errorf("logs %s: %w", id, docker.ErrNotFound)
	}
	lines := c.logs
	if opts.Tail > 0 && len(lines) > opts.Tail {
		lines = lines[len(lines)-opts.Tail:]
	}
	if opts.Follow {
		fd := newFeed(ctx, slices.Clone(lines))
		c.logFeeds = append(c.logFeeds, fd)
		return fd.out, nil
	}
	out := make(chan docker.LogLine, len(lines))
	for _, l := range lines {
		out <- l
	}
	close(out)
	return out, nil
}

// Tick works out every state change due by now and emits its events, for
// callers that want events to flow without making other calls.
func (f *Engine) Tick() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
}

// lookup finds a container by ID, name or unique ID prefix, or returns nil.
func (f *Engine) lookup(ref string) *fakeContainer {
	if ref == "" {
		return nil
	}
	if c, ok := f.containers[ref]; ok {
		return c
	}
	if c := f.byName(ref); c != nil {
		return c
	}
	var found *fakeContainer
	for id, c := range f.containers {
		if strings.HasPrefix(id, ref) {
			if found != nil {
				return nil // ambiguous
			}
			found = c
		}
	}
	return found
}

func (f *Engine) byName(name string) *fakeContainer {
	for _, c := range f.containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// resolveImage maps a reference or an image ID to the image ID.
func (f *Engine) resolveImage(ref string) (string, bool) {
	if id, ok := f.tags[ref]; ok {
		return id, true
	}
	if _, ok := f.behaviours[ref]; ok {
		return ref, true
	}
	return f.reg.byRepoDigest(ref)
}

// newID returns a 64-hex container ID from the seeded source.
func (f *Engine) newID() string {
	return fmt.Sprintf("%016x%016x%016x%016x", f.rng.Uint64(), f.rng.Uint64(), f.rng.Uint64(), f.rng.Uint64())
}

func nameOr(c *fakeContainer, id string) string {
	if c == nil {
		return id
	}
	return c.Name
}

func copyContainer(c docker.Container) docker.Container {
	c.Labels = copyMap(c.Labels)
	c.Ports = slices.Clone(c.Ports)
	c.Networks = copyMap(c.Networks)
	return c
}

// fakeBridge is the network a container joins when its create names none,
// as on the engine.
const fakeBridge = "bridge"

// address is the IPv4 address of the container created seq-th on network:
// each network is a /16 of its own (bridge 172.17, the next one named
// 172.18, ...), and a container's host part is its creation number, so the
// addresses are deterministic and never shared.
func (f *Engine) address(network string, seq int) string {
	if f.subnets == nil {
		f.subnets = map[string]int{fakeBridge: 17}
	}
	octet, ok := f.subnets[network]
	if !ok {
		octet = 17 + len(f.subnets)
		f.subnets[network] = octet
	}
	host := seq + 1 // .0.1 is the gateway
	return fmt.Sprintf("172.%d.%d.%d", octet, host/256%256, host%256)
}

func copyEvent(e docker.Event) docker.Event {
	e.Attributes = copyMap(e.Attributes)
	return e
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
