package moby

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envOf is a getenv over vars only: the tests never read the machine's.
func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestEndpointValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ep      Endpoint
		wantErr string // "" for valid
	}{
		{"the zero endpoint is the environment", Endpoint{}, ""},
		{"unix socket", Endpoint{Host: "unix:///var/run/docker.sock"}, ""},
		{"unix path must be absolute", Endpoint{Host: "unix://run/docker.sock"}, "must be absolute"},
		{"tcp with a cert folder", Endpoint{Host: "tcp://10.0.0.5:2376", CertPath: "/certs"}, ""},
		{"tcp with IPv6 and a cert folder", Endpoint{Host: "tcp://[fd00::5]:2376", CertPath: "/certs"}, ""},
		{"tcp without TLS is refused", Endpoint{Host: "tcp://10.0.0.5:2375"}, "tcp:// needs TLS"},
		{"plain tcp when asked", Endpoint{Host: "tcp://10.0.0.5:2375", PlainTCP: true}, ""},
		{"tcp with both TLS and plain", Endpoint{Host: "tcp://10.0.0.5:2376", CertPath: "/certs", PlainTCP: true}, "both a cert path and plain TCP"},
		{"tcp needs a port", Endpoint{Host: "tcp://10.0.0.5", PlainTCP: true}, "want tcp://host:port"},
		{"tcp port out of range", Endpoint{Host: "tcp://10.0.0.5:70000", PlainTCP: true}, "not 1-65535"},
		{"tcp with a user", Endpoint{Host: "tcp://me@10.0.0.5:2376", CertPath: "/certs"}, "host:port only"},
		{"tcp with a path", Endpoint{Host: "tcp://10.0.0.5:2376/v1", CertPath: "/certs"}, "host:port only"},
		{"ssh with a user", Endpoint{Host: "ssh://deploy@edge-1"}, ""},
		{"ssh with a port and a socket", Endpoint{Host: "ssh://deploy@edge-1:2222/run/user/1000/docker.sock"}, ""},
		{"ssh with an ssh config file", Endpoint{Host: "ssh://edge-1", SSHConfig: "/tmp/ssh_config"}, ""},
		{"ssh with a password is refused", Endpoint{Host: "ssh://deploy:secret@edge-1"}, "password"},
		{"ssh with a query", Endpoint{Host: "ssh://deploy@edge-1?x=1"}, "query"},
		{"ssh without a host", Endpoint{Host: "ssh://deploy@"}, "hostname is empty"},
		{"ssh host looking like an option", Endpoint{Host: "ssh://-oProxyCommand=x"}, "may not start with '-'"},
		{"ssh port out of range", Endpoint{Host: "ssh://edge-1:0"}, "not 1-65535"},
		{"TLS settings on ssh", Endpoint{Host: "ssh://edge-1", CertPath: "/certs"}, "tcp:// only"},
		{"plain tcp on unix", Endpoint{Host: "unix:///var/run/docker.sock", PlainTCP: true}, "tcp:// only"},
		{"an unknown scheme", Endpoint{Host: "http://10.0.0.5:2375"}, "not one rollcall speaks"},
		{"no scheme", Endpoint{Host: "edge-1"}, "want unix:///path"},
		{"a context by name", Endpoint{Context: "edge-3"}, ""},
		{"the default context", Endpoint{Context: "default"}, ""},
		{"a context name with a slash", Endpoint{Context: "../edge"}, "not a context name"},
		{"both a host and a context", Endpoint{Host: "ssh://edge-1", Context: "edge-3"}, "give one"},
		{"a cert path with a context", Endpoint{Context: "edge-3", CertPath: "/certs"}, "the context's own"},
		{"TLS settings without a host", Endpoint{CertPath: "/certs"}, "needs a host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.ep.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate(%+v) = %v, want valid", tc.ep, err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("Validate(%+v) = nil, want an error with %q", tc.ep, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("Validate(%+v) = %v, want it to say %q", tc.ep, err, tc.wantErr)
			}
		})
	}
}

func TestEndpointResolveHost(t *testing.T) {
	pki := newTestPKI(t)
	for _, tc := range []struct {
		name     string
		ep       Endpoint
		env      map[string]string
		wantName string
		scheme   string
		wantTLS  bool
		skip     bool // the route's TLS skips the server check
	}{
		{name: "unix, cleaned", ep: Endpoint{Host: "unix:///run//docker.sock"}, wantName: "unix:///run//docker.sock", scheme: "unix"},
		{name: "ssh as given", ep: Endpoint{Host: "ssh://deploy@edge-1:2222", SSHConfig: "/tmp/cfg"}, wantName: "ssh://deploy@edge-1:2222", scheme: "ssh"},
		{name: "tcp with a cert folder checks the server", ep: Endpoint{Host: "tcp://127.0.0.1:2376", CertPath: pki.ClientDir},
			wantName: "tcp://127.0.0.1:2376", scheme: "tcp", wantTLS: true},
		{name: "an explicit tcp host ignores DOCKER_CERT_PATH", ep: Endpoint{Host: "tcp://127.0.0.1:2375", PlainTCP: true},
			env: map[string]string{"DOCKER_CERT_PATH": pki.ClientDir}, wantName: "tcp://127.0.0.1:2375", scheme: "tcp"},
		{name: "the environment's default socket", wantName: "unix:///var/run/docker.sock", scheme: "unix"},
		{name: "the environment's ssh host", env: map[string]string{"DOCKER_HOST": "ssh://deploy@edge-1"},
			wantName: "ssh://deploy@edge-1", scheme: "ssh"},
		{name: "the environment's plain tcp, as the docker CLI takes it", env: map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2375"},
			wantName: "tcp://127.0.0.1:2375", scheme: "tcp"},
		{name: "the environment's cert path without DOCKER_TLS_VERIFY skips the check, as the docker CLI",
			env:      map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2376", "DOCKER_CERT_PATH": pki.ClientDir},
			wantName: "tcp://127.0.0.1:2376", scheme: "tcp", wantTLS: true, skip: true},
		{name: "the environment's cert path with DOCKER_TLS_VERIFY checks",
			env:      map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2376", "DOCKER_CERT_PATH": pki.ClientDir, "DOCKER_TLS_VERIFY": "1"},
			wantName: "tcp://127.0.0.1:2376", scheme: "tcp", wantTLS: true},
		{name: "DOCKER_TLS_VERIFY alone reads the config folder",
			env:      map[string]string{"DOCKER_HOST": "tcp://127.0.0.1:2376", "DOCKER_CONFIG": pki.ClientDir, "DOCKER_TLS_VERIFY": "1"},
			wantName: "tcp://127.0.0.1:2376", scheme: "tcp", wantTLS: true},
		{name: "the environment's certs do not apply to a socket",
			env:      map[string]string{"DOCKER_HOST": "unix:///run/docker.sock", "DOCKER_CERT_PATH": pki.ClientDir},
			wantName: "unix:///run/docker.sock", scheme: "unix"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := tc.ep.resolve(envOf(tc.env))
			if err != nil {
				t.Fatalf("resolve: %v", err)
			}
			if r.name != tc.wantName || r.host.scheme != tc.scheme {
				t.Errorf("route = %s (%s), want %s (%s)", r.name, r.host.scheme, tc.wantName, tc.scheme)
			}
			if (r.tls != nil) != tc.wantTLS {
				t.Fatalf("route TLS = %v, want TLS %v", r.tls != nil, tc.wantTLS)
			}
			if r.tls != nil {
				if r.tls.skipVerify != tc.skip {
					t.Errorf("skipVerify = %v, want %v", r.tls.skipVerify, tc.skip)
				}
				ca, _ := os.ReadFile(filepath.Join(pki.ClientDir, "ca.pem"))
				if !bytes.Equal(r.tls.ca, ca) || r.tls.cert == nil || r.tls.key == nil {
					t.Errorf("route TLS does not hold the folder's ca.pem, cert.pem and key.pem")
				}
				if _, err := r.tls.config(); err != nil {
					t.Errorf("TLS config: %v", err)
				}
			}
			if _, _, err := r.clientOpts(); err != nil {
				t.Errorf("clientOpts: %v", err)
			}
		})
	}
}

func TestEndpointCertPathNeedsAllThreeFiles(t *testing.T) {
	for _, missing := range []string{"ca.pem", "cert.pem", "key.pem"} {
		t.Run(missing, func(t *testing.T) {
			pki := newTestPKI(t)
			if err := os.Remove(filepath.Join(pki.ClientDir, missing)); err != nil {
				t.Fatal(err)
			}
			_, err := Endpoint{Host: "tcp://127.0.0.1:2376", CertPath: pki.ClientDir}.resolve(envOf(nil))
			if err == nil || !strings.Contains(err.Error(), missing) {
				t.Fatalf("resolve without %s = %v, want an error naming it", missing, err)
			}
		})
	}
}

func TestTLSConfigRefusesBadMaterial(t *testing.T) {
	pki := newTestPKI(t)
	good, err := readCertPath(pki.ClientDir, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := good.config()
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.InsecureSkipVerify || cfg.RootCAs == nil || len(cfg.Certificates) != 1 {
		t.Errorf("config checks the server %v, has roots %v, certificates %d; want true, true, 1",
			!cfg.InsecureSkipVerify, cfg.RootCAs != nil, len(cfg.Certificates))
	}
	for _, tc := range []struct {
		name, want string
		edit       func(m *tlsMaterial)
	}{
		{"a ca.pem that holds no certificate", "ca.pem holds no PEM certificate", func(m *tlsMaterial) { m.ca = []byte("not PEM") }},
		{"a key of another certificate", "cert.pem and key.pem", func(m *tlsMaterial) {
			other, _ := readCertPath(newTestPKI(t).ClientDir, false)
			m.key = other.key
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := *good
			tc.edit(&m)
			if _, err := m.config(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("config = %v, want an error with %q", err, tc.want)
			}
		})
	}
}
