package load

import (
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// TestComposeMapsTheCreateOptions: a service with every create option maps
// onto the workload's Options, with no warning.
func TestComposeMapsTheCreateOptions(t *testing.T) {
	d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(`
services:
  web:
    image: app
    entrypoint: /tini --
    user: "1000:1000"
    working_dir: /srv
    hostname: web
    cap_add: [NET_ADMIN]
    cap_drop: [ALL]
    security_opt: ["no-new-privileges:true"]
    privileged: true
    init: true
    shm_size: 128m
    ulimits:
      nproc: 512
      nofile: {soft: 1024, hard: 4096}
    sysctls:
      net.core.somaxconn: 1024
    extra_hosts: ["db:10.0.0.5", "gw=host-gateway"]
    dns: [1.1.1.1, 8.8.8.8]
    dns_search: example.com
    logging:
      driver: json-file
      options: {max-size: 10m}
    expose: ["9000", "53/udp"]
    devices: ["/dev/fuse", "/dev/sda:/dev/xvda:r"]
    group_add: [audio]
  host:
    image: agent
    network_mode: host
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := spec.Options{
		Entrypoint: []string{"/tini", "--"}, User: "1000:1000", WorkingDir: "/srv", Hostname: "web",
		CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges:true"},
		Privileged: true, Init: true, ShmSize: 128 << 20,
		Ulimits:    []spec.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}, {Name: "nproc", Soft: 512, Hard: 512}},
		Sysctls:    map[string]string{"net.core.somaxconn": "1024"},
		ExtraHosts: []string{"db:10.0.0.5", "gw:host-gateway"},
		DNS:        []string{"1.1.1.1", "8.8.8.8"}, DNSSearch: []string{"example.com"},
		LogDriver: "json-file", LogOptions: map[string]string{"max-size": "10m"},
		Expose:  []string{"9000/tcp", "53/udp"},
		Devices: []string{"/dev/fuse:/dev/fuse:rwm", "/dev/sda:/dev/xvda:r"}, GroupAdd: []string{"audio"},
	}
	if got := d.Workloads["web"].Options; !reflect.DeepEqual(got, want) {
		t.Errorf("options\n got %+v\nwant %+v", got, want)
	}
	if h := d.Workloads["host"]; h.Options.NetworkMode != spec.NetworkHost || h.Networks != nil || h.EffectiveOrder() != spec.OrderStopFirst {
		t.Errorf("network_mode host: %+v, networks %v, order %s", h.Options, h.Networks, h.EffectiveOrder())
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings:\n%v", spec.ErrorList(d.Warnings))
	}
}

// A create option rollcall refuses is an error at the compose attribute,
// named by its compose path.
func TestComposeOptionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		line, col int
		msg, hint string
	}{
		{"network_mode of another service", "services:\n  db: {image: postgres}\n  web:\n    image: app\n    network_mode: \"service:db\"\n",
			5, 19, `services.web.network_mode: "service:db"`, "put both workloads on one network and use its DNS"},
		{"network_mode host with ports: dropped with a warning, as the engine does", "services:\n  web:\n    image: app\n    network_mode: host\n    ports: [\"127.0.0.1:80:80\"]\n",
			0, 0, "", ""},
		{"ulimit soft above hard", "services:\n  web:\n    image: app\n    ulimits:\n      nofile: {soft: 10, hard: 5}\n",
			5, 15, "services.web.ulimits.nofile: soft 10 above hard 5", "at most the hard"},
		{"logging driver", "services:\n  web:\n    image: app\n    logging:\n      driver: \"\"\n      options: {a: b}\n",
			0, 0, "", ""}, // an empty driver is compose's "none given": accepted
		{"dns not an IP", "services:\n  web:\n    image: app\n    dns: [resolver.local]\n",
			4, 11, `services.web.dns[0]: "resolver.local" is not an IP address`, "1.1.1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "compose.yaml")
			_, err := ParseCompose(path, []byte(tc.src), nil)
			if tc.msg == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var list spec.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("got %v; want an ErrorList", err)
			}
			for _, e := range list {
				if strings.Contains(e.Msg, tc.msg) {
					if e.File != path || e.Line != tc.line || e.Col != tc.col || !strings.Contains(e.Hint, tc.hint) {
						t.Errorf("got %s:%d:%d hint %q; want %d:%d hint containing %q", e.File, e.Line, e.Col, e.Hint, tc.line, tc.col, tc.hint)
					}
					return
				}
			}
			t.Errorf("no error containing %q in:\n%v", tc.msg, list)
		})
	}
}

// TestComposeAndRollcallYAMLAgreeOnOptions: the options written in either
// format give one workload and one spec hash, whichever form each is
// written in (a device's short form, extra_hosts as a mapping or a list).
func TestComposeAndRollcallYAMLAgreeOnOptions(t *testing.T) {
	fromCompose, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(`
services:
  web:
    image: app:v2
    entrypoint: ["/tini", "--"]
    user: app
    cap_drop: [ALL]
    init: true
    shm_size: 1g
    ulimits: {nofile: 4096}
    extra_hosts: {db: 10.0.0.5}
    logging: {driver: local}
    devices: [/dev/fuse]
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML := mustParse(t, `
workloads:
  web:
    image: app:v2
    entrypoint: /tini --
    user: app
    cap_drop: [ALL]
    init: true
    shm_size: 1G
    ulimits: {nofile: {soft: 4096, hard: 4096}}
    extra_hosts: ["db:10.0.0.5"]
    logging: {driver: local}
    devices: ["/dev/fuse:/dev/fuse"]
`)
	if !reflect.DeepEqual(fromCompose.Workloads, fromYAML.Workloads) || len(fromCompose.Warnings) != 0 {
		t.Errorf("compose:\n%s\nrollcall.yaml:\n%s\nwarnings: %v", dump(fromCompose), dump(fromYAML), spec.ErrorList(fromCompose.Warnings))
	}
	if spec.Hash(fromCompose.Workloads["web"], "sha256:1") != spec.Hash(fromYAML.Workloads["web"], "sha256:1") {
		t.Error("the two give different spec hashes")
	}
}

// With network_mode host a compose file's ports are dropped with a
// warning at ports: the engine discards them too.
func TestComposeHostNetworkDropsPorts(t *testing.T) {
	d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"),
		[]byte("services:\n  web:\n    image: app\n    network_mode: host\n    ports: [\"80:80\"]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := d.Workloads["web"]; len(w.Ports) != 0 || w.Options.NetworkMode != spec.NetworkHost {
		t.Errorf("ports %v network %q", w.Ports, w.Options.NetworkMode)
	}
	if len(d.Warnings) != 1 || d.Warnings[0].Line != 5 || !strings.Contains(d.Warnings[0].Msg, "services.web.ports: ignored: with network_mode host") {
		t.Errorf("warnings %v", spec.ErrorList(d.Warnings))
	}
}
