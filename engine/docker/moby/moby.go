// Package moby is the moby adapter, rollcall's production docker.Client: the
// one place that speaks the Docker Engine API. It is the only package in
// rollcall that imports github.com/moby/moby; no moby type leaves it, and
// package docker, reconcile, spec, session and tui do not link it.
//
// It is written against API 1.41 (Docker 20.10) and negotiates up to what
// the client library knows, so nothing here relies on a newer endpoint or
// field: one network at create (the rest are connected before start), no
// stop signal on the stop call (the container's own, set at create), and no
// healthcheck start interval.
package moby

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// connectTimeout bounds the ping on construction, so an engine that does not
// answer is an error quickly instead of a hang.
const connectTimeout = 3 * time.Second

// inspectParallelism bounds the inspects List runs at once.
const inspectParallelism = 8

// Moby is the Client for a real Docker engine. It is safe for concurrent use.
type Moby struct {
	cli      *client.Client
	cache    *listCache
	endpoint string // how it was reached, for Info: the host URL (ssh://…, not the client's)
}

var _ docker.Client = (*Moby)(nil)

// New connects to the engine at host ("unix:///var/run/docker.sock",
// "tcp://1.2.3.4:2376", "ssh://deploy@edge-1"). The environment is read as
// the docker CLI reads it: DOCKER_HOST when host is empty, DOCKER_CERT_PATH
// and DOCKER_TLS_VERIFY for a tcp:// host, DOCKER_API_VERSION; the CLI's
// current context is not (see Dial for a context by name). The API version
// is negotiated with the engine (API 1.40 at least). It pings the engine
// first, so an engine that is not there is an error within a few seconds.
func New(ctx context.Context, host string) (*Moby, error) {
	r, err := envRoute(host, os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("connect to docker engine %s: %w", hostOrDefault(host), err)
	}
	return dial(ctx, r)
}

// Dial connects to the engine ep names (see Endpoint), negotiating the API
// version and pinging it as New does; over ssh the ping may take longer
// (the login). The zero Endpoint is New(ctx, "").
func Dial(ctx context.Context, ep Endpoint) (*Moby, error) {
	r, err := ep.resolve(os.Getenv)
	if err != nil {
		return nil, fmt.Errorf("connect to docker engine %s: %w", ep, err)
	}
	return dial(ctx, r)
}

func dial(ctx context.Context, r route) (*Moby, error) {
	opts, timeout, err := r.clientOpts()
	if err != nil {
		return nil, fmt.Errorf("connect to docker engine %s: %w", r.name, err)
	}
	cli, err := client.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to docker engine %s: %w", r.name, err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := cli.Ping(pctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		cli.Close()
		return nil, fmt.Errorf("connect to docker engine %s: %w", r.name, err)
	}
	return &Moby{cli: cli, cache: newListCache(), endpoint: r.name}, nil
}

func hostOrDefault(host string) string {
	if host == "" {
		return "(from environment)"
	}
	return host
}

// Close releases the client's idle connections.
func (m *Moby) Close() error {
	return m.cli.Close()
}

// Info describes the engine: its identity (the ID of `docker info`, one for
// every endpoint that reaches it), the endpoint it was reached by, its
// server version and the API version negotiated with it.
func (m *Moby) Info(ctx context.Context) (docker.EngineInfo, error) {
	v, err := m.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return docker.EngineInfo{}, fmt.Errorf("engine version: %w", err)
	}
	sys, err := m.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return docker.EngineInfo{}, fmt.Errorf("engine info: %w", err)
	}
	return docker.EngineInfo{
		ID:         sys.Info.ID,
		Endpoint:   m.endpoint,
		Version:    v.Version,
		APIVersion: m.cli.ClientVersion(),
	}, nil
}

// List returns every container labelled <prefix>.managed=true, running or
// not. The list endpoint lacks health details, limits, finish time, restart
// count and exit code, so each container is inspected too (a few at a time),
// except one whose inspect is cached and still holds: while an event stream
// of this adapter is live, only the containers an event named, new ones and
// those whose state, health or exit code moved are inspected again (see
// listCache). A container this adapter is acting on is not inspected: its
// last inspect is served with the list's state (see listCache). A container
// removed between the list and its inspect is left out.
func (m *Moby) List(ctx context.Context, prefix string) ([]docker.Container, error) {
	f := client.Filters{}
	f.Add("label", docker.ManagedLabel(prefix)+"=true")
	res, err := m.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", prefix, engineErr(err))
	}

	out := make([]*docker.Container, len(res.Items))
	errs := make([]error, len(res.Items))
	sem := make(chan struct{}, inspectParallelism)
	var wg sync.WaitGroup
	listed := make(map[string]bool, len(res.Items))
	for i, s := range res.Items {
		listed[s.ID] = true
		if c, ok := m.cache.lookup(prefix, s); ok {
			out[i] = &c
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			version := m.cache.versionOf(s.ID)
			r, err := m.cli.ContainerInspect(ctx, s.ID, client.ContainerInspectOptions{})
			switch {
			case cerrdefs.IsNotFound(err):
				// Gone since the list: not an error, just no longer there.
			case err != nil:
				errs[i] = fmt.Errorf("inspect %s: %w", docker.ShortID(s.ID), engineErr(err))
			default:
				c := containerFromInspect(r.Container)
				m.cache.store(s, c, version)
				out[i] = &c
			}
		}()
	}
	wg.Wait()
	m.cache.keep(listed, prefix)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("list containers of %s: %w", prefix, err)
	}
	list := make([]docker.Container, 0, len(out))
	for _, c := range out {
		if c != nil {
			list = append(list, *c)
		}
	}
	return list, nil
}

// Inspect returns one container with the health probe results the engine
// keeps (the last five).
func (m *Moby) Inspect(ctx context.Context, id string) (docker.ContainerDetail, error) {
	r, err := m.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return docker.ContainerDetail{}, fmt.Errorf("inspect %s: %w", docker.ShortID(id), engineErr(err))
	}
	d := docker.ContainerDetail{Container: containerFromInspect(r.Container), Config: configFromInspect(r.Container)}
	if st := r.Container.State; st != nil && st.Health != nil {
		for _, h := range st.Health.Log {
			if h == nil {
				continue
			}
			d.HealthLog = append(d.HealthLog, docker.HealthResult{Start: h.Start, End: h.End, ExitCode: h.ExitCode, Output: h.Output})
		}
	}
	// The image's own defaults tell what the create set from what the
	// image supplies. An image removed since is no error: the diff then
	// says less.
	if img, err := m.cli.ImageInspect(ctx, r.Container.Image); err == nil && img.Config != nil {
		d.Config.ImageKnown = true
		d.Config.ImageCmd = slices.Clone(img.Config.Cmd)
		d.Config.ImageEntrypoint = slices.Clone(img.Config.Entrypoint)
		d.Config.ImageEnv = slices.Clone(img.Config.Env)
		d.Config.ImageLabels = maps.Clone(img.Config.Labels)
	} else if err != nil && ctx.Err() != nil {
		return docker.ContainerDetail{}, fmt.Errorf("inspect %s: %w", docker.ShortID(id), ctx.Err())
	}
	return d, nil
}

// configFromInspect is how the container was created: what the
// field-by-field diff compares.
func configFromInspect(r container.InspectResponse) docker.ContainerConfig {
	var cfg docker.ContainerConfig
	if c := r.Config; c != nil {
		cfg.Cmd = slices.Clone(c.Cmd)
		cfg.Entrypoint = slices.Clone(c.Entrypoint)
		cfg.Env = slices.Clone(c.Env)
		cfg.StopSignal = c.StopSignal
		if hc := c.Healthcheck; hc != nil && len(hc.Test) > 0 && hc.Test[0] != "NONE" {
			cfg.Healthcheck = &docker.Healthcheck{Test: slices.Clone(hc.Test), Interval: hc.Interval, Timeout: hc.Timeout,
				Retries: hc.Retries, StartPeriod: hc.StartPeriod}
		}
	}
	if hc := r.HostConfig; hc != nil {
		for port, bindings := range hc.PortBindings {
			for _, b := range bindings {
				p := docker.PortSpec{ContainerPort: int(port.Num()), Proto: string(port.Proto())}
				if b.HostIP.IsValid() {
					p.HostIP = b.HostIP.String()
				}
				p.HostPort, _ = strconv.Atoi(b.HostPort) // "" is ephemeral: 0
				cfg.Ports = append(cfg.Ports, p)
			}
		}
		docker.SortPortSpecs(cfg.Ports)
		cfg.Mounts = mountsFromInspect(hc.Mounts)
		cfg.ReadOnly = hc.ReadonlyRootfs
	}
	if ns := r.NetworkSettings; ns != nil {
		for name := range ns.Networks {
			cfg.Networks = append(cfg.Networks, name)
		}
		slices.Sort(cfg.Networks)
	}
	return cfg
}

// ImageInspect resolves ref to the image the engine has; an image it lacks
// is ErrNotFound.
func (m *Moby) ImageInspect(ctx context.Context, ref string) (docker.Image, error) {
	r, err := m.cli.ImageInspect(ctx, ref)
	if err != nil {
		return docker.Image{}, fmt.Errorf("inspect image %s: %w", ref, engineErr(err))
	}
	img := docker.Image{ID: r.ID, RepoTags: slices.Clone(r.RepoTags), RepoDigests: slices.Clone(r.RepoDigests),
		OS: r.Os, Architecture: r.Architecture, Variant: r.Variant}
	if r.Config != nil {
		img.Volumes = imageVolumes(r.Config.Volumes)
	}
	return img, nil
}

// Create creates spec.Name and starts it. Every field that the image could
// otherwise supply is set explicitly: the healthcheck (["NONE"] when spec has
// none), and MemorySwap equal to Memory so the container gets no extra swap.
// A name in use is ErrConflict and a missing image ErrNotFound. If the start
// fails, the container is force-removed and the start error returned.
func (m *Moby) Create(ctx context.Context, spec docker.CreateSpec) (string, error) {
	opts, err := createOptions(spec)
	if err != nil {
		return "", fmt.Errorf("create %s: %w", spec.Name, err)
	}
	if err := m.ensureVolumes(ctx, spec.Volumes); err != nil {
		return "", fmt.Errorf("create %s: %w", spec.Name, err)
	}
	res, err := m.cli.ContainerCreate(ctx, opts)
	if cerrdefs.IsConflict(err) {
		return "", fmt.Errorf("create %s: %w", spec.Name, &engineError{kind: docker.ErrConflict, err: err})
	}
	if err != nil {
		return "", fmt.Errorf("create %s: %w", spec.Name, engineErr(err))
	}
	id := res.ID
	// From here to the end of its start (or of the remove after a failed
	// one) the engine may hold the container's lock: a List meanwhile
	// serves what the create asked for, then its inspect from before the
	// start (see listCache), and inspects it only once Create returned.
	defer m.cache.starting(docker.Container{ID: id, Name: spec.Name, Image: spec.Image, Labels: maps.Clone(spec.Labels),
		State: docker.StateCreated, HasHealthcheck: spec.Healthcheck != nil, Limits: spec.Limits, Created: time.Now()})()

	err = m.connectExtraNetworks(ctx, id, spec.Networks, spec.Aliases)
	if err == nil {
		if r, ierr := m.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); ierr == nil {
			m.cache.created(containerFromInspect(r.Container))
		}
		_, err = m.cli.ContainerStart(ctx, id, client.ContainerStartOptions{})
		if err != nil {
			err = fmt.Errorf("start %s: %w", spec.Name, engineErr(err))
		}
	}
	if err != nil {
		// Remove even when ctx is done: a created-but-never-started container
		// would otherwise hold the name and block the next attempt.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, rerr := m.cli.ContainerRemove(rctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); rerr != nil && !cerrdefs.IsNotFound(rerr) {
			err = errors.Join(err, fmt.Errorf("remove %s after failed start: %w", spec.Name, rerr))
		}
		return "", err
	}
	return id, nil
}

// connectExtraNetworks connects every network after the first, which
// createOptions already put in the create call: API 1.41 takes only one
// network at create.
func (m *Moby) connectExtraNetworks(ctx context.Context, id string, networks []string, aliases map[string][]string) error {
	for _, n := range networks[min(1, len(networks)):] {
		opts := client.NetworkConnectOptions{Container: id, EndpointConfig: endpoint(aliases[n])}
		if _, err := m.cli.NetworkConnect(ctx, n, opts); err != nil {
			return fmt.Errorf("connect %s to network %s: %w", docker.ShortID(id), n, engineErr(err))
		}
	}
	return nil
}

// createOptions translates spec into the create call.
func createOptions(spec docker.CreateSpec) (client.ContainerCreateOptions, error) {
	cfg := &container.Config{
		Image:      spec.Image,
		Cmd:        slices.Clone(spec.Command),
		Env:        slices.Clone(spec.Env),
		Labels:     make(map[string]string, len(spec.Labels)),
		StopSignal: spec.StopSignal,
	}
	for k, v := range spec.Labels {
		cfg.Labels[k] = v
	}
	if spec.StopTimeout > 0 {
		secs := ceilSeconds(spec.StopTimeout)
		cfg.StopTimeout = &secs
	}
	if hc := spec.Healthcheck; hc != nil {
		cfg.Healthcheck = &container.HealthConfig{
			Test:        slices.Clone(hc.Test),
			Interval:    hc.Interval,
			Timeout:     hc.Timeout,
			Retries:     hc.Retries,
			StartPeriod: hc.StartPeriod,
		}
	} else {
		cfg.Healthcheck = &container.HealthConfig{Test: []string{"NONE"}}
	}

	restart, err := parseRestartPolicy(spec.Limits.Restart)
	if err != nil {
		return client.ContainerCreateOptions{}, err
	}
	host := &container.HostConfig{
		RestartPolicy:  restart,
		Resources:      memoryResources(spec.Limits),
		ReadonlyRootfs: spec.ReadOnly,
	}
	hostMounts(host, spec.Mounts)

	if len(spec.Ports) > 0 {
		cfg.ExposedPorts = network.PortSet{}
		host.PortBindings = network.PortMap{}
	}
	for _, p := range spec.Ports {
		port, binding, err := portBinding(p)
		if err != nil {
			return client.ContainerCreateOptions{}, err
		}
		cfg.ExposedPorts[port] = struct{}{}
		host.PortBindings[port] = append(host.PortBindings[port], binding)
	}

	var netCfg *network.NetworkingConfig
	if len(spec.Networks) > 0 {
		host.NetworkMode = container.NetworkMode(spec.Networks[0])
		first := spec.Networks[0]
		netCfg = &network.NetworkingConfig{EndpointsConfig: map[string]*network.EndpointSettings{
			first: endpoint(spec.Aliases[first]),
		}}
	}
	if err := applyOptions(cfg, host, spec.Options); err != nil {
		return client.ContainerCreateOptions{}, err
	}
	return client.ContainerCreateOptions{
		Name:             spec.Name,
		Config:           cfg,
		HostConfig:       host,
		NetworkingConfig: netCfg,
	}, nil
}

// endpoint is a network endpoint with the given DNS aliases.
func endpoint(aliases []string) *network.EndpointSettings {
	return &network.EndpointSettings{Aliases: slices.Clone(aliases)}
}

// memoryResources sets NanoCPUs and Memory, and MemorySwap equal to Memory:
// left at 0, the engine would allow as much swap again as memory.
func memoryResources(l docker.Limits) container.Resources {
	r := container.Resources{NanoCPUs: l.NanoCPUs, Memory: l.Memory}
	if l.Memory > 0 {
		r.MemorySwap = l.Memory
	}
	return r
}

// portBinding turns one PortSpec into the engine's port and binding.
func portBinding(p docker.PortSpec) (network.Port, network.PortBinding, error) {
	proto := p.Proto
	if proto == "" {
		proto = "tcp"
	}
	if p.ContainerPort <= 0 || p.ContainerPort > math.MaxUint16 {
		return network.Port{}, network.PortBinding{}, fmt.Errorf("port %d/%s: container port out of range", p.ContainerPort, proto)
	}
	if p.HostPort < 0 || p.HostPort > math.MaxUint16 {
		return network.Port{}, network.PortBinding{}, fmt.Errorf("port %d/%s: host port %d out of range", p.ContainerPort, proto, p.HostPort)
	}
	port, ok := network.PortFrom(uint16(p.ContainerPort), network.IPProtocol(proto))
	if !ok {
		return network.Port{}, network.PortBinding{}, fmt.Errorf("port %d/%s: bad protocol", p.ContainerPort, proto)
	}
	hostIP := p.HostIP
	if hostIP == "" {
		hostIP = "127.0.0.1"
	}
	var b network.PortBinding
	if err := b.HostIP.UnmarshalText([]byte(hostIP)); err != nil {
		return network.Port{}, network.PortBinding{}, fmt.Errorf("port %d/%s: host IP %q: %w", p.ContainerPort, proto, hostIP, err)
	}
	if p.HostPort > 0 {
		b.HostPort = strconv.Itoa(p.HostPort)
	}
	return port, b, nil
}

// Stop stops a container: its stop signal, then SIGKILL after grace (rounded
// up to whole seconds). A grace <= 0 uses the container's own stop timeout.
// Stopping a stopped container is not an error.
func (m *Moby) Stop(ctx context.Context, id string, grace time.Duration) error {
	defer m.cache.begin(id)() // its own change, before the event says so; no inspect meanwhile
	opts := client.ContainerStopOptions{}
	if grace > 0 {
		secs := ceilSeconds(grace)
		opts.Timeout = &secs
	}
	if _, err := m.cli.ContainerStop(ctx, id, opts); err != nil {
		return fmt.Errorf("stop %s: %w", docker.ShortID(id), engineErr(err))
	}
	return nil
}

// Kill sends SIGKILL, as `docker kill` does. It is not part of Client: the
// reconciler never kills; the demo uses it to stage a crash.
func (m *Moby) Kill(ctx context.Context, id string) error {
	if _, err := m.cli.ContainerKill(ctx, id, client.ContainerKillOptions{}); err != nil {
		return fmt.Errorf("kill %s: %w", docker.ShortID(id), engineErr(err))
	}
	return nil
}

// Remove removes a stopped container and its anonymous volumes. A running
// container is refused by the engine; one that does not exist is ErrNotFound.
func (m *Moby) Remove(ctx context.Context, id string) error {
	defer m.cache.begin(id)() // its own change, before the event says so; no inspect meanwhile
	if _, err := m.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{RemoveVolumes: true}); err != nil {
		return fmt.Errorf("remove %s: %w", docker.ShortID(id), engineErr(err))
	}
	return nil
}

// Restart restarts a container in place (same ID), stopping it as Stop does.
func (m *Moby) Restart(ctx context.Context, id string, grace time.Duration) error {
	defer m.cache.changed(id) // its own change, before the event says so (inspected meanwhile: see listCache)
	opts := client.ContainerRestartOptions{}
	if grace > 0 {
		secs := ceilSeconds(grace)
		opts.Timeout = &secs
	}
	if _, err := m.cli.ContainerRestart(ctx, id, opts); err != nil {
		return fmt.Errorf("restart %s: %w", docker.ShortID(id), engineErr(err))
	}
	return nil
}

// Update changes the CPU and memory limits and the restart policy of a
// container in place, without a restart. Memory and MemorySwap are sent
// together, so lowering memory below the current swap limit is accepted.
//
// The engine (20.10) reads 0 as "leave as is": a limit cannot be lifted in
// place. Asking for 0 where the container has a limit is therefore an error
// instead of a silent no-op that would read as drift forever; the container
// must be recreated. An empty Restart leaves the policy as is.
func (m *Moby) Update(ctx context.Context, id string, limits docker.Limits) error {
	defer m.cache.changed(id) // its own change, before the event says so
	restart, err := parseRestartPolicy(limits.Restart)
	if err != nil {
		return fmt.Errorf("update %s: %w", docker.ShortID(id), err)
	}
	if limits.NanoCPUs == 0 || limits.Memory == 0 {
		r, err := m.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
		if err != nil {
			return fmt.Errorf("update %s: %w", docker.ShortID(id), engineErr(err))
		}
		if hc := r.Container.HostConfig; hc != nil {
			if limits.NanoCPUs == 0 && hc.NanoCPUs != 0 {
				return fmt.Errorf("update %s: %w", docker.ShortID(id), errLiftLimit("CPU"))
			}
			if limits.Memory == 0 && hc.Memory != 0 {
				return fmt.Errorf("update %s: %w", docker.ShortID(id), errLiftLimit("memory"))
			}
		}
	}
	res := memoryResources(limits)
	opts := client.ContainerUpdateOptions{Resources: &res}
	if limits.Restart != "" {
		opts.RestartPolicy = &restart
	}
	if _, err := m.cli.ContainerUpdate(ctx, id, opts); err != nil {
		return fmt.Errorf("update %s: %w", docker.ShortID(id), engineErr(err))
	}
	return nil
}

func errLiftLimit(what string) error {
	return fmt.Errorf("the engine cannot lift a %s limit in place; recreate the container", what)
}

// parseRestartPolicy reads "no", "always", "unless-stopped", "on-failure"
// and "on-failure:N". "" is the engine's default (no).
func parseRestartPolicy(s string) (container.RestartPolicy, error) {
	name, count, hasCount := strings.Cut(s, ":")
	p := container.RestartPolicy{Name: container.RestartPolicyMode(name)}
	switch p.Name {
	case "", container.RestartPolicyDisabled, container.RestartPolicyAlways, container.RestartPolicyUnlessStopped:
		if hasCount {
			return container.RestartPolicy{}, fmt.Errorf("restart policy %q: only on-failure takes a retry count", s)
		}
	case container.RestartPolicyOnFailure:
		if hasCount {
			n, err := strconv.Atoi(count)
			if err != nil || n < 0 {
				return container.RestartPolicy{}, fmt.Errorf("restart policy %q: retry count must be a whole number >= 0", s)
			}
			p.MaximumRetryCount = n
		}
	default:
		return container.RestartPolicy{}, fmt.Errorf("restart policy %q: want no, always, unless-stopped, on-failure or on-failure:N", s)
	}
	return p, nil
}

// formatRestartPolicy is parseRestartPolicy's inverse; the engine's empty
// name reads as "no".
func formatRestartPolicy(p container.RestartPolicy) string {
	switch {
	case p.Name == "":
		return string(container.RestartPolicyDisabled)
	case p.Name == container.RestartPolicyOnFailure && p.MaximumRetryCount > 0:
		return fmt.Sprintf("%s:%d", p.Name, p.MaximumRetryCount)
	}
	return string(p.Name)
}

// containerFromInspect maps an inspect answer to rollcall's Container.
func containerFromInspect(r container.InspectResponse) docker.Container {
	c := docker.Container{
		ID:           r.ID,
		Name:         strings.TrimPrefix(r.Name, "/"),
		ImageID:      r.Image,
		Created:      parseTime(r.Created),
		RestartCount: r.RestartCount,
	}
	if cfg := r.Config; cfg != nil {
		c.Image = cfg.Image
		c.Labels = make(map[string]string, len(cfg.Labels))
		for k, v := range cfg.Labels {
			c.Labels[k] = v
		}
		hc := cfg.Healthcheck
		c.HasHealthcheck = hc != nil && len(hc.Test) > 0 && hc.Test[0] != "NONE"
	}
	if st := r.State; st != nil {
		c.State = docker.State(st.Status)
		c.ExitCode = st.ExitCode
		c.OOMKilled = st.OOMKilled
		c.Error = st.Error
		c.StartedAt = parseTime(st.StartedAt)
		c.FinishedAt = parseTime(st.FinishedAt)
		if st.Health != nil && st.Health.Status != container.NoHealthcheck {
			c.Health = docker.Health(st.Health.Status)
			c.HasHealthcheck = true
			c.HealthySinceStart = healthySince(c.Health, st.Health.Log, c.StartedAt)
		}
	}
	if hc := r.HostConfig; hc != nil {
		c.Limits = docker.Limits{
			NanoCPUs: hc.NanoCPUs,
			Memory:   hc.Memory,
			Restart:  formatRestartPolicy(hc.RestartPolicy),
		}
	}
	if ns := r.NetworkSettings; ns != nil {
		c.Ports = publishedPorts(ns.Ports)
		c.Networks = networkAddresses(ns.Networks)
	}
	return c
}

// networkAddresses are a container's IPv4 addresses by network name; ""
// for a network the container is attached to with no address (stopped).
func networkAddresses(eps map[string]*network.EndpointSettings) map[string]string {
	if len(eps) == 0 {
		return nil
	}
	out := make(map[string]string, len(eps))
	for name, ep := range eps {
		ip := ""
		if ep != nil && ep.IPAddress.IsValid() {
			ip = ep.IPAddress.Unmap().String()
		}
		out[name] = ip
	}
	return out
}

// healthySince reports whether a container whose last start was at started
// has been healthy since: it is now, or a probe the engine keeps (the last
// five) passed after the start. A probe that passed before a restart counts
// for nothing. Once the passing probe has scrolled out of the kept five
// (an unhealthy streak longer than that) it reads false, which is then
// judged by the health deadline from the start.
func healthySince(h docker.Health, log []*container.HealthcheckResult, started time.Time) bool {
	if h == docker.HealthHealthy {
		return true
	}
	for _, r := range log {
		if r != nil && r.ExitCode == 0 && !r.Start.Before(started) {
			return true
		}
	}
	return false
}

// publishedPorts flattens the engine's port map, ordered by container port,
// protocol, host IP and host port. Exposed but unpublished ports are left out.
func publishedPorts(pm network.PortMap) []docker.PublishedPort {
	var out []docker.PublishedPort
	for port, bindings := range pm {
		for _, b := range bindings {
			hp, err := strconv.Atoi(b.HostPort)
			if err != nil {
				continue
			}
			pp := docker.PublishedPort{ContainerPort: int(port.Num()), Proto: string(port.Proto()), HostPort: hp}
			if b.HostIP.IsValid() {
				pp.HostIP = b.HostIP.String()
			}
			out = append(out, pp)
		}
	}
	slices.SortFunc(out, func(a, b docker.PublishedPort) int {
		if a.ContainerPort != b.ContainerPort {
			return a.ContainerPort - b.ContainerPort
		}
		if a.Proto != b.Proto {
			return strings.Compare(a.Proto, b.Proto)
		}
		if a.HostIP != b.HostIP {
			return strings.Compare(a.HostIP, b.HostIP)
		}
		return a.HostPort - b.HostPort
	})
	return out
}

// parseTime reads the engine's RFC 3339 times; the engine's "never"
// (0001-01-01T00:00:00Z) and anything unreadable are the zero time.
func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

func ceilSeconds(d time.Duration) int {
	return int((d + time.Second - 1) / time.Second)
}

// engineError keeps the engine's message and adds rollcall's typed error for
// callers that branch on it; errors.Is matches both.
type engineError struct {
	kind error
	err  error
}

func (e *engineError) Error() string   { return e.err.Error() }
func (e *engineError) Unwrap() []error { return []error{e.kind, e.err} }

// engineErr marks the engine's not-found answers with ErrNotFound. Conflicts
// are marked only by Create: ErrConflict means "name in use", while the
// engine also answers 409 to, say, removing a running container.
func engineErr(err error) error {
	if cerrdefs.IsNotFound(err) {
		return &engineError{kind: docker.ErrNotFound, err: err}
	}
	return err
}
