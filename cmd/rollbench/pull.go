package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/demo"
	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/imagebuild"
)

// The configuration pull (issue 27): 3 replicas of demoapp v1 roll to an
// image that is only in a registry, so the roll begins with its pull.
// The image is demoapp v2 FROM scratch with pullBlobSize random bytes on
// top, built once a run under a tag of the run's, pushed to a registry
// the bench serves on 127.0.0.1 (engine/demo's, the one demo --registry
// serves) and then removed from the engine; every trial pulls it anew, and
// the trial's image is removed again after it. The tools, in alternating
// order each round:
//
//   - rollcall: `rollcall apply` of the registry's image (pull: missing),
//     from the start of the process to its exit: its pull step, then the
//     roll;
//   - limit: `docker pull` of the image, then the limit's roll (bare API
//     calls, rollLimit), from the pull's start to the last old
//     container's removal. The pull alone is reported beside it.
const pullBlobSize = 20 << 20

var pullConfig = rollConfig{replicas: 3, parallelism: 1}

// pullTools are the tools of the pull configuration, in the order of its
// first round.
var pullTools = []string{"rollcall", "limit"}

// pullResult is what the pull configuration measured.
type pullResult struct {
	image    string                     // the registry's reference
	size     int64                      // the image's size on the engine, in bytes
	rounds   []map[string]time.Duration // per round, by tool
	pullOnly []time.Duration            // docker pull alone, in the limit's trials
	fails    map[string]int
}

// measurePull runs the pull configuration's rounds.
func (r *results) measurePull(ctx context.Context, b *bench, o options) error {
	reg, err := demo.StartRegistry()
	if err != nil {
		return err
	}
	defer reg.Close()
	ref, size, err := b.buildForRegistry(ctx, reg.Host)
	if err != nil {
		return err
	}
	p := &pullResult{image: ref, size: size, fails: map[string]int{}}
	r.pull = p
	for round := range o.rounds {
		got := map[string]time.Duration{}
		for _, tool := range rotate(pullTools, round) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var d, pullOnly time.Duration
			var err error
			if tool == "rollcall" {
				d, err = b.pullRollcall(ctx, ref)
			} else {
				d, pullOnly, err = b.pullLimit(ctx, ref)
			}
			// The next trial pulls again: the image goes, whatever this one did.
			if rerr := b.removePulled(ref); rerr != nil {
				return rerr
			}
			if err != nil {
				p.fails[tool]++
				b.log("pull round %d · %s: FAILED: %v", round+1, tool, err)
				continue
			}
			got[tool] = d
			if tool == "limit" {
				p.pullOnly = append(p.pullOnly, pullOnly)
				b.log("pull round %d · %s: %s (docker pull %s)", round+1, tool, seconds(d), seconds(pullOnly))
			} else {
				b.log("pull round %d · %s: %s", round+1, tool, seconds(d))
			}
		}
		p.rounds = append(p.rounds, got)
	}
	return nil
}

// buildForRegistry builds the pull's image (demoapp v2 and a file of
// pullBlobSize random bytes), pushes it to the registry at host, and
// removes it from the engine: only the registry has it then. It returns
// the registry's reference and the image's size.
func (b *bench) buildForRegistry(ctx context.Context, host string) (string, int64, error) {
	files, err := imagebuild.ImageFiles(b.demoapp, "v2")
	if err != nil {
		return "", 0, err
	}
	blob := make([]byte, pullBlobSize)
	if _, err := rand.Read(blob); err != nil {
		return "", 0, err
	}
	files["blob"] = blob
	files["Dockerfile"] = append(files["Dockerfile"], "COPY blob /blob\n"...)
	local := "rollbench-pull:" + b.run
	ref := host + "/rollbench-pull:" + b.run
	b.images[local], b.images[ref] = "", "" // removed at the cleanup, whatever happens
	if _, err := b.moby.BuildImage(ctx, local, files); err != nil {
		return "", 0, fmt.Errorf("build %s: %w", local, err)
	}
	img, err := b.cli.ImageInspect(ctx, local)
	if err != nil {
		return "", 0, err
	}
	b.log("pushing %s (%.1f MB) to the bench's registry as %s", local, float64(img.Size)/1e6, ref)
	if err := b.moby.PushImage(ctx, local, ref); err != nil {
		return "", 0, err
	}
	if err := b.moby.RemoveImage(ctx, local); err != nil {
		return "", 0, err
	}
	return ref, img.Size, nil
}

// removePulled removes ref from the engine (no error if it is not there),
// once the trial's containers are gone.
func (b *bench) removePulled(ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.moby.RemoveImage(ctx, ref); err != nil && !errors.Is(err, docker.ErrNotFound) {
		return err
	}
	return nil
}

// pullRollcall times `rollcall apply` of the registry's image over v1.
func (b *bench) pullRollcall(ctx context.Context, ref string) (time.Duration, error) {
	prefix := b.name("rcpull")
	dir := filepath.Join(b.dir, prefix)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	defer b.teardown(prefix)
	journal := filepath.Join(dir, "state", "journal.jsonl")
	var files [2]string
	for i, image := range []string{b.tag("v1", false), ref} {
		files[i] = filepath.Join(dir, fmt.Sprintf("%d.yaml", i))
		if err := os.WriteFile(files[i], []byte(rollcallFile(prefix, image, pullConfig, b.interval, "no")), 0o644); err != nil {
			return 0, err
		}
	}
	if _, err := b.apply(ctx, journal, files[0]); err != nil {
		return 0, fmt.Errorf("set up v1: %w", err)
	}
	if _, err := b.cli.ImageInspect(ctx, ref); err == nil {
		return 0, fmt.Errorf("the engine has %s before the roll: no pull to time", ref)
	}
	d, err := b.timedApply(ctx, dir, prefix, journal, files[1], "3 replicas to "+ref)
	if err != nil {
		return 0, fmt.Errorf("roll to %s: %w", ref, err)
	}
	if n, _, err := b.healthyCount(ctx, prefix+".managed=true"); err != nil || n != pullConfig.replicas {
		return 0, fmt.Errorf("after apply: %d healthy containers, want %d (%v)", n, pullConfig.replicas, err)
	}
	return d, nil
}

// pullLimit times `docker pull` of ref, then the limit's roll to it, and
// the pull alone.
func (b *bench) pullLimit(ctx context.Context, ref string) (time.Duration, time.Duration, error) {
	base := b.name("limpull")
	defer b.teardown(base)
	l, err := b.limitSetUp(ctx, base, pullConfig)
	if err != nil {
		return 0, 0, err
	}
	l.to = ref
	if _, err := b.cli.ImageInspect(ctx, ref); err == nil {
		return 0, 0, fmt.Errorf("the engine has %s before the roll: no pull to time", ref)
	}
	t0 := time.Now()
	if _, err := cli(ctx, "pull", "--quiet", ref); err != nil {
		return 0, 0, err
	}
	pulled := time.Since(t0)
	err = l.roll(ctx)
	d := time.Since(t0)
	if err != nil {
		return 0, 0, err
	}
	return d, pulled, nil
}

// pullMarkdown writes the pull configuration's table.
func (r *results) pullMarkdown(s *strings.Builder) {
	p := r.pull
	if p == nil {
		return
	}
	var ratios []float64
	var rc, lim []time.Duration
	for _, round := range p.rounds {
		a, okA := round["rollcall"]
		b, okB := round["limit"]
		if okA {
			rc = append(rc, a)
		}
		if okB {
			lim = append(lim, b)
		}
		if okA && okB && b > 0 {
			ratios = append(ratios, a.Seconds()/b.Seconds())
		}
	}
	fmt.Fprintf(s, "| roll v1 → an image only in a registry | rollcall | `docker pull` + limit | of which `docker pull` | rollcall / limit |\n|---|---|---|---|---|\n")
	fmt.Fprintf(s, "| %d replicas, parallelism %d, %.1f MB image | %s | %s | %s | %s |\n\n", pullConfig.replicas, pullConfig.parallelism,
		float64(p.size)/1e6, durations(rc, seconds)+failed(p.fails["rollcall"]), durations(lim, seconds)+failed(p.fails["limit"]),
		durations(p.pullOnly, seconds), floats(ratios))
	s.WriteString("The image: demoapp v2 FROM scratch and a file of random bytes, built once a run, pushed to a registry the bench serves on 127.0.0.1 " +
		"(go-containerregistry's, the one `rollcall demo --registry` serves) and removed from the engine; every trial pulls it anew, and it is removed after each. " +
		"rollcall: `rollcall apply` (`pull: missing`), start of the process to its exit, its pull step included. " +
		"Limit: `docker pull`, then the limit's roll (as above), from the pull's start. Tools in alternating order each round; ratio: median (min–max) of the per-round ratios.\n\n")
}
