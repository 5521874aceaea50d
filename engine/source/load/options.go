package load

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// optionKeys are the workload keys of Options, read by option.
var optionKeys = []string{"entrypoint", "user", "working_dir", "hostname", "cap_add", "cap_drop", "security_opt",
	"privileged", "init", "shm_size", "ulimits", "sysctls", "extra_hosts", "dns", "dns_search", "logging", "expose",
	"network_mode", "devices", "group_add"}

// The option keys are workload keys too; added here so the list in
// workload.go stays the document's own.
func init() { workloadKeys = append(workloadKeys, optionKeys...) }

var (
	loggingKeys = []string{"driver", "options"}
	// knownUlimits are the limits the engine sets (docker run --ulimit).
	knownUlimits = []string{"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile",
		"nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}
	// securityOptKeys are the keys of security_opt the engine takes.
	securityOptKeys = []string{"apparmor", "label", "no-new-privileges", "seccomp", "systempaths", "writable-cgroups"}
	capabilityRE    = regexp.MustCompile(`^[A-Za-z][A-Za-z_]*$`)
	sysctlRE        = regexp.MustCompile(`^[a-z0-9_]+([./][a-z0-9_-]+)+$`)
)

// maxHostname leaves room for the slot suffix ("-999") within the 63
// characters of a hostname.
const maxHostname = 59

// option reads one key of optionKeys into w.Options.
func (l *loader) option(w *spec.Workload, f field) {
	o := &w.Options
	switch f.name {
	case "entrypoint":
		if o.Entrypoint = l.command(f); o.Entrypoint == nil {
			l.fail(f.val, "leave entrypoint out for the image's", "%s: empty entrypoint", f.path)
		}
	case "user":
		if s, ok := l.text(f.val, f.path); ok && (s == "" || strings.ContainsAny(s, " \t\r\n")) {
			l.fail(f.val, `a user name or UID, optionally with a group: "app", "1000", "1000:1000"`, "%s: invalid user %q", f.path, s)
		} else if ok {
			o.User = s
		}
	case "working_dir":
		if s, ok := l.str(f.val, f.path); ok && !strings.HasPrefix(s, "/") {
			l.fail(f.val, "an absolute path inside the container, e.g. /srv", "%s: %q is not an absolute path", f.path, s)
		} else if ok {
			o.WorkingDir = s
		}
	case "hostname":
		s, ok := l.str(f.val, f.path)
		switch {
		case !ok:
		case !dnsNameRE.MatchString(s):
			l.fail(f.val, "a DNS name: letters, digits and '-', in labels joined by dots", "%s: invalid hostname %q", f.path, s)
		case len(s) > maxHostname:
			l.fail(f.val, fmt.Sprintf("at most %d characters, so that the slot suffix (-1, -2, ...) fits", maxHostname), "%s: hostname %q is too long", f.path, s)
		default:
			o.Hostname = s
		}
	case "cap_add", "cap_drop":
		caps := l.stringList(f, func(n *yaml.Node, path, s string) bool {
			if !capabilityRE.MatchString(s) {
				l.fail(n, "a capability name such as NET_ADMIN (CAP_ may be left out), or ALL", "%s: invalid capability %q", path, s)
				return false
			}
			return true
		})
		if f.name == "cap_add" {
			o.CapAdd = caps
		} else {
			o.CapDrop = caps
		}
	case "security_opt":
		o.SecurityOpt = l.stringList(f, l.securityOpt)
	case "privileged":
		o.Privileged, _ = l.boolean(f.val, f.path)
	case "init":
		o.Init, _ = l.boolean(f.val, f.path)
	case "shm_size":
		o.ShmSize = l.size(f)
	case "ulimits":
		o.Ulimits = l.ulimits(f)
	case "sysctls":
		o.Sysctls = l.sysctls(f)
	case "extra_hosts":
		o.ExtraHosts = l.extraHosts(f)
	case "dns":
		o.DNS = l.stringOrList(f, func(n *yaml.Node, path, s string) bool {
			if _, err := netip.ParseAddr(s); err != nil {
				l.fail(n, "an IP address of a DNS server, e.g. 1.1.1.1", "%s: %q is not an IP address", path, s)
				return false
			}
			return true
		})
	case "dns_search":
		o.DNSSearch = l.stringOrList(f, func(n *yaml.Node, path, s string) bool {
			if !dnsNameRE.MatchString(s) {
				l.fail(n, "a domain name, e.g. example.com", "%s: invalid search domain %q", path, s)
				return false
			}
			return true
		})
	case "logging":
		l.logging(f, o)
	case "expose":
		o.Expose = l.expose(f)
	case "network_mode":
		o.NetworkMode = l.networkMode(f)
	case "devices":
		for _, s := range l.stringList(f, func(n *yaml.Node, path, s string) bool {
			if _, p := device(s); p != nil {
				l.fail(n, p.hint, "%s: %s", path, p.msg)
				return false
			}
			return true
		}) {
			d, _ := device(s)
			o.Devices = append(o.Devices, d)
		}
	case "group_add":
		items, ok := l.list(f.val, f.path)
		for i := 0; ok && i < len(items); i++ {
			if s, ok := l.text(items[i], index(f.path, i)); ok && s != "" {
				o.GroupAdd = append(o.GroupAdd, s)
			} else if ok {
				l.fail(items[i], "a group name or GID", "%s: empty group", index(f.path, i))
			}
		}
	}
}

// stringList reads a list of non-empty strings, each checked by valid.
func (l *loader) stringList(f field, valid func(n *yaml.Node, path, s string) bool) []string {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var out []string
	for i, item := range items {
		path := index(f.path, i)
		s, ok := l.str(item, path)
		switch {
		case !ok:
		case s == "":
			l.fail(item, "", "%s: empty string", path)
		case valid(item, path, s):
			out = append(out, s)
		}
	}
	return nonEmpty(out)
}

// stringOrList reads one string or a list of them, each checked by valid.
func (l *loader) stringOrList(f field, valid func(n *yaml.Node, path, s string) bool) []string {
	if f.val.Kind == yaml.ScalarNode {
		if s, ok := l.str(f.val, f.path); ok && valid(f.val, f.path, s) {
			return []string{s}
		}
		return nil
	}
	return l.stringList(f, valid)
}

// securityOpt checks one security_opt: KEY, KEY=VALUE or KEY:VALUE. A
// seccomp profile is passed as is, and the engine takes its JSON, not a
// file name (docker run reads the file itself): only unconfined is taken.
func (l *loader) securityOpt(n *yaml.Node, path, s string) bool {
	key, value, _ := strings.Cut(s, "=")
	if k, v, found := strings.Cut(key, ":"); found {
		key, value = k, v
	}
	switch {
	case !slices.Contains(securityOptKeys, key):
		l.fail(n, "one of "+strings.Join(securityOptKeys, ", ")+", e.g. no-new-privileges:true", "%s: unknown security option %q", path, s)
	case key == "seccomp" && value != "unconfined":
		l.fail(n, "the engine takes a profile's JSON, not a file; rollcall passes seccomp=unconfined only, or leave it out for the default profile",
			"%s: seccomp profile %q", path, value)
	default:
		return true
	}
	return false
}

// size reads a positive size: bytes, or a string such as 64M.
func (l *loader) size(f field) int64 {
	const hint = "write bytes, or a size such as 64M or 1G"
	var b int64
	switch n := f.val; {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		if err := n.Decode(&b); err != nil {
			l.fail(n, "", "%s: %s is out of range", f.path, n.Value)
			return 0
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		var p *problem
		if b, p = parseSize(n.Value); p != nil {
			l.fail(n, p.hint, "%s: %s", f.path, p.msg)
			return 0
		}
	default:
		l.fail(n, hint, "%s: expected a size, got %s", f.path, describe(n))
		return 0
	}
	if b <= 0 {
		l.fail(f.val, hint+"; leave it out for the engine's default", "%s: size must be greater than 0", f.path)
		return 0
	}
	return b
}

// ulimits reads a mapping of limit name to one number (soft and hard
// alike) or {soft, hard}. -1 is unlimited.
func (l *loader) ulimits(f field) []spec.Ulimit {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	limit := func(n *yaml.Node, path string) (int64, bool) {
		v, ok := l.integer(n, path)
		if ok && v < -1 {
			l.fail(n, "-1 is unlimited", "%s: %d must not be negative", path, v)
			return 0, false
		}
		return int64(v), ok
	}
	var out []spec.Ulimit
	for _, g := range l.fields(f.val, f.path, nil) {
		if !slices.Contains(knownUlimits, g.name) {
			l.fail(g.key, unknownKeyHint(g.name, knownUlimits), "%s: unknown ulimit", g.path)
			continue
		}
		u := spec.Ulimit{Name: g.name}
		switch {
		case g.val.Kind == yaml.ScalarNode:
			v, ok := limit(g.val, g.path)
			if !ok {
				continue
			}
			u.Soft, u.Hard = v, v
		case g.val.Kind == yaml.MappingNode:
			var soft, hard bool
			for _, h := range l.fields(g.val, g.path, []string{"soft", "hard"}) {
				v, ok := limit(h.val, h.path)
				if h.name == "soft" {
					u.Soft, soft = v, ok
				} else {
					u.Hard, hard = v, ok
				}
			}
			if !soft || !hard {
				l.fail(g.val, "e.g. {soft: 1024, hard: 4096}, or one number for both", "%s: needs both soft and hard", g.path)
				continue
			}
			if u.Hard != -1 && (u.Soft == -1 || u.Soft > u.Hard) {
				l.fail(g.val, "the soft limit is at most the hard one", "%s: soft %d above hard %d", g.path, u.Soft, u.Hard)
				continue
			}
		default:
			l.fail(g.val, "e.g. 1024, or {soft: 1024, hard: 4096}", "%s: expected a number or a mapping, got %s", g.path, describe(g.val))
			continue
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b spec.Ulimit) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// pairs reads a mapping of scalars, or a list of "KEY<sep>VALUE" (any of
// seps, the first found), calling put with each.
func (l *loader) pairs(f field, seps string, example string, put func(node *yaml.Node, path, key, value string)) {
	switch f.val.Kind {
	case yaml.MappingNode:
		for _, g := range l.fields(f.val, f.path, nil) {
			if v, ok := l.text(g.val, g.path); ok {
				put(g.val, g.path, g.name, v)
			}
		}
	case yaml.SequenceNode:
		for i, item := range f.val.Content {
			item, path := deref(item), index(f.path, i)
			s, ok := l.str(item, path)
			if !ok {
				continue
			}
			i := strings.IndexAny(s, seps)
			if i < 0 {
				l.fail(item, "e.g. "+example, "%s: %q has no value", path, s)
				continue
			}
			put(item, path, s[:i], s[i+1:])
		}
	default:
		l.fail(f.val, "e.g. "+example, "%s: expected a mapping or a list, got %s", f.path, describe(f.val))
	}
}

// namespacedSysctl says a container may set the kernel parameter k: the
// engine's own rule (docker's opts.ValidateSysctl), the namespaced ones.
func namespacedSysctl(k string) bool {
	switch k {
	case "kernel.msgmax", "kernel.msgmnb", "kernel.msgmni", "kernel.sem", "kernel.shmall", "kernel.shmmax",
		"kernel.shmmni", "kernel.shm_rmid_forced":
		return true
	}
	return strings.HasPrefix(k, "net.") || strings.HasPrefix(k, "fs.mqueue.")
}

func (l *loader) sysctls(f field) map[string]string {
	out := map[string]string{}
	l.pairs(f, "=", "[net.core.somaxconn=1024], or {net.core.somaxconn: 1024}", func(n *yaml.Node, path, k, v string) {
		switch {
		case !sysctlRE.MatchString(k):
			l.fail(n, "a kernel parameter such as net.core.somaxconn", "%s: invalid sysctl %q", path, k)
		case v == "":
			l.fail(n, "", "%s: sysctl %s has no value", path, k)
		case !namespacedSysctl(k):
			l.fail(n, fmt.Sprintf("it is the host's, for every container: set it on the host (sysctl -w %s=%s) and drop it here", k, v),
				"%s: sysctl %s is not one a container can set (the engine takes net.*, fs.mqueue.* and the kernel's IPC ones)", path, k)
		default:
			if _, dup := out[k]; dup {
				l.fail(n, "", "%s: sysctl %s is set twice", path, k)
			}
			out[k] = v
		}
	})
	if len(out) == 0 {
		return nil
	}
	return out
}

// extraHosts reads extra_hosts: a list of "host:ip" or "host=ip", or a
// mapping of host to IP, as "host:ip" lines for /etc/hosts. host-gateway
// is the engine's word for the host's own address.
func (l *loader) extraHosts(f field) []string {
	var out []string
	l.pairs(f, "=:", `["db:10.0.0.5"], or {db: 10.0.0.5}`, func(n *yaml.Node, path, host, ip string) {
		ip = strings.TrimSuffix(strings.TrimPrefix(ip, "["), "]")
		switch {
		case !dnsNameRE.MatchString(host):
			l.fail(n, "a host name: letters, digits and '-', in labels joined by dots", "%s: invalid host name %q", path, host)
		case ip != "host-gateway" && !validIP(ip):
			l.fail(n, "an IP address, or host-gateway for the host's own", "%s: %q is not an IP address", path, ip)
		default:
			out = append(out, host+":"+ip)
		}
	})
	if f.val.Kind == yaml.MappingNode {
		slices.Sort(out)
	}
	return nonEmpty(out)
}

func validIP(s string) bool {
	_, err := netip.ParseAddr(s)
	return err == nil
}

func (l *loader) logging(f field, o *spec.Options) {
	if !l.mapping(f.val, f.path) {
		return
	}
	for _, g := range l.fields(f.val, f.path, loggingKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "driver":
			if s, ok := l.str(g.val, g.path); ok && s == "" {
				l.fail(g.val, "e.g. json-file, local, journald; leave it out for the engine's", "%s: empty driver", g.path)
			} else {
				o.LogDriver = s
			}
		case "options":
			if !l.mapping(g.val, g.path) {
				continue
			}
			opts := map[string]string{}
			for _, h := range l.fields(g.val, g.path, nil) {
				if v, ok := l.text(h.val, h.path); ok {
					opts[h.name] = v
				}
			}
			if len(opts) > 0 {
				o.LogOptions = opts
			}
		}
	}
}

// expose reads ports the container exposes without publishing: 80, "80"
// or "80/udp", as "80/tcp".
func (l *loader) expose(f field) []string {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var out []string
	for i, item := range items {
		path := index(f.path, i)
		s, ok := l.text(item, path)
		if !ok {
			continue
		}
		port, proto, _ := strings.Cut(s, "/")
		if proto == "" {
			proto = "tcp"
		}
		n, err := strconv.Atoi(port)
		switch {
		case !spec.IsDigits(port) || err != nil || n < 1 || n > 65535:
			l.fail(item, "a port number, optionally with /tcp, /udp or /sctp; list each port of a range", "%s: invalid port %q", path, s)
		case proto != "tcp" && proto != "udp" && proto != "sctp":
			l.fail(item, "one of tcp, udp, sctp", "%s: unknown protocol %q", path, proto)
		default:
			out = append(out, fmt.Sprintf("%d/%s", n, proto))
		}
	}
	return nonEmpty(out)
}

func (l *loader) networkMode(f field) string {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return ""
	}
	switch {
	case s == spec.NetworkHost || s == spec.NetworkNone:
		return s
	case strings.HasPrefix(s, "container:") || strings.HasPrefix(s, "service:"):
		l.fail(f.val, "put both workloads on one network and use its DNS", "%s: %q: rollcall does not share one container's network with another", f.path, s)
	case s == "bridge" || s == "default":
		l.fail(f.val, "leave network_mode out: a workload without networks is on the engine's default bridge", "%s: unsupported network mode %q", f.path, s)
	default:
		l.fail(f.val, "host or none; list the networks to join in networks", "%s: unsupported network mode %q", f.path, s)
	}
	return ""
}

// device reads "host[:container[:perms]]", absolute paths and
// permissions some of r, w and m, in the one form "host:container:perms"
// (the container path defaults to the host's, the permissions to rwm, as
// with docker run --device), so that the two spellings of one device have
// one hash.
func device(s string) (string, *problem) {
	const hint = "host[:container[:perms]], e.g. /dev/fuse or /dev/sda:/dev/xvda:r"
	parts := strings.Split(s, ":")
	if len(parts) > 3 {
		return "", &problem{fmt.Sprintf("invalid device %q", s), hint}
	}
	for i, p := range parts[:min(2, len(parts))] {
		if !strings.HasPrefix(p, "/") && !(i == 1 && p == "") {
			return "", &problem{fmt.Sprintf("device %q: %q is not an absolute path", s, p), hint}
		}
	}
	if len(parts) == 3 && (parts[2] == "" || strings.Trim(parts[2], "rwm") != "") {
		return "", &problem{fmt.Sprintf("device %q: permissions %q", s, parts[2]), "some of r (read), w (write) and m (mknod)"}
	}
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	if parts[1] == "" {
		parts[1] = parts[0]
	}
	if parts[2] == "" {
		parts[2] = "rwm"
	}
	return strings.Join(parts, ":"), nil
}

// checkOptions checks the options against the rest of the workload f
// read into w: host and none networking take no networks, no published
// ports (host binds host ports itself) and, with host, no hostname and
// no blue-green (old and new would bind the same host ports).
func (l *loader) checkOptions(f field, w *spec.Workload) {
	mode := w.Options.NetworkMode
	if mode == "" {
		return
	}
	at := keysOf(f)
	if len(w.Networks) > 0 {
		l.fail(at["networks"].key, "drop networks, or network_mode", "%s: network_mode %s joins no network", at["networks"].path, mode)
	}
	if len(w.Ports) > 0 {
		hint := "with network_mode: host the container binds host ports itself"
		if mode == spec.NetworkNone {
			hint = "with network_mode: none the container has no network to publish on"
		}
		l.fail(at["ports"].key, hint, "%s: ports with network_mode %s", at["ports"].path, mode)
	}
	if mode == spec.NetworkHost && w.Options.Hostname != "" {
		l.fail(at["hostname"].key, "drop hostname: with network_mode: host the container has the host's", "%s: hostname with network_mode host", at["hostname"].path)
	}
	if mode == spec.NetworkHost && w.Update.Strategy == spec.StrategyBlueGreen {
		l.fail(at["network_mode"].val, "blue-green runs old and new containers side by side, which would bind the same host ports; use rolling",
			"%s: network_mode host with strategy blue-green", at["network_mode"].path)
	}
}
