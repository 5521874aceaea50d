package moby

import (
	"maps"
	"slices"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"

	"github.com/rollcall/rollcall/engine/docker"
)

func TestCreateOptionsTranslateTheContainerOptions(t *testing.T) {
	spec := docker.CreateSpec{
		Name:  "rollcall-web-1-abcdef12",
		Image: "web:v1",
		Ports: []docker.PortSpec{{ContainerPort: 8080}},
		Options: docker.ContainerOptions{
			Entrypoint:  []string{"/tini", "--"},
			User:        "1000:1000",
			WorkingDir:  "/srv",
			Hostname:    "web-1",
			CapAdd:      []string{"NET_ADMIN"},
			CapDrop:     []string{"ALL"},
			SecurityOpt: []string{"no-new-privileges:true"},
			Privileged:  true,
			Init:        true,
			ShmSize:     128 << 20,
			Ulimits:     []docker.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}},
			Sysctls:     map[string]string{"net.core.somaxconn": "1024"},
			ExtraHosts:  []string{"db:10.0.0.5"},
			DNS:         []string{"1.1.1.1", "2606:4700:4700::1111"},
			DNSSearch:   []string{"example.com"},
			LogDriver:   "json-file",
			LogOptions:  map[string]string{"max-size": "10m"},
			Expose:      []string{"9000/tcp", "53/udp"},
			Devices:     []string{"/dev/fuse", "/dev/sda:/dev/xvda:r"},
			GroupAdd:    []string{"audio"},
		},
	}
	o, err := createOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, h := o.Config, o.HostConfig
	if !slices.Equal(c.Entrypoint, []string{"/tini", "--"}) || c.User != "1000:1000" || c.WorkingDir != "/srv" || c.Hostname != "web-1" {
		t.Errorf("config entrypoint %q user %q workdir %q hostname %q", c.Entrypoint, c.User, c.WorkingDir, c.Hostname)
	}
	if !slices.Equal(h.CapAdd, []string{"NET_ADMIN"}) || !slices.Equal(h.CapDrop, []string{"ALL"}) || !slices.Equal(h.SecurityOpt, []string{"no-new-privileges:true"}) || !h.Privileged {
		t.Errorf("caps %v/%v, security %v, privileged %v", h.CapAdd, h.CapDrop, h.SecurityOpt, h.Privileged)
	}
	if h.Init == nil || !*h.Init || h.ShmSize != 128<<20 {
		t.Errorf("init %v, shm %d", h.Init, h.ShmSize)
	}
	if len(h.Ulimits) != 1 || *h.Ulimits[0] != (container.Ulimit{Name: "nofile", Soft: 1024, Hard: 4096}) {
		t.Errorf("ulimits %v", h.Ulimits)
	}
	if !maps.Equal(h.Sysctls, spec.Options.Sysctls) || !slices.Equal(h.ExtraHosts, spec.Options.ExtraHosts) || !slices.Equal(h.DNSSearch, spec.Options.DNSSearch) {
		t.Errorf("sysctls %v, extra hosts %v, dns search %v", h.Sysctls, h.ExtraHosts, h.DNSSearch)
	}
	if len(h.DNS) != 2 || h.DNS[0].String() != "1.1.1.1" || h.DNS[1].String() != "2606:4700:4700::1111" {
		t.Errorf("dns %v", h.DNS)
	}
	if h.LogConfig.Type != "json-file" || h.LogConfig.Config["max-size"] != "10m" {
		t.Errorf("log config %+v", h.LogConfig)
	}
	for _, p := range []string{"8080/tcp", "9000/tcp", "53/udp"} {
		if _, ok := c.ExposedPorts[network.MustParsePort(p)]; !ok {
			t.Errorf("exposed %v lacks %s", c.ExposedPorts, p)
		}
	}
	wantDevices := []container.DeviceMapping{
		{PathOnHost: "/dev/fuse", PathInContainer: "/dev/fuse", CgroupPermissions: "rwm"},
		{PathOnHost: "/dev/sda", PathInContainer: "/dev/xvda", CgroupPermissions: "r"},
	}
	if !slices.Equal(h.Devices, wantDevices) || !slices.Equal(h.GroupAdd, []string{"audio"}) {
		t.Errorf("devices %+v, group add %v", h.Devices, h.GroupAdd)
	}
	if h.NetworkMode != "" || o.NetworkingConfig != nil {
		t.Errorf("network mode %q, networking %v; want the default", h.NetworkMode, o.NetworkingConfig)
	}

	// The zero options leave everything to the image and the engine.
	spec.Options = docker.ContainerOptions{}
	o, err = createOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	if c, h := o.Config, o.HostConfig; c.Entrypoint != nil || c.User != "" || c.Hostname != "" || h.Init != nil || h.Privileged || h.LogConfig.Type != "" || h.Ulimits != nil || h.DNS != nil {
		t.Errorf("zero options: config %+v, host %+v", c, h)
	}

	// host and none take no network, and host no published port.
	spec.Ports = nil
	for _, mode := range []string{docker.NetworkHost, docker.NetworkNone} {
		spec.Options = docker.ContainerOptions{NetworkMode: mode}
		o, err = createOptions(spec)
		if err != nil || string(o.HostConfig.NetworkMode) != mode || o.NetworkingConfig != nil {
			t.Errorf("network mode %s: %v, mode %q, networking %v", mode, err, o.HostConfig.NetworkMode, o.NetworkingConfig)
		}
	}
	bad := []docker.CreateSpec{
		{Name: "a", Image: "i", Networks: []string{"front"}, Options: docker.ContainerOptions{NetworkMode: "host"}},
		{Name: "a", Image: "i", Ports: []docker.PortSpec{{ContainerPort: 80, HostPort: 80}}, Options: docker.ContainerOptions{NetworkMode: "host"}},
		{Name: "a", Image: "i", Options: docker.ContainerOptions{NetworkMode: "container:db"}},
		{Name: "a", Image: "i", Options: docker.ContainerOptions{DNS: []string{"dns.example"}}},
		{Name: "a", Image: "i", Options: docker.ContainerOptions{Expose: []string{"http"}}},
		{Name: "a", Image: "i", Options: docker.ContainerOptions{Devices: []string{"/dev/a:/dev/b:rx"}}},
		{Name: "a", Image: "i", Options: docker.ContainerOptions{Devices: []string{"a:b:c:d"}}},
	}
	for _, s := range bad {
		if _, err := createOptions(s); err == nil {
			t.Errorf("createOptions(%+v): nil error", s.Options)
		}
	}
}
