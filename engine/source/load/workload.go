package load

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// The keys of a workload and of its nested mappings, as the document
// writes them.
var (
	workloadKeys = []string{"image", "version", "replicas", "command", "environment", "labels", "ports",
		"healthcheck", "resources", "stop_signal", "stop_grace_period", "restart", "networks", "pre_stop", "pull", "update",
		"volumes", "tmpfs", "read_only", "depends_on", "platform",
		"placement", "endpoint_mode", "restart_policy", "service_labels"}
	healthcheckKeys = []string{"test", "interval", "timeout", "retries", "start_period", "disable"}
	resourcesKeys   = []string{"cpus", "memory", "reservations"}
	limitKeys       = []string{"cpus", "memory"}
	updateKeys      = []string{"strategy", "parallelism", "order", "min_ready", "health_deadline", "failure_action", "drain", "delay", "rollback_parallelism", "canary", "max_failure_ratio"}
	networkKeys     = []string{"aliases"}
)

// workload reads one workload with its defaults filled in, and its ports for
// the document-wide host port check. It returns nil when the value is not a
// mapping at all.
func (l *loader) workload(f field) (*spec.Workload, []binding) {
	if isNull(f.val) || f.val.Kind != yaml.MappingNode {
		l.fail(f.val, "a workload is a mapping with at least `image:`", "%s: expected a mapping, got %s", f.name, describe(f.val))
		return nil, nil
	}
	w := &spec.Workload{
		Name:       f.name,
		Replicas:   1,
		StopSignal: spec.DefaultStopSignal,
		StopGrace:  spec.DefaultStopGrace,
		Restart:    spec.DefaultRestart,
		Pull:       spec.PullMissing,
		Update: spec.UpdatePolicy{
			Strategy:       spec.StrategyRolling,
			Parallelism:    spec.DefaultParallelism,
			Order:          spec.OrderStartFirst,
			MinReady:       spec.DefaultMinReady,
			HealthDeadline: spec.DefaultHealthDeadline,
			FailureAction:  spec.FailurePause,
		},
	}
	if l.engine == spec.EngineSwarm {
		w.Swarm = &spec.SwarmService{EndpointMode: spec.EndpointVIP}
	}
	var ports []binding
	var restartPolicy *field
	imageKey := false
	for _, g := range l.fields(f.val, f.name, workloadKeys) {
		if g.name == "image" {
			imageKey = true
		} else if isNull(g.val) || !l.swarmKey(g, g.name, false) {
			continue
		}
		switch g.name {
		case "image":
			w.Image = l.image(g)
		case "version":
			w.Version, _ = l.text(g.val, g.path)
		case "replicas":
			if n, ok := l.count(g, spec.MaxReplicas, "0 keeps the workload defined but runs nothing", replicasHint); ok {
				w.Replicas = n
			}
		case "command":
			w.Command = l.command(g)
		case "environment":
			w.Environment = l.keyValues(g, false)
		case "labels":
			w.Labels = l.keyValues(g, true)
		case "ports":
			ports = l.ports(f.name, g.val, g.path)
			for _, b := range ports {
				w.Ports = append(w.Ports, b.Port)
			}
		case "healthcheck":
			w.Healthcheck = l.healthcheck(g)
		case "resources":
			w.Resources = l.resources(g, w.Swarm)
		case "stop_signal":
			if s, ok := l.signal(g.val, g.path); ok {
				w.StopSignal = s
			}
		case "stop_grace_period":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				w.StopGrace = d
			}
		case "restart":
			if s, ok := l.restart(g.val, g.path); ok {
				w.Restart = s
			}
		case "networks":
			w.Networks, w.Aliases = l.networks(g, f.name)
		case "pre_stop":
			w.PreStop = l.preStop(g)
		case "pull":
			if p, ok := l.oneOf(g.val, g.path, spec.PullMissing, spec.PullAlways, spec.PullNever); ok && p == spec.PullNever && w.Swarm != nil {
				swarmPullNever.refuse(l, g.val, g.path+": never")
			} else if ok {
				w.Pull = p
			}
		case "update":
			l.update(g, &w.Update)
		case "placement":
			w.Swarm.Placement = l.placement(g) // swarm.go
		case "endpoint_mode":
			if m, ok := l.oneOf(g.val, g.path, string(spec.EndpointVIP), string(spec.EndpointDNSRR)); ok {
				w.Swarm.EndpointMode = spec.EndpointMode(m)
			}
		case "restart_policy":
			restartPolicy = &g
			w.Swarm.Restart = l.restartPolicy(g) // swarm.go
		case "service_labels":
			w.Swarm.Labels = l.serviceLabels(g) // swarm.go
		case "volumes":
			w.Mounts = append(w.Mounts, l.mounts(g)...)
		case "tmpfs":
			w.Mounts = append(w.Mounts, l.tmpfs(g)...)
		case "read_only":
			w.ReadOnly, _ = l.boolean(g.val, g.path)
		case "platform":
			w.Platform = l.platform(g)
		case "depends_on":
			w.DependsOn = l.dependsOn(g, f.name) // depends.go
		case "entrypoint", "user", "working_dir", "hostname", "cap_add", "cap_drop", "security_opt", "privileged", "init", "shm_size",
			"ulimits", "sysctls", "extra_hosts", "dns", "dns_search", "logging", "expose", "network_mode", "devices", "group_add":
			l.option(w, g) // options.go
		}
	}
	l.checkOptions(f, w)
	if w.Swarm != nil {
		ports = l.checkSwarm(f, w, ports, restartPolicy) // swarm.go
	}
	if !imageKey {
		l.fail(f.key, "e.g. `image: nginx:1.27`", "%s: image is required", f.name)
	}
	for _, b := range ports {
		ephemeral := ephemeralHint(b.Port)
		switch {
		case b.HostPort == 0 || w.Swarm != nil:
		case w.Replicas > 1:
			l.fail(b.node, "replicas cannot share one host port; "+ephemeral,
				"%s: fixed host port %d with replicas %d", b.path, b.HostPort, w.Replicas)
		case w.Update.Strategy == spec.StrategyBlueGreen:
			l.fail(b.node, "blue-green runs old and new containers side by side; "+ephemeral,
				"%s: fixed host port %d with strategy blue-green", b.path, b.HostPort)
		}
	}
	return w, ports
}

func (l *loader) image(f field) string {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return ""
	}
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		l.fail(f.val, "e.g. `image: nginx:1.27`", "%s: invalid image reference %q", f.path, s)
		return ""
	}
	return s
}

// command reads a list of arguments, or one string split on whitespace
// (no shell quoting: use the list form for arguments with spaces).
func (l *loader) command(f field) []string {
	if f.val.Kind == yaml.ScalarNode {
		s, _ := l.str(f.val, f.path)
		return nonEmpty(strings.Fields(s))
	}
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var args []string
	for i, item := range items {
		if s, ok := l.text(item, index(f.path, i)); ok {
			args = append(args, s)
		}
	}
	return nonEmpty(args)
}

// keyValues reads environment or labels: a mapping of scalars, or a list of
// "KEY=VALUE". A label may have no value (it is then ""), as in compose; an
// environment variable may not, since compose would pass it through from
// the host and rollcall does not.
func (l *loader) keyValues(f field, labels bool) map[string]string {
	out := map[string]string{}
	noValue := "write KEY: \"\" for an empty value; rollcall passes nothing through from its own environment"
	put := func(node *yaml.Node, path, key, value string, hasValue bool) {
		switch {
		case strings.Contains(key, "="):
			l.fail(node, "", "%s: key %q contains '='", path, key)
		case strings.TrimSpace(key) == "":
			l.fail(node, "", "%s: empty key", path)
		case labels && strings.HasPrefix(key, l.prefix+"."):
			l.fail(node, fmt.Sprintf("labels starting with %q are rollcall's own; pick another prefix for yours", l.prefix+"."),
				"%s: label %q uses the reserved prefix", path, key)
		case !labels && !hasValue:
			l.fail(node, noValue, "%s: variable %s has no value", path, key)
		default:
			out[key] = value
		}
	}
	switch f.val.Kind {
	case yaml.MappingNode:
		for _, g := range l.fields(f.val, f.path, nil) {
			if isNull(g.val) {
				put(g.key, g.path, g.name, "", false)
			} else if v, ok := l.text(g.val, g.path); ok {
				put(g.key, g.path, g.name, v, true)
			}
		}
	case yaml.SequenceNode:
		seen := map[string]int{}
		for i, item := range f.val.Content {
			item, path := deref(item), index(f.path, i)
			s, ok := l.str(item, path)
			if !ok {
				continue
			}
			k, v, found := strings.Cut(s, "=")
			if first, dup := seen[k]; dup {
				l.fail(item, "", "%s: duplicate key %q (first at line %d)", path, k, first)
				continue
			}
			seen[k] = item.Line
			put(item, path, k, v, found)
		}
	default:
		l.fail(f.val, "", "%s: expected a mapping or a list of KEY=VALUE, got %s", f.path, describe(f.val))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// networks reads networks: a list of names, or compose's mapping of each
// name to null or {aliases: [...]}. A container joins every network with
// the workload name as a DNS alias; aliases adds more on that network. The
// engine's predefined networks (bridge, host, none) take no aliases.
func (l *loader) networks(f field, workload string) ([]string, map[string][]string) {
	var names []string
	var aliases map[string][]string
	add := func(node *yaml.Node, path, name string) bool {
		switch {
		case name == "":
			l.fail(node, "", "%s: empty network name", path)
		case slices.Contains(names, name):
			l.fail(node, "", "%s: network %q is listed twice", path, name)
		default:
			names = append(names, name)
			return true
		}
		return false
	}
	switch f.val.Kind {
	case yaml.SequenceNode:
		items, _ := l.list(f.val, f.path)
		for i, item := range items {
			if s, ok := l.str(item, index(f.path, i)); ok {
				add(item, index(f.path, i), s)
			}
		}
	case yaml.MappingNode:
		for _, g := range l.fields(f.val, f.path, nil) {
			if !add(g.key, g.path, g.name) || isNull(g.val) {
				continue
			}
			if a := l.networkAliases(g, workload); len(a) > 0 {
				if aliases == nil {
					aliases = map[string][]string{}
				}
				aliases[g.name] = a
			}
		}
	default:
		l.fail(f.val, "e.g. [front], or {front: {aliases: [www]}}", "%s: expected a list or a mapping, got %s", f.path, describe(f.val))
	}
	return names, aliases
}

// dnsNameRE is a DNS name: labels of letters, digits and '-', joined by dots.
var dnsNameRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)

// networkAliases reads one network's {aliases: [...]}.
func (l *loader) networkAliases(f field, workload string) []string {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	var out []string
	for _, g := range l.fields(f.val, f.path, networkKeys) {
		if isNull(g.val) {
			continue
		}
		items, ok := l.list(g.val, g.path)
		if !ok {
			continue
		}
		if len(items) > 0 && spec.PredefinedNetwork(f.name) {
			l.fail(g.key, "DNS aliases work on user-defined networks only (docker network create NAME)",
				"%s: the engine's %s network takes no aliases", g.path, f.name)
			continue
		}
		for i, item := range items {
			path := index(g.path, i)
			s, ok := l.str(item, path)
			switch {
			case !ok:
			case !dnsNameRE.MatchString(s) || len(s) > 253:
				l.fail(item, "a DNS name: letters, digits and '-', in labels joined by dots", "%s: invalid alias %q", path, s)
			case s == workload:
				l.warn(item, "leave it out", "%s: %q is already the alias of every container of the workload", path, s)
			case slices.Contains(out, s):
				l.fail(item, "", "%s: alias %q is listed twice", path, s)
			default:
				out = append(out, s)
			}
		}
	}
	return out
}

// preStop reads pre_stop, the command exec'd in a container before it is
// stopped: exec form as a healthcheck test (["CMD", "/app", "-drain"]), a
// plain list of arguments, or one string split on whitespace. ["CMD-SHELL",
// "..."] runs through /bin/sh, with a warning, since scratch images have no
// shell. The result is the argv to exec.
func (l *loader) preStop(f field) []string {
	args := l.command(f)
	if len(args) == 0 {
		if f.val.Kind == yaml.SequenceNode && len(f.val.Content) == 0 {
			l.fail(f.val, "leave pre_stop out for none", "%s: empty command", f.path)
		}
		return nil
	}
	switch args[0] {
	case "CMD":
		if len(args) < 2 {
			l.fail(f.val, `e.g. ["CMD", "/app", "-drain"]`, "%s: CMD needs a command after it", f.path)
			return nil
		}
		return args[1:]
	case "CMD-SHELL":
		if len(args) != 2 {
			l.fail(f.val, `e.g. ["CMD-SHELL", "kill -USR1 1"]`, "%s: CMD-SHELL takes exactly one shell command", f.path)
			return nil
		}
		l.warn(f.val, `scratch and distroless images have no shell; use ["CMD", "/binary", "args"]`, "%s: CMD-SHELL runs through /bin/sh", f.path)
		return []string{"/bin/sh", "-c", args[1]}
	case "NONE":
		l.fail(f.val, "leave pre_stop out for none", "%s: NONE is a healthcheck word", f.path)
		return nil
	}
	return args
}

func (l *loader) healthcheck(f field) *spec.Healthcheck {
	if !l.mapping(f.val, f.path) {
		return nil
	}
	hc := &spec.Healthcheck{}
	var disable *yaml.Node
	for _, g := range l.fields(f.val, f.path, healthcheckKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "test":
			hc.Test = l.healthTest(g)
		case "interval":
			hc.Interval = l.probeDuration(g)
		case "timeout":
			hc.Timeout = l.probeDuration(g)
		case "start_period":
			hc.StartPeriod = l.probeDuration(g)
		case "retries":
			if n, ok := l.count(g, spec.MaxHealthRetries, "", "the failed probes in a row that make a container unhealthy; a few are enough"); ok {
				hc.Retries = n
			}
		case "disable":
			if b, ok := l.boolean(g.val, g.path); ok && b {
				disable = g.key
			}
		}
	}
	if disable != nil {
		if len(hc.Test) > 0 && hc.Test[0] != "NONE" {
			l.fail(disable, "drop either disable or test", "%s: disable: true contradicts test %q", f.path, hc.Test[0])
		}
		return &spec.Healthcheck{Test: []string{"NONE"}}
	}
	return hc
}

// healthTest reads healthcheck.test: a list starting with CMD, CMD-SHELL or
// NONE, or a string, which compose runs as CMD-SHELL.
func (l *loader) healthTest(f field) []string {
	shellHint := `scratch and distroless images have no shell; use ["CMD", "/binary", "args"] to run the binary directly`
	if f.val.Kind == yaml.ScalarNode {
		s, ok := l.str(f.val, f.path)
		if !ok || strings.TrimSpace(s) == "" {
			if ok {
				l.fail(f.val, "", "%s: empty test", f.path)
			}
			return nil
		}
		l.warn(f.val, shellHint, "%s: a string test runs through /bin/sh (CMD-SHELL)", f.path)
		return []string{"CMD-SHELL", s}
	}
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var test []string
	for i, item := range items {
		if s, ok := l.text(item, index(f.path, i)); ok {
			test = append(test, s)
		}
	}
	if len(test) < len(items) {
		return nil
	}
	if len(test) == 0 {
		l.fail(f.val, `e.g. ["CMD", "/app", "-health"], or ["NONE"] to turn the image's check off`, "%s: empty test", f.path)
		return nil
	}
	switch test[0] {
	case "CMD":
		if len(test) < 2 {
			l.fail(f.val, `e.g. ["CMD", "/app", "-health"]`, "%s: CMD needs a command after it", f.path)
			return nil
		}
	case "CMD-SHELL":
		if len(test) != 2 {
			l.fail(f.val, `e.g. ["CMD-SHELL", "curl -f http://localhost/ || exit 1"]`, "%s: CMD-SHELL takes exactly one shell command", f.path)
			return nil
		}
		l.warn(items[0], shellHint, "%s: CMD-SHELL runs the test through /bin/sh", f.path)
	case "NONE":
		if len(test) != 1 {
			l.fail(f.val, "", "%s: NONE takes no arguments", f.path)
			return nil
		}
	default:
		l.fail(items[0], `start the list with "CMD", "CMD-SHELL" or "NONE"`, "%s: unknown test type %q", f.path, test[0])
		return nil
	}
	return test
}

// probeDuration reads a healthcheck duration: 0 (the engine's default) or
// at least 1ms, the engine's minimum.
func (l *loader) probeDuration(f field) time.Duration {
	d, ok := l.boundedDuration(f.val, f.path)
	if ok && d != 0 && d < time.Millisecond {
		l.fail(f.val, "the engine's minimum is 1ms", "%s: %s is too short", f.path, d)
		return 0
	}
	return d
}

// resources reads the limits and, on a swarm (sw set), the reservations
// into sw.
func (l *loader) resources(f field, sw *spec.SwarmService) spec.Resources {
	return l.limits(f, resourcesKeys, func(g field) {
		// The rule of reservations.cpus speaks for the whole key: a
		// swarm's only.
		if l.swarmKey(g, swarmReservationCPUs.Key, false) {
			sw.Reservations = l.limits(g, limitKeys, nil)
		}
	})
}

// limits reads cpus and memory, and hands the key reservations (when keys
// has it) to reservations.
func (l *loader) limits(f field, keys []string, reservations func(field)) spec.Resources {
	var r spec.Resources
	if !l.mapping(f.val, f.path) {
		return r
	}
	for _, g := range l.fields(f.val, f.path, keys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "cpus":
			r.NanoCPUs, _ = l.cpus(g.val, g.path)
		case "memory":
			r.Memory, _ = l.memory(g.val, g.path)
		case "reservations":
			reservations(g)
		}
	}
	return r
}

func (l *loader) update(f field, u *spec.UpdatePolicy) {
	if !l.mapping(f.val, f.path) {
		return
	}
	for _, g := range l.fields(f.val, f.path, updateKeys) {
		if isNull(g.val) || !l.swarmKey(g, "update."+g.name, false) {
			continue
		}
		switch g.name {
		case "strategy":
			if s, ok := l.oneOf(g.val, g.path, spec.StrategyRolling, spec.StrategyBlueGreen); ok && s == spec.StrategyBlueGreen && l.engine == spec.EngineSwarm {
				swarmBlueGreen.refuse(l, g.val, g.path+": blue-green")
			} else if ok {
				u.Strategy = s
			}
		case "parallelism":
			if n, ok := l.integer(g.val, g.path); ok && n < 1 {
				l.fail(g.val, "parallelism is how many slots may roll at once; 1 rolls one slot at a time", "%s: %d must be at least 1", g.path, n)
			} else if ok && l.atMost(g.val, g.path, n, spec.MaxReplicas, "at most the replicas, which are at most 1000") {
				u.Parallelism = n
			}
		case "order":
			if s, ok := l.oneOf(g.val, g.path, spec.OrderStartFirst, spec.OrderStopFirst); ok {
				u.Order, u.OrderSet = s, true
			}
		case "min_ready":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				u.MinReady = d
			}
		case "health_deadline":
			if d, ok := l.boundedDuration(g.val, g.path); ok && d == 0 {
				l.fail(g.val, "e.g. 60s", "%s: must be greater than 0", g.path)
			} else if ok {
				u.HealthDeadline = d
			}
		case "failure_action":
			if s, ok := l.oneOf(g.val, g.path, spec.FailurePause, spec.FailureRollback, spec.FailureContinue); ok {
				u.FailureAction = s
			}
		case "max_failure_ratio":
			u.MaxFailureRatio = l.failureRatio(g) // swarm.go
		case "drain":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				u.Drain = d
			}
		case "delay":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				u.Delay = d
			}
		case "rollback_parallelism":
			if n, ok := l.count(g, spec.MaxReplicas, "0 takes every slot back at once", "at most the replicas, which are at most 1000"); ok {
				u.RollbackParallelism = n
			}
		case "canary":
			u.Canary = l.updateCanary(g)
		}
	}
}

func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
