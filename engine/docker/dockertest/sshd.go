package dockertest

// This file holds an sshd of a test's own, for the ssh:// transport: the
// system sshd on a free loopback port, as the current user, letting in one
// key made for the test, with the docker command line on its sessions' PATH
// (and DOCKER_HOST, when the test has one, so that `docker system
// dial-stdio` over it reaches the test's engine). The client side is a file
// for ssh -F, so a test never reads or writes the real ~/.ssh.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// SSHHost is the name an SSHD's ConfigFile gives it.
const SSHHost = "rollcall-sshd"

// sshdStartTimeout bounds the start of an sshd, its first login included.
const sshdStartTimeout = 15 * time.Second

// SSHD is a running sshd of one test.
type SSHD struct {
	// User is the user it lets in: the test's own.
	User string
	// Port is its loopback port.
	Port int
	// ConfigFile is an ssh client configuration, for ssh -F, that reaches
	// the sshd as SSHHost with the test's key, the sshd's host key pinned
	// and no agent: nothing of the user's ~/.ssh is read.
	ConfigFile string
	// Dir holds its keys, configuration and log.
	Dir string

	cmd  *exec.Cmd
	done chan struct{}
	log  *sshLog
}

// URL is the ssh:// endpoint of the sshd, as the docker CLI names one:
// ssh://user@SSHHost, to be used with ConfigFile.
func (s *SSHD) URL() string { return "ssh://" + s.User + "@" + SSHHost }

// Log is what the sshd said so far (it runs with -e: to stderr).
func (s *SSHD) Log() string { return s.log.String() }

// StartSSHD starts an sshd for t and stops it in t's cleanup. It skips t
// (see Skip: it fails with ROLLCALL_REQUIRE_DOCKER=1) when sshd, ssh,
// ssh-keygen or docker is not installed; Debian's openssh-server has the
// first three.
func StartSSHD(t testing.TB) *SSHD {
	t.Helper()
	sshd, err := findSSHD()
	if err != nil {
		Skip(t, err)
	}
	for _, tool := range []string{"ssh", "ssh-keygen", "docker"} {
		if _, err := exec.LookPath(tool); err != nil {
			Skip(t, fmt.Errorf("the ssh transport test needs %s (Debian: openssh-client, docker.io): %w", tool, err))
		}
	}
	me, err := user.Current()
	if err != nil {
		t.Fatalf("sshd: who am I: %v", err)
	}
	if os.Geteuid() == 0 {
		// sshd run as root separates privileges into this folder, which
		// its init script makes; nothing else here does.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatalf("sshd: %v", err)
		}
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), sshdStartTimeout)
	defer cancel()
	for _, key := range []string{"host_ed25519", "id_ed25519"} {
		out, err := exec.CommandContext(ctx, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "rollcall-test", "-f", filepath.Join(dir, key)).CombinedOutput()
		if err != nil {
			t.Fatalf("sshd: ssh-keygen %s: %v: %s", key, err, out)
		}
	}
	clientPub := readSSHFile(t, filepath.Join(dir, "id_ed25519.pub"))
	hostPub := readSSHFile(t, filepath.Join(dir, "host_ed25519.pub"))
	writeSSHFile(t, filepath.Join(dir, "authorized_keys"), clientPub)

	// A free port can be taken between its probe and sshd's bind: try again.
	var lastErr error
	for range 3 {
		s := &SSHD{User: me.Username, Dir: dir, ConfigFile: filepath.Join(dir, "ssh_config"), log: &sshLog{}}
		if s.Port, err = freeSSHPort(); err != nil {
			t.Fatalf("sshd: %v", err)
		}
		writeSSHFile(t, filepath.Join(dir, "sshd_config"), sshdConfig(dir, s.Port, s.User, sessionEnv()))
		writeSSHFile(t, s.ConfigFile, sshClientConfig(dir, s.Port, s.User))
		writeSSHFile(t, filepath.Join(dir, "known_hosts"), fmt.Sprintf("[127.0.0.1]:%d %s\n", s.Port, strings.TrimSpace(hostPub)))
		if lastErr = s.start(ctx, sshd); lastErr == nil {
			t.Cleanup(s.stop)
			return s
		}
	}
	t.Fatalf("sshd: %v", lastErr)
	return nil
}

// findSSHD finds the sshd binary: on the PATH, or in /usr/sbin, which a
// user's PATH may lack. sshd wants its absolute path.
func findSSHD() (string, error) {
	if p, err := exec.LookPath("sshd"); err == nil {
		return filepath.Abs(p)
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err == nil {
		return "/usr/sbin/sshd", nil
	}
	return "", errors.New("the ssh transport test needs sshd (Debian: apt-get install openssh-server)")
}

// sessionEnv is what an ssh session gets: a PATH with this process's docker
// on it, and the DOCKER_HOST of this process, when it has one.
func sessionEnv() []string {
	docker, _ := exec.LookPath("docker")
	docker, _ = filepath.Abs(docker)
	env := []string{"PATH=" + filepath.Dir(docker) + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if h := os.Getenv("DOCKER_HOST"); h != "" {
		env = append(env, "DOCKER_HOST="+h)
	}
	return env
}

func sshdConfig(dir string, port int, user string, env []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ListenAddress 127.0.0.1:%d\n", port)
	fmt.Fprintf(&b, "HostKey %s\n", filepath.Join(dir, "host_ed25519"))
	fmt.Fprintf(&b, "PidFile %s\n", filepath.Join(dir, "sshd.pid"))
	fmt.Fprintf(&b, "AuthorizedKeysFile %s\n", filepath.Join(dir, "authorized_keys"))
	fmt.Fprintf(&b, "AllowUsers %s\n", user)
	b.WriteString(`AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
PrintMotd no
PrintLastLog no
X11Forwarding no
AllowAgentForwarding no
LogLevel VERBOSE
`)
	for _, kv := range env {
		fmt.Fprintf(&b, "SetEnv %q\n", kv)
	}
	return b.String()
}

func sshClientConfig(dir string, port int, user string) string {
	return fmt.Sprintf(`Host %s
  HostName 127.0.0.1
  Port %d
  User %s
  IdentityFile %s
  IdentitiesOnly yes
  IdentityAgent none
  UserKnownHostsFile %s
  GlobalKnownHostsFile /dev/null
  StrictHostKeyChecking yes
  UpdateHostKeys no
  BatchMode yes
  ControlMaster no
  ControlPath none
  LogLevel ERROR
`, SSHHost, port, user, filepath.Join(dir, "id_ed25519"), filepath.Join(dir, "known_hosts"))
}

// start runs sshd and waits until a login through ConfigFile runs docker.
func (s *SSHD) start(ctx context.Context, sshd string) error {
	s.cmd = exec.Command(sshd, "-D", "-e", "-f", filepath.Join(s.Dir, "sshd_config"))
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", sshd, err)
	}
	s.done = make(chan struct{})
	go func() { s.cmd.Wait(); close(s.done) }()
	for {
		probe := exec.CommandContext(ctx, "ssh", "-F", s.ConfigFile, SSHHost, "docker", "--version")
		out, err := probe.CombinedOutput()
		if err == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("sshd exited: %s", s.Log())
		case <-ctx.Done():
			s.stop()
			return fmt.Errorf("no login through sshd within %s: ssh said %q; sshd said: %s", sshdStartTimeout, bytes.TrimSpace(out), s.Log())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop ends the sshd this test started (by its process, never by name),
// and waits for it.
func (s *SSHD) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

func freeSSHPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("a free loopback port: %w", err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return strconv.Atoi(port)
}

func readSSHFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeSSHFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// sshLog is what sshd says: a bytes.Buffer safe for its output and a reader.
type sshLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *sshLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *sshLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
