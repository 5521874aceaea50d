package session

import (
	"fmt"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/spec"
)

// benchWorld: n/10 workloads of 10 replicas: 7 healthy, 1 stale, 1
// booting, 1 crashed, as reconcile's BenchmarkDiff.
func benchWorld(n int) (*spec.ResolvedDesired, []docker.Container, time.Time) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	d := &spec.ResolvedDesired{Prefix: "rollcall"}
	var cs []docker.Container
	for i := 0; i < n/10; i++ {
		name := fmt.Sprintf("svc%05d", i)
		w := &spec.Workload{Name: name, Image: name + ":v2", Version: "2", Replicas: 10, Restart: "unless-stopped",
			Healthcheck: &spec.Healthcheck{Retries: 3},
			Update:      spec.UpdatePolicy{Strategy: spec.StrategyRolling, Order: spec.OrderStartFirst, Parallelism: 1, MinReady: 5 * time.Second, HealthDeadline: time.Minute, FailureAction: spec.FailurePause}}
		d.Workloads = append(d.Workloads, spec.Resolved{Workload: w, ImageID: "sha256:" + name + "2", Hash: name + "-h2"})
		for slot := 0; slot < 10; slot++ {
			v := "2"
			if slot == 7 {
				v = "1"
			}
			c := docker.Container{ID: fmt.Sprintf("%s-%d", name, slot), Name: fmt.Sprintf("rollcall-%s-%d", name, slot), Image: name + ":v" + v, ImageID: "sha256:" + name + v,
				Labels: map[string]string{docker.ManagedLabel("rollcall"): "true", docker.WorkloadLabel("rollcall"): name, docker.SlotLabel("rollcall"): fmt.Sprint(slot),
					docker.SpecLabel("rollcall"): name + "-h" + v, docker.VersionLabel("rollcall"): v},
				Limits: docker.Limits{Restart: "unless-stopped"}, State: docker.StateRunning, HasHealthcheck: true, Health: docker.HealthHealthy, HealthySinceStart: true,
				Created: now.Add(-time.Hour), StartedAt: now.Add(-time.Hour)}
			switch slot {
			case 8:
				c.Health, c.Created, c.StartedAt, c.HealthySinceStart = docker.HealthStarting, now.Add(-10*time.Second), now.Add(-10*time.Second), false
			case 9:
				c.State, c.ExitCode, c.FinishedAt = docker.StateExited, 1, now.Add(-time.Minute)
			}
			cs = append(cs, c)
		}
	}
	return d, cs, now
}

// BenchmarkPlanAndSlots: what the loop pays for one list: the Diff, and
// the slot views of one snapshot.
func BenchmarkPlanAndSlots(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		d, cs, now := benchWorld(n)
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				planAndSlots(d, cs, now)
			}
		})
	}
}

func planAndSlots(d *spec.ResolvedDesired, cs []docker.Container, now time.Time) {
	p := reconcile.Diff(d, &reconcile.Observed{Now: now, Containers: cs})
	_, _ = SlotViews(d, &p, cs)
}
