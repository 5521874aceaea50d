package session

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// The agent logs a pull as structured lines: its start, each report
// (a layer or a tenth of the bytes more), its end; the figures as typed
// attributes, never inside the message.
func TestPullLogLinesAreStructured(t *testing.T) {
	s := reconcile.Step{Action: reconcile.ActPull, Workload: "web", Slot: reconcile.NoSlot, Container: "reg/web:v3"}
	attrs := func(kv []any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	pp := reconcile.PullProgress{Step: s, PullProgress: docker.PullProgress{Ref: "reg/web:v3", Layers: 4, LayersDone: 2, Bytes: 40 << 20, BytesDone: 16 << 20}}
	for _, tc := range []struct {
		e    Fact
		msg  string
		want map[string]any
	}{
		{Fact{Kind: FactStepStarted, Step: s}, "step started", map[string]any{"action": "pull", "container": "reg/web:v3"}},
		{Fact{Kind: FactPulling, Step: s, Pull: &pp}, "pulling",
			map[string]any{"action": "pull", "layers": 4, "layers_done": 2, "bytes": int64(40 << 20), "bytes_done": int64(16 << 20)}},
		{Fact{Kind: FactStepDone, Step: s, Duration: 1500 * time.Millisecond}, "step done", map[string]any{"action": "pull", "duration_ms": int64(1500)}},
		{Fact{Kind: FactStepFailed, Step: s, Duration: time.Second, Err: errors.New("pull web: unauthorized")}, "step failed",
			map[string]any{"action": "pull", "error": "pull web: unauthorized"}},
	} {
		lines := tc.e.logLines()
		if len(lines) != 1 {
			t.Fatalf("fact %v: %d log lines, want 1", tc.e.Kind, len(lines))
		}
		msg, got := lines[0].msg, attrs(lines[0].attrs)
		if msg != tc.msg {
			t.Errorf("event %d: message %q, want %q", tc.e.Kind, msg, tc.msg)
		}
		for k, v := range tc.want {
			if fmt.Sprint(got[k]) != fmt.Sprint(v) {
				t.Errorf("%s: %s=%v, want %v", msg, k, got[k], v)
			}
		}
	}
}

// A pull is reported at each layer done and each tenth of its bytes,
// never more often: 101 reports of a pull of one layer are 11 marks.
func TestPullIsReportedPerTenth(t *testing.T) {
	marks := map[int]bool{}
	for i := range int64(101) {
		p := reconcile.PullProgress{PullProgress: docker.PullProgress{Layers: 1, Bytes: 100, BytesDone: i}}
		if i == 100 {
			p.LayersDone = 1
		}
		marks[pullMark(p)] = true
	}
	if len(marks) != 11 { // 0..9 tenths, then the layer done with all its bytes
		t.Fatalf("%d marks for a pull of one layer, want 11 (each tenth, the last with its layer done)", len(marks))
	}
}
