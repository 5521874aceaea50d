package demo

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is the demo's own image registry: go-containerregistry's
// pkg/registry, in memory, served by this process on loopback. The engine
// reaches it over plain HTTP, since 127.0.0.0/8 is an insecure registry by
// default. It dies with the process, or with Close.
type Registry struct {
	// Host is "127.0.0.1:port", what the demo's image references start with.
	Host string
	srv  *http.Server
}

// StartRegistry serves a registry on 127.0.0.1 on a port the system picks.
func StartRegistry() (*Registry, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the demo's registry: %w", err)
	}
	srv := &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	return &Registry{Host: ln.Addr().String(), srv: srv}, nil
}

// Close stops serving; what it held is gone.
func (r *Registry) Close() error { return r.srv.Close() }

// Pusher pushes the engine's image local to a registry as ref and leaves
// the engine without the tag ref (the moby adapter's PushImage).
type Pusher interface {
	PushImage(ctx context.Context, local, ref string) error
}

// InRegistry are img's tags in the registry at host ("127.0.0.1:5000"):
// host/tag each.
func (img Images) InRegistry(host string) Images {
	img = img.orDefault()
	return Images{V1: host + "/" + img.V1, V2: host + "/" + img.V2}
}

// pushImages pushes the engine's img.V1 and img.V2 to the registry at host,
// under the same names, and leaves the engine without those registry
// tags: running them takes a pull. It returns the registry's refs.
func pushImages(ctx context.Context, p Pusher, host string, img Images, log io.Writer) (Images, error) {
	img = img.orDefault()
	to := img.InRegistry(host)
	for _, i := range []struct{ local, ref string }{{img.V1, to.V1}, {img.V2, to.V2}} {
		fmt.Fprintf(log, "pushing %s to the demo's registry as %s\n", i.local, i.ref)
		if err := p.PushImage(ctx, i.local, i.ref); err != nil {
			return Images{}, err
		}
	}
	return to, nil
}

// registryCopyOf reports whether ref is tag in a registry on loopback
// ("127.0.0.1:41234/rollcall-demoapp:v1" for "rollcall-demoapp:v1"): the
// name a demo with its own registry pulled tag under.
func registryCopyOf(ref, tag string) bool {
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || rest != tag {
		return false
	}
	h, port, err := net.SplitHostPort(host)
	if err != nil || port == "" || strings.Trim(port, "0123456789") != "" {
		return false
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback() && ip.To4() != nil
}
