package load

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// parsePort reads compose's short port syntax
// "[[HOST_IP:]HOST_PORT:]CONTAINER_PORT[/PROTO]". An IPv6 host IP is
// written in brackets: "[::1]:8080:80".
func parsePort(s string) (spec.Port, *problem) {
	p, _, pr := parsePortIP(s)
	return p, pr
}

// parsePortIP is parsePort, and whether s names the host IP.
func parsePortIP(s string) (spec.Port, bool, *problem) {
	p, pr := parsePortSyntax(s)
	if pr != nil {
		return spec.Port{}, false, pr
	}
	if p.HostIP == "" {
		p.HostIP = spec.DefaultHostIP
		return p, false, nil
	}
	return p, true, nil
}

// parsePortSyntax is parsePort with HostIP "" when s names none.
func parsePortSyntax(s string) (spec.Port, *problem) {
	const form = `write [[HOST_IP:]HOST_PORT:]CONTAINER_PORT[/tcp|udp], e.g. "8080", "127.0.0.1::8080" or "127.0.0.1:9000:8080/tcp"`
	p := spec.Port{Proto: "tcp"}
	rest := s
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		p.Proto = rest[i+1:]
		rest = rest[:i]
		if p.Proto != "tcp" && p.Proto != "udp" {
			return spec.Port{}, &problem{fmt.Sprintf("port %q: unknown protocol %q", s, p.Proto), "tcp or udp"}
		}
	}
	var ip, host, container string
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 || !strings.HasPrefix(rest[end+1:], ":") {
			return spec.Port{}, &problem{fmt.Sprintf("port %q: unclosed IPv6 address", s), form}
		}
		ip = rest[1:end]
		parts := strings.Split(rest[end+2:], ":")
		if len(parts) != 2 {
			return spec.Port{}, &problem{fmt.Sprintf("invalid port %q", s), form}
		}
		host, container = parts[0], parts[1]
	} else {
		parts := strings.Split(rest, ":")
		switch len(parts) {
		case 1:
			container = parts[0]
		case 2:
			host, container = parts[0], parts[1]
		case 3:
			ip, host, container = parts[0], parts[1], parts[2]
		default:
			return spec.Port{}, &problem{fmt.Sprintf("invalid port %q", s), form + `; write an IPv6 address in brackets, e.g. "[::1]:8080:80"`}
		}
	}
	if strings.Contains(host, "-") || strings.Contains(container, "-") {
		return spec.Port{}, &problem{fmt.Sprintf("port %q: port ranges are not supported", s), "list each port on its own"}
	}
	if ip != "" {
		addr, err := netip.ParseAddr(ip)
		if err != nil {
			return spec.Port{}, &problem{fmt.Sprintf("port %q: invalid host IP %q", s, ip), form}
		}
		p.HostIP = addr.String()
	}
	var pr *problem
	if host != "" {
		if p.HostPort, pr = portNumber(s, "host", host, 0); pr != nil {
			return spec.Port{}, pr
		}
	}
	if p.ContainerPort, pr = portNumber(s, "container", container, 1); pr != nil {
		return spec.Port{}, pr
	}
	return p, nil
}

func portNumber(port, which, s string, lowest int) (int, *problem) {
	if s == "" {
		return 0, &problem{fmt.Sprintf("port %q: missing %s port", port, which), ""}
	}
	n, err := strconv.Atoi(s)
	if !spec.IsDigits(s) || err != nil {
		return 0, &problem{fmt.Sprintf("port %q: %s port %q is not a number", port, which, s), ""}
	}
	if n < lowest || n > 65535 {
		return 0, &problem{fmt.Sprintf("port %q: %s port %d is out of range %d-65535", port, which, n, lowest), ""}
	}
	return n, nil
}

// ports reads the ports list of workload. Each port comes with its node and
// path, for the checks that need the whole workload (replicas) or the whole
// document (clashes).
func (l *loader) ports(workload string, n *yaml.Node, path string) []binding {
	items, ok := l.list(n, path)
	if !ok {
		return nil
	}
	var ports []binding
	for i, item := range items {
		ipath := index(path, i)
		if item.Kind != yaml.ScalarNode || (item.ShortTag() != "!!str" && item.ShortTag() != "!!int") {
			l.fail(item, `the short syntax, e.g. "127.0.0.1::8080"`, "%s: expected a port string, got %s", ipath, describe(item))
			continue
		}
		p, ip, pr := parsePortIP(item.Value)
		if pr != nil {
			l.fail(item, pr.hint, "%s: %s", ipath, pr.msg)
			continue
		}
		ports = append(ports, binding{Port: p, workload: workload, path: ipath, node: item, hostIP: ip})
	}
	return ports
}

// binding is a port where it was written, to find two workloads (or one
// workload twice) claiming a fixed host port.
type binding struct {
	spec.Port
	workload string
	path     string // e.g. "web.ports[0]"
	node     *yaml.Node
	hostIP   bool // the file names the host IP
}

// overlaps reports whether two fixed host ports cannot both be bound: same
// port and protocol on the same IP, or either on every IP.
func (b binding) overlaps(o binding) bool {
	if b.HostPort != o.HostPort || b.Proto != o.Proto {
		return false
	}
	anyIP := func(ip string) bool { return ip == "0.0.0.0" || ip == "::" }
	return b.HostIP == o.HostIP || anyIP(b.HostIP) || anyIP(o.HostIP)
}

// checkHostPorts reports each fixed host port that one claimed earlier in
// the document already holds.
func (l *loader) checkHostPorts(bs []binding) {
	for i, b := range bs {
		if b.HostPort == 0 {
			continue
		}
		for _, prev := range bs[:i] {
			switch {
			case !b.overlaps(prev):
				continue
			case l.engine == spec.EngineSwarm:
				l.fail(b.node, "a port of Swarm's routing mesh is the whole swarm's, for one service: publish another",
					"%s: published port %d/%s is already used by %s (line %d)", b.path, b.HostPort, b.Proto, prev.workload, prev.node.Line)
			default:
				l.fail(b.node, "only one container can bind a host port; "+ephemeralHint(b.Port),
					"%s: host port %s:%d/%s is already used by %s (line %d)", b.path, b.HostIP, b.HostPort, b.Proto, prev.workload, prev.node.Line)
			}
			break
		}
	}
}

// ephemeralHint says how to publish p's container port on an ephemeral
// host port instead: "127.0.0.1::80", "[::1]::80", "127.0.0.1::53/udp".
func ephemeralHint(p spec.Port) string {
	ip := p.HostIP
	if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() {
		ip = "[" + ip + "]"
	}
	s := fmt.Sprintf("%s::%d", ip, p.ContainerPort)
	if p.Proto != "" && p.Proto != "tcp" {
		s += "/" + p.Proto
	}
	return fmt.Sprintf("use %q for an ephemeral host port", s)
}
