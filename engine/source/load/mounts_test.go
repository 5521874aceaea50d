package load

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// writeDesired writes a desired file, and the files beside it, into a
// fresh directory and returns the file's path.
func writeDesired(t *testing.T, body string, beside ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range beside {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMountsReadEverySyntax(t *testing.T) {
	path := writeDesired(t, `prefix: shop
volumes:
  pgdata: {}
  uploads: {external: true, name: shop-uploads}
  cache: {driver: local, driver_opts: {type: tmpfs, device: tmpfs}}
workloads:
  db:
    image: postgres:16
    volumes:
      - pgdata:/var/lib/postgresql/data
      - ./init.sql:/docker-entrypoint-initdb.d/init.sql:ro
      - /scratch
      - {type: tmpfs, target: /run, size: 16M}
      - {type: volume, source: uploads, target: /srv/uploads, read_only: true}
      - cache:/cache:rw
    tmpfs: [/tmp:size=64m]
    read_only: true
`, "init.sql")
	d, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(path)
	vols := map[string]*spec.Volume{
		"pgdata":  {Key: "pgdata", Name: "shop_pgdata", Line: 3, Col: 3},
		"uploads": {Key: "uploads", Name: "shop-uploads", External: true, Line: 4, Col: 3},
		"cache":   {Key: "cache", Name: "shop_cache", Driver: "local", DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs"}, Line: 5, Col: 3},
	}
	if !reflect.DeepEqual(d.Volumes, vols) {
		t.Errorf("volumes:\n%+v\nwant\n%+v", d.Volumes, vols)
	}
	want := []spec.Mount{
		{Type: spec.MountVolume, Source: "pgdata", Volume: "shop_pgdata", Def: vols["pgdata"], Target: "/var/lib/postgresql/data", Line: 10, Col: 9},
		{Type: spec.MountBind, Source: filepath.Join(dir, "init.sql"), Target: "/docker-entrypoint-initdb.d/init.sql", ReadOnly: true, Line: 11, Col: 9},
		{Type: spec.MountVolume, Target: "/scratch", Line: 12, Col: 9},
		{Type: spec.MountTmpfs, Target: "/run", Size: 16 << 20, Line: 13, Col: 9},
		{Type: spec.MountVolume, Source: "uploads", Volume: "shop-uploads", Def: vols["uploads"], Target: "/srv/uploads", ReadOnly: true, Line: 14, Col: 9},
		{Type: spec.MountVolume, Source: "cache", Volume: "shop_cache", Def: vols["cache"], Target: "/cache", Line: 15, Col: 9},
		{Type: spec.MountTmpfs, Target: "/tmp", Size: 64 << 20, Line: 16, Col: 13},
	}
	w := d.Workloads["db"]
	if !reflect.DeepEqual(w.Mounts, want) {
		t.Errorf("mounts:\n%+v\nwant\n%+v", w.Mounts, want)
	}
	if !w.ReadOnly {
		t.Error("read_only: true not read")
	}
}

// TestBadMountsAreErrorsAtTheirPlace: every mistake in a mount is an error
// at the line and column of the entry, with a hint; a bind source that
// does not exist is one, never a directory the engine makes.
func TestBadMountsAreErrorsAtTheirPlace(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		line, col  int
		msg        string
	}{
		{"undeclared volume", "    volumes: [pgdta:/data]\nvolumes: {pgdata: {}}\n", 4, 15, `volume "pgdta" is not declared`},
		{"missing bind source", "    volumes: [\"./nginx.conf:/etc/nginx/nginx.conf:ro\"]\n", 4, 15, "nginx.conf: does not exist"},
		{"missing absolute bind source", "    volumes:\n      - {type: bind, source: /nonexistent/rollcall/x, target: /x}\n", 5, 9, "/nonexistent/rollcall/x: does not exist"},
		{"mode", "    volumes: [\"./here:/x:z\"]\n", 4, 15, `mode "z"`},
		{"relative target", "    volumes: [\"./here:data\"]\n", 4, 15, `target "data" is not an absolute path`},
		{"root target", "    volumes: [\"./here:/\"]\n", 4, 15, "target / would cover"},
		{"twice at one target", "    volumes: [\"./here:/x\"]\n    tmpfs: /x\n", 5, 12, "/x is mounted twice"},
		{"size on a bind", "    volumes:\n      - {type: bind, source: ./here, target: /x, size: 1M}\n", 5, 56, "size on a bind mount"},
		{"no type", "    volumes:\n      - {source: ./here, target: /x}\n", 5, 9, "type is required"},
		{"bad type", "    volumes:\n      - {type: npipe, target: /x}\n", 5, 16, "npipe"},
		{"tmpfs with a source", "    volumes:\n      - {type: tmpfs, source: x, target: /x}\n", 5, 9, "tmpfs with source"},
		{"tmpfs option", "    tmpfs: [\"/tmp:mode=1777\"]\n", 4, 13, `tmpfs option "mode=1777"`},
		{"external with a driver", "    volumes: [v:/x]\nvolumes: {v: {external: true, driver: local}}\n", 5, 11, "external with a driver"},
		{"bad volume name", "    volumes: [v:/x]\nvolumes: {v: {name: \"-v\"}}\n", 5, 21, "invalid volume name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeDesired(t, doc(tc.body), "here")
			_, err := Load(path)
			var errs spec.ErrorList
			if !errors.As(err, &errs) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			for _, e := range errs {
				if strings.Contains(e.Msg, tc.msg) {
					if e.Line != tc.line || e.Col != tc.col {
						t.Errorf("%q at %d:%d, want %d:%d", e.Msg, e.Line, e.Col, tc.line, tc.col)
					}
					if e.Hint == "" && tc.name != "bad type" {
						t.Errorf("%q has no hint", e.Msg)
					}
					return
				}
			}
			t.Errorf("no error with %q in:\n%v", tc.msg, errs)
		})
	}
}

// TestRelativeBindInAFileFromNowhere: a file with no directory on this
// machine (a URL, stdin) cannot name a relative bind source.
func TestRelativeBindInAFileFromNowhere(t *testing.T) {
	_, err := Parse("https://example.com/rollcall.yaml", []byte(doc("    volumes: [\"./x:/x\"]\n")))
	if err == nil || !strings.Contains(err.Error(), "not on this machine's disk") {
		t.Fatalf("want a refusal, got %v", err)
	}
}

// TestBindSourcesOfHostsAreTheirs: with hosts:, a bind source is each
// host's own path, which this machine cannot look for.
func TestBindSourcesOfHostsAreTheirs(t *testing.T) {
	src := doc("    volumes: [\"/nonexistent/rollcall/conf:/conf:ro\"]\n") +
		"hosts:\n  a: {endpoint: \"ssh://a.example\"}\n"
	if _, err := Parse("fleet.yaml", []byte(src)); err != nil {
		t.Fatal(err)
	}
}

func TestStopFirstCauses(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       spec.StopFirstCause
		what       string
	}{
		{"stateless", "", "", ""},
		{"chosen", "    update: {order: stop-first}\n", spec.StopFirstChosen, ""},
		{"fixed host port", "    ports: [\"8080:80\"]\n", spec.StopFirstHostPort, ""},
		{"one replica writes a volume", "    volumes: [pgdata:/data]\n", spec.StopFirstData, "volume pgdata"},
		{"one replica writes a bind", "    volumes: [\"./here:/data\"]\n", spec.StopFirstData, "bind "},
		{"the file says start-first", "    volumes: [pgdata:/data]\n    update: {order: start-first}\n", "", ""},
		{"read-only", "    volumes: [\"pgdata:/data:ro\"]\n", "", ""},
		{"tmpfs", "    tmpfs: /data\n", "", ""},
		{"replicas share it", "    replicas: 2\n    volumes: [pgdata:/data]\n", "", ""},
		{"the slot's own volume", "    replicas: 3\n    volumes: [/data]\n", spec.StopFirstSlotVolume, "/data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Load(writeDesired(t, doc(tc.body)+"volumes: {pgdata: {}}\n", "here"))
			if err != nil {
				t.Fatal(err)
			}
			w := d.Workloads["web"]
			got, what := w.StopFirst()
			if got != tc.want || !strings.HasPrefix(what, tc.what) {
				t.Errorf("StopFirst() = %q, %q; want %q, %q", got, what, tc.want, tc.what)
			}
			wantOrder := spec.OrderStartFirst
			if tc.want != "" {
				wantOrder = spec.OrderStopFirst
			}
			if o := w.EffectiveOrder(); o != wantOrder {
				t.Errorf("EffectiveOrder() = %s, want %s", o, wantOrder)
			}
		})
	}
}
