package spec

import (
	"reflect"
	"testing"
)

// TestImageVolumesAreKeptPerSlot: a VOLUME of the image that no mount
// covers is the slot's own volume, and rolls the workload stop-first
// unless the file says start-first.
func TestImageVolumesAreKeptPerSlot(t *testing.T) {
	w := &Workload{Name: "db", Replicas: 2, Update: UpdatePolicy{Order: OrderStartFirst}, Mounts: []Mount{{Type: MountVolume, Source: "v", Target: "/covered"}}}
	r := &Resolved{Workload: w, ImageVolumes: slotVolumes(w, []string{"/var/lib/data/", "/covered", "/a"})}
	if want := []string{"/a", "/var/lib/data"}; !reflect.DeepEqual(r.ImageVolumes, want) {
		t.Fatalf("ImageVolumes = %q, want %q", r.ImageVolumes, want)
	}
	if c, what := r.StopFirst(); c != StopFirstSlotVolume || what != "/a" || r.EffectiveOrder() != OrderStopFirst {
		t.Errorf("StopFirst() = %q %q, order %s", c, what, r.EffectiveOrder())
	}
	w.Update.OrderSet = true
	if c, _ := r.StopFirst(); c != "" || r.EffectiveOrder() != OrderStartFirst {
		t.Errorf("start-first written in the file: StopFirst() = %q", c)
	}
	if a, b := SlotVolumeName("shop", "db", 0, "/var/lib/data"), SlotVolumeName("shop", "db", 1, "/var/lib/data"); a != "shop_db_0_var-lib-data" || a == b {
		t.Errorf("slot volume names %q, %q", a, b)
	}
}

// TestMountsAreInTheHash: a changed mount rolls; a workload without mounts
// keeps the hash it had before mounts existed (pinned in hash_test.go).
func TestMountsAreInTheHash(t *testing.T) {
	base := &Workload{Name: "db", Image: "postgres:16", Mounts: []Mount{
		{Type: MountVolume, Source: "pgdata", Volume: "shop_pgdata", Target: "/data"},
		{Type: MountBind, Source: "/etc/app.conf", Target: "/app.conf", ReadOnly: true},
	}}
	h := Hash(base, "sha256:1")
	for name, change := range map[string]func(w *Workload){
		"target":        func(w *Workload) { w.Mounts[0].Target = "/other" },
		"volume name":   func(w *Workload) { w.Mounts[0].Volume = "shop_other" },
		"bind source":   func(w *Workload) { w.Mounts[1].Source = "/etc/other.conf" },
		"read-only":     func(w *Workload) { w.Mounts[1].ReadOnly = false },
		"one more":      func(w *Workload) { w.Mounts = append(w.Mounts, Mount{Type: MountTmpfs, Target: "/tmp"}) },
		"read_only ros": func(w *Workload) { w.ReadOnly = true },
	} {
		w := *base
		w.Mounts = append([]Mount(nil), base.Mounts...)
		change(&w)
		if Hash(&w, "sha256:1") == h {
			t.Errorf("%s: hash unchanged", name)
		}
	}
	swapped := *base
	swapped.Mounts = []Mount{base.Mounts[1], base.Mounts[0]}
	swapped.Mounts[0].Line = 99
	if Hash(&swapped, "sha256:1") != h {
		t.Error("the order of the mounts or their place in the file changed the hash")
	}
}
