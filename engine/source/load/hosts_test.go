package load

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// fleetDoc is a document with workloads web (3 replicas, an ephemeral
// port) and worker (a fixed host port), then hosts written as given (each
// line indented by two spaces, from line 5 on), then fleet when not "".
func fleetDoc(hosts, fleet string) string {
	s := "workloads:\n  web: {image: app, replicas: 3}\n  worker: {image: app, ports: [\"9000:9000\"]}\nhosts:\n" + hosts
	if fleet != "" {
		s += "fleet:\n" + fleet
	}
	return s
}

// threeHosts is the hosts block a, b, c on lines 5-7.
const threeHosts = "  a: {endpoint: \"ssh://deploy@a\"}\n  b: {endpoint: \"ssh://deploy@b\"}\n  c: {endpoint: \"ssh://deploy@c\"}\n"

func TestLoadDesignHostsExampleParsesToExactStruct(t *testing.T) {
	d, err := Load(filepath.Join("testdata", "hosts.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	wantHosts := []*spec.Host{
		{Name: "edge-1", Transport: spec.TransportSSH, Endpoint: "ssh://deploy@edge-1", Line: 7, Col: 3},
		{Name: "edge-2", Transport: spec.TransportSSH, Endpoint: "ssh://deploy@edge-2", Replicas: map[string]int{"web": 2}, Line: 8, Col: 3},
		{Name: "edge-3", Transport: spec.TransportContext, Context: "edge-3", Line: 9, Col: 3},
	}
	wantFleet := &spec.Fleet{Canary: []string{"edge-1"}, Batch: spec.Batch{Share: 50}, Wait: 2 * time.Minute, OnFailure: spec.OnFailurePause}
	if !reflect.DeepEqual(d.Hosts, wantHosts) {
		t.Errorf("hosts:\n%s\nwant\n%s", dumpHosts(d.Hosts), dumpHosts(wantHosts))
	}
	if !reflect.DeepEqual(d.Fleet, wantFleet) {
		t.Errorf("fleet %+v, want %+v", d.Fleet, wantFleet)
	}
	if d.Host != "" || len(d.Warnings) != 0 {
		t.Errorf("host %q warnings %v, want none", d.Host, d.Warnings)
	}
}

func TestParseWithoutHostsIsOneHost(t *testing.T) {
	d := mustParse(t, "workloads:\n  web: {image: app}\n")
	if d.Hosts != nil || d.Fleet != nil || d.Host != "" || d.HostNames() != nil {
		t.Errorf("hosts %v fleet %+v host %q, want none", d.Hosts, d.Fleet, d.Host)
	}
	if _, ok := d.ForHost("web"); ok {
		t.Error("ForHost found a host in a document without hosts")
	}
	if d := mustParse(t, "workloads: {}\nhosts: ~\nfleet: ~\n"); d.Hosts != nil || d.Fleet != nil {
		t.Errorf("null hosts and fleet: hosts %v fleet %+v, want none", d.Hosts, d.Fleet)
	}
}

// TestParseHostsAccepts checks the forms hosts and fleet take, one rule per
// row.
func TestParseHostsAccepts(t *testing.T) {
	host := func(name string) func(*spec.Desired) any {
		return func(d *spec.Desired) any { h := *d.HostNamed(name); h.Line, h.Col = 0, 0; return h }
	}
	fleet := func(d *spec.Desired) any { return *d.Fleet }
	defaults := spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 1}, OnFailure: spec.OnFailurePause}
	tests := []struct {
		rule  string
		src   string
		check func(*spec.Desired) any
		want  any
	}{
		{"hosts keep file order", fleetDoc("  z: {context: zz}\n  a: {context: aa}\n  m: {context: mm}\n", ""),
			func(d *spec.Desired) any { return d.HostNames() }, []string{"z", "a", "m"}},
		{"ssh with a port and no user", fleetDoc("  a: {endpoint: \"ssh://edge-1:2222\"}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportSSH, Endpoint: "ssh://edge-1:2222"}},
		{"tcp with a tls directory", fleetDoc("  a: {endpoint: \"tcp://10.0.0.5:2376\", tls: /etc/rollcall/edge-1}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportTCP, Endpoint: "tcp://10.0.0.5:2376", TLS: "/etc/rollcall/edge-1"}},
		{"tcp without TLS, asked for", fleetDoc("  a: {endpoint: \"tcp://127.0.0.1:2375\", tls: false}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportTCP, Endpoint: "tcp://127.0.0.1:2375", PlainTCP: true}},
		{"ssh with the engine's socket as its path", fleetDoc("  a: {endpoint: \"ssh://deploy@a/run/user/1000/docker.sock\"}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportSSH, Endpoint: "ssh://deploy@a/run/user/1000/docker.sock"}},
		{"unix socket", fleetDoc("  a: {endpoint: \"unix:///run/engine-a/docker.sock\"}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportUnix, Endpoint: "unix:///run/engine-a/docker.sock"}},
		{"a docker context", fleetDoc("  a: {context: prod_eu-1.x}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportContext, Context: "prod_eu-1.x"}},
		{"replica overrides, 0 included", fleetDoc("  a: {context: ca, replicas: {web: 0, worker: 1}}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportContext, Context: "ca", Replicas: map[string]int{"web": 0, "worker": 1}}},
		{"a null override counts as absent", fleetDoc("  a: {context: ca, replicas: {web: ~}}\n", ""),
			host("a"), spec.Host{Name: "a", Transport: spec.TransportContext, Context: "ca"}},
		{"hosts without fleet get every default", fleetDoc(threeHosts, ""), fleet, defaults},
		{"a null fleet gets every default", fleetDoc(threeHosts, "") + "fleet: ~\n", fleet, defaults},
		{"canary is kept in file order", fleetDoc(threeHosts, "  canary: [c, a]\n"), fleet,
			spec.Fleet{Canary: []string{"a", "c"}, Batch: spec.Batch{Count: 1}, OnFailure: spec.OnFailurePause}},
		{"canary may be one name", fleetDoc(threeHosts, "  canary: b\n"), fleet,
			spec.Fleet{Canary: []string{"b"}, Batch: spec.Batch{Count: 1}, OnFailure: spec.OnFailurePause}},
		{"batch as a count", fleetDoc(threeHosts, "  batch: 2\n"), func(d *spec.Desired) any { return d.Fleet.Batch }, spec.Batch{Count: 2}},
		{"batch as a share", fleetDoc(threeHosts, "  batch: 100%\n"), func(d *spec.Desired) any { return d.Fleet.Batch }, spec.Batch{Share: 100}},
		{"wait is a duration", fleetDoc(threeHosts, "  wait: 1m30s\n"), func(d *spec.Desired) any { return d.Fleet.Wait }, 90 * time.Second},
		{"continue tolerates one failed host by default", fleetDoc(threeHosts, "  on_failure: continue\n"), fleet,
			spec.Fleet{Canary: []string{"a"}, Batch: spec.Batch{Count: 1}, OnFailure: spec.OnFailureContinue, MaxFailedHosts: 1}},
		{"max_failed_hosts with continue, in any order", fleetDoc(threeHosts, "  max_failed_hosts: 2\n  on_failure: continue\n"),
			func(d *spec.Desired) any { return d.Fleet.MaxFailedHosts }, 2},
		{"rollback_all", fleetDoc(threeHosts, "  on_failure: rollback_all\n"),
			func(d *spec.Desired) any { return d.Fleet.OnFailure }, spec.OnFailureRollbackAll},
		{"hosts before workloads still see them", "hosts:\n  a: {context: ca, replicas: {web: 2}}\nworkloads:\n  web: {image: x}\n",
			func(d *spec.Desired) any { return d.HostNamed("a").Replicas }, map[string]int{"web": 2}},
		{"merge keys work in hosts", fleetDoc("  a: &h {endpoint: \"ssh://deploy@a\", replicas: {web: 1}}\n  b: {<<: *h, endpoint: \"ssh://deploy@b\"}\n", ""),
			host("b"), spec.Host{Name: "b", Transport: spec.TransportSSH, Endpoint: "ssh://deploy@b", Replicas: map[string]int{"web": 1}}},
		{"a host's position is its name's", fleetDoc(threeHosts, ""),
			func(d *spec.Desired) any { h := d.HostNamed("c"); return [2]int{h.Line, h.Col} }, [2]int{7, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			d := mustParse(t, tt.src)
			if got := tt.check(d); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %#v, want %#v", got, tt.want)
			}
		})
	}
}

// TestParseHostsErrors checks that each rule of hosts and fleet is enforced
// at the offending node, with a hint.
func TestParseHostsErrors(t *testing.T) {
	one := func(val string) string { return fleetDoc("  a: "+val+"\n", "") } // the value starts at 5:6
	tests := []struct {
		rule string
		src  string
		pos  string // "line:col"
		msg  string // substring of the message
		hint string // substring of the hint; "" to skip
	}{
		// hosts.
		{"hosts must be a mapping", "workloads: {}\nhosts: [a, b]\n", "2:8", "hosts: expected a mapping, got a list", ""},
		{"an empty hosts is an error", "workloads: {}\nhosts: {}\n", "2:8", "hosts: names no host", "leave hosts out"},
		{"host names are DNS labels", fleetDoc("  Edge_1: {context: x1}\n", ""), "5:3", `invalid host name "Edge_1"`, "DNS label"},
		{"host names are at most 63 characters", fleetDoc("  "+strings.Repeat("h", 64)+": {context: x1}\n", ""), "5:3", "invalid host name", "DNS label"},
		{"a duplicate host is an error", fleetDoc("  a: {context: x1}\n  a: {context: x2}\n", ""), "6:3", "hosts.a: duplicate key (first at line 5)", ""},
		{"a host is a mapping", one(`"ssh://deploy@a"`), "5:6", `hosts.a: expected a mapping, got string "ssh://deploy@a"`, "exactly one of endpoint"},
		{"a null host is not a host", one("~"), "5:6", "hosts.a: expected a mapping, got null", "exactly one of endpoint"},
		{"unknown host key suggests the closest", one("{endpont: \"ssh://a\"}"), "5:7", "hosts.a.endpont: unknown key", `did you mean "endpoint"`},
		{"a host needs an endpoint or a context", one("{replicas: {web: 1}}"), "5:3", "hosts.a: no endpoint or context", "exactly one of endpoint"},
		{"not both an endpoint and a context", one("{endpoint: \"ssh://a\", context: x1}"), "5:28", "hosts.a: endpoint and context are both given", "exactly one"},
		{"two hosts, one endpoint", fleetDoc("  a: {endpoint: \"ssh://deploy@a\"}\n  b: {endpoint: \"ssh://deploy@a\"}\n", ""), "6:3",
			"hosts.b: reaches the same engine as a (line 5)", "name it once"},
		{"two hosts, one context", fleetDoc("  a: {context: x1}\n  b: {context: x1}\n", ""), "6:3", "hosts.b: reaches the same engine as a", ""},

		// endpoint.
		{"endpoint is a string", one("{endpoint: 22}"), "5:17", "hosts.a.endpoint: expected a string, got integer 22", ""},
		{"endpoint needs a scheme", one("{endpoint: edge-1}"), "5:17", `hosts.a.endpoint: "edge-1" is not an endpoint URL`, "ssh://deploy@edge-1"},
		{"endpoint scheme is ssh, tcp or unix", one("{endpoint: \"npipe:////./pipe/docker_engine\"}"), "5:17", `unsupported scheme "npipe"`, "ssh://"},
		{"http is spelled tcp", one("{endpoint: \"https://edge-1:2376\"}"), "5:17", `unsupported scheme "https"`, "tcp://host:port"},
		{"ssh names a host", one("{endpoint: \"ssh://deploy@\"}"), "5:17", "names no host", "ssh://deploy@edge-1"},
		{"ssh takes no password", one("{endpoint: \"ssh://deploy:s3cret@a\"}"), "5:17", `hosts.a.endpoint: "ssh://a" carries a password`, "keys or an agent"},
		{"tcp takes no user, shown without it", one("{endpoint: \"tcp://me:s3cret@edge-1:2376\"}"), "5:17", `hosts.a.endpoint: "tcp://edge-1:2376" carries a user`, "tls"},
		{"ssh takes no query", one("{endpoint: \"ssh://deploy@a?x=1\"}"), "5:17", "has a query or fragment", "socket"},
		{"an ssh host is no option", one("{endpoint: \"ssh://-oProxyCommand=x\"}"), "5:17", "may not start with '-'", "option"},
		{"an ssh user is no option", one("{endpoint: \"ssh://-l@a\"}"), "5:17", "may not start with '-'", ""},
		{"ssh port is in range", one("{endpoint: \"ssh://deploy@a:70000\"}"), "5:17", "port 70000 is out of range", ""},
		{"tcp needs TLS or plain TCP asked for", one("{endpoint: \"tcp://edge-1:2375\"}"), "5:17", "hosts.a.endpoint: tcp:// needs TLS", "tls: false"},
		{"tls true names no certificates", one("{endpoint: \"tcp://edge-1:2376\", tls: true}"), "5:43", "hosts.a.tls: true names no certificates", "ca.pem"},
		{"tls is a directory or false", one("{endpoint: \"tcp://edge-1:2376\", tls: [a]}"), "5:43", "hosts.a.tls: expected a string, got a list", ""},
		{"plain TCP is not for ssh", one("{endpoint: \"ssh://a\", tls: false}"), "5:28", "tls without a tcp endpoint", ""},
		{"tcp names a port", one("{endpoint: \"tcp://edge-1\"}"), "5:17", "names no port", "2376"},
		{"tcp names a host", one("{endpoint: \"tcp://:2376\"}"), "5:17", "names no host", ""},
		{"tcp takes no user", one("{endpoint: \"tcp://me@edge-1:2376\"}"), "5:17", "carries a user", "tls"},
		{"tcp takes no query", one("{endpoint: \"tcp://edge-1:2376/?x=1\"}"), "5:17", "has a path, query or fragment", ""},
		{"a bad URL", one("{endpoint: \"tcp://edge-1:bad port\"}"), "5:17", "invalid endpoint", "ssh://"},
		{"unix is an absolute path", one("{endpoint: \"unix://run/docker.sock\"}"), "5:17", "is not the absolute path of a socket", "three slashes"},
		{"unix is not the root", one("{endpoint: \"unix:///\"}"), "5:17", "is not the absolute path of a socket", ""},

		// context and tls.
		{"context is a string", one("{context: [x]}"), "5:16", "hosts.a.context: expected a string, got a list", ""},
		{"context follows docker's name rule", one("{context: \"my context\"}"), "5:16", `invalid context name "my context"`, "docker context ls"},
		{"tls goes with tcp only", one("{endpoint: \"ssh://a\", tls: certs}"), "5:28", "hosts.a.tls: tls without a tcp endpoint", "tcp://"},
		{"tls is not for a context", one("{context: x1, tls: certs}"), "5:20", "tls without a tcp endpoint", "its own TLS material"},
		{"tls is not empty", one("{endpoint: \"tcp://a:2376\", tls: \"\"}"), "5:38", "hosts.a.tls: empty directory", "false for plain TCP"},

		// replicas.
		{"replicas is a mapping", one("{context: x1, replicas: 2}"), "5:30", "hosts.a.replicas: expected a mapping, got integer 2", ""},
		{"an override names a workload", one("{context: x1, replicas: {wbe: 2}}"), "5:31", `hosts.a.replicas.wbe: no workload "wbe"`, `did you mean "web"? valid workloads: web, worker`},
		{"an override needs workloads", "workloads: {}\nhosts:\n  a: {context: x1, replicas: {web: 1}}\n", "3:31", `no workload "web"`, "no workloads"},
		{"an override is an integer", one("{context: x1, replicas: {web: two}}"), "5:36", `hosts.a.replicas.web: expected an integer, got string "two"`, ""},
		{"a quoted override gets a hint", one("{context: x1, replicas: {web: \"2\"}}"), "5:36", "expected an integer", "remove the quotes"},
		{"an override is not negative", one("{context: x1, replicas: {web: -1}}"), "5:36", "hosts.a.replicas.web: -1 must not be negative", "runs nothing"},
		{"a fixed host port allows no second replica on a host", one("{context: x1, replicas: {worker: 2}}"), "5:39",
			"hosts.a.replicas.worker: worker publishes a fixed host port, and replicas 2", "ephemeral host port"},
		{"an unknown workload is reported once per host", fleetDoc("  a: {context: x1, replicas: {nope: 1}}\n  b: {context: x2, replicas: {nope: 1}}\n", ""),
			"6:31", "hosts.b.replicas.nope: no workload", ""},

		// fleet.
		{"fleet needs hosts", "workloads: {}\nfleet: {batch: 2}\n", "2:1", "fleet: without hosts", "hosts:"},
		{"fleet is a mapping", fleetDoc(threeHosts, "") + "fleet: [a]\n", "8:8", "fleet: expected a mapping, got a list", ""},
		{"unknown fleet key suggests the closest", fleetDoc(threeHosts, "  bacth: 2\n"), "9:3", "fleet.bacth: unknown key", `did you mean "batch"`},
		{"compose-ish fleet key lists the keys", fleetDoc(threeHosts, "  parallelism: 2\n"), "9:3", "fleet.parallelism: unknown key", "valid keys: canary, batch"},
		{"canary names a host", fleetDoc(threeHosts, "  canary: [a, d]\n"), "9:15", `fleet.canary[1]: no host "d"`, "hosts: a, b, c"},
		{"canary suggests the closest host", fleetDoc("  edge-1: {context: x1}\n  edge-2: {context: x2}\n", "  canary: edge-3\n"), "8:11",
			`fleet.canary: no host "edge-3"`, `did you mean "edge-1"?`},
		{"canary lists a host once", fleetDoc(threeHosts, "  canary: [b, b]\n"), "9:15", `host "b" is listed twice`, ""},
		{"canary is not empty", fleetDoc(threeHosts, "  canary: []\n"), "9:11", "fleet.canary: names no host", "leave canary out"},
		{"canary names are strings", fleetDoc(threeHosts, "  canary: [{a: 1}]\n"), "9:12", "fleet.canary[0]: expected a string, got a mapping", ""},
		{"canary is a list or a name", fleetDoc(threeHosts, "  canary: {a: 1}\n"), "9:11", "fleet.canary: expected a list, got a mapping", ""},
		{"batch is at least 1", fleetDoc(threeHosts, "  batch: 0\n"), "9:10", "fleet.batch: 0 must be at least 1", "a count of hosts"},
		{"a negative batch", fleetDoc(threeHosts, "  batch: -2\n"), "9:10", "fleet.batch: -2 must be at least 1", ""},
		{"a share is at least 1%", fleetDoc(threeHosts, "  batch: 0%\n"), "9:10", `fleet.batch: share "0%" is out of range`, "1% to 100%"},
		{"a share is at most 100%", fleetDoc(threeHosts, "  batch: 150%\n"), "9:10", `share "150%" is out of range`, "1% to 100%"},
		{"a share is a whole percent", fleetDoc(threeHosts, "  batch: 12.5%\n"), "9:10", `fleet.batch: invalid batch "12.5%"`, `"50%"`},
		{"a batch is not a word", fleetDoc(threeHosts, "  batch: half\n"), "9:10", `invalid batch "half"`, "a count of hosts"},
		{"a quoted count gets a hint", fleetDoc(threeHosts, "  batch: \"2\"\n"), "9:10", "expected a count or a share", "remove the quotes"},
		{"a batch is not a float", fleetDoc(threeHosts, "  batch: 0.5\n"), "9:10", "expected a count or a share, got number 0.5", `"50%"`},
		{"wait takes a unit", fleetDoc(threeHosts, "  wait: 120\n"), "9:9", "fleet.wait: 120 is a bare number", "add a unit"},
		{"wait is not negative", fleetDoc(threeHosts, "  wait: -1m\n"), "9:9", "fleet.wait: duration -1m must not be negative", ""},
		{"on_failure is a known policy", fleetDoc(threeHosts, "  on_failure: rollback\n"), "9:15", `fleet.on_failure: unknown value "rollback"`, "pause, rollback_all, continue"},
		{"max_failed_hosts goes with continue", fleetDoc(threeHosts, "  max_failed_hosts: 1\n"), "9:3", "fleet.max_failed_hosts: only with on_failure: continue", "continue"},
		{"max_failed_hosts is not for rollback_all", fleetDoc(threeHosts, "  on_failure: rollback_all\n  max_failed_hosts: 1\n"), "10:3", "only with on_failure: continue", ""},
		{"max_failed_hosts is at least 1", fleetDoc(threeHosts, "  on_failure: continue\n  max_failed_hosts: 0\n"), "10:21", "fleet.max_failed_hosts: 0 must be at least 1", "on_failure: pause"},
		{"max_failed_hosts is an integer", fleetDoc(threeHosts, "  on_failure: continue\n  max_failed_hosts: all\n"), "10:21", "expected an integer", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) { wantParseError(t, tt.src, tt.pos, tt.msg, tt.hint) })
	}
}

// TestParseNullHostsBlockIsAbsent: `hosts:` with nothing under it counts
// as absent, as every null value does, and then fleet is an error.
func TestParseNullHostsBlockIsAbsent(t *testing.T) {
	d := mustParse(t, fleetDoc("", ""))
	if d.Hosts != nil || d.Fleet != nil {
		t.Errorf("hosts %v fleet %+v, want none", d.Hosts, d.Fleet)
	}
	wantParseError(t, fleetDoc("", "  batch: 2\n"), "5:1", "fleet: without hosts", "hosts:")
}

func TestForHostAppliesItsOverridesOnly(t *testing.T) {
	d := mustParse(t, fleetDoc("  a: {context: x1}\n  b: {context: x2, replicas: {web: 1, worker: 0}}\n", "")+"volumes: {data: {}}\n")
	a, okA := d.ForHost("a")
	b, okB := d.ForHost("b")
	if !okA || !okB {
		t.Fatal("ForHost did not find a named host")
	}
	replicas := func(x *spec.Desired) [2]int {
		return [2]int{x.Workloads["web"].Replicas, x.Workloads["worker"].Replicas}
	}
	if got := replicas(a); got != [2]int{3, 1} {
		t.Errorf("host a runs %v, want the file's [3 1]", got)
	}
	if got := replicas(b); got != [2]int{1, 0} {
		t.Errorf("host b runs %v, want its overrides [1 0]", got)
	}
	if got := replicas(d); got != [2]int{3, 1} {
		t.Errorf("ForHost changed the document: %v", got)
	}
	if a.Workloads["web"] == d.Workloads["web"] || a.Workloads["web"] == b.Workloads["web"] {
		t.Error("hosts share a workload with the document or each other")
	}
	if a.Host != "a" || b.Host != "b" || a.Hosts != nil || a.Fleet != nil || a.Prefix != d.Prefix || a.Source != d.Source ||
		a.Volumes == nil || !reflect.DeepEqual(a.Volumes, d.Volumes) {
		t.Errorf("host copy: host %q hosts %v fleet %+v prefix %q source %q", a.Host, a.Hosts, a.Fleet, a.Prefix, a.Source)
	}
	// Everything but the replica count is the document's.
	for _, x := range []*spec.Desired{a, b} {
		for n, w := range x.Workloads {
			cp := *w
			cp.Replicas = d.Workloads[n].Replicas
			if !reflect.DeepEqual(&cp, d.Workloads[n]) {
				t.Errorf("%s/%s differs beyond replicas:\n%+v\n%+v", x.Host, n, cp, *d.Workloads[n])
			}
		}
	}
}

// TestHostsLeaveEverySpecHashAsItWas: naming hosts, a fleet and replica
// overrides recreates nothing: every workload hashes as in the same file
// without them, on every host.
func TestHostsLeaveEverySpecHashAsItWas(t *testing.T) {
	workloads := "workloads:\n  web: {image: app, replicas: 3, environment: {A: b}, ports: [\"127.0.0.1::80\"]}\n  worker: {image: app, command: [run]}\n"
	plain := mustParse(t, workloads)
	fleet := mustParse(t, workloads+"hosts:\n  a: {endpoint: \"ssh://deploy@a\", replicas: {web: 1}}\n  b: {context: x2, replicas: {web: 5, worker: 0}}\n"+
		"fleet: {canary: [b], batch: 50%, wait: 1m, on_failure: continue, max_failed_hosts: 1}\n")
	for _, n := range plain.Names() {
		want := spec.Hash(plain.Workloads[n], "sha256:img")
		if got := spec.Hash(fleet.Workloads[n], "sha256:img"); got != want {
			t.Errorf("%s: hash %s with hosts, %s without", n, got, want)
		}
		for _, h := range fleet.HostNames() {
			hd, _ := fleet.ForHost(h)
			if got := spec.Hash(hd.Workloads[n], "sha256:img"); got != want {
				t.Errorf("%s on %s: hash %s, want %s", n, h, got, want)
			}
		}
	}
}

func TestHostErrorPointsAtTheHost(t *testing.T) {
	d := mustParse(t, fleetDoc(threeHosts, ""))
	e := d.HostError("b", "each host is one engine", "same engine as a")
	if e == nil || e.Error() != "test.yaml:6:3: hosts.b: same engine as a\n  hint: each host is one engine" {
		t.Errorf("got %v", e)
	}
	if d.HostError("nope", "", "x") != nil {
		t.Error("an error for a host the file does not name")
	}
}

func dumpHosts(hs []*spec.Host) string {
	var b strings.Builder
	for _, h := range hs {
		fmt.Fprintf(&b, "%+v\n", *h)
	}
	return b.String()
}
