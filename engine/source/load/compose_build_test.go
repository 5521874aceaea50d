package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// engineImages is an ImageLookup over a fixed set; any other reference is
// not on the engine (docker.ErrNotFound).
type engineImages map[string]string

func (im engineImages) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	id, ok := im[ref]
	if !ok {
		return docker.Image{}, errors.Join(errors.New("no such image: "+ref), docker.ErrNotFound)
	}
	return docker.Image{ID: id, RepoTags: []string{ref}}, nil
}

// parseComposeIn parses src as the compose.yaml of a directory called dir.
func parseComposeIn(t *testing.T, dir, src string, environ []string) *spec.Desired {
	t.Helper()
	path := filepath.Join(t.TempDir(), dir, "compose.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := ParseCompose(path, []byte(src), environ)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A build-only service runs what `docker compose build` tags,
// <project>-<service>, with the project named as compose names it; it is
// built first, never pulled.
func TestComposeBuildOnlyRunsComposesImage(t *testing.T) {
	src := "services:\n  app:\n    build: .\n  cache:\n    image: redis:7.2\n    build: ./redis\n"
	for _, tc := range []struct {
		name, dir, src string
		environ        []string
		want           string
	}{
		{"the directory's name", "Shop_Front", src, nil, "shop_front-app"},
		{"the file's name:", "shop", "name: store\n" + src, nil, "store-app"},
		{"COMPOSE_PROJECT_NAME over name:", "shop", "name: store\n" + src, []string{"COMPOSE_PROJECT_NAME=prod"}, "prod-app"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := parseComposeIn(t, tc.dir, tc.src, tc.environ)
			app, cache := d.Workloads["app"], d.Workloads["cache"]
			if app == nil || app.Image != tc.want || !app.BuildFirst || app.Pull != spec.PullMissing {
				t.Fatalf("app = %+v, want image %s, built first", app, tc.want)
			}
			if cache == nil || cache.Image != "redis:7.2" || cache.BuildFirst {
				t.Fatalf("cache = %+v: an image: is run as tagged and pulled as ever", cache)
			}
			var found bool
			for _, w := range d.Warnings {
				if strings.HasPrefix(w.Msg, "services.app: build only") {
					found = true
					line := 3
					if strings.HasPrefix(tc.src, "name:") {
						line = 4
					}
					if w.Line != line || w.Col != 5 || w.Hint != "build it first: docker compose build app" || !strings.Contains(w.Msg, tc.want) {
						t.Errorf("warning %d:%d %q hint %q", w.Line, w.Col, w.Msg, w.Hint)
					}
				}
			}
			if !found {
				t.Errorf("no build-only warning in %v", spec.ErrorList(d.Warnings))
			}
		})
	}
}

// A built image the engine lacks is an error wrapping ErrBuildFirst, never
// a pull: no registry has it. Once built it resolves like any image, and
// BuildFirst changes no hash.
func TestResolveBuildFirst(t *testing.T) {
	d := parseComposeIn(t, "shop", "services:\n  app:\n    build: .\n  web:\n    image: web:v1\n    pull_policy: build\n  db:\n    image: db:1\n", nil)
	if !d.Workloads["web"].BuildFirst || d.Workloads["web"].Pull != spec.PullNever {
		t.Fatalf("pull_policy build: %+v", d.Workloads["web"])
	}
	r := spec.Resolve(context.Background(), d, engineImages{})
	for _, name := range []string{"app", "web"} {
		w := r.Workload(name)
		if w.Pull != nil || !errors.Is(w.Err, spec.ErrBuildFirst) || errors.Is(w.Err, spec.ErrPullFirst) || w.Hash != "" {
			t.Fatalf("%s: pull %+v err %v, want an ErrBuildFirst and no pull", name, w.Pull, w.Err)
		}
		if !strings.Contains(w.Err.Error(), "build it first: docker compose build "+name) {
			t.Errorf("%s: %v lacks the hint", name, w.Err)
		}
	}
	if db := r.Workload("db"); db.Pull == nil || !errors.Is(db.Err, spec.ErrPullFirst) {
		t.Errorf("db (no build) is pulled as ever: %+v", db)
	}
	if !r.NeedsPull() {
		t.Error("db needs its pull")
	}

	r = spec.Resolve(context.Background(), d, engineImages{"shop-app": "sha256:app", "web:v1": "sha256:web", "db:1": "sha256:db"})
	app := r.Workload("app")
	if app.Err != nil || app.ImageID != "sha256:app" || app.Hash == "" {
		t.Fatalf("built: %+v", app)
	}
	plain := *app.Workload
	plain.BuildFirst = false
	if spec.Hash(&plain, "sha256:app") != app.Hash {
		t.Error("BuildFirst is in the spec hash")
	}
}

// A compose file in a directory whose name normalizes to nothing still
// loads: rollcall's own name is its project's.
func TestComposeProjectNameFallsBack(t *testing.T) {
	d, err := ParseCompose("/compose.yaml", []byte("services:\n  web: {image: web, volumes: [data:/data]}\nvolumes: {data: {}}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.Volumes["data"]; v == nil || v.Name != "rollcall_data" {
		t.Errorf("volumes %+v", d.Volumes)
	}
}
