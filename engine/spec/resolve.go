package spec

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
)

// ImageLookup is the one engine call resolving needs.
type ImageLookup interface {
	ImageInspect(ctx context.Context, ref string) (docker.Image, error)
}

// RegistryLookup is an ImageLookup that can also ask the registry where a
// tag points (docker.Client is one). Resolve uses it for `pull: always`;
// with a plain ImageLookup, always resolves as missing does.
type RegistryLookup interface {
	ImageLookup
	DistributionInspect(ctx context.Context, ref string) (string, error)
}

// Resolved is one workload with its image resolved against the engine.
type Resolved struct {
	*Workload
	ImageID string // "" when Err or Pull is set
	Hash    string // spec hash; "" when Err or Pull is set
	Err     error  // the image could not be resolved: nothing of this workload is stopped
	// Pull is set when the image must be pulled first (DESIGN §5 rule 0):
	// the engine lacks it, or with `pull: always` the registry's tag
	// moved. Nothing of the workload starts, stops, restarts or is
	// replaced until the pull succeeded and the image resolves. Err is
	// set too (wrapping ErrPullFirst), so whatever reads an unresolved
	// workload as "cannot tell" does so; Diff plans the pull.
	Pull *PullNeed
	// RegistryErr is, for `pull: always`, why the registry could not say
	// where the tag points (a *docker.PullError): the engine's image is
	// kept ("cannot tell" is not "moved"), and the plan says so.
	RegistryErr error
	// ImageVolumes are the targets the image declares VOLUME at and no
	// mount of the workload covers: each slot keeps a volume of its own
	// there (SlotVolumeName), so a roll carries the data to the
	// replacement, as compose's recreate does.
	ImageVolumes []string
}

// ErrPullFirst is the Err of a workload whose image is pulled first.
var ErrPullFirst = errors.New("pulled first: nothing of this workload starts or stops before")

// ErrBuildFirst is the Err of a workload whose image is built, not pulled
// (Workload.BuildFirst), while the engine lacks it: no registry has
// compose's <project>-<service>, so nothing is pulled and the message says
// to build it first.
var ErrBuildFirst = errors.New("build it first")

// ErrPlatform is the Err of a workload whose image is of another platform
// than its platform: says: nothing of it starts or stops.
var ErrPlatform = errors.New("another platform than the workload's")

// PullNeed is why a workload's image is pulled before anything else of it.
type PullNeed struct {
	Ref string // the reference to pull: the workload's image
	// Moved: `pull: always`, and the registry's tag names Digest, which
	// the engine's image of the tag is not; else the engine lacks Ref.
	Moved  bool
	Digest string
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

// NeedsPull reports whether any workload waits for a pull.
func (r *ResolvedDesired) NeedsPull() bool {
	for i := range r.Workloads {
		if r.Workloads[i].Pull != nil {
			return true
		}
	}
	return false
}

type inspected struct {
	img docker.Image
	err error
}

type distributed struct {
	digest string
	err    error
}

// Resolve fills in each workload's image ID and spec hash. Each image is
// looked up once (and, for `pull: always`, asked of the registry once). An
// image the engine lacks is a pull for that workload (Resolved.Pull), or an
// error with `pull: never`, or one wrapping ErrBuildFirst for an image that
// is built (Workload.BuildFirst); any other failure is an error for that workload
// only. A registry that cannot say where an `always` tag points leaves the
// engine's image in place: "cannot tell" is not "moved". On a swarm, an
// image VOLUME that no mount covers is an error wrapping
// ErrSwarmImageVolume (swarm.go).
func Resolve(ctx context.Context, d *Desired, images ImageLookup) *ResolvedDesired {
	out := &ResolvedDesired{Prefix: d.Prefix}
	seen := map[string]inspected{}
	asked := map[string]distributed{}
	registry, _ := images.(RegistryLookup)
	for _, name := range d.Names() {
		w := d.Workloads[name]
		r := Resolved{Workload: w}
		in, ok := seen[w.Image]
		if !ok {
			in.img, in.err = images.ImageInspect(ctx, w.Image)
			seen[w.Image] = in
		}
		switch {
		case errors.Is(in.err, docker.ErrNotFound) && w.BuildFirst:
			r.Err = fmt.Errorf("image %s: not on the engine, and built, not pulled: %w: docker compose build %s", w.Image, ErrBuildFirst, w.Name)
		case errors.Is(in.err, docker.ErrNotFound) && w.Pull != PullNever:
			r.Pull = &PullNeed{Ref: w.Image}
		case errors.Is(in.err, docker.ErrNotFound):
			r.Err = fmt.Errorf("image %s: %w (pull: never: pull it onto the engine, or set pull: missing)", w.Image, in.err)
		case in.err != nil:
			r.Err = fmt.Errorf("image %s: %w", w.Image, in.err)
		case w.Pull == PullAlways && !w.BuildFirst && registry != nil && !strings.Contains(w.Image, "@"):
			at, ok := asked[w.Image]
			if !ok {
				at.digest, at.err = registry.DistributionInspect(ctx, w.Image)
				asked[w.Image] = at
			}
			r.RegistryErr = at.err
			if at.err == nil && at.digest != "" && !hasDigest(in.img, at.digest) {
				r.Pull = &PullNeed{Ref: w.Image, Moved: true, Digest: at.digest}
			}
		}
		switch {
		case r.Pull != nil && r.Pull.Moved:
			r.Err = fmt.Errorf("image %s: the registry's tag moved to %s: %w", w.Image, r.Pull.Digest, ErrPullFirst)
		case r.Pull != nil:
			r.Err = fmt.Errorf("image %s: not on the engine: %w", w.Image, ErrPullFirst)
		}
		if r.Err == nil && w.Platform != "" && !platformMatches(w.Platform, in.img) {
			r.Err = fmt.Errorf("image %s is %s, not %s: %w (pull the image of that platform: docker pull --platform %s %s)",
				w.Image, imagePlatform(in.img), w.Platform, ErrPlatform, w.Platform, w.Image)
		}
		if r.Err == nil {
			r.ImageVolumes = slotVolumes(w, in.img.Volumes)
		}
		if r.Err == nil && w.Swarm != nil && len(r.ImageVolumes) > 0 {
			// A slot keeps no volume of its own on a swarm (swarm.go).
			r.Err = fmt.Errorf("image %s declares VOLUME %s: %w (%s)", w.Image, r.ImageVolumes[0], ErrSwarmImageVolume, SwarmImageVolumeHint)
			r.ImageVolumes = nil
		}
		if r.Err == nil {
			r.ImageID = in.img.ID
			r.Hash = Hash(w, in.img.ID)
		}
		out.Workloads = append(out.Workloads, r)
	}
	return out
}

// hasDigest reports whether img is known by the manifest digest.
func hasDigest(img docker.Image, digest string) bool {
	for _, rd := range img.RepoDigests {
		if strings.HasSuffix(rd, "@"+digest) {
			return true
		}
	}
	return false
}
