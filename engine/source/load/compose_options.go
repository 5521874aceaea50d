package load

import (
	"maps"
	"slices"

	composetypes "github.com/compose-spec/compose-go/v2/types"
	yaml "go.yaml.in/yaml/v3"
)

// options maps the service's create options (options.go) onto the
// workload's keys, each placed at the compose attribute it comes from, for
// the loader to check as it checks rollcall.yaml's. add is service's.
func (c *composeMap) options(name string, s composetypes.ServiceConfig, add func(field string, val *yaml.Node, compose ...string)) {
	raw := func(keys ...string) *yaml.Node {
		_, v := c.raw.find(append([]string{"services", name}, keys...)...)
		return v
	}
	list := func(key string, items []string) {
		if len(items) > 0 {
			add(key, listNode(items, raw(key)), key)
		}
	}
	str := func(key, v string) {
		if v != "" {
			add(key, strNode(v), key)
		}
	}
	if s.Entrypoint != nil {
		add("entrypoint", listNode(s.Entrypoint, raw("entrypoint")), "entrypoint")
	}
	str("user", s.User)
	str("working_dir", s.WorkingDir)
	str("hostname", s.Hostname)
	list("cap_add", s.CapAdd)
	list("cap_drop", s.CapDrop)
	list("security_opt", s.SecurityOpt)
	if s.Privileged {
		add("privileged", valueNode(true), "privileged")
	}
	if s.Init != nil {
		add("init", valueNode(*s.Init), "init")
	}
	if s.ShmSize != 0 {
		add("shm_size", intNode(int64(s.ShmSize)), "shm_size")
	}
	if len(s.Ulimits) > 0 {
		out := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range slices.Sorted(maps.Keys(s.Ulimits)) {
			uk, uv := c.raw.find("services", name, "ulimits", k)
			var val *yaml.Node
			switch u := s.Ulimits[k]; {
			case u == nil:
				val = valueNode(nil)
			case u.Single != 0:
				val = intNode(int64(u.Single))
			default:
				val = &yaml.Node{Kind: yaml.MappingNode}
				for _, f := range []struct {
					key string
					v   int
				}{{"soft", u.Soft}, {"hard", u.Hard}} {
					fk, fv := c.raw.find("services", name, "ulimits", k, f.key)
					val.Content = append(val.Content, placeAt(strNode(f.key), fk, uv), placeAt(intNode(int64(f.v)), fv, fk, uv))
				}
			}
			out.Content = append(out.Content, placeAt(strNode(k), uk, uv), placeAt(val, uv, uk))
		}
		add("ulimits", out, "ulimits")
	}
	if len(s.Sysctls) > 0 {
		add("sysctls", c.stringMap(s.Sysctls, "services", name, "sysctls"), "sysctls")
	}
	if len(s.ExtraHosts) > 0 {
		var hosts []string
		for _, h := range slices.Sorted(maps.Keys(s.ExtraHosts)) {
			for _, ip := range s.ExtraHosts[h] {
				hosts = append(hosts, h+"="+ip)
			}
		}
		add("extra_hosts", listNode(hosts, raw("extra_hosts")), "extra_hosts")
	}
	list("dns", s.DNS)
	list("dns_search", s.DNSSearch)
	if lg := s.Logging; lg != nil && (lg.Driver != "" || len(lg.Options) > 0) {
		out := &yaml.Node{Kind: yaml.MappingNode}
		if lg.Driver != "" {
			k, v := c.raw.find("services", name, "logging", "driver")
			out.Content = append(out.Content, placeAt(strNode("driver"), k), placeAt(strNode(lg.Driver), v, k))
		}
		if len(lg.Options) > 0 {
			k, _ := c.raw.find("services", name, "logging", "options")
			out.Content = append(out.Content, placeAt(strNode("options"), k),
				placeAt(c.stringMap(lg.Options, "services", name, "logging", "options"), k))
		}
		add("logging", out, "logging")
	}
	list("expose", s.Expose)
	str("network_mode", s.NetworkMode)
	if len(s.Devices) > 0 {
		var devices []string
		for _, d := range s.Devices {
			spec := d.Source
			if d.Target != "" || d.Permissions != "" {
				spec += ":" + d.Target
			}
			if d.Permissions != "" {
				spec += ":" + d.Permissions
			}
			devices = append(devices, spec)
		}
		add("devices", listNode(devices, raw("devices")), "devices")
	}
	list("group_add", s.GroupAdd)
}

// stringMap is a mapping of strings, each key and value placed at the
// compose file's, under the attribute at path.
func (c *composeMap) stringMap(m map[string]string, path ...string) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	_, at := c.raw.find(path...)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		mk, mv := c.raw.find(append(slices.Clone(path), k)...)
		out.Content = append(out.Content, placeAt(strNode(k), mk, at), placeAt(strNode(m[k]), mv, mk, at))
	}
	return placeAt(out, at)
}
