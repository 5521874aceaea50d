package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
)

// registry is the registry behind the fake engine: the images a pull can
// fetch, the failures and the holds a test scripted.
type registry struct {
	served map[string]servedImage       // reference -> what a pull of it fetches
	fails  map[string]*docker.PullError // reference -> how its pulls and inspects fail, until cleared
	holds  map[string]chan struct{}     // reference -> closed once a held pull may end
	pulled map[string][]string          // image ID -> the "repo@digest" it was pulled as
	byRef  map[string]servedImage       // "repo@digest" -> every manifest ever served, as a registry keeps them
}

type servedImage struct {
	id        string
	digest    string
	behaviour Behaviour
	layers    int
	size      int64
}

func (r *registry) init() {
	if r.served == nil {
		r.served, r.fails, r.holds, r.pulled = map[string]servedImage{}, map[string]*docker.PullError{}, map[string]chan struct{}{}, map[string][]string{}
		r.byRef = map[string]servedImage{}
	}
}

// digestOf is the manifest digest the fake registry gives an image ID.
func digestOf(id string) string {
	sum := sha256.Sum256([]byte("manifest:" + id))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// repoOf is a reference without its tag or digest: "127.0.0.1:5000/team/app:v1" -> "127.0.0.1:5000/team/app".
func repoOf(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		return ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// Serve makes the fake's registry serve ref as the image id (generated
// when ""), with the behaviour its containers will have: a Pull of ref
// then fetches it, in layers layers of 1 MiB each (2 when 0). Serving a
// served ref with another id moves the tag in the registry, which the
// engine's own tag does not follow until a pull. It returns the image's
// manifest digest.
func (f *Engine) Serve(ref, id string, b Behaviour, layers int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reg.init()
	if id == "" {
		id = "sha256:" + f.newID()
	}
	if layers <= 0 {
		layers = 2
	}
	d := digestOf(id)
	img := servedImage{id: id, digest: d, behaviour: b, layers: layers, size: int64(layers) << 20}
	f.reg.served[ref] = img
	f.reg.byRef[repoOf(ref)+"@"+d] = img
	return d
}

// Unserve takes ref out of the fake's registry: its pulls are not found.
func (f *Engine) Unserve(ref string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reg.init()
	delete(f.reg.served, ref)
}

// FailPulls makes every pull and distribution inspect of ref fail with a
// copy of err (its Ref set to ref) until FailPulls(ref, nil).
func (f *Engine) FailPulls(ref string, err *docker.PullError) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reg.init()
	if err == nil {
		delete(f.reg.fails, ref)
		return
	}
	e := *err
	e.Ref = ref
	f.reg.fails[ref] = &e
}

// HoldPulls makes pulls of ref stop halfway (their progress said, half the
// layers done) until the returned release is called or their context ends:
// a pull in flight, for as long as a test needs one.
func (f *Engine) HoldPulls(ref string) (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reg.init()
	ch := make(chan struct{})
	f.reg.holds[ref] = ch
	var once bool
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if !once {
			once = true
			close(ch)
			if f.reg.holds[ref] == ch {
				delete(f.reg.holds, ref)
			}
		}
	}
}

// DistributionInspect returns the manifest digest the fake's registry
// serves ref as.
func (f *Engine) DistributionInspect(ctx context.Context, ref string) (_ string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.advance()
	f.reg.init()
	defer f.record("distributioninspect", ref, &err)
	if err := f.check(ctx, "distributioninspect"); err != nil {
		return "", fmt.Errorf("distribution inspect %s: %w", ref, err)
	}
	img, err := f.served(ref)
	if err != nil {
		return "", err
	}
	return img.digest, nil
}

// served is what the registry serves ref as, or the *PullError a pull of
// it fails with.
func (f *Engine) served(ref string) (servedImage, error) {
	if e := f.reg.fails[ref]; e != nil {
		c := *e
		return servedImage{}, &c
	}
	img, ok := f.reg.served[ref]
	if strings.Contains(ref, "@") {
		img, ok = f.reg.byRef[ref]
	}
	if !ok {
		return servedImage{}, &docker.PullError{Ref: ref, Kind: docker.PullNotFound, Status: 404,
			Detail: "manifest for " + ref + " not found: manifest unknown"}
	}
	return img, nil
}

// Pull fetches ref from the fake's registry: the engine then has it under
// ref (an image "pull" event), with the behaviour Serve gave it. progress
// hears of every layer; a held ref (HoldPulls) waits halfway.
func (f *Engine) Pull(ctx context.Context, ref string, progress func(docker.PullProgress)) (_ docker.Image, err error) {
	f.mu.Lock()
	f.advance()
	f.reg.init()
	if err := f.check(ctx, "pull"); err != nil {
		f.record("pull", ref, &err)
		f.mu.Unlock()
		return docker.Image{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	img, err := f.served(ref)
	hold := f.reg.holds[ref]
	f.mu.Unlock()
	if err != nil {
		f.recordLocked("pull", ref, &err)
		return docker.Image{}, err
	}

	say := func(layers int) {
		if progress != nil {
			progress(docker.PullProgress{Ref: ref, Layers: img.layers, LayersDone: layers,
				Bytes: img.size, BytesDone: img.size * int64(layers) / int64(img.layers)})
		}
	}
	say(0)
	half := img.layers / 2
	say(half)
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			err = &docker.PullError{Ref: ref, Kind: docker.PullOther, Detail: "pull cancelled", Err: ctx.Err()}
			f.recordLocked("pull", ref, &err)
			return docker.Image{}, err
		}
	}
	for l := half + 1; l <= img.layers; l++ {
		say(l)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.record("pull", ref, &err)
	if err := ctx.Err(); err != nil {
		return docker.Image{}, &docker.PullError{Ref: ref, Kind: docker.PullOther, Detail: "pull cancelled", Err: err}
	}
	f.behaviours[img.id] = img.behaviour
	repoDigest := repoOf(ref) + "@" + img.digest
	if !slices.Contains(f.reg.pulled[img.id], repoDigest) {
		f.reg.pulled[img.id] = append(f.reg.pulled[img.id], repoDigest)
		slices.Sort(f.reg.pulled[img.id])
	}
	if !strings.Contains(ref, "@") {
		f.tags[ref] = img.id
	}
	f.emitImage("pull", ref, img.id, f.clock.Now())
	out := docker.Image{ID: img.id, RepoDigests: slices.Clone(f.reg.pulled[img.id])}
	for tag, tid := range f.tags {
		if tid == img.id {
			out.RepoTags = append(out.RepoTags, tag)
		}
	}
	slices.Sort(out.RepoTags)
	return out, nil
}

func (f *Engine) recordLocked(key, arg string, err *error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record(key, arg, err)
}

// byRepoDigest is the image pulled as ref ("repo@sha256:…"), as the engine
// finds an image by the digest it was pulled by.
func (r *registry) byRepoDigest(ref string) (string, bool) {
	if !strings.Contains(ref, "@") {
		return "", false
	}
	for id, rds := range r.pulled {
		if slices.Contains(rds, ref) {
			return id, true
		}
	}
	return "", false
}
