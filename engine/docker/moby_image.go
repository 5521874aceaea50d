package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// BuildImage builds an image on the engine from files (name -> content;
// there must be a "Dockerfile") with the classic builder, tags it tag and
// returns its ID. It needs no registry as long as the Dockerfile starts
// FROM scratch or from an image the engine has.
func (m *Moby) BuildImage(ctx context.Context, tag string, files map[string][]byte) (string, error) {
	if _, ok := files["Dockerfile"]; !ok {
		return "", fmt.Errorf("build image %s: no Dockerfile among the files", tag)
	}
	buildCtx, err := tarFiles(files)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	res, err := m.cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	defer res.Body.Close()
	if err := readBuildStream(res.Body); err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	img, err := m.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("build image %s: %w", tag, err)
	}
	return img.ID, nil
}

// readBuildStream reads the builder's JSON messages to the end; the build
// failed if any of them carries an error. The last lines of output go with
// the error, since they usually say which step failed.
func readBuildStream(r io.Reader) error {
	dec := json.NewDecoder(r)
	var tail []string
	for {
		var msg jsonstream.Message
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read build output: %w", err)
		}
		if msg.Error != nil {
			if len(tail) > 0 {
				return fmt.Errorf("%s (after: %s)", msg.Error.Message, strings.Join(tail, " | "))
			}
			return errors.New(msg.Error.Message)
		}
		if s := strings.TrimSpace(msg.Stream); s != "" {
			tail = append(tail, s)
			if len(tail) > 3 {
				tail = tail[1:]
			}
		}
	}
}

// tarFiles packs files into a build context, in name order.
func tarFiles(files map[string][]byte) (io.Reader, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		hdr := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(files[name])), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			return nil, fmt.Errorf("pack %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pack build context: %w", err)
	}
	return &buf, nil
}

// demoappVersion keeps the version safe to write into a Dockerfile.
var demoappVersion = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$`)

// BuildDemoappImage compiles ./cmd/demoapp statically and builds it into a
// FROM scratch image tagged tag, whose default command answers version. The
// image has no healthcheck of its own: rollcall sets one per container
// (["CMD", "/demoapp", "-health"]). It needs the Go toolchain and the rollcall
// source tree (found from the working directory); the binary is compiled once
// per process and engine architecture, so later builds take about a second.
func BuildDemoappImage(ctx context.Context, m *Moby, tag, version string) (string, error) {
	if !demoappVersion.MatchString(version) {
		return "", fmt.Errorf("build demoapp image %s: version %q: want letters, digits, '.', '_', '+' or '-'", tag, version)
	}
	v, err := m.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("build demoapp image %s: engine version: %w", tag, err)
	}
	bin, err := demoappBinary(ctx, v.Os, v.Arch)
	if err != nil {
		return "", fmt.Errorf("build demoapp image %s: %w", tag, err)
	}
	dockerfile := fmt.Sprintf(`FROM scratch
COPY demoapp /demoapp
ENTRYPOINT ["/demoapp"]
CMD ["-version", %q]
LABEL rollcall.demoapp.version=%q
`, version, version)
	id, err := m.BuildImage(ctx, tag, map[string][]byte{
		"Dockerfile": []byte(dockerfile),
		"demoapp":    bin,
	})
	if err != nil {
		return "", fmt.Errorf("build demoapp image: %w", err)
	}
	return id, nil
}

// demoappBinaries caches compiled demoapp binaries by GOOS/GOARCH for the
// life of the process. Only successes are kept: a build cut short by a
// cancelled context is tried again by the next caller.
var (
	demoappMu       sync.Mutex
	demoappBinaries = map[string][]byte{}
)

// demoappBinary compiles ./cmd/demoapp for goos/goarch, or returns the
// binary this process compiled before.
func demoappBinary(ctx context.Context, goos, goarch string) ([]byte, error) {
	if goos == "" {
		goos = "linux"
	}
	key := goos + "/" + goarch
	demoappMu.Lock()
	defer demoappMu.Unlock()
	if bin, ok := demoappBinaries[key]; ok {
		return bin, nil
	}
	bin, err := compileDemoapp(ctx, goos, goarch)
	if err != nil {
		return nil, err
	}
	demoappBinaries[key] = bin
	return bin, nil
}

func compileDemoapp(ctx context.Context, goos, goarch string) ([]byte, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "demoapp")); err != nil {
		return nil, fmt.Errorf("compile demoapp: %s has no cmd/demoapp: run from the rollcall source tree", root)
	}
	dir, err := os.MkdirTemp("", "rollcall-demoapp-")
	if err != nil {
		return nil, fmt.Errorf("compile demoapp: %w", err)
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "demoapp")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s", "-o", out, "./cmd/demoapp")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos)
	if goarch != "" {
		cmd.Env = append(cmd.Env, "GOARCH="+goarch)
	}
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("compile demoapp: %w: %s", err, bytes.TrimSpace(msg))
	}
	bin, err := os.ReadFile(out)
	if err != nil {
		return nil, fmt.Errorf("compile demoapp: %w", err)
	}
	return bin, nil
}

// moduleRoot is the directory of the go.mod governing the working
// directory: as the go command sees it, or else the nearest one upwards.
func moduleRoot(ctx context.Context) (string, error) {
	if out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			return filepath.Dir(gomod), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find go.mod: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find go.mod: none in the working directory or above: run from the rollcall source tree")
		}
		dir = parent
	}
}
