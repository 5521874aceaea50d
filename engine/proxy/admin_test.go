package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// serveUnix serves h on a unix socket in a directory of t's own and returns
// the admin address of it ("unix:///…/admin.sock") and the hosts the
// requests named.
func serveUnix(t *testing.T, h http.Handler) (admin string, hosts func() []string) {
	t.Helper()
	// t.TempDir's path can pass the 107 bytes a socket path may have.
	dir, err := os.MkdirTemp("", "adm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host)
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return UnixScheme + sock, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// Every call of the package reaches an admin API on a unix socket with no
// client given: the address alone decides how to dial.
func TestAdminOverUnixSocket(t *testing.T) {
	f := &fakeCohorts{}
	admin, hosts := serveUnix(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/reverse_proxy/upstreams":
			w.Write([]byte(caddyAnswer))
		case "/rollcall/upstreams":
			http.NotFound(w, r)
		default:
			f.ServeHTTP(w, r)
		}
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	ups, err := Upstreams(ctx, nil, admin)
	if err != nil {
		t.Fatalf("Upstreams over %s: %v", admin, err)
	}
	if len(ups) != 3 || ups[0].Address != "172.18.0.3:8080" || ups[0].InFlight != 2 {
		t.Errorf("Upstreams over the socket = %+v, want caddyAnswer's three", ups)
	}
	ws, err := Cohorts(ctx, nil, admin)
	if err != nil {
		t.Fatalf("Cohorts over %s: %v", admin, err)
	}
	if len(ws) != 2 || ws[1].Split == nil || ws[1].Split.Spec != "abc123" {
		t.Errorf("Cohorts over the socket = %+v, want cohortsAnswer", ws)
	}
	if err := SetSplit(ctx, nil, admin, "rollcall", "web", "abc123", 0); err != nil {
		t.Fatalf("SetSplit over %s: %v", admin, err)
	}
	if err := ClearSplit(ctx, nil, admin, "rollcall", "web"); err != nil {
		t.Fatalf("ClearSplit over %s: %v", admin, err)
	}
	if err := SetSplit(ctx, nil, admin, "rollcall", "x", "abc123", 0); !errors.Is(err, ErrNoSource) {
		t.Errorf("SetSplit of a workload with no source over the socket = %v, want ErrNoSource", err)
	}
	want := []string{`PUT /rollcall/cohorts/rollcall/web {"share":0,"spec":"abc123"}`, "DELETE /rollcall/cohorts/rollcall/web"}
	if got := f.calls[1:3]; got[0] != want[0] || got[1] != want[1] {
		t.Errorf("calls over the socket %q, want %q", got, want)
	}
	// Caddy checks no Host on a socket; localhost is what any HTTP/1.1
	// client would name, never an address of the caller's choosing.
	for _, h := range hosts() {
		if h != "localhost" {
			t.Errorf("a request over the socket named Host %q, want localhost", h)
		}
	}
	// A client of the caller's with no Transport (a Timeout alone) dials
	// the socket too.
	if _, err := Cohorts(ctx, &http.Client{Timeout: 2 * time.Second}, admin); err != nil {
		t.Errorf("Cohorts over %s with a client that sets only a Timeout: %v", admin, err)
	}
	if first, again := Client(admin), Client(admin); first != again {
		t.Error("Client made two clients for one socket: each would keep its own idle connections")
	}
}

// A socket nobody listens on fails the call at once, and the error names
// the address as the desired file gave it, not the stand-in URL.
func TestAdminOverUnixSocketRefused(t *testing.T) {
	admin := UnixScheme + filepath.Join(t.TempDir(), "none.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, call := range map[string]func() error{
		"Upstreams": func() error { _, err := Upstreams(ctx, nil, admin); return err },
		"Cohorts":   func() error { _, err := Cohorts(ctx, nil, admin); return err },
		"SetSplit":  func() error { return SetSplit(ctx, nil, admin, "rollcall", "web", "abc", 0) },
	} {
		err := call()
		if !errors.Is(err, syscall.ENOENT) {
			t.Errorf("%s on a missing socket = %v, want ENOENT", name, err)
			continue
		}
		if ue, ok := errors.AsType[*url.Error](err); !ok || !strings.HasPrefix(ue.URL, "/") || !strings.Contains(ue.URL, admin) {
			t.Errorf("%s: error %v names %q, want the path and %s", name, err, ue.URL, admin)
		}
		if strings.Contains(err.Error(), "localhost") {
			t.Errorf("%s: error %q names the stand-in host", name, err)
		}
	}
}

func TestClientOfAnAddress(t *testing.T) {
	for _, tc := range []struct {
		admin    string
		sock     string
		isSocket bool
	}{
		{"http://127.0.0.1:2019", "", false},
		{"https://caddy.internal:2019", "", false},
		{"unix:///run/rollcall-caddy/admin.sock", "/run/rollcall-caddy/admin.sock", true},
		{"unix://", "", false},
	} {
		p, ok := SocketPath(tc.admin)
		if p != tc.sock || ok != tc.isSocket {
			t.Errorf("SocketPath(%q) = %q, %v; want %q, %v", tc.admin, p, ok, tc.sock, tc.isSocket)
		}
		if c := Client(tc.admin); (c == http.DefaultClient) == tc.isSocket {
			t.Errorf("Client(%q) is the default client: %v, want %v", tc.admin, c == http.DefaultClient, !tc.isSocket)
		}
	}
}
