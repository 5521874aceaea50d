package load

import (
	"fmt"
	"regexp"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// This file reads what a workload has only as a Swarm service (DESIGN
// §13) and checks a workload against the rules of a swarm (SwarmRules,
// swarm_keys.go), in rollcall.yaml's keys, which a compose file deployed to
// a swarm maps onto.

var (
	placementKeys     = []string{"constraints", "preferences", "max_replicas_per_node"}
	preferenceKeys    = []string{"spread"}
	restartPolicyKeys = []string{"condition", "delay", "max_attempts", "window"}
	// constraintRE is Swarm's form of a constraint: a key, == or !=, and a
	// value (swarmkit's constraint.Parse).
	constraintRE = regexp.MustCompile(`^\s*[A-Za-z0-9_.-]+\s*(==|!=)\s*\S.*$`)
	// spreadRE is a spread descriptor: node.labels.<label>, or
	// engine.labels.<label>, which Swarm spreads over.
	spreadRE = regexp.MustCompile(`^(node|engine)\.labels\.[A-Za-z0-9_.-]+$`)
)

const (
	constraintHint = "Swarm's form: a node attribute, == or !=, and a value, e.g. node.role == worker, node.labels.zone != b"
	// maxSwarmHostname leaves room for the slot suffix ("-1000", Swarm's
	// slots counting from 1) within the 63 characters of a hostname.
	maxSwarmHostname = maxHostname - 1
)

// placement reads placement: {constraints, preferences, max_replicas_per_node}.
func (l *loader) placement(f field) spec.Placement {
	var p spec.Placement
	if !l.mapping(f.val, f.path) {
		return p
	}
	for _, g := range l.fields(f.val, f.path, placementKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "constraints":
			p.Constraints = l.stringList(g, func(n *yaml.Node, path, s string) bool {
				if !constraintRE.MatchString(s) {
					l.fail(n, constraintHint, "%s: invalid constraint %q", path, s)
					return false
				}
				return true
			})
		case "preferences":
			p.Preferences = l.preferences(g)
		case "max_replicas_per_node":
			if n, ok := l.count(g, spec.MaxReplicas, "0 (or leaving it out) places any number of tasks on a node", replicasHint); ok {
				p.MaxReplicas = n
			}
		}
	}
	return p
}

// preferences reads placement.preferences: a list of {spread: DESCRIPTOR}.
func (l *loader) preferences(f field) []string {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var out []string
	for i, item := range items {
		path := index(f.path, i)
		if item.Kind != yaml.MappingNode {
			l.fail(item, "e.g. {spread: node.labels.zone}", "%s: expected a mapping, got %s", path, describe(item))
			continue
		}
		spread := ""
		for _, g := range l.fields(item, path, preferenceKeys) {
			if s, ok := l.str(g.val, g.path); ok && !spreadRE.MatchString(s) {
				l.fail(g.val, "a node label to spread the tasks over: node.labels.<label>", "%s: invalid spread %q", g.path, s)
			} else if ok {
				spread = s
			}
		}
		if spread != "" {
			out = append(out, spread)
		} else if len(item.Content) == 0 {
			l.fail(item, "e.g. {spread: node.labels.zone}", "%s: empty preference", path)
		}
	}
	return nonEmpty(out)
}

// restartPolicy reads restart_policy: {condition, delay, max_attempts,
// window}, with Swarm's defaults for what it leaves out.
func (l *loader) restartPolicy(f field) spec.SwarmRestart {
	r := spec.SwarmRestart{Condition: spec.RestartAny, Delay: spec.DefaultSwarmRestartDelay}
	if !l.mapping(f.val, f.path) {
		return r
	}
	for _, g := range l.fields(f.val, f.path, restartPolicyKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "condition":
			if s, ok := l.oneOf(g.val, g.path, string(spec.RestartNone), string(spec.RestartOnFailure), string(spec.RestartAny)); ok {
				r.Condition = spec.RestartCondition(s)
			}
		case "delay":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				r.Delay = d
			}
		case "window":
			if d, ok := l.boundedDuration(g.val, g.path); ok {
				r.Window = d
			}
		case "max_attempts":
			if n, ok := l.count(g, spec.MaxHealthRetries, "0 (or leaving it out) restarts without a limit", "a few restarts tell a crash loop; 0 restarts without a limit"); ok {
				r.MaxAttempts = n
			}
		}
	}
	return r
}

// serviceLabels reads service_labels as labels are read; the stack label
// is rollcall's, as is the document's prefix.
func (l *loader) serviceLabels(f field) map[string]string {
	labels := l.keyValues(f, true)
	if _, ok := labels[docker.StackLabel]; ok {
		at := keysOf(f)[docker.StackLabel].key
		if at == nil {
			at = f.key
		}
		swarmStackLabel.refuse(l, at, join(f.path, docker.StackLabel))
		delete(labels, docker.StackLabel)
	}
	return labels
}

// failureRatio reads update.max_failure_ratio: a number within 0..1, as
// compose writes it.
func (l *loader) failureRatio(f field) float64 {
	const hint = "the share of new tasks that may fail, within 0..1: 0.1 lets one in ten fail"
	n := f.val
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
		l.fail(n, hint, "%s: expected a number, got %s", f.path, describe(n))
		return 0
	}
	var v float64
	if err := n.Decode(&v); err != nil || !(v >= 0 && v <= 1) {
		l.fail(n, hint, "%s: %s is not within 0..1", f.path, n.Value)
		return 0
	}
	return v
}

// keysOf is where each key of the mapping f is, read again without
// reporting anything twice.
func keysOf(f field) map[string]field {
	at := map[string]field{}
	if f.val == nil || f.val.Kind != yaml.MappingNode {
		return at
	}
	for _, g := range (&loader{}).fields(f.val, f.path, nil) {
		at[g.name] = g
	}
	return at
}

// checkSwarm checks the workload f read into w against the rules of a
// swarm that take more than one key, and fills in what a swarm derives:
// the restart policy from restart: when there is no restart_policy, and
// ports on every interface. It returns the ports as the swarm publishes
// them.
func (l *loader) checkSwarm(f field, w *spec.Workload, ports []binding, restartPolicy *field) []binding {
	at := keysOf(f)
	if restart, ok := at["restart"]; ok && restartPolicy != nil && !isNull(restart.val) {
		l.fail(restart.key, "restart_policy is Swarm's own policy, and restart: maps onto it: keep one of the two",
			"%s: restart with restart_policy", restart.path)
	}
	if restartPolicy == nil {
		w.Swarm.Restart = spec.SwarmRestartOf(w.Restart)
	}
	if len(w.Options.Hostname) > maxSwarmHostname {
		l.fail(at["hostname"].val, fmt.Sprintf("at most %d characters on a swarm, so that the slot suffix (-1 … -1000) fits", maxSwarmHostname),
			"%s: hostname %q is too long", at["hostname"].path, w.Options.Hostname)
	}
	var out []binding
	w.Ports = nil
	for _, b := range ports {
		if b.hostIP {
			swarmPortHostIP.refuse(l, b.node, b.path)
			continue
		}
		b.HostIP = ""
		out = append(out, b)
		w.Ports = append(w.Ports, b.Port)
	}
	if len(ports) > 0 && w.Swarm.EndpointMode == spec.EndpointDNSRR {
		swarmDNSRRPorts.refuse(l, at["endpoint_mode"].val, at["endpoint_mode"].path+": dnsrr with ports")
	}
	return out
}

// relativeBind warns of a bind source written relative to the file (or
// from ~): on a swarm, a path on each node that may run a task.
func (l *loader) relativeBind(n *yaml.Node, path, written string) {
	swarmRelativeBind.notice(l, n, path, fmt.Sprintf("bind source %q: on a swarm, a path on the node that runs the task, not only here", written))
}
