package spec

import (
	"net/url"
	"strings"
)

// Proxy is the reverse proxy in front of the workloads (DESIGN §3 proxy):
// the console shows what it routes to, and a drain ends once it no longer
// routes to the container being stopped. It is no part of any workload's
// spec hash: pointing rollcall at another proxy recreates nothing.
type Proxy struct {
	// CaddyAdmin is the base URL of Caddy's admin API, e.g.
	// "http://127.0.0.1:2019"; rollcall only reads its
	// /reverse_proxy/upstreams.
	CaddyAdmin string
}

// proxyKeys are the keys under proxy.
var proxyKeys = []string{"caddy_admin"}

const caddyAdminHint = `the base URL of Caddy's admin API, e.g. "http://127.0.0.1:2019"`

// readProxy reads the top-level proxy mapping; nil when it names no proxy.
func (l *loader) readProxy(f field) *Proxy {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	var p *Proxy
	for _, g := range l.fields(f.val, f.path, proxyKeys) {
		if isNull(g.val) {
			continue
		}
		if s, ok := l.caddyAdmin(g); ok {
			p = &Proxy{CaddyAdmin: s}
		}
	}
	return p
}

// caddyAdmin reads an http or https URL with a host, and nothing after
// its path: rollcall appends the API's own path to it.
func (l *loader) caddyAdmin(f field) (string, bool) {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return "", false
	}
	u, err := url.Parse(s)
	switch scheme, _, found := strings.Cut(s, "://"); {
	case !found || (scheme != "http" && scheme != "https"):
		l.fail(f.val, caddyAdminHint, "%s: %q is not an http or https URL", f.path, s)
	case err != nil:
		l.fail(f.val, caddyAdminHint, "%s: invalid URL %q", f.path, s)
	case u.Host == "" || u.Hostname() == "":
		l.fail(f.val, caddyAdminHint, "%s: %q names no host", f.path, s)
	case u.User != nil:
		l.fail(f.val, "Caddy's admin API takes no user in the URL", "%s: %q carries a user", f.path, s)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		l.fail(f.val, caddyAdminHint, "%s: %q has a query or fragment", f.path, s)
	default:
		return s, true
	}
	return "", false
}
