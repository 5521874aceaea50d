package proxy

// The admin API's address (proxy.caddy_admin) is a base URL, either
//
//	http://127.0.0.1:2019, https://…   over TCP, as Caddy's default listens
//	unix:///run/rollcall-caddy/admin.sock   over a unix socket
//
// The shipped Caddyfile serves the API on a unix socket in a directory
// bind-mounted from the host, so rollcall on the host reaches it and no
// container on the workloads' network can (a workload that could PUT a
// split would send every request to itself). On a unix socket Caddy 2.11.9
// checks no Host, and refuses any Origin (admin.go: the socket's file
// permissions are the guard); requests over it go to http://localhost,
// with no Origin.
//
// Client is the one place an address becomes an *http.Client; the calls of
// this package take the address as given and, with a nil client, use it.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// UnixScheme is the scheme of an admin address on a unix socket.
const UnixScheme = "unix://"

// SocketPath is the socket's path of a unix admin address, and false for
// any other address.
func SocketPath(admin string) (string, bool) {
	p, ok := strings.CutPrefix(admin, UnixScheme)
	if !ok || p == "" {
		return "", false
	}
	return p, true
}

// unixClients holds one client per socket path: its Transport keeps the
// idle connections, so a client made anew per call would leak them.
var unixClients struct {
	sync.Mutex
	m map[string]*http.Client
}

// maxUnixClients bounds unixClients: an agent whose desired file names a
// new socket on every change keeps only the latest few.
const maxUnixClients = 8

// Client is the HTTP client that reaches the admin API at admin: for a
// unix address, one whose Transport dials the socket (no HTTP proxy from
// the environment applies to it); for http and https, http.DefaultClient.
// The same socket gets the same client.
func Client(admin string) *http.Client {
	path, ok := SocketPath(admin)
	if !ok {
		return http.DefaultClient
	}
	unixClients.Lock()
	defer unixClients.Unlock()
	if c := unixClients.m[path]; c != nil {
		return c
	}
	if unixClients.m == nil || len(unixClients.m) >= maxUnixClients {
		for _, c := range unixClients.m {
			c.CloseIdleConnections()
		}
		unixClients.m = map[string]*http.Client{}
	}
	d := net.Dialer{}
	c := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", path)
		},
		MaxIdleConns:    4,
		IdleConnTimeout: 90 * time.Second,
	}}
	unixClients.m[path] = c
	return c
}

// endpoint is one admin address as the calls use it.
type endpoint struct {
	c    *http.Client
	base string // where requests go: the address, or http://localhost over a socket
	addr string // the address as given, for errors
}

// endpointOf is the endpoint of admin, through c (nil: Client(admin)). A
// client with no Transport of its own (one that only sets a Timeout, say)
// gets the socket's when admin is one: the default one cannot dial it.
func endpointOf(c *http.Client, admin string) endpoint {
	admin = strings.TrimRight(admin, "/")
	_, sock := SocketPath(admin)
	switch {
	case c == nil:
		c = Client(admin)
	case sock && c.Transport == nil:
		cc := *c
		cc.Transport = Client(admin).Transport
		c = &cc
	}
	e := endpoint{c: c, base: admin, addr: admin}
	if sock {
		e.base = "http://localhost"
	}
	return e
}

// url is where a request for path (from "/") goes.
func (e endpoint) url(path string) string { return e.base + path }

// name is path at the address as given: what an error says.
func (e endpoint) name(path string) string {
	if e.base == e.addr {
		return e.addr + path
	}
	return fmt.Sprintf("%s (%s)", path, e.addr)
}

// do sends one request for path, with body as JSON when there is one. A
// failed call's *url.Error names the address as given, not the socket's
// stand-in URL.
func (e endpoint) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.url(path), rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, e.name(path), err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := e.c.Do(req)
	if ue, ok := errors.AsType[*url.Error](err); ok {
		ue.URL = e.name(path)
	}
	return resp, err
}
