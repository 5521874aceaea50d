// Package demo stages rollcall's embedded default: a small out-of-date host
// that shows every kind of step, for `rollcall demo`.
//
// On a real engine it builds the demoapp images v1 and v2 locally (FROM
// scratch, no registry), converges a starting state under its own prefix
// (rollcall-demo), crashes one container, and writes the desired state the
// console then opens on:
//
//   - web: 3 replicas of v1, to roll to v2 (start and roll steps);
//   - worker: 2 replicas of v2, one crashed (restart) and one whose restart
//     policy changed (update in place);
//   - old-api: a workload the desired state no longer has (stop).
//
// With no engine the same scenario runs on the in-memory fake engine.
//
// It only ever touches containers labelled <prefix>.managed=true, and acts
// only through a session (engine/session) under the host lock the caller
// holds: the starting state is converged by an unattended session, like
// apply. It never imports tui or theme.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/source/load"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/state"
)

// Prefix is the demo's label prefix: nothing else is ever touched.
const Prefix = "rollcall-demo"

// Image tags the demo builds (or, on the fake engine, pretends to have).
const (
	ImageV1 = "rollcall-demoapp:v1"
	ImageV2 = "rollcall-demoapp:v2"
)

// workloadYAML is one workload of the demo in rollcall.yaml form.
func workloadYAML(name, image, version string, replicas int, restart string) string {
	return fmt.Sprintf(`  %s:
    image: %s
    version: %q
    replicas: %d
    ports: ["127.0.0.1::8080"]
    healthcheck:
      test: ["CMD", "/demoapp", "-health"]
      interval: 1s
      timeout: 2s
      retries: 3
    resources: {memory: 64M}
    restart: %s
    stop_grace_period: 5s
    update: {health_deadline: 60s}
`, name, image, version, replicas, restart)
}

// startYAML is the out-of-date state the demo starts from: web and old-api
// run web.V1, worker img.V2. web is img, or img in the demo's registry
// (demo --registry): then only web's next image, web.V2, is not on the
// engine once staged, and its pull is the first step of the roll.
func startYAML(prefix string, img, web Images) string {
	return "prefix: " + prefix + "\nworkloads:\n" +
		workloadYAML("web", web.V1, "1", 3, "unless-stopped") +
		workloadYAML("worker", img.V2, "2", 2, `"no"`) +
		workloadYAML("old-api", web.V1, "1", 1, "unless-stopped")
}

// desiredYAML is the desired state the console opens on (web as in
// startYAML).
func desiredYAML(prefix string, img, web Images) string {
	return `# rollcall demo: the desired state. Edit it while the console runs:
# rollcall re-reads it on save and keeps the last good state on a mistake.
prefix: ` + prefix + "\nworkloads:\n" +
		workloadYAML("web", web.V2, "2", 3, "unless-stopped") +
		workloadYAML("worker", img.V2, "2", 2, "unless-stopped")
}

// NewFake returns a fake engine on real time with the demo's images, whose
// containers turn healthy ready after they start (the demo uses 2s). Until
// ctx ends, it works out its state changes every 100ms and emits their
// events, as a real engine does by itself: a session then sees a container
// turn healthy when it does, not at its next resync.
func NewFake(ctx context.Context, ready time.Duration) *fake.Engine {
	f := fake.New(fake.Options{Endpoint: "fake://rollcall-demo", Seed: time.Now().UnixNano()})
	f.AddImage(ImageV1, "", fake.Behaviour{ReadyAfter: ready})
	f.AddImage(ImageV2, "", fake.Behaviour{ReadyAfter: ready})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				f.Tick()
			}
		}
	}()
	return f
}

// StageOptions are what staging acts with.
type StageOptions struct {
	Prefix  string        // "" means Prefix
	Dir     string        // where the desired file goes; "" means Dir(prefix)
	Lock    *session.Lock // the host lock the caller holds for the prefix; required
	Journal *journal.Journal
	Log     io.Writer // progress lines
	// Executable is the binary the demo images are built from on a real
	// engine; "" means this process's own.
	Executable string
	// Images are the tags the demo runs; none means DefaultImages.
	Images Images
	// Registry, when set ("127.0.0.1:port", the demo's own, StartRegistry),
	// is where web's images come from: on the moby adapter Stage pushes
	// Images there after building them and takes the registry tags off
	// the engine, so web's start state and its roll each begin with a pull.
	Registry string
}

// Stage builds the images (real engine), converges the starting state with
// a session under opts.Lock, crashes worker/0, and writes the desired state
// to rollcall.yaml in opts.Dir. It returns that path.
func Stage(ctx context.Context, c docker.Client, opts StageOptions) (string, error) {
	if opts.Prefix == "" {
		opts.Prefix = Prefix
	}
	if opts.Dir == "" {
		opts.Dir = Dir(opts.Prefix)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Lock == nil {
		return "", errors.New("stage the demo: the host lock is required")
	}
	prefix, log, img := opts.Prefix, opts.Log, opts.Images.orDefault()
	web := img
	if opts.Registry != "" {
		web = img.InRegistry(opts.Registry)
	}
	if m, ok := c.(*moby.Moby); ok {
		if err := buildImages(ctx, m, opts.Executable, img, log); err != nil {
			return "", err
		}
		if opts.Registry != "" {
			if _, err := pushImages(ctx, m, opts.Registry, img, log); err != nil {
				return "", err
			}
		}
	}
	start, err := load.Parse("demo start state", []byte(startYAML(prefix, img, web)))
	if err != nil {
		return "", fmt.Errorf("demo start state: %w", err) // a bug in this file
	}
	desired := desiredYAML(prefix, img, web)
	if _, err := load.Parse("demo desired state", []byte(desired)); err != nil {
		return "", fmt.Errorf("demo desired state: %w", err)
	}
	fmt.Fprintf(log, "starting the out-of-date state under prefix %s\n", prefix)
	s := session.New(session.Options{
		Client: c, Source: source.Static("demo start state", start), Mode: session.ModeAuto,
		Prefix: prefix, Journal: opts.Journal, JournalMode: "demo", Lock: opts.Lock, Settle: -1,
		// The demo's own containers, from its own earlier runs: going back
		// to the start state is the point.
		Unattended: &session.Unattended{AllowMassStop: true},
	})
	if out := session.Converge(ctx, s); !out.Converged {
		return "", fmt.Errorf("start the demo state: %s", out.Reason)
	}
	if err := crash(ctx, c, prefix, "worker", 0); err != nil {
		return "", err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(opts.Dir, "rollcall.yaml")
	if err := os.WriteFile(path, []byte(desired), 0o644); err != nil {
		return "", err
	}
	return path, nil
}

// crash kills the container of a workload's slot, as `docker kill` would.
func crash(ctx context.Context, c docker.Client, prefix, workload string, slot int) error {
	cs, err := c.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, ct := range cs {
		if ct.Labels[docker.ManagedLabel(prefix)] != "true" || ct.Labels[docker.WorkloadLabel(prefix)] != workload ||
			ct.Labels[docker.SlotLabel(prefix)] != fmt.Sprint(slot) {
			continue
		}
		switch k := c.(type) {
		case interface {
			Kill(ctx context.Context, id string) error
		}: // the moby adapter
			return k.Kill(ctx, ct.ID)
		case *fake.Engine:
			return k.Kill(ct.ID, 137)
		default:
			return fmt.Errorf("crash %s/%d: this engine cannot kill", workload, slot)
		}
	}
	return fmt.Errorf("crash %s/%d: no such container", workload, slot)
}

// CleanOptions say what Clean removes: all the demo made, and nothing else.
type CleanOptions struct {
	Prefix string // "" means Prefix
	Dir    string // where the demo wrote its desired files; "" means Dir(prefix)
	// Images are the tags the demo built; none means DefaultImages. On an
	// engine that builds images (the moby adapter), their tags are removed,
	// and the older builds of them that a newer build left untagged (found
	// by their imagebuild.TagLabel).
	Images Images
	// StateDir is where sessions kept the prefix's revisions, holds and pins
	// (beside the journal); "" leaves them.
	StateDir string
	// LockDir is where the host locks of the prefix are; a lock file no
	// process holds is removed. "" leaves them.
	LockDir string
}

// Cleaned is what Clean removed.
type Cleaned struct {
	Containers int      // containers of the prefix stopped and removed
	Images     []string // image refs removed: a tag, or the ID of an untagged older build
	Files      []string // paths removed: desired files, their folders, state and lock files
}

// imageRemover is an engine whose images the demo built (the moby adapter).
type imageRemover interface {
	ImagesLabelled(ctx context.Context, label string) ([]docker.Image, error)
	RemoveImage(ctx context.Context, ref string) error
}

// Clean stops and removes every container of the prefix the demo made, the
// demo's images, its desired files (one host's and the several-host demo's),
// and the state and lock files sessions kept for the prefix. The caller holds
// the host lock of the prefix on c. An image a container outside the demo
// still uses stays, and the error says so.
func Clean(ctx context.Context, c docker.Client, opts CleanOptions) (Cleaned, error) {
	if opts.Prefix == "" {
		opts.Prefix = Prefix
	}
	if opts.Dir == "" {
		opts.Dir = Dir(opts.Prefix)
	}
	prefix, img := opts.Prefix, opts.Images.orDefault()
	var out Cleaned
	var errs []error
	if c != nil {
		n, err := cleanContainers(ctx, c, prefix)
		out.Containers = n
		errs = append(errs, err)
		if r, ok := c.(imageRemover); ok {
			refs, err := cleanImages(ctx, r, img)
			out.Images = refs
			errs = append(errs, err)
		}
	}
	files, err := cleanFiles(opts)
	out.Files = files
	errs = append(errs, err)
	return out, errors.Join(errs...)
}

// cleanContainers stops and removes the managed containers of prefix.
func cleanContainers(ctx context.Context, c docker.Client, prefix string) (int, error) {
	c = docker.Scoped(c, prefix)
	cs, err := c.List(ctx, prefix)
	if err != nil {
		return 0, err
	}
	var errs []error
	n := 0
	for _, ct := range cs {
		if ct.Labels[docker.ManagedLabel(prefix)] != "true" || !strings.HasPrefix(ct.Name, prefix+"-") {
			continue // never anything but our own
		}
		if err := c.Stop(ctx, ct.ID, 5*time.Second); err != nil && !errors.Is(err, docker.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		if err := c.Remove(ctx, ct.ID); err != nil && !errors.Is(err, docker.ErrNotFound) {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// cleanImages removes the tags img names, then the images labelled as
// built for one of them that no tag names any more (older builds), and
// their tags as copies in a registry on loopback (demo --registry's:
// "127.0.0.1:port/" and the tag). An image that still carries another tag
// (someone tagged it) is not the demo's alone, and stays.
func cleanImages(ctx context.Context, r imageRemover, img Images) ([]string, error) {
	var removed []string
	var errs []error
	for _, tag := range []string{img.V1, img.V2} {
		switch err := r.RemoveImage(ctx, tag); {
		case err == nil:
			removed = append(removed, tag)
		case !errors.Is(err, docker.ErrNotFound):
			errs = append(errs, err)
		}
	}
	for _, tag := range []string{img.V1, img.V2} {
		imgs, err := r.ImagesLabelled(ctx, imagebuild.TagLabel+"="+tag)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, i := range imgs {
			// The copies of tag a demo --registry pulled from its own
			// registry (whose port went with its process) are the demo's.
			others := 0
			for _, t := range i.RepoTags {
				if !registryCopyOf(t, tag) {
					others++
					continue
				}
				switch err := r.RemoveImage(ctx, t); {
				case err == nil:
					removed = append(removed, t)
				case !errors.Is(err, docker.ErrNotFound):
					errs = append(errs, err)
				}
			}
			if others > 0 || len(i.RepoTags) > 0 {
				continue // someone else's tag; or its last tag went, and the image with it
			}
			switch err := r.RemoveImage(ctx, i.ID); {
			case err == nil:
				removed = append(removed, i.ID)
			case !errors.Is(err, docker.ErrNotFound):
				errs = append(errs, err)
			}
		}
	}
	return removed, errors.Join(errs...)
}

// cleanFiles removes the files the demo and its sessions wrote, by their
// names only: the desired files in opts.Dir (rollcall.yaml, fleet.yaml,
// hosts/*/rollcall.yaml) and their folders once empty, the prefix's
// revisions, holds and pins in opts.StateDir, and its lock files in
// opts.LockDir that no process holds. Anything else stays.
func cleanFiles(opts CleanOptions) ([]string, error) {
	var removed []string
	var errs []error
	remove := func(path string) {
		switch err := os.Remove(path); {
		case err == nil:
			removed = append(removed, path)
		case !errors.Is(err, os.ErrNotExist):
			errs = append(errs, err)
		}
	}
	// rmdir removes an empty folder; one with anything else in it stays.
	rmdir := func(path string) {
		if err := os.Remove(path); err == nil {
			removed = append(removed, path)
		}
	}
	hosts := filepath.Join(opts.Dir, "hosts")
	remove(filepath.Join(opts.Dir, "rollcall.yaml"))
	remove(filepath.Join(opts.Dir, "fleet.yaml"))
	if dirs, err := filepath.Glob(filepath.Join(hosts, "*")); err == nil {
		for _, d := range dirs {
			remove(filepath.Join(d, "rollcall.yaml"))
			rmdir(d)
		}
	}
	rmdir(hosts)
	rmdir(opts.Dir)
	for _, kind := range []string{"revisions", "holds", "pins"} {
		// Each file, and the lock file its writers take beside it.
		for _, tail := range []string{".json", ".json.lock"} {
			for _, path := range keyedFiles(opts.StateDir, kind+"-"+opts.Prefix+"-", tail) {
				remove(path)
			}
		}
	}
	for _, path := range keyedFiles(opts.LockDir, "rollcall-"+opts.Prefix+"-", ".lock") {
		// Only a lock nobody holds: take it, remove it, let it go.
		lk, _, err := state.TakeLock(path, "rollcall demo --clean", time.Now())
		if err != nil {
			continue
		}
		remove(path)
		lk.Release()
	}
	return removed, errors.Join(errs...)
}

// keyedFiles are the files of dir named head, an engine key (state.EngineKey:
// 12 hex digits) and tail: exactly, so that a prefix that begins with
// another's ("rollcall-demo-x") is not taken for it.
func keyedFiles(dir, head, tail string) []string {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		key, ok := strings.CutPrefix(e.Name(), head)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		key, ok = strings.CutSuffix(key, tail)
		if ok && len(key) == 12 && strings.Trim(key, "0123456789abcdef") == "" {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// LockDir is where the host locks of prefix are kept
// (state.DefaultLockPath's folder).
func LockDir(prefix string) string {
	return filepath.Dir(state.DefaultLockPath(docker.EngineInfo{}, prefix))
}

// Dir is where the demo keeps the desired file of a prefix.
func Dir(prefix string) string { return filepath.Join(os.TempDir(), prefix) }
