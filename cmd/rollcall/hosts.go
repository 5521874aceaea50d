package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/moby"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
)

// How the commands reach the engines of a hosts: file (DESIGN §11): each
// host's endpoint or docker context becomes a moby.Endpoint (hostEndpoint),
// checked before anything is dialled, so a host the file gets wrong is an
// error at its own file:line:col (checkHosts); then every host is dialled
// at once, a few at a time (dialHosts), and asked who it is: two hosts
// that answer with one engine ID are one engine, an error at the second
// one's line.

// dialParallel bounds the hosts dialled at once: every ssh:// host is an
// ssh login, and a burst of them is what resets connections past a dozen
// hosts (kamal#326).
const dialParallel = 8

// tlsFiles are the files of a TLS folder in the DOCKER_CERT_PATH layout.
var tlsFiles = []string{"ca.pem", "cert.pem", "key.pem"}

// baseDir is the directory a host's relative TLS folder is read from: the
// desired file's own, and the working directory for a URL source.
func baseDir(source string) string {
	if isURL(source) || source == "" {
		return ""
	}
	return filepath.Dir(source)
}

// hostEndpoint is how rollcall reaches h: its endpoint URL (with the TLS
// folder, relative to base, and plain TCP as the file asks) or its docker
// context.
func hostEndpoint(h *spec.Host, base string) moby.Endpoint {
	if h.Transport == spec.TransportContext {
		return moby.Endpoint{Context: h.Context}
	}
	ep := moby.Endpoint{Host: h.Endpoint, PlainTCP: h.PlainTCP}
	if h.TLS != "" {
		ep.CertPath = h.TLS
		if !filepath.IsAbs(h.TLS) && base != "" {
			ep.CertPath = filepath.Join(base, h.TLS)
		}
	}
	return ep
}

// checkEndpoint is what can be known of ep without reaching the engine:
// Validate, and a TLS folder that holds its three files.
func checkEndpoint(ep moby.Endpoint) error {
	if err := ep.Validate(); err != nil {
		return err
	}
	if ep.CertPath == "" {
		return nil
	}
	for _, name := range tlsFiles {
		path := filepath.Join(ep.CertPath, name)
		st, err := os.Stat(path)
		switch {
		case err != nil:
			return fmt.Errorf("TLS folder %s: %w", ep.CertPath, err)
		case !st.Mode().IsRegular():
			return fmt.Errorf("TLS folder %s: %s is not a regular file", ep.CertPath, path)
		}
	}
	return nil
}

const endpointFixHint = "fix the host's endpoint, context or tls; a relative tls folder is read from the desired file's directory"

// checkHosts checks every host of d before any is dialled: each error is
// at its host's place in the file.
func checkHosts(d *spec.Desired) error {
	var list spec.ErrorList
	base := baseDir(d.Source)
	for _, h := range d.Hosts {
		if err := checkEndpoint(hostEndpoint(h, base)); err != nil {
			list = append(list, d.HostError(h.Name, endpointFixHint, err.Error()))
		}
	}
	if len(list) > 0 {
		return list
	}
	return nil
}

// hostWhere names how h is reached, as the file writes it.
func hostWhere(h *spec.Host) string {
	if h.Transport == spec.TransportContext {
		return "context " + h.Context
	}
	return h.Endpoint
}

// hostConn is one host of the file, dialled.
type hostConn struct {
	host   *spec.Host
	client docker.Client // nil when the host does not answer
	info   docker.EngineInfo
	err    error // why it does not answer: the dial, or its first Info
}

// reachable reports whether the host answered.
func (c hostConn) reachable() bool { return c.err == nil }

// dialHosts checks every host of d (checkHosts), then dials them all, a
// few at a time, and asks each its engine's identity. A host that does not
// answer has err set; it is not an error of dialHosts, which fails only on
// a host the file gets wrong, or on two hosts that answer with one engine
// ID (an error at the second host's line). The returned close releases
// every client.
func dialHosts(ctx context.Context, e env, d *spec.Desired) ([]hostConn, func(), error) {
	if err := checkHosts(d); err != nil {
		return nil, func() {}, err
	}
	base := baseDir(d.Source)
	conns := make([]hostConn, len(d.Hosts))
	sem := make(chan struct{}, dialParallel)
	var wg sync.WaitGroup
	for i, h := range d.Hosts {
		conns[i].host = h
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			conns[i] = dialHost(ctx, e, h, hostEndpoint(h, base))
		}()
	}
	wg.Wait()
	closeAll := func() {
		for _, c := range conns {
			closeClient(c.client)
		}
	}
	if err := sameEngines(d, conns); err != nil {
		closeAll()
		return nil, func() {}, err
	}
	return conns, closeAll, nil
}

// dialHost dials one host and reads its engine's identity.
func dialHost(ctx context.Context, e env, h *spec.Host, ep moby.Endpoint) hostConn {
	c := hostConn{host: h}
	client, err := e.dialHost(ctx, h.Name, ep)
	if err != nil {
		c.err = err
		return c
	}
	c.client = client
	if c.info, err = client.Info(ctx); err != nil {
		c.err = err
	}
	return c
}

// sameEngines is the rule that a host is one engine: a host whose engine
// ID an earlier host of the file has already answered with is an error at
// its line. A host that does not answer has no ID, and is not compared.
func sameEngines(d *spec.Desired, conns []hostConn) error {
	var list spec.ErrorList
	first := map[string]*spec.Host{}
	for _, c := range conns {
		id := c.info.ID
		if !c.reachable() || id == "" {
			continue
		}
		if f, dup := first[id]; dup {
			list = append(list, d.HostError(c.host.Name, "each host is one engine: name it once, by one endpoint or context",
				fmt.Sprintf("%s reaches the engine of %s (line %d): engine ID %s", hostWhere(c.host), f.Name, f.Line, id)))
			continue
		}
		first[id] = c.host
	}
	if len(list) > 0 {
		return list
	}
	return nil
}

// unreachableErr is a host's error as its block shows it: without the
// single-engine hint of --docker-host.
func unreachableErr(err error) string {
	var he *hintError
	if errors.As(err, &he) {
		err = he.err
	}
	return oneLine(err.Error())
}

// fleetDialer is the fleet runtime's way to a host: as dialHosts reaches
// it, its relative TLS folder read from base.
func fleetDialer(e env, base string) fleet.Dialer {
	return func(ctx context.Context, h *spec.Host) (docker.Client, error) {
		ep := hostEndpoint(h, base)
		if err := checkEndpoint(ep); err != nil {
			return nil, fmt.Errorf("host %s: %w", h.Name, err)
		}
		return e.dialHost(ctx, h.Name, ep)
	}
}

// noDockerHost refuses --docker-host beside a hosts: file, which names its
// engines itself.
func noDockerHost(g *globals, d *spec.Desired) error {
	if g.dockerHost == "" {
		return nil
	}
	return usageErr(fmt.Errorf("--docker-host %s: %s names its engines under hosts: (%s); leave --docker-host out",
		g.dockerHost, d.Source, strings.Join(d.HostNames(), ", ")))
}

// prefixed is a desired source with --prefix applied to every state it
// loads: the fleet takes its prefix from the desired state.
type prefixed struct {
	source.Source
	prefix string
}

func (s prefixed) Load(ctx context.Context) (*spec.Desired, error) {
	d, err := s.Source.Load(ctx)
	if err != nil || s.prefix == "" {
		return d, err
	}
	return withPrefix(d, s.prefix)
}

// closeClient releases c, if it holds anything.
func closeClient(c docker.Client) {
	if cl, ok := c.(io.Closer); ok {
		_ = cl.Close()
	}
}
