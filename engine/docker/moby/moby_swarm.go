package moby

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/api/types/swarm"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// This file is the Swarm half of the adapter (DESIGN §13): *Moby talks to
// a swarm manager as docker.Swarm. A spec is checked (ServiceSpec.Check)
// before it is sent, and written so that it reads back as it was written:
// the task template's command is the service's args and its entrypoint the
// service's command (as `docker stack deploy` writes them), a task without
// a healthcheck disables the image's, networks are sent by name and read
// back by name (the engine stores their IDs). A write asks the registry
// for the image's digest only when the spec says so (ResolveImage, the
// file's pull: always; else as `--no-resolve-image`); writes carry
// the docker CLI's credentials for the image's registry, for the nodes'
// pulls.

var _ docker.Swarm = (*Moby)(nil)

// SwarmInfo describes the swarm from `docker info`'s swarm section; an
// engine that is not an active manager is ErrNotManager.
func (m *Moby) SwarmInfo(ctx context.Context) (docker.SwarmInfo, error) {
	res, err := m.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return docker.SwarmInfo{}, fmt.Errorf("swarm info: %w", engineErr(err))
	}
	sw := res.Info.Swarm
	if sw.LocalNodeState != swarm.LocalNodeStateActive || !sw.ControlAvailable || sw.Cluster == nil {
		role := "not in a swarm"
		switch {
		case sw.LocalNodeState == swarm.LocalNodeStateActive:
			role = "a worker, not a manager"
		case sw.LocalNodeState != swarm.LocalNodeStateInactive && sw.LocalNodeState != "":
			role = "in swarm state " + string(sw.LocalNodeState)
		}
		return docker.SwarmInfo{}, fmt.Errorf("swarm info of %s: the engine is %s: %w", m.endpoint, role, docker.ErrNotManager)
	}
	return docker.SwarmInfo{ClusterID: sw.Cluster.ID, NodeID: sw.NodeID, Managers: sw.Managers, Nodes: sw.Nodes}, nil
}

// managedServices lists the services labelled <prefix>.managed=true.
func (m *Moby) managedServices(ctx context.Context, prefix string) ([]swarm.Service, error) {
	f := client.Filters{}
	f.Add("label", docker.ManagedLabel(prefix)+"=true")
	res, err := m.cli.ServiceList(ctx, client.ServiceListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list services of %s: %w", prefix, engineErr(err))
	}
	return res.Items, nil
}

// Services returns the services labelled <prefix>.managed=true, by name,
// their specs as rollcall wrote them.
func (m *Moby) Services(ctx context.Context, prefix string) ([]docker.Service, error) {
	items, err := m.managedServices(ctx, prefix)
	if err != nil {
		return nil, err
	}
	var names map[string]string
	if slices.ContainsFunc(items, hasNetworks) {
		if names, err = m.networkNames(ctx); err != nil {
			return nil, fmt.Errorf("list services of %s: %w", prefix, err)
		}
	}
	out := make([]docker.Service, 0, len(items))
	for _, s := range items {
		out = append(out, serviceFromSwarm(s, names))
	}
	slices.SortFunc(out, func(a, b docker.Service) int { return cmp.Compare(a.Spec.Name, b.Spec.Name) })
	return out, nil
}

func hasNetworks(s swarm.Service) bool {
	return len(s.Spec.TaskTemplate.Networks) > 0 || (s.PreviousSpec != nil && len(s.PreviousSpec.TaskTemplate.Networks) > 0)
}

// networkNames are the engine's networks' names by ID: a service's spec
// names its networks by the IDs the engine stored.
func (m *Moby) networkNames(ctx context.Context) (map[string]string, error) {
	res, err := m.cli.NetworkList(ctx, client.NetworkListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", engineErr(err))
	}
	names := make(map[string]string, len(res.Items))
	for _, n := range res.Items {
		names[n.ID] = n.Name
	}
	return names, nil
}

// Tasks returns every task the manager keeps of the managed services of
// prefix, by service name, slot and age.
func (m *Moby) Tasks(ctx context.Context, prefix string) ([]docker.Task, error) {
	items, err := m.managedServices(ctx, prefix)
	if err != nil || len(items) == 0 {
		return nil, err // no filter would list every task of the swarm
	}
	f := client.Filters{}
	names := make(map[string]string, len(items))
	for _, s := range items {
		f.Add("service", s.ID)
		names[s.ID] = s.Spec.Name
	}
	res, err := m.cli.TaskList(ctx, client.TaskListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list tasks of %s: %w", prefix, engineErr(err))
	}
	out := make([]docker.Task, 0, len(res.Items))
	for _, t := range res.Items {
		if _, ok := names[t.ServiceID]; ok {
			out = append(out, taskFromSwarm(t, prefix))
		}
	}
	slices.SortFunc(out, func(a, b docker.Task) int {
		return cmp.Or(cmp.Compare(names[a.ServiceID], names[b.ServiceID]), cmp.Compare(a.Slot, b.Slot),
			a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func taskFromSwarm(t swarm.Task, prefix string) docker.Task {
	out := docker.Task{
		ID: t.ID, ServiceID: t.ServiceID, Slot: t.Slot, NodeID: t.NodeID,
		Desired: docker.TaskState(t.DesiredState), State: docker.TaskState(t.Status.State),
		Message: t.Status.Message, Err: t.Status.Err, Since: t.Status.Timestamp, CreatedAt: t.CreatedAt,
	}
	if cs := t.Status.ContainerStatus; cs != nil {
		out.ContainerID, out.ExitCode = cs.ContainerID, cs.ExitCode
	}
	if cs := t.Spec.ContainerSpec; cs != nil {
		out.Workload = cs.Labels[docker.WorkloadLabel(prefix)]
		out.Spec = cs.Labels[docker.SpecLabel(prefix)]
		out.Image = cs.Image
	}
	return out
}

// Nodes returns the swarm's nodes.
func (m *Moby) Nodes(ctx context.Context) ([]docker.Node, error) {
	res, err := m.cli.NodeList(ctx, client.NodeListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", engineErr(err))
	}
	out := make([]docker.Node, 0, len(res.Items))
	for _, n := range res.Items {
		dn := docker.Node{ID: n.ID, Hostname: n.Description.Hostname, State: docker.NodeState(n.Status.State),
			Availability: string(n.Spec.Availability), Addr: n.Status.Addr}
		if ms := n.ManagerStatus; ms != nil {
			dn.Manager, dn.Leader = true, ms.Leader
		}
		out = append(out, dn)
	}
	slices.SortFunc(out, func(a, b docker.Node) int {
		return cmp.Or(cmp.Compare(a.Hostname, b.Hostname), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// CreateService creates a service of spec; a name in use is ErrConflict.
func (m *Moby) CreateService(ctx context.Context, spec docker.ServiceSpec) (string, error) {
	ss, auth, err := swarmWrite(spec)
	if err != nil {
		return "", fmt.Errorf("create service %s: %w", spec.Name, err)
	}
	res, err := m.cli.ServiceCreate(ctx, client.ServiceCreateOptions{Spec: ss, EncodedRegistryAuth: auth, QueryRegistry: spec.ResolveImage})
	if cerrdefs.IsConflict(err) {
		return "", fmt.Errorf("create service %s: %w", spec.Name, &engineError{kind: docker.ErrConflict, err: err})
	}
	if err != nil {
		return "", fmt.Errorf("create service %s: %w", spec.Name, engineErr(err))
	}
	return res.ID, nil
}

// UpdateService writes a service's whole spec at version; a stale version
// is ErrOutOfSequence.
func (m *Moby) UpdateService(ctx context.Context, id string, version uint64, spec docker.ServiceSpec) error {
	ss, auth, err := swarmWrite(spec)
	if err != nil {
		return fmt.Errorf("update service %s: %w", spec.Name, err)
	}
	_, err = m.cli.ServiceUpdate(ctx, id, client.ServiceUpdateOptions{Version: swarm.Version{Index: version}, Spec: ss,
		EncodedRegistryAuth: auth, QueryRegistry: spec.ResolveImage})
	if outOfSequence(err) {
		return fmt.Errorf("update service %s at version %d: %w", spec.Name, version, &engineError{kind: docker.ErrOutOfSequence, err: err})
	}
	if err != nil {
		return fmt.Errorf("update service %s: %w", spec.Name, engineErr(err))
	}
	return nil
}

// outOfSequence reports whether err is the manager's "update out of
// sequence": swarmkit's store returns it as an untyped error, which the
// engine passes on as a 500 with those words and nothing else to tell it
// by (Engine 20.10). This adapter is the one place that reads them.
func outOfSequence(err error) bool {
	return err != nil && strings.Contains(err.Error(), "update out of sequence")
}

// RemoveService removes a service and, through the manager, its tasks.
func (m *Moby) RemoveService(ctx context.Context, id string) error {
	if _, err := m.cli.ServiceRemove(ctx, id, client.ServiceRemoveOptions{}); err != nil {
		return fmt.Errorf("remove service %s: %w", id, engineErr(err))
	}
	return nil
}

// swarmWrite checks spec and translates it for a create or an update,
// with the registry credentials of its image.
func swarmWrite(spec docker.ServiceSpec) (swarm.ServiceSpec, string, error) {
	if err := spec.Check(); err != nil {
		return swarm.ServiceSpec{}, "", err
	}
	ss, err := serviceToSwarm(spec)
	if err != nil {
		return swarm.ServiceSpec{}, "", err
	}
	auth, perr := registryAuth(spec.Task.Image)
	if perr != nil {
		return swarm.ServiceSpec{}, "", perr
	}
	return ss, auth, nil
}

// serviceToSwarm is a checked spec as the engine takes it.
func serviceToSwarm(spec docker.ServiceSpec) (swarm.ServiceSpec, error) {
	task, err := taskToSwarm(spec.Task)
	if err != nil {
		return swarm.ServiceSpec{}, err
	}
	replicas := uint64(spec.Replicas)
	ss := swarm.ServiceSpec{
		Annotations:    swarm.Annotations{Name: spec.Name, Labels: maps.Clone(spec.Labels)},
		TaskTemplate:   task,
		Mode:           swarm.ServiceMode{Replicated: &swarm.ReplicatedService{Replicas: &replicas}},
		UpdateConfig:   updateToSwarm(spec.Update),
		RollbackConfig: updateToSwarm(spec.Rollback),
	}
	if p := spec.Placement; !p.IsZero() {
		ss.TaskTemplate.Placement = &swarm.Placement{Constraints: slices.Clone(p.Constraints), MaxReplicas: uint64(p.MaxReplicas)}
		for _, d := range p.Preferences {
			ss.TaskTemplate.Placement.Preferences = append(ss.TaskTemplate.Placement.Preferences,
				swarm.PlacementPreference{Spread: &swarm.SpreadOver{SpreadDescriptor: d}})
		}
	}
	if r := spec.Restart; r != (docker.SwarmRestart{}) {
		delay, window, attempts := r.Delay, r.Window, uint64(r.MaxAttempts)
		ss.TaskTemplate.RestartPolicy = &swarm.RestartPolicy{Condition: swarm.RestartPolicyCondition(r.Condition),
			Delay: &delay, MaxAttempts: &attempts, Window: &window}
	}
	if rv := spec.Reservations; rv != (docker.Reservations{}) {
		if ss.TaskTemplate.Resources == nil {
			ss.TaskTemplate.Resources = &swarm.ResourceRequirements{}
		}
		ss.TaskTemplate.Resources.Reservations = &swarm.Resources{NanoCPUs: rv.NanoCPUs, MemoryBytes: rv.Memory}
	}
	if spec.EndpointMode != "" || len(spec.Ports) > 0 {
		ep := &swarm.EndpointSpec{Mode: swarm.ResolutionMode(spec.EndpointMode)}
		for _, p := range spec.Ports {
			ep.Ports = append(ep.Ports, swarm.PortConfig{Protocol: network.IPProtocol(p.Proto), TargetPort: uint32(p.Target),
				PublishedPort: uint32(p.Published), PublishMode: swarm.PortConfigPublishMode(p.Mode)})
		}
		ss.EndpointSpec = ep
	}
	return ss, nil
}

// updateToSwarm: the zero UpdateConfig is none (Swarm's defaults).
func updateToSwarm(u docker.UpdateConfig) *swarm.UpdateConfig {
	if u == (docker.UpdateConfig{}) {
		return nil
	}
	return &swarm.UpdateConfig{Parallelism: uint64(u.Parallelism), Delay: u.Delay, Monitor: u.Monitor,
		FailureAction: swarm.FailureAction(u.FailureAction), Order: swarm.UpdateOrder(u.Order), MaxFailureRatio: u.MaxFailureRatio}
}

func taskToSwarm(t docker.CreateSpec) (swarm.TaskSpec, error) {
	o := t.Options
	cs := &swarm.ContainerSpec{
		Image:          t.Image,
		Labels:         maps.Clone(t.Labels),
		Command:        slices.Clone(o.Entrypoint),
		Args:           slices.Clone(t.Command),
		Hostname:       o.Hostname,
		Env:            slices.Clone(t.Env),
		Dir:            o.WorkingDir,
		User:           o.User,
		Groups:         slices.Clone(o.GroupAdd),
		StopSignal:     t.StopSignal,
		ReadOnly:       t.ReadOnly,
		Sysctls:        maps.Clone(o.Sysctls),
		CapabilityAdd:  slices.Clone(o.CapAdd),
		CapabilityDrop: slices.Clone(o.CapDrop),
		// No healthcheck of rollcall's disables the image's, as at a
		// container's create.
		Healthcheck: &container.HealthConfig{Test: []string{"NONE"}},
	}
	if hc := t.Healthcheck; hc != nil {
		cs.Healthcheck = &container.HealthConfig{Test: slices.Clone(hc.Test), Interval: hc.Interval, Timeout: hc.Timeout,
			Retries: hc.Retries, StartPeriod: hc.StartPeriod}
	}
	if o.Init {
		on := true
		cs.Init = &on
	}
	if t.StopTimeout > 0 {
		grace := t.StopTimeout
		cs.StopGracePeriod = &grace
	}
	for _, h := range o.ExtraHosts {
		name, ip, _ := strings.Cut(h, ":") // "host:ip", as a container's; a service's is "ip host"
		cs.Hosts = append(cs.Hosts, ip+" "+name)
	}
	if len(o.DNS) > 0 || len(o.DNSSearch) > 0 {
		cs.DNSConfig = &swarm.DNSConfig{Search: slices.Clone(o.DNSSearch)}
		for _, s := range o.DNS {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				return swarm.TaskSpec{}, fmt.Errorf("dns %q: not an IP address", s)
			}
			cs.DNSConfig.Nameservers = append(cs.DNSConfig.Nameservers, ip)
		}
	}
	for _, u := range o.Ulimits {
		cs.Ulimits = append(cs.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	for _, m := range t.Mounts {
		sm := mount.Mount{Type: mount.Type(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
		if m.Type == string(mount.TypeTmpfs) && m.Size > 0 {
			sm.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: m.Size}
		}
		if i := slices.IndexFunc(t.Volumes, func(v docker.VolumeSpec) bool { return v.Name == m.Source }); m.Type == string(mount.TypeVolume) && i >= 0 {
			v := t.Volumes[i]
			sm.VolumeOptions = &mount.VolumeOptions{Labels: maps.Clone(v.Labels)}
			if v.Driver != "" || len(v.DriverOpts) > 0 {
				sm.VolumeOptions.DriverConfig = &mount.Driver{Name: v.Driver, Options: maps.Clone(v.DriverOpts)}
			}
		}
		cs.Mounts = append(cs.Mounts, sm)
	}

	task := swarm.TaskSpec{ContainerSpec: cs}
	if t.Limits.NanoCPUs != 0 || t.Limits.Memory != 0 {
		task.Resources = &swarm.ResourceRequirements{Limits: &swarm.Limit{NanoCPUs: t.Limits.NanoCPUs, MemoryBytes: t.Limits.Memory}}
	}
	for _, n := range t.Networks {
		task.Networks = append(task.Networks, swarm.NetworkAttachmentConfig{Target: n, Aliases: slices.Clone(t.Aliases[n])})
	}
	if o.NetworkMode == docker.NetworkHost {
		task.Networks = []swarm.NetworkAttachmentConfig{{Target: docker.NetworkHost}}
	}
	if o.LogDriver != "" || len(o.LogOptions) > 0 {
		task.LogDriver = &swarm.Driver{Name: o.LogDriver, Options: maps.Clone(o.LogOptions)}
	}
	return task, nil
}

// serviceFromSwarm is a service as rollcall reads it: its spec in the
// normal form of docker.ServiceSpec, networks by name (names: by ID).
func serviceFromSwarm(s swarm.Service, names map[string]string) docker.Service {
	out := docker.Service{ID: s.ID, Version: s.Version.Index, Spec: specFromSwarm(s.Spec, names),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
	if s.PreviousSpec != nil {
		prev := specFromSwarm(*s.PreviousSpec, names)
		out.PreviousSpec = &prev
	}
	if st := s.UpdateStatus; st != nil {
		out.UpdateState, out.UpdateMessage = docker.UpdateState(st.State), st.Message
		if st.StartedAt != nil {
			out.UpdateStarted = *st.StartedAt
		}
	}
	return out
}

func specFromSwarm(ss swarm.ServiceSpec, names map[string]string) docker.ServiceSpec {
	spec := docker.ServiceSpec{
		Name:     ss.Name,
		Labels:   nilIfNone(ss.Labels),
		Task:     taskFromSwarmSpec(ss.TaskTemplate, names),
		Update:   updateFromSwarm(ss.UpdateConfig),
		Rollback: updateFromSwarm(ss.RollbackConfig),
	}
	if p := ss.TaskTemplate.Placement; p != nil {
		spec.Placement = docker.Placement{Constraints: nilIfEmpty(p.Constraints), MaxReplicas: int(p.MaxReplicas)}
		for _, pref := range p.Preferences {
			if pref.Spread != nil {
				spec.Placement.Preferences = append(spec.Placement.Preferences, pref.Spread.SpreadDescriptor)
			}
		}
	}
	if rp := ss.TaskTemplate.RestartPolicy; rp != nil {
		spec.Restart.Condition = string(rp.Condition)
		if rp.Delay != nil {
			spec.Restart.Delay = *rp.Delay
		}
		if rp.MaxAttempts != nil {
			spec.Restart.MaxAttempts = int(*rp.MaxAttempts)
		}
		if rp.Window != nil {
			spec.Restart.Window = *rp.Window
		}
	}
	if r := ss.TaskTemplate.Resources; r != nil && r.Reservations != nil {
		spec.Reservations = docker.Reservations{NanoCPUs: r.Reservations.NanoCPUs, Memory: r.Reservations.MemoryBytes}
	}
	if r := ss.Mode.Replicated; r != nil && r.Replicas != nil {
		spec.Replicas = int(*r.Replicas)
	}
	if ep := ss.EndpointSpec; ep != nil {
		spec.EndpointMode = string(ep.Mode)
		for _, p := range ep.Ports {
			spec.Ports = append(spec.Ports, docker.ServicePort{Target: int(p.TargetPort), Published: int(p.PublishedPort),
				Proto: string(p.Protocol), Mode: string(p.PublishMode)})
		}
	}
	return spec
}

func updateFromSwarm(u *swarm.UpdateConfig) docker.UpdateConfig {
	if u == nil {
		return docker.UpdateConfig{}
	}
	return docker.UpdateConfig{Parallelism: int(u.Parallelism), Delay: u.Delay, Monitor: u.Monitor,
		FailureAction: string(u.FailureAction), Order: string(u.Order), MaxFailureRatio: u.MaxFailureRatio}
}

func taskFromSwarmSpec(ts swarm.TaskSpec, names map[string]string) docker.CreateSpec {
	var t docker.CreateSpec
	if cs := ts.ContainerSpec; cs != nil {
		t.Image = cs.Image
		t.Labels = nilIfNone(cs.Labels)
		t.Command = nilIfEmpty(cs.Args)
		t.Env = nilIfEmpty(cs.Env)
		t.StopSignal = cs.StopSignal
		t.ReadOnly = cs.ReadOnly
		if cs.StopGracePeriod != nil {
			t.StopTimeout = *cs.StopGracePeriod
		}
		if hc := cs.Healthcheck; hc != nil && len(hc.Test) > 0 && hc.Test[0] != "NONE" {
			t.Healthcheck = &docker.Healthcheck{Test: slices.Clone(hc.Test), Interval: hc.Interval, Timeout: hc.Timeout,
				Retries: hc.Retries, StartPeriod: hc.StartPeriod}
		}
		o := &t.Options
		o.Entrypoint = nilIfEmpty(cs.Command)
		o.User, o.WorkingDir, o.Hostname = cs.User, cs.Dir, cs.Hostname
		o.GroupAdd = nilIfEmpty(cs.Groups)
		o.CapAdd, o.CapDrop = nilIfEmpty(cs.CapabilityAdd), nilIfEmpty(cs.CapabilityDrop)
		o.Sysctls = nilIfNone(cs.Sysctls)
		o.Init = cs.Init != nil && *cs.Init
		for _, h := range cs.Hosts {
			if f := strings.Fields(h); len(f) >= 2 {
				for _, name := range f[1:] {
					o.ExtraHosts = append(o.ExtraHosts, name+":"+f[0])
				}
			}
		}
		if dc := cs.DNSConfig; dc != nil {
			for _, ip := range dc.Nameservers {
				o.DNS = append(o.DNS, ip.String())
			}
			o.DNSSearch = nilIfEmpty(dc.Search)
		}
		for _, u := range cs.Ulimits {
			if u != nil {
				o.Ulimits = append(o.Ulimits, docker.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
			}
		}
		for _, m := range cs.Mounts {
			dm := docker.Mount{Type: string(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
			if m.TmpfsOptions != nil {
				dm.Size = m.TmpfsOptions.SizeBytes
			}
			t.Mounts = append(t.Mounts, dm)
			if vo := m.VolumeOptions; vo != nil && m.Type == mount.TypeVolume &&
				!slices.ContainsFunc(t.Volumes, func(v docker.VolumeSpec) bool { return v.Name == m.Source }) {
				v := docker.VolumeSpec{Name: m.Source, Labels: nilIfNone(vo.Labels)}
				if d := vo.DriverConfig; d != nil {
					v.Driver, v.DriverOpts = d.Name, nilIfNone(d.Options)
				}
				t.Volumes = append(t.Volumes, v)
			}
		}
	}
	if r := ts.Resources; r != nil && r.Limits != nil {
		t.Limits.NanoCPUs, t.Limits.Memory = r.Limits.NanoCPUs, r.Limits.MemoryBytes
	}
	for _, n := range ts.Networks {
		name := cmp.Or(names[n.Target], n.Target)
		if name == docker.NetworkHost && len(ts.Networks) == 1 {
			t.Options.NetworkMode = docker.NetworkHost
			break
		}
		t.Networks = append(t.Networks, name)
		if len(n.Aliases) > 0 {
			if t.Aliases == nil {
				t.Aliases = map[string][]string{}
			}
			t.Aliases[name] = slices.Clone(n.Aliases)
		}
	}
	if d := ts.LogDriver; d != nil {
		t.Options.LogDriver, t.Options.LogOptions = d.Name, nilIfNone(d.Options)
	}
	return t
}

// nilIfEmpty and nilIfNone are a list and a map, or nil when empty: the
// normal form of a spec read back (the engine keeps no empty list or map
// apart from none).
func nilIfEmpty[E any](s []E) []E {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}

func nilIfNone[K comparable, V any](m map[K]V) map[K]V {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}
