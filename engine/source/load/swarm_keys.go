package load

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/tree"
	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// SwarmRule is what `engine: swarm` (in a compose file, `x-rollcall:
// {engine: swarm}`) does with one key of the desired state: honoured as
// Swarm takes it, mapped with the difference said, ignored with a warning,
// or refused with an error at the key's file:line:col and a hint.
type SwarmRule struct {
	// Key is rollcall.yaml's: a key of the document (Top) or of a
	// workload ("privileged", "update.canary"), or a value or a
	// combination of one ("pull: never"); "" for a rule of a compose key
	// alone.
	Key string
	Top bool
	// Compose is the compose key it concerns (as ComposeKeys writes
	// paths); "" for none. Case names the value or case of it the rule is
	// about, when the key has several rules ("global" of deploy.mode).
	// Whole: in a swarm's compose file the mapping reads it whole.
	Compose string
	Case    string
	Whole   bool
	Does    string // KeyHonoured, KeyMapped, KeyIgnored or KeyRefused
	// What is what Swarm does: the message of the finding of a refused or
	// ignored key, and the README's words. Why is the hint: what to do
	// instead, or more on how.
	What, Why string
	// Only: a key a swarm has and a plain engine has not: refused
	// without `engine: swarm`.
	Only bool
}

// The rules, one variable each, for the code that applies a rule of a
// value or a combination where it is read. SwarmRules lists them all.
var (
	swarmEngine = SwarmRule{Key: "engine", Top: true, Compose: "x-rollcall.engine", Does: KeyHonoured,
		What: "docker (the default: plain engines) or swarm",
		Why:  "the endpoint (`--docker-host`, `DOCKER_HOST` or a context) is a manager of the swarm; each workload is the service `<prefix>_<workload>`, its slots Swarm's task slots"}
	swarmHosts = SwarmRule{Key: "hosts", Top: true, Does: KeyRefused,
		What: "a swarm is reached through one of its managers",
		Why:  "drop hosts: and name the manager with --docker-host, DOCKER_HOST or a context; Swarm places the tasks on its nodes"}
	swarmProxy = SwarmRule{Key: "proxy", Top: true, Compose: "x-rollcall.proxy", Does: KeyRefused,
		What: "rollcall reads each container's upstream from Caddy, and a proxy in front of a swarm routes to the service (its VIP, or tasks.<service>)",
		Why:  "drop proxy: here; Caddy may stay in front, as a service resolving tasks.<service>: the console follows Swarm's tasks and their health instead"}
	swarmRegistryPoll = SwarmRule{Key: "registry_poll", Top: true, Does: KeyHonoured,
		What: "how often an agent asks where a `pull: always` tag points: a tag that moved is a service update"}

	swarmPullAlways = SwarmRule{Key: "pull: always", Compose: "services.*.pull_policy", Case: "always", Does: KeyMapped,
		What: "the manager resolves the tag to the registry's digest at each update (Swarm's QueryRegistry), so every node runs one image; an agent asks again every registry_poll"}
	swarmPullMissing = SwarmRule{Key: "pull: missing", Compose: "services.*.pull_policy", Case: "missing, if_not_present", Does: KeyMapped,
		What: "the reference goes to Swarm as written; each node's agent pulls the image for the tasks it starts (rollcall pulls nothing on a swarm)"}
	swarmPullNever = SwarmRule{Key: "pull: never", Compose: "services.*.pull_policy", Case: "never, build", Does: KeyRefused,
		What: "Swarm's agents pull the image on each node before a task starts",
		Why:  "drop pull: never, or pin the image by digest (name@sha256:…), which a node that has it does not pull"}
	swarmBuild = SwarmRule{Compose: "services.*.build", Case: "build only", Does: KeyRefused,
		What: "a service built, not pulled (build: without image:, or pull_policy: build): a swarm's nodes pull their images, and no registry has one built here",
		Why:  "build and push it (docker compose build, docker compose push) and name it in image:"}

	swarmCanary = SwarmRule{Key: "update.canary", Does: KeyRefused,
		What: "Swarm spreads a service's requests over its tasks itself (its VIP or DNS round robin): no share of them can go to one new task",
		Why:  "drop canary; step mode approves each new task instead"}
	swarmBlueGreen = SwarmRule{Key: "update.strategy: blue-green", Does: KeyRefused,
		What: "Swarm removes each slot's old task as soon as its new one runs",
		Why:  "use strategy: rolling with order: start-first"}
	swarmDrain = SwarmRule{Key: "update.drain", Does: KeyRefused,
		What: "Swarm drains a task itself: it leaves the load balancer 2s before its stop signal",
		Why:  "drop drain; give the app its time to finish requests in stop_grace_period"}
	swarmMaxFailureRatio = SwarmRule{Key: "update.max_failure_ratio", Compose: "services.*.deploy.update_config.max_failure_ratio", Does: KeyHonoured, Only: true,
		What: "the share of new tasks that may fail before failure_action applies (0..1; 0, the default: the first failure)"}
	swarmPreStop = SwarmRule{Key: "pre_stop", Compose: "services.*.pre_stop.[].command", Does: KeyRefused,
		What: "rollcall execs nothing in a swarm's tasks, which run on the nodes' own engines",
		Why:  "drain on stop_signal within stop_grace_period, and drop pre_stop"}

	swarmPortHostIP = SwarmRule{Key: "ports: HOST_IP", Compose: "services.*.ports.[].host_ip", Does: KeyRefused,
		What: "Swarm publishes a port on every interface of every node (its routing mesh)",
		Why:  "drop the host IP; a port no one outside should reach is published nowhere: reach the service over an overlay network"}
	swarmPortPublished = SwarmRule{Key: "ports: HOST_PORT", Compose: "services.*.ports.[].published", Does: KeyHonoured,
		What: "a port of Swarm's routing mesh, one for the whole service: any replicas, and no stop-first for it; without one (or 0) Swarm picks it"}
	swarmPortMode = SwarmRule{Compose: "services.*.ports.[].mode", Case: "host", Does: KeyRefused,
		What: "mode: host: rollcall publishes through Swarm's routing mesh only (mode: ingress)",
		Why:  "drop mode: host; a task of host mode binds its node's port, which a start-first task beside it cannot bind"}
	swarmEndpointMode = SwarmRule{Key: "endpoint_mode", Compose: "services.*.deploy.endpoint_mode", Does: KeyHonoured, Only: true,
		What: "vip (Swarm's default) or dnsrr (the service's name and tasks.<service> resolve to each task); in the spec hash: Swarm recreates every task for it"}
	swarmDNSRRPorts = SwarmRule{Key: "endpoint_mode: dnsrr, with ports", Does: KeyRefused,
		What: "Swarm publishes a port through the service's VIP, which dnsrr has none of",
		Why:  "drop the ports and reach tasks.<service> over an overlay network (a proxy as a service does), or use endpoint_mode: vip"}
	swarmPlacement = SwarmRule{Key: "placement", Compose: "services.*.deploy.placement", Whole: true, Does: KeyHonoured, Only: true,
		What: "constraints, preferences ({spread: …}) and max_replicas_per_node, as Swarm takes them; not in the spec hash: Swarm moves only the tasks whose node no longer matches"}
	swarmModeReplicated = SwarmRule{Compose: "services.*.deploy.mode", Case: "replicated", Does: KeyMapped,
		What: "the service's mode, the default"}
	swarmModeGlobal = SwarmRule{Compose: "services.*.deploy.mode", Case: "global, jobs", Does: KeyRefused,
		What: "rollcall rolls replicated services, slot by slot: a global service or a job has no slots to roll",
		Why:  "write mode: replicated with replicas, and placement.max_replicas_per_node: 1 for one task per node"}
	swarmRestartPolicy = SwarmRule{Key: "restart_policy", Compose: "services.*.deploy.restart_policy", Whole: true, Does: KeyHonoured, Only: true,
		What: "condition (none, on-failure, any), delay (default 5s), max_attempts (0: no limit) and window, as Swarm takes them; in the spec hash (task template)"}
	swarmRestart = SwarmRule{Key: "restart", Compose: "services.*.restart", Does: KeyMapped,
		What: "without restart_policy, Swarm's condition: no is none, always and unless-stopped are any, on-failure[:N] is on-failure with max_attempts N; beside a compose file's deploy.restart_policy it is ignored, with a warning (docker stack deploy ignores it); in rollcall.yaml, write one of the two"}
	swarmStackLabel = SwarmRule{Key: "service_labels: com.docker.stack.namespace", Does: KeyRefused,
		What: "rollcall sets the stack label to the prefix, so that docker stack ps <prefix> lists the services",
		Why:  "drop it: the prefix names the stack"}
	swarmServiceLabels = SwarmRule{Key: "service_labels", Compose: "services.*.deploy.labels", Whole: true, Does: KeyHonoured, Only: true,
		What: "the service's own labels (docker service inspect), beside rollcall's; on no task: a change starts no new task"}
	swarmReservationCPUs = SwarmRule{Key: "resources.reservations.cpus", Compose: "services.*.deploy.resources.reservations.cpus", Does: KeyHonoured, Only: true,
		What: "the CPUs Swarm reserves on a node to place a task there; in the spec hash (task template)"}
	swarmReservationMemory = SwarmRule{Key: "resources.reservations.memory", Compose: "services.*.deploy.resources.reservations.memory", Does: KeyHonoured, Only: true,
		What: "the memory Swarm reserves on a node to place a task there; in the spec hash (task template)"}
	swarmResources = SwarmRule{Key: "resources", Does: KeyMapped,
		What: "the limits are in the task template, so in the spec hash: a change is a new task on every slot (Swarm updates no limit in place)"}
	swarmStopGrace = SwarmRule{Key: "stop_grace_period", Compose: "services.*.stop_grace_period", Does: KeyMapped,
		What: "in the task template, so in the spec hash: a change is a new task on every slot"}
	swarmHostname = SwarmRule{Key: "hostname", Compose: "services.*.hostname", Does: KeyMapped,
		What: "with replicas above 1, per slot through Swarm's template: `<hostname>-{{.Task.Slot}}` (Swarm's slots count from 1: web-1, web-2, …); with one, as written"}
	swarmDependsOn = SwarmRule{Key: "depends_on", Compose: "services.*.depends_on", Does: KeyIgnored,
		What: "Swarm starts every service at once, as docker stack deploy does",
		Why:  "have the service wait for what it needs itself (retry its connections)"}

	swarmAnonymousVolume = SwarmRule{Key: "volumes: TARGET (anonymous)", Compose: "services.*.volumes", Case: "anonymous", Does: KeyRefused,
		What: "Swarm gives each new task an empty anonymous volume, so a roll would lose what the old task wrote",
		Why:  "mount a named volume there (declared under volumes:), or a tmpfs for scratch"}
	swarmImageVolume = SwarmRule{Key: "an image's VOLUME that no mount covers", Does: KeyRefused,
		What: "likewise: the plan refuses the workload, and nothing of it starts or stops",
		Why:  spec.SwarmImageVolumeHint}
	swarmNamedVolume = SwarmRule{Key: "volumes: NAME:TARGET", Compose: "services.*.volumes", Case: "named", Does: KeyMapped,
		What: "a volume of the local driver is per node: a task Swarm places on another node finds another, empty one (a warning, unless a placement constraint pins the service)",
		Why:  "pin the service with a placement constraint (node.hostname == …), or use a volume driver that shares"}
	swarmRelativeBind = SwarmRule{Key: "volumes: ./SOURCE:TARGET", Compose: "services.*.volumes", Case: "relative bind", Does: KeyMapped,
		What: "a bind source is a path on the node that runs the task; one relative to the file is this machine's path (a warning; it is not looked for here)",
		Why:  "make sure the path exists on every node the service may be placed on, or write it from /"}

	swarmVolumeName = SwarmRule{Compose: "volumes", Case: "name", Does: KeyMapped,
		What: "a named volume is `<prefix>_<key>`, as `docker stack deploy <prefix>` names it (the prefix is the stack's name), unless it has a name: or is external"}

	swarmPrivileged = SwarmRule{Key: "privileged", Compose: "services.*.privileged", Does: KeyRefused,
		What: "Swarm runs no privileged task",
		Why:  "add the capabilities it needs with cap_add, or run it on a plain engine"}
	swarmDevices = SwarmRule{Key: "devices", Compose: "services.*.devices", Does: KeyRefused,
		What: "a Swarm service takes no devices",
		Why:  "run it on a plain engine (engine: docker)"}
	swarmSecurityOpt = SwarmRule{Key: "security_opt", Compose: "services.*.security_opt", Does: KeyRefused,
		What: "a Swarm service of API 1.41 (Docker 20.10) takes no seccomp, apparmor or no-new-privileges option",
		Why:  "set them as the daemon's defaults on each node, or run it on a plain engine"}
	swarmShmSize = SwarmRule{Key: "shm_size", Compose: "services.*.shm_size", Does: KeyRefused,
		What: "a Swarm service has no shm size",
		Why:  "mount a tmpfs at /dev/shm with that size: {type: tmpfs, target: /dev/shm, size: 64M}"}
	swarmNetworkMode = SwarmRule{Key: "network_mode", Compose: "services.*.network_mode", Does: KeyRefused,
		What: "a Swarm service has no network mode",
		Why:  "list the networks it joins in networks (the swarm's overlay networks)"}
	swarmExpose = SwarmRule{Key: "expose", Compose: "services.*.expose", Does: KeyIgnored,
		What: "a Swarm service exposes no port: every port of a task is reachable on its networks",
		Why:  "drop expose"}
	swarmContainerOptions = SwarmRule{Key: "cap_add, cap_drop, ulimits, sysctls, init, read_only, user, working_dir, group_add, entrypoint, extra_hosts, dns, dns_search, logging, tmpfs", Does: KeyHonoured,
		What: "in the service's container spec, which has them all since API 1.41 (Docker 20.10)"}
)

// SwarmRules is the one table of what a swarm does with the desired
// state's keys: the loader applies it (a refused or ignored key found
// by its Key, the rest where the value is read), compose files deployed to
// a swarm are read by it (swarmAttributes), and the README's table of it
// (TestREADMESwarmKeyTable) and the swarm column of the compose key table
// are rendered from it.
var SwarmRules = []SwarmRule{
	swarmEngine, swarmHosts, swarmProxy, swarmRegistryPoll,
	swarmPullAlways, swarmPullMissing, swarmPullNever, swarmBuild,
	swarmCanary, swarmBlueGreen, swarmDrain, swarmMaxFailureRatio, swarmPreStop,
	swarmPortHostIP, swarmPortPublished, swarmPortMode, swarmEndpointMode, swarmDNSRRPorts,
	swarmPlacement, swarmModeReplicated, swarmModeGlobal,
	swarmRestartPolicy, swarmRestart, swarmServiceLabels, swarmStackLabel,
	swarmReservationCPUs, swarmReservationMemory, swarmResources, swarmStopGrace, swarmHostname, swarmDependsOn,
	swarmAnonymousVolume, swarmImageVolume, swarmNamedVolume, swarmRelativeBind, swarmVolumeName,
	swarmPrivileged, swarmDevices, swarmSecurityOpt, swarmShmSize, swarmNetworkMode, swarmExpose, swarmContainerOptions,
}

// keyRE is a rule's Key that is a key alone, which the loader finds by
// name; any other Key is a value's or a combination's.
var keyRE = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)*$`)

// swarmRuleOf is the rule of a key of the document (top) or of a workload
// (its path below the workload: "update.canary"), found by name; nil for
// none.
func swarmRuleOf(key string, top bool) *SwarmRule {
	for i := range SwarmRules {
		r := &SwarmRules[i]
		if r.Key == key && r.Top == top && keyRE.MatchString(r.Key) {
			return r
		}
	}
	return nil
}

// swarmKey applies the rule of key f, if it has one: refused on a swarm
// (an error), ignored on a swarm (a warning), or a swarm's only on a plain
// engine (an error). It reports whether f is to be read.
func (l *loader) swarmKey(f field, key string, top bool) bool {
	r := swarmRuleOf(key, top)
	switch {
	case r == nil:
		return true
	case l.engine != spec.EngineSwarm && r.Only:
		l.fail(f.key, "set `engine: swarm` at the top level (its endpoint is then a swarm manager), or drop it",
			"%s: a Swarm setting: needs engine: swarm", f.path)
		return false
	case l.engine != spec.EngineSwarm:
		return true
	case r.Does == KeyRefused:
		r.refuse(l, f.key, f.path)
		return false
	case r.Does == KeyIgnored:
		r.ignore(l, f.key, f.path)
		return false
	}
	return true
}

// refuse is the error of a refused rule at n: "web.privileged: not on a
// swarm: Swarm runs no privileged task", with the rule's hint.
func (r SwarmRule) refuse(l *loader, n *yaml.Node, path string) {
	l.fail(n, r.Why, "%s: not on a swarm: %s", path, r.What)
}

// ignore is the warning of an ignored rule at n.
func (r SwarmRule) ignore(l *loader, n *yaml.Node, path string) {
	l.warn(n, r.Why, "%s: ignored on a swarm: %s", path, r.What)
}

// notice is the warning of a rule that maps a key with a difference
// worth a look.
func (r SwarmRule) notice(l *loader, n *yaml.Node, path, what string) {
	l.warn(n, r.Why, "%s: %s", path, what)
}

// swarmAttributes are the compose attributes a compose file deployed to a
// swarm has beyond a plain engine's: each rule's compose key, which the
// mapping reads and the loader then judges by the rule, as in
// rollcall.yaml.
var swarmAttributes, swarmSubtrees = func() ([]tree.Path, []composeloader.UnsupportedAttributePattern) {
	paths := slices.Clone(supportedAttributes)
	subtrees := slices.Clone(acceptedSubtrees)
	for _, r := range SwarmRules {
		if r.Compose == "" || strings.HasPrefix(r.Compose, "x-") || slices.Contains(paths, tree.Path(r.Compose)) {
			continue
		}
		paths = append(paths, tree.Path(r.Compose))
		if r.Whole {
			subtrees = append(subtrees, composeloader.UnsupportedAttributePattern{Path: tree.Path(r.Compose), Detect: func(any) bool { return false }})
		}
	}
	return paths, subtrees
}()

// SwarmKeyTable renders SwarmRules as the README's markdown table.
func SwarmKeyTable() string {
	var b strings.Builder
	b.WriteString("| rollcall.yaml | compose | on a swarm | how |\n|---|---|---|---|\n")
	code := func(s string) string {
		if s == "" {
			return "–"
		}
		return "`" + s + "`"
	}
	for _, r := range SwarmRules {
		key, compose := code(r.Key), code(r.Compose)
		if r.Key != "" && !keyRE.MatchString(r.Key) {
			key = markdownCell(r.Key)
		}
		if r.Case != "" {
			compose += " " + markdownCell(r.Case)
		}
		how := r.What
		if r.Why != "" {
			how += ": " + r.Why
		}
		if r.Only {
			how += " (needs engine: swarm)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", key, compose, r.Does, markdownCell(how))
	}
	return b.String()
}

// swarmVerdicts is the swarm column of the compose key table: the verdicts
// of the rules of a compose key, "" for none (as on a plain engine).
func swarmVerdicts(path string) string {
	var out []string
	for _, r := range SwarmRules {
		if r.Compose != path {
			continue
		}
		v := r.Does
		if r.Case != "" {
			v = r.Case + ": " + v
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return strings.Join(out, "; ")
}
