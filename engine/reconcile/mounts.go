package reconcile

import (
	"maps"
	"strconv"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// createMounts are a slot's mounts and the named volumes they need: the
// workload's own, then a volume of the slot's at each target the image
// declares VOLUME at (spec.Resolved.ImageVolumes). A slot's own volume is
// named by the slot alone (spec.SlotVolumeName), so every container the
// slot has mounts the same one, and a roll keeps its data.
func createMounts(prefix string, w *spec.Resolved, slot int) ([]docker.Mount, []docker.VolumeSpec) {
	var mounts []docker.Mount
	var needs []docker.VolumeSpec
	slotVolume := func(target string, readOnly bool) {
		name := spec.SlotVolumeName(prefix, w.Name, slot, target)
		mounts = append(mounts, docker.Mount{Type: string(spec.MountVolume), Source: name, Target: target, ReadOnly: readOnly})
		needs = append(needs, docker.VolumeSpec{Name: name, Labels: map[string]string{
			docker.ManagedLabel(prefix):  "true",
			docker.WorkloadLabel(prefix): w.Name,
			docker.SlotLabel(prefix):     strconv.Itoa(slot),
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
