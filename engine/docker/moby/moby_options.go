package moby

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/rollcall/rollcall/engine/docker"
)

// applyOptions sets the create options of o on the container's config and
// host config. createOptions calls it after the networks: a network mode
// (host, none) then with networks set is an error, since the container
// would be on neither as asked. Every field is API 1.41's.
func applyOptions(cfg *container.Config, host *container.HostConfig, o docker.ContainerOptions) error {
	if o.Entrypoint != nil {
		cfg.Entrypoint = slices.Clone(o.Entrypoint)
	}
	cfg.User = o.User
	cfg.WorkingDir = o.WorkingDir
	cfg.Hostname = o.Hostname

	host.CapAdd = slices.Clone(o.CapAdd)
	host.CapDrop = slices.Clone(o.CapDrop)
	host.SecurityOpt = slices.Clone(o.SecurityOpt)
	host.Privileged = o.Privileged
	if o.Init {
		on := true
		host.Init = &on
	}
	host.ShmSize = o.ShmSize
	for _, u := range o.Ulimits {
		host.Ulimits = append(host.Ulimits, &container.Ulimit{Name: u.Name, Soft: u.Soft, Hard: u.Hard})
	}
	if len(o.Sysctls) > 0 {
		host.Sysctls = maps.Clone(o.Sysctls)
	}
	host.ExtraHosts = slices.Clone(o.ExtraHosts)
	for _, s := range o.DNS {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			return fmt.Errorf("dns %q: not an IP address", s)
		}
		host.DNS = append(host.DNS, ip)
	}
	host.DNSSearch = slices.Clone(o.DNSSearch)
	if o.LogDriver != "" || len(o.LogOptions) > 0 {
		host.LogConfig = container.LogConfig{Type: o.LogDriver, Config: maps.Clone(o.LogOptions)}
	}
	for _, s := range o.Expose {
		p, err := network.ParsePort(s)
		if err != nil {
			return fmt.Errorf("expose %q: %w", s, err)
		}
		if cfg.ExposedPorts == nil {
			cfg.ExposedPorts = network.PortSet{}
		}
		cfg.ExposedPorts[p] = struct{}{}
	}
	switch o.NetworkMode {
	case "":
	case docker.NetworkHost, docker.NetworkNone:
		if host.NetworkMode != "" {
			return fmt.Errorf("network mode %s with network %s: a container in the %s mode joins no network", o.NetworkMode, host.NetworkMode, o.NetworkMode)
		}
		if o.NetworkMode == docker.NetworkHost && len(host.PortBindings) > 0 {
			return fmt.Errorf("network mode host with published ports: the container binds host ports itself")
		}
		host.NetworkMode = container.NetworkMode(o.NetworkMode)
	default:
		return fmt.Errorf("network mode %q: only host and none are supported", o.NetworkMode)
	}
	for _, s := range o.Devices {
		d, err := deviceMapping(s)
		if err != nil {
			return err
		}
		host.Devices = append(host.Devices, d)
	}
	host.GroupAdd = slices.Clone(o.GroupAdd)
	return nil
}

// deviceMapping reads "host[:container[:perms]]" as docker run --device
// does: the container path defaults to the host's, the permissions to rwm.
func deviceMapping(s string) (container.DeviceMapping, error) {
	parts := strings.Split(s, ":")
	d := container.DeviceMapping{PathOnHost: parts[0], PathInContainer: parts[0], CgroupPermissions: "rwm"}
	if len(parts) > 3 || parts[0] == "" {
		return d, fmt.Errorf("device %q: want host[:container[:perms]]", s)
	}
	if len(parts) > 1 && parts[1] != "" {
		d.PathInContainer = parts[1]
	}
	if len(parts) > 2 {
		if parts[2] == "" || strings.Trim(parts[2], "rwm") != "" {
			return d, fmt.Errorf("device %q: permissions are some of r, w and m", s)
		}
		d.CgroupPermissions = parts[2]
	}
	return d, nil
}
