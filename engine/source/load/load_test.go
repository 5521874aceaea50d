package load

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// doc is a document with one workload "web" of image "app"; body holds more
// keys of web, each line indented by four spaces. Body lines start at line 4,
// so a value on the first body line sits at column 5+len(key)+2.
func doc(body string) string {
	return "workloads:\n  web:\n    image: app\n" + body
}

func mustParse(t *testing.T, src string) *spec.Desired {
	t.Helper()
	d, err := Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\n--- input:\n%s", err, src)
	}
	return d
}

func defaultUpdate() spec.UpdatePolicy {
	return spec.UpdatePolicy{Strategy: spec.StrategyRolling, Parallelism: 1, Order: spec.OrderStartFirst,
		MinReady: 5 * time.Second, HealthDeadline: 60 * time.Second, FailureAction: spec.FailurePause}
}

// withOrderSet is u with update.order written in the file.
func withOrderSet(u spec.UpdatePolicy) spec.UpdatePolicy {
	u.OrderSet = true
	return u
}

func withDrain(u spec.UpdatePolicy, d time.Duration) spec.UpdatePolicy {
	u.Drain = d
	return u
}

func TestLoadDesignExampleParsesToExactStruct(t *testing.T) {
	d, err := Load(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := &spec.Desired{
		Source: filepath.Join("testdata", "full.yaml"),
		Prefix: "rollcall",
		Workloads: map[string]*spec.Workload{"web": {
			Name:        "web",
			Image:       "rollcall-demoapp:v2",
			Version:     "2",
			Replicas:    3,
			Command:     []string{"-listen", ":8080"},
			Environment: map[string]string{"GREETING": "hello"},
			Labels:      map[string]string{"traefik.enable": "true"},
			Ports:       []spec.Port{{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 8080, Proto: "tcp"}},
			Healthcheck: &spec.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second,
				Timeout: time.Second, Retries: 3, StartPeriod: 2 * time.Second},
			Resources:  spec.Resources{NanoCPUs: 500_000_000, Memory: 64 << 20},
			StopSignal: "SIGTERM",
			StopGrace:  10 * time.Second,
			Restart:    "unless-stopped",
			Networks:   []string{"front"},
			PreStop:    []string{"/demoapp", "-drain"},
			Pull:       spec.PullMissing,
			Update:     withOrderSet(withCanary(withDrain(defaultUpdate(), 5*time.Second))),
		}},
		Proxy:  &spec.Proxy{CaddyAdmin: "http://127.0.0.1:2019"},
		Engine: spec.EngineDocker,
	}
	if !reflect.DeepEqual(d, want) {
		t.Errorf("got\n%s\nwant\n%s", dump(d), dump(want))
	}
}

// withCanary is u with the canary of DESIGN §3's example.
func withCanary(u spec.UpdatePolicy) spec.UpdatePolicy {
	u.Canary = &spec.Canary{
		Steps: []spec.CanaryStep{{Share: 0.05, For: time.Minute}, {Share: 0.25, For: 2 * time.Minute}},
		Analysis: spec.Analysis{Interval: spec.DefaultCanaryInterval, MaxErrorRate: 0.01, MaxErrorRateIncrease: 0.005, MaxP95Ratio: 1.5,
			MinRequests: 200, OnInsufficientTraffic: spec.InsufficientHold},
	}
	return u
}

func TestLoadUnreadableFileWrapsOSError(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want an os.ErrNotExist", err)
	}
}

func TestParseFillsDefaults(t *testing.T) {
	d := mustParse(t, "workloads:\n  web:\n    image: app\n")
	want := &spec.Workload{
		Name: "web", Image: "app", Replicas: 1, StopSignal: spec.DefaultStopSignal, StopGrace: spec.DefaultStopGrace,
		Restart: spec.DefaultRestart, Pull: spec.PullMissing, Update: defaultUpdate(),
	}
	if d.Prefix != spec.DefaultPrefix || d.Source != "test.yaml" || len(d.Warnings) != 0 {
		t.Errorf("prefix %q source %q warnings %v", d.Prefix, d.Source, d.Warnings)
	}
	if got := d.Workloads["web"]; !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseEmptyWorkloadsStopsEverything(t *testing.T) {
	d := mustParse(t, "workloads: {}\n")
	if len(d.Workloads) != 0 || d.Workloads == nil {
		t.Errorf("workloads = %#v, want an empty map", d.Workloads)
	}
}

// TestParseAccepts checks the forms each key takes, one rule per row.
func TestParseAccepts(t *testing.T) {
	tests := []struct {
		rule  string
		src   string
		check func(*spec.Desired) any // returns the value to compare
		want  any
	}{
		{"version number is kept as its text", doc("    version: 2\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Version }, "2"},
		{"version float is kept as written", doc("    version: 2.10\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Version }, "2.10"},
		{"command string splits on whitespace", doc("    command: \"-listen  :8080 -v\"\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Command }, []string{"-listen", ":8080", "-v"}},
		{"command list keeps numbers as text", doc("    command: [sleep, 10]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Command }, []string{"sleep", "10"}},
		{"environment map takes scalars", doc("    environment: {A: 1, B: true, C: x}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Environment }, map[string]string{"A": "1", "B": "true", "C": "x"}},
		{"environment list of K=V splits at the first =", doc("    environment: [\"A=1\", \"B=x=y\", \"C=\"]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Environment }, map[string]string{"A": "1", "B": "x=y", "C": ""}},
		{"labels list of K=V, a bare key is empty", doc("    labels: [\"a.b=1\", \"flag\"]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Labels }, map[string]string{"a.b": "1", "flag": ""}},
		{"labels may use the default prefix when the document has another",
			"prefix: acme\n" + doc("    labels: {rollcall.x: y}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Labels }, map[string]string{"rollcall.x": "y"}},
		{"prefix is read", "prefix: acme.io\nworkloads: {}\n",
			func(d *spec.Desired) any { return d.Prefix }, "acme.io"},
		{"proxy.caddy_admin is read", "workloads: {}\nproxy: {caddy_admin: \"http://127.0.0.1:2019\"}\n",
			func(d *spec.Desired) any { return d.Proxy }, &spec.Proxy{CaddyAdmin: "http://127.0.0.1:2019"}},
		{"proxy.caddy_admin over https with a path", "workloads: {}\nproxy:\n  caddy_admin: https://caddy.internal:2019/admin/\n",
			func(d *spec.Desired) any { return d.Proxy }, &spec.Proxy{CaddyAdmin: "https://caddy.internal:2019/admin/"}},
		{"proxy.caddy_admin on a unix socket", "workloads: {}\nproxy: {caddy_admin: \"unix:///run/rollcall-caddy/admin.sock\"}\n",
			func(d *spec.Desired) any { return d.Proxy }, &spec.Proxy{CaddyAdmin: "unix:///run/rollcall-caddy/admin.sock"}},
		{"no proxy key leaves Proxy nil", "workloads: {}\n",
			func(d *spec.Desired) any { return d.Proxy }, (*spec.Proxy)(nil)},
		{"an empty or null proxy names none", "workloads: {}\nproxy: {caddy_admin: ~}\n",
			func(d *spec.Desired) any { return d.Proxy }, (*spec.Proxy)(nil)},
		{"ports short forms", doc("    ports: [\"8080\", \"9000:80\", \"127.0.0.1::81/udp\", \"0.0.0.0:9001:82/tcp\", \"[::1]:9002:83\", 84]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Ports }, []spec.Port{
				{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 8080, Proto: "tcp"}, {HostIP: "127.0.0.1", HostPort: 9000, ContainerPort: 80, Proto: "tcp"}, {HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 81, Proto: "udp"},
				{HostIP: "0.0.0.0", HostPort: 9001, ContainerPort: 82, Proto: "tcp"}, {HostIP: "::1", HostPort: 9002, ContainerPort: 83, Proto: "tcp"}, {HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 84, Proto: "tcp"}}},
		{"the same host port on tcp and udp does not clash", doc("    ports: [\"53:53/tcp\", \"53:53/udp\"]\n"),
			func(d *spec.Desired) any { return len(d.Workloads["web"].Ports) }, 2},
		{"the same host port on two IPs does not clash",
			"workloads:\n  a: {image: x, ports: [\"127.0.0.1:80:80\"]}\n  b: {image: x, ports: [\"127.0.0.2:80:80\"]}\n",
			func(d *spec.Desired) any { return len(d.Workloads) }, 2},
		{"a fixed host port with one replica", doc("    ports: [\"8080:80\"]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].EffectiveOrder() }, spec.OrderStopFirst},
		{"healthcheck disable means NONE", doc("    healthcheck: {disable: true, interval: 1s}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Healthcheck }, &spec.Healthcheck{Test: []string{"NONE"}}},
		{"healthcheck NONE", doc("    healthcheck: {test: [NONE]}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Healthcheck }, &spec.Healthcheck{Test: []string{"NONE"}}},
		{"healthcheck without test inherits the image's", doc("    healthcheck: {retries: 5}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Healthcheck }, &spec.Healthcheck{Retries: 5}},
		{"healthcheck string test is CMD-SHELL", doc("    healthcheck: {test: \"curl -f localhost\"}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Healthcheck.Test }, []string{"CMD-SHELL", "curl -f localhost"}},
		{"resources cpus as compose's quoted string, memory as bytes", doc("    resources: {cpus: \"1.5\", memory: 134217728}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Resources }, spec.Resources{NanoCPUs: 1_500_000_000, Memory: 128 << 20}},
		{"resources memory in GiB with a fraction", doc("    resources: {cpus: 2, memory: 1.5GiB}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Resources }, spec.Resources{NanoCPUs: 2_000_000_000, Memory: 3 << 29}},
		{"stop_signal as a number", doc("    stop_signal: 15\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].StopSignal }, "15"},
		{"restart on-failure:N is kept as written", doc("    restart: on-failure:3\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Restart }, "on-failure:3"},
		{"restart no, unquoted, is the string", doc("    restart: no\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Restart }, "no"},
		{"networks keep their order", doc("    networks: [front, back]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Networks }, []string{"front", "back"}},
		{"networks as compose's mapping keep their order and aliases", doc("    networks: {front: {aliases: [www, shop.example]}, back: ~, side: {}}\n"),
			func(d *spec.Desired) any { return [2]any{d.Workloads["web"].Networks, d.Workloads["web"].Aliases} },
			[2]any{[]string{"front", "back", "side"}, map[string][]string{"front": {"www", "shop.example"}}}},
		{"no aliases leaves Aliases nil", doc("    networks: {front: {aliases: []}}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Aliases }, map[string][]string(nil)},
		{"pre_stop in exec form is the argv", doc("    pre_stop: [CMD, /demoapp, -drain]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].PreStop }, []string{"/demoapp", "-drain"}},
		{"pre_stop as a plain list", doc("    pre_stop: [/app, drain, --wait]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].PreStop }, []string{"/app", "drain", "--wait"}},
		{"pre_stop as a string is split on whitespace", doc("    pre_stop: /app drain\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].PreStop }, []string{"/app", "drain"}},
		{"pre_stop CMD-SHELL runs /bin/sh", doc("    pre_stop: [CMD-SHELL, \"kill -TERM 1\"]\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].PreStop }, []string{"/bin/sh", "-c", "kill -TERM 1"}},
		{"update.drain", doc("    update: {drain: 2500ms}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Update.Drain }, 2500 * time.Millisecond},
		{"update fields", doc("    update: {strategy: blue-green, parallelism: 2, order: stop-first, min_ready: 0s, health_deadline: 1m30s, failure_action: rollback}\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Update }, spec.UpdatePolicy{Strategy: spec.StrategyBlueGreen, Parallelism: 2, Order: spec.OrderStopFirst, OrderSet: true, MinReady: 0, HealthDeadline: 90 * time.Second, FailureAction: spec.FailureRollback, Drain: 0, Delay: 0, RollbackParallelism: 0, Canary: nil}},
		{"a null value counts as absent", doc("    replicas:\n    update: ~\n"),
			func(d *spec.Desired) any { return [2]any{d.Workloads["web"].Replicas, d.Workloads["web"].Update} }, [2]any{1, defaultUpdate()}},
		{"replicas 0 keeps the workload", doc("    replicas: 0\n"),
			func(d *spec.Desired) any { return d.Workloads["web"].Replicas }, 0},
		{"aliases resolve", "workloads:\n  a: {image: x, environment: &env {K: v}}\n  b: {image: y, environment: *env}\n",
			func(d *spec.Desired) any { return d.Workloads["b"].Environment }, map[string]string{"K": "v"}},
		{"merge keys expand and written keys win",
			"workloads:\n  a: &base {image: x, replicas: 2, stop_signal: SIGINT}\n  b:\n    <<: *base\n    replicas: 4\n",
			func(d *spec.Desired) any { w := d.Workloads["b"]; return []any{w.Image, w.Replicas, w.StopSignal} }, []any{"x", 4, "SIGINT"}},
		{"workload names may be digits", "workloads:\n  1: {image: x}\n",
			func(d *spec.Desired) any { return d.Names() }, []string{"1"}},
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

func TestParseWarnsAboutCMDShell(t *testing.T) {
	for _, src := range []string{
		doc("    healthcheck: {test: [CMD-SHELL, \"curl -f localhost\"]}\n"),
		doc("    healthcheck: {test: \"curl -f localhost\"}\n"),
	} {
		d := mustParse(t, src)
		if len(d.Warnings) != 1 || d.Warnings[0].Line != 4 || !strings.Contains(d.Warnings[0].Hint, "scratch") {
			t.Errorf("warnings = %v, want one at line 4 with a hint about scratch images", d.Warnings)
		}
	}
}

// TestParseErrors checks that each rule is enforced at the offending node.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		rule string
		src  string
		pos  string // "line:col"
		msg  string // substring of the message
		hint string // substring of the hint; "" to skip
	}{
		// The document.
		{"an empty document is an error", "", "1:1", "empty document", "`workloads: {}`"},
		{"a document of comments is empty", "# nothing yet\n", "1:1", "empty document", "`workloads: {}`"},
		{"a missing workloads key is an error", "prefix: acme\n", "1:1", "no workloads key", "`workloads: {}`"},
		{"a null workloads is not workloads: {}", "workloads:\n", "1:1", "workloads: expected a mapping, got null", "`workloads: {}`"},
		{"workloads must be a mapping", "workloads: [web]\n", "1:12", "workloads: expected a mapping, got a list", ""},
		{"the document must be a mapping", "- web\n", "1:1", "expected a mapping with a workloads key, got a list", ""},
		{"one document per file", "workloads: {}\n---\nworkloads: {}\n", "2:1", "second YAML document", ""},
		{"YAML syntax errors are where the parser found them", "workloads:\n  web: [\n", "3:1", "invalid YAML", "not closed"},
		{"tab indentation gets a hint", "workloads:\n\tweb: {}\n", "2:1", "invalid YAML", "tabs"},
		{"an unknown alias points at the alias", "workloads:\n  web: *nope\n", "2:8", "unknown anchor", "anchor"},

		// Keys.
		{"unknown top-level key suggests the closest", "workloads: {}\nprefx: a\n", "2:1", "prefx: unknown key", `did you mean "prefix"`},
		{"compose's services is named", "services: {}\n", "1:1", "services: unknown key", `rollcall calls this "workloads"`},
		{"unknown workload key suggests the closest", doc("    replica: 2\n"), "4:5", "web.replica: unknown key", `did you mean "replicas"? valid keys: image, version`},
		{"unknown key without a close match lists the keys", doc("    deploy: {}\n"), "4:5", "web.deploy: unknown key", "valid keys: image,"},
		{"unknown healthcheck key", doc("    healthcheck: {tset: [NONE]}\n"), "4:19", "web.healthcheck.tset: unknown key", `did you mean "test"`},
		{"unknown resources key", doc("    resources: {limits: {}}\n"), "4:17", "web.resources.limits: unknown key", "valid keys: cpus, memory"},
		{"unknown update key", doc("    update: {stratgy: rolling}\n"), "4:14", "web.update.stratgy: unknown key", `did you mean "strategy"`},
		{"a duplicate key is an error", doc("    image: other\n"), "4:5", "web.image: duplicate key (first at line 3)", ""},
		{"a duplicate workload is an error", "workloads:\n  web: {image: a}\n  web: {image: b}\n", "3:3", "web: duplicate key", ""},
		{"a merge key needs a mapping", doc("    <<: 3\n"), "4:9", "merge key (<<) expects a mapping", ""},

		// The proxy.
		{"proxy must be a mapping", "workloads: {}\nproxy: http://127.0.0.1:2019\n", "2:8", `proxy: expected a mapping, got string`, ""},
		{"unknown proxy key suggests the closest", "workloads: {}\nproxy: {caddy_admn: \"http://x:2019\"}\n", "2:9", "proxy.caddy_admn: unknown key", `did you mean "caddy_admin"`},
		{"proxy.caddy_admin is a string", "workloads: {}\nproxy: {caddy_admin: 2019}\n", "2:22", "proxy.caddy_admin: expected a string, got integer 2019", ""},
		{"proxy.caddy_admin needs a scheme", "workloads: {}\nproxy: {caddy_admin: \"127.0.0.1:2019\"}\n", "2:22", "is not a unix socket or an http or https URL", "http://127.0.0.1:2019"},
		{"proxy.caddy_admin is a socket, http or https", "workloads: {}\nproxy: {caddy_admin: \"ftp://caddy:2019\"}\n", "2:22", "is not a unix socket or an http or https URL", "unix:///run/rollcall-caddy/admin.sock"},
		{"proxy.caddy_admin's socket path is absolute", "workloads: {}\nproxy: {caddy_admin: \"unix://run/admin.sock\"}\n", "2:22", `"unix://run/admin.sock" is not the absolute path of a socket`, "three slashes"},
		{"proxy.caddy_admin's socket path is clean", "workloads: {}\nproxy:\n  caddy_admin: unix:///run//x/../admin.sock\n", "3:16", `want the socket's clean path (no //, ./, ../ or trailing /), "unix:///run/admin.sock"`, "three slashes"},
		{"proxy.caddy_admin's socket is not a directory", "workloads: {}\nproxy: {caddy_admin: \"unix:///run/\"}\n", "2:22", "want the socket's clean path", ""},
		{"proxy.caddy_admin's socket takes no query", "workloads: {}\nproxy: {caddy_admin: \"unix:///run/admin.sock?x=1\"}\n", "2:22", "takes no query, fragment, escape or NUL", ""},
		{"proxy.caddy_admin's socket path fits sun_path", "workloads: {}\nproxy: {caddy_admin: \"unix:///dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd/admin.sock\"}\n", "2:22", "the socket's path is 112 bytes long, more than 107", "mount the socket's directory at a shorter path"},
		{"proxy.caddy_admin names a host", "workloads: {}\nproxy: {caddy_admin: \"http:///admin\"}\n", "2:22", "names no host", ""},
		{"proxy.caddy_admin has no query", "workloads: {}\nproxy: {caddy_admin: \"http://x:2019/?a=b\"}\n", "2:22", "has a query or fragment", ""},
		{"proxy.caddy_admin is a URL", "workloads: {}\nproxy: {caddy_admin: \"http://x:bad port\"}\n", "2:22", "invalid URL", ""},

		// Workload names and images.
		{"workload names are lowercase", "workloads:\n  Web: {image: a}\n", "2:3", `invalid workload name "Web"`, "DNS label"},
		{"workload names have no underscore", "workloads:\n  my_app: {image: a}\n", "2:3", `invalid workload name "my_app"`, ""},
		{"workload names end alphanumeric", "workloads:\n  web-: {image: a}\n", "2:3", `invalid workload name "web-"`, ""},
		{"workload names are at most 63 characters", "workloads:\n  " + strings.Repeat("a", 64) + ": {image: a}\n", "2:3", "invalid workload name", ""},
		{"a workload must be a mapping", "workloads:\n  web: nginx\n", "2:8", `web: expected a mapping, got string "nginx"`, "image"},
		{"image is required", "workloads:\n  web: {replicas: 1}\n", "2:3", "web: image is required", ""},
		{"image must be a string", "workloads:\n  web: {image: [a]}\n", "2:16", "web.image: expected a string, got a list", ""},
		{"a null image is not absent", "workloads:\n  web: {image: ~}\n", "2:16", "web.image: expected a string, got null", ""},
		{"image has no spaces", "workloads:\n  web: {image: \"a b\"}\n", "2:16", "invalid image reference", ""},

		// Types.
		{"replicas must be an integer", doc("    replicas: three\n"), "4:15", `replicas: expected an integer, got string "three"`, ""},
		{"a quoted replicas gets a hint", doc("    replicas: \"3\"\n"), "4:15", `expected an integer, got string "3"`, "remove the quotes"},
		{"replicas is not a float", doc("    replicas: 1.5\n"), "4:15", "expected an integer, got number 1.5", ""},
		{"replicas must not be negative", doc("    replicas: -1\n"), "4:15", "web.replicas: -1 must not be negative", ""},
		{"version is a scalar", doc("    version: {a: 1}\n"), "4:14", "web.version: expected a string, got a mapping", ""},
		{"command is a list or a string", doc("    command: {a: b}\n"), "4:14", "web.command: expected a list, got a mapping", ""},
		{"command items are scalars", doc("    command: [a, [b]]\n"), "4:18", "web.command[1]: expected a string, got a list", ""},
		{"environment is a mapping or a list", doc("    environment: x\n"), "4:18", "expected a mapping or a list of KEY=VALUE", ""},
		{"an environment variable needs a value", doc("    environment: [FOO]\n"), "4:19", "web.environment[0]: variable FOO has no value", `KEY: ""`},
		{"a null environment value is not empty", doc("    environment:\n      FOO:\n"), "5:7", "variable FOO has no value", ""},
		{"environment values are scalars", doc("    environment: {A: [1]}\n"), "4:22", "web.environment.A: expected a string, got a list", ""},
		{"environment list keys are unique", doc("    environment: [A=1, A=2]\n"), "4:24", `duplicate key "A"`, ""},
		{"labels may not use the document's prefix", doc("    labels: {rollcall.slot: \"1\"}\n"), "4:14", `label "rollcall.slot" uses the reserved prefix`, "rollcall's own"},
		{"labels may not use a custom prefix", "prefix: acme\n" + doc("    labels: [acme.x=1]\n"), "5:14", `label "acme.x" uses the reserved prefix`, `"acme."`},
		{"networks is a list or a mapping", doc("    networks: front\n"), "4:15", `web.networks: expected a list or a mapping, got string "front"`, "aliases"},
		{"a network takes only aliases", doc("    networks: {front: {ipv4_address: 10.0.0.2}}\n"), "4:24", "web.networks.front.ipv4_address: unknown key", "valid keys: aliases"},
		{"aliases is a list", doc("    networks: {front: {aliases: www}}\n"), "4:33", "web.networks.front.aliases: expected a list", ""},
		{"an alias is a DNS name", doc("    networks: {front: {aliases: [\"a b\"]}}\n"), "4:34", `web.networks.front.aliases[0]: invalid alias "a b"`, "DNS name"},
		{"aliases are unique", doc("    networks: {front: {aliases: [a, a]}}\n"), "4:37", `alias "a" is listed twice`, ""},
		{"the default bridge takes no aliases", doc("    networks: {bridge: {aliases: [a]}}\n"), "4:25", "the engine's bridge network takes no aliases", "user-defined"},
		{"networks in a mapping are unique", doc("    networks: {a: ~, a: ~}\n"), "4:22", "web.networks.a: duplicate key", ""},
		{"pre_stop is not empty", doc("    pre_stop: []\n"), "4:15", "web.pre_stop: empty command", "leave pre_stop out"},
		{"pre_stop CMD needs a command", doc("    pre_stop: [CMD]\n"), "4:15", "web.pre_stop: CMD needs a command", ""},
		{"pre_stop is no healthcheck NONE", doc("    pre_stop: [NONE]\n"), "4:15", "NONE is a healthcheck word", ""},
		{"update.drain is a duration", doc("    update: {drain: 5}\n"), "4:21", "web.update.drain", ""},
		{"update.drain is not negative", doc("    update: {drain: -1s}\n"), "4:21", "web.update.drain", ""},
		{"networks are unique", doc("    networks: [a, a]\n"), "4:19", `network "a" is listed twice`, ""},
		{"healthcheck is a mapping", doc("    healthcheck: [CMD, x]\n"), "4:18", "web.healthcheck: expected a mapping, got a list", ""},
		{"healthcheck retries is an integer", doc("    healthcheck: {retries: x}\n"), "4:28", "healthcheck.retries: expected an integer", ""},
		{"healthcheck disable is a boolean", doc("    healthcheck: {disable: \"yes\"}\n"), "4:28", "expected true or false", ""},

		// Durations.
		{"a bad duration", doc("    stop_grace_period: soon\n"), "4:24", `web.stop_grace_period: invalid duration "soon"`, "1m30s"},
		{"a bare number is not a duration", doc("    stop_grace_period: 10\n"), "4:24", "10 is a bare number", "add a unit, e.g. 10s"},
		{"a quoted bare number is not a duration", doc("    stop_grace_period: \"10\"\n"), "4:24", `invalid duration "10"`, "add a unit, e.g. 10s"},
		{"a duration is not negative", doc("    stop_grace_period: -1s\n"), "4:24", "must not be negative", ""},
		{"healthcheck durations are at least 1ms", doc("    healthcheck: {interval: 10us}\n"), "4:29", "healthcheck.interval: 10µs is too short", "1ms"},
		{"healthcheck durations take units", doc("    healthcheck: {timeout: 3}\n"), "4:28", "3 is a bare number", "add a unit"},
		{"health_deadline is positive", doc("    update: {health_deadline: 0s}\n"), "4:31", "web.update.health_deadline: must be greater than 0", ""},
		{"min_ready takes units", doc("    update: {min_ready: 5}\n"), "4:25", "web.update.min_ready: 5 is a bare number", "add a unit"},

		// Ports.
		{"a fixed host port with replicas > 1", doc("    replicas: 2\n    ports: [\"8080:80\"]\n"), "5:13", "web.ports[0]: fixed host port 8080 with replicas 2", `"127.0.0.1::80"`},
		{"a fixed host port with replicas written after it", doc("    ports: [\"127.0.0.1:8080:80\"]\n    replicas: 3\n"), "4:13", "fixed host port 8080 with replicas 3", "ephemeral"},
		{"a fixed host port with blue-green", doc("    ports: [\"8080:80\"]\n    update: {strategy: blue-green}\n"), "4:13", "fixed host port 8080 with strategy blue-green", "ephemeral"},
		{"a host port used by two workloads",
			"workloads:\n  a: {image: x, ports: [\"8080:80\"]}\n  b: {image: x, ports: [\"8080:81\"]}\n", "3:25",
			"b.ports[0]: host port 127.0.0.1:8080/tcp is already used by a (line 2)", `"127.0.0.1::81"`},
		{"a host port on every IP clashes with one on loopback",
			"workloads:\n  a: {image: x, ports: [\"0.0.0.0:8080:80\"]}\n  b: {image: x, ports: [\"8080:81\"]}\n", "3:25",
			"already used by a", ""},
		{"a host port used twice in one workload", doc("    ports: [\"8080:80\", \"8080:81\"]\n"), "4:24", "web.ports[1]: host port 127.0.0.1:8080/tcp is already used", ""},
		{"a host port out of range", doc("    ports: [\"70000:80\"]\n"), "4:13", "host port 70000 is out of range", ""},
		{"a container port of 0", doc("    ports: [\"0\"]\n"), "4:13", "container port 0 is out of range 1-65535", ""},
		{"a container port is required", doc("    ports: [\"8080:\"]\n"), "4:13", "missing container port", ""},
		{"a port must be a number", doc("    ports: [\"http\"]\n"), "4:13", `container port "http" is not a number`, ""},
		{"a port protocol is tcp or udp", doc("    ports: [\"80/sctp\"]\n"), "4:13", `unknown protocol "sctp"`, "tcp or udp"},
		{"port ranges are not supported", doc("    ports: [\"8000-8001:80\"]\n"), "4:13", "port ranges are not supported", ""},
		{"a host IP must be an IP", doc("    ports: [\"localhost:80:80\"]\n"), "4:13", `invalid host IP "localhost"`, ""},
		{"IPv6 needs brackets", doc("    ports: [\"::1:80:80\"]\n"), "4:13", "invalid port", "brackets"},
		{"compose's long port syntax is not taken", doc("    ports: [{target: 80}]\n"), "4:13", "expected a port string, got a mapping", "short syntax"},

		// Healthcheck tests.
		{"a test starts with CMD, CMD-SHELL or NONE", doc("    healthcheck: {test: [curl, x]}\n"), "4:26", `unknown test type "curl"`, `"CMD", "CMD-SHELL" or "NONE"`},
		{"CMD needs a command", doc("    healthcheck: {test: [CMD]}\n"), "4:25", "CMD needs a command", ""},
		{"CMD-SHELL takes one command", doc("    healthcheck: {test: [CMD-SHELL, a, b]}\n"), "4:25", "CMD-SHELL takes exactly one", ""},
		{"NONE takes no arguments", doc("    healthcheck: {test: [NONE, x]}\n"), "4:25", "NONE takes no arguments", ""},
		{"an empty test", doc("    healthcheck: {test: []}\n"), "4:25", "empty test", ""},
		{"disable contradicts a test", doc("    healthcheck: {test: [CMD, x], disable: true}\n"), "4:35", "disable: true contradicts test", ""},

		// Resources.
		{"cpus is positive", doc("    resources: {cpus: 0}\n"), "4:23", "web.resources.cpus: 0 must be greater than 0", ""},
		{"cpus is a number", doc("    resources: {cpus: lots}\n"), "4:23", `expected a number, got string "lots"`, ""},
		{"cpus is at least 0.01", doc("    resources: {cpus: 0.001}\n"), "4:23", "too small", "0.01"},
		{"memory has a known unit", doc("    resources: {memory: 64X}\n"), "4:25", `invalid size "64X"`, "b, k, m or g"},
		{"memory is at least 6M", doc("    resources: {memory: 1k}\n"), "4:25", "1024 bytes is too small", "6M"},
		{"memory is not a float of bytes", doc("    resources: {memory: 1.5}\n"), "4:25", "expected a size, got number 1.5", ""},

		// Enumerations and policies.
		{"stop_signal looks like a signal", doc("    stop_signal: TERM\n"), "4:18", `invalid signal "TERM"`, "SIGTERM"},
		{"restart is a known policy", doc("    restart: sometimes\n"), "4:14", `unknown restart policy "sometimes"`, "on-failure:N"},
		{"restart on-failure takes a number", doc("    restart: on-failure:x\n"), "4:14", "unknown restart policy", ""},
		{"strategy is rolling or blue-green", doc("    update: {strategy: canary}\n"), "4:24", `web.update.strategy: unknown value "canary"`, "rolling, blue-green"},
		{"order is start-first or stop-first", doc("    update: {order: first}\n"), "4:21", `unknown value "first"`, "start-first, stop-first"},
		{"failure_action is a known action", doc("    update: {failure_action: retry}\n"), "4:30", `unknown value "retry"`, "pause, rollback, continue"},
		{"parallelism 0 is an error", doc("    update: {parallelism: 0}\n"), "4:27", "web.update.parallelism: 0 must be at least 1", "1 rolls one slot at a time"},

		// Prefix.
		{"prefix is lowercase", "prefix: Acme\nworkloads: {}\n", "1:9", `invalid label prefix "Acme"`, "starting with a letter"},
		{"prefix starts with a letter", "prefix: 1acme\nworkloads: {}\n", "1:9", "invalid label prefix", ""},
		{"prefix is at most 40 characters", "prefix: " + strings.Repeat("a", 41) + "\nworkloads: {}\n", "1:9", "invalid label prefix", "40"},
		{"prefix is a string", "prefix: [a]\nworkloads: {}\n", "1:9", "prefix: expected a string, got a list", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) { wantParseError(t, tt.src, tt.pos, tt.msg, tt.hint) })
	}
}

// wantParseError checks that src fails to parse with, among its errors,
// one at pos ("line:col") whose message holds msg and whose hint holds
// hint, and that every error has a position.
func wantParseError(t *testing.T, src, pos, msg, hint string) {
	t.Helper()
	d, err := Parse("test.yaml", []byte(src))
	if err == nil {
		t.Fatalf("no error; got %s", dump(d))
	}
	var list spec.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error %T is not an ErrorList: %v", err, err)
	}
	for _, e := range list {
		if e.File != "test.yaml" || e.Line < 1 || e.Col < 1 {
			t.Errorf("entry without a position: %#v", e)
		}
	}
	for _, e := range list {
		if fmt.Sprintf("%d:%d", e.Line, e.Col) == pos && strings.Contains(e.Msg, msg) && strings.Contains(e.Hint, hint) {
			return
		}
	}
	t.Errorf("want an error at %s with %q (hint %q); got:\n%v", pos, msg, hint, err)
}

func TestParseCollectsEveryErrorSortedByPosition(t *testing.T) {
	src := "workloads:\n" +
		"  web:\n" +
		"    image: app\n" +
		"    update: {parallelism: 0}\n" +
		"    replicas: three\n" +
		"  Bad: {image: x}\n" +
		"prefx: a\n"
	_, err := Parse("test.yaml", []byte(src))
	var list spec.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("got %v, want an ErrorList", err)
	}
	var got []string
	for _, e := range list {
		got = append(got, fmt.Sprintf("%d:%d", e.Line, e.Col))
	}
	want := []string{"4:27", "5:15", "6:3", "7:1"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("positions %v, want %v\n%v", got, want, err)
	}
}

func TestParseReportsAnAliasedMistakeAtTheAnchorForEachUser(t *testing.T) {
	src := "workloads:\n  a: {image: x, replicas: &r three}\n  b: {image: x, replicas: *r}\n"
	_, err := Parse("test.yaml", []byte(src))
	var list spec.ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("got %v, want two errors", err)
	}
	for i, prefix := range []string{"a.replicas", "b.replicas"} {
		if e := list[i]; e.Line != 2 || e.Col != 27 || !strings.HasPrefix(e.Msg, prefix) {
			t.Errorf("error %d = %v, want %s at 2:27", i, e, prefix)
		}
	}
}

func dump(d *spec.Desired) string {
	if d == nil {
		return "<nil>"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Source=%q Prefix=%q Warnings=%v\n", d.Source, d.Prefix, d.Warnings)
	for _, n := range d.Names() {
		fmt.Fprintf(&b, "%s: %+v hc=%+v\n", n, *d.Workloads[n], d.Workloads[n].Healthcheck)
	}
	return b.String()
}
