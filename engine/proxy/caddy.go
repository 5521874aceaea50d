// Package proxy reads what the reverse proxy in front of a workload routes
// to (DESIGN §3 proxy.caddy_admin), so the console can show per container
// whether the proxy routes to it and its requests in flight, and a drain can
// end once the proxy lets go (reconcile.RunOptions.Released).
//
// Caddy's admin API answers GET /reverse_proxy/upstreams with every upstream
// it holds: its address ("172.18.0.5:8080"), the requests in flight to it
// (num_requests) and its recent failures (fails). For dynamic upstreams
// (Caddy 2.11.9) that list is a memory, not the rotation: an address stays
// listed for an hour after Caddy last routed to it.
//
// rollcall's Caddy upstream source, `dynamic rollcall` (examples/caddy),
// adds GET /rollcall/upstreams: the addresses it routes to now, the
// running and healthy containers of a workload. Where Caddy answers that,
// Upstreams keeps only what is in rotation or still has requests in
// flight, so "not listed" means the proxy has let go. Where it does not
// (404: `dynamic a`, say), Upstreams is Caddy's list as it is, and Released
// reads "refused, and nothing in flight" as letting go.
//
// It imports only the standard library and speaks addresses, not
// containers: the caller maps a container to its IP on the proxy's network
// (Routed). It must not import the engine, the console or moby.
package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// Upstream is one upstream as Caddy reports it.
type Upstream struct {
	Address  string     // as Caddy has it: "172.18.0.5:8080"
	IP       netip.Addr // the address's IP; invalid for a name Caddy did not resolve
	Port     string
	InFlight int // requests in flight to it now (num_requests)
	Fails    int // failures within Caddy's fail_duration (fails)
	// InRotation: `dynamic rollcall` routes to it now. Always false
	// without it, where Caddy's list says nothing of the rotation.
	InRotation bool
}

// maxBody bounds the admin API's answer: a list of upstreams is small.
const maxBody = 1 << 20

// Upstreams asks Caddy's admin API at adminURL ("http://127.0.0.1:2019",
// "unix:///run/rollcall-caddy/admin.sock": admin.go) for its reverse-proxy
// upstreams and, where `dynamic rollcall` answers, keeps only those in
// rotation or with requests in flight (see the package doc). c nil means
// Client(adminURL); ctx bounds the calls.
func Upstreams(ctx context.Context, c *http.Client, adminURL string) ([]Upstream, error) {
	e := endpointOf(c, adminURL)
	// The rotation first, then what is in flight: a request routed to a
	// container before it left the rotation is still counted then.
	body, status, err := get(ctx, e, "/rollcall/upstreams")
	var rot map[string]bool // nil: no `dynamic rollcall` routes here
	switch {
	case err != nil:
		return nil, err
	case status == http.StatusNotFound:
		// no `dynamic rollcall` in this Caddy
	case status != http.StatusOK:
		return nil, fmt.Errorf("caddy upstreams: /rollcall/upstreams: %d %s: %s", status, http.StatusText(status), firstLine(body))
	default:
		if rot, err = parseRotation(body); err != nil {
			return nil, err
		}
	}
	body, status, err = get(ctx, e, "/reverse_proxy/upstreams")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("caddy upstreams: %d %s: %s", status, http.StatusText(status), firstLine(body))
	}
	ups, err := parseUpstreams(body)
	if err != nil || rot == nil {
		return ups, err
	}
	return inRotation(ups, rot), nil
}

// get reads path at e whole (at most maxBody bytes) and its status code.
func get(ctx context.Context, e endpoint, path string) ([]byte, int, error) {
	resp, err := e.do(ctx, http.MethodGet, path, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("caddy upstreams: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("caddy upstreams: read %s: %w", e.name(path), err)
	}
	if len(body) > maxBody {
		return nil, 0, fmt.Errorf("caddy upstreams: %s answered more than %d bytes", e.name(path), maxBody)
	}
	return body, resp.StatusCode, nil
}

// parseRotation reads `dynamic rollcall`'s answer: the addresses each of
// its sources routes to now. No source at all (a Caddy built with the
// module whose config does not use it) is nil, as a 404 is: the rotation
// is not known, and an idle upstream is not let go.
func parseRotation(body []byte) (map[string]bool, error) {
	var raw []struct {
		Addresses []string `json:"addresses"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("caddy upstreams: /rollcall/upstreams: %w", err)
	}
	if len(raw) == 0 {
		return nil, nil
	}
	rot := map[string]bool{}
	for _, r := range raw {
		for _, a := range r.Addresses {
			rot[a] = true
		}
	}
	return rot, nil
}

// inRotation keeps the upstreams in rotation or with requests in flight,
// and adds those in rotation that Caddy has not routed a request to yet.
func inRotation(ups []Upstream, rot map[string]bool) []Upstream {
	var out []Upstream
	seen := map[string]bool{}
	for _, u := range ups {
		seen[u.Address] = true
		u.InRotation = rot[u.Address]
		if u.InRotation || u.InFlight > 0 {
			out = append(out, u)
		}
	}
	var fresh []string
	for a := range rot {
		if !seen[a] {
			fresh = append(fresh, a)
		}
	}
	slices.Sort(fresh)
	for _, a := range fresh {
		u := upstreamOf(a, 0, 0)
		u.InRotation = true
		out = append(out, u)
	}
	return out
}

// parseUpstreams reads the admin API's JSON list.
func parseUpstreams(body []byte) ([]Upstream, error) {
	var raw []struct {
		Address     string `json:"address"`
		NumRequests int    `json:"num_requests"`
		Fails       int    `json:"fails"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("caddy upstreams: %w", err)
	}
	out := make([]Upstream, 0, len(raw))
	for _, r := range raw {
		out = append(out, upstreamOf(r.Address, r.NumRequests, r.Fails))
	}
	return out, nil
}

func upstreamOf(address string, inFlight, fails int) Upstream {
	u := Upstream{Address: address, InFlight: inFlight, Fails: fails}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	u.Port = port
	if ip, err := netip.ParseAddr(host); err == nil {
		u.IP = ip.Unmap()
	}
	return u
}

// Routed is what the proxy holds for the container at ip (its address on
// the proxy's network): ok when some upstream has that IP, with the
// requests in flight and fails summed over its ports.
func Routed(ups []Upstream, ip netip.Addr) (u Upstream, ok bool) {
	ip = ip.Unmap()
	for _, x := range ups {
		if !x.IP.IsValid() || x.IP != ip {
			continue
		}
		if !ok {
			u, ok = x, true
			continue
		}
		u.InFlight += x.InFlight
		u.Fails += x.Fails
		u.InRotation = u.InRotation || x.InRotation
	}
	return u, ok
}

// Released reports whether the proxy has let go of the container at ip:
// not listed (with `dynamic rollcall`: out of rotation, nothing in
// flight), or, without `dynamic rollcall`, listed with no request in
// flight and at least one failure since (it refused the proxy). An upstream
// in rotation is never released, whatever its failures; a listed one with
// no failure is still in rotation, however idle.
func Released(ups []Upstream, ip netip.Addr) bool {
	u, ok := Routed(ups, ip)
	return !ok || (!u.InRotation && u.InFlight == 0 && u.Fails > 0)
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
