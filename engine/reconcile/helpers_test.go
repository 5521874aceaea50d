package reconcile

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

const pfx = "rollcall"

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// workload returns a workload with every default filled in, as Load would.
func workload(name string, replicas int, mods ...func(*spec.Workload)) *spec.Workload {
	w := &spec.Workload{
		Name: name, Image: name + ":v2", Version: "2", Replicas: replicas,
		Healthcheck: &spec.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second, Timeout: time.Second, Retries: 3},
		StopSignal:  spec.DefaultStopSignal, StopGrace: spec.DefaultStopGrace, Restart: spec.DefaultRestart,
		Update: spec.UpdatePolicy{Strategy: spec.StrategyRolling, Parallelism: 1, Order: spec.OrderStartFirst,
			MinReady: spec.DefaultMinReady, HealthDeadline: spec.DefaultHealthDeadline, FailureAction: spec.FailurePause},
	}
	for _, m := range mods {
		m(w)
	}
	return w
}

// v1 sets w's image and version to v1.
func v1(w *spec.Workload) { w.Image, w.Version = w.Name+":v1", "1" }

// resolved resolves workloads with image ID "id-<image>" each.
func resolved(ws ...*spec.Workload) *spec.ResolvedDesired {
	d := &spec.Desired{Prefix: pfx, Workloads: map[string]*spec.Workload{}}
	for _, w := range ws {
		d.Workloads[w.Name] = w
	}
	return spec.Resolve(context.Background(), d, imageTable{})
}

// imageTable has every image, with ID "id-<ref>", except those it maps to false.
type imageTable map[string]bool

func (t imageTable) ImageInspect(_ context.Context, ref string) (docker.Image, error) {
	if missing, listed := t[ref]; listed && !missing {
		return docker.Image{}, fmt.Errorf("image %s: %w", ref, docker.ErrNotFound)
	}
	return docker.Image{ID: "id-" + ref}, nil
}

// fresh is an up-to-date, running, healthy container of w in slot, created
// and started a minute before t0.
func fresh(d *spec.ResolvedDesired, name string, slot int, mods ...func(*docker.Container)) docker.Container {
	w := d.Workload(name)
	c := docker.Container{
		ID: "id-" + name + "-" + strconv.Itoa(slot) + "-new", Name: ContainerName(pfx, name, slot, w.Hash),
		Image: w.Image, ImageID: w.ImageID,
		Labels: map[string]string{
			docker.ManagedLabel(pfx): "true", docker.WorkloadLabel(pfx): name, docker.SlotLabel(pfx): strconv.Itoa(slot),
			docker.SpecLabel(pfx): w.Hash, docker.VersionLabel(pfx): w.Version,
		},
		State: docker.StateRunning, Health: docker.HealthHealthy, HasHealthcheck: true, HealthySinceStart: true,
		Created: t0.Add(-time.Minute), StartedAt: t0.Add(-time.Minute),
		Limits: DesiredLimits(w.Workload),
	}
	for _, m := range mods {
		m(&c)
	}
	return c
}

// stale is a healthy container of the workload's previous version (v1).
func stale(d *spec.ResolvedDesired, name string, slot int, mods ...func(*docker.Container)) docker.Container {
	c := fresh(d, name, slot)
	c.ID = "id-" + name + "-" + strconv.Itoa(slot) + "-old"
	c.Image, c.ImageID = name+":v1", "id-"+name+":v1"
	c.Labels[docker.SpecLabel(pfx)] = "0123456789abcdef"
	c.Labels[docker.VersionLabel(pfx)] = "1"
	c.Name = pfx + "-" + name + "-" + strconv.Itoa(slot) + "-01234567"
	c.Created, c.StartedAt = t0.Add(-time.Hour), t0.Add(-time.Hour)
	for _, m := range mods {
		m(&c)
	}
	return c
}

func booting(c *docker.Container) {
	c.Health, c.HealthySinceStart = docker.HealthStarting, false
	c.Created, c.StartedAt = t0.Add(-2*time.Second), t0.Add(-2*time.Second)
}
func unhealthy(c *docker.Container) { c.Health = docker.HealthUnhealthy }
func exited(code int) func(*docker.Container) {
	return func(c *docker.Container) {
		c.State, c.ExitCode, c.Health, c.HealthySinceStart = docker.StateExited, code, docker.HealthNone, false
		c.FinishedAt = t0.Add(-10 * time.Second)
	}
}
func withID(id string) func(*docker.Container) {
	return func(c *docker.Container) { c.ID = id; c.Name += "-" + id }
}

func observed(cs ...docker.Container) *Observed { return &Observed{Now: t0, Containers: cs} }

// brief is a step as "action target container", for readable assertions.
func brief(s Step) string { return string(s.Action) + " " + s.Target() + " " + s.Container }

func briefs(p Plan) []string {
	var out []string
	for _, s := range p.Steps() {
		out = append(out, brief(s))
	}
	return out
}

func actions(p Plan) []string {
	var out []string
	for _, s := range p.Steps() {
		out = append(out, string(s.Action)+" "+s.Target())
	}
	return out
}

func equalStrings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d:\n  %q\nwant %d:\n  %q", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("item %d: got %q, want %q\nall: %q", i, got[i], want[i], got)
		}
	}
}

// diffThen is Diff with its then rows, as the console and plan see it.
func diffThen(d *spec.ResolvedDesired, o *Observed) Plan {
	p := Diff(d, o)
	AddThen(d, o, &p)
	return p
}
