package moby_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// TestMobyOverSSH reaches the test's engine through a local sshd, as the
// docker CLI reaches an ssh:// host (the system ssh running docker system
// dial-stdio): the same engine answers, a container made over ssh is there
// and reported, its events stream over ssh, an exec (a hijacked connection)
// runs over ssh, and Close ends every ssh process the adapter started.
func TestMobyOverSSH(t *testing.T) {
	sshd := dockertest.StartSSHD(t)
	et := newEngineTest(t)
	ep := moby.Endpoint{Host: sshd.URL(), SSHConfig: sshd.ConfigFile}
	m, err := moby.Dial(et.ctx, ep)
	if err != nil {
		t.Fatalf("Dial(%s): %v\nsshd said: %s", ep, err, sshd.Log())
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			m.Close()
		}
	})

	local, err := et.m.Info(et.ctx)
	if err != nil {
		t.Fatalf("Info of the local engine: %v", err)
	}
	info, err := m.Info(et.ctx)
	if err != nil {
		t.Fatalf("Info over ssh: %v", err)
	}
	if info.ID == "" || info.ID != local.ID {
		t.Errorf("engine ID over ssh = %q, want the local engine's %q: one engine, two endpoints", info.ID, local.ID)
	}
	if info.Endpoint != sshd.URL() {
		t.Errorf("Info.Endpoint = %q, want the ssh URL %q", info.Endpoint, sshd.URL())
	}
	if !regexp.MustCompile(`^1\.\d+$`).MatchString(info.APIVersion) || info.Version != local.Version {
		t.Errorf("Info over ssh = %+v, want a negotiated 1.x and the local engine's version %s", info, local.Version)
	}

	evctx, cancel := context.WithCancel(et.ctx)
	defer cancel()
	// From a second back: the stream's own ssh login may end after the
	// start, and the engine replays what it missed.
	events, _ := m.Events(evctx, et.prefix, time.Now().Add(-time.Second))

	over := *et
	over.m = m
	id := over.create(over.spec("web-0"))
	if ids := containerIDs(over.list()); !slices.Contains(ids, id) {
		t.Errorf("List over ssh = %v, want %s made over ssh", ids, shortID(id))
	}
	if ids := containerIDs(et.list()); !slices.Contains(ids, id) {
		t.Errorf("List of the local engine = %v, want %s made over ssh", ids, shortID(id))
	}
	over.waitHealth(id, docker.HealthHealthy, 30*time.Second)

	code, out, err := m.Exec(et.ctx, id, []string{"/demoapp", "-health"})
	if err != nil || code != 0 {
		t.Errorf("Exec over ssh = %d, %q, %v; want exit 0", code, out, err)
	}

	deadline := time.After(10 * time.Second)
	for started := false; !started; {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the event stream over ssh ended")
			}
			started = ev.ContainerID == id && ev.Action == "start"
		case <-deadline:
			t.Fatalf("no start event of %s over ssh within 10s", shortID(id))
		}
	}
	cancel()

	if got := sshProcesses(t, sshd.ConfigFile); got == 0 {
		t.Fatal("no ssh process of this endpoint while it is open: the check below would prove nothing")
	}
	// The event stream's connection closes with its context; the idle ones
	// with Close.
	closed = true
	m.Close()
	waitUntil := time.Now().Add(10 * time.Second)
	for sshProcesses(t, sshd.ConfigFile) > 0 {
		if time.Now().After(waitUntil) {
			t.Fatalf("%d ssh processes of the endpoint still run 10s after Close", sshProcesses(t, sshd.ConfigFile))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestMobyDialSSHFailsWithSSHsWords: a host ssh cannot reach is an error
// soon, and it carries what ssh said.
func TestMobyDialSSHFailsWithSSHsWords(t *testing.T) {
	if _, err := exec.LookPath("ssh"); err != nil {
		dockertest.Skip(t, fmt.Errorf("the ssh transport test needs ssh (Debian: openssh-client): %w", err))
	}
	t.Parallel()
	cfg := filepath.Join(t.TempDir(), "ssh_config")
	if err := os.WriteFile(cfg, []byte("Host *\n  BatchMode yes\n  IdentityAgent none\n  UserKnownHostsFile /dev/null\n  GlobalKnownHostsFile /dev/null\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := moby.Dial(context.Background(), moby.Endpoint{Host: "ssh://nobody@127.0.0.1:1", SSHConfig: cfg})
	if err == nil {
		t.Fatal("Dial to a closed ssh port: nil error")
	}
	if !strings.Contains(err.Error(), "Connection refused") || !strings.Contains(err.Error(), "ssh://nobody@127.0.0.1:1") {
		t.Errorf("Dial error = %v, want ssh's own words (Connection refused) and the endpoint", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("Dial to a closed ssh port took %s", took)
	}
}

func containerIDs(cs []docker.Container) []string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	return ids
}

// sshProcesses counts the processes whose command line names cfg: the ssh
// processes of an endpoint with that -F file.
func sshProcesses(t *testing.T, cfg string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 0 && filepath.Base(args[0]) == "ssh" && slices.Contains(args, cfg) {
			n++
		}
	}
	return n
}
