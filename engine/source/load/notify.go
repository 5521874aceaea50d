package load

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// webhookKeys are the keys of a webhook written as a mapping.
var webhookKeys = []string{"url", "token_file"}

const webhookHint = `an http(s) URL, e.g. "https://hooks.example/rollcall", or {url: URL, token_file: PATH}`

// readNotify reads the top-level notify list. Two entries with one URL are
// an error: each event would be posted twice.
func (l *loader) readNotify(f field) []spec.Webhook {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	if len(items) > spec.MaxWebhooks {
		l.fail(f.val, fmt.Sprintf("at most %d webhooks: each has a queue and a sender of its own; fan out behind one URL for more", spec.MaxWebhooks),
			"%s: %d webhooks, more than %d", f.path, len(items), spec.MaxWebhooks)
		return nil
	}
	var out []spec.Webhook
	first := map[string]int{} // URL -> the line it is first listed at
	for i, n := range items {
		path := index(f.path, i)
		w, at, ok := l.webhook(n, path)
		if !ok {
			continue
		}
		if line, dup := first[w.URL]; dup {
			l.fail(at, "list each URL once: every event is posted to each entry", "%s: %q is listed twice (first at line %d)", path, spec.RedactURL(w.URL), line)
			continue
		}
		first[w.URL] = at.Line
		out = append(out, w)
	}
	return out
}

// validPort: no port (the scheme's own), or 1..65535. url.Parse takes
// any digits, so a URL that can never be dialled would pass the file and
// fail at every post.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// webhook reads one entry of notify; at is the node of its URL.
func (l *loader) webhook(n *yaml.Node, path string) (w spec.Webhook, at *yaml.Node, ok bool) {
	switch n.Kind {
	case yaml.ScalarNode:
		at = n
	case yaml.MappingNode:
		for _, g := range l.fields(n, path, webhookKeys) {
			if isNull(g.val) {
				continue
			}
			switch g.name {
			case "url":
				at = g.val
				path = g.path
			case "token_file":
				if s, ok := l.str(g.val, g.path); ok {
					if strings.TrimSpace(s) == "" {
						l.fail(g.val, "a file holding the bearer token, on one line; leave token_file out for none", "%s: empty path", g.path)
					} else {
						w.TokenFile = s
					}
				}
			}
		}
		if at == nil {
			l.fail(n, webhookHint, "%s: no url", path)
			return w, nil, false
		}
	default:
		l.fail(n, webhookHint, "%s: expected a URL or a mapping, got %s", path, describe(n))
		return w, nil, false
	}
	s, ok := l.str(at, path)
	if !ok {
		return w, nil, false
	}
	u, err := url.Parse(s)
	shown := spec.RedactURL(s) // the errors never show a user, a password, a path or a query
	switch scheme, _, found := strings.Cut(s, "://"); {
	case !found || (scheme != "http" && scheme != "https"):
		l.fail(at, webhookHint, "%s: %q is not an http or https URL", path, shown)
	case err != nil:
		l.fail(at, webhookHint, "%s: invalid URL %q", path, shown)
	case u.Hostname() == "":
		l.fail(at, webhookHint, "%s: %q names no host", path, shown)
	case !validPort(u.Port()):
		l.fail(at, "a port is a number from 1 to 65535; leave it out for the scheme's own", "%s: %q has no valid port", path, shown)
	case u.User != nil:
		l.fail(at, "give the credential in token_file: a URL's user and password would show wherever the URL does", "%s: %q carries a user", path, shown)
	case u.Fragment != "":
		l.fail(at, "a fragment is never sent to the server: drop it", "%s: %q has a fragment", path, shown)
	default:
		w.URL, w.Line, w.Col = s, at.Line, at.Column
		return w, at, true
	}
	return w, nil, false
}
