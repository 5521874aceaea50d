package proxy

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
)

// caddyAnswer is what Caddy 2.11.9's admin API answers for dynamic a
// upstreams of three containers, one drained (refusing) with nothing in
// flight.
const caddyAnswer = `[{"address":"172.18.0.3:8080","num_requests":2,"fails":0},` +
	`{"address":"172.18.0.4:8080","num_requests":0,"fails":1},` +
	`{"address":"172.18.0.5:8080","num_requests":0,"fails":0}]`

func TestUpstreamsReadsCaddysAdminAPI(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/reverse_proxy/upstreams" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(caddyAnswer))
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	ups, err := Upstreams(ctx, srv.Client(), srv.URL+"/")
	if err != nil {
		t.Fatal(err)
	}
	want := []Upstream{
		{Address: "172.18.0.3:8080", IP: netip.MustParseAddr("172.18.0.3"), Port: "8080", InFlight: 2},
		{Address: "172.18.0.4:8080", IP: netip.MustParseAddr("172.18.0.4"), Port: "8080", Fails: 1},
		{Address: "172.18.0.5:8080", IP: netip.MustParseAddr("172.18.0.5"), Port: "8080"},
	}
	if len(ups) != len(want) {
		t.Fatalf("Upstreams = %+v, want %+v", ups, want)
	}
	for i := range want {
		if ups[i] != want[i] {
			t.Errorf("upstream %d = %+v, want %+v", i, ups[i], want[i])
		}
	}
}

func TestUpstreamsErrors(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		body    string
		wantErr string
	}{
		{name: "admin API refuses the origin", status: http.StatusForbidden, body: `{"error":"host not allowed: 127.0.0.1:40000"}`, wantErr: "403"},
		{name: "no reverse proxy configured", status: http.StatusNotFound, body: "not found", wantErr: "404"},
		{name: "not JSON", status: http.StatusOK, body: "<html>", wantErr: "caddy upstreams"},
		{name: "too big", status: http.StatusOK, body: "[" + strings.Repeat(" ", maxBody) + "]", wantErr: "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			_, err := Upstreams(context.Background(), srv.Client(), srv.URL)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Upstreams: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if _, err := Upstreams(context.Background(), nil, srv.URL); err == nil {
		t.Error("Upstreams with nothing listening: nil error")
	}
}

func TestRoutedAndReleased(t *testing.T) {
	ups, err := parseUpstreams([]byte(caddyAnswer + ``))
	if err != nil {
		t.Fatal(err)
	}
	ups = append(ups, Upstream{Address: "web:8080"}) // a name Caddy did not resolve: never matches
	tests := []struct {
		name         string
		ip           string
		wantRouted   bool
		wantInFlight int
		wantReleased bool
	}{
		{name: "in rotation with requests in flight", ip: "172.18.0.3", wantRouted: true, wantInFlight: 2},
		{name: "refused the proxy, nothing in flight: released", ip: "172.18.0.4", wantRouted: true, wantReleased: true},
		{name: "idle but never failed: still in rotation", ip: "172.18.0.5", wantRouted: true},
		{name: "not listed: released", ip: "172.18.0.9", wantReleased: true},
		{name: "an IPv4-mapped address is the same container", ip: "::ffff:172.18.0.3", wantRouted: true, wantInFlight: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.ip)
			u, ok := Routed(ups, ip)
			if ok != tt.wantRouted || u.InFlight != tt.wantInFlight {
				t.Errorf("Routed(%s) = %+v, %v; want routed %v with %d in flight", ip, u, ok, tt.wantRouted, tt.wantInFlight)
			}
			if got := Released(ups, ip); got != tt.wantReleased {
				t.Errorf("Released(%s) = %v, want %v", ip, got, tt.wantReleased)
			}
		})
	}
	two := []Upstream{
		{Address: "172.18.0.3:8080", IP: netip.MustParseAddr("172.18.0.3"), InFlight: 1},
		{Address: "172.18.0.3:9090", IP: netip.MustParseAddr("172.18.0.3"), InFlight: 2, Fails: 1},
	}
	if u, ok := Routed(two, netip.MustParseAddr("172.18.0.3")); !ok || u.InFlight != 3 || u.Fails != 1 {
		t.Errorf("Routed over two ports = %+v, %v; want 3 in flight and 1 fail summed", u, ok)
	}
}

// TestUpstreamsWithDynamicRollcall: where Caddy's admin API answers
// /rollcall/upstreams (rollcall's `dynamic rollcall`), an upstream Caddy
// remembers but no longer routes to is dropped unless requests are still in
// flight to it, and one in rotation that Caddy has not used yet is added.
func TestUpstreamsWithDynamicRollcall(t *testing.T) {
	const rotation = `[{"prefix":"rollcall","workload":"web","network":"front",` +
		`"addresses":["172.18.0.3:8080","172.18.0.6:8080","172.18.0.7:8080"],"listed":"2026-12-01T07:00:00Z"}]`
	// Caddy remembers .3 (in rotation, 2 in flight), .4 (out of rotation,
	// nothing in flight: let go), .5 (out of rotation, 1 still in flight),
	// .7 (in rotation, idle after a failed dial: a failure says nothing of
	// the rotation here).
	const remembered = `[{"address":"172.18.0.3:8080","num_requests":2,"fails":0},` +
		`{"address":"172.18.0.4:8080","num_requests":0,"fails":0},` +
		`{"address":"172.18.0.5:8080","num_requests":1,"fails":0},` +
		`{"address":"172.18.0.7:8080","num_requests":0,"fails":1}]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/reverse_proxy/upstreams":
			w.Write([]byte(remembered))
		case "/rollcall/upstreams":
			w.Write([]byte(rotation))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ups, err := Upstreams(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range ups {
		got = append(got, u.Address)
	}
	if want := "172.18.0.3:8080 172.18.0.5:8080 172.18.0.7:8080 172.18.0.6:8080"; strings.Join(got, " ") != want {
		t.Errorf("Upstreams = %v, want %s", got, want)
	}
	for ip, want := range map[string]bool{"172.18.0.3": false, "172.18.0.4": true, "172.18.0.5": false, "172.18.0.6": false, "172.18.0.7": false} {
		if got := Released(ups, netip.MustParseAddr(ip)); got != want {
			t.Errorf("Released(%s) = %v, want %v", ip, got, want)
		}
	}
}

// TestUpstreamsRotationEdges: a Caddy built with `dynamic rollcall` whose
// config does not use it answers no source, which is no rotation (an idle
// upstream is not let go); the rotation is read before the requests in
// flight; an error of /rollcall/upstreams is an error, not a fallback.
func TestUpstreamsRotationEdges(t *testing.T) {
	const remembered = `[{"address":"172.18.0.5:8080","num_requests":0,"fails":0}]`
	serve := func(status int, rotation string, order *[]string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if order != nil {
				*order = append(*order, r.URL.Path)
			}
			switch r.URL.Path {
			case "/reverse_proxy/upstreams":
				w.Write([]byte(remembered))
			case "/rollcall/upstreams":
				w.WriteHeader(status)
				w.Write([]byte(rotation))
			default:
				http.NotFound(w, r)
			}
		}))
	}
	var order []string
	srv := serve(http.StatusOK, `[]`, &order)
	defer srv.Close()
	ups, err := Upstreams(context.Background(), srv.Client(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if Released(ups, netip.MustParseAddr("172.18.0.5")) {
		t.Error("no source of dynamic rollcall: an idle upstream Caddy still routes to was let go")
	}
	if want := []string{"/rollcall/upstreams", "/reverse_proxy/upstreams"}; !slices.Equal(order, want) {
		t.Errorf("asked %q, want %q: the rotation before what is in flight", order, want)
	}
	for _, tt := range []struct {
		status int
		body   string
	}{{http.StatusInternalServerError, "boom"}, {http.StatusOK, "<html>"}} {
		srv := serve(tt.status, tt.body, nil)
		if _, err := Upstreams(context.Background(), srv.Client(), srv.URL); err == nil {
			t.Errorf("/rollcall/upstreams answering %d %q: no error", tt.status, tt.body)
		}
		srv.Close()
	}
	two := []Upstream{
		{Address: "172.18.0.3:8080", IP: netip.MustParseAddr("172.18.0.3")},
		{Address: "172.18.0.3:9090", IP: netip.MustParseAddr("172.18.0.3"), Fails: 1, InRotation: true},
	}
	if Released(two, netip.MustParseAddr("172.18.0.3")) {
		t.Error("in rotation on one of its two ports: released")
	}
}
