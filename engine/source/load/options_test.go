package load

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

func TestParseReadsEveryOption(t *testing.T) {
	d := mustParse(t, doc(`    entrypoint: [/tini, --]
    user: 1000
    working_dir: /srv
    hostname: web
    cap_add: [NET_ADMIN]
    cap_drop: [ALL]
    security_opt: ["no-new-privileges:true", "seccomp=unconfined"]
    privileged: true
    init: true
    shm_size: 128M
    ulimits: {nproc: 512, nofile: {soft: 1024, hard: 4096}}
    sysctls: [net.core.somaxconn=1024]
    extra_hosts: ["db:10.0.0.5", "gw=host-gateway", "v6:::1"]
    dns: 1.1.1.1
    dns_search: [example.com]
    logging: {driver: json-file, options: {max-size: 10m, max-file: 3}}
    expose: [9000, "53/udp"]
    devices: [/dev/fuse, "/dev/sda:/dev/xvda:r"]
    group_add: [audio, 44]
`))
	want := spec.Options{
		Entrypoint:  []string{"/tini", "--"},
		User:        "1000",
		WorkingDir:  "/srv",
		Hostname:    "web",
		CapAdd:      []string{"NET_ADMIN"},
		CapDrop:     []string{"ALL"},
		SecurityOpt: []string{"no-new-privileges:true", "seccomp=unconfined"},
		Privileged:  true,
		Init:        true,
		ShmSize:     128 << 20,
		Ulimits:     []spec.Ulimit{{Name: "nofile", Soft: 1024, Hard: 4096}, {Name: "nproc", Soft: 512, Hard: 512}},
		Sysctls:     map[string]string{"net.core.somaxconn": "1024"},
		ExtraHosts:  []string{"db:10.0.0.5", "gw:host-gateway", "v6:::1"},
		DNS:         []string{"1.1.1.1"},
		DNSSearch:   []string{"example.com"},
		LogDriver:   "json-file",
		LogOptions:  map[string]string{"max-size": "10m", "max-file": "3"},
		Expose:      []string{"9000/tcp", "53/udp"},
		Devices:     []string{"/dev/fuse:/dev/fuse:rwm", "/dev/sda:/dev/xvda:r"},
		GroupAdd:    []string{"audio", "44"},
	}
	if got := d.Workloads["web"].Options; !reflect.DeepEqual(got, want) {
		t.Errorf("options\n got %+v\nwant %+v", got, want)
	}
	if w := mustParse(t, doc("")).Workloads["web"]; !w.Options.IsZero() {
		t.Errorf("a workload without options has %+v", w.Options)
	}
}

func TestParseAcceptsOptionForms(t *testing.T) {
	tests := []struct {
		rule  string
		body  string
		check func(spec.Options) any
		want  any
	}{
		{"entrypoint string splits on whitespace", "    entrypoint: /bin/app -v\n",
			func(o spec.Options) any { return o.Entrypoint }, []string{"/bin/app", "-v"}},
		{"sysctls mapping", "    sysctls: {net.ipv4.ip_forward: 1}\n",
			func(o spec.Options) any { return o.Sysctls }, map[string]string{"net.ipv4.ip_forward": "1"}},
		{"extra_hosts mapping, sorted", "    extra_hosts: {b: 10.0.0.2, a: 10.0.0.1}\n",
			func(o spec.Options) any { return o.ExtraHosts }, []string{"a:10.0.0.1", "b:10.0.0.2"}},
		{"dns list", "    dns: [1.1.1.1, \"::1\"]\n",
			func(o spec.Options) any { return o.DNS }, []string{"1.1.1.1", "::1"}},
		{"dns_search string", "    dns_search: example.com\n",
			func(o spec.Options) any { return o.DNSSearch }, []string{"example.com"}},
		{"shm_size bytes", "    shm_size: 1048576\n",
			func(o spec.Options) any { return o.ShmSize }, int64(1 << 20)},
		{"unlimited ulimit", "    ulimits: {memlock: -1}\n",
			func(o spec.Options) any { return o.Ulimits }, []spec.Ulimit{{Name: "memlock", Soft: -1, Hard: -1}}},
		{"network_mode host", "    network_mode: host\n",
			func(o spec.Options) any { return o.NetworkMode }, spec.NetworkHost},
		{"network_mode none", "    network_mode: none\n",
			func(o spec.Options) any { return o.NetworkMode }, spec.NetworkNone},
		{"logging options without a driver", "    logging: {options: {tag: web}}\n",
			func(o spec.Options) any { return [2]any{o.LogDriver, o.LogOptions} }, [2]any{"", map[string]string{"tag": "web"}}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := mustParse(t, doc(tt.body))
			if got := tt.check(d.Workloads["web"].Options); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestHostNetworkForcesStopFirst(t *testing.T) {
	w := mustParse(t, doc("    network_mode: host\n")).Workloads["web"]
	if w.Update.Order != spec.OrderStartFirst || w.EffectiveOrder() != spec.OrderStopFirst {
		t.Errorf("order %s, effective %s; want start-first forced to stop-first", w.Update.Order, w.EffectiveOrder())
	}
	if w := mustParse(t, doc("    network_mode: none\n")).Workloads["web"]; w.EffectiveOrder() != spec.OrderStartFirst {
		t.Errorf("network_mode none: effective order %s, want start-first", w.EffectiveOrder())
	}
}

func TestParseOptionErrors(t *testing.T) {
	tests := []struct {
		rule, body, pos, msg, hint string
	}{
		{"empty entrypoint", "    entrypoint: []\n", "4:17", "web.entrypoint: empty entrypoint", "image's"},
		{"user with a space", "    user: \"a b\"\n", "4:11", `invalid user "a b"`, "1000:1000"},
		{"relative working_dir", "    working_dir: srv\n", "4:18", `"srv" is not an absolute path`, "absolute"},
		{"hostname not a DNS name", "    hostname: web_1\n", "4:15", `invalid hostname "web_1"`, "DNS name"},
		{"hostname too long for the slot suffix", "    hostname: " + strings.Repeat("a", maxHostname+1) + "\n", "4:15", "is too long", "slot suffix"},
		{"capability with a space", "    cap_add: [\"NET ADMIN\"]\n", "4:15", `web.cap_add[0]: invalid capability "NET ADMIN"`, "NET_ADMIN"},
		{"cap_drop is a list", "    cap_drop: ALL\n", "4:15", "web.cap_drop: expected a list", ""},
		{"unknown security option", "    security_opt: [nonsense]\n", "4:20", `unknown security option "nonsense"`, "no-new-privileges"},
		{"seccomp profile file", "    security_opt: [\"seccomp=/etc/p.json\"]\n", "4:20", `seccomp profile "/etc/p.json"`, "JSON, not a file"},
		{"privileged is a boolean", "    privileged: yes please\n", "4:17", "web.privileged: expected true or false", ""},
		{"init is a boolean", "    init: 1\n", "4:11", "web.init: expected true or false", ""},
		{"shm_size bad unit", "    shm_size: 64X\n", "4:15", `invalid size "64X"`, "64M"},
		{"shm_size zero", "    shm_size: 0\n", "4:15", "size must be greater than 0", "engine's default"},
		{"unknown ulimit", "    ulimits: {nofiles: 10}\n", "4:15", "web.ulimits.nofiles: unknown ulimit", `did you mean "nofile"`},
		{"ulimit soft above hard", "    ulimits: {nofile: {soft: 10, hard: 5}}\n", "4:23", "soft 10 above hard 5", "at most the hard"},
		{"ulimit missing hard", "    ulimits: {nofile: {soft: 10}}\n", "4:23", "needs both soft and hard", "soft: 1024"},
		{"ulimit below -1", "    ulimits: {nofile: -2}\n", "4:23", "-2 must not be negative", "unlimited"},
		{"sysctl without a value", "    sysctls: [net.core.somaxconn]\n", "4:15", `"net.core.somaxconn" has no value`, "somaxconn=1024"},
		{"sysctl name", "    sysctls: {Somaxconn: 1}\n", "4:26", `invalid sysctl "Somaxconn"`, "kernel parameter"},
		{"sysctl of the host", "    sysctls: {vm.max_map_count: 262144}\n", "4:33", "sysctl vm.max_map_count is not one a container can set", "set it on the host"},
		{"extra_hosts bad IP", "    extra_hosts: [\"db:ten\"]\n", "4:19", `"ten" is not an IP address`, "host-gateway"},
		{"extra_hosts without an IP", "    extra_hosts: [db]\n", "4:19", `"db" has no value`, "db:10.0.0.5"},
		{"dns not an IP", "    dns: dns.example\n", "4:10", `web.dns: "dns.example" is not an IP address`, "1.1.1.1"},
		{"dns_search bad domain", "    dns_search: [\"a b\"]\n", "4:18", `invalid search domain "a b"`, "example.com"},
		{"unknown logging key", "    logging: {drivr: local}\n", "4:15", "web.logging.drivr: unknown key", `did you mean "driver"`},
		{"logging options a mapping", "    logging: {options: [a]}\n", "4:24", "web.logging.options: expected a mapping", ""},
		{"expose range", "    expose: [\"8000-8010\"]\n", "4:14", `invalid port "8000-8010"`, "list each port"},
		{"expose protocol", "    expose: [\"80/http\"]\n", "4:14", `unknown protocol "http"`, "tcp, udp, sctp"},
		{"network_mode service", "    network_mode: \"service:db\"\n", "4:19", `"service:db"`, "put both workloads on one network and use its DNS"},
		{"network_mode container", "    network_mode: container:db\n", "4:19", `"container:db"`, "put both workloads on one network"},
		{"network_mode bridge", "    network_mode: bridge\n", "4:19", `unsupported network mode "bridge"`, "leave network_mode out"},
		{"network_mode other", "    network_mode: macvlan0\n", "4:19", `unsupported network mode "macvlan0"`, "host or none"},
		{"network_mode with networks", "    network_mode: host\n    networks: [front]\n", "5:5", "web.networks: network_mode host joins no network", "drop networks"},
		{"network_mode host with ports", "    network_mode: host\n    ports: [\"8080\"]\n", "5:5", "web.ports: ports with network_mode host", "binds host ports itself"},
		{"network_mode none with ports", "    ports: [\"8080\"]\n    network_mode: none\n", "4:5", "web.ports: ports with network_mode none", "no network to publish on"},
		{"network_mode host with hostname", "    hostname: h\n    network_mode: host\n", "4:5", "web.hostname: hostname with network_mode host", "the host's"},
		{"network_mode host with blue-green", "    network_mode: host\n    update: {strategy: blue-green}\n", "4:19", "network_mode host with strategy blue-green", "use rolling"},
		{"device relative path", "    devices: [dev/fuse]\n", "4:15", `"dev/fuse" is not an absolute path`, "/dev/fuse"},
		{"device permissions", "    devices: [\"/dev/a:/dev/b:rx\"]\n", "4:15", `permissions "rx"`, "mknod"},
		{"empty group", "    group_add: [\"\"]\n", "4:17", "web.group_add[0]: empty group", "GID"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) { wantParseError(t, doc(tt.body), tt.pos, tt.msg, tt.hint) })
	}
}

func TestHashCoversOptions(t *testing.T) {
	base := spec.Hash(hashBase(), "sha256:1")
	tests := []struct {
		field  string
		change func(o *spec.Options)
	}{
		{"entrypoint", func(o *spec.Options) { o.Entrypoint = []string{"/tini"} }},
		{"user", func(o *spec.Options) { o.User = "1000" }},
		{"hostname", func(o *spec.Options) { o.Hostname = "web" }},
		{"cap_drop", func(o *spec.Options) { o.CapDrop = []string{"ALL"} }},
		{"privileged", func(o *spec.Options) { o.Privileged = true }},
		{"init", func(o *spec.Options) { o.Init = true }},
		{"shm_size", func(o *spec.Options) { o.ShmSize = 1 << 20 }},
		{"ulimits", func(o *spec.Options) { o.Ulimits = []spec.Ulimit{{Name: "nofile", Soft: 1, Hard: 1}} }},
		{"sysctls", func(o *spec.Options) { o.Sysctls = map[string]string{"a.b": "1"} }},
		{"logging", func(o *spec.Options) { o.LogDriver = "local" }},
		{"network_mode", func(o *spec.Options) { o.NetworkMode = spec.NetworkNone }},
		{"devices", func(o *spec.Options) { o.Devices = []string{"/dev/fuse"} }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			w := hashBase()
			tt.change(&w.Options)
			if spec.Hash(w, "sha256:1") == base {
				t.Errorf("changing %s left the hash unchanged", tt.field)
			}
		})
	}
	// Empty maps and lists set nothing: the hash is that of no options.
	w := hashBase()
	w.Options = spec.Options{Sysctls: map[string]string{}, CapAdd: []string{}}
	if spec.Hash(w, "sha256:1") != base {
		t.Error("empty options changed the hash")
	}
}

// TestHashOfAnOptionIsPinned pins the hash with one option set: the
// encoding of the options must not change under a workload that uses them,
// or an upgrade of rollcall would roll it. Without options the hash is the
// one TestHashOfAWorkloadWithoutTheNewFieldsIsUnchanged pins.
func TestHashOfAnOptionIsPinned(t *testing.T) {
	w := hashBase()
	w.Networks, w.Aliases, w.PreStop = nil, nil, nil
	const without = "dbfd41d23d096f1ffc720c293b707b6f4acffe584edea57a9225ddf157317479"
	if got := spec.Hash(w, "sha256:1"); got != without {
		t.Fatalf("hash without options = %s, want %s", got, without)
	}
	w.Options.User = "1000"
	const withUser = "984ec61105ac63f3d35be7dcc55d05ea0acd7b9300426c0b038365f9260d4e6e"
	if got := spec.Hash(w, "sha256:1"); got != withUser {
		t.Errorf("hash with user 1000 = %s, want %s", got, withUser)
	}
}
