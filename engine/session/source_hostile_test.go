package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/source"
)

// TestSessionKeepsWorkingWhenItsComposeFileGainsAFIFO (issue 18, row 2):
// an agent whose compose file gains an env_file that is a FIFO keeps the
// last good desired state, shows the error, still restarts a killed
// container, and ends when its context does. (It froze: the load blocked
// in compose-go's open of the FIFO, and with it the loop.)
func TestSessionKeepsWorkingWhenItsComposeFileGainsAFIFO(t *testing.T) {
	f, clock := newEngine()
	dir := t.TempDir()
	path := filepath.Join(dir, "compose.yaml")
	fifo := filepath.Join(dir, "app.env")
	good := "services:\n  web:\n    image: web:v1\n    deploy: {replicas: 2}\n" +
		"    healthcheck: {test: [\"CMD\", \"/demoapp\", \"-health\"], interval: 1s}\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	h := newHarness(t, f, clock, "", ModeAuto)
	h.opts.Source = source.Compose(path, nil)
	h.s = New(h.opts)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.done = make(chan error, 1)
	go func() { h.done <- h.s.Run(ctx) }()
	h.drive("convergence", func(s Snapshot) bool { return s.Plan.Empty() && s.Progress.Done() && s.Progress.Total == 2 })

	if err := os.WriteFile(path, []byte(good+"    env_file: app.env\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap := h.waitFor("the refusal of the FIFO", func(s Snapshot) bool { return s.SourceErr != nil })
	if msg := snap.SourceErr.Error(); !strings.Contains(msg, path+":6:15: services.web.env_file: "+fifo+" is a named pipe (FIFO)") {
		t.Errorf("source error %q: want it at the env_file, naming the FIFO", msg)
	}
	if snap.Desired == nil || snap.Desired.Workloads["web"].Replicas != 2 {
		t.Fatalf("the last good desired state is gone")
	}

	// The loop still runs: a killed container is restarted.
	victim := snap.Containers[0]
	if err := f.Kill(victim.ID, 137); err != nil {
		t.Fatal(err)
	}
	h.drive("the restart of the killed container", func(s Snapshot) bool {
		for _, c := range s.Containers {
			if c.ID == victim.ID && c.State == docker.StateRunning && c.StartedAt.After(victim.StartedAt) {
				return true
			}
		}
		return false
	})
	if h.last.SourceErr == nil {
		t.Errorf("the error is no longer shown while the FIFO is still referenced")
	}

	cancel()
	select {
	case err := <-h.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("Run did not return after cancel")
	}
}
