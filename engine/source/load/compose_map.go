package load

import (
	"cmp"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// composeMap turns a loaded compose project into the rollcall.yaml document
// it stands for, as YAML nodes placed where the compose file has each
// attribute. The loader then reads that document like any other, so one
// set of rules (workload.go) checks both formats, and its findings point
// into the compose file.
type composeMap struct {
	l       *loader
	raw     rawTree
	data    []byte
	project *composetypes.Project
	// renames turn the rollcall paths in the loader's messages into the
	// compose paths the user wrote: "web.update.health_deadline" becomes
	// "services.web.deploy.update_config.monitor".
	renames map[string]string
	unset   []string // variables interpolated while not set, in order
	ignored []composeloader.UnsupportedAttribute
	pulled  *pulledIn // the files the document pulls in (compose_files.go)
	// buildFirst are the services whose image is built, never pulled
	// (Workload.BuildFirst): build only, or pull_policy: build.
	buildFirst map[string]bool
	// swarm: x-rollcall.engine is swarm, as written (compose_swarm.go).
	swarm bool
}

// document builds the rollcall document: the prefix and proxy of x-rollcall, then one
// workload per enabled service, and records every warning on the way.
func (c *composeMap) document() *yaml.Node {
	c.renames = map[string]string{}
	root := &yaml.Node{Kind: yaml.MappingNode}
	placeAt(root, c.raw.root)
	root.Content = append(root.Content, c.extension()...)
	sk, sv := c.raw.find("services")
	if sv == nil && len(c.project.Services)+len(c.project.DisabledServices) == 0 {
		// As with rollcall.yaml: stopping everything takes an explicit word.
		c.l.fail(c.raw.root, "to stop everything, write `services: {}` explicitly", "no services key")
	}
	workloads := placeAt(&yaml.Node{Kind: yaml.MappingNode}, sv, sk)
	root.Content = append(root.Content, placeAt(strNode("workloads"), sk), workloads)
	for _, name := range slices.Sorted(maps.Keys(c.project.Services)) {
		if w := c.service(name, c.project.Services[name]); w != nil {
			k, _ := c.raw.find("services", name)
			workloads.Content = append(workloads.Content, placeAt(strNode(name), k, sv), w)
		}
	}
	if volumes := c.volumes(); volumes != nil {
		k, _ := c.raw.find("volumes")
		root.Content = append(root.Content, placeAt(strNode("volumes"), k), placeAt(volumes, k))
	}
	c.warnIgnored()
	c.warnUnset()
	if k, _ := c.raw.get("version"); k != nil {
		c.l.warn(k, "remove it; compose ignores it too", "version: obsolete, ignored")
	}
	return root
}

// extension reads the x-rollcall extension (ExtensionKeys: the label
// prefix, the proxy, registry_poll), as key and value nodes of the rollcall
// document, checked by the loader like rollcall.yaml's own.
func (c *composeMap) extension() []*yaml.Node {
	ext, ok := c.project.Extensions["x-rollcall"]
	if !ok || ext == nil {
		return nil
	}
	xk, xv := c.raw.find("x-rollcall")
	fields, ok := ext.(map[string]any)
	if !ok {
		c.l.fail(placeAt(&yaml.Node{}, xv, xk), "e.g. x-rollcall: {prefix: shop}", "x-rollcall: expected a mapping")
		return nil
	}
	var out []*yaml.Node
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		k, v := c.raw.find("x-rollcall", name)
		switch {
		case !slices.Contains(extensionNames, name):
			c.l.fail(placeAt(&yaml.Node{}, k, xk), "valid keys: "+strings.Join(extensionNames, ", "), "x-rollcall.%s: unknown key", name)
		case name == "engine" && (fields[name] == string(spec.EngineSwarm)) != c.swarm:
			c.l.fail(placeAt(&yaml.Node{}, v, k), "write the engine out in this file: it decides how the file is read, before any variable is",
				"x-rollcall.engine: %q as written, %v once read", c.rawEngine(), fields[name])
		case fields[name] != nil:
			c.renames[name] = "x-rollcall." + name
			val := placeAt(valueNode(fields[name]), v, k)
			if m, ok := fields[name].(map[string]any); ok {
				// The proxy's own keys, placed where the file has them.
				for _, sub := range slices.Sorted(maps.Keys(m)) {
					sk, sv := c.raw.find("x-rollcall", name, sub)
					val.Content = append(val.Content, placeAt(strNode(sub), sk, v), placeAt(valueNode(m[sub]), sv, sk, v))
				}
			}
			out = append(out, placeAt(strNode(name), k), val)
		}
	}
	return out
}

// service maps one compose service onto a workload.
func (c *composeMap) service(name string, s composetypes.ServiceConfig) *yaml.Node {
	at := func(keys ...string) (k, v *yaml.Node) {
		return c.raw.find(append([]string{"services", name}, keys...)...)
	}
	svcKey, svcVal := at()
	if s.Build != nil {
		bk, bv := at("build")
		if s.Image == "" && c.swarm {
			swarmBuild.refuse(c.l, placeAt(&yaml.Node{}, bk, bv), "services."+name+".build")
		}
		if s.Image == "" {
			// compose tags what it builds <project>-<service>
			// (`docker compose build`): that image runs, and no registry
			// has it (Workload.BuildFirst).
			s.Image = c.project.Name + "-" + name
			c.buildFirst[name] = true
			c.l.warn(placeAt(&yaml.Node{}, bk, bv), "build it first: docker compose build "+name,
				"services.%s: build only: rollcall builds nothing and runs compose's image %s, never pulled", name, s.Image)
		} else {
			c.l.warn(placeAt(&yaml.Node{}, bk, bv), "build it first: docker compose build "+name,
				"services.%s.build: ignored: rollcall runs the image %s as tagged and builds nothing", name, s.Image)
		}
	}
	w := placeAt(&yaml.Node{Kind: yaml.MappingNode}, svcVal, svcKey)
	// add appends one field, placed at the compose attribute it comes from.
	add := func(field string, val *yaml.Node, compose ...string) {
		k, v := at(compose...)
		w.Content = append(w.Content, placeAt(strNode(field), k, svcKey), placeAt(val, v, k, svcKey))
		c.renames[name+"."+field] = "services." + name + "." + strings.Join(compose, ".")
	}
	c.renames[name] = "services." + name

	add("image", strNode(s.Image), "image")
	replicas := 1
	switch {
	case s.Deploy != nil && s.Deploy.Replicas != nil:
		replicas = *s.Deploy.Replicas
		add("replicas", intNode(int64(replicas)), "deploy", "replicas")
	case s.Scale != nil:
		replicas = *s.Scale
		add("replicas", intNode(int64(replicas)), "scale")
	}
	if s.Command != nil {
		_, raw := at("command")
		add("command", listNode(s.Command, raw), "command")
	}
	if env := c.environment(name, s.Environment); env != nil {
		add("environment", env, "environment")
	}
	if len(s.Labels) > 0 {
		labels := &yaml.Node{Kind: yaml.MappingNode}
		for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
			lk, lv := at("labels", k)
			labels.Content = append(labels.Content, placeAt(strNode(k), lk, lv), placeAt(strNode(s.Labels[k]), lv, lk))
		}
		add("labels", labels, "labels")
	}
	if s.NetworkMode == spec.NetworkHost && len(s.Ports) > 0 {
		// The engine discards them too, with a warning of its own.
		k, v := at("ports")
		c.l.warn(placeAt(&yaml.Node{}, k, v), "drop ports: the container binds the host's ports itself",
			"services.%s.ports: ignored: with network_mode host no port is published", name)
	} else if ports := c.ports(name, s.Ports); ports != nil {
		add("ports", ports, "ports")
	}
	if hc := c.healthcheck(name, s.HealthCheck); hc != nil {
		add("healthcheck", hc, "healthcheck")
	}
	res := c.resources(name, s)
	if reserved := c.swarmReservations(name, s.Deploy); reserved != nil {
		k, _ := at("deploy", "resources", "reservations")
		res = placeAt(cmp.Or(res, &yaml.Node{Kind: yaml.MappingNode}), reserved)
		res.Content = append(res.Content, placeAt(strNode("reservations"), k, reserved), reserved)
	}
	if res != nil {
		add("resources", res, "deploy", "resources", "limits")
	}
	if c.swarm {
		c.swarmDeploy(name, s.Deploy, add) // compose_swarm.go
	}
	if s.StopSignal != "" {
		add("stop_signal", strNode(s.StopSignal), "stop_signal")
	}
	if s.StopGracePeriod != nil {
		add("stop_grace_period", durationNode(*s.StopGracePeriod), "stop_grace_period")
	}
	switch {
	case s.Restart == "":
	case c.swarm && s.Deploy != nil && s.Deploy.RestartPolicy != nil:
		k, v := at("restart")
		c.l.warn(placeAt(&yaml.Node{}, v, k), "drop restart:, or deploy.restart_policy",
			"services.%s.restart: ignored beside deploy.restart_policy, as docker stack deploy ignores it", name)
	default:
		add("restart", strNode(s.Restart), "restart")
	}
	if networks := c.networks(name, s.Networks); networks != nil {
		add("networks", networks, "networks")
	}
	if len(s.PreStop) > 0 {
		// compose runs a list of hooks; rollcall keeps one command, in a label.
		if len(s.PreStop) > 1 {
			k, v := at("pre_stop")
			c.l.fail(placeAt(&yaml.Node{}, v, k), "merge them into one command", "services.%s.pre_stop: %d hooks; rollcall runs one", name, len(s.PreStop))
		} else {
			_, raw := at("pre_stop", "0", "command")
			add("pre_stop", listNode(s.PreStop[0].Command, raw), "pre_stop")
		}
	}
	c.options(name, s, add) // compose_options.go
	if pull := c.pullPolicy(name, s.PullPolicy); pull != "" {
		add("pull", strNode(pull), "pull_policy")
	}
	if s.Deploy != nil && (s.Deploy.UpdateConfig != nil || s.Deploy.RollbackConfig != nil) {
		if update := c.update(name, s.Deploy.UpdateConfig, s.Deploy.RollbackConfig, replicas); update != nil {
			add("update", update, "deploy", "update_config")
		}
	}
	if mounts := c.mounts(name, s); mounts != nil {
		add("volumes", mounts, "volumes")
	}
	if s.Platform != "" {
		add("platform", strNode(s.Platform), "platform")
	}
	if s.ReadOnly {
		add("read_only", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}, "read_only")
	}
	if deps := c.dependsOn(name, s.DependsOn); deps != nil {
		add("depends_on", deps, "depends_on")
	}
	return w
}

// composeConditions are compose's depends_on conditions, by rollcall's.
var composeConditions = map[string]string{
	composetypes.ServiceConditionStarted:               spec.DependStarted,
	composetypes.ServiceConditionHealthy:               spec.DependHealthy,
	composetypes.ServiceConditionCompletedSuccessfully: spec.DependCompleted,
}

// dependsOn maps depends_on onto rollcall's mapping form, each entry at
// its place in the file. A dependency that is not required and that the
// profiles leave out is dropped, as compose drops it; restart: true
// (restart this service when its dependency is updated) is a warning.
func (c *composeMap) dependsOn(service string, deps composetypes.DependsOnConfig) *yaml.Node {
	if len(deps) == 0 {
		return nil
	}
	_, written := c.raw.get("services", service, "depends_on")
	place := func(name string) (k, v *yaml.Node) {
		if written != nil && written.Kind == yaml.SequenceNode {
			for _, n := range written.Content {
				if deref(n).Value == name {
					return deref(n), deref(n)
				}
			}
		}
		return c.raw.find("services", service, "depends_on", name)
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		dep := deps[name]
		if _, on := c.project.Services[name]; !on && !dep.Required {
			continue
		}
		k, v := place(name)
		cond, ok := composeConditions[dep.Condition]
		if !ok {
			cond = dep.Condition // not compose's: the loader says so, at its place
		}
		ck, cv := c.raw.find("services", service, "depends_on", name, "condition")
		val := placeAt(&yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			placeAt(strNode("condition"), ck, k), placeAt(strNode(cond), cv, ck, k)}}, v, k)
		out.Content = append(out.Content, placeAt(strNode(name), k), val)
		if dep.Restart {
			rk, rv := c.raw.find("services", service, "depends_on", name, "restart")
			c.l.warn(placeAt(&yaml.Node{}, rk, rv, k), "roll it by hand (apply --recreate) after its dependency rolls",
				"services.%s.depends_on.%s.restart: ignored: rollcall restarts no workload when its dependency changes", service, name)
		}
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// environment maps the service's variables. A variable without a value
// that neither environ nor .env sets stays unset in the container, as in
// compose, with a warning.
func (c *composeMap) environment(service string, env composetypes.MappingWithEquals) *yaml.Node {
	if len(env) == 0 {
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		ek, ev := c.raw.find("services", service, "environment", k)
		if env[k] == nil {
			c.l.warn(placeAt(&yaml.Node{}, ek, ev), fmt.Sprintf("set %s in the environment or in .env, or give it a value in the compose file", k),
				"services.%s.environment.%s: not set here, so it stays unset in the container", service, k)
			continue
		}
		out.Content = append(out.Content, placeAt(strNode(k), ek, ev), placeAt(strNode(*env[k]), ev, ek))
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// composePortModeHost is compose's mode of a port a task binds on its own
// node (ports[].mode), beside ingress, Swarm's routing mesh.
const composePortModeHost = "host"

// ports maps each port onto rollcall's short syntax. compose publishes a
// port with no host_ip on every interface, rollcall on 127.0.0.1: said in a
// warning, since it changes who can connect.
func (c *composeMap) ports(service string, ports []composetypes.ServicePortConfig) *yaml.Node {
	if len(ports) == 0 {
		return nil
	}
	_, rawList := c.raw.find("services", service, "ports")
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i, p := range ports {
		item := rawList
		if rawList != nil && rawList.Kind == yaml.SequenceNode && len(rawList.Content) == len(ports) {
			item = deref(rawList.Content[i]) // one written port each: no range was expanded
		}
		target := fmt.Sprintf("%d/%s", p.Target, cmp.Or(p.Protocol, "tcp"))
		var short string
		switch {
		case p.HostIP != "":
			ip := p.HostIP
			if addr, err := netip.ParseAddr(ip); err == nil && addr.Is6() {
				ip = "[" + ip + "]"
			}
			short = ip + ":" + p.Published + ":" + target
		case p.Published != "":
			short = p.Published + ":" + target
		default:
			short = target
		}
		if c.swarm && p.Mode == composePortModeHost {
			k, v := c.raw.find("services", service, "ports", strconv.Itoa(i), "mode")
			swarmPortMode.refuse(c.l, placeAt(&yaml.Node{}, v, k, item), fmt.Sprintf("services.%s.ports[%d].mode", service, i))
			continue
		}
		if p.HostIP == "" && !c.swarm {
			every := fmt.Sprintf("0.0.0.0:%s:%d", p.Published, p.Target)
			if p.Protocol != "" && p.Protocol != "tcp" {
				every += "/" + p.Protocol
			}
			c.l.warn(placeAt(&yaml.Node{}, item), fmt.Sprintf("write %q to publish on every interface, as compose does", every),
				"services.%s.ports[%d]: no host_ip: rollcall publishes on %s only, compose on every interface", service, i, spec.DefaultHostIP)
		}
		out.Content = append(out.Content, placeAt(strNode(short), item))
	}
	return out
}

func (c *composeMap) healthcheck(service string, hc *composetypes.HealthCheckConfig) *yaml.Node {
	if hc == nil {
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	field := func(name string, val *yaml.Node) {
		k, v := c.raw.find("services", service, "healthcheck", name)
		out.Content = append(out.Content, placeAt(strNode(name), k, v), placeAt(val, v, k))
	}
	if len(hc.Test) > 0 {
		_, raw := c.raw.find("services", service, "healthcheck", "test")
		field("test", listNode(hc.Test, raw))
	}
	for _, d := range []struct {
		name string
		val  *composetypes.Duration
	}{{"interval", hc.Interval}, {"timeout", hc.Timeout}, {"start_period", hc.StartPeriod}} {
		if d.val != nil {
			field(d.name, durationNode(*d.val))
		}
	}
	if hc.Retries != nil {
		field("retries", intNode(int64(min(*hc.Retries, 1<<31))))
	}
	if hc.Disable {
		field("disable", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// resources maps deploy.resources.limits, or the service-level cpus and
// mem_limit where the limits leave one out (compose refuses the two when
// they differ).
func (c *composeMap) resources(service string, s composetypes.ServiceConfig) *yaml.Node {
	var limits composetypes.Resource
	if s.Deploy != nil && s.Deploy.Resources.Limits != nil {
		limits = *s.Deploy.Resources.Limits
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	field := func(name string, val *yaml.Node, compose ...string) {
		k, v := c.raw.find(append([]string{"services", service}, compose...)...)
		out.Content = append(out.Content, placeAt(strNode(name), k, v), placeAt(val, v, k))
		c.renames[service+".resources."+name] = "services." + service + "." + strings.Join(compose, ".")
	}
	switch {
	case limits.NanoCPUs != 0:
		field("cpus", floatNode(float64(limits.NanoCPUs)), "deploy", "resources", "limits", "cpus")
	case s.CPUS != 0:
		field("cpus", floatNode(float64(s.CPUS)), "cpus")
	}
	switch {
	case limits.MemoryBytes != 0:
		field("memory", intNode(int64(limits.MemoryBytes)), "deploy", "resources", "limits", "memory")
	case s.MemLimit != 0:
		field("memory", intNode(int64(s.MemLimit)), "mem_limit")
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// networks maps the service's networks to the names of engine networks,
// each with its aliases, in rollcall's mapping form. rollcall creates no
// network: an external one is joined by its name, any other by its key (or
// its explicit name), with a warning, since compose would have created it.
// compose's default network, which it adds to every service that names
// none, is the engine's default bridge here.
func (c *composeMap) networks(service string, nets map[string]*composetypes.ServiceNetworkConfig) *yaml.Node {
	_, written := c.raw.get("services", service, "networks")
	wrote := func(name string) bool {
		if written == nil {
			return false
		}
		if written.Kind == yaml.SequenceNode {
			return slices.ContainsFunc(written.Content, func(n *yaml.Node) bool { return deref(n).Value == name })
		}
		_, v := lookup(written, name, map[*yaml.Node]bool{})
		return v != nil
	}
	place := func(name string) *yaml.Node {
		k, v := c.raw.find("services", service, "networks", name)
		if v == written && written != nil && written.Kind == yaml.SequenceNode {
			for _, n := range written.Content {
				if deref(n).Value == name {
					return deref(n)
				}
			}
		}
		return placeAt(&yaml.Node{}, k, v)
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	join := func(key, name string) {
		val := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
		if cfg := nets[key]; cfg != nil && len(cfg.Aliases) > 0 {
			ak, av := c.raw.find("services", service, "networks", key, "aliases")
			val = &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
				placeAt(strNode("aliases"), ak), placeAt(listNode(cfg.Aliases, av), av, ak)}}
			c.renames[service+".networks."+name+".aliases"] = "services." + service + ".networks." + key + ".aliases"
		}
		out.Content = append(out.Content, placeAt(strNode(name), place(key)), placeAt(val, place(key)))
	}
	for _, key := range slices.Sorted(maps.Keys(nets)) {
		def := c.project.Networks[key]
		_, explicit := c.raw.get("networks", key, "name")
		switch {
		case bool(def.External):
			join(key, cmp.Or(def.Name, key))
		case key == "default" && explicit == nil:
			if wrote(key) {
				c.l.warn(place(key), "name an external network to join one",
					"services.%s.networks.default: the project's default network is the engine's default bridge here", service)
			}
		default:
			name := key
			if explicit != nil {
				name = def.Name
			}
			join(key, name)
			c.l.warn(place(key), fmt.Sprintf("create it first (docker network create %s), or mark it `external: true`", name),
				"services.%s.networks.%s: compose would create this network; rollcall creates none and joins the existing network %q", service, key, name)
		}
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

func (c *composeMap) update(service string, u, rollback *composetypes.UpdateConfig, replicas int) *yaml.Node {
	out := &yaml.Node{Kind: yaml.MappingNode}
	if rollback != nil && rollback.Parallelism != nil {
		k, v := c.raw.find("services", service, "deploy", "rollback_config", "parallelism")
		out.Content = append(out.Content, placeAt(strNode("rollback_parallelism"), k, v),
			placeAt(intNode(int64(min(*rollback.Parallelism, 1<<31))), v, k))
		c.renames[service+".update.rollback_parallelism"] = "services." + service + ".deploy.rollback_config.parallelism"
	}
	if u == nil {
		u = &composetypes.UpdateConfig{}
	}
	field := func(name, compose string, val *yaml.Node) {
		k, v := c.raw.find("services", service, "deploy", "update_config", compose)
		out.Content = append(out.Content, placeAt(strNode(name), k, v), placeAt(val, v, k))
		c.renames[service+".update."+name] = "services." + service + ".deploy.update_config." + compose
	}
	if u.Parallelism != nil {
		n := int64(min(*u.Parallelism, 1<<31))
		if n == 0 {
			// In compose (Swarm), 0 rolls every replica at once.
			n = int64(max(replicas, 1))
			k, v := c.raw.find("services", service, "deploy", "update_config", "parallelism")
			c.l.warn(placeAt(&yaml.Node{}, v, k), "", "services.%s.deploy.update_config.parallelism: 0 (all at once) reads as the replicas, %d", service, n)
		}
		field("parallelism", "parallelism", intNode(n))
	}
	if u.Order != "" {
		field("order", "order", strNode(u.Order))
	}
	if u.FailureAction != "" {
		field("failure_action", "failure_action", strNode(u.FailureAction))
	}
	if u.Monitor > 0 {
		field("health_deadline", "monitor", durationNode(u.Monitor))
	}
	if u.Delay > 0 {
		field("delay", "delay", durationNode(u.Delay))
	}
	if u.MaxFailureRatio > 0 && c.swarm {
		field("max_failure_ratio", "max_failure_ratio", floatNode(float64(u.MaxFailureRatio)))
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// renamePaths rewrites the loader's messages from rollcall paths to the
// compose paths they came from, longest first.
func (c *composeMap) renamePaths() {
	from := slices.SortedFunc(maps.Keys(c.renames), func(a, b string) int { return len(b) - len(a) })
	rename := func(e *spec.Error) {
		for _, f := range from {
			rest, ok := strings.CutPrefix(e.Msg, f)
			if ok && (rest == "" || strings.ContainsRune(":[.", rune(rest[0]))) {
				e.Msg = c.renames[f] + rest
				return
			}
		}
	}
	for _, e := range c.l.errs {
		rename(e)
	}
	for _, e := range c.l.warns {
		if !strings.HasPrefix(e.Msg, "services.") {
			rename(e)
		}
	}
}

// placeAt gives n the position of the first of from that has one, and
// returns n.
func placeAt(n *yaml.Node, from ...*yaml.Node) *yaml.Node {
	for _, f := range from {
		if f != nil && f.Line > 0 {
			n.Line, n.Column = f.Line, f.Column
			break
		}
	}
	return n
}

func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

func intNode(i int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.FormatInt(i, 10)}
}

func floatNode(f float64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(f, 'f', -1, 32)}
}

func durationNode(d composetypes.Duration) *yaml.Node {
	return strNode(time.Duration(d).String())
}

// listNode is a list of strings; each item takes the position of the
// matching item of raw when raw is a list of as many, else that of raw.
func listNode(items []string, raw *yaml.Node) *yaml.Node {
	out := &yaml.Node{Kind: yaml.SequenceNode}
	for i, s := range items {
		n := placeAt(strNode(s), raw)
		if raw != nil && raw.Kind == yaml.SequenceNode && len(raw.Content) == len(items) {
			placeAt(n, deref(raw.Content[i]))
		}
		out.Content = append(out.Content, n)
	}
	return out
}

// valueNode is the node of a plain value of a compose extension.
func valueNode(v any) *yaml.Node {
	switch v := v.(type) {
	case string:
		return strNode(v)
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	case int:
		return intNode(int64(v))
	case int64:
		return intNode(v)
	case uint64:
		return intNode(int64(min(v, 1<<62)))
	case float64:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(v, 'g', -1, 64)}
	case []any:
		return &yaml.Node{Kind: yaml.SequenceNode}
	case map[string]any:
		return &yaml.Node{Kind: yaml.MappingNode}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}
}
