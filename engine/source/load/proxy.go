package load

import (
	"net/url"
	pathpkg "path"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
)

// proxyKeys are the keys under proxy.
var proxyKeys = []string{"caddy_admin"}

const caddyAdminHint = `the address of Caddy's admin API: its unix socket, "unix:///run/rollcall-caddy/admin.sock" (examples/Caddyfile), or a base URL, "http://127.0.0.1:2019"`

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path holds 108 bytes, its NUL included).
const maxSocketPath = 107

// readProxy reads the top-level proxy mapping; nil when it names no proxy.
func (l *loader) readProxy(f field) *spec.Proxy {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	var p *spec.Proxy
	for _, g := range l.fields(f.val, f.path, proxyKeys) {
		if isNull(g.val) {
			continue
		}
		if s, ok := l.caddyAdmin(g); ok {
			p = &spec.Proxy{CaddyAdmin: s}
		}
	}
	return p
}

// caddyAdmin reads a unix socket's address (unix:///absolute/path), or an
// http or https URL with a host and nothing after its path: rollcall
// appends the API's own path to it.
func (l *loader) caddyAdmin(f field) (string, bool) {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return "", false
	}
	scheme, rest, found := strings.Cut(s, "://")
	if found && scheme == "unix" {
		return l.adminSocket(f, s, rest)
	}
	u, err := url.Parse(s)
	switch {
	case !found || (scheme != "http" && scheme != "https"):
		l.fail(f.val, caddyAdminHint, "%s: %q is not a unix socket or an http or https URL", f.path, s)
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

// adminSocket reads unix://PATH: PATH is the socket's absolute, clean
// path, as the kernel takes it (no escapes, no query), short enough to
// bind.
func (l *loader) adminSocket(f field, s, path string) (string, bool) {
	const socketHint = `three slashes and the socket's absolute path: "unix:///run/rollcall-caddy/admin.sock"`
	switch {
	case !strings.HasPrefix(path, "/"):
		l.fail(f.val, socketHint, "%s: %q is not the absolute path of a socket", f.path, s)
	case strings.ContainsAny(path, "?#%\x00"):
		l.fail(f.val, socketHint, "%s: %q: a socket's path here takes no query, fragment, escape or NUL", f.path, s)
	case path != "/" && strings.HasSuffix(path, "/") || pathpkg.Clean(path) != path:
		l.fail(f.val, socketHint, "%s: %q: want the socket's clean path (no //, ./, ../ or trailing /), %q", f.path, s, "unix://"+pathpkg.Clean(path))
	case path == "/":
		l.fail(f.val, socketHint, "%s: %q names a directory, not a socket", f.path, s)
	case len(path) > maxSocketPath:
		l.fail(f.val, "a unix socket's path holds at most 107 bytes: mount the socket's directory at a shorter path",
			"%s: the socket's path is %d bytes long, more than %d", f.path, len(path), maxSocketPath)
	default:
		return s, true
	}
	return "", false
}
