package load

import (
	"fmt"
	"slices"
	"strings"

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/tree"
)

// What rollcall does with a compose key (ComposeKey.Does).
const (
	KeyHonoured = "honoured" // as compose does
	KeyMapped   = "mapped"   // honoured, with a difference the Why says
	KeyIgnored  = "ignored"  // a warning at its line:col, with a hint
	KeyRefused  = "refused"  // an error at its line:col
)

// ComposeKey is one compose key and what rollcall does with it.
type ComposeKey struct {
	Path string // compose-go's attribute path: services.*.deploy.replicas
	Does string // KeyHonoured, KeyMapped, KeyIgnored or KeyRefused
	Why  string
	// Whole: the key is taken whole, whatever it holds (the mapping reads
	// it itself), so nothing below it is reported.
	Whole bool
}

// ComposeKeys is the one table of the compose keys rollcall knows: the
// loader's supported attributes, the subtrees it takes whole and the hints
// of ignored keys derive from it (below), and the README's table of compose
// keys is rendered from it (TestREADMEComposeKeyTable). Any key not
// honoured or mapped here is ignored with a warning, so nothing is dropped
// in silence; extension fields (x-*) other than x-rollcall are left alone.
var ComposeKeys = []ComposeKey{
	{"name", KeyHonoured, "the project name: named volumes are `<name>_<key>`, as in compose", false},
	{"include", KeyHonoured, "compose's own: each file read bounded, at its reference's line:col when it cannot be", false},
	{"services.*.image", KeyHonoured, "", false},
	{"services.*.extends", KeyHonoured, "compose's own: its file read bounded, at its reference's line:col when it cannot be", false},
	{"services.*.build", KeyMapped, "rollcall builds nothing: with `image:` it runs the image as tagged; without, compose's own name `<project>-<service>`, as `docker compose build` tags it; an engine without the image is told to build it first, never a pull", true},
	{"services.*.profiles", KeyHonoured, "`COMPOSE_PROFILES` (environment or `.env`) enables profiles; a service left out is warned of, with the `COMPOSE_PROFILES` that runs it", true},
	{"services.*.scale", KeyHonoured, "replicas", false},
	{"services.*.deploy.replicas", KeyHonoured, "replicas", false},
	{"services.*.command", KeyHonoured, "", true},
	{"services.*.entrypoint", KeyHonoured, "", true},
	{"services.*.environment", KeyHonoured, "a variable with no value that the environment leaves unset stays unset, with a warning", true},
	{"services.*.env_file", KeyHonoured, "read bounded, at its line:col when it cannot be", true},
	{"services.*.labels", KeyHonoured, "the containers' labels", true},
	{"services.*.label_file", KeyHonoured, "read bounded, at its line:col when it cannot be", true},
	{"services.*.ports.[].target", KeyHonoured, "", false},
	{"services.*.ports.[].published", KeyHonoured, "a fixed host port rolls stop-first, and cannot go with replicas > 1", false},
	{"services.*.ports.[].host_ip", KeyMapped, "none: rollcall publishes on 127.0.0.1 (compose: every interface), with a warning", false},
	{"services.*.ports.[].protocol", KeyHonoured, "", false},
	{"services.*.ports.[].mode", KeyHonoured, "ingress or host: the same thing outside Swarm; on a swarm, host is refused", false},
	{"services.*.expose", KeyHonoured, "", true},
	{"services.*.healthcheck.test", KeyHonoured, "", true},
	{"services.*.healthcheck.interval", KeyHonoured, "", false},
	{"services.*.healthcheck.timeout", KeyHonoured, "", false},
	{"services.*.healthcheck.retries", KeyHonoured, "", false},
	{"services.*.healthcheck.start_period", KeyHonoured, "", false},
	{"services.*.healthcheck.disable", KeyHonoured, "", false},
	{"services.*.healthcheck.start_interval", KeyIgnored, "start_period applies; probes run at interval throughout", false},
	{"services.*.deploy.resources.limits.cpus", KeyHonoured, "resources.cpus", false},
	{"services.*.deploy.resources.limits.memory", KeyHonoured, "resources.memory", false},
	{"services.*.cpus", KeyHonoured, "resources.cpus, where deploy.resources.limits has none", false},
	{"services.*.mem_limit", KeyHonoured, "resources.memory, where deploy.resources.limits has none", false},
	{"services.*.deploy.resources.reservations", KeyIgnored, "rollcall sets limits only; on a swarm, cpus and memory are honoured", false},
	{"services.*.deploy.update_config.parallelism", KeyMapped, "update.parallelism; 0 (all at once) reads as the replicas, with a warning", false},
	{"services.*.deploy.update_config.order", KeyHonoured, "update.order", false},
	{"services.*.deploy.update_config.failure_action", KeyHonoured, "update.failure_action", false},
	{"services.*.deploy.update_config.monitor", KeyMapped, "update.health_deadline", false},
	{"services.*.deploy.update_config.delay", KeyMapped, "update.delay: a slot starts rolling that long after the last slot's replacement was ready (its start plus min_ready: the engine does not say when a probe first passed)", false},
	{"services.*.deploy.update_config.max_failure_ratio", KeyIgnored, "failure_action applies at the first failure; honoured on a swarm", false},
	{"services.*.deploy.rollback_config.parallelism", KeyHonoured, "update.rollback_parallelism: how many slots an operator's rollback takes back at once (0: all at once, the default)", false},
	{"services.*.deploy.rollback_config.order", KeyIgnored, "rollcall's rollback starts nothing (the old containers still serve; the new ones beside them stop), so no order applies", false},
	{"services.*.deploy.rollback_config.delay", KeyIgnored, "a rollback stops the next slots once the first ones stopped", false},
	{"services.*.deploy.rollback_config.failure_action", KeyIgnored, "a rollback's failed stop is retried, as any step", false},
	{"services.*.deploy.rollback_config.monitor", KeyIgnored, "a rollback starts nothing to watch", false},
	{"services.*.deploy.rollback_config.max_failure_ratio", KeyIgnored, "a rollback's failed stop is retried, as any step", false},
	{"services.*.deploy.restart_policy", KeyIgnored, "use restart: instead; honoured on a swarm", false},
	{"services.*.deploy.labels", KeyIgnored, "put container labels in labels; on a swarm, the service's own labels", false},
	{"services.*.deploy.placement", KeyIgnored, "a Swarm setting, honoured on a swarm (`x-rollcall: {engine: swarm}`)", false},
	{"services.*.deploy.mode", KeyIgnored, "a Swarm setting: rollcall runs replicated workloads only, on a swarm too", false},
	{"services.*.deploy.endpoint_mode", KeyIgnored, "a Swarm setting, honoured on a swarm", false},
	{"services.*.stop_signal", KeyHonoured, "", false},
	{"services.*.stop_grace_period", KeyHonoured, "", false},
	{"services.*.restart", KeyHonoured, "", false},
	{"services.*.platform", KeyHonoured, "checked against the image the engine has: another platform is an error of that workload, and nothing of it starts or stops", false},
	{"services.*.pull_policy", KeyMapped, "pull: `if_not_present` is `missing`, `build` is `never`", false},
	{"services.*.pre_stop.[].command", KeyMapped, "one hook: its command runs before the container stops; more than one is refused", false},
	{"services.*.networks.*", KeyMapped, "joined by name: an external network by its name, any other by its key, with a warning (rollcall creates none); `default` is the engine's default bridge", false},
	{"services.*.networks.*.aliases", KeyHonoured, "", false},
	{"services.*.network_mode", KeyMapped, "`host` or `none` (`host` rolls stop-first); `container:` and `service:` are refused", false},
	{"services.*.volumes", KeyMapped, "bind, volume and tmpfs mounts; an anonymous volume is the slot's own, kept across rolls; other types are refused, options rollcall leaves to the engine warned of", true},
	{"services.*.tmpfs", KeyHonoured, "", true},
	{"services.*.read_only", KeyHonoured, "", true},
	{"services.*.configs", KeyMapped, "a config from a file is a read-only bind mount at compose's target; one that is external, inline or from the environment is refused", true},
	{"services.*.secrets", KeyMapped, "a secret from a file is a read-only bind mount at /run/secrets/<name>; one that is external or from the environment is refused", true},
	{"services.*.user", KeyHonoured, "", false},
	{"services.*.working_dir", KeyHonoured, "", false},
	{"services.*.hostname", KeyMapped, "with replicas above 1, per slot: `<hostname>-<slot>` (web-0, web-1, …); with one, as written", false},
	{"services.*.privileged", KeyHonoured, "", false},
	{"services.*.init", KeyHonoured, "", false},
	{"services.*.shm_size", KeyHonoured, "", false},
	{"services.*.cap_add", KeyHonoured, "", true},
	{"services.*.cap_drop", KeyHonoured, "", true},
	{"services.*.security_opt", KeyHonoured, "`seccomp=` takes `unconfined` only", true},
	{"services.*.ulimits", KeyHonoured, "", true},
	{"services.*.sysctls", KeyHonoured, "", true},
	{"services.*.extra_hosts", KeyHonoured, "", true},
	{"services.*.dns", KeyHonoured, "", true},
	{"services.*.dns_search", KeyHonoured, "", true},
	{"services.*.logging", KeyHonoured, "", true},
	{"services.*.devices", KeyHonoured, "", true},
	{"services.*.group_add", KeyHonoured, "", true},
	{"services.*.depends_on", KeyMapped, "holds a workload's cold starts until each dependency runs (service_started), is healthy (service_healthy) or exited 0 (service_completed_successfully), and a roll until each dependency has rolled; a service waited for to complete is a one-shot job, run once per spec; restart: is warned of", true},
	{"services.*.links", KeyIgnored, "put the workloads on one network and use its DNS", false},
	{"services.*.pid", KeyIgnored, "rollcall's containers keep their own PID namespace; run one that needs the host's outside rollcall", false},
	{"services.*.tty", KeyIgnored, "rollcall's containers run with no terminal; log to stdout instead", false},
	{"services.*.stdin_open", KeyIgnored, "rollcall's containers run with no standard input", false},
	{"services.*.container_name", KeyIgnored, "rollcall names each container <prefix>-<workload>-<slot>-<hash>", false},
	{"networks", KeyMapped, "read where a service joins one: rollcall creates no network", true},
	{"volumes", KeyMapped, "the named volumes the services mount: rollcall creates a missing one (never an external one) and never removes one", true},
	{"configs", KeyMapped, "read where a service mounts one", true},
	{"secrets", KeyMapped, "read where a service mounts one", true},
	{"models", KeyMapped, "nothing until a service uses one (and that is reported)", true},
}

// ExtensionKeys are the keys of the top-level x-rollcall extension: each is
// rollcall.yaml's top-level key of the same name (the part after
// "x-rollcall."), read and checked as that key is, its messages naming
// x-rollcall.KEY. Any other key there is an error. The README's table of
// compose keys lists them after ComposeKeys.
var ExtensionKeys = []ComposeKey{
	{"x-rollcall.prefix", KeyHonoured, "rollcall.yaml's `prefix`: the label prefix (the project name does not set it)", false},
	{"x-rollcall.proxy", KeyHonoured, "rollcall.yaml's `proxy`: the Caddy whose admin API a drain and a canary ask", false},
	{"x-rollcall.engine", KeyHonoured, "rollcall.yaml's `engine`: docker (plain engines, the default) or swarm (a file `docker stack deploy` deploys), written out", false},
	{"x-rollcall.registry_poll", KeyHonoured, "rollcall.yaml's `registry_poll`: how often a session asks the registry where a tag of `pull: always` points (default `5m`, at least `10s`)", false},
}

// extensionNames are the keys x-rollcall takes: ExtensionKeys' names.
var extensionNames = func() []string {
	var out []string
	for _, k := range ExtensionKeys {
		out = append(out, strings.TrimPrefix(k.Path, "x-rollcall."))
	}
	return out
}()

// supportedAttributes are the compose attributes rollcall honours or maps
// (see ParseCompose). compose-go reports every other attribute the file
// sets, including ones the specification gains later, so nothing is
// ignored in silence. Extension fields (x-*) are never reported.
var supportedAttributes = keyPaths(func(k ComposeKey) bool { return k.Does == KeyHonoured || k.Does == KeyMapped })

// acceptedPaths are the attributes taken whole, whatever they hold: values
// rollcall maps as a whole, attributes the mapping handles itself (build,
// profiles), and the top-level definitions, which do nothing until a
// service refers to them (and a service's reference is what gets reported).
var acceptedPaths = keyPaths(func(k ComposeKey) bool { return k.Whole })

// ignoredHints say what to do instead of a field rollcall ignores, by its
// path below the service.
var ignoredHints = func() map[string]string {
	out := map[string]string{}
	for _, k := range ComposeKeys {
		if rest, ok := strings.CutPrefix(k.Path, "services.*."); ok && k.Does == KeyIgnored {
			out[rest] = k.Why
		}
	}
	return out
}()

func keyPaths(keep func(ComposeKey) bool) []tree.Path {
	var out []tree.Path
	for _, k := range ComposeKeys {
		if keep(k) {
			out = append(out, tree.Path(k.Path))
		}
	}
	return out
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

// ComposeKeyTable renders ComposeKeys as the README's markdown table.
func ComposeKeyTable() string {
	var b strings.Builder
	b.WriteString("| compose key | rollcall | how | on a swarm |\n|---|---|---|---|\n")
	for _, k := range ComposeKeys {
		path := "`" + k.Path + "`"
		if k.Whole {
			path += " (whole)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", path, k.Does, markdownCell(k.Why), markdownCell(swarmVerdicts(k.Path)))
	}
	for _, k := range ExtensionKeys {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", k.Path, k.Does, markdownCell(k.Why), markdownCell(swarmVerdicts(k.Path)))
	}
	// The keys a swarm's file has beyond these: the parts of a key the
	// table takes as one.
	var more []string
	for _, r := range SwarmRules {
		known := slices.ContainsFunc(ComposeKeys, func(k ComposeKey) bool { return k.Path == r.Compose }) ||
			slices.ContainsFunc(ExtensionKeys, func(k ComposeKey) bool { return k.Path == r.Compose })
		if r.Compose != "" && !known && !slices.Contains(more, r.Compose) {
			more = append(more, r.Compose)
		}
	}
	for _, p := range more {
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", p, KeyIgnored, "read on a swarm only", markdownCell(swarmVerdicts(p)))
	}
	b.WriteString("| any other key | ignored | a warning at its line:col naming it; `x-*` extensions are left alone | the same |\n")
	return b.String()
}

// markdownCell escapes text for a table cell: '|' everywhere, and '<'
// outside code spans, which markdown would read as the start of a tag.
func markdownCell(s string) string {
	parts := strings.Split(s, "`")
	for i := 0; i < len(parts); i += 2 {
		parts[i] = strings.ReplaceAll(parts[i], "<", `\<`)
	}
	return strings.ReplaceAll(strings.Join(parts, "`"), "|", `\|`)
}
