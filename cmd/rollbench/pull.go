package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/moby/moby/client"

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
//     container's removal. The pull alone is reported beside it;
//   - compose, where `docker compose` or `docker-compose` is installed:
//     `compose pull && compose up -d` of a compose file of the same 3
//     replicas (scale: 3) over its own v1, from the pull's start to up's
//     exit, and to the 3 new containers' healthy. compose recreates each
//     container stop-first, so it serves nothing for a moment: it is a
//     time to compare, not the same roll.
const pullBlobSize = 20 << 20

var pullConfig = rollConfig{replicas: 3, parallelism: 1}

// pullTools are the tools of the pull configuration, in the order of its
// first round; compose joins them where it is installed.
var pullTools = []string{"rollcall", "limit"}

// pullResult is what the pull configuration measured.
type pullResult struct {
	image    string                     // the registry's reference
	size     int64                      // the image's size on the engine, in bytes
	rounds   []map[string]time.Duration // per round, by tool
	pullOnly []time.Duration            // docker pull alone, in the limit's trials
	fails    map[string]int

	compose        []string        // the compose command ("docker-compose", or "docker compose"), nil where none is installed
	composeVersion string          // its version's line
	composeHealthy []time.Duration // compose's trials: pull's start to the new containers' healthy
}

// findCompose is the compose command this machine has, v2's plugin first,
// and its version, or nil.
func findCompose(ctx context.Context) ([]string, string) {
	for _, c := range [][]string{{"docker", "compose"}, {"docker-compose"}} {
		cmd := exec.CommandContext(ctx, c[0], append(c[1:], "version")...)
		if out, err := cmd.Output(); err == nil {
			line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
			return c, line
		}
	}
	return nil, ""
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
	p.compose, p.composeVersion = findCompose(ctx)
	tools := pullTools
	if p.compose != nil {
		tools = append(slices.Clone(tools), "compose")
		b.log("compose: %s (%s)", strings.Join(p.compose, " "), p.composeVersion)
	} else {
		b.log("compose: neither docker compose nor docker-compose is installed: no compose trials")
	}
	r.pull = p
	for round := range o.rounds {
		got := map[string]time.Duration{}
		for _, tool := range rotate(tools, round) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var d, pullOnly time.Duration
			var err error
			switch tool {
			case "rollcall":
				d, err = b.pullRollcall(ctx, ref)
			case "limit":
				d, pullOnly, err = b.pullLimit(ctx, ref)
			default:
				d, pullOnly, err = b.pullCompose(ctx, p.compose, ref)
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
			switch tool {
			case "limit":
				p.pullOnly = append(p.pullOnly, pullOnly)
				b.log("pull round %d · %s: %s (docker pull %s)", round+1, tool, seconds(d), seconds(pullOnly))
			case "compose":
				p.composeHealthy = append(p.composeHealthy, pullOnly)
				b.log("pull round %d · %s: %s (healthy after %s)", round+1, tool, seconds(d), seconds(pullOnly))
			default:
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

// composePullFile is a compose file of pullConfig's replicas of image, as
// rollcallFile's workload: its healthcheck, its grace, the default bridge.
func composePullFile(image string, interval time.Duration) string {
	return fmt.Sprintf(`services:
  web:
    image: %s
    scale: %d
    network_mode: bridge
    healthcheck: {test: ["CMD", "/demoapp", "-health"], interval: %s, timeout: 1s, retries: 3}
    stop_grace_period: 2s
    restart: "no"
`, image, pullConfig.replicas, interval)
}

// pullCompose times `compose pull && compose up -d` of the registry's
// image over compose's own v1 of the same replicas: to up's exit, and to
// the new containers' healthy.
func (b *bench) pullCompose(ctx context.Context, compose []string, ref string) (time.Duration, time.Duration, error) {
	project := b.name("cmpull")
	dir := filepath.Join(b.dir, project)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, 0, err
	}
	file := filepath.Join(dir, "compose.yaml")
	run := func(args ...string) error {
		all := append(slices.Clone(compose[1:]), append([]string{"--project-name", project, "--file", file}, args...)...)
		cmd := exec.CommandContext(ctx, compose[0], all...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s %s: %w: %s", strings.Join(compose, " "), strings.Join(args, " "), err, lastLines(stderr.String(), 5))
		}
		return nil
	}
	defer func() {
		if err := run("down", "--timeout", "2"); err != nil {
			b.log("compose down %s: %v", project, err)
		}
		b.teardown(project)
	}()
	label := "com.docker.compose.project=" + project
	if err := os.WriteFile(file, []byte(composePullFile(b.tag("v1", false), b.interval)), 0o644); err != nil {
		return 0, 0, err
	}
	if err := run("up", "--detach"); err != nil {
		return 0, 0, fmt.Errorf("set up v1: %w", err)
	}
	if _, err := b.waitHealthy(ctx, label, pullConfig.replicas, 3*time.Minute); err != nil {
		return 0, 0, fmt.Errorf("set up v1: %w", err)
	}
	if _, err := b.cli.ImageInspect(ctx, ref); err == nil {
		return 0, 0, fmt.Errorf("the engine has %s before the roll: no pull to time", ref)
	}
	if err := os.WriteFile(file, []byte(composePullFile(ref, b.interval)), 0o644); err != nil {
		return 0, 0, err
	}
	t0 := time.Now()
	if err := run("pull"); err != nil {
		return 0, 0, err
	}
	if err := run("up", "--detach"); err != nil {
		return 0, 0, err
	}
	up := time.Since(t0)
	f := client.Filters{}
	f.Add("label", label)
	f.Add("ancestor", ref)
	f.Add("health", "healthy")
	f.Add("status", "running")
	err := poll(ctx, 3*time.Minute, 20*time.Millisecond, "compose's new containers healthy", func() (bool, error) {
		res, err := b.cli.ContainerList(ctx, client.ContainerListOptions{Filters: f})
		return err == nil && len(res.Items) == pullConfig.replicas, err
	})
	if err != nil {
		return 0, 0, err
	}
	return up, time.Since(t0), nil
}

// pullMarkdown writes the pull configuration's table.
func (r *results) pullMarkdown(s *strings.Builder) {
	p := r.pull
	if p == nil {
		return
	}
	times := func(tool string) []time.Duration {
		var ds []time.Duration
		for _, round := range p.rounds {
			if d, ok := round[tool]; ok {
				ds = append(ds, d)
			}
		}
		return ds
	}
	ratios := func(a, b string) []float64 {
		var q []float64
		for _, round := range p.rounds {
			x, okA := round[a]
			y, okB := round[b]
			if okA && okB && y > 0 {
				q = append(q, x.Seconds()/y.Seconds())
			}
		}
		return q
	}
	head := "| roll v1 → an image only in a registry | rollcall | `docker pull` + limit | of which `docker pull` |"
	row := fmt.Sprintf("| %d replicas, parallelism %d, %.1f MB image | %s | %s | %s |", pullConfig.replicas, pullConfig.parallelism,
		float64(p.size)/1e6, durations(times("rollcall"), seconds)+failed(p.fails["rollcall"]), durations(times("limit"), seconds)+failed(p.fails["limit"]),
		durations(p.pullOnly, seconds))
	cols := 4
	if p.compose != nil {
		head += " `compose pull && compose up -d` | compose, to healthy |"
		row += fmt.Sprintf(" %s | %s |", durations(times("compose"), seconds)+failed(p.fails["compose"]), durations(p.composeHealthy, seconds))
		cols += 2
	}
	head += " rollcall / limit |"
	row += " " + floats(ratios("rollcall", "limit")) + " |"
	cols++
	if p.compose != nil {
		head += " compose (to up's exit) / limit |"
		row += " " + floats(ratios("compose", "limit")) + " |"
		cols++
	}
	fmt.Fprintf(s, "%s\n|%s\n%s\n\n", head, strings.Repeat("---|", cols), row)
	s.WriteString("The image: demoapp v2 FROM scratch and a file of random bytes, built once a run, pushed to a registry the bench serves on 127.0.0.1 " +
		"(go-containerregistry's, the one `rollcall demo --registry` serves) and removed from the engine; every trial pulls it anew, and it is removed after each. " +
		"rollcall: `rollcall apply` (`pull: missing`), start of the process to its exit, its pull step included. " +
		"Limit: `docker pull`, then the limit's roll (as above), from the pull's start. ")
	if p.compose != nil {
		fmt.Fprintf(s, "compose: `%s` (%s), `pull` then `up --detach` of a compose file of the same replicas (`scale:`, the same healthcheck), "+
			"from the pull's start to up's exit (compose recreates each container stop-first and does not wait for health), and to its new containers' healthy. ",
			strings.Join(p.compose, " "), p.composeVersion)
	} else {
		s.WriteString("compose: neither `docker compose` nor `docker-compose` is installed here, so no compose trials. ")
	}
	s.WriteString("Tools in alternating order each round; ratio: median (min–max) of the per-round ratios.\n\n")
	s.WriteString("Per round, in order: rollcall / limit " + perRound(p.rounds, [2]string{"rollcall", "limit"}))
	if p.compose != nil {
		s.WriteString("; compose / limit " + perRound(p.rounds, [2]string{"compose", "limit"}))
	}
	s.WriteString(".\n\n")
}
