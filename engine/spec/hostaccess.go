package spec

import (
	"fmt"
	"strings"
)

// HostAccess is what in the workload reaches past its container into the
// host: bind mounts, privileged, devices, added capabilities, the host's
// network, security options. A file the operator wrote may ask for them;
// one served by a control plane (a URL) may not unless the operator says
// so, since whoever controls that server would own the host.
func (w *Workload) HostAccess() []string {
	var out []string
	for _, m := range w.Mounts {
		if m.Type == MountBind {
			out = append(out, fmt.Sprintf("bind %s (line %d)", m.Source, m.Line))
		}
	}
	o := w.Options
	if o.Privileged {
		out = append(out, "privileged")
	}
	if len(o.Devices) > 0 {
		out = append(out, "devices "+strings.Join(o.Devices, ", "))
	}
	if len(o.CapAdd) > 0 {
		out = append(out, "cap_add "+strings.Join(o.CapAdd, ", "))
	}
	if o.NetworkMode == NetworkHost {
		out = append(out, "network_mode: host")
	}
	if len(o.SecurityOpt) > 0 {
		out = append(out, "security_opt "+strings.Join(o.SecurityOpt, ", "))
	}
	return out
}

// HostAccessError is a desired state from a control plane that reaches
// into the host (Workload.HostAccess) while the operator did not allow it.
type HostAccessError struct {
	Source string
	What   map[string][]string // by workload
}

func (e *HostAccessError) Error() string {
	var parts []string
	for _, name := range sortedKeys(e.What) {
		parts = append(parts, name+": "+strings.Join(e.What[name], "; "))
	}
	return fmt.Sprintf("desired state from %s reaches into the host (%s): refused; pass --allow-host-access to let a served file do that", e.Source, strings.Join(parts, " | "))
}

// CheckHostAccess is a *HostAccessError naming every workload of d that
// reaches into the host; nil when none does.
func CheckHostAccess(d *Desired) error {
	what := map[string][]string{}
	for _, name := range d.Names() {
		if a := d.Workloads[name].HostAccess(); len(a) > 0 {
			what[name] = a
		}
	}
	if len(what) == 0 {
		return nil
	}
	return &HostAccessError{Source: d.Source, What: what}
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
