package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

const stopAllHint = "to stop everything, write `workloads: {}` explicitly"

// Load reads the desired-state file at path and parses it as Parse does.
// A file that cannot be read (ReadFile) gives a wrapped error; every other
// failure is an ErrorList.
func Load(path string) (*spec.Desired, error) {
	data, err := spec.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read desired state: %w", err)
	}
	return Parse(path, data)
}

// Parse reads one desired-state document (DESIGN §3). name is the file it
// came from, used in messages and as Desired.Source.
//
// On failure the error is an ErrorList holding every problem found, sorted
// by position; each entry has the file, a 1-based line and column, and
// usually a hint. The rules:
//
//   - The document is one YAML mapping with the keys prefix, workloads,
//     proxy, hosts, fleet, notify, registry_poll, volumes and engine.
//     An empty document, or one without workloads, is an error: stopping
//     everything takes an explicit `workloads: {}`.
//   - Unknown keys are errors at every level, with the closest valid key
//     suggested. Duplicate keys are errors. Anchors, aliases and merge keys
//     (<<) work; keys written out win over merged ones.
//   - A key whose value is null counts as absent and gets its default
//     (image has none and is required).
//   - prefix: lowercase letters, digits, '-' and '.', starting with a letter
//     and ending with a letter or digit, at most 40 characters.
//   - Workload names are DNS labels: 1-63 of a-z, 0-9 and '-', starting and
//     ending with a letter or digit.
//   - Types are checked: replicas is an integer >= 0, version any scalar
//     kept as written, command a list or a string split on whitespace,
//     environment and labels a mapping or a list of KEY=VALUE (labels may
//     not use the document's prefix followed by '.', which rollcall owns).
//   - Durations use Go syntax (1s, 500ms, 1m30s) and are never negative; a
//     bare number is an error. health_deadline must be > 0; healthcheck
//     durations are 0 or at least 1ms.
//   - ports use "[[HOST_IP:]HOST_PORT:]CONTAINER_PORT[/tcp|udp]"; the host IP
//     defaults to 127.0.0.1 and an empty host port is ephemeral. A fixed host
//     port is an error with replicas > 1 or strategy blue-green, and when
//     another port of the document already holds it.
//   - healthcheck.test starts with CMD, CMD-SHELL or NONE; CMD-SHELL (and the
//     string form, which means CMD-SHELL) adds a warning, since scratch
//     images have no shell. disable: true means test ["NONE"].
//   - resources.cpus is a number >= 0.01; resources.memory is bytes or a size
//     such as 64M (b, k, m, g; binary multiples as docker reads them), at
//     least 6M.
//   - proxy.caddy_admin is a unix socket's absolute, clean path
//     (unix:///run/rollcall-caddy/admin.sock, at most 107 bytes) or an
//     http or https URL with a host and no query (proxy.go).
//   - stop_signal is SIGNAME or a number; restart is "no", always,
//     unless-stopped, on-failure or on-failure:N; update.parallelism >= 1.
//   - update.canary (canary.go) has steps of {share: "N%", for} with
//     shares that never decrease, and an analysis with at least one
//     threshold; it needs proxy.caddy_admin.
//   - hosts (hosts.go) maps host names (DNS labels) to exactly one of
//     endpoint (ssh://[user@]host[:port][/socket], tcp://host:port,
//     unix:///path) and context (a docker context's name), with tls (a
//     certificate directory, or false for plain TCP: a tcp endpoint needs
//     one, nothing else takes it) and replicas (workload -> count >= 0,
//     naming a workload of the document). An empty hosts is an error, and
//     so is one endpoint or context named by two hosts.
//   - fleet needs hosts: canary names hosts (default: the first), batch is
//     a count >= 1 or a share "1%".."100%" (default 1), wait a duration,
//     on_failure pause, rollback_all or continue, and max_failed_hosts
//     (>= 1, default 1) goes with continue only.
//   - notify (notify.go) lists webhooks, each an http or https URL (with
//     a host, no user, no fragment) or {url, token_file}; a URL listed
//     twice is an error.
//   - engine is docker (the default) or swarm. What a swarm honours,
//     maps, ignores or refuses is the table SwarmRules (swarm_keys.go):
//     hosts and proxy are refused, and so is each workload key or value
//     a Swarm service cannot have (privileged, pre_stop, update.canary,
//     pull: never, ...); placement, endpoint_mode, restart_policy,
//     service_labels, resources.reservations and update.max_failure_ratio
//     are a swarm's only, refused without it.
//
// Every default (spec.go) is filled in on success, and findings that are
// allowed but doubtful are returned in Desired.Warnings.
func Parse(name string, data []byte) (*spec.Desired, error) {
	if name == "" {
		name = "<input>"
	}
	l := &loader{file: name, prefix: spec.DefaultPrefix, engine: spec.EngineDocker}
	root, serr := l.decode(data)
	if serr != nil {
		return nil, spec.ErrorList{serr}
	}
	d := l.document(root)
	if len(l.errs) > 0 {
		return nil, l.errs.Sorted()
	}
	d.Warnings = spec.ErrorList(l.warns).Sorted()
	return d, nil
}

// decode parses the YAML text into a node tree; nil for an empty document.
func (l *loader) decode(data []byte) (root *yaml.Node, e *spec.Error) {
	defer func() {
		// The YAML library has panicked on malformed input in the past;
		// a bad file must never take the console down.
		if r := recover(); r != nil {
			root, e = nil, &spec.Error{File: l.file, Line: 1, Col: 1, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, syntaxError(l.file, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, l.at(&next, "keep one desired state per file", "a second YAML document; the file must hold exactly one")
	case !errors.Is(err, io.EOF):
		return nil, syntaxError(l.file, data, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	if e := aliasBudget(l.file, &doc); e != nil {
		return nil, e
	}
	return deref(doc.Content[0]), nil
}

var (
	prefixRE   = regexp.MustCompile(`^[a-z]([a-z0-9.-]{0,38}[a-z0-9])?$`)
	dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

func (l *loader) document(root *yaml.Node) *spec.Desired {
	d := &spec.Desired{Source: l.file, Prefix: spec.DefaultPrefix, Workloads: map[string]*spec.Workload{}, Engine: l.engine}
	if isNull(root) {
		l.fail(root, stopAllHint, "empty document: expected a mapping with a workloads key")
		return d
	}
	if root.Kind != yaml.MappingNode {
		l.fail(root, "", "expected a mapping with a workloads key, got %s", describe(root))
		return d
	}
	var workloads, hosts, fleet, volumes *field
	top := l.fields(root, "", []string{"prefix", "workloads", "proxy", "hosts", "fleet", "notify", "registry_poll", "volumes", "engine"})
	for _, f := range top {
		if f.name == "engine" && !isNull(f.val) {
			l.readEngine(f)
		}
	}
	d.Engine = l.engine
	for _, f := range top {
		if f.name == "volumes" {
			volumes = &f
		}
		if !l.swarmKey(f, f.name, true) {
			continue
		}
		switch f.name {
		case "registry_poll":
			d.RegistryPoll = l.registryPoll(f)
		case "notify":
			if !isNull(f.val) {
				d.Notify = l.readNotify(f)
			}
		case "hosts":
			if !isNull(f.val) {
				hosts = &f
			}
		case "fleet":
			fleet = &f
		case "prefix":
			if !isNull(f.val) {
				l.readPrefix(f)
			}
		case "proxy":
			if !isNull(f.val) {
				d.Proxy = l.readProxy(f)
			}
		case "workloads":
			workloads = &f
		}
	}
	d.Prefix = l.prefix
	if volumes != nil {
		// Read after the prefix, which names them.
		d.Volumes = l.readVolumes(*volumes)
	}
	switch {
	case workloads == nil:
		l.fail(root, stopAllHint, "no workloads key")
	case isNull(workloads.val):
		l.fail(workloads.key, stopAllHint, "workloads: expected a mapping, got null")
	case l.mapping(workloads.val, "workloads"):
		var ports []binding
		fields := l.fields(workloads.val, "", nil)
		if len(fields) > spec.MaxWorkloads {
			l.fail(workloads.key, fmt.Sprintf("at most %d workloads in one document; split them into several prefixes and files", spec.MaxWorkloads),
				"workloads: %d workloads, more than %d", len(fields), spec.MaxWorkloads)
			break
		}
		for _, f := range fields {
			if !dnsLabelRE.MatchString(f.name) {
				l.fail(f.key, "a workload name is a DNS label: 1-63 of a-z, 0-9 and '-', starting and ending with a letter or digit",
					"%s: invalid workload name %q", f.path, f.name)
			}
			if w, wports := l.workload(f); w != nil {
				d.Workloads[f.name] = w
				ports = append(ports, wports...)
			}
		}
		l.checkHostPorts(ports)
		l.checkDepends(d)
	}
	// A canary needs the proxy, which may come after the workloads.
	l.checkCanaryProxy(d)
	// Hosts name workloads in their overrides, and fleet names hosts.
	if hosts != nil {
		l.readHosts(*hosts, d)
	}
	l.checkContainers(d, workloads)
	l.checkMounts(d)
	l.checkBindSources(d)
	l.readFleet(fleet, d)
	return d
}

// checkContainers bounds the replicas of every workload together on one
// engine: the document's own without hosts:, each host's (with its
// overrides) with them.
func (l *loader) checkContainers(d *spec.Desired, workloads *field) {
	const hint = "at most 10000 containers on one engine (see README: bounds); spread them over more engines under hosts:"
	if len(d.Hosts) == 0 {
		if n := totalReplicas(d, nil); n > spec.MaxContainersPerEngine && workloads != nil {
			l.fail(workloads.key, hint, "workloads: %d replicas in all, more than %d on one engine", n, spec.MaxContainersPerEngine)
		}
		return
	}
	for _, h := range d.Hosts {
		if n := totalReplicas(d, h); n > spec.MaxContainersPerEngine {
			l.errs = append(l.errs, &spec.Error{File: l.file, Line: max(h.Line, 1), Col: max(h.Col, 1),
				Msg: fmt.Sprintf("hosts.%s: %d replicas in all, more than %d on one engine", h.Name, n, spec.MaxContainersPerEngine), Hint: hint})
		}
	}
}

// totalReplicas is the replicas of every workload of d together, on host
// h (its overrides) or, h nil, as the workloads say.
func totalReplicas(d *spec.Desired, h *spec.Host) int {
	n := 0
	for name, w := range d.Workloads {
		r := w.Replicas
		if h != nil {
			if o, ok := h.Replicas[name]; ok {
				r = o
			}
		}
		n += r
	}
	return n
}

// readEngine reads engine: docker or swarm.
func (l *loader) readEngine(f field) {
	if s, ok := l.oneOf(f.val, f.path, string(spec.EngineDocker), string(spec.EngineSwarm)); ok {
		l.engine = spec.Engine(s)
	}
}

func (l *loader) readPrefix(f field) {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return
	}
	if !prefixRE.MatchString(s) {
		l.fail(f.val, "lowercase letters, digits, '-' and '.', starting with a letter and ending with a letter or digit, at most 40 characters",
			"prefix: invalid label prefix %q", s)
		return
	}
	l.prefix = s
}
