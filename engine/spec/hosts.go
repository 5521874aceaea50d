package spec

import (
	"strconv"
	"time"
)

// This file reads the top-level hosts and fleet keys (DESIGN §3, §11): the
// Docker engines a rollout crosses, and how it crosses them. A document
// without hosts is the one engine of --docker-host / DOCKER_HOST, as it
// always was: Desired.Hosts and Desired.Fleet stay nil.
//
// Neither key is part of any workload's spec hash, and a host's replica
// override changes only Replicas, which the hash leaves out: naming hosts,
// or moving a workload's count per host, recreates nothing.

// Transport values of Host.Transport: how rollcall reaches an engine.
const (
	TransportSSH     = "ssh"     // ssh://[user@]host[:port][/socket]: the system ssh running `docker system dial-stdio`
	TransportTCP     = "tcp"     // tcp://host:port, with TLS from Host.TLS, or Host.PlainTCP
	TransportUnix    = "unix"    // unix:///path/to/docker.sock
	TransportContext = "context" // a docker context, by name
)

// OnFailure values of fleet.on_failure: what the hosts already rolled do
// once a host's roll fails.
const (
	OnFailurePause       = "pause"        // stay as they are, and say so
	OnFailureRollbackAll = "rollback_all" // each returns to the revision it ran before the rollout
	OnFailureContinue    = "continue"     // go on, up to Fleet.MaxFailedHosts failed hosts
)

// Host is one Docker engine of the fleet, as the file names it. Exactly one
// of Endpoint and Context is set. Two hosts that turn out to be one engine
// (the same `docker info` ID) are found when rollcall connects, not here:
// HostError points at the host for that message.
type Host struct {
	Name      string
	Transport string // TransportSSH, TransportTCP, TransportUnix or TransportContext
	Endpoint  string // as written, e.g. "ssh://deploy@edge-1"; "" for a context
	Context   string // a docker context's name; "" for an endpoint
	// TLS is a directory in the DOCKER_CERT_PATH layout (ca.pem, cert.pem,
	// key.pem), as written, for a tcp endpoint; "" for none. A relative
	// path is the caller's to resolve.
	TLS string
	// PlainTCP is a tcp endpoint without TLS, asked for with `tls: false`:
	// a plain engine port is root on that host to anyone who reaches it,
	// so a tcp endpoint takes one of TLS and PlainTCP.
	PlainTCP bool
	// Replicas overrides the replica count of workloads on this host, by
	// workload name; nil for none.
	Replicas map[string]int
	// Line and Col are where the host's name stands in the file.
	Line, Col int
}

// Fleet says how a rollout crosses the hosts. load.Parse fills in every default
// whenever the document names hosts.
type Fleet struct {
	// Canary holds the hosts of the first wave, in file order. Default:
	// the first host.
	Canary []string
	// Batch is how many hosts roll together in each later wave. Default: 1.
	Batch Batch
	// Wait is the soak time between a wave turning healthy and the next
	// wave starting. Default: 0.
	Wait time.Duration
	// OnFailure is OnFailurePause (the default), OnFailureRollbackAll or
	// OnFailureContinue.
	OnFailure string
	// MaxFailedHosts is how many failed hosts OnFailureContinue goes on
	// past (default 1); one more stops the rollout. 0 with the other
	// policies.
	MaxFailedHosts int
}

// Batch is the size of a later wave: a count of hosts, or a share of them.
// Exactly one of Count and Share is set.
type Batch struct {
	Count int // hosts per wave, >= 1; 0 when Share is set
	Share int // percent of the hosts, 1..100; 0 when Count is set
}

// Size is the number of hosts per wave in a rollout of hosts hosts: the
// count, or the share of hosts rounded down, and never less than 1 (a
// share of one host is that host).
func (b Batch) Size(hosts int) int {
	n := b.Count
	if b.Share > 0 {
		n = hosts * b.Share / 100
	}
	return max(n, 1)
}

// String is the batch as the file writes it: "2" or "50%".
func (b Batch) String() string {
	if b.Share > 0 {
		return strconv.Itoa(b.Share) + "%"
	}
	return strconv.Itoa(b.Count)
}

// HostNamed returns the host called name, or nil.
func (d *Desired) HostNamed(name string) *Host {
	for _, h := range d.Hosts {
		if h.Name == name {
			return h
		}
	}
	return nil
}

// HostNames returns the host names in file order; nil without hosts.
func (d *Desired) HostNames() []string {
	var names []string
	for _, h := range d.Hosts {
		names = append(names, h.Name)
	}
	return names
}

// ForHost is the desired state of one host: the same workloads, with the
// host's replica overrides applied, in a Desired of its own (so each
// host's session holds its own), with Host set to the host's name and no
// Hosts or Fleet: to its session it is a one-host document. The workloads
// are copies; the slices and maps inside them are shared and, as
// everywhere after load.Parse, read only. Each workload's spec hash is the one
// it has in d. False when d names no such host.
func (d *Desired) ForHost(name string) (*Desired, bool) {
	h := d.HostNamed(name)
	if h == nil {
		return nil, false
	}
	out := &Desired{Source: d.Source, Prefix: d.Prefix, Proxy: d.Proxy, Notify: d.Notify, RegistryPoll: d.RegistryPoll, Warnings: d.Warnings, Host: h.Name, Volumes: d.Volumes, Engine: d.Engine,
		Workloads: make(map[string]*Workload, len(d.Workloads))}
	for n, w := range d.Workloads {
		cp := *w
		if r, ok := h.Replicas[n]; ok {
			cp.Replicas = r
		}
		out.Workloads[n] = &cp
	}
	return out, true
}

// HostError is an error at the place host is named in the file, for what is
// found only once rollcall reaches it (two endpoints to one engine); nil
// when d names no such host.
func (d *Desired) HostError(host, hint, msg string) *Error {
	h := d.HostNamed(host)
	if h == nil {
		return nil
	}
	return &Error{File: d.Source, Line: max(h.Line, 1), Col: max(h.Col, 1), Msg: "hosts." + host + ": " + msg, Hint: hint}
}
