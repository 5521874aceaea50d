// Package rollcallup is a Caddy upstream source, `dynamic rollcall`, that
// finds the containers of one rollcall workload on the Docker engine and
// routes only to those that are running and healthy, as Traefik's Docker
// provider does. build.sh compiles it into rollcall's Caddy image; it lives
// in examples/caddy's own Go module so that rollcall's never needs Caddy.
//
//	reverse_proxy {
//		dynamic rollcall {
//			workload web              # <prefix>.workload=web
//			prefix   rollcall         # the label prefix (default rollcall)
//			network  rollcall-front   # the address on this network is dialled
//			port     8080
//			socket   /var/run/docker.sock   # the default
//			refresh  5s               # a full relist with no event (default 5s)
//			cohort_by cookie rc       # a split's cohort: sticky by a cookie, or client_ip (default: random)
//		}
//	}
//
// Why: Caddy's `dynamic a` sees a container from the moment it joins the
// network until it leaves it at its stop, healthy or not, so the only way
// to take a container out of rotation was for it to refuse connections.
// Closing a listener resets the connections the kernel has accepted and the
// process has not: a POST Caddy sent on one is a 502 it never retries. Here a
// container leaves the rotation as soon as the engine reports it unhealthy
// (its pre_stop makes it so), while it still accepts and serves, so it can
// close its listener at its stop with nobody dialling it.
//
// The set is kept from the engine's events (a container's start, health
// change, kill, die or stop relists at once) and a relist every refresh. A
// list that fails keeps the last set: an engine that restarts does not take
// every route away.
//
// An admin API route, GET /rollcall/upstreams, lists what every such source
// routes to now. rollcall's drain reads it (proxy.caddy_admin) to know that
// Caddy has let go of an old container before it stops it.
//
// Canary by traffic (cohorts.go): a workload may have a split, set on the
// admin API at /rollcall/cohorts/{prefix}/{workload} with no reload. Its
// containers whose <prefix>.spec label is the split's spec are the canary
// cohort, the others the stable one, and each request goes to the canary
// with the split's share: at random, or by a hash of a cookie or of the
// client's address (cohort_by), so that a client stays where it was as the
// share grows. The handler rollcall_cohorts (handler.go) counts each
// cohort's answers.
package rollcallup

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp/reverseproxy"
	"go.uber.org/zap"
)

func init() {
	caddy.RegisterModule(Upstreams{})
	caddy.RegisterModule(adminRoutes{})
	caddy.RegisterModule(adminCohorts{})
}

// Upstreams is the `dynamic rollcall` upstream source.
type Upstreams struct {
	Workload string         `json:"workload,omitempty"`
	Prefix   string         `json:"prefix,omitempty"`
	Network  string         `json:"network,omitempty"`
	Port     string         `json:"port,omitempty"`
	Socket   string         `json:"socket,omitempty"`
	Refresh  caddy.Duration `json:"refresh,omitempty"`
	// CohortBy is how a request's cohort is chosen while a split is set:
	// "random" (the default), "cookie" (a hash of the cookie CohortCookie;
	// random without it) or "client_ip" (a hash of the client's address).
	CohortBy     string `json:"cohort_by,omitempty"`
	CohortCookie string `json:"cohort_cookie,omitempty"`

	w      *watcher
	wl     *workload      // the workload's split and counters, shared by its sources
	random func() float64 // [0,1); nil: math/rand/v2
}

// CaddyModule returns the Caddy module information.
func (Upstreams) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "http.reverse_proxy.upstreams.rollcall",
		New: func() caddy.Module { return new(Upstreams) },
	}
}

// Provision fills in the defaults and starts (or shares) the watcher.
func (u *Upstreams) Provision(ctx caddy.Context) error {
	if u.Workload == "" || u.Network == "" || u.Port == "" {
		return fmt.Errorf("dynamic rollcall: workload, network and port are required")
	}
	if u.Prefix == "" {
		u.Prefix = "rollcall"
	}
	if u.Socket == "" {
		u.Socket = "/var/run/docker.sock"
	}
	if u.Refresh <= 0 {
		u.Refresh = caddy.Duration(5 * time.Second)
	}
	switch u.CohortBy {
	case "", cohortByRandom, cohortByClientIP:
		if u.CohortCookie != "" {
			return fmt.Errorf("dynamic rollcall: cohort_cookie needs cohort_by %q", cohortByCookie)
		}
	case cohortByCookie:
		if u.CohortCookie == "" {
			return fmt.Errorf("dynamic rollcall: cohort_by cookie needs the cookie's name")
		}
	default:
		return fmt.Errorf("dynamic rollcall: cohort_by %q: want random, cookie or client_ip", u.CohortBy)
	}
	u.w = acquire(u.key(), func() *watcher { return newWatcher(*u, ctx.Logger()) })
	u.wl = acquireWorkload(u.Prefix, u.Workload)
	return nil
}

// Cleanup lets go of the watcher and the workload's cohorts; the last user
// stops the one and forgets the other.
func (u *Upstreams) Cleanup() error {
	if u.w != nil {
		release(u.key())
	}
	if u.wl != nil {
		releaseWorkload(u.wl)
	}
	return nil
}

func (u *Upstreams) key() string {
	return strings.Join([]string{u.Socket, u.Prefix, u.Workload, u.Network, u.Port, time.Duration(u.Refresh).String()}, "|")
}

// GetUpstreams returns the containers routed to now (with a split, those
// of the request's cohort): new structs every call, as Caddy fills in their
// hosts per request.
func (u *Upstreams) GetUpstreams(r *http.Request) ([]*reverseproxy.Upstream, error) {
	addrs := u.route(r)
	out := make([]*reverseproxy.Upstream, len(addrs))
	for i, a := range addrs {
		out[i] = &reverseproxy.Upstream{Dial: a}
	}
	return out, nil
}

// UnmarshalCaddyfile reads the block of `dynamic rollcall`.
func (u *Upstreams) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the source's name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		field := d.Val()
		args := d.RemainingArgs()
		if field == "cohort_by" {
			switch {
			case len(args) == 2 && args[0] == cohortByCookie:
				u.CohortBy, u.CohortCookie = args[0], args[1]
			case len(args) == 1 && (args[0] == cohortByClientIP || args[0] == cohortByRandom):
				u.CohortBy = args[0]
			default:
				return d.Errf("cohort_by %s: want cookie NAME, client_ip or random", strings.Join(args, " "))
			}
			continue
		}
		if len(args) != 1 {
			return d.ArgErr()
		}
		v := args[0]
		switch field {
		case "workload":
			u.Workload = v
		case "prefix":
			u.Prefix = v
		case "network":
			u.Network = v
		case "port":
			u.Port = v
		case "socket":
			u.Socket = v
		case "refresh":
			dur, err := caddy.ParseDuration(v)
			if err != nil {
				return d.Errf("refresh %q: %v", v, err)
			}
			u.Refresh = caddy.Duration(dur)
		default:
			return d.Errf("unknown field %q (workload, prefix, network, port, socket, refresh, cohort_by)", field)
		}
	}
	return nil
}

// watchers are shared by key across config reloads (Caddy provisions the
// new config before it cleans up the old one), counted by users.
var (
	watchersMu sync.Mutex
	watchers   = map[string]*watcherRef{}
)

type watcherRef struct {
	w    *watcher
	refs int
}

func acquire(key string, mk func() *watcher) *watcher {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	r := watchers[key]
	if r == nil {
		r = &watcherRef{w: mk()}
		watchers[key] = r
		go r.w.run()
	}
	r.refs++
	return r.w
}

func release(key string) {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	r := watchers[key]
	if r == nil {
		return
	}
	if r.refs--; r.refs <= 0 {
		r.w.cancel()
		delete(watchers, key)
	}
}

// watcher keeps the set of one workload's routable containers.
type watcher struct {
	cfg    Upstreams
	log    *zap.Logger
	http   *http.Client
	ctx    context.Context
	cancel context.CancelFunc
	kick   chan struct{} // a relist is due

	mu      sync.RWMutex
	addrs   []string // "172.18.0.5:8080", sorted
	specs   []string // specs[i]: the <prefix>.spec label of the container at addrs[i]
	listed  time.Time
	lastErr string
}

func newWatcher(cfg Upstreams, log *zap.Logger) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	sock := cfg.Socket
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}
	return &watcher{cfg: cfg, log: log, http: &http.Client{Transport: tr}, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1)}
}

func (w *watcher) current() []string {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.addrs
}

// members is current with each address's spec label. Neither slice is
// ever changed in place: a relist replaces both.
func (w *watcher) members() (addrs, specs []string) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.addrs, w.specs
}

// run relists on every event, every refresh, and at once.
func (w *watcher) run() {
	go w.events()
	t := time.NewTicker(time.Duration(w.cfg.Refresh))
	defer t.Stop()
	w.relist()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.kick:
		}
		w.relist()
	}
}

func (w *watcher) poke() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// labelFilters select the workload's managed containers.
func (w *watcher) labelFilters() []string {
	return []string{w.cfg.Prefix + ".managed=true", w.cfg.Prefix + ".workload=" + w.cfg.Workload}
}

// relist asks the engine for the workload's running containers that are
// healthy or have no healthcheck, and takes their addresses on the network
// and their spec labels (which cohort they are in).
func (w *watcher) relist() {
	f, _ := json.Marshal(map[string][]string{
		"label":  w.labelFilters(),
		"status": {"running"},
		"health": {"healthy", "none"},
	})
	ctx, cancel := context.WithTimeout(w.ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker/containers/json?filters="+url.QueryEscape(string(f)), nil)
	resp, err := w.http.Do(req)
	if err != nil {
		w.failed(err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		w.failed(fmt.Errorf("list: %s: %s", resp.Status, strings.TrimSpace(string(b))))
		return
	}
	var list []struct {
		Labels          map[string]string
		NetworkSettings struct {
			Networks map[string]struct{ IPAddress string }
		}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&list); err != nil {
		w.failed(fmt.Errorf("list: %w", err))
		return
	}
	type member struct{ addr, spec string }
	var ms []member
	for _, c := range list {
		n, ok := c.NetworkSettings.Networks[w.cfg.Network]
		if !ok || net.ParseIP(n.IPAddress) == nil {
			continue
		}
		ms = append(ms, member{net.JoinHostPort(n.IPAddress, w.cfg.Port), c.Labels[w.cfg.Prefix+".spec"]})
	}
	slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.addr, b.addr) })
	var addrs, specs []string
	for _, m := range ms {
		addrs, specs = append(addrs, m.addr), append(specs, m.spec)
	}
	w.mu.Lock()
	changed := !slices.Equal(addrs, w.addrs) || !slices.Equal(specs, w.specs)
	w.addrs, w.specs, w.listed, w.lastErr = addrs, specs, time.Now(), ""
	w.mu.Unlock()
	if changed {
		w.log.Info("rollcall upstreams", zap.String("workload", w.cfg.Workload), zap.Strings("addresses", addrs), zap.Strings("specs", specs))
	}
}

func (w *watcher) failed(err error) {
	if w.ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	first := w.lastErr == ""
	w.lastErr = err.Error()
	w.mu.Unlock()
	if first {
		w.log.Warn("rollcall upstreams: keeping the last set", zap.String("workload", w.cfg.Workload), zap.Error(err))
	}
}

// events relists on every event of the workload's containers that can
// change the set, reconnecting with backoff; a reconnect relists too.
func (w *watcher) events() {
	f, _ := json.Marshal(map[string][]string{
		"type":  {"container"},
		"label": w.labelFilters(),
		"event": {"start", "health_status", "kill", "die", "stop", "pause", "unpause", "destroy"},
	})
	backoff := 100 * time.Millisecond
	for w.ctx.Err() == nil {
		began := time.Now()
		err := w.stream("http://docker/events?filters=" + url.QueryEscape(string(f)))
		if w.ctx.Err() != nil {
			return
		}
		if time.Since(began) > 5*time.Second {
			backoff = 100 * time.Millisecond
		}
		w.failed(fmt.Errorf("events: %w", err))
		select {
		case <-w.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
		w.poke()
	}
}

func (w *watcher) stream(u string) error {
	req, _ := http.NewRequestWithContext(w.ctx, http.MethodGet, u, nil)
	resp, err := w.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	w.poke() // whatever happened before the stream opened
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		w.poke()
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.EOF
}

// adminRoutes serves GET /rollcall/upstreams on Caddy's admin API.
type adminRoutes struct{}

func (adminRoutes) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "admin.api.rollcall_upstreams",
		New: func() caddy.Module { return new(adminRoutes) },
	}
}

func (adminRoutes) Routes() []caddy.AdminRoute {
	return []caddy.AdminRoute{{Pattern: "/rollcall/upstreams", Handler: caddy.AdminHandlerFunc(serveUpstreams)}}
}

// sourceStatus is one source's part of the admin answer.
type sourceStatus struct {
	Prefix    string    `json:"prefix"`
	Workload  string    `json:"workload"`
	Network   string    `json:"network"`
	Addresses []string  `json:"addresses"` // routed to now
	Listed    time.Time `json:"listed"`    // the last good list; zero before the first
	Error     string    `json:"error,omitempty"`
}

func serveUpstreams(rw http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet {
		return caddy.APIError{HTTPStatus: http.StatusMethodNotAllowed, Err: fmt.Errorf("method not allowed")}
	}
	watchersMu.Lock()
	out := []sourceStatus{}
	for _, ref := range watchers {
		w := ref.w
		w.mu.RLock()
		out = append(out, sourceStatus{Prefix: w.cfg.Prefix, Workload: w.cfg.Workload, Network: w.cfg.Network,
			Addresses: append([]string{}, w.addrs...), Listed: w.listed, Error: w.lastErr})
		w.mu.RUnlock()
	}
	watchersMu.Unlock()
	slices.SortFunc(out, func(a, b sourceStatus) int { return strings.Compare(a.Workload, b.Workload) })
	rw.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(rw).Encode(out)
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Upstreams)(nil)
	_ caddy.CleanerUpper          = (*Upstreams)(nil)
	_ reverseproxy.UpstreamSource = (*Upstreams)(nil)
	_ caddyfile.Unmarshaler       = (*Upstreams)(nil)
	_ caddy.AdminRouter           = adminRoutes{}
	_ caddy.AdminRouter           = adminCohorts{}
)
