package moby

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
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
