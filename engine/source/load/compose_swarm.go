package load

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	composetypes "github.com/compose-spec/compose-go/v2/types"
	yaml "go.yaml.in/yaml/v3"
)

// This file maps the deploy keys a compose file deployed to a swarm
// (x-rollcall: {engine: swarm}) has beyond a plain engine's onto
// rollcall.yaml's keys, each placed where the file has it, for the loader
// to judge by the rules of a swarm (SwarmRules) as it judges rollcall.yaml.

// rawEngine is x-rollcall.engine as the file writes it; "" when it writes
// none.
func (c *composeMap) rawEngine() string {
	_, v := c.raw.get("x-rollcall", "engine")
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// swarmDeploy maps a service's deploy keys that only a swarm has. add is
// service's.
func (c *composeMap) swarmDeploy(name string, d *composetypes.DeployConfig, add func(field string, val *yaml.Node, compose ...string)) {
	if d == nil {
		return
	}
	at := func(keys ...string) (k, v *yaml.Node) {
		return c.raw.find(append([]string{"services", name, "deploy"}, keys...)...)
	}
	// mapping is a mapping of fields, each placed at deploy.<under>.<key>.
	mapping := func(under string) (*yaml.Node, func(field, key string, val *yaml.Node)) {
		_, uv := at(under)
		out := placeAt(&yaml.Node{Kind: yaml.MappingNode}, uv)
		return out, func(field, key string, val *yaml.Node) {
			k, v := at(under, key)
			out.Content = append(out.Content, placeAt(strNode(field), k, uv), placeAt(val, v, k, uv))
		}
	}
	switch d.Mode {
	case "", "replicated":
	default:
		k, v := at("mode")
		swarmModeGlobal.refuse(c.l, placeAt(&yaml.Node{}, v, k), fmt.Sprintf("services.%s.deploy.mode: %s", name, d.Mode))
	}
	if d.EndpointMode != "" {
		add("endpoint_mode", strNode(d.EndpointMode), "deploy", "endpoint_mode")
	}
	if len(d.Labels) > 0 {
		labels := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
			lk, lv := at("labels", k)
			labels.Content = append(labels.Content, placeAt(strNode(k), lk, lv), placeAt(strNode(d.Labels[k]), lv, lk))
		}
		add("service_labels", labels, "deploy", "labels")
	}
	if p := d.Placement; len(p.Constraints) > 0 || len(p.Preferences) > 0 || p.MaxReplicas > 0 {
		out, field := mapping("placement")
		if len(p.Constraints) > 0 {
			_, raw := at("placement", "constraints")
			field("constraints", "constraints", listNode(p.Constraints, raw))
		}
		if len(p.Preferences) > 0 {
			_, raw := at("placement", "preferences")
			prefs := placeAt(&yaml.Node{Kind: yaml.SequenceNode}, raw)
			for i, pref := range p.Preferences {
				_, item := at("placement", "preferences", fmt.Sprint(i))
				sk, sv := at("placement", "preferences", fmt.Sprint(i), "spread")
				prefs.Content = append(prefs.Content, placeAt(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
					placeAt(strNode("spread"), sk, item, raw), placeAt(strNode(pref.Spread), sv, item, raw)}}, item, raw))
			}
			field("preferences", "preferences", prefs)
		}
		if p.MaxReplicas > 0 {
			field("max_replicas_per_node", "max_replicas_per_node", intNode(int64(min(p.MaxReplicas, 1<<31))))
		}
		add("placement", out, "deploy", "placement")
	}
	if r := d.RestartPolicy; r != nil {
		out, field := mapping("restart_policy")
		if r.Condition != "" {
			field("condition", "condition", strNode(r.Condition))
		}
		if r.Delay != nil {
			field("delay", "delay", durationNode(*r.Delay))
		}
		if r.MaxAttempts != nil {
			field("max_attempts", "max_attempts", intNode(int64(min(*r.MaxAttempts, 1<<31))))
		}
		if r.Window != nil {
			field("window", "window", durationNode(*r.Window))
		}
		add("restart_policy", out, "deploy", "restart_policy")
	}
}

// swarmReservations maps deploy.resources.reservations onto
// resources.reservations, on a swarm; nil for none.
func (c *composeMap) swarmReservations(service string, d *composetypes.DeployConfig) *yaml.Node {
	if !c.swarm || d == nil || d.Resources.Reservations == nil {
		return nil
	}
	r := d.Resources.Reservations
	path := []string{"services", service, "deploy", "resources", "reservations"}
	_, at := c.raw.find(path...)
	out := placeAt(&yaml.Node{Kind: yaml.MappingNode}, at)
	field := func(name string, val *yaml.Node) {
		k, v := c.raw.find(append(slices.Clone(path), name)...)
		out.Content = append(out.Content, placeAt(strNode(name), k, at), placeAt(val, v, k, at))
	}
	if r.NanoCPUs != 0 {
		field("cpus", floatNode(float64(r.NanoCPUs)))
	}
	if r.MemoryBytes != 0 {
		field("memory", intNode(int64(r.MemoryBytes)))
	}
	if len(out.Content) == 0 {
		return nil
	}
	c.renames[service+".resources.reservations"] = strings.Join(path, ".")
	return out
}

// swarmRelativeBind warns, on a swarm, of a bind source src the file
// writes relative (or from ~) at at: compose-go has made it absolute, a
// path of this machine.
func (c *composeMap) swarmRelativeBind(at *yaml.Node, src, path string) {
	if c.swarm && src != "" && !filepath.IsAbs(src) {
		c.l.relativeBind(at, path, src)
	}
}

// writtenSource is the source of a volumes item as written: the part of
// the short syntax before its first ':', or the long syntax's source.
func writtenSource(item *yaml.Node) string {
	switch {
	case item == nil:
	case item.Kind == yaml.ScalarNode:
		src, _, _ := strings.Cut(item.Value, ":")
		return src
	case item.Kind == yaml.MappingNode:
		if _, v := (rawTree{item}).find("source"); v != nil && v.Kind == yaml.ScalarNode {
			return v.Value
		}
	}
	return ""
}
