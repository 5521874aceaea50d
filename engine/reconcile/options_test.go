package reconcile

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

func TestCreateSpecCarriesTheOptions(t *testing.T) {
	opts := spec.Options{
		Entrypoint: []string{"/tini", "--"}, User: "1000", WorkingDir: "/srv", Hostname: "web",
		CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Privileged: true, Init: true, ShmSize: 1 << 20, Ulimits: []spec.Ulimit{{Name: "nofile", Soft: 1, Hard: 2}},
		Sysctls: map[string]string{"net.core.somaxconn": "1024"}, ExtraHosts: []string{"db:10.0.0.5"},
		DNS: []string{"1.1.1.1"}, DNSSearch: []string{"example.com"}, LogDriver: "local", LogOptions: map[string]string{"max-size": "1m"},
		Expose: []string{"9000/tcp"}, NetworkMode: spec.NetworkNone, Devices: []string{"/dev/fuse"}, GroupAdd: []string{"audio"},
	}
	d := resolved(workload("web", 3, func(w *spec.Workload) { w.Options = opts }))
	want := docker.ContainerOptions{
		Entrypoint: []string{"/tini", "--"}, User: "1000", WorkingDir: "/srv", Hostname: "web-0",
		CapAdd: []string{"NET_ADMIN"}, CapDrop: []string{"ALL"}, SecurityOpt: []string{"no-new-privileges"},
		Privileged: true, Init: true, ShmSize: 1 << 20, Ulimits: []docker.Ulimit{{Name: "nofile", Soft: 1, Hard: 2}},
		Sysctls: map[string]string{"net.core.somaxconn": "1024"}, ExtraHosts: []string{"db:10.0.0.5"},
		DNS: []string{"1.1.1.1"}, DNSSearch: []string{"example.com"}, LogDriver: "local", LogOptions: map[string]string{"max-size": "1m"},
		Expose: []string{"9000/tcp"}, NetworkMode: docker.NetworkNone, Devices: []string{"/dev/fuse"}, GroupAdd: []string{"audio"},
	}
	got := CreateSpec(pfx, d.Workload("web"), 0).Options
	if !reflect.DeepEqual(got, want) {
		t.Errorf("slot 0 options\n got %+v\nwant %+v", got, want)
	}
	// With replicas above 1 each slot takes "<hostname>-<slot>"; with one,
	// the hostname as written.
	if h := CreateSpec(pfx, d.Workload("web"), 2).Options.Hostname; h != "web-2" {
		t.Errorf("slot 2 hostname %q, want web-2", h)
	}
	one := resolved(workload("web", 1, func(w *spec.Workload) { w.Options.Hostname = "web" }))
	if h := CreateSpec(pfx, one.Workload("web"), 0).Options.Hostname; h != "web" {
		t.Errorf("one replica: hostname %q, want web", h)
	}
	if one.Workload("web").Hash == resolved(workload("web", 2, func(w *spec.Workload) { w.Options.Hostname = "web" })).Workload("web").Hash {
		t.Error("a scale across 1 with a hostname keeps the hash: the hostnames would not follow")
	}
	// The create's options are a copy: changing them changes no workload.
	got.Entrypoint[0], got.Sysctls["x"] = "/other", "1"
	if w := d.Workload("web"); w.Options.Entrypoint[0] != "/tini" || len(w.Options.Sysctls) != 1 {
		t.Errorf("the create spec shares the workload's options: %+v", w.Options)
	}
	if o := CreateSpec(pfx, resolved(workload("web", 1)).Workload("web"), 1).Options; !reflect.DeepEqual(o, docker.ContainerOptions{}) {
		t.Errorf("a workload without options creates with %+v", o)
	}
}

// A container created with the workload's entrypoint and network mode is
// up to date in the field-by-field diff; one with the image's entrypoint
// or another network is not.
func TestSpecDiffOptions(t *testing.T) {
	d := resolved(workload("web", 1, func(w *spec.Workload) {
		w.Options = spec.Options{Entrypoint: []string{"/tini", "--"}, NetworkMode: spec.NetworkHost}
	}))
	w := d.Workload("web")
	det := inspected(w, fresh(d, "web", 0))
	det.Config.Entrypoint, det.Config.Networks = []string{"/tini", "--"}, []string{"host"}
	if got := SpecDiff(pfx, w, det, false); len(got) != 0 {
		t.Fatalf("an up-to-date container differs: %v", got)
	}
	det.Config.Entrypoint, det.Config.Networks, det.Config.ImageKnown = nil, nil, false
	var lines []string
	for _, fc := range SpecDiff(pfx, w, det, false) {
		lines = append(lines, fc.String())
	}
	equalStrings(t, lines, []string{`~ entrypoint: [] → ["/tini", "--"]`, "~ networks: [default] → [host]"})
}

// A plan that acts on a privileged workload says so, typed and in its
// tree; one that does not act on it has no block for it at all.
func TestPlanShowsPrivileged(t *testing.T) {
	d := resolved(workload("web", 1, func(w *spec.Workload) { w.Options.Privileged = true }), workload("api", 1))
	p := Diff(d, observed())
	text := ""
	for _, l := range p.Tree() {
		text += l.Text() + "\n"
	}
	for _, wp := range p.Workloads {
		if wp.Privileged != (wp.Name == "web") {
			t.Errorf("%s: Privileged %v", wp.Name, wp.Privileged)
		}
	}
	if n := strings.Count(text, PrivilegedNote); n != 1 {
		t.Errorf("the tree says privileged %d times, want once:\n%s", n, text)
	}
	if p := Diff(d, observed(fresh(d, "web", 0), fresh(d, "api", 0))); len(p.Workloads) != 0 {
		t.Errorf("a converged privileged workload is in the plan: %+v", p.Workloads)
	}
}
