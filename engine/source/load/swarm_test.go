package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// swarmDoc is a rollcall.yaml on a swarm with one workload "web" of image
// "app"; body holds more keys of web, indented by four spaces.
func swarmDoc(body string) string {
	return "engine: swarm\nworkloads:\n  web:\n    image: app\n" + body
}

// at is the line and column of the first occurrence of token in src.
func at(t *testing.T, src, token string) (int, int) {
	t.Helper()
	i := strings.Index(src, token)
	if i < 0 {
		t.Fatalf("%q is not in the document", token)
	}
	return 1 + strings.Count(src[:i], "\n"), i - strings.LastIndex(src[:i], "\n")
}

// swarmCase is one rule of SwarmRules at work: the document (rollcall.yaml,
// or a compose file), where the finding is (the first occurrence of at)
// and its message; its hint is the rule's Why.
type swarmCase struct {
	rule    *SwarmRule
	compose bool // src is a compose file
	src     string
	at      string
	msg     string
	warning bool // a warning, not an error
}

func swarmCases() []swarmCase {
	const stack = "x-rollcall: {engine: swarm}\nservices:\n  web:\n    image: app\n"
	return []swarmCase{
		{rule: &swarmHosts, src: "engine: swarm\nworkloads: {web: {image: app}}\nhosts: {a: {endpoint: \"unix:///x.sock\"}}\n",
			at: "hosts", msg: "hosts: not on a swarm: " + swarmHosts.What},
		{rule: &swarmProxy, src: "engine: swarm\nworkloads: {web: {image: app}}\nproxy: {caddy_admin: \"http://127.0.0.1:2019\"}\n",
			at: "proxy", msg: "proxy: not on a swarm: " + swarmProxy.What},
		{rule: &swarmProxy, compose: true, src: "x-rollcall: {engine: swarm, proxy: {caddy_admin: \"http://127.0.0.1:2019\"}}\nservices:\n  web:\n    image: app\n",
			at: "proxy", msg: "x-rollcall.proxy: not on a swarm: " + swarmProxy.What},
		{rule: &swarmPullNever, src: swarmDoc("    pull: never\n"), at: "never", msg: "web.pull: never: not on a swarm: " + swarmPullNever.What},
		{rule: &swarmPullNever, compose: true, src: stack + "    pull_policy: never\n", at: "never",
			msg: "services.web.pull_policy: never: not on a swarm: " + swarmPullNever.What},
		{rule: &swarmBuild, compose: true, src: "x-rollcall: {engine: swarm}\nservices:\n  web:\n    build: .\n", at: "build",
			msg: "services.web.build: not on a swarm: " + swarmBuild.What},
		{rule: &swarmBuild, compose: true, src: stack + "    pull_policy: build\n", at: "build\n",
			msg: "services.web.pull_policy: not on a swarm: " + swarmBuild.What},
		{rule: &swarmCanary, src: swarmDoc("    update:\n      canary: {steps: [{share: 5%, for: 1m}]}\n"), at: "canary",
			msg: "web.update.canary: not on a swarm: " + swarmCanary.What},
		{rule: &swarmBlueGreen, src: swarmDoc("    update: {strategy: blue-green}\n"), at: "blue-green",
			msg: "web.update.strategy: blue-green: not on a swarm: " + swarmBlueGreen.What},
		{rule: &swarmDrain, src: swarmDoc("    update: {drain: 5s}\n"), at: "drain", msg: "web.update.drain: not on a swarm: " + swarmDrain.What},
		{rule: &swarmPreStop, src: swarmDoc("    pre_stop: [CMD, /app, -drain]\n"), at: "pre_stop", msg: "web.pre_stop: not on a swarm: " + swarmPreStop.What},
		{rule: &swarmPreStop, compose: true, src: stack + "    pre_stop:\n      - command: [/app, -drain]\n", at: "pre_stop",
			msg: "services.web.pre_stop: not on a swarm: " + swarmPreStop.What},
		{rule: &swarmPortHostIP, src: swarmDoc("    ports: [\"8080\", \"127.0.0.1:9090:90\"]\n"), at: `"127.0.0.1`,
			msg: "web.ports[1]: not on a swarm: " + swarmPortHostIP.What},
		{rule: &swarmPortHostIP, compose: true, src: stack + "    ports:\n      - \"127.0.0.1:9090:90\"\n", at: `"127.0.0.1`,
			msg: "services.web.ports[0]: not on a swarm: " + swarmPortHostIP.What},
		{rule: &swarmPortMode, compose: true, src: stack + "    ports:\n      - {target: 80, published: 8080, mode: host}\n", at: "host",
			msg: "services.web.ports[0].mode: not on a swarm: " + swarmPortMode.What},
		{rule: &swarmDNSRRPorts, src: swarmDoc("    ports: [\"8080:80\"]\n    endpoint_mode: dnsrr\n"), at: "dnsrr",
			msg: "web.endpoint_mode: dnsrr with ports: not on a swarm: " + swarmDNSRRPorts.What},
		{rule: &swarmModeGlobal, compose: true, src: stack + "    deploy: {mode: global}\n", at: "global",
			msg: "services.web.deploy.mode: global: not on a swarm: " + swarmModeGlobal.What},
		{rule: &swarmStackLabel, src: swarmDoc("    service_labels: {com.docker.stack.namespace: x}\n"), at: "com.docker",
			msg: "web.service_labels.com.docker.stack.namespace: not on a swarm: " + swarmStackLabel.What},
		{rule: &swarmDependsOn, src: "engine: swarm\nworkloads:\n  db: {image: db}\n  web:\n    image: app\n    depends_on: [db]\n", at: "depends_on",
			msg: "web.depends_on: ignored on a swarm: " + swarmDependsOn.What, warning: true},
		{rule: &swarmDependsOn, compose: true, src: stack + "    depends_on: [db]\n  db:\n    image: db\n", at: "depends_on",
			msg: "services.web.depends_on: ignored on a swarm: " + swarmDependsOn.What, warning: true},
		{rule: &swarmAnonymousVolume, src: swarmDoc("    volumes: [/data]\n"), at: "/data",
			msg: "web.volumes[0]: not on a swarm: " + swarmAnonymousVolume.What},
		{rule: &swarmAnonymousVolume, compose: true, src: stack + "    volumes:\n      - /data\n", at: "/data",
			msg: "services.web.volumes[0]: not on a swarm: " + swarmAnonymousVolume.What},
		{rule: &swarmNamedVolume, src: swarmDoc("    volumes: [data:/data]\nvolumes: {data: {}}\n"), at: "data:/data",
			msg: `web.volumes: volume "data" is of the local driver: each node has its own, and a task Swarm places on another node finds it empty`, warning: true},
		{rule: &swarmRelativeBind, src: swarmDoc("    volumes: [./conf:/etc/conf:ro]\n"), at: "./conf",
			msg: `web.volumes[0]: bind source "./conf": on a swarm, a path on the node that runs the task, not only here`, warning: true},
		{rule: &swarmRelativeBind, compose: true, src: stack + "    volumes:\n      - ./conf:/etc/conf:ro\n", at: "./conf",
			msg: `services.web.volumes[0]: bind source "./conf": on a swarm, a path on the node that runs the task, not only here`, warning: true},
		{rule: &swarmRelativeBind, compose: true, src: stack + "    configs: [site]\nconfigs:\n  site: {file: ./site.conf}\n", at: "site]",
			msg: `services.web.configs[0]: bind source "./site.conf": on a swarm, a path on the node that runs the task, not only here`, warning: true},
		{rule: &swarmPrivileged, src: swarmDoc("    privileged: true\n"), at: "privileged", msg: "web.privileged: not on a swarm: " + swarmPrivileged.What},
		{rule: &swarmPrivileged, compose: true, src: stack + "    privileged: true\n", at: "privileged",
			msg: "services.web.privileged: not on a swarm: " + swarmPrivileged.What},
		{rule: &swarmDevices, src: swarmDoc("    devices: [/dev/fuse]\n"), at: "devices", msg: "web.devices: not on a swarm: " + swarmDevices.What},
		{rule: &swarmSecurityOpt, src: swarmDoc("    security_opt: [no-new-privileges:true]\n"), at: "security_opt",
			msg: "web.security_opt: not on a swarm: " + swarmSecurityOpt.What},
		{rule: &swarmShmSize, src: swarmDoc("    shm_size: 64M\n"), at: "shm_size", msg: "web.shm_size: not on a swarm: " + swarmShmSize.What},
		{rule: &swarmNetworkMode, src: swarmDoc("    network_mode: host\n"), at: "network_mode", msg: "web.network_mode: not on a swarm: " + swarmNetworkMode.What},
		{rule: &swarmExpose, src: swarmDoc("    expose: [80]\n"), at: "expose", msg: "web.expose: ignored on a swarm: " + swarmExpose.What, warning: true},
		{rule: &swarmExpose, compose: true, src: stack + "    expose: [\"80\"]\n", at: "expose",
			msg: "services.web.expose: ignored on a swarm: " + swarmExpose.What, warning: true},
	}
}

// onlyCases are a swarm's own keys in a file without `engine: swarm`.
func onlyCases() []swarmCase {
	const needs = ": a Swarm setting: needs engine: swarm"
	return []swarmCase{
		{rule: &swarmMaxFailureRatio, src: doc("    update: {max_failure_ratio: 0.1}\n"), at: "max_failure_ratio", msg: "web.update.max_failure_ratio" + needs},
		{rule: &swarmEndpointMode, src: doc("    endpoint_mode: dnsrr\n"), at: "endpoint_mode", msg: "web.endpoint_mode" + needs},
		{rule: &swarmPlacement, src: doc("    placement: {constraints: [node.role == worker]}\n"), at: "placement", msg: "web.placement" + needs},
		{rule: &swarmRestartPolicy, src: doc("    restart_policy: {condition: any}\n"), at: "restart_policy", msg: "web.restart_policy" + needs},
		{rule: &swarmServiceLabels, src: doc("    service_labels: {a: b}\n"), at: "service_labels", msg: "web.service_labels" + needs},
		{rule: &swarmReservationCPUs, src: doc("    resources: {reservations: {cpus: 1}}\n"), at: "reservations", msg: "web.resources.reservations" + needs},
		{rule: &swarmReservationMemory, src: doc("    resources: {reservations: {memory: 64M}}\n"), at: "reservations", msg: "web.resources.reservations" + needs},
	}
}

// parseCase loads c's document: its findings, errors first.
func parseCase(t *testing.T, c swarmCase) (errs, warns spec.ErrorList, file string) {
	t.Helper()
	var d *spec.Desired
	var err error
	if c.compose {
		dir := t.TempDir()
		file = filepath.Join(dir, "compose.yaml")
		d, err = ParseCompose(file, []byte(c.src), nil)
	} else {
		file = "test.yaml"
		d, err = Parse(file, []byte(c.src))
	}
	if err != nil && !errors.As(err, &errs) {
		t.Fatalf("not an ErrorList: %v", err)
	}
	if d != nil {
		warns = d.Warnings
	}
	return errs, warns, file
}

// TestSwarmRules: each rule of a swarm refuses (or warns of) its key at
// the key's line:col, with the rule's words and hint.
func TestSwarmRules(t *testing.T) {
	for _, c := range append(swarmCases(), onlyCases()...) {
		t.Run(c.msg, func(t *testing.T) {
			errs, warns, file := parseCase(t, c)
			line, col := at(t, c.src, c.at)
			hint := c.rule.Why
			if c.rule.Only {
				hint = "set `engine: swarm` at the top level (its endpoint is then a swarm manager), or drop it"
			}
			want := &spec.Error{File: file, Line: line, Col: col, Msg: c.msg, Hint: hint}
			got := errs
			if c.warning {
				if len(errs) > 0 {
					t.Fatalf("errors, want none: %v", errs)
				}
				got = warns
			}
			for _, e := range got {
				if *e == *want {
					return
				}
			}
			t.Errorf("no finding\n  %v\nin\n%v", want, got)
		})
	}
}

// TestEverySwarmRuleThatActsHasACase: a refused or ignored rule, and a
// swarm's own key, is in the table above; one added later fails here
// until it has a case.
func TestEverySwarmRuleThatActsHasACase(t *testing.T) {
	covered := map[*SwarmRule]bool{}
	for _, c := range append(swarmCases(), onlyCases()...) {
		covered[c.rule] = true
	}
	covered[&swarmImageVolume] = true // spec.Resolve's: TestResolveSwarmRefusesAnImageVolume
	for i := range SwarmRules {
		r := &SwarmRules[i]
		acts := r.Does == KeyRefused || r.Does == KeyIgnored || r.Only
		found := false
		for p := range covered {
			found = found || *p == *r
		}
		if acts && !found {
			t.Errorf("rule %q (%s) has no case in TestSwarmRules", r.Key+r.Compose, r.Does)
		}
	}
}

// TestSwarmRulesAreConsistent: a known verdict; a refused or ignored rule
// says what to do instead; a rule found by its key names a key the loader
// reads; each rule once.
func TestSwarmRulesAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range SwarmRules {
		id := r.Key + "|" + r.Compose + "|" + r.Case
		if seen[id] {
			t.Errorf("%s: twice in SwarmRules", id)
		}
		seen[id] = true
		switch r.Does {
		case KeyHonoured, KeyMapped:
		case KeyIgnored, KeyRefused:
			if r.Why == "" {
				t.Errorf("%s: %s with no word on what to do instead", id, r.Does)
			}
		default:
			t.Errorf("%s: unknown verdict %q", id, r.Does)
		}
		if r.What == "" {
			t.Errorf("%s: no words", id)
		}
		if r.Key == "" && r.Compose == "" {
			t.Errorf("a rule of no key: %+v", r)
		}
	}
}

func TestEngineKey(t *testing.T) {
	if d := mustParse(t, doc("")); d.Engine != spec.EngineDocker || d.OnSwarm() || d.Workloads["web"].Swarm != nil {
		t.Errorf("no engine: %q, swarm %+v; want docker and none", d.Engine, d.Workloads["web"].Swarm)
	}
	if d := mustParse(t, swarmDoc("")); d.Engine != spec.EngineSwarm || d.Workloads["web"].Swarm == nil {
		t.Errorf("engine: swarm: %q, swarm %+v", d.Engine, d.Workloads["web"].Swarm)
	}
	src := "engine: kubernetes\nworkloads: {web: {image: app}}\n"
	_, err := Parse("test.yaml", []byte(src))
	want := "test.yaml:1:9: engine: unknown value \"kubernetes\"\n  hint: one of: docker, swarm"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestSwarmWorkloadDefaultsAndFields: what a swarm's own keys read into,
// with every default filled in.
func TestSwarmWorkloadDefaultsAndFields(t *testing.T) {
	d := mustParse(t, swarmDoc(""))
	want := &spec.SwarmService{EndpointMode: spec.EndpointVIP, Restart: spec.SwarmRestart{Condition: spec.RestartAny, Delay: 5 * time.Second}}
	if got := d.Workloads["web"].Swarm; !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	d = mustParse(t, swarmDoc(`    endpoint_mode: dnsrr
    placement:
      constraints: ["node.role == worker", "node.labels.zone != b"]
      preferences: [{spread: node.labels.zone}]
      max_replicas_per_node: 2
    restart_policy: {condition: on-failure, delay: 1s, max_attempts: 3, window: 2m}
    service_labels: {team: shop}
    resources: {cpus: 1, memory: 64M, reservations: {cpus: 0.5, memory: 32M}}
    update: {max_failure_ratio: 0.25}
`))
	w := d.Workloads["web"]
	want = &spec.SwarmService{
		EndpointMode: spec.EndpointDNSRR,
		Placement:    spec.Placement{Constraints: []string{"node.role == worker", "node.labels.zone != b"}, Preferences: []string{"node.labels.zone"}, MaxReplicas: 2},
		Restart:      spec.SwarmRestart{Condition: spec.RestartOnFailure, Delay: time.Second, MaxAttempts: 3, Window: 2 * time.Minute},
		Reservations: spec.Resources{NanoCPUs: 5e8, Memory: 32 << 20},
		Labels:       map[string]string{"team": "shop"},
	}
	if !reflect.DeepEqual(w.Swarm, want) {
		t.Errorf("got %+v\nwant %+v", w.Swarm, want)
	}
	if w.Resources != (spec.Resources{NanoCPUs: 1e9, Memory: 64 << 20}) || w.Update.MaxFailureRatio != 0.25 {
		t.Errorf("resources %+v, max failure ratio %g", w.Resources, w.Update.MaxFailureRatio)
	}
}

// TestSwarmRestartFromRestart: without restart_policy, restart: is mapped
// onto Swarm's condition.
func TestSwarmRestartFromRestart(t *testing.T) {
	for restart, want := range map[string]spec.SwarmRestart{
		"no":             {Condition: spec.RestartNone, Delay: 5 * time.Second},
		"always":         {Condition: spec.RestartAny, Delay: 5 * time.Second},
		"unless-stopped": {Condition: spec.RestartAny, Delay: 5 * time.Second},
		"on-failure":     {Condition: spec.RestartOnFailure, Delay: 5 * time.Second},
		"on-failure:4":   {Condition: spec.RestartOnFailure, Delay: 5 * time.Second, MaxAttempts: 4},
	} {
		d := mustParse(t, swarmDoc("    restart: \""+restart+"\"\n"))
		if got := d.Workloads["web"].Swarm.Restart; got != want {
			t.Errorf("restart %s: %+v, want %+v", restart, got, want)
		}
	}
}

// TestSwarmChecks: the checks of a swarm beyond its rules' table, each at
// its line:col.
func TestSwarmChecks(t *testing.T) {
	long := strings.Repeat("h", maxSwarmHostname+1)
	tests := []struct {
		name, src, at, msg, hint string
	}{
		{"restart beside restart_policy", swarmDoc("    restart: always\n    restart_policy: {condition: any}\n"), "restart:",
			"web.restart: restart with restart_policy", "restart_policy is Swarm's own policy, and restart: maps onto it: keep one of the two"},
		{"a constraint not in Swarm's form", swarmDoc("    placement: {constraints: [node.role]}\n"), "node.role",
			`web.placement.constraints[0]: invalid constraint "node.role"`, constraintHint},
		{"a spread that is no label", swarmDoc("    placement: {preferences: [{spread: zone}]}\n"), "zone",
			`web.placement.preferences[0].spread: invalid spread "zone"`, "a node label to spread the tasks over: node.labels.<label>"},
		{"a negative max_replicas_per_node", swarmDoc("    placement: {max_replicas_per_node: -1}\n"), "-1",
			"web.placement.max_replicas_per_node: -1 must not be negative", "0 (or leaving it out) places any number of tasks on a node"},
		{"an unknown condition", swarmDoc("    restart_policy: {condition: always}\n"), "always",
			`web.restart_policy.condition: unknown value "always"`, "one of: none, on-failure, any"},
		{"a ratio above 1", swarmDoc("    update: {max_failure_ratio: 1.5}\n"), "1.5",
			"web.update.max_failure_ratio: 1.5 is not within 0..1", "the share of new tasks that may fail, within 0..1: 0.1 lets one in ten fail"},
		{"an unknown endpoint mode", swarmDoc("    endpoint_mode: rr\n"), "rr",
			`web.endpoint_mode: unknown value "rr"`, "one of: vip, dnsrr"},
		{"a hostname too long for Swarm's slots", swarmDoc("    replicas: 2\n    hostname: " + long + "\n"), long,
			`web.hostname: hostname "` + long + `" is too long`, "at most 58 characters on a swarm, so that the slot suffix (-1 … -1000) fits"},
		{"one published port for two services", "engine: swarm\nworkloads:\n  a: {image: x, ports: [\"8080:80\"]}\n  b: {image: x, ports: [\"8080:81\"]}\n", `"8080:81"`,
			"b.ports[0]: published port 8080/tcp is already used by a (line 3)", "a port of Swarm's routing mesh is the whole swarm's, for one service: publish another"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.src))
			var list spec.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an error, got %v", err)
			}
			line, col := at(t, tt.src, tt.at)
			want := spec.Error{File: "test.yaml", Line: line, Col: col, Msg: tt.msg, Hint: tt.hint}
			for _, e := range list {
				if *e == want {
					return
				}
			}
			t.Errorf("no finding %v in\n%v", &want, list)
		})
	}
}

// TestSwarmPorts: on a swarm a port is published on every interface, a
// fixed one goes with any replicas and rolls nothing stop-first.
func TestSwarmPorts(t *testing.T) {
	d := mustParse(t, swarmDoc("    replicas: 3\n    ports: [\"8080:80\", \"81\"]\n"))
	w := d.Workloads["web"]
	want := []spec.Port{{HostPort: 8080, ContainerPort: 80, Proto: "tcp"}, {ContainerPort: 81, Proto: "tcp"}}
	if !reflect.DeepEqual(w.Ports, want) {
		t.Errorf("ports %+v, want %+v", w.Ports, want)
	}
	if c, _ := w.StopFirst(); c != "" {
		t.Errorf("rolls stop-first (%s), want start-first: the routing mesh holds the port", c)
	}
	if d := mustParse(t, doc("    ports: [\"8080:80\"]\n")); d.Workloads["web"].EffectiveOrder() != spec.OrderStopFirst {
		t.Error("a fixed host port on a plain engine no longer rolls stop-first")
	}
}

func TestSwarmHostname(t *testing.T) {
	for _, tt := range []struct {
		replicas     int
		hostname, is string
	}{{1, "web", "web"}, {3, "web", "web-{{.Task.Slot}}"}, {3, "", ""}} {
		w := &spec.Workload{Replicas: tt.replicas, Options: spec.Options{Hostname: tt.hostname}}
		if got := w.SwarmHostname(); got != tt.is {
			t.Errorf("%d replicas, hostname %q: %q, want %q", tt.replicas, tt.hostname, got, tt.is)
		}
	}
}

// TestSwarmBindSourcesAreNotLookedFor: a bind source is each node's path,
// so the loader does not look for it on this machine.
func TestSwarmBindSourcesAreNotLookedFor(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("the path exists")
	}
	mustParse(t, swarmDoc("    volumes: [\""+missing+":/x\"]\n"))
	if _, err := Parse("test.yaml", []byte(doc("    volumes: [\""+missing+":/x\"]\n"))); err == nil {
		t.Error("on a plain engine, a missing bind source loads")
	}
}

// TestSwarmNamedVolumePinned: a placement constraint pins the service, so
// its local volume is not warned of.
func TestSwarmNamedVolumePinned(t *testing.T) {
	d := mustParse(t, swarmDoc("    volumes: [data:/data]\n    placement: {constraints: [node.hostname == db-1]}\nvolumes: {data: {}}\n"))
	if len(d.Warnings) > 0 {
		t.Errorf("warnings: %v", d.Warnings)
	}
}

// TestComposeSwarmEngineWrittenOut: x-rollcall.engine decides how compose
// reads the file, so it is written out: a variable is an error.
func TestComposeSwarmEngineWrittenOut(t *testing.T) {
	src := "x-rollcall: {engine: \"${ENGINE}\"}\nservices:\n  web:\n    image: app\n"
	file := filepath.Join(t.TempDir(), "compose.yaml")
	_, err := ParseCompose(file, []byte(src), []string{"ENGINE=swarm"})
	line, col := at(t, src, `"${ENGINE}"`)
	want := spec.Error{File: file, Line: line, Col: col, Msg: `x-rollcall.engine: "${ENGINE}" as written, swarm once read`,
		Hint: "write the engine out in this file: it decides how the file is read, before any variable is"}
	var list spec.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || *list[0] != want {
		t.Errorf("got %v, want %v", err, &want)
	}
	d, err := ParseCompose(file, []byte(src), []string{"ENGINE=docker"})
	if err != nil || d.OnSwarm() {
		t.Errorf("engine docker from a variable: %v, on a swarm %v", err, d != nil && d.OnSwarm())
	}
}

// TestComposeDeployKeysOnAPlainEngine: without x-rollcall.engine swarm,
// the deploy keys of a swarm are ignored with a warning, as before.
func TestComposeDeployKeysOnAPlainEngine(t *testing.T) {
	src := "services:\n  web:\n    image: app\n    deploy:\n      placement: {constraints: [node.role == worker]}\n      endpoint_mode: dnsrr\n"
	d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d.OnSwarm() || d.Workloads["web"].Swarm != nil {
		t.Error("a plain engine's compose file is on a swarm")
	}
	var ignored []string
	for _, w := range d.Warnings {
		if strings.HasSuffix(w.Msg, ": ignored: rollcall does not honour it") {
			ignored = append(ignored, strings.TrimSuffix(w.Msg, ": ignored: rollcall does not honour it"))
		}
	}
	slices.Sort(ignored)
	if want := []string{"services.web.deploy.endpoint_mode", "services.web.deploy.placement"}; !reflect.DeepEqual(ignored, want) {
		t.Errorf("ignored %q, want %q", ignored, want)
	}
}

// volumeImage is an ImageLookup of one image that declares VOLUME /data.
type volumeImage struct{}

func (volumeImage) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	return docker.Image{ID: "sha256:1", RepoTags: []string{ref}, Volumes: []string{"/data"}}, nil
}

// TestResolveSwarmRefusesAnImageVolume: on a swarm, an image VOLUME that no
// mount covers fails the workload (Swarm would give each new task an empty
// one); a mount there, or a plain engine (the slot keeps it), resolves.
func TestResolveSwarmRefusesAnImageVolume(t *testing.T) {
	resolve := func(src string) spec.Resolved {
		t.Helper()
		return *spec.Resolve(context.Background(), mustParse(t, src), volumeImage{}).Workload("web")
	}
	r := resolve(swarmDoc(""))
	if !errors.Is(r.Err, spec.ErrSwarmImageVolume) || r.Hash != "" || r.ImageID != "" {
		t.Errorf("err %v, hash %q, id %q: want ErrSwarmImageVolume and no hash", r.Err, r.Hash, r.ImageID)
	}
	if want := "image app declares VOLUME /data: " + spec.ErrSwarmImageVolume.Error() + " (" + spec.SwarmImageVolumeHint + ")"; r.Err == nil || r.Err.Error() != want {
		t.Errorf("err %v, want %s", r.Err, want)
	}
	if r := resolve(swarmDoc("    volumes: [data:/data]\n    placement: {constraints: [node.hostname == a]}\nvolumes: {data: {}}\n")); r.Err != nil || r.Hash == "" {
		t.Errorf("a named volume at the VOLUME: err %v, hash %q", r.Err, r.Hash)
	}
	if r := resolve(doc("")); r.Err != nil || len(r.ImageVolumes) != 1 {
		t.Errorf("a plain engine: err %v, slot volumes %v, want /data kept per slot", r.Err, r.ImageVolumes)
	}
}

// TestSwarmHash: on a swarm the hash covers what Swarm recreates tasks for
// (the endpoint mode, the restart policy, the reservations, the limits and
// the stop grace period), and not the placement or the service labels.
func TestSwarmHash(t *testing.T) {
	base := func() *spec.Workload {
		return mustParse(t, swarmDoc("    replicas: 2\n    resources: {cpus: 1, memory: 64M}\n")).Workloads["web"]
	}
	h := spec.Hash(base(), "sha256:1")
	if plain := spec.Hash(mustParse(t, doc("    replicas: 2\n    resources: {cpus: 1, memory: 64M}\n")).Workloads["web"], "sha256:1"); plain == h {
		t.Error("a swarm's workload hashes as a plain engine's")
	}
	for _, tt := range []struct {
		field   string
		change  func(w *spec.Workload)
		changes bool
	}{
		{"endpoint mode", func(w *spec.Workload) { w.Swarm.EndpointMode = spec.EndpointDNSRR }, true},
		{"restart condition", func(w *spec.Workload) { w.Swarm.Restart.Condition = spec.RestartNone }, true},
		{"restart delay", func(w *spec.Workload) { w.Swarm.Restart.Delay = time.Second }, true},
		{"restart max attempts", func(w *spec.Workload) { w.Swarm.Restart.MaxAttempts = 3 }, true},
		{"restart window", func(w *spec.Workload) { w.Swarm.Restart.Window = time.Minute }, true},
		{"reservations", func(w *spec.Workload) { w.Swarm.Reservations.Memory = 32 << 20 }, true},
		{"limits", func(w *spec.Workload) { w.Resources.NanoCPUs = 2e9 }, true},
		{"stop grace period", func(w *spec.Workload) { w.StopGrace = time.Minute }, true},
		{"placement", func(w *spec.Workload) {
			w.Swarm.Placement = spec.Placement{Constraints: []string{"node.role == worker"}, MaxReplicas: 1}
		}, false},
		{"service labels", func(w *spec.Workload) { w.Swarm.Labels = map[string]string{"a": "b"} }, false},
		{"replicas", func(w *spec.Workload) { w.Replicas = 5 }, false},
		{"max failure ratio", func(w *spec.Workload) { w.Update.MaxFailureRatio = 0.5 }, false},
	} {
		w := base()
		tt.change(w)
		if changed := spec.Hash(w, "sha256:1") != h; changed != tt.changes {
			t.Errorf("%s: hash changed %v, want %v", tt.field, changed, tt.changes)
		}
	}
}

// TestForHostKeepsTheEngine: a host's copy of a several-host file says
// its engine, docker (a swarm has no hosts:).
func TestForHostKeepsTheEngine(t *testing.T) {
	d := mustParse(t, "engine: docker\n"+fleetDoc("  a: {endpoint: \"unix:///a.sock\"}\n", ""))
	h, ok := d.ForHost("a")
	if !ok || h.Engine != spec.EngineDocker {
		t.Errorf("host a: engine %q, want docker", h.Engine)
	}
}
