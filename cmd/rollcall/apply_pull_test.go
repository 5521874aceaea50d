package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
)

// apply prints a line for each progress event of a pull: the share done,
// layers and bytes.
func TestApplyPrintsPullProgress(t *testing.T) {
	var b bytes.Buffer
	p := progressOn(&b)
	s := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "127.0.0.1:5000/team/app:v2"}
	for _, done := range []int64{0, 1 << 20, 4 << 20} {
		pp := reconcile.PullProgress{Step: s, PullProgress: docker.PullProgress{Layers: 4, LayersDone: int(done >> 20), Bytes: 4 << 20, BytesDone: done}}
		p.event(session.Event{Kind: session.EventPulling, Step: s, Pull: &pp})
	}
	out := b.String()
	for _, want := range []string{"pull    web/-", "127.0.0.1:5000/team/app:v2", "pulling 0%: 0 of 4 layers, 0.0 of 4.0 MiB",
		"pulling 25%: 1 of 4 layers, 1.0 of 4.0 MiB", "pulling 100%: 4 of 4 layers, 4.0 of 4.0 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply's progress lacks %q:\n%s", want, out)
		}
	}
}
