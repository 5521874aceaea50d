package state

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// waitLimit bounds every wait of a test; a passing test takes a fraction.
const waitLimit = 5 * time.Second

// The host lock is exclusive, names its holder while held, and names
// nobody once released.
func TestHostLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rollcall.lock") // the directory is created
	since := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a, _, err := TakeLock(path, "alice@10.0.0.5", since)
	if err != nil {
		t.Fatalf("first take: %v", err)
	}
	if !a.Held() || a.Path != path {
		t.Fatalf("taken lock: held %v, path %q", a.Held(), a.Path)
	}
	data, _ := os.ReadFile(path)
	if want := fmt.Sprintf("alice@10.0.0.5 %d 2026-05-01T10:00:00Z\n", os.Getpid()); string(data) != want {
		t.Errorf("lock file %q, want %q", data, want)
	}

	b, holder, err := TakeLock(path, "bob", since)
	if !errors.Is(err, ErrLocked) || b != nil {
		t.Fatalf("second take = %v, %v; want ErrLocked", b, err)
	}
	if holder == nil || holder.User != "alice@10.0.0.5" || holder.PID != os.Getpid() || !holder.Since.Equal(since) {
		t.Fatalf("holder %+v", holder)
	}
	if s := holder.String(); !strings.Contains(s, "alice@10.0.0.5") || !strings.Contains(s, fmt.Sprint(os.Getpid())) {
		t.Errorf("holder renders as %q", s)
	}

	a.Release()
	a.Release() // twice: nothing more
	if a.Held() {
		t.Error("a released lock says it is held")
	}
	if h := ReadLockHolder(path); h != nil {
		t.Errorf("after release the file still names %+v", h)
	}
	b, _, err = TakeLock(path, "bob", since)
	if err != nil {
		t.Fatalf("take after release: %v", err)
	}
	b.Release()
	var none *Lock
	none.Release()
	if none.Held() {
		t.Error("a nil lock is held")
	}
}

// A lock file left by a process that is gone names nobody, nor does one
// that does not parse.
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
	if h := ReadLockHolder(path); h != nil {
		t.Errorf("a gone process holds the lock: %+v", h)
	}
	for _, bad := range []string{"", "alice", "alice x 2026-05-01T10:00:00Z", "alice 12 yesterday"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if h := ReadLockHolder(path); h != nil {
			t.Errorf("%q names %+v", bad, h)
		}
	}
}

// A FIFO in the lock file's place neither hangs the read of its holder nor
// names anybody.
func TestLockHolderOfAFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rollcall.lock")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan *LockHolder, 1)
	go func() { done <- ReadLockHolder(path) }()
	select {
	case h := <-done:
		if h != nil {
			t.Errorf("a FIFO names %+v", h)
		}
	case <-time.After(waitLimit):
		t.Fatal("reading the holder of a FIFO hangs")
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
	// One engine by its identity, whatever the endpoint.
	if DefaultLockPath(docker.EngineInfo{ID: "e1", Endpoint: "unix:///a"}, "rollcall") != DefaultLockPath(docker.EngineInfo{ID: "e1", Endpoint: "tcp://b"}, "rollcall") {
		t.Errorf("two endpoints of one engine have two locks")
	}
	// A simulated engine lives in one process: its lock is per process.
	sim := docker.EngineInfo{Endpoint: "fake://", Simulated: true}
	if DefaultLockPath(sim, "rollcall") == DefaultLockPath(docker.EngineInfo{Endpoint: "fake://"}, "rollcall") {
		t.Errorf("a simulated engine shares a real one's lock")
	}
}

// AcquireLock names the holder in its error, which wraps ErrLocked.
func TestAcquireLockNamesTheHolder(t *testing.T) {
	info := docker.EngineInfo{ID: fmt.Sprintf("state-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	t.Cleanup(func() { os.Remove(DefaultLockPath(info, "rctest")) })
	a, err := AcquireLock(info, "rctest", "alice")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	_, err = AcquireLock(info, "rctest", "bob")
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "alice") {
		t.Errorf("second acquire: %v, want ErrLocked naming alice", err)
	}
}
