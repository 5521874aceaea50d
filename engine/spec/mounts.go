package spec

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MountType is what a mount puts at its target.
type MountType string

const (
	MountBind   MountType = "bind"   // a host path
	MountVolume MountType = "volume" // a named volume, or the slot's own (SlotVolume)
	MountTmpfs  MountType = "tmpfs"  // memory, empty at each start
)

// Mount is one entry of a workload's volumes (or tmpfs).
type Mount struct {
	Type MountType
	// Source is, for a bind mount, the host path, absolute and clean; for a
	// volume, the key of the document's top-level volumes it names, ""
	// for the slot's own volume (an anonymous volume in the file, which
	// rollcall keeps per slot so that a roll does not lose it).
	Source string
	// Volume is the engine's name of a named volume (Volume.Name); "" for
	// the other types and for the slot's own volume.
	Volume string
	// Def is the top-level volume a named volume's mount names (its
	// driver, options, external); nil for the other mounts.
	Def      *Volume
	Target   string // absolute path in the container
	ReadOnly bool
	Size     int64 // tmpfs: bytes; 0: the engine's default

	Line, Col int // where the file has it, for findings
}

// Volume is one entry of the document's top-level volumes: a named volume
// the workloads mount. rollcall creates one that is missing (with its
// managed label), never removes one, and never changes one that exists. On
// a swarm each node has its own, which Swarm's agent creates with the
// mount's driver and options when a task needs it.
type Volume struct {
	Key        string // as the file names it
	Name       string // the engine's name: name:, else <prefix>_<key> (compose: <project>_<key>)
	Driver     string // "" for the engine's default
	DriverOpts map[string]string
	// External says the volume is made outside rollcall: it must exist,
	// and rollcall never creates it.
	External bool
	Line     int
	Col      int
}

// StopFirstCause says why a workload's slots go down while they roll: the
// old container is stopped before its replacement starts. "" rolls
// start-first.
type StopFirstCause string

const (
	StopFirstChosen   StopFirstCause = "chosen"    // update.order: stop-first
	StopFirstHostPort StopFirstCause = "host-port" // a fixed host port: two containers cannot bind it
	// StopFirstHostNetwork: network_mode host, where every port the
	// container binds is a host port.
	StopFirstHostNetwork StopFirstCause = "host-network"
	// StopFirstData: one replica writes a named volume or a bind mount;
	// two writers on one data directory corrupt it. update.order:
	// start-first in the file turns it off.
	StopFirstData StopFirstCause = "data"
	// StopFirstSlotVolume: the slot keeps its own volume (an anonymous
	// volume of the file, or a VOLUME of the image) across rolls, and old
	// and new would write it together. update.order: start-first in the
	// file turns it off.
	StopFirstSlotVolume StopFirstCause = "slot-volume"
)

// String is the cause in words, for the plan: "one replica writes volume
// pgdata".
func (c StopFirstCause) String() string {
	switch c {
	case StopFirstChosen:
		return "update.order: stop-first"
	case StopFirstHostPort:
		return "a fixed host port"
	case StopFirstHostNetwork:
		return "network_mode: host"
	case StopFirstData:
		return "one replica writes its data"
	case StopFirstSlotVolume:
		return "the slot keeps its volume"
	}
	return string(c)
}

// StopFirst says why the workload rolls stop-first, as far as the file
// tells ("" when it rolls start-first); Resolved.StopFirst adds what the
// image declares. On a swarm a fixed host port is no cause: Swarm's
// routing mesh publishes one port for the whole service, whatever its
// tasks.
func (w *Workload) StopFirst() (StopFirstCause, string) {
	switch {
	case w.FixedHostPort() && w.Swarm == nil:
		return StopFirstHostPort, ""
	case w.Options.NetworkMode == NetworkHost:
		return StopFirstHostNetwork, ""
	case w.Update.Order == OrderStopFirst:
		return StopFirstChosen, ""
	case w.Update.OrderSet:
		return "", ""
	}
	for _, m := range w.Mounts {
		if m.Type == MountVolume && m.Source == "" && !m.ReadOnly {
			return StopFirstSlotVolume, m.Target
		}
	}
	if w.Replicas <= 1 {
		for _, m := range w.Mounts {
			if (m.Type == MountVolume || m.Type == MountBind) && !m.ReadOnly {
				return StopFirstData, m.what()
			}
		}
	}
	return "", ""
}

// what names a mount in the plan's words: "volume pgdata", "bind /srv/x".
func (m Mount) what() string {
	switch {
	case m.Type == MountVolume && m.Source != "":
		return "volume " + m.Source
	case m.Type == MountBind:
		return "bind " + m.Source
	}
	return string(m.Type) + " " + m.Target
}

// SlotVolumeName is the engine's name of a slot's own volume at target:
// <prefix>_<workload>_<slot>_<target with '/' as '-'>, e.g.
// rollcall_db_0_var-lib-postgresql-data. It depends on nothing but the
// slot, so every container the slot ever has mounts the same volume.
func SlotVolumeName(prefix, workload string, slot int, target string) string {
	return SlotVolumeNameOf(prefix, workload, strconv.Itoa(slot), target)
}

// SlotVolumeNameOf is SlotVolumeName with the slot as text: an index, or
// an engine's placeholder for one (a Swarm's "{{.Task.Slot}}", which each
// node expands as it creates a task's container).
func SlotVolumeNameOf(prefix, workload, slot, target string) string {
	t := strings.Trim(volumeUnsafeRE.ReplaceAllString(filepath.Clean(target), "-"), "-")
	if t == "" {
		t = "root"
	}
	return fmt.Sprintf("%s_%s_%s_%s", prefix, workload, slot, t)
}

var volumeUnsafeRE = regexp.MustCompile(`[^a-zA-Z0-9_.-]+`)

// slotVolumes are the image's VOLUME targets that no mount of w covers,
// sorted.
func slotVolumes(w *Workload, declared []string) []string {
	var out []string
	for _, t := range declared {
		t = filepath.Clean(t)
		if !slices.ContainsFunc(w.Mounts, func(m Mount) bool { return m.Target == t }) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out
}

// StopFirst says why the resolved workload rolls stop-first: the file's
// causes (Workload.StopFirst), then the image's VOLUMEs, which each slot
// keeps (unless the file says start-first).
func (r *Resolved) StopFirst() (StopFirstCause, string) {
	if c, what := r.Workload.StopFirst(); c != "" || r.Update.OrderSet {
		return c, what
	}
	if len(r.ImageVolumes) > 0 {
		return StopFirstSlotVolume, r.ImageVolumes[0]
	}
	return "", ""
}

// EffectiveOrder is the order the resolved workload rolls in.
func (r *Resolved) EffectiveOrder() string {
	if c, _ := r.StopFirst(); c != "" {
		return OrderStopFirst
	}
	return OrderStartFirst
}
