package load

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

var (
	hostKeys  = []string{"endpoint", "context", "replicas", "tls"}
	fleetKeys = []string{"canary", "batch", "wait", "on_failure", "max_failed_hosts"}
	// contextNameRE is the docker CLI's rule for a context name.
	contextNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]+$`)
)

const (
	hostNameHint  = "a host name is a DNS label: 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit"
	endpointHint  = `e.g. "ssh://deploy@edge-1", "tcp://edge-1:2376" or "unix:///var/run/docker.sock"; or context: NAME`
	oneOfReachStr = "give exactly one of endpoint (ssh://, tcp://, unix://) and context (a docker context's name)"
)

// readHosts reads the top-level hosts mapping into d.Hosts, in file order.
// It runs after the workloads are read, since overrides name them.
func (l *loader) readHosts(f field, d *spec.Desired) {
	if !l.mapping(f.val, f.path) {
		return
	}
	fields := l.fields(f.val, f.path, nil)
	if len(fields) == 0 {
		l.fail(f.val, "leave hosts out to use the one engine of --docker-host or DOCKER_HOST", "hosts: names no host")
		return
	}
	if len(fields) > spec.MaxHosts {
		l.fail(f.key, fmt.Sprintf("at most %d hosts in one document: each has a session, a connection and a lock; split the fleet into several files", spec.MaxHosts),
			"hosts: %d hosts, more than %d", len(fields), spec.MaxHosts)
		return
	}
	reach := map[string]*spec.Host{} // endpoint or context -> the host that named it first
	for _, g := range fields {
		if !dnsLabelRE.MatchString(g.name) {
			l.fail(g.key, hostNameHint, "invalid host name %q", g.name)
		}
		h := l.host(g, d)
		if h == nil {
			continue
		}
		d.Hosts = append(d.Hosts, h)
		at := h.Endpoint
		if h.Transport == spec.TransportContext {
			at = "context " + h.Context
		}
		if at == "" {
			continue
		}
		if first, dup := reach[at]; dup {
			l.fail(g.key, "each host is one engine: name it once", "%s: reaches the same engine as %s (line %d)", g.path, first.Name, first.Line)
			continue
		}
		reach[at] = h
	}
}

// host reads one host; nil when its value is not a mapping.
func (l *loader) host(f field, d *spec.Desired) *spec.Host {
	if isNull(f.val) || f.val.Kind != yaml.MappingNode {
		l.fail(f.val, oneOfReachStr, "%s: expected a mapping, got %s", f.path, describe(f.val))
		return nil
	}
	h := &spec.Host{Name: f.name, Line: f.key.Line, Col: f.key.Column}
	var endpoint, context, tls *field
	for _, g := range l.fields(f.val, f.path, hostKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "endpoint":
			endpoint = &g
			if s, ok := l.str(g.val, g.path); ok {
				if t, p := parseEndpoint(s); p != nil {
					l.fail(g.val, p.hint, "%s: %s", g.path, p.msg)
				} else {
					h.Endpoint, h.Transport = s, t
				}
			}
		case "context":
			context = &g
			if s, ok := l.str(g.val, g.path); ok {
				if !contextNameRE.MatchString(s) {
					l.fail(g.val, "a docker context name: a letter or digit, then letters, digits, '_', '.', '+' or '-' (see `docker context ls`)",
						"%s: invalid context name %q", g.path, s)
				} else {
					h.Context, h.Transport = s, spec.TransportContext
				}
			}
		case "tls":
			tls = &g
			h.TLS, h.PlainTCP = l.tls(g)
		case "replicas":
			h.Replicas = l.replicaOverrides(g, d)
		}
	}
	switch {
	case endpoint != nil && context != nil:
		l.fail(context.key, oneOfReachStr, "%s: endpoint and context are both given", f.path)
		h.Transport, h.Endpoint, h.Context = "", "", ""
	case endpoint == nil && context == nil:
		l.fail(f.key, oneOfReachStr, "%s: no endpoint or context", f.path)
	}
	switch {
	case tls != nil && h.Transport != spec.TransportTCP && (h.Transport != "" || endpoint == nil):
		l.fail(tls.key, "tls is for a tcp:// endpoint; ssh brings its own encryption and a docker context keeps its own TLS material",
			"%s: tls without a tcp endpoint", tls.path)
		h.TLS, h.PlainTCP = "", false
	case h.Transport == spec.TransportTCP && tls == nil:
		l.fail(endpoint.val, "add tls: DIR (ca.pem, cert.pem and key.pem, as DOCKER_CERT_PATH holds them), tls: false for plain TCP, or reach the engine over ssh://",
			"%s: tcp:// needs TLS: a plain engine port is root on the host to anyone who reaches it", endpoint.path)
	}
	return h
}

// tls reads a host's tls: a certificate directory, or false for plain TCP.
func (l *loader) tls(f field) (dir string, plain bool) {
	const hint = "a directory holding ca.pem, cert.pem and key.pem (the DOCKER_CERT_PATH layout), or false for plain TCP"
	if f.val.Kind == yaml.ScalarNode && f.val.ShortTag() == "!!bool" {
		b, ok := l.boolean(f.val, f.path)
		if ok && b {
			l.fail(f.val, hint, "%s: true names no certificates", f.path)
		}
		return "", ok && !b
	}
	s, ok := l.str(f.val, f.path)
	if ok && strings.TrimSpace(s) == "" {
		l.fail(f.val, hint, "%s: empty directory", f.path)
		return "", false
	}
	return s, false
}

// parseEndpoint checks an engine endpoint the way the docker CLI reads
// DOCKER_HOST, and returns its transport.
func parseEndpoint(s string) (string, *problem) {
	scheme, _, found := strings.Cut(s, "://")
	if !found {
		return "", &problem{fmt.Sprintf("%q is not an endpoint URL", s), endpointHint}
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", &problem{fmt.Sprintf("invalid endpoint %q", s), endpointHint}
	}
	extra := u.RawQuery != "" || u.ForceQuery || u.Fragment != ""
	switch scheme {
	case spec.TransportSSH:
		_, hasPassword := u.User.Password()
		switch {
		case u.Hostname() == "":
			return "", &problem{fmt.Sprintf("%q names no host", s), `e.g. "ssh://deploy@edge-1"`}
		case hasPassword:
			return "", &problem{fmt.Sprintf("%q carries a password", spec.RedactURL(s)), "ssh is reached with keys or an agent; ~/.ssh/config applies"}
		case extra:
			return "", &problem{fmt.Sprintf("%q has a query or fragment", s),
				"write ssh://[user@]host[:port][/path of the engine's socket on the host]"}
		case strings.HasPrefix(u.Hostname(), "-") || strings.HasPrefix(u.User.Username(), "-"):
			return "", &problem{fmt.Sprintf("%q: a host or user may not start with '-'", s), "ssh would read it as an option"}
		}
		if p := u.Port(); p != "" {
			if prob := portProblem(s, p); prob != nil {
				return "", prob
			}
		}
		return spec.TransportSSH, nil
	case spec.TransportTCP:
		switch {
		case u.Hostname() == "":
			return "", &problem{fmt.Sprintf("%q names no host", s), `e.g. "tcp://edge-1:2376"`}
		case u.User != nil:
			return "", &problem{fmt.Sprintf("%q carries a user", spec.RedactURL(s)), "the engine's API takes no user; authenticate with tls: DIR"}
		case u.Port() == "":
			return "", &problem{fmt.Sprintf("%q names no port", s), `the engine listens on 2376 with TLS, e.g. "tcp://edge-1:2376"`}
		case (u.Path != "" && u.Path != "/") || extra:
			return "", &problem{fmt.Sprintf("%q has a path, query or fragment", s), `write tcp://host:port, e.g. "tcp://edge-1:2376"`}
		}
		if prob := portProblem(s, u.Port()); prob != nil {
			return "", prob
		}
		return spec.TransportTCP, nil
	case spec.TransportUnix:
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") || u.Path == "/" || extra {
			return "", &problem{fmt.Sprintf("%q is not the absolute path of a socket", s), `three slashes: "unix:///var/run/docker.sock"`}
		}
		return spec.TransportUnix, nil
	case "http", "https":
		return "", &problem{fmt.Sprintf("unsupported scheme %q in %q", scheme, s), "an engine's API over the network is tcp://host:port, with tls: DIR"}
	}
	return "", &problem{fmt.Sprintf("unsupported scheme %q in %q", scheme, s), endpointHint}
}

func portProblem(s, port string) *problem {
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return &problem{fmt.Sprintf("%q: port %s is out of range 1-65535", s, port), ""}
	}
	return nil
}

// replicaOverrides reads a host's replicas: workload name -> count. Each
// names a workload of the document and is >= 0; a fixed host port allows
// no more than one, as in the workload itself.
func (l *loader) replicaOverrides(f field, d *spec.Desired) map[string]int {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	out := map[string]int{}
	for _, g := range l.fields(f.val, f.path, nil) {
		if isNull(g.val) {
			continue
		}
		w := d.Workloads[g.name]
		n, ok := l.integer(g.val, g.path)
		switch {
		case w == nil:
			hint := "valid workloads: " + strings.Join(d.Names(), ", ")
			if len(d.Workloads) == 0 {
				hint = "the document has no workloads"
			} else if s := closest(g.name, d.Names()); s != "" {
				hint = fmt.Sprintf("did you mean %q? %s", s, hint)
			}
			l.fail(g.key, hint, "%s: no workload %q", g.path, g.name)
		case !ok:
		case n < 0:
			l.fail(g.val, "0 runs nothing of the workload on this host", "%s: %d must not be negative", g.path, n)
		case !l.atMost(g.val, g.path, n, spec.MaxReplicas, replicasHint):
		case n > 1 && w.FixedHostPort():
			l.fail(g.val, "replicas cannot share one host port; publish an ephemeral host port in the workload",
				"%s: %s publishes a fixed host port, and replicas %d", g.path, g.name, n)
		default:
			out[g.name] = n
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// readFleet reads the top-level fleet mapping. f is nil when the document
// has none; a document with hosts then gets every default. Without hosts a
// fleet is an error.
func (l *loader) readFleet(f *field, d *spec.Desired) {
	if len(d.Hosts) == 0 {
		if f != nil && !isNull(f.val) {
			l.fail(f.key, "name the engines under hosts:, or leave fleet out for the one engine of --docker-host", "fleet: without hosts")
		}
		return
	}
	fl := &spec.Fleet{Canary: []string{d.Hosts[0].Name}, Batch: spec.Batch{Count: 1}, OnFailure: spec.OnFailurePause}
	d.Fleet = fl
	if f == nil || isNull(f.val) || !l.mapping(f.val, f.path) {
		return
	}
	var maxFailed *field
	for _, g := range l.fields(f.val, f.path, fleetKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "canary":
			if c := l.canary(g, d); c != nil {
				fl.Canary = c
			}
		case "batch":
			if b, ok := l.batch(g); ok {
				fl.Batch = b
			}
		case "wait":
			if w, ok := l.boundedDuration(g.val, g.path); ok {
				fl.Wait = w
			}
		case "on_failure":
			if s, ok := l.oneOf(g.val, g.path, spec.OnFailurePause, spec.OnFailureRollbackAll, spec.OnFailureContinue); ok {
				fl.OnFailure = s
			}
		case "max_failed_hosts":
			maxFailed = &g
		}
	}
	if fl.OnFailure == spec.OnFailureContinue {
		fl.MaxFailedHosts = 1
	}
	if maxFailed == nil {
		return
	}
	n, ok := l.integer(maxFailed.val, maxFailed.path)
	switch {
	case !ok:
	case fl.OnFailure != spec.OnFailureContinue:
		l.fail(maxFailed.key, "it counts the failed hosts that `on_failure: continue` goes on past",
			"%s: only with on_failure: continue", maxFailed.path)
	case n < 1:
		l.fail(maxFailed.val, "going on past no failed host is on_failure: pause", "%s: %d must be at least 1", maxFailed.path, n)
	default:
		fl.MaxFailedHosts = n
	}
}

// canary reads fleet.canary: a list of host names, or one name. It returns
// them in file order; nil on any problem.
func (l *loader) canary(f field, d *spec.Desired) []string {
	var items []*yaml.Node
	if f.val.Kind == yaml.ScalarNode {
		items = []*yaml.Node{f.val}
	} else if list, ok := l.list(f.val, f.path); ok {
		items = list
	} else {
		return nil
	}
	if len(items) == 0 {
		l.fail(f.val, "leave canary out for the first host", "%s: names no host", f.path)
		return nil
	}
	names := d.HostNames()
	chosen := map[string]bool{}
	bad := false
	for i, item := range items {
		path := index(f.path, i)
		if f.val.Kind == yaml.ScalarNode {
			path = f.path
		}
		s, ok := l.str(item, path)
		switch {
		case !ok:
			bad = true
		case !slices.Contains(names, s):
			hint := "hosts: " + strings.Join(names, ", ")
			if c := closest(s, names); c != "" {
				hint = fmt.Sprintf("did you mean %q? %s", c, hint)
			}
			l.fail(item, hint, "%s: no host %q", path, s)
			bad = true
		case chosen[s]:
			l.fail(item, "", "%s: host %q is listed twice", path, s)
			bad = true
		default:
			chosen[s] = true
		}
	}
	if bad {
		return nil
	}
	var out []string
	for _, n := range names {
		if chosen[n] {
			out = append(out, n)
		}
	}
	return out
}

// batch reads fleet.batch: a count >= 1, or a share "N%" with N in 1..100.
func (l *loader) batch(f field) (spec.Batch, bool) {
	const hint = `a count of hosts such as 2, or a share such as "50%"`
	n := f.val
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		c, ok := l.integer(n, f.path)
		if ok && c < 1 {
			l.fail(n, hint, "%s: %d must be at least 1", f.path, c)
			return spec.Batch{}, false
		}
		return spec.Batch{Count: c}, ok
	}
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		l.fail(n, hint, "%s: expected a count or a share, got %s", f.path, describe(n))
		return spec.Batch{}, false
	}
	s := strings.TrimSpace(n.Value)
	if spec.IsDigits(s) {
		l.fail(n, "remove the quotes", "%s: expected a count or a share, got %s", f.path, describe(n))
		return spec.Batch{}, false
	}
	pct, isShare := strings.CutSuffix(s, "%")
	p, err := strconv.Atoi(strings.TrimSpace(pct))
	switch {
	case !isShare || err != nil || !spec.IsDigits(strings.TrimSpace(pct)):
		l.fail(n, hint, "%s: invalid batch %q", f.path, n.Value)
	case p < 1 || p > 100:
		l.fail(n, "a share is 1% to 100% of the hosts", "%s: share %q is out of range", f.path, n.Value)
	default:
		return spec.Batch{Share: p}, true
	}
	return spec.Batch{}, false
}
