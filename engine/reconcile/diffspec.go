package reconcile

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// FieldChange is one field in which a container, as inspected, differs from
// its desired workload: the field-by-field diff of DESIGN §8, never only a
// hash.
type FieldChange struct {
	Field string // image, image ID, version, command, entrypoint, env, ports, labels, healthcheck, limits, restart, stop_signal, networks
	Key   string // the variable or label name for env and labels; "" otherwise
	Kind  string // "+" desired adds it, "-" desired drops it, "~" it changes
	Old   string // what the container has; "" for env unless values were asked for
	New   string // what is desired; likewise
}

// String renders the change as a plan line: "~ image: web:v1 → web:v2",
// "+ env GREETING", "~ env GREETING: hi → hello" (values only when asked).
func (c FieldChange) String() string {
	name := c.Field
	if c.Key != "" {
		name += " " + c.Key
	}
	switch {
	case c.Old == "" && c.New == "":
		return c.Kind + " " + name
	case c.Kind == "+":
		return c.Kind + " " + name + ": " + c.New
	case c.Kind == "-":
		return c.Kind + " " + name + ": " + c.Old
	}
	return c.Kind + " " + name + ": " + c.Old + " → " + c.New
}

// SpecDiff compares the desired workload w with container c as inspected,
// field by field: image (tag and ID), version, command, entrypoint,
// environment, ports, labels (rollcall's own left out), healthcheck,
// limits, restart policy, stop signal, networks and pre_stop (from the
// container's own label). It is pure. Network aliases are not compared: the
// inspect does not tell them apart from the engine's own.
//
// Environment values are secrets: they are compared, but only their names
// are shown unless showValues is set. A command, entrypoint, environment or
// label the desired state leaves to the image is compared with the
// container's image's defaults (a label baked into the image is no removed
// label); where that image is unknown (removed since), only what the
// desired state sets is compared.
func SpecDiff(prefix string, w *spec.Resolved, c docker.ContainerDetail, showValues bool) []FieldChange {
	var out []FieldChange
	change := func(field, old, new string) {
		if old != new {
			out = append(out, FieldChange{Field: field, Kind: "~", Old: old, New: new})
		}
	}
	cfg := c.Config
	if c.Image != w.Image {
		change("image", c.Image, w.Image)
	} else if w.ImageID != "" && c.ImageID != w.ImageID {
		change("image ID", shortID(c.ImageID), shortID(w.ImageID))
	}
	if v, ok := c.Labels[docker.VersionLabel(prefix)]; ok || w.Version != "" {
		change("version", quoteEmpty(v), quoteEmpty(w.Version))
	}
	if len(w.Command) > 0 || cfg.ImageKnown {
		want := w.Command
		if len(want) == 0 {
			want = cfg.ImageCmd
		}
		change("command", argv(cfg.Cmd), argv(want))
	}
	if cfg.ImageKnown || w.Options.Entrypoint != nil {
		change("entrypoint", argv(cfg.Entrypoint), argv(desiredEntrypoint(w.Workload, cfg)))
	}
	out = append(out, envChanges(w.Environment, cfg, showValues)...)
	change("ports", portsText(cfg.Ports), portsText(desiredPorts(w.Ports)))
	out = append(out, labelChanges(prefix, w.Labels, c.Labels, cfg)...)
	change("healthcheck", healthText(cfg.Healthcheck), healthText(desiredHealth(w.Healthcheck)))
	want := DesiredLimits(w.Workload)
	change("limits", cpuMemText(c.Limits), cpuMemText(want))
	change("restart", normRestart(c.Limits.Restart), want.Restart)
	change("stop_signal", orDefault(cfg.StopSignal, spec.DefaultStopSignal), orDefault(w.StopSignal, spec.DefaultStopSignal))
	change("networks", networksText(cfg.Networks), networksText(desiredNetworks(w.Workload)))
	change("pre_stop", preStopText(c.Labels[docker.PreStopLabel(prefix)]), preStopText(preStopLabel(w.Workload)))
	out = append(out, mountChanges(prefix, w, c)...)
	return out
}

// preStopText shows a pre-stop label (a JSON argv) as the plan writes
// commands; "none" for none.
func preStopText(label string) string {
	if label == "" {
		return "none"
	}
	var cmd []string
	if err := json.Unmarshal([]byte(label), &cmd); err != nil {
		return label
	}
	return argv(cmd)
}

func envChanges(desired map[string]string, cfg docker.ContainerConfig, showValues bool) []FieldChange {
	have := envMap(cfg.Env)
	want := envMap(cfg.ImageEnv) // what the image supplies stays, unless desired overrides it
	maps.Copy(want, desired)
	var out []FieldChange
	for _, k := range slices.Sorted(maps.Keys(want)) {
		old, ok := have[k]
		switch {
		case !ok:
			out = append(out, FieldChange{Field: "env", Key: k, Kind: "+"})
		case old != want[k]:
			out = append(out, FieldChange{Field: "env", Key: k, Kind: "~"})
		default:
			continue
		}
		if showValues {
			out[len(out)-1].Old, out[len(out)-1].New = old, want[k]
		}
	}
	if !cfg.ImageKnown {
		return out // the image's own variables cannot be told from dropped ones
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok {
			fc := FieldChange{Field: "env", Key: k, Kind: "-"}
			if showValues {
				fc.Old = have[k]
			}
			out = append(out, fc)
		}
	}
	return out
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

// labelChanges compares the workload's own labels with the container's:
// those the image supplies (the container carries them without the desired
// state setting them) stay, unless desired overrides them, as the
// environment does. rollcall's (the prefix's) are its bookkeeping, shown as
// version or not at all. With the image unknown, a label the desired state
// does not set cannot be told from the image's, so none shows as dropped.
func labelChanges(prefix string, desired map[string]string, have map[string]string, cfg docker.ContainerConfig) []FieldChange {
	ours := func(k string) bool { return strings.HasPrefix(k, prefix+".") }
	want := maps.Clone(cfg.ImageLabels)
	if want == nil {
		want = map[string]string{}
	}
	maps.DeleteFunc(want, func(k, _ string) bool { return ours(k) })
	maps.Copy(want, desired)
	var out []FieldChange
	for _, k := range slices.Sorted(maps.Keys(want)) {
		old, ok := have[k]
		switch {
		case !ok:
			out = append(out, FieldChange{Field: "labels", Key: k, Kind: "+", New: want[k]})
		case old != want[k]:
			out = append(out, FieldChange{Field: "labels", Key: k, Kind: "~", Old: old, New: want[k]})
		}
	}
	if !cfg.ImageKnown {
		return out
	}
	for _, k := range slices.Sorted(maps.Keys(have)) {
		if _, ok := want[k]; !ok && !ours(k) {
			out = append(out, FieldChange{Field: "labels", Key: k, Kind: "-", Old: have[k]})
		}
	}
	return out
}

func argv(a []string) string {
	if len(a) == 0 {
		return "[]"
	}
	q := make([]string, len(a))
	for i, s := range a {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

func desiredPorts(ps []spec.Port) []docker.PortSpec {
	out := make([]docker.PortSpec, len(ps))
	for i, p := range ps {
		out[i] = docker.PortSpec{HostIP: p.HostIP, HostPort: p.HostPort, ContainerPort: p.ContainerPort, Proto: p.Proto}
	}
	return out
}

// portsText renders ports as compose writes them, "127.0.0.1::8080/tcp",
// sorted, with the engine's defaults (127.0.0.1, tcp) filled in.
func portsText(ps []docker.PortSpec) string {
	var s []string
	for _, p := range ps {
		host := ""
		if p.HostPort > 0 {
			host = strconv.Itoa(p.HostPort)
		}
		s = append(s, fmt.Sprintf("%s:%s:%d/%s", orDefault(p.HostIP, "127.0.0.1"), host, p.ContainerPort, orDefault(p.Proto, "tcp")))
	}
	slices.Sort(s)
	return "[" + strings.Join(s, ", ") + "]"
}

func desiredHealth(h *spec.Healthcheck) *docker.Healthcheck {
	if h == nil {
		return nil
	}
	return &docker.Healthcheck{Test: h.Test, Interval: h.Interval, Timeout: h.Timeout, Retries: h.Retries, StartPeriod: h.StartPeriod}
}

func healthText(h *docker.Healthcheck) string {
	if h == nil {
		return "none"
	}
	return fmt.Sprintf("%s interval %s timeout %s retries %d start_period %s", argv(h.Test), h.Interval, h.Timeout, h.Retries, h.StartPeriod)
}

// networksText reads no network and the engine's default bridge alike.
func networksText(ns []string) string {
	s := slices.Clone(ns)
	slices.Sort(s)
	if len(s) == 0 || (len(s) == 1 && (s[0] == "bridge" || s[0] == "default")) {
		return "[default]"
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
