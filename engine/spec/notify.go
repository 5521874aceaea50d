package spec

import (
	"strings"
)

// This file reads the top-level notify key (DESIGN §3, §12): the webhooks a
// rollout's events are posted to, as JSON (engine/notify). It is no part of
// any workload's spec hash, nor of what a session counts as a new desired
// state: adding a webhook recreates nothing and starts no rollout.

// Webhook is one URL of notify:, written as a plain string or as a mapping
// {url: ..., token_file: ...}.
type Webhook struct {
	// URL is an http or https URL with a host and no user; a query is
	// kept (some services take their key in it).
	URL string
	// TokenFile is a file holding a bearer token, sent as "Authorization:
	// Bearer TOKEN" and read again at each post, as written; "" for none.
	// A relative path is the caller's to resolve (engine/notify reads it
	// from the desired file's directory).
	TokenFile string
	// Line and Col are where the URL stands in the file.
	Line, Col int
}

// RedactURL is a webhook's URL as errors, logs, notes and the journal
// show it: its scheme and host (with the port), "/…" for a path, query or
// fragment left out, and never a user or password, since a webhook's path
// is often its secret (Slack's, Discord's). It works on text that is no
// valid URL as well (a bad port, a stray character), so a broken notify:
// entry shows no more than a good one.
func RedactURL(s string) string {
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		rest = s
	}
	host, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#\\"); i >= 0 {
		host, tail = rest[:i], rest[i:]
	}
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	// A "port" that is no number may be the start of a password cut at a
	// '/', '?' or '#' in it (https://user:pa/ss@host): never shown.
	if i := strings.LastIndex(host, ":"); i >= 0 && !strings.HasSuffix(host, "]") && !IsDigits(host[i+1:]) {
		host = host[:i]
	}
	out := host
	if found {
		out = scheme + "://" + host
	}
	if tail != "" && tail != "/" {
		out += "/…"
	}
	return out
}
