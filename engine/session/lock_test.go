package session

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

func TestHostLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rollcall.lock") // the directory is created
	since := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a, _, err := acquireLock(path, "alice@10.0.0.5", since)
	if err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	data, _ := os.ReadFile(path)
	if want := fmt.Sprintf("alice@10.0.0.5 %d 2026-05-01T10:00:00Z\n", os.Getpid()); string(data) != want {
		t.Errorf("lock file %q, want %q", data, want)
	}

	b, holder, err := acquireLock(path, "bob", since)
	if !errors.Is(err, ErrLocked) || b != nil {
		t.Fatalf("second acquire = %v, %v; want ErrLocked", b, err)
	}
	if holder == nil || holder.User != "alice@10.0.0.5" || holder.PID != os.Getpid() || !holder.Since.Equal(since) {
		t.Fatalf("holder %+v", holder)
	}
	if s := holder.String(); !strings.Contains(s, "alice@10.0.0.5") || !strings.Contains(s, fmt.Sprint(os.Getpid())) {
		t.Errorf("holder renders as %q", s)
	}

	a.release()
	if h := readLockHolder(path); h != nil {
		t.Errorf("after release the file still names %+v", h)
	}
	b, _, err = acquireLock(path, "bob", since)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	b.release()
}

// A lock file left by a process that is gone names nobody.
func TestLockHolderOfAGoneProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("no true(1): %v", err)
	}
	path := filepath.Join(t.TempDir(), "rollcall.lock")
	line := fmt.Sprintf("ghost %d 2026-05-01T10:00:00Z\n", cmd.Process.Pid)
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	if h := readLockHolder(path); h != nil {
		t.Errorf("a gone process holds the lock: %+v", h)
	}
	for _, bad := range []string{"", "alice", "alice x 2026-05-01T10:00:00Z", "alice 12 yesterday"} {
		os.WriteFile(path, []byte(bad), 0o644)
		if h := readLockHolder(path); h != nil {
			t.Errorf("%q names %+v", bad, h)
		}
	}
}

func TestDefaultLockPath(t *testing.T) {
	a := DefaultLockPath(docker.EngineInfo{Endpoint: "unix:///var/run/docker.sock"}, "rollcall")
	b := DefaultLockPath(docker.EngineInfo{Endpoint: "tcp://10.0.0.1:2376"}, "rollcall")
	c := DefaultLockPath(docker.EngineInfo{Endpoint: "unix:///var/run/docker.sock"}, "other")
	if a == b || a == c || b == c {
		t.Errorf("lock paths collide: %q %q %q", a, b, c)
	}
	if a != DefaultLockPath(docker.EngineInfo{Endpoint: "unix:///var/run/docker.sock"}, "rollcall") {
		t.Errorf("lock path is not stable")
	}
	if !strings.HasPrefix(filepath.Base(a), "rollcall-rollcall-") || !strings.HasSuffix(a, ".lock") {
		t.Errorf("lock path %q", a)
	}
	// A simulated engine lives in one process: its lock is per process.
	sim := docker.EngineInfo{Endpoint: "fake://", Simulated: true}
	if DefaultLockPath(sim, "rollcall") == DefaultLockPath(docker.EngineInfo{Endpoint: "fake://"}, "rollcall") {
		t.Errorf("a simulated engine shares a real one's lock")
	}
}

// Leaving an acting mode lets go of the lock; coming back takes it again.
func TestWatchReleasesTheLock(t *testing.T) {
	f, clock := newEngine()
	h := newHarness(t, f, clock, desiredYAML("web:v1", 1), ModeStep).start()
	h.waitFor("the lock", func(s Snapshot) bool { return s.Lock.Held })
	h.s.Do(SetMode{Mode: ModeWatch})
	h.waitFor("the release", func(s Snapshot) bool { return !s.Lock.Held && s.Mode == ModeWatch })
	lk, _, err := acquireLock(h.opts.LockPath, "probe", time.Now())
	if err != nil {
		t.Fatalf("the lock is still held in watch mode: %v", err)
	}
	lk.release()
	h.s.Do(SetMode{Mode: ModeAuto})
	h.waitFor("the lock again", func(s Snapshot) bool { return s.Lock.Held && s.Mode == ModeAuto })
}

// The lock is polled only while another session holds it: a session that
// holds it, or watches without wanting it, has nothing to find and does
// not wake for it (an idle console draws nothing).
func TestLockPollRunsOnlyWhileAnotherHoldsTheLock(t *testing.T) {
	l := &loop{}
	defer l.lockPoll.stop()
	l.armLockPoll()
	if l.lockPoll.armed() {
		t.Error("polled in watch mode, with no lock wanted")
	}
	l.lockErr = "held by ops (pid 42)"
	l.armLockPoll()
	if !l.lockPoll.armed() {
		t.Error("not polled while another session holds the lock")
	}
	l.lock, l.lockErr = &hostLock{}, ""
	l.armLockPoll()
	if l.lockPoll.armed() {
		t.Error("polled while holding the lock")
	}
}
