package load

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

func composeFile(dir string) string { return filepath.Join("testdata", "compose", dir, "compose.yaml") }

// warned is the subject of each warning: its message up to the first ": ",
// e.g. "services.app.volumes".
func warned(d *spec.Desired) []string {
	var out []string
	for _, w := range d.Warnings {
		subject, _, _ := strings.Cut(w.Msg, ": ")
		out = append(out, subject)
	}
	return out
}

// TestParseComposeMapsRealWorldFiles: compose files shaped like real ones map
// onto exactly the workloads they describe, with rollcall's defaults for
// what they leave out, and a warning for each thing rollcall does otherwise.
func TestParseComposeMapsRealWorldFiles(t *testing.T) {
	withDefaults := func(w spec.Workload) *spec.Workload {
		out := &spec.Workload{Replicas: 1, StopSignal: spec.DefaultStopSignal, StopGrace: spec.DefaultStopGrace, Restart: spec.DefaultRestart, Pull: spec.PullMissing, Update: defaultUpdate()}
		v, def := reflect.ValueOf(out).Elem(), reflect.ValueOf(w)
		for i := range def.NumField() {
			if !def.Field(i).IsZero() {
				v.Field(i).Set(def.Field(i))
			}
		}
		return out
	}
	unsupportedVolumes := map[string]*spec.Volume{
		"app-data": {Key: "app-data", Name: "unsupported_app-data", Line: 65, Col: 3},
		"db-data":  {Key: "db-data", Name: "unsupported_db-data", Line: 66, Col: 3},
	}
	for _, tc := range []struct {
		volumes  map[string]*spec.Volume
		name     string
		dir      string
		environ  []string
		prefix   string
		want     map[string]*spec.Workload
		warnings []string
	}{{
		name:   "web and worker with deploy blocks, anchors and an external network",
		dir:    "webapp",
		prefix: "shop", // x-rollcall; the project name gives nothing
		want: map[string]*spec.Workload{
			"web": withDefaults(spec.Workload{
				Name: "web", Image: "registry.example.com/shop/web:2.4.1", Replicas: 3,
				Command:     []string{"serve", "--listen", ":8080"},
				Environment: map[string]string{"APP_ENV": "production", "WORKERS": "4"},
				Labels:      map[string]string{"traefik.enable": "true", "traefik.http.routers.shop.rule": "Host(`shop.example.com`)"},
				Ports:       []spec.Port{{HostIP: "127.0.0.1", ContainerPort: 8080, Proto: "tcp"}},
				Healthcheck: &spec.Healthcheck{Test: []string{"CMD", "/app", "healthcheck"}, Interval: 5 * time.Second,
					Timeout: 2 * time.Second, Retries: 3, StartPeriod: 10 * time.Second},
				Resources: spec.Resources{NanoCPUs: 500_000_000, Memory: 256 << 20},
				StopGrace: 20 * time.Second,
				Networks:  []string{"traefik_edge"},
				Update: spec.UpdatePolicy{Strategy: spec.StrategyRolling, Parallelism: 1, Order: spec.OrderStartFirst, OrderSet: true, MinReady: spec.DefaultMinReady,
					HealthDeadline: 45 * time.Second, FailureAction: spec.FailureRollback},
			}),
			"worker": withDefaults(spec.Workload{
				Name: "worker", Image: "registry.example.com/shop/worker:2.4.1", Replicas: 2,
				Command:     []string{"worker", "--queue", "default"},
				Environment: map[string]string{"APP_ENV": "production", "QUEUE": "default"},
				Healthcheck: &spec.Healthcheck{Test: []string{"NONE"}},
				Resources:   spec.Resources{Memory: 512 << 20},
				StopSignal:  "SIGINT",
				StopGrace:   20 * time.Second,
				Networks:    []string{"traefik_edge"},
				Update: spec.UpdatePolicy{Strategy: spec.StrategyRolling, Parallelism: 2, Order: spec.OrderStopFirst, OrderSet: true, MinReady: spec.DefaultMinReady,
					HealthDeadline: spec.DefaultHealthDeadline, FailureAction: spec.FailurePause},
			}),
		},
	}, {
		name: ".env and the shell interpolate, the shell winning; env_file and pass-through variables",
		dir:  "dotenv",
		// TAG is in .env too (1.8.0): the shell's value wins, as in compose.
		environ: []string{"TAG=2.0.0", "FROM_SHELL=hello"},
		prefix:  spec.DefaultPrefix,
		want: map[string]*spec.Workload{
			"api": withDefaults(spec.Workload{
				Name: "api", Image: "registry.example.com/api:2.0.0",
				Environment: map[string]string{"DATABASE_URL": "postgres://db.internal/app", "LOG_LEVEL": "info", "SENTRY_DSN": "", "FROM_SHELL": "hello"},
				Ports:       []spec.Port{{HostIP: "127.0.0.1", HostPort: 8000, ContainerPort: 8000, Proto: "tcp"}},
				Resources:   spec.Resources{Memory: 128 << 20},
			}),
		},
		warnings: []string{"variable SENTRY_DSN is not set", "services.api.environment.NOT_IN_SHELL"},
	}, {
		name:    "COMPOSE_DISABLE_ENV_FILE leaves .env out",
		dir:     "dotenv",
		environ: []string{"COMPOSE_DISABLE_ENV_FILE=true"},
		prefix:  spec.DefaultPrefix,
		want: map[string]*spec.Workload{
			"api": withDefaults(spec.Workload{
				Name: "api", Image: "/api:latest",
				Environment: map[string]string{"DATABASE_URL": "postgres://db.internal/app", "LOG_LEVEL": "", "SENTRY_DSN": ""},
				Ports:       []spec.Port{{HostIP: "127.0.0.1", HostPort: 8000, ContainerPort: 8000, Proto: "tcp"}},
				Resources:   spec.Resources{Memory: 128 << 20},
			}),
		},
		warnings: []string{"variable REGISTRY is not set", "variable LOG_LEVEL is not set", "variable SENTRY_DSN is not set",
			"services.api.environment.FROM_SHELL", "services.api.environment.NOT_IN_SHELL"},
	}, {
		name:   "every field rollcall cannot honour is named; the create options are honoured",
		dir:    "unsupported",
		prefix: spec.DefaultPrefix,
		want: map[string]*spec.Workload{
			"app": withDefaults(spec.Workload{
				Name: "app", Image: "ghcr.io/example/app:3.1",
				Ports:       []spec.Port{{HostIP: "127.0.0.1", HostPort: 8080, ContainerPort: 8080, Proto: "tcp"}},
				Healthcheck: &spec.Healthcheck{Test: []string{"CMD", "/app", "-health"}},
				Networks:    []string{"backend"},
				Aliases:     map[string][]string{"backend": {"api"}},
				Mounts: []spec.Mount{
					{Type: spec.MountVolume, Source: "app-data", Volume: "unsupported_app-data", Def: unsupportedVolumes["app-data"], Target: "/srv/data", Line: 15, Col: 9},
					{Type: spec.MountBind, Source: testdataAbs("compose/unsupported/app.conf"), Target: "/app_config", ReadOnly: true, Line: 31, Col: 15},
					{Type: spec.MountBind, Source: testdataAbs("compose/unsupported/db_password.txt"), Target: "/run/secrets/db_password", ReadOnly: true, Line: 30, Col: 15},
				},
				Options: spec.Options{Entrypoint: []string{"/docker-entrypoint.sh"}, User: "1000:1000", WorkingDir: "/srv",
					Privileged: true, CapAdd: []string{"NET_ADMIN"}, LogDriver: "json-file", LogOptions: map[string]string{"max-size": "10m"}},
				Update: func() spec.UpdatePolicy {
					u := defaultUpdate()
					u.Delay, u.RollbackParallelism = 10*time.Second, 1
					return u
				}(), // update_config.delay, rollback_config.parallelism
				DependsOn: []spec.Dependency{{Workload: "db", Condition: spec.DependHealthy}},
			}),
			"db": withDefaults(spec.Workload{
				Name: "db", Image: "postgres:16",
				Environment: map[string]string{"POSTGRES_PASSWORD_FILE": "/run/secrets/db_password"},
				Ports:       []spec.Port{{HostIP: "127.0.0.1", HostPort: 5432, ContainerPort: 5432, Proto: "tcp"}},
				Networks:    []string{"backend"},
				Mounts: []spec.Mount{{Type: spec.MountVolume, Source: "db-data", Volume: "unsupported_db-data", Def: unsupportedVolumes["db-data"],
					Target: "/var/lib/postgresql/data", Line: 54, Col: 9}},
			}),
		},
		volumes: unsupportedVolumes,
		warnings: []string{
			"version",
			"services.app.container_name",
			"services.app.ports[].app_protocol", "services.app.networks.backend",
			"services.app.healthcheck.start_interval", "services.app.deploy.placement",
			"services.app.deploy.restart_policy",
			"services.app.deploy.resources.limits.pids",
			"services.db.ports[0]", "services.db.networks.backend",
			"services.adminer", // left out by its profile; its own volumes are not reported
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := LoadCompose(composeFile(tc.dir), tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			if d.Prefix != tc.prefix || d.Source != composeFile(tc.dir) {
				t.Errorf("prefix %q source %q", d.Prefix, d.Source)
			}
			want := &spec.Desired{Source: d.Source, Prefix: tc.prefix, Workloads: tc.want, Volumes: tc.volumes, Warnings: d.Warnings}
			if !reflect.DeepEqual(d, want) {
				t.Errorf("got\n%s\nwant\n%s", dump(d), dump(want))
			}
			got, wantWarned := warned(d), slices.Clone(tc.warnings)
			slices.Sort(got)
			slices.Sort(wantWarned)
			if !slices.Equal(got, wantWarned) {
				t.Errorf("warnings name\n  %q\nwant\n  %q\nall:\n%v", got, wantWarned, spec.ErrorList(d.Warnings))
			}
			for _, w := range d.Warnings {
				if w.File != composeFile(tc.dir) || w.Line < 1 || w.Col < 1 {
					t.Errorf("warning not placed in the file: %v", w)
				}
			}
		})
	}
}

// TestComposeWarningsPointAtTheField: a warning sits on the line and column
// of the attribute it names.
func TestComposeWarningsPointAtTheField(t *testing.T) {
	d, err := LoadCompose(composeFile("unsupported"), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]int{
		"version": {3, 1}, "services.app.container_name": {8, 5}, "services.app.deploy.placement": {37, 7},
		"services.app.networks.backend": {28, 7}, "services.db.ports[0]": {56, 9}, "services.adminer": {59, 3},
	}
	for _, w := range d.Warnings {
		subject, _, _ := strings.Cut(w.Msg, ": ")
		if at, ok := want[subject]; ok {
			if w.Line != at[0] || w.Col != at[1] {
				t.Errorf("%s at %d:%d, want %d:%d", subject, w.Line, w.Col, at[0], at[1])
			}
			delete(want, subject)
		}
	}
	if len(want) > 0 {
		t.Errorf("no warning for %v", want)
	}
}

// TestComposeAndRollcallYAMLAgree: a compose file and the rollcall.yaml that
// says the same thing give the same workloads, since one set of rules
// reads both.
func TestComposeAndRollcallYAMLAgree(t *testing.T) {
	fromCompose, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(`
services:
  web:
    image: app:v2
    command: -listen :8080
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: ["CMD", "/app", "-health"], interval: 1s, retries: 3}
    deploy:
      replicas: 3
      resources: {limits: {cpus: "0.25", memory: 64M}}
      update_config: {parallelism: 2, order: stop-first, failure_action: continue, monitor: 30s, delay: 20s}
    stop_grace_period: 1m30s
    restart: on-failure:3
    networks: {front: {aliases: [www, shop]}}
networks: {front: {external: true}}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	fromYAML := mustParse(t, `
workloads:
  web:
    image: app:v2
    command: [-listen, ":8080"]
    ports: ["127.0.0.1::8080"]
    healthcheck: {test: ["CMD", "/app", "-health"], interval: 1s, retries: 3}
    replicas: 3
    resources: {cpus: 0.25, memory: 64M}
    update: {parallelism: 2, order: stop-first, failure_action: continue, health_deadline: 30s, delay: 20s}
    stop_grace_period: 1m30s
    restart: on-failure:3
    networks: {front: {aliases: [www, shop]}}
`)
	if !reflect.DeepEqual(fromCompose.Workloads, fromYAML.Workloads) || len(fromCompose.Warnings) != 0 {
		t.Errorf("compose:\n%s\nrollcall.yaml:\n%s", dump(fromCompose), dump(fromYAML))
	}
	if spec.Hash(fromCompose.Workloads["web"], "sha256:1") != spec.Hash(fromYAML.Workloads["web"], "sha256:1") {
		t.Error("the two give different spec hashes")
	}
}

// TestComposeProxyIsTheExtensions: x-rollcall.proxy is rollcall.yaml's
// proxy.
func TestComposeProxyIsTheExtensions(t *testing.T) {
	for _, admin := range []string{"http://127.0.0.1:2019", "unix:///run/rollcall-caddy/admin.sock"} {
		d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"),
			[]byte("x-rollcall:\n  prefix: shop\n  proxy: {caddy_admin: \""+admin+"\"}\nservices: {}\n"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (&spec.Proxy{CaddyAdmin: admin}); !reflect.DeepEqual(d.Proxy, want) || d.Prefix != "shop" {
			t.Errorf("proxy %+v prefix %q; want %+v and shop", d.Proxy, d.Prefix, want)
		}
	}
}

// TestComposeRegistryPollIsTheExtensions: x-rollcall.registry_poll is
// rollcall.yaml's registry_poll (issue 27), what a session follows a tag
// of pull_policy: always by; without it, the default.
func TestComposeRegistryPollIsTheExtensions(t *testing.T) {
	const services = "services:\n  web: {image: \"127.0.0.1:5000/app:v2\", pull_policy: always}\n"
	for _, tc := range []struct {
		ext  string
		want time.Duration
	}{
		{"x-rollcall:\n  registry_poll: 45s\n", 45 * time.Second},
		{"x-rollcall: {prefix: shop, registry_poll: 2m}\n", 2 * time.Minute},
		{"", spec.DefaultRegistryPoll},
	} {
		d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(tc.ext+services), nil)
		if err != nil {
			t.Fatalf("%q: %v", tc.ext, err)
		}
		if d.RegistryPollEvery() != tc.want || !d.FollowsTags() {
			t.Errorf("%q: every %s, follows tags %v; want %s and true", tc.ext, d.RegistryPollEvery(), d.FollowsTags(), tc.want)
		}
		if len(d.Warnings) != 0 {
			t.Errorf("%q: warnings %v", tc.ext, d.Warnings)
		}
	}
}

// TestParseComposeErrors: what rollcall.yaml refuses, a compose file cannot
// slip past, and compose's own errors come back located in the file too.
func TestParseComposeErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		src       string
		dotenv    string // the .env beside the file, if any
		line, col int
		msg, hint string
	}{
		{name: "service name not a DNS label", src: "services:\n  Web_App:\n    image: app\n",
			line: 2, col: 3, msg: `invalid workload name "Web_App"`, hint: "DNS label"},
		{name: "fixed host port with replicas > 1", src: "services:\n  web:\n    image: app\n    ports: [\"8080:80\"]\n    deploy: {replicas: 3}\n",
			line: 4, col: 13, msg: "services.web.ports[0]: fixed host port 8080 with replicas 3", hint: `"127.0.0.1::80"`},
		{name: "host port taken by another service", src: "services:\n  a: {image: app, ports: [\"127.0.0.1:80:80\"]}\n  b: {image: app, ports: [\"127.0.0.1:80:81\"]}\n",
			line: 3, col: 27, msg: "services.b.ports[0]: host port 127.0.0.1:80/tcp is already used by a"},
		{name: "reserved label prefix", src: "services:\n  web:\n    image: app\n    labels: {rollcall.managed: \"false\"}\n",
			line: 4, col: 14, msg: `services.web.labels.rollcall.managed: label "rollcall.managed" uses the reserved prefix`},
		{name: "label prefix follows x-rollcall", src: "x-rollcall: {prefix: shop}\nservices:\n  web:\n    image: app\n    labels:\n      shop.tier: web\n",
			line: 6, col: 7, msg: `label "shop.tier" uses the reserved prefix`},
		{name: "rollcall's stop signal rule", src: "services:\n  web:\n    image: app\n    stop_signal: TERM\n",
			line: 4, col: 18, msg: `services.web.stop_signal: invalid signal "TERM"`},
		{name: "rollcall's failure action values", src: "services:\n  web:\n    image: app\n    deploy:\n      update_config:\n        failure_action: explode\n",
			line: 6, col: 25, msg: `services.web.deploy.update_config.failure_action: unknown value "explode"`, hint: "pause, rollback, continue"},
		{name: "memory below the engine's minimum", src: "services:\n  web:\n    image: app\n    deploy: {resources: {limits: {memory: 1M}}}\n",
			line: 4, col: 43, msg: "services.web.deploy.resources.limits.memory: 1048576 bytes is too small"},
		{name: "x-rollcall prefix", src: "x-rollcall:\n  prefix: Bad Prefix\nservices: {}\n",
			line: 2, col: 11, msg: `x-rollcall.prefix: invalid label prefix "Bad Prefix"`},
		{name: "x-rollcall unknown key", src: "x-rollcall:\n  prefx: shop\nservices: {}\n",
			line: 2, col: 3, msg: "x-rollcall.prefx: unknown key", hint: "prefix"},
		{name: "x-rollcall registry_poll too often", src: "x-rollcall:\n  registry_poll: 1s\nservices: {}\n",
			line: 2, col: 18, msg: "x-rollcall.registry_poll: 1s is too often", hint: "10s"},
		{name: "x-rollcall registry_poll a bare number", src: "x-rollcall:\n  registry_poll: 30\nservices: {}\n",
			line: 2, col: 18, msg: "x-rollcall.registry_poll: 30 is a bare number, not a duration", hint: "add a unit"},
		{name: "x-rollcall unknown key lists registry_poll", src: "x-rollcall:\n  registry_pol: 1m\nservices: {}\n",
			line: 2, col: 3, msg: "x-rollcall.registry_pol: unknown key", hint: "registry_poll"},
		{name: "x-rollcall proxy URL", src: "x-rollcall:\n  proxy: {caddy_admin: \"ftp://x\"}\nservices: {}\n",
			line: 2, col: 24, msg: `x-rollcall.proxy.caddy_admin: "ftp://x" is not a unix socket or an http or https URL`},
		{name: "x-rollcall proxy socket", src: "x-rollcall:\n  proxy: {caddy_admin: \"unix://admin.sock\"}\nservices: {}\n",
			line: 2, col: 24, msg: `x-rollcall.proxy.caddy_admin: "unix://admin.sock" is not the absolute path of a socket`, hint: "three slashes"},
		{name: "x-rollcall proxy unknown key", src: "x-rollcall:\n  proxy:\n    caddy: \"http://x:2019\"\nservices: {}\n",
			line: 3, col: 5, msg: "x-rollcall.proxy.caddy: unknown key", hint: "caddy_admin"},
		{name: "x-rollcall proxy is a mapping", src: "x-rollcall:\n  proxy: [a]\nservices: {}\n",
			line: 2, col: 10, msg: "x-rollcall.proxy: expected a mapping, got a list"},
		{name: "no services key", src: "networks: {edge: {}}\n",
			line: 1, col: 1, msg: "no services key", hint: "services: {}"},
		{name: "compose: wrong type", src: "services:\n  web:\n    image: app\n    deploy:\n      replicas: many\n",
			line: 5, col: 17, msg: "compose: error while interpolating services.web.deploy.replicas"},
		{name: "compose: unknown attribute", src: "services:\n  web:\n    image: app\n    imagee: app\n",
			line: 4, col: 13, msg: "compose: services.web.imagee: not a compose attribute"},
		{name: "compose: required variable", src: "services:\n  web:\n    image: app:${TAG:?set TAG}\n",
			line: 3, col: 12, msg: "required variable TAG is missing a value", hint: ".env"},
		{name: "compose: duplicate key", src: "services:\n  web:\n    image: a\n    image: b\n",
			line: 4, msg: `mapping key "image" already defined at line 3`},
		{name: "broken .env", src: "services: {web: {image: \"app:${TAG}\"}}\n", dotenv: "TAG=v1\nBAD KEY=1\n",
			line: 2, col: 1, msg: "invalid .env: key cannot contain a space"},
		{name: "YAML syntax", src: "services:\n\tweb: {}\n",
			line: 2, col: 1, msg: "invalid YAML", hint: "indent with spaces"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "compose.yaml")
			if tc.dotenv != "" {
				if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(tc.dotenv), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := ParseCompose(path, []byte(tc.src), nil)
			var list spec.ErrorList
			if !errors.As(err, &list) || d != nil {
				t.Fatalf("got %v, %v; want an ErrorList", d, err)
			}
			for _, e := range list {
				if !strings.Contains(e.Msg, tc.msg) {
					continue
				}
				file := path
				if strings.Contains(tc.msg, ".env") {
					file = filepath.Join(dir, ".env")
				}
				if e.File != file || e.Line != tc.line || (tc.col != 0 && e.Col != tc.col) || !strings.Contains(e.Hint, tc.hint) {
					t.Errorf("got %s:%d:%d hint %q; want line %d col %d hint containing %q", e.File, e.Line, e.Col, e.Hint, tc.line, tc.col, tc.hint)
				}
				return
			}
			t.Errorf("no error containing %q in:\n%v", tc.msg, list)
		})
	}
}

func TestIsComposeFile(t *testing.T) {
	for path, want := range map[string]bool{
		"compose.yaml": true, "/srv/app/compose.yml": true, "docker-compose.yaml": true, "./docker-compose.yml": true,
		"rollcall.yaml": false, "compose.yaml.bak": false, "prod-compose.yaml": false, "": false,
	} {
		if got := IsComposeFile(path); got != want {
			t.Errorf("IsComposeFile(%q) = %v", path, got)
		}
	}
}

func TestLoadComposeUnreadableFileWrapsOSError(t *testing.T) {
	_, err := LoadCompose(filepath.Join(t.TempDir(), "compose.yaml"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("got %v, want an os.ErrNotExist", err)
	}
}

// FuzzParseCompose checks that ParseCompose never panics, and that every
// failure and every warning it reports carries the file and a 1-based
// position.
func FuzzParseCompose(f *testing.F) {
	for _, dir := range []string{"webapp", "dotenv", "buildonly", "unsupported"} {
		data, err := os.ReadFile(composeFile(dir))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"services: {}\n",
		"services:\n  web: {image: x, ports: [\"8080-8081:80-81\"], deploy: {replicas: 2}}\n",
		"x-rollcall: 3\nservices: {web: {image: \"${A:-${B}}\", command: \"a 'b\"}}\n",
		"services:\n  a: &a {image: x, environment: [A]}\n  b: {<<: *a, scale: 0}\n",
		"services:\n  web: {image: x, networks: {n: {aliases: [y]}}}\nnetworks: {n: {external: true, name: real}}\n",
		"include: [other.yaml]\nservices: {}\n",
		"services:\n\tweb: {}\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	name := filepath.Join(f.TempDir(), "compose.yaml")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseCompose(name, data, nil)
		located := func(what string, e *spec.Error) {
			if e == nil || e.File != name || e.Line < 1 || e.Col < 1 || e.Msg == "" {
				t.Fatalf("%s without a position for %q: %#v", what, data, e)
			}
		}
		if err == nil {
			if d == nil || d.Workloads == nil {
				t.Fatalf("no error and no desired state for %q", data)
			}
			for _, w := range d.Warnings {
				located("warning", w)
			}
			return
		}
		var list spec.ErrorList
		if d != nil || !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("got %v, %T %v; want a non-empty ErrorList", d, err, err)
		}
		for _, e := range list {
			located("error", e)
		}
	})
}

// TestComposePreStopIsOneHook: compose's pre_stop hook maps onto pre_stop;
// more than one hook is an error, since a container keeps one command.
func TestComposePreStopIsOneHook(t *testing.T) {
	name := filepath.Join(t.TempDir(), "compose.yaml")
	d, err := ParseCompose(name, []byte("services:\n  web:\n    image: app\n    pre_stop:\n      - command: [/app, -drain]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Workloads["web"].PreStop; !slices.Equal(got, []string{"/app", "-drain"}) {
		t.Errorf("pre_stop = %q", got)
	}
	_, err = ParseCompose(name, []byte("services:\n  web:\n    image: app\n    pre_stop:\n      - command: [/a]\n      - command: [/b]\n"), nil)
	if err == nil || !strings.Contains(err.Error(), "services.web.pre_stop: 2 hooks") || !strings.Contains(err.Error(), ":5:7:") {
		t.Errorf("two hooks: err = %v", err)
	}
}

// testdataAbs is a path under testdata, absolute, as a bind source is.
func testdataAbs(rel string) string {
	abs, err := filepath.Abs(filepath.Join("testdata", rel))
	if err != nil {
		panic(err)
	}
	return abs
}

// TestComposeTmpfsOptions: an item of tmpfs: is PATH[:OPTIONS], as the
// engine takes it: size is the mount's, other options are warned of, and
// neither ends up in the target.
func TestComposeTmpfsOptions(t *testing.T) {
	src := "services:\n  web:\n    image: app\n    tmpfs:\n      - /tmp\n      - /run:size=16m,mode=1777\n"
	d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Workloads["web"].Mounts
	if len(got) != 2 || got[0].Target != "/tmp" || got[0].Size != 0 || got[1].Target != "/run" || got[1].Size != 16<<20 {
		t.Errorf("mounts %+v, want /tmp and /run of 16 MiB", got)
	}
	if w := warned(d); !slices.Contains(w, "services.web.tmpfs[1]") {
		t.Errorf("warnings %v, want one of services.web.tmpfs[1] (mode=1777)", w)
	}
	_, err = ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(strings.Replace(src, "16m", "lots", 1)), nil)
	var list spec.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Line != 6 || !strings.Contains(list[0].Msg, `services.web.tmpfs[1]: invalid size "lots"`) {
		t.Errorf("got %v, want services.web.tmpfs[1]: invalid size at line 6", err)
	}
}

// TestComposeOneShotJobs: a service another waits for to complete is a
// job, as in compose: it runs once (Job), and the engine never starts it
// again (its restart policy is "no" even under rollcall's default).
func TestComposeOneShotJobs(t *testing.T) {
	src := "services:\n  migrate:\n    image: migrate\n  api:\n    image: api\n" +
		"    depends_on:\n      migrate: {condition: service_completed_successfully}\n  web:\n    image: web\n    depends_on: [api]\n"
	d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, job := range map[string]bool{"migrate": true, "api": false, "web": false} {
		w := d.Workloads[name]
		if w.Job != job {
			t.Errorf("%s: Job %v, want %v", name, w.Job, job)
		}
		if job && w.Restart != "no" {
			t.Errorf("%s: restart %q, want no", name, w.Restart)
		}
	}
	if len(d.Warnings) != 0 {
		t.Errorf("warnings: %v", spec.ErrorList(d.Warnings))
	}
}
