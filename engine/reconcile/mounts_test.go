package reconcile

import (
	"context"
	"reflect"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// A database of one replica with a read-write volume rolls stop-first: two
// writers on one data directory corrupt it. The plan says why, as data.
func TestOneReplicaWritingAVolumeRollsStopFirst(t *testing.T) {
	pgdata := &spec.Volume{Key: "pgdata", Name: "shop_pgdata"}
	withData := func(w *spec.Workload) {
		w.Mounts = []spec.Mount{{Type: spec.MountVolume, Source: "pgdata", Volume: "shop_pgdata", Def: pgdata, Target: "/var/lib/postgresql/data"}}
	}
	d := resolved(workload("db", 1, withData))
	p := Diff(d, observed(stale(d, "db", 0)))
	equalStrings(t, actions(p), []string{"roll db/0"})
	s := p.Steps()[0]
	if !s.Downtime || s.Why.Kind != ReasonStopFirst || s.Why.StopFirst != spec.StopFirstData || s.Why.StopFirstWhat != "volume pgdata" {
		t.Fatalf("step %+v", s)
	}
	if want := "stop-first (one replica writes volume pgdata): slot down until the new container is healthy"; s.Reason[:len(want)] != want {
		t.Errorf("reason %q", s.Reason)
	}

	// The file says start-first: the operator's word stands.
	startFirst := func(w *spec.Workload) { w.Update.Order, w.Update.OrderSet = spec.OrderStartFirst, true }
	d = resolved(workload("db", 1, withData, startFirst))
	equalStrings(t, actions(Diff(d, observed(stale(d, "db", 0)))), []string{"start db/0"})
}

// An image's VOLUME is the slot's own volume in every container the slot
// has: the create spec names it by the slot, so a roll keeps the data.
func TestImageVolumeIsTheSlotsOwn(t *testing.T) {
	d := &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{"db": workload("db", 2)}}
	r := spec.Resolve(context.Background(), d, volumeImages{"db:v2": {"/data"}})
	p := Diff(r, observed(stale(r, "db", 0), stale(r, "db", 1)))
	equalStrings(t, actions(p), []string{"roll db/0", "wait db/1"})
	if s := p.Steps()[0]; s.Why.StopFirst != spec.StopFirstSlotVolume || s.Why.StopFirstWhat != "/data" {
		t.Fatalf("step %+v", s.Why)
	}
	p = Diff(r, observed(stale(r, "db", 1)))
	var create *docker.CreateSpec
	for _, s := range p.Steps() {
		if s.Action == ActStart {
			create = s.Create
		}
	}
	if create == nil {
		t.Fatalf("no start in %v", actions(p))
	}
	name := spec.SlotVolumeName(pfx, "db", 0, "/data")
	if want := []docker.Mount{{Type: "volume", Source: name, Target: "/data"}}; !reflect.DeepEqual(create.Mounts, want) {
		t.Errorf("mounts %+v, want %+v", create.Mounts, want)
	}
	if len(create.Volumes) != 1 || create.Volumes[0].Name != name || create.Volumes[0].Labels[docker.ManagedLabel(pfx)] != "true" {
		t.Errorf("volumes %+v", create.Volumes)
	}
}

// The create spec carries every mount, a named volume's driver and
// options, and the read-only root.
func TestCreateSpecCarriesTheMounts(t *testing.T) {
	cache := &spec.Volume{Key: "cache", Name: "shop_cache", Driver: "local", DriverOpts: map[string]string{"type": "tmpfs"}}
	ext := &spec.Volume{Key: "up", Name: "uploads", External: true}
	d := resolved(workload("web", 1, func(w *spec.Workload) {
		w.ReadOnly = true
		w.Mounts = []spec.Mount{
			{Type: spec.MountBind, Source: "/etc/app.conf", Target: "/app.conf", ReadOnly: true},
			{Type: spec.MountVolume, Source: "cache", Volume: "shop_cache", Def: cache, Target: "/cache"},
			{Type: spec.MountVolume, Source: "up", Volume: "uploads", Def: ext, Target: "/up", ReadOnly: true},
			{Type: spec.MountTmpfs, Target: "/tmp", Size: 1 << 20},
		}
	}))
	c := CreateSpec(pfx, d.Workload("web"), 0)
	want := []docker.Mount{
		{Type: "bind", Source: "/etc/app.conf", Target: "/app.conf", ReadOnly: true},
		{Type: "volume", Source: "shop_cache", Target: "/cache"},
		{Type: "volume", Source: "uploads", Target: "/up", ReadOnly: true},
		{Type: "tmpfs", Target: "/tmp", Size: 1 << 20},
	}
	if !reflect.DeepEqual(c.Mounts, want) || !c.ReadOnly {
		t.Errorf("mounts %+v read-only %v", c.Mounts, c.ReadOnly)
	}
	wantVolumes := []docker.VolumeSpec{
		{Name: "shop_cache", Driver: "local", DriverOpts: map[string]string{"type": "tmpfs"}, Labels: map[string]string{docker.ManagedLabel(pfx): "true"}},
		{Name: "uploads", External: true, Labels: map[string]string{docker.ManagedLabel(pfx): "true"}},
	}
	if !reflect.DeepEqual(c.Volumes, wantVolumes) {
		t.Errorf("volumes %+v\nwant %+v", c.Volumes, wantVolumes)
	}
}

// volumeImages has every image, with ID "id-<ref>", declaring the VOLUMEs listed.
type volumeImages map[string][]string

func (t volumeImages) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	return docker.Image{ID: "id-" + ref, Volumes: t[ref]}, nil
}

// The field-by-field diff names each mount that changes, by its target.
func TestSpecDiffNamesTheMounts(t *testing.T) {
	d := resolved(workload("web", 1, func(w *spec.Workload) {
		w.Mounts = []spec.Mount{
			{Type: spec.MountBind, Source: "/etc/new.conf", Target: "/app.conf", ReadOnly: true},
			{Type: spec.MountTmpfs, Target: "/tmp"},
		}
	}))
	c := docker.ContainerDetail{Container: stale(d, "web", 0)}
	c.Config.Mounts = []docker.Mount{
		{Type: "bind", Source: "/etc/old.conf", Target: "/app.conf", ReadOnly: true},
		{Type: "volume", Source: "x", Target: "/gone"},
	}
	c.Config.ReadOnly = true
	var got []string
	for _, fc := range SpecDiff(pfx, d.Workload("web"), c, false) {
		if fc.Field == "mount" || fc.Field == "read_only" {
			got = append(got, fc.String())
		}
	}
	equalStrings(t, got, []string{
		"~ mount /app.conf: bind /etc/old.conf ro → bind /etc/new.conf ro",
		"+ mount /tmp: tmpfs",
		"- mount /gone: volume x",
		"~ read_only: true → false",
	})
}
