package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	yaml "go.yaml.in/yaml/v3"
)

// supportedAttributes are the compose attributes rollcall honours (see
// ParseCompose). compose-go reports every other attribute the file sets,
// including ones the specification gains later, so nothing is ignored in
// silence. Extension fields (x-*) are never reported.
var supportedAttributes = append([]tree.Path{
	"name", // names nothing in rollcall, and changes nothing either
	"services.*.image",
	"services.*.scale",
	"services.*.deploy.replicas",
	"services.*.deploy.resources.limits.cpus",
	"services.*.deploy.resources.limits.memory",
	"services.*.deploy.update_config.parallelism",
	"services.*.deploy.update_config.order",
	"services.*.deploy.update_config.failure_action",
	"services.*.deploy.update_config.monitor",
	"services.*.deploy.update_config.delay",
	"services.*.healthcheck.interval",
	"services.*.healthcheck.timeout",
	"services.*.healthcheck.retries",
	"services.*.healthcheck.start_period",
	"services.*.healthcheck.disable",
	"services.*.ports.[].target",
	"services.*.ports.[].published",
	"services.*.ports.[].host_ip",
	"services.*.ports.[].protocol",
	"services.*.ports.[].mode", // ingress or host: the same thing outside Swarm
	"services.*.stop_signal",
	"services.*.stop_grace_period",
	"services.*.restart",
	"services.*.networks.*", // the name; per-network options but aliases are reported
	"services.*.networks.*.aliases",
	"services.*.pre_stop.[].command", // user, privileged, working_dir and environment are reported
	"services.*.cpus",
	"services.*.mem_limit",
	"services.*.pull_policy",
	// The create options (compose_options.go); the lists and mappings
	// among them are in acceptedPaths.
	"services.*.user",
	"services.*.working_dir",
	"services.*.hostname",
	"services.*.privileged",
	"services.*.init",
	"services.*.shm_size",
	"services.*.network_mode",
}, acceptedPaths...)

// acceptedPaths are attributes taken whole, whatever they hold: values
// rollcall maps as a whole, attributes the mapping handles itself (build,
// profiles), and the top-level definitions, which do nothing until a
// service refers to them (and a service's reference is what gets reported).
var acceptedPaths = []tree.Path{
	"services.*.command",
	"services.*.environment",
	"services.*.env_file",
	"services.*.labels",
	"services.*.label_file",
	"services.*.healthcheck.test",
	"services.*.build",
	"services.*.profiles",
	"services.*.depends_on", // mapped (compose_map.go), restart: warned of there
	"services.*.volumes",    // mapped (compose_mounts.go), options rollcall leaves out warned of there
	"services.*.tmpfs",
	"services.*.read_only",
	"services.*.configs",
	"services.*.secrets",
	"services.*.entrypoint",
	"services.*.cap_add",
	"services.*.cap_drop",
	"services.*.security_opt",
	"services.*.ulimits",
	"services.*.sysctls",
	"services.*.extra_hosts",
	"services.*.dns",
	"services.*.dns_search",
	"services.*.logging",
	"services.*.expose",
	"services.*.devices",
	"services.*.group_add",
	"networks", "volumes", "configs", "secrets", "models",
}

// acceptedSubtrees stops compose-go's walk at each accepted path, so
// nothing under it is reported.
var acceptedSubtrees = func() []composeloader.UnsupportedAttributePattern {
	var out []composeloader.UnsupportedAttributePattern
	for _, p := range acceptedPaths {
		out = append(out, composeloader.UnsupportedAttributePattern{Path: p, Detect: func(any) bool { return false }})
	}
	return out
}()

// ignoredHints say what to do instead of a field rollcall ignores, by its
// path below the service.
var ignoredHints = map[string]string{
	"links":                                  "put the workloads on one network and use its DNS",
	"container_name":                         "rollcall names each container <prefix>-<workload>-<slot>-<hash>",
	"deploy.placement":                       "a Swarm setting: rollcall runs on one host",
	"deploy.mode":                            "a Swarm setting: rollcall runs replicated workloads only",
	"deploy.endpoint_mode":                   "a Swarm setting: rollcall runs on one host",
	"deploy.labels":                          "put container labels in labels",
	"deploy.restart_policy":                  "use restart: instead",
	"deploy.rollback_config":                 "rollcall's rollback starts nothing: the old containers still serve, and the new ones beside them all stop at once, so no parallelism or order applies; set deploy.update_config.failure_action: rollback",
	"deploy.update_config.max_failure_ratio": "failure_action applies at the first failure",
	"deploy.resources.reservations":          "rollcall sets limits only",
	"healthcheck.start_interval":             "start_period applies; probes run at interval throughout",
}

// unsupported is compose-go's report of the attributes outside
// supportedAttributes; they become warnings once the project is loaded.
func (c *composeMap) unsupported(found []composeloader.UnsupportedAttribute) {
	c.ignored = found
}

// warnIgnored warns of each attribute rollcall ignores, once, and of each
// service that its profiles leave out.
func (c *composeMap) warnIgnored() {
	seen := map[string]bool{}
	for _, a := range c.ignored {
		parts := a.Path.Parts()
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(p, "👻", ".") // compose-go's stand-in for a dot in a key
		}
		if len(parts) > 1 && parts[0] == "services" {
			if _, off := c.project.DisabledServices[parts[1]]; off {
				continue
			}
		}
		shown := strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]")
		if seen[shown] {
			continue
		}
		seen[shown] = true
		find := parts
		if i := slices.Index(parts, tree.PathMatchList); i >= 0 {
			find = parts[:i]
		}
		k, v := c.raw.find(find...)
		hint := ""
		if len(parts) > 2 && parts[0] == "services" {
			hint = ignoredHints[strings.Join(parts[2:], ".")]
		}
		c.l.warn(placeAt(&yaml.Node{}, k, v), hint, "%s: ignored: rollcall does not honour it", shown)
	}
	for _, name := range slices.Sorted(maps.Keys(c.project.DisabledServices)) {
		k, v := c.raw.find("services", name)
		profiles := c.project.DisabledServices[name].Profiles
		hint := "drop profiles: to run it"
		if len(profiles) > 0 {
			hint = "set COMPOSE_PROFILES=" + strings.Join(append(slices.Clone(c.project.Profiles), profiles[0]), ",") + " to run it"
		}
		active := "no profile is active"
		if len(c.project.Profiles) > 0 {
			active = "COMPOSE_PROFILES is " + strings.Join(c.project.Profiles, ",")
		}
		c.l.warn(placeAt(&yaml.Node{}, k, v), hint,
			"services.%s: left out: none of its profiles %v is active (%s), as in compose", name, profiles, active)
	}
}

var (
	namedGroup  = template.DefaultPattern.SubexpIndex("named")
	bracedGroup = template.DefaultPattern.SubexpIndex("braced")
	varNameRE   = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*`)
)

// substitute is compose's interpolation without its logging, noting each
// variable used with no default while not set.
func (c *composeMap) substitute(s string, lookup template.Mapping) (string, error) {
	for _, m := range template.DefaultPattern.FindAllStringSubmatch(s, -1) {
		name := m[namedGroup]
		if braced := m[bracedGroup]; braced != "" {
			name = varNameRE.FindString(braced)
			if name != braced {
				continue // ${X:-default}, ${X?error} and the like say what happens
			}
		}
		if _, ok := lookup(name); name != "" && !ok && !slices.Contains(c.unset, name) {
			c.unset = append(c.unset, name)
		}
	}
	return template.SubstituteWithOptions(s, lookup, template.WithoutLogging)
}

// warnUnset warns of each variable interpolated while not set, at its
// first use in the file.
func (c *composeMap) warnUnset() {
	text := string(c.data)
	for _, name := range c.unset {
		at := &yaml.Node{}
		re := regexp.MustCompile(`\$(\{` + regexp.QuoteMeta(name) + `\}|` + regexp.QuoteMeta(name) + `\b)`)
		if loc := re.FindStringIndex(text); loc != nil {
			at.Line = 1 + strings.Count(text[:loc[0]], "\n")
			at.Column = loc[0] - strings.LastIndex(text[:loc[0]], "\n")
		}
		c.l.warn(at, fmt.Sprintf("set it in the environment or in .env, or give a default: ${%s:-value}", name),
			"variable %s is not set: it reads as an empty string", name)
	}
}
