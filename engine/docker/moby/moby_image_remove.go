package moby

import (
	"context"
	"fmt"
	"slices"

	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// ImagesLabelled lists the images that carry label (as key=value), tagged
// or not (an image a newer build of its tag replaced has no tag left):
// their IDs and tags.
func (m *Moby) ImagesLabelled(ctx context.Context, label string) ([]docker.Image, error) {
	res, err := m.cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("label", label)})
	if err != nil {
		return nil, fmt.Errorf("list images labelled %s: %w", label, engineErr(err))
	}
	out := make([]docker.Image, 0, len(res.Items))
	for _, s := range res.Items {
		var tags []string
		for _, t := range s.RepoTags {
			if t != "<none>:<none>" {
				tags = append(tags, t)
			}
		}
		out = append(out, docker.Image{ID: s.ID, RepoTags: slices.Clone(tags)})
	}
	return out, nil
}

// RemoveImage removes ref, never by force: a tag is taken off (and its
// image removed when no other tag names it), an ID removes its image. An
// image a container still uses stays, and the engine's error says so; a
// ref that names nothing is docker.ErrNotFound.
func (m *Moby) RemoveImage(ctx context.Context, ref string) error {
	if _, err := m.cli.ImageRemove(ctx, ref, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
		return fmt.Errorf("remove image %s: %w", ref, engineErr(err))
	}
	return nil
}
