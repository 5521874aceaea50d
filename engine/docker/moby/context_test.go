package moby

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// storeContext writes a context as `docker context create` does: meta.json
// under the SHA-256 of name, and the TLS files (name → content) of its
// docker endpoint.
func storeContext(t *testing.T, configDir, name, host string, skipTLSVerify bool, tlsFiles map[string][]byte) {
	t.Helper()
	meta := map[string]any{
		"Name":     name,
		"Metadata": map[string]any{"Description": "a test context"},
		"Endpoints": map[string]any{
			"docker": map[string]any{"Host": host, "SkipTLSVerify": skipTLSVerify},
		},
	}
	b, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	id := contextID(name)
	metaDir := filepath.Join(configDir, "contexts", "meta", id)
	if err := os.MkdirAll(metaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(metaDir, "meta.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if len(tlsFiles) == 0 {
		return
	}
	tlsDir := filepath.Join(configDir, "contexts", "tls", id, "docker")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for f, content := range tlsFiles {
		if err := os.WriteFile(filepath.Join(tlsDir, f), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func readPKI(t *testing.T, pki testPKI) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	for _, f := range []string{"ca.pem", "cert.pem", "key.pem"} {
		b, err := os.ReadFile(filepath.Join(pki.ClientDir, f))
		if err != nil {
			t.Fatal(err)
		}
		files[f] = b
	}
	return files
}

func TestContextID(t *testing.T) {
	// The folder `docker context create edge-3` makes (docker CLI 28).
	if got, want := contextID("edge-3"), "ec85738f376e8fcc961365327c5a7524d802aadc4ac349cb0c1f6055a73d0943"; got != want {
		t.Errorf("contextID(edge-3) = %s, want %s", got, want)
	}
}

func TestContextResolve(t *testing.T) {
	pki := newTestPKI(t)
	files := readPKI(t, pki)
	caOnly := map[string][]byte{"ca.pem": files["ca.pem"]}
	certNoKey := map[string][]byte{"ca.pem": files["ca.pem"], "cert.pem": files["cert.pem"]}

	for _, tc := range []struct {
		name     string
		store    func(t *testing.T, dir string)
		ep       Endpoint
		env      map[string]string
		wantName string
		wantTLS  *tlsMaterial // nil: plain or not tcp
		wantErr  string
	}{
		{name: "an ssh context", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-3", "ssh://deploy@edge-3", false, nil)
		}, ep: Endpoint{Context: "edge-3", SSHConfig: "/tmp/cfg"}, wantName: "ssh://deploy@edge-3"},
		{name: "a unix context", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "rootless", "unix:///run/user/1000/docker.sock", false, nil)
		}, ep: Endpoint{Context: "rootless"}, wantName: "unix:///run/user/1000/docker.sock"},
		{name: "a tcp context with its TLS folder", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-4", "tcp://127.0.0.1:2376", false, files)
		}, ep: Endpoint{Context: "edge-4"}, wantName: "tcp://127.0.0.1:2376",
			wantTLS: &tlsMaterial{ca: files["ca.pem"], cert: files["cert.pem"], key: files["key.pem"]}},
		{name: "a tcp context with a CA only", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-5", "tcp://127.0.0.1:2376", false, caOnly)
		}, ep: Endpoint{Context: "edge-5"}, wantName: "tcp://127.0.0.1:2376", wantTLS: &tlsMaterial{ca: files["ca.pem"]}},
		{name: "a tcp context's skip-tls-verify is honoured, as the docker CLI", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-6", "tcp://127.0.0.1:2376", true, nil)
		}, ep: Endpoint{Context: "edge-6"}, wantName: "tcp://127.0.0.1:2376", wantTLS: &tlsMaterial{skipVerify: true}},
		{name: "a plain tcp context is refused", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "plain", "tcp://127.0.0.1:2375", false, nil)
		}, ep: Endpoint{Context: "plain"}, wantErr: "no TLS material"},
		{name: "a plain tcp context when asked", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "plain", "tcp://127.0.0.1:2375", false, nil)
		}, ep: Endpoint{Context: "plain", PlainTCP: true}, wantName: "tcp://127.0.0.1:2375"},
		{name: "plain tcp asked of a TLS context", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-4", "tcp://127.0.0.1:2376", false, files)
		}, ep: Endpoint{Context: "edge-4", PlainTCP: true}, wantErr: "has TLS material"},
		{name: "a cert without its key", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "edge-7", "tcp://127.0.0.1:2376", false, certNoKey)
		}, ep: Endpoint{Context: "edge-7"}, wantErr: "go together"},
		{name: "a context that is not there", store: func(t *testing.T, dir string) {}, ep: Endpoint{Context: "edge-9"}, wantErr: "no such context"},
		{name: "a meta.json of another name", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "other", "ssh://deploy@other", false, nil)
			id := contextID("edge-3")
			if err := os.Rename(filepath.Join(dir, "contexts", "meta", contextID("other")), filepath.Join(dir, "contexts", "meta", id)); err != nil {
				t.Fatal(err)
			}
		}, ep: Endpoint{Context: "edge-3"}, wantErr: `is the context "other"`},
		{name: "a context without a docker endpoint", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "empty", "", false, nil)
		}, ep: Endpoint{Context: "empty"}, wantErr: "no docker endpoint host"},
		{name: "a context with a host rollcall does not speak", store: func(t *testing.T, dir string) {
			storeContext(t, dir, "npipe", "npipe:////./pipe/docker_engine", false, nil)
		}, ep: Endpoint{Context: "npipe"}, wantErr: "not one rollcall speaks"},
		{name: "a broken meta.json", store: func(t *testing.T, dir string) {
			metaDir := filepath.Join(dir, "contexts", "meta", contextID("broken"))
			if err := os.MkdirAll(metaDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(metaDir, "meta.json"), []byte("{"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, ep: Endpoint{Context: "broken"}, wantErr: "meta.json"},
		{name: "the default context is the environment", store: func(t *testing.T, dir string) {},
			ep: Endpoint{Context: "default"}, env: map[string]string{"DOCKER_HOST": "ssh://deploy@edge-1"}, wantName: "ssh://deploy@edge-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.store(t, dir)
			env := map[string]string{"DOCKER_CONFIG": dir}
			for k, v := range tc.env {
				env[k] = v
			}
			r, err := tc.ep.resolve(envOf(env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("resolve = %+v, %v; want an error with %q", r, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if r.name != tc.wantName {
				t.Errorf("route = %s, want %s", r.name, tc.wantName)
			}
			if r.host.scheme == "ssh" && r.sshConfig != tc.ep.SSHConfig {
				t.Errorf("ssh config = %q, want the endpoint's %q", r.sshConfig, tc.ep.SSHConfig)
			}
			if (r.tls == nil) != (tc.wantTLS == nil) {
				t.Fatalf("route TLS = %+v, want %+v", r.tls, tc.wantTLS)
			}
			if w := tc.wantTLS; w != nil {
				if !bytes.Equal(r.tls.ca, w.ca) || !bytes.Equal(r.tls.cert, w.cert) || !bytes.Equal(r.tls.key, w.key) || r.tls.skipVerify != w.skipVerify {
					t.Errorf("route TLS: ca %v cert %v key %v skip %v; want ca %v cert %v key %v skip %v",
						r.tls.ca != nil, r.tls.cert != nil, r.tls.key != nil, r.tls.skipVerify,
						w.ca != nil, w.cert != nil, w.key != nil, w.skipVerify)
				}
				if _, err := r.tls.config(); err != nil {
					t.Errorf("TLS config: %v", err)
				}
			}
		})
	}
}

// TestContextConfigDirOutranksDockerConfig: an endpoint's own folder is read,
// not DOCKER_CONFIG's.
func TestContextConfigDirOutranksDockerConfig(t *testing.T) {
	own, env := t.TempDir(), t.TempDir()
	storeContext(t, own, "edge-3", "ssh://deploy@own", false, nil)
	storeContext(t, env, "edge-3", "ssh://deploy@env", false, nil)
	for _, tc := range []struct {
		ep   Endpoint
		want string
	}{
		{Endpoint{Context: "edge-3", ConfigDir: own}, "ssh://deploy@own"},
		{Endpoint{Context: "edge-3"}, "ssh://deploy@env"},
	} {
		r, err := tc.ep.resolve(envOf(map[string]string{"DOCKER_CONFIG": env}))
		if err != nil {
			t.Fatal(err)
		}
		if r.name != tc.want {
			t.Errorf("resolve(%+v) = %s, want %s", tc.ep, r.name, tc.want)
		}
	}
	// Without DOCKER_CONFIG: ~/.docker.
	home := t.TempDir()
	storeContext(t, filepath.Join(home, ".docker"), "edge-3", "ssh://deploy@home", false, nil)
	r, err := Endpoint{Context: "edge-3"}.resolve(envOf(map[string]string{"HOME": home}))
	if err != nil || r.name != "ssh://deploy@home" {
		t.Errorf("resolve under HOME = %s, %v; want ssh://deploy@home", r.name, err)
	}
}

// TestContextMadeByTheDockerCLI reads contexts that the docker command line
// itself stored, so the format is the CLI's, not this test's idea of it.
func TestContextMadeByTheDockerCLI(t *testing.T) {
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("no docker command line to make a context with")
	}
	dir := t.TempDir()
	pki := newTestPKI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	create := func(name, docker string) {
		t.Helper()
		cmd := exec.CommandContext(ctx, "docker", "context", "create", name, "--docker", docker)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("docker context create %s: %v: %s", name, err, out)
		}
	}
	create("edge-ssh", "host=ssh://deploy@edge-1:2222")
	create("edge-tls", "host=tcp://127.0.0.1:2376,ca="+filepath.Join(pki.ClientDir, "ca.pem")+
		",cert="+filepath.Join(pki.ClientDir, "cert.pem")+",key="+filepath.Join(pki.ClientDir, "key.pem"))
	create("edge-plain", "host=tcp://127.0.0.1:2375")

	files := readPKI(t, pki)
	env := envOf(map[string]string{"DOCKER_CONFIG": dir})
	r, err := Endpoint{Context: "edge-ssh"}.resolve(env)
	if err != nil || r.name != "ssh://deploy@edge-1:2222" || r.host.scheme != "ssh" {
		t.Errorf("edge-ssh = %s (%s), %v; want ssh://deploy@edge-1:2222", r.name, r.host.scheme, err)
	}
	r, err = Endpoint{Context: "edge-tls"}.resolve(env)
	if err != nil {
		t.Fatalf("edge-tls: %v", err)
	}
	if r.tls == nil || !bytes.Equal(r.tls.ca, files["ca.pem"]) || !bytes.Equal(r.tls.cert, files["cert.pem"]) ||
		!bytes.Equal(r.tls.key, files["key.pem"]) || r.tls.skipVerify {
		t.Errorf("edge-tls TLS = %+v, want the three files, the server checked", r.tls)
	}
	if _, err := (Endpoint{Context: "edge-plain"}).resolve(env); err == nil || !strings.Contains(err.Error(), "no TLS material") {
		t.Errorf("edge-plain = %v, want refused without plain TCP asked", err)
	}
}
