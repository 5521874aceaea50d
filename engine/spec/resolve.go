package spec

import (
	"context"
	"fmt"

	"github.com/rollcall/rollcall/engine/docker"
)

// ImageLookup is the one engine call resolving needs.
type ImageLookup interface {
	ImageInspect(ctx context.Context, ref string) (docker.Image, error)
}

// Resolved is one workload with its image resolved against the engine.
type Resolved struct {
	*Workload
	ImageID string // "" when Err is set
	Hash    string // spec hash; "" when Err is set
	Err     error  // the image could not be resolved: nothing of this workload is stopped
}

// ResolvedDesired is a desired state ready for Diff.
type ResolvedDesired struct {
	Prefix    string
	Workloads []Resolved // sorted by name
}

// Workload returns the resolved workload called name, or nil.
func (r *ResolvedDesired) Workload(name string) *Resolved {
	for i := range r.Workloads {
		if r.Workloads[i].Name == name {
			return &r.Workloads[i]
		}
	}
	return nil
}

// Resolve fills in each workload's image ID and spec hash. Each image is
// looked up once. A missing image is an error for that workload only.
func Resolve(ctx context.Context, d *Desired, images ImageLookup) *ResolvedDesired {
	out := &ResolvedDesired{Prefix: d.Prefix}
	ids := map[string]string{}
	errs := map[string]error{}
	for _, name := range d.Names() {
		w := d.Workloads[name]
		r := Resolved{Workload: w}
		id, seen := ids[w.Image]
		err := errs[w.Image]
		if !seen && err == nil {
			img, ierr := images.ImageInspect(ctx, w.Image)
			if ierr != nil {
				err = fmt.Errorf("image %s: %w", w.Image, ierr)
				errs[w.Image] = err
			} else {
				id = img.ID
				ids[w.Image] = id
			}
		}
		if err != nil {
			r.Err = err
		} else {
			r.ImageID = id
			r.Hash = Hash(w, id)
		}
		out.Workloads = append(out.Workloads, r)
	}
	return out
}
