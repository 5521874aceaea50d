// Package proxy reads what the reverse proxy in front of a workload routes
// to (DESIGN §3 proxy.caddy_admin), so the console can show per container
// whether the proxy routes to it and its requests in flight, and a drain can
// end once the proxy lets go (reconcile.RunOptions.Released).
//
// Caddy's admin API answers GET /reverse_proxy/upstreams with every upstream
// it holds: its address ("172.18.0.5:8080"), the requests in flight to it
// (num_requests) and its recent failures (fails). What that list means for
// upstreams found by `dynamic a` (Caddy 2.11.9): an address is listed while
// Caddy has it from DNS, and Caddy runs no active health checks on it, so
// "listed" is "may be routed to", never "healthy". A drained demoapp
// refuses new connections, so Caddy's dials to it fail (fails goes up) and
// its requests in flight fall to 0; it leaves the list only once it stops
// and drops out of the DNS answer. Released therefore reads "refused, and
// nothing in flight" as the proxy letting go, not absence from the list.
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
	"strings"
)

// Upstream is one upstream as Caddy reports it.
type Upstream struct {
	Address  string     // as Caddy has it: "172.18.0.5:8080"
	IP       netip.Addr // the address's IP; invalid for a name Caddy did not resolve
	Port     string
	InFlight int // requests in flight to it now (num_requests)
	Fails    int // failures within Caddy's fail_duration (fails)
}

// maxBody bounds the admin API's answer: a list of upstreams is small.
const maxBody = 1 << 20

// Upstreams asks Caddy's admin API at adminURL ("http://127.0.0.1:2019")
// for its reverse-proxy upstreams. c nil means http.DefaultClient; ctx
// bounds the call.
func Upstreams(ctx context.Context, c *http.Client, adminURL string) ([]Upstream, error) {
	if c == nil {
		c = http.DefaultClient
	}
	url := strings.TrimRight(adminURL, "/") + "/reverse_proxy/upstreams"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("caddy upstreams: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("caddy upstreams: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return nil, fmt.Errorf("caddy upstreams: read %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("caddy upstreams: %s: %s", resp.Status, firstLine(body))
	}
	if len(body) > maxBody {
		return nil, fmt.Errorf("caddy upstreams: %s answered more than %d bytes", url, maxBody)
	}
	return parseUpstreams(body)
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
		u := Upstream{Address: r.Address, InFlight: r.NumRequests, Fails: r.Fails}
		host, port, err := net.SplitHostPort(r.Address)
		if err != nil {
			host = r.Address
		}
		u.Port = port
		if ip, err := netip.ParseAddr(host); err == nil {
			u.IP = ip.Unmap()
		}
		out = append(out, u)
	}
	return out, nil
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
	}
	return u, ok
}

// Released reports whether the proxy has let go of the container at ip:
// not listed, or listed with no request in flight and at least one failure
// since (it refused the proxy, as a drained demoapp does). A listed upstream
// with no failure is still in rotation, however idle.
func Released(ups []Upstream, ip netip.Addr) bool {
	u, ok := Routed(ups, ip)
	return !ok || (u.InFlight == 0 && u.Fails > 0)
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
