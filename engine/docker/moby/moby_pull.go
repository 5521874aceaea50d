package moby

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/distribution/reference"
	cliconfig "github.com/docker/cli/cli/config"
	"github.com/moby/moby/api/pkg/authconfig"
	"github.com/moby/moby/api/types/registry"
	"github.com/moby/moby/client"

	"github.com/rollcall/rollcall/engine/docker"
)

// DistributionInspect asks the registry, through the engine, for the
// manifest digest ref names now, with the docker CLI's credentials for its
// registry.
func (m *Moby) DistributionInspect(ctx context.Context, ref string) (string, error) {
	auth, perr := registryAuth(ref)
	if perr != nil {
		return "", perr
	}
	r, err := m.cli.DistributionInspect(ctx, ref, client.DistributionInspectOptions{EncodedRegistryAuth: auth})
	if err != nil {
		return "", pullError(ref, err, 0)
	}
	return r.Descriptor.Digest.String(), nil
}

// Pull pulls ref through the engine, with the docker CLI's credentials for
// its registry, reporting the layers and bytes done as the engine streams
// them, then inspects the image it got.
func (m *Moby) Pull(ctx context.Context, ref string, progress func(docker.PullProgress)) (docker.Image, error) {
	auth, perr := registryAuth(ref)
	if perr != nil {
		return docker.Image{}, perr
	}
	resp, err := m.cli.ImagePull(ctx, ref, client.ImagePullOptions{RegistryAuth: auth})
	if err != nil {
		return docker.Image{}, pullError(ref, err, 0)
	}
	t := newPullTally(ref)
	for msg, err := range resp.JSONMessages(ctx) {
		if err != nil {
			return docker.Image{}, pullError(ref, err, 0)
		}
		if msg.Error != nil {
			return docker.Image{}, pullError(ref, errors.New(msg.Error.Message), msg.Error.Code)
		}
		var current, total int64
		if msg.Progress != nil {
			current, total = msg.Progress.Current, msg.Progress.Total
		}
		if t.take(msg.ID, msg.Status, current, total) && progress != nil {
			progress(t.progress())
		}
	}
	img, err := m.ImageInspect(ctx, ref)
	if err != nil {
		return docker.Image{}, &docker.PullError{Ref: ref, Kind: docker.PullOther, Detail: "pulled, but " + err.Error(), Err: err}
	}
	return img, nil
}

// pullTally adds up the engine's pull messages: one per layer and state
// ("Pulling fs layer", "Downloading" with bytes, "Already exists", "Pull
// complete", ...).
type pullTally struct {
	ref    string
	order  []string
	layers map[string]*layerTally
}

type layerTally struct {
	done         bool
	current, max int64
}

func newPullTally(ref string) *pullTally {
	return &pullTally{ref: ref, layers: map[string]*layerTally{}}
}

// take counts one message; it reports whether the totals changed.
func (t *pullTally) take(id, status string, current, total int64) bool {
	if id == "" || strings.HasPrefix(status, "Pulling from") || strings.HasPrefix(status, "Digest:") || strings.HasPrefix(status, "Status:") {
		return false // about the whole pull, not a layer
	}
	known := len(t.order)
	l := t.layers[id]
	if l == nil {
		l = &layerTally{}
		t.layers[id] = l
		t.order = append(t.order, id)
	}
	before := *l
	switch status {
	case "Already exists", "Pull complete", "Download complete":
		l.done = status != "Download complete" || l.done
		if l.max > 0 {
			l.current = l.max
		}
	case "Downloading":
		if total > 0 {
			l.max = total
		}
		l.current = min(current, max(l.max, current))
	}
	return *l != before || len(t.order) != known
}

func (t *pullTally) progress() docker.PullProgress {
	p := docker.PullProgress{Ref: t.ref, Layers: len(t.order)}
	for _, id := range t.order {
		l := t.layers[id]
		if l.done {
			p.LayersDone++
		}
		p.Bytes += l.max
		p.BytesDone += l.current
	}
	return p
}

// registryAuth is the X-Registry-Auth header for ref's registry, from the
// docker CLI's config (auths, credsStore, credHelpers): "" when it holds
// none. Its failure never says what the config or a helper held.
func registryAuth(ref string) (string, *docker.PullError) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", &docker.PullError{Ref: ref, Kind: docker.PullNotFound, Detail: "not a valid image reference: " + err.Error()}
	}
	host := reference.Domain(named)
	dir := configDir("", os.Getenv) // read at every pull: the CLI package keeps its first answer for the process
	cfg, err := cliconfig.Load(dir)
	if err != nil {
		return "", &docker.PullError{Ref: ref, Kind: docker.PullUnauthorized,
			Detail: fmt.Sprintf("the docker config in %s cannot be read", dir)}
	}
	ac, err := cfg.GetAuthConfig(host)
	if err != nil {
		helper := cfg.CredentialsStore
		if h, ok := cfg.CredentialHelpers[host]; ok {
			helper = h
		}
		return "", &docker.PullError{Ref: ref, Kind: docker.PullUnauthorized,
			Detail: fmt.Sprintf("the credential helper docker-credential-%s gave no credentials for %s", helper, host)}
	}
	if ac.Username == "" && ac.Password == "" && ac.Auth == "" && ac.IdentityToken == "" && ac.RegistryToken == "" {
		return "", nil
	}
	enc, err := authconfig.Encode(registry.AuthConfig{
		Username: ac.Username, Password: ac.Password, Auth: ac.Auth, ServerAddress: ac.ServerAddress,
		IdentityToken: ac.IdentityToken, RegistryToken: ac.RegistryToken,
	})
	if err != nil {
		return "", &docker.PullError{Ref: ref, Kind: docker.PullUnauthorized, Detail: "the credentials for " + host + " cannot be encoded"}
	}
	return enc, nil
}

// pullError types a failed pull from what the engine said: its HTTP status
// (through the errdefs the client maps it to), the registry's status code
// in the stream where the engine passed one on, and else its words, which
// only this adapter reads (the registry's error codes and the system's
// errors, as the engine words them); they go on as Detail, never matched
// by a caller.
func pullError(ref string, err error, code int) *docker.PullError {
	e := &docker.PullError{Ref: ref, Kind: docker.PullOther, Status: code, Detail: err.Error()}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		e.Err = err
		return e
	}
	switch {
	case code == 404 || cerrdefs.IsNotFound(err):
		e.Kind, e.Status = docker.PullNotFound, 404
	case code == 401 || cerrdefs.IsUnauthorized(err):
		e.Kind, e.Status = docker.PullUnauthorized, 401
	case code == 403 || cerrdefs.IsPermissionDenied(err):
		e.Kind, e.Status = docker.PullUnauthorized, 403
	case code == 429 || cerrdefs.IsResourceExhausted(err):
		e.Kind, e.Status = docker.PullRateLimited, 429
	case client.IsErrConnectionFailed(err):
		e.Kind = docker.PullUnreachable // the engine itself; a retry is all there is
	default:
		e.Kind = kindFromWords(e.Detail)
	}
	return e
}

// engineWords are how engine 20.10 and later word what they do not type
// (a registry client's error, a system call's), most specific first.
var engineWords = []struct {
	kind  docker.PullKind
	words []string
}{
	{docker.PullNoSpace, []string{"no space left on device"}},
	{docker.PullRateLimited, []string{"toomanyrequests", "too many requests", "rate limit"}},
	{docker.PullUnauthorized, []string{"unauthorized", "no basic auth credentials", "denied", "authentication required", "incorrect username or password"}},
	{docker.PullNotFound, []string{"manifest unknown", "not found", "name unknown", "repository does not exist"}},
	{docker.PullUnreachable, []string{"connection refused", "no such host", "i/o timeout", "network is unreachable", "connection reset",
		"server gave http response to https client", "tls:", "x509:", "eof", "timeout", "dial tcp"}},
}

func kindFromWords(s string) docker.PullKind {
	s = strings.ToLower(s)
	for _, w := range engineWords {
		if slices.ContainsFunc(w.words, func(x string) bool { return strings.Contains(s, x) }) {
			return w.kind
		}
	}
	return docker.PullOther
}
