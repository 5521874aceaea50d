package docker

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/distribution/reference"
)

// SpecError is a service spec that a swarm cannot run as written: each
// problem names the option (in the file's terms) and why. The moby adapter
// and the fake refuse such a spec before it reaches a manager.
type SpecError struct {
	Service  string
	Problems []SpecProblem
}

// SpecProblem is one option of a service spec that a swarm cannot honour,
// or would store otherwise than written.
type SpecProblem struct {
	Option string // "security_opt", "restart", "volume pgdata", "update.order", …
	Why    string
}

func (e *SpecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "service %s: not possible on a swarm:", e.Service)
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s: %s", p.Option, p.Why)
	}
	return b.String()
}

// Check reports, as a *SpecError, what in s a Swarm service cannot honour
// (a privileged task, a device, an external volume Swarm would create on
// any node), and what Swarm would store otherwise than written (a default
// it fills in, a setting it has no field for), so that a spec that passes
// reads back as it was written (see ServiceSpec). nil when s can be run.
func (s ServiceSpec) Check() error {
	var ps []SpecProblem
	bad := func(option, format string, args ...any) {
		ps = append(ps, SpecProblem{Option: option, Why: fmt.Sprintf(format, args...)})
	}
	if s.Name == "" {
		bad("name", "a service needs a name")
	}
	if s.Replicas < 0 {
		bad("replicas", "%d is below 0", s.Replicas)
	}
	checkUpdate(bad, "update", s.Update)
	checkUpdate(bad, "rollback", s.Rollback)
	switch s.EndpointMode {
	case "vip", "dnsrr":
	case "":
		if len(s.Ports) > 0 {
			bad("endpoint_mode", "name vip or dnsrr: with ports published, Swarm stores vip")
		}
	default:
		bad("endpoint_mode", "%q: want vip or dnsrr", s.EndpointMode)
	}
	for _, p := range s.Ports {
		opt := "ports " + strconv.Itoa(p.Target)
		if p.Target < 1 || p.Target > 65535 || p.Published < 0 || p.Published > 65535 {
			bad(opt, "port out of range")
		}
		if !slices.Contains([]string{"tcp", "udp", "sctp"}, p.Proto) {
			bad(opt, "protocol %q: want tcp, udp or sctp", p.Proto)
		}
		switch p.Mode {
		case PublishHost:
		case PublishIngress:
			if s.EndpointMode == "dnsrr" {
				bad(opt, "the routing mesh (mode ingress) needs endpoint_mode vip; publish in mode host")
			}
		default:
			bad(opt, "mode %q: want ingress or host", p.Mode)
		}
	}
	checkPlacement(bad, s.Placement)
	checkRestart(bad, s.Restart)
	if s.Reservations.NanoCPUs < 0 || s.Reservations.Memory < 0 {
		bad("resources.reservations", "reservations are 0 or more")
	}
	checkTask(bad, s.Task)
	if len(ps) > 0 {
		return &SpecError{Service: s.Name, Problems: ps}
	}
	return nil
}

func checkUpdate(bad func(string, string, ...any), what string, u UpdateConfig) {
	if u == (UpdateConfig{}) {
		return
	}
	if u.Parallelism < 0 || u.Delay < 0 || u.Monitor < 0 {
		bad(what, "parallelism, delay and monitor are 0 or more")
	}
	if u.MaxFailureRatio < 0 || u.MaxFailureRatio > 1 {
		bad(what+".max_failure_ratio", "%v is not between 0 and 1", u.MaxFailureRatio)
	}
	if !slices.Contains([]string{FailurePause, FailureRollback, FailureContinue}, u.FailureAction) {
		bad(what+".failure_action", "%q: want pause, rollback or continue (empty, Swarm stores pause)", u.FailureAction)
	}
	if !slices.Contains([]string{OrderStartFirst, OrderStopFirst}, u.Order) {
		bad(what+".order", "%q: want start-first or stop-first (empty, Swarm stores stop-first)", u.Order)
	}
}

// checkTask is Check of the task template: a CreateSpec's options that a
// Swarm task spec (API 1.41) has no field for, or stores otherwise.
func checkTask(bad func(string, string, ...any), t CreateSpec) {
	if t.Name != "" {
		bad("container_name", "Swarm names a service's tasks itself")
	}
	if t.Image == "" {
		bad("image", "a service needs an image")
	}
	if len(t.Ports) > 0 {
		bad("ports", "a service publishes through its endpoint (the service's ports), not its task")
	}
	if hc := t.Healthcheck; hc != nil {
		switch {
		case len(hc.Test) == 0:
			bad("healthcheck", "a test is required")
		case hc.Test[0] == "NONE":
			bad("healthcheck", "disable: leave the healthcheck out, which disables the image's")
		}
	}
	if t.StopTimeout < 0 {
		bad("stop_grace_period", "below 0")
	}
	if t.Limits.NanoCPUs < 0 || t.Limits.Memory < 0 {
		bad("resources", "limits are 0 or more")
	}
	if t.Limits.Restart != "" {
		bad("restart", "%q: a service's restart policy is its restart_policy (ServiceSpec.Restart), not a container's", t.Limits.Restart)
	}

	o := t.Options
	if o.Entrypoint != nil && len(o.Entrypoint) == 0 {
		bad("entrypoint", "an empty entrypoint (clearing the image's) has no form in a Swarm task; name one")
	}
	if len(o.SecurityOpt) > 0 {
		bad("security_opt", "a Swarm task takes no security options")
	}
	if o.Privileged {
		bad("privileged", "a Swarm task cannot be privileged")
	}
	if o.ShmSize != 0 {
		bad("shm_size", "a Swarm task has no shm size (mount a tmpfs at /dev/shm)")
	}
	if len(o.Devices) > 0 {
		bad("devices", "a Swarm task maps no devices")
	}
	if len(o.Expose) > 0 {
		bad("expose", "a Swarm task exposes nothing (every port is open on its networks)")
	}
	switch o.NetworkMode {
	case "":
	case NetworkHost:
		if len(t.Networks) > 0 {
			bad("network_mode", "host with networks: a task on the host's network joins no other")
		}
	default:
		bad("network_mode", "%q: a Swarm task is on its networks, or on host", o.NetworkMode)
	}
	for _, d := range o.DNS {
		if _, err := netip.ParseAddr(d); err != nil {
			bad("dns", "%q is not an IP address", d)
		}
	}
	for _, h := range o.ExtraHosts {
		if name, ip, ok := strings.Cut(h, ":"); !ok || name == "" || ip == "" {
			bad("extra_hosts", "%q: want host:ip", h)
		}
	}
	for n := range t.Aliases {
		if !slices.Contains(t.Networks, n) {
			bad("networks", "aliases on %s, which the task is not on", n)
		}
	}

	mounted := map[string]bool{}
	for _, m := range t.Mounts {
		opt := "volumes " + m.Target
		switch {
		case m.Target == "":
			bad("volumes", "a mount needs a target")
		case m.Type != MountBind && m.Type != MountVolume && m.Type != MountTmpfs:
			bad(opt, "type %q: want bind, volume or tmpfs", m.Type)
		case m.Type == MountBind && m.Source == "":
			bad(opt, "a bind needs a source")
		case m.Type != MountTmpfs && m.Size != 0:
			bad(opt, "a size is for a tmpfs")
		}
		if m.Type == MountVolume && m.Source != "" {
			mounted[m.Source] = true
		}
	}
	seen := map[string]bool{}
	for _, v := range t.Volumes {
		opt := "volume " + v.Name
		switch {
		case v.External:
			bad(opt, "external: Swarm creates a missing volume on the node a task lands on, it cannot refuse one")
		case !mounted[v.Name]:
			bad(opt, "no mount of the task uses it")
		case seen[v.Name]:
			bad(opt, "named twice")
		}
		seen[v.Name] = true
	}
}

// ServiceImage is ref as a swarm keeps it in a service's task template:
// the client stores the familiar form with a tag ("web" is "web:latest",
// "docker.io/library/web:1" is "web:1"). A reference that does not parse
// (an image ID) is kept as it is.
func ServiceImage(ref string) string {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return ref
	}
	return reference.FamiliarString(reference.TagNameOnly(named))
}

// checkPlacement refuses what swarmkit's constraint parser refuses (an
// expression without == or !=, or with an empty side) and a spread
// preference without a descriptor.
func checkPlacement(bad func(string, string, ...any), p Placement) {
	for _, c := range p.Constraints {
		if !constraintOK(c) {
			bad("placement.constraints", "%q: want <key> == <value> or <key> != <value>", c)
		}
	}
	for _, d := range p.Preferences {
		if strings.TrimSpace(d) == "" {
			bad("placement.preferences", "a spread preference names a descriptor (node.labels.zone)")
		}
	}
	if p.MaxReplicas < 0 {
		bad("placement.max_replicas_per_node", "%d is below 0", p.MaxReplicas)
	}
}

// constraintOK: "key == value" or "key != value", both sides non-empty.
func constraintOK(c string) bool {
	for _, op := range []string{"==", "!="} {
		if k, v, ok := strings.Cut(c, op); ok {
			return strings.TrimSpace(k) != "" && strings.TrimSpace(v) != "" && !strings.ContainsAny(v, "=!")
		}
	}
	return false
}

// checkRestart: the zero policy is Swarm's default; any other names its
// condition, and nothing is below 0.
func checkRestart(bad func(string, string, ...any), r SwarmRestart) {
	if r == (SwarmRestart{}) {
		return
	}
	if !slices.Contains([]string{RestartNone, RestartOnFailure, RestartAny}, r.Condition) {
		bad("restart_policy.condition", "%q: want none, on-failure or any", r.Condition)
	}
	if r.Delay < 0 || r.MaxAttempts < 0 || r.Window < 0 {
		bad("restart_policy", "delay, max attempts and window are 0 or more")
	}
}
