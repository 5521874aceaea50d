package session

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/loopkit"
	"github.com/rollcall/rollcall/engine/proxy"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// This file holds the proxy in front (DESIGN §3 proxy.caddy_admin): what it
// routes to, asked about once a second beside the loop for the snapshot,
// and asked again by a draining step whether it has let go of the old
// container.
//
// The proxy only ever shortens a drain. Its answers never start a relist,
// move the epoch or reach decide, so no step runs because of it that would
// not run without it. A drain whose proxy does not answer ends as one
// without a proxy does: at its deadline, or once the container is
// unhealthy.

const (
	// proxyEvery is how often the proxy is asked while the desired state
	// names one.
	proxyEvery = time.Second
	// proxyTimeout bounds one question to the proxy, so a proxy that hangs
	// holds up neither the view nor a drain by more than that.
	proxyTimeout = time.Second
)

// ProxyView is what the proxy in front routes to, as last asked.
type ProxyView struct {
	Admin string // the admin API asked (proxy.caddy_admin)
	Err   string // the last question failed; ByContainer is then nil
	// Cause is Err without the call around it: the transport's own error
	// ("dial tcp 127.0.0.1:2019: connect: connection refused") when the
	// request never got an answer, else Err whole.
	Cause string
	At    time.Time // by Options.Now: when it last answered or failed; zero before the first answer
	// ByContainer is what the proxy holds for each running container with
	// a known address, by container ID. A container absent here is not
	// running, or its address is unknown.
	ByContainer map[string]ProxyRoute
}

// Route is what the proxy holds for the container with id; ok false
// without a view (v nil), an answer, or an address for it.
func (v *ProxyView) Route(id string) (r ProxyRoute, ok bool) {
	if v == nil {
		return ProxyRoute{}, false
	}
	r, ok = v.ByContainer[id]
	return r, ok
}

// Text says it for the console: "routed · 2 in flight", "not routed".
func (r ProxyRoute) Text() string {
	if !r.Routed {
		return "not routed"
	}
	return fmt.Sprintf("routed · %d in flight", r.InFlight)
}

// ProxyRoute is what the proxy holds for one container: summed over the
// container's addresses (one per network).
type ProxyRoute struct {
	Routed   bool // some upstream has one of its addresses
	InFlight int  // requests in flight to it now
	Fails    int  // the proxy's recent failures dialing it
}

type proxyResult struct {
	admin string
	ups   []proxy.Upstream
	err   error
}

// proxyState is the loop's side of the proxy.
type proxyState struct {
	admin string        // the admin API the view is of
	asked bool          // a question is out
	alarm loopkit.Alarm // the next question
	at    time.Time
	ups   []proxy.Upstream
	err   string
	cause string // ProxyView.Cause
	down  bool   // the failure is noted; the next answer says it is back
}

// proxyAdmin is the admin API the desired state names; "" for none.
func (d *desire) proxyAdmin() string {
	if d.desired == nil || d.desired.Proxy == nil {
		return ""
	}
	return d.desired.Proxy.CaddyAdmin
}

// pollProxy asks the proxy beside the loop, unless a question is out or
// the next is already set. Without a proxy it forgets the last view.
func (l *loop) pollProxy() {
	admin := l.proxyAdmin()
	p := &l.proxy
	if admin == "" {
		p.alarm.Stop()
		*p = proxyState{asked: p.asked}
		return
	}
	if p.admin != admin {
		// Another proxy: the last view says nothing about it.
		*p = proxyState{admin: admin, asked: p.asked, alarm: p.alarm}
	}
	if p.asked || p.alarm.Armed() {
		return
	}
	p.asked = true
	goReport(l, l.proxied, func() proxyResult {
		ctx, cancel := context.WithTimeout(l.ctx, proxyTimeout)
		defer cancel()
		ups, err := proxy.Upstreams(ctx, nil, admin)
		return proxyResult{admin: admin, ups: ups, err: err}
	})
}

// onProxied takes the proxy's answer for the view, records its going
// once per outage and its coming back, and sets the next question.
func (l *loop) onProxied(r proxyResult) {
	p := &l.proxy
	p.asked = false
	if r.admin != p.admin || p.admin == "" {
		l.pollProxy() // the proxy changed meanwhile: ask the one named now
		return
	}
	p.at = l.engineNow()
	if r.err != nil {
		p.ups, p.err, p.cause = nil, r.err.Error(), proxyCause(r.err)
		if !p.down && l.ctx.Err() == nil {
			p.down = true
			l.fact(Fact{Kind: FactProxyDown, Proxy: &ProxyFact{Admin: p.admin, Err: p.err}})
		}
	} else {
		if p.down {
			l.fact(Fact{Kind: FactProxyUp, Proxy: &ProxyFact{Admin: p.admin}})
		}
		p.ups, p.err, p.down = r.ups, "", false
	}
	p.alarm.Set(proxyEvery)
}

// onProxyAlarm asks the proxy again.
func (l *loop) onProxyAlarm() {
	l.proxy.alarm.Fired()
	l.pollProxy()
}

// view is the proxy part of a snapshot, of the containers listed; nil
// without a proxy.
func (p *proxyState) view(containers []docker.Container) *ProxyView {
	if p.admin == "" {
		return nil
	}
	v := &ProxyView{Admin: p.admin, Err: p.err, Cause: p.cause, At: p.at}
	if p.err != "" || p.at.IsZero() {
		return v
	}
	v.ByContainer = map[string]ProxyRoute{}
	for _, c := range containers {
		if c.State != docker.StateRunning {
			continue
		}
		if r, ok := routeOf(p.ups, addresses(c)); ok {
			v.ByContainer[c.ID] = r
		}
	}
	return v
}

// routeOf sums what the proxy holds for addresses; ok false when there are
// none to look for.
func routeOf(ups []proxy.Upstream, ips []netip.Addr) (r ProxyRoute, ok bool) {
	for _, ip := range ips {
		if u, routed := proxy.Routed(ups, ip); routed {
			r.Routed = true
			r.InFlight += u.InFlight
			r.Fails += u.Fails
		}
	}
	return r, len(ips) > 0
}

// addresses are the container's valid IP addresses, one per network.
func addresses(c docker.Container) []netip.Addr {
	var out []netip.Addr
	for _, s := range c.Networks {
		if ip, err := netip.ParseAddr(s); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

// errNoAddress: a container whose addresses are unknown cannot be looked
// up at the proxy, so the proxy cannot be said to have let go of it.
var errNoAddress = errors.New("proxy: the container's address is unknown")

// errNotBehind: the proxy was never seen routing to the container, so it
// is not the proxy's to end its drain; the engine's health decides.
var errNotBehind = errors.New("proxy: the container is not behind it")

// released is the drain's question to the proxy for step s (nil without a
// proxy, or for a step that drains nothing): has the proxy let go of the
// old container? It is made on the loop, with what the loop knows then,
// and asked from the step's goroutine; it touches no loop state.
//
// It says yes only when every address of the container is released
// (proxy.Released) AND the proxy was seen routing to the container, in the
// last view or during this drain. A container the proxy never listed is
// not behind it (another workload's proxy, or none): that is an error
// (errNotBehind), and the engine's health ends its drain as without a
// proxy.
func (l *loop) released(s reconcile.Step) func(context.Context, reconcile.Step) (bool, error) {
	admin := l.proxyAdmin()
	if admin == "" || s.Drain <= 0 || (s.Action != reconcile.ActStop && s.Action != reconcile.ActRoll) {
		return nil
	}
	var ips []netip.Addr
	for _, c := range l.containers {
		if c.ID == s.ContainerID {
			ips = addresses(c)
		}
	}
	seen := false
	if l.proxy.admin == admin && l.proxy.err == "" {
		r, _ := routeOf(l.proxy.ups, ips)
		seen = r.Routed
	}
	return func(ctx context.Context, _ reconcile.Step) (bool, error) {
		if len(ips) == 0 {
			return false, errNoAddress
		}
		ctx, cancel := context.WithTimeout(ctx, proxyTimeout)
		defer cancel()
		ups, err := proxy.Upstreams(ctx, nil, admin)
		if err != nil {
			return false, err
		}
		r, _ := routeOf(ups, ips)
		seen = seen || r.Routed
		if !seen {
			return false, errNotBehind
		}
		for _, ip := range ips {
			if !proxy.Released(ups, ip) {
				return false, nil
			}
		}
		return true, nil
	}
}

// proxyCause is the cause of a failed question to the proxy, read from the
// error's type, never its words: the transport's error of a request that
// got no answer (a *url.Error wraps it), else the error whole.
func proxyCause(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err.Error()
	}
	return err.Error()
}
