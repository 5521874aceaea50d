package moby_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// TestMobyOverTLS reaches the test's engine through a TLS listener of the
// test's own (a proxy in front of its socket, with a CA made for the test,
// requiring a client certificate): from a DOCKER_CERT_PATH folder, and from
// a docker context the docker CLI stored with that material, it is the same
// engine; a server certificate of another CA, and a context without a
// client certificate, are refused.
func TestMobyOverTLS(t *testing.T) {
	m := dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), mobyTestTimeout)
	defer cancel()
	local, err := m.Info(ctx)
	if err != nil {
		t.Fatalf("Info of the local engine: %v", err)
	}
	socket, ok := strings.CutPrefix(local.Endpoint, "unix://")
	if !ok {
		t.Skipf("the TLS proxy fronts a unix socket; the engine is at %s", local.Endpoint)
	}
	t.Parallel()
	pki := moby.NewTestPKI(t)
	host := "tcp://" + tlsProxy(t, pki.Server, socket)
	prefix := dockertest.Prefix(t)

	reach := func(ep moby.Endpoint) (string, error) {
		t.Helper()
		tm, err := moby.Dial(ctx, ep)
		if err != nil {
			return "", err
		}
		defer tm.Close()
		info, err := tm.Info(ctx)
		if err != nil {
			t.Fatalf("Info over %s: %v", ep, err)
		}
		if info.Endpoint != host {
			t.Errorf("Info.Endpoint = %q, want %q", info.Endpoint, host)
		}
		if _, err := tm.List(ctx, prefix); err != nil {
			t.Errorf("List over %s: %v", ep, err)
		}
		return info.ID, nil
	}

	id, err := reach(moby.Endpoint{Host: host, CertPath: pki.ClientDir})
	if err != nil {
		t.Fatalf("Dial with the cert folder: %v", err)
	}
	if id != local.ID {
		t.Errorf("engine ID over TLS = %q, want the local engine's %q", id, local.ID)
	}

	// The right client certificate, another CA: the client must refuse the
	// server (an x509 error of its own, not the server's "remote error").
	otherCA := t.TempDir()
	copyFile(t, filepath.Join(moby.NewTestPKI(t).ClientDir, "ca.pem"), filepath.Join(otherCA, "ca.pem"))
	copyFile(t, filepath.Join(pki.ClientDir, "cert.pem"), filepath.Join(otherCA, "cert.pem"))
	copyFile(t, filepath.Join(pki.ClientDir, "key.pem"), filepath.Join(otherCA, "key.pem"))
	if _, err := reach(moby.Endpoint{Host: host, CertPath: otherCA}); err == nil {
		t.Error("Dial with the ca.pem of another CA: nil error, want the server's certificate refused")
	} else if !strings.Contains(err.Error(), "x509:") {
		t.Errorf("Dial with the ca.pem of another CA = %v, want the client's x509 error", err)
	}

	config := t.TempDir()
	ca, cert, key := filepath.Join(pki.ClientDir, "ca.pem"), filepath.Join(pki.ClientDir, "cert.pem"), filepath.Join(pki.ClientDir, "key.pem")
	dockerContext(t, config, "tls-full", "host="+host+",ca="+ca+",cert="+cert+",key="+key)
	dockerContext(t, config, "tls-ca-only", "host="+host+",ca="+ca)
	id, err = reach(moby.Endpoint{Context: "tls-full", ConfigDir: config})
	if err != nil {
		t.Fatalf("Dial with the context: %v", err)
	}
	if id != local.ID {
		t.Errorf("engine ID over the context = %q, want the local engine's %q", id, local.ID)
	}
	if _, err := reach(moby.Endpoint{Context: "tls-ca-only", ConfigDir: config}); err == nil {
		t.Error("Dial with a context without a client certificate: nil error, want the server to refuse it")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("Dial with a context without a client certificate = %v, want a certificate error", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// dockerContext stores a context with the docker command line, in config.
func dockerContext(t *testing.T, config, name, dockerOpt string) {
	t.Helper()
	cmd := exec.Command("docker", "context", "create", name, "--docker", dockerOpt)
	cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+config)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("docker context create %s: %v: %s", name, err, out)
	}
}

// tlsProxy listens on a loopback port with cfg and passes each connection
// on to the unix socket; it stops in t's cleanup. It returns host:port.
func tlsProxy(t *testing.T, cfg *tls.Config, socket string) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if errors.Is(err, net.ErrClosed) {
				return
			}
			if err != nil {
				continue
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				up, err := net.Dial("unix", socket)
				if err != nil {
					return
				}
				track(up)
				defer up.Close()
				done := make(chan struct{}, 2)
				go func() { io.Copy(up, c); done <- struct{}{} }()
				go func() { io.Copy(c, up); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}
