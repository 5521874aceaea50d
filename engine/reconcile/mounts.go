package reconcile

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// createMounts are a slot's mounts and the named volumes they need: the
// workload's own, then a volume of the slot's at each target the image
// declares VOLUME at (spec.Resolved.ImageVolumes). A slot's own volume is
// named by the slot alone (spec.SlotVolumeName), so every container the
// slot has mounts the same one, and a roll keeps its data.
func createMounts(prefix string, w *spec.Resolved, slot string) ([]docker.Mount, []docker.VolumeSpec) {
	var mounts []docker.Mount
	var needs []docker.VolumeSpec
	slotVolume := func(target string, readOnly bool) {
		name := spec.SlotVolumeNameOf(prefix, w.Name, slot, target)
		mounts = append(mounts, docker.Mount{Type: string(spec.MountVolume), Source: name, Target: target, ReadOnly: readOnly})
		needs = append(needs, docker.VolumeSpec{Name: name, Labels: map[string]string{
			docker.ManagedLabel(prefix):  "true",
			docker.WorkloadLabel(prefix): w.Name,
			docker.SlotLabel(prefix):     slot,
		}})
	}
	for _, m := range w.Mounts {
		switch {
		case m.Type == spec.MountVolume && m.Source == "":
			slotVolume(m.Target, m.ReadOnly)
		case m.Type == spec.MountVolume:
			mounts = append(mounts, docker.Mount{Type: string(m.Type), Source: m.Volume, Target: m.Target, ReadOnly: m.ReadOnly})
			v := m.Def
			need := docker.VolumeSpec{Name: m.Volume, Labels: map[string]string{docker.ManagedLabel(prefix): "true"}}
			if v != nil {
				need.Driver, need.DriverOpts, need.External = v.Driver, maps.Clone(v.DriverOpts), v.External
			}
			needs = append(needs, need)
		default:
			mounts = append(mounts, docker.Mount{Type: string(m.Type), Source: m.Source, Target: m.Target, ReadOnly: m.ReadOnly, Size: m.Size})
		}
	}
	for _, t := range w.ImageVolumes {
		slotVolume(t, false)
	}
	return mounts, needs
}

// mountChanges compares the mounts container c was created with and the
// ones its slot asks for now, a line per target: "+ mount /data: volume
// shop_pgdata", "~ mount /etc/app.conf: bind /a ro → bind /b ro", and the
// read-only root.
func mountChanges(prefix string, w *spec.Resolved, c docker.ContainerDetail) []FieldChange {
	slot, err := strconv.Atoi(c.Labels[docker.SlotLabel(prefix)])
	if err != nil {
		return nil
	}
	want, _ := createMounts(prefix, w, strconv.Itoa(slot))
	have := map[string]string{}
	for _, m := range c.Config.Mounts {
		have[m.Target] = mountText(m)
	}
	wanted := map[string]string{}
	for _, m := range want {
		wanted[m.Target] = mountText(m)
	}
	var out []FieldChange
	for _, t := range slices.Sorted(maps.Keys(wanted)) {
		switch old, ok := have[t]; {
		case !ok:
			out = append(out, FieldChange{Field: "mount", Key: t, Kind: "+", New: wanted[t]})
		case old != wanted[t]:
			out = append(out, FieldChange{Field: "mount", Key: t, Kind: "~", Old: old, New: wanted[t]})
		}
	}
	for _, t := range slices.Sorted(maps.Keys(have)) {
		if _, ok := wanted[t]; !ok {
			out = append(out, FieldChange{Field: "mount", Key: t, Kind: "-", Old: have[t]})
		}
	}
	if c.Config.ReadOnly != w.ReadOnly {
		out = append(out, FieldChange{Field: "read_only", Kind: "~", Old: strconv.FormatBool(c.Config.ReadOnly), New: strconv.FormatBool(w.ReadOnly)})
	}
	return out
}

// mountText is a mount in the plan's words: "volume shop_pgdata", "bind
// /etc/app.conf ro", "tmpfs 64M".
func mountText(m docker.Mount) string {
	s := cmp.Or(strings.TrimSpace(m.Type+" "+m.Source), m.Type)
	if m.Size > 0 {
		s += " " + strconv.FormatInt(m.Size>>10, 10) + "k"
	}
	if m.ReadOnly {
		s += " ro"
	}
	return s
}
