package reconcile

import (
	"fmt"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// benchWorld has n containers in workloads of 10 replicas: per workload seven
// healthy up-to-date slots, one stale (rolling), one booting, one crashed.
func benchWorld(n int) (*spec.ResolvedDesired, *Observed) {
	var ws []*spec.Workload
	for i := 0; i < n/10; i++ {
		ws = append(ws, workload(fmt.Sprintf("svc%05d", i), 10))
	}
	d := resolved(ws...)
	o := &Observed{Now: t0}
	for _, w := range ws {
		for slot := 0; slot < 10; slot++ {
			var c docker.Container
			switch slot {
			case 7:
				c = stale(d, w.Name, slot)
			case 8:
				c = fresh(d, w.Name, slot, booting)
			case 9:
				c = fresh(d, w.Name, slot, exited(1))
			default:
				c = fresh(d, w.Name, slot)
			}
			o.Containers = append(o.Containers, c)
		}
	}
	return d, o
}

func BenchmarkDiff(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		d, o := benchWorld(n)
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Diff(d, o)
			}
		})
	}
}

// BenchmarkAddThen: Diff and the then rows of one workload of n stale
// replicas rolling one at a time, as the console works them out after each
// diff (past maxThenContainers no then rows are worked out).
func BenchmarkAddThen(b *testing.B) {
	for _, n := range []int{30, 300, 1000} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			d := resolved(workload("web", n))
			cs := make([]docker.Container, 0, n)
			for i := range n {
				cs = append(cs, stale(d, "web", i))
			}
			o := observed(cs...)
			for b.Loop() {
				p := Diff(d, o)
				AddThen(d, o, &p)
			}
		})
	}
}
