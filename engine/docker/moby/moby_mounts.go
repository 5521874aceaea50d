package moby

import (
	"context"
	"fmt"
	"maps"
	"slices"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// ErrVolumeMissing is an external volume the engine lacks: rollcall never
// creates one.
var ErrVolumeMissing = fmt.Errorf("external volume missing: %w", docker.ErrNotFound)

// ensureVolumes makes every named volume the container needs: one that
// exists is used as it is (whoever made it, whatever its driver), a missing
// one is created with its labels, and a missing external one is an error,
// before the container exists.
func (m *Moby) ensureVolumes(ctx context.Context, volumes []docker.VolumeSpec) error {
	for _, v := range volumes {
		_, err := m.cli.VolumeInspect(ctx, v.Name, client.VolumeInspectOptions{})
		switch {
		case err == nil:
			continue
		case !cerrdefs.IsNotFound(err):
			return fmt.Errorf("volume %s: %w", v.Name, engineErr(err))
		case v.External:
			return fmt.Errorf("volume %s: %w (external: create it with `docker volume create %s`, or drop external)", v.Name, ErrVolumeMissing, v.Name)
		}
		_, err = m.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: v.Name, Driver: v.Driver,
			DriverOpts: maps.Clone(v.DriverOpts), Labels: maps.Clone(v.Labels)})
		if err != nil {
			return fmt.Errorf("create volume %s: %w", v.Name, engineErr(err))
		}
	}
	return nil
}

// hostMounts translates the container's mounts. A bind's source must
// exist: the mount API refuses a missing one, where the old -v syntax
// would make it an empty directory.
func hostMounts(host *container.HostConfig, ms []docker.Mount) {
	for _, m := range ms {
		hm := mount.Mount{Type: mount.Type(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
		if m.Type == string(mount.TypeTmpfs) && m.Size > 0 {
			hm.TmpfsOptions = &mount.TmpfsOptions{SizeBytes: m.Size}
		}
		host.Mounts = append(host.Mounts, hm)
	}
}

// mountsFromInspect are the mounts a container was created with.
func mountsFromInspect(ms []mount.Mount) []docker.Mount {
	var out []docker.Mount
	for _, m := range ms {
		dm := docker.Mount{Type: string(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly}
		if m.TmpfsOptions != nil {
			dm.Size = m.TmpfsOptions.SizeBytes
		}
		out = append(out, dm)
	}
	return out
}

// imageVolumes are the targets the image declares VOLUME at, sorted.
func imageVolumes(vs map[string]struct{}) []string {
	if len(vs) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(vs))
}
