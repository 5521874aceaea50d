package dockertest

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an image registry served by the test process on loopback
// (go-containerregistry's pkg/registry, in memory): the engine reaches it
// over plain HTTP, since 127.0.0.0/8 is an insecure registry by default.
type Registry struct {
	// Host is "127.0.0.1:port": what an image reference of it starts
	// with, and what the docker config's auths key. With WithBasicAuth,
	// it asks for the credentials.
	Host string
	// pushHost reaches the same store with no credentials: where Push
	// pushes, so a test of credentials never needs them to set up, and
	// the engine's tags of Host stay where its pulls put them.
	pushHost string
	user     string
	password string

	stall   atomic.Bool
	stalled chan struct{} // one blob request met the stall
	pullSrv *http.Server
}

// RegistryOption configures StartRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth makes Host ask for user and password (HTTP basic auth).
func WithBasicAuth(user, password string) RegistryOption {
	return func(r *Registry) { r.user, r.password = user, password }
}

// StartRegistry serves a registry until t ends.
func StartRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{stalled: make(chan struct{}, 1)}
	for _, o := range opts {
		o(r)
	}
	store := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.pushHost, _ = serve(t, store)
	pull := r.stalls(store)
	if r.user != "" {
		pull = r.basicAuth(pull)
	}
	// A door apart even without credentials: tagging for a push never
	// moves the engine's tag of Host.
	r.Host, r.pullSrv = serve(t, pull)
	return r
}

func serve(t testing.TB, h http.Handler) (string, *http.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String(), srv
}

// StallBlobs makes every blob download from Host hang from now on (the
// manifests are still served): a pull in flight, until StopPulls.
// Stalled is told of the first blob request that hangs.
func (r *Registry) StallBlobs() { r.stall.Store(true) }

// Stalled receives once a blob request hangs (StallBlobs).
func (r *Registry) Stalled() <-chan struct{} { return r.stalled }

// StopPulls stops serving Host, as a registry that goes away: the
// connections in flight are cut, new ones refused. Push still works.
func (r *Registry) StopPulls() { r.pullSrv.Close() }

func (r *Registry) stalls(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if r.stall.Load() && strings.Contains(req.URL.Path, "/blobs/") {
			select {
			case r.stalled <- struct{}{}:
			default:
			}
			<-req.Context().Done()
			return
		}
		next.ServeHTTP(w, req)
	})
}

// basicAuth asks for r's credentials, as a registry behind basic auth
// does: 401 with a Basic challenge.
func (r *Registry) basicAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(r.user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(r.password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="rollcall-test"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// Push pushes the engine's image local (a tag it has) to the registry as
// repo:tag ("team/app:v1"), through the engine (moby.PushImage, as the
// demo pushes), through the door
// that needs no credentials, and returns the reference to pull it by:
// Host/repo:tag. The engine keeps local; RemoveLocal takes it away.
func (r *Registry) Push(t testing.TB, local, repoTag string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if err := Engine(t).PushImage(ctx, local, r.pushHost+"/"+repoTag); err != nil {
		t.Fatal(err)
	}
	ref := r.Host + "/" + repoTag
	t.Cleanup(func() {
		// The tag a pull gave back; a container still on it goes with the
		// prefix's own cleanup, after this one, so the tag alone goes here.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		CLI(ctx, "rmi", "--force", "--no-prune", ref) //nolint:errcheck // a tag already gone is fine
	})
	return ref
}

// RemoveLocal removes the engine's tag ref, and the image if nothing else
// names it: a pull is then needed to run it. A tag the engine does not
// have is no error.
func RemoveLocal(t testing.TB, ref string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := CLI(ctx, "image", "inspect", ref); err != nil {
		return
	}
	if _, err := CLI(ctx, "rmi", ref); err != nil {
		t.Error(err)
	}
}

// DockerConfig writes a docker CLI config folder under dir whose auths
// hold r's credentials for r.Host (none when r has none), and returns its
// path, for DOCKER_CONFIG.
func (r *Registry) DockerConfig(t testing.TB, dir string) string {
	t.Helper()
	return DockerConfigWith(t, dir, r.Host, r.user, r.password)
}

// DockerConfigWith writes a docker CLI config folder under dir whose auths
// hold user and password for host (none when user is ""), and returns its
// path, for DOCKER_CONFIG.
func DockerConfigWith(t testing.TB, dir, host, user, password string) string {
	t.Helper()
	cfg := map[string]any{"auths": map[string]any{}}
	if user != "" {
		cfg["auths"] = map[string]any{host: map[string]string{
			"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
		}}
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Repo is a repository name of the run's own for a test: "rc1a2b3c4d/name".
func Repo(name string) string { return strings.ToLower(Run) + "/" + name }

// BuildForRegistry builds the demoapp image of version under tag, with a
// layer of its own (size random bytes) on top, so that a pull of it
// downloads that layer whatever else the engine has. It returns the image
// ID; Main removes tag once the run is over.
func BuildForRegistry(t testing.TB, tag, version string, size int) string {
	t.Helper()
	unique := make([]byte, size)
	if _, err := rand.Read(unique); err != nil {
		t.Fatal(err)
	}
	return buildVariant(t, tag, version, func(files map[string][]byte) {
		files["unique"] = unique
		files["Dockerfile"] = append(files["Dockerfile"], "COPY unique /unique\n"...)
	})
}

// ServeTo lets engine e (of StartEngines, in a network namespace of its
// own) reach the registry at the same Host, so one image reference names
// it on the main engine and on e (Dockerd.Forward), until t ends. An
// engine not served so has nothing listening there: its pulls find the
// registry unreachable.
func (r *Registry) ServeTo(t testing.TB, e *Dockerd) {
	t.Helper()
	stop, err := e.Forward(r.Host, nil)
	if err != nil {
		t.Fatalf("registry on %s inside %s's namespace: %v", r.Host, e.Name, err)
	}
	t.Cleanup(stop)
}
