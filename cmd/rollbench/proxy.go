package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// proxy sits between rollcall and the engine's unix socket and counts
// what crosses it: every request (method and path, IDs masked) and every
// event an /events stream delivers. Bytes pass through unchanged; the
// counting reads a copy of each direction.
type proxy struct {
	ln       net.Listener
	upstream string

	mu       sync.Mutex
	calls    []call
	events   []streamedEvent
	wg       sync.WaitGroup
	shutdown bool
	conns    map[net.Conn]bool
}

type call struct {
	at    time.Time
	route string // "GET /containers/{id}/json"
	path  string // as sent, IDs and query included
}

type streamedEvent struct {
	at     time.Time
	action string
}

func startProxy(socket, upstream string) (*proxy, error) {
	ln, err := net.Listen("unix", socket)
	if err != nil {
		return nil, err
	}
	p := &proxy{ln: ln, upstream: upstream, conns: map[net.Conn]bool{}}
	p.wg.Go(p.serve)
	return p, nil
}

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.relay(c) })
	}
}

// close stops accepting, cuts every connection and waits for the relays.
func (p *proxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.shutdown = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shutdown {
		return false
	}
	for _, c := range cs {
		p.conns[c] = true
	}
	return true
}

func (p *proxy) relay(down net.Conn) {
	defer down.Close()
	up, err := net.Dial("unix", p.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	if !p.track(down, up) {
		return
	}
	defer func() {
		p.mu.Lock()
		delete(p.conns, down)
		delete(p.conns, up)
		p.mu.Unlock()
	}()
	routes := make(chan string, 256) // requests waiting for their response, in order
	reqR, reqW := io.Pipe()
	respR, respW := io.Pipe()
	var wg sync.WaitGroup
	wg.Go(func() { p.readRequests(reqR, routes) })
	wg.Go(func() { p.readResponses(respR, routes) })
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, io.TeeReader(down, reqW))
		reqW.Close()
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, io.TeeReader(up, respW))
		respW.Close()
		done <- struct{}{}
	}()
	<-done // one side ended: end both
	down.Close()
	up.Close()
	<-done
	wg.Wait()
}

// readRequests records each request on a connection. A hijacked one
// (attach, exec start) carries raw bytes after its request: those are
// drained, never parsed.
func (p *proxy) readRequests(r *io.PipeReader, routes chan<- string) {
	defer close(routes)
	defer io.Copy(io.Discard, r) //nolint:errcheck // keep the relay flowing whatever the parser does
	br := bufio.NewReader(r)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		route := req.Method + " " + maskPath(req.URL.Path)
		p.mu.Lock()
		p.calls = append(p.calls, call{at: time.Now(), route: route, path: req.Method + " " + req.URL.RequestURI()})
		p.mu.Unlock()
		select {
		case routes <- route:
		default:
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if req.Header.Get("Upgrade") != "" || strings.HasSuffix(req.URL.Path, "/start") && strings.Contains(req.URL.Path, "/exec/") ||
			strings.HasSuffix(req.URL.Path, "/attach") {
			return
		}
	}
}

// readResponses counts the events of each /events response.
func (p *proxy) readResponses(r *io.PipeReader, routes <-chan string) {
	defer io.Copy(io.Discard, r) //nolint:errcheck // keep the relay flowing whatever the parser does
	br := bufio.NewReader(r)
	for {
		route, ok := <-routes
		if !ok {
			return
		}
		method, _, _ := strings.Cut(route, " ")
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return
		}
		if strings.HasSuffix(route, " /events") {
			p.countEvents(resp.Body)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

func (p *proxy) countEvents(body io.Reader) {
	dec := json.NewDecoder(body)
	for {
		var m struct {
			Action string `json:"Action"`
			Status string `json:"status"`
		}
		if err := dec.Decode(&m); err != nil {
			return // the stream ended or broke
		}
		a := m.Action
		if a == "" {
			a = m.Status
		}
		p.mu.Lock()
		p.events = append(p.events, streamedEvent{at: time.Now(), action: a})
		p.mu.Unlock()
	}
}

var (
	apiVersion = regexp.MustCompile(`^/v[0-9.]+/`)
	objectID   = regexp.MustCompile(`^/(containers|images|exec|networks|volumes)/([^/]+)(/.*)?$`)
)

// maskPath drops the API version and masks object IDs and names:
// /v1.41/containers/3f2a.../json → /containers/{id}/json.
func maskPath(path string) string {
	path = apiVersion.ReplaceAllString(path, "/")
	if m := objectID.FindStringSubmatch(path); m != nil {
		switch m[2] {
		case "json", "create", "prune", "load", "search", "build":
			return path
		}
		return "/" + m[1] + "/{id}" + m[3]
	}
	return path
}

// counts are what crossed the proxy in a window.
type counts struct {
	calls  map[string]int
	events map[string]int
	nCalls int
	nEvent int
}

// add adds o's counts to c's.
func (c *counts) add(o counts) {
	for k, n := range o.calls {
		c.calls[k] += n
	}
	for k, n := range o.events {
		c.events[k] += n
	}
	c.nCalls += o.nCalls
	c.nEvent += o.nEvent
}

// window counts the calls and events between from and to.
func (p *proxy) window(from, to time.Time) counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := counts{calls: map[string]int{}, events: map[string]int{}}
	for _, x := range p.calls {
		if !x.at.Before(from) && x.at.Before(to) {
			c.calls[x.route]++
			c.nCalls++
		}
	}
	for _, e := range p.events {
		if !e.at.Before(from) && e.at.Before(to) {
			c.events[e.action]++
			c.nEvent++
		}
	}
	return c
}

// callsSince returns the calls from t on, in order.
func (p *proxy) callsSince(t time.Time) []call {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []call
	for _, x := range p.calls {
		if !x.at.Before(t) {
			out = append(out, x)
		}
	}
	return out
}
