package moby

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/cli/cli/connhelper/ssh"
	"github.com/moby/moby/client"
)

// Endpoint says how to reach one engine, the ways the docker CLI does:
//
//   - Host "unix:///path": the engine's socket on this machine;
//   - Host "tcp://host:port": over TLS from CertPath, a folder in the
//     DOCKER_CERT_PATH layout (ca.pem, cert.pem, key.pem), the server's
//     certificate checked against its ca.pem; plain TCP only with PlainTCP,
//     since a plain engine port is root on that host to anyone who reaches it;
//   - Host "ssh://[user@]host[:port][/socket]": the system ssh, running
//     `docker system dial-stdio` on the host (against the socket, when the
//     URL has a path), so ~/.ssh/config, agents and jump hosts work;
//   - Context "name": the docker context of that name, as `docker context
//     create` stored it under ConfigDir; its TLS material is used, and its
//     skip-tls-verify honoured, as the docker CLI does.
//
// The zero Endpoint is the environment, as New reads it.
type Endpoint struct {
	Host    string
	Context string
	// CertPath is the TLS folder of a tcp:// Host.
	CertPath string
	// PlainTCP allows a tcp:// endpoint (Host or Context) without TLS.
	PlainTCP bool
	// SSHConfig is a file for ssh's -F (instead of ~/.ssh/config); "" is
	// ssh's own default.
	SSHConfig string
	// ConfigDir is the docker CLI's configuration folder, where contexts
	// live; "" is DOCKER_CONFIG, else ~/.docker.
	ConfigDir string
}

// String names e for messages: its host, its context, or the environment.
func (e Endpoint) String() string {
	switch {
	case e.Context != "":
		return "docker context " + e.Context
	case e.Host != "":
		return e.Host
	default:
		return "the engine of the environment"
	}
}

// Validate checks e without reading a file or reaching the engine: one of
// Host and Context at most, a host URL of a scheme rollcall speaks, TLS or
// PlainTCP for tcp://, and no TLS or ssh settings where they would be
// ignored.
func (e Endpoint) Validate() error {
	if e.Host != "" && e.Context != "" {
		return fmt.Errorf("endpoint %s: both a host and a docker context (%s): give one", e.Host, e.Context)
	}
	if e.Context != "" {
		if err := checkContextName(e.Context); err != nil {
			return err
		}
		if e.CertPath != "" {
			return fmt.Errorf("%s: a cert path is the context's own (its TLS folder), not one of the endpoint", e)
		}
		return nil
	}
	if e.Host == "" {
		if e.CertPath != "" || e.PlainTCP {
			return errors.New("an endpoint with TLS settings needs a host")
		}
		return nil
	}
	h, err := parseHost(e.Host)
	if err != nil {
		return err
	}
	if h.scheme != "tcp" && (e.CertPath != "" || e.PlainTCP) {
		return fmt.Errorf("endpoint %s: TLS settings are for tcp:// only (%s:// does not use them)", e.Host, h.scheme)
	}
	if h.scheme == "tcp" {
		switch {
		case e.CertPath != "" && e.PlainTCP:
			return fmt.Errorf("endpoint %s: both a cert path and plain TCP: give one", e.Host)
		case e.CertPath == "" && !e.PlainTCP:
			return fmt.Errorf("endpoint %s: tcp:// needs TLS: give a cert path (a folder with ca.pem, cert.pem and key.pem, as DOCKER_CERT_PATH), or ask for plain TCP explicitly", e.Host)
		}
	}
	return nil
}

// hostURL is a parsed host.
type hostURL struct {
	scheme string // unix, tcp or ssh
	host   string // the URL, cleaned (unix://, tcp://) or as given (ssh://)
}

// parseHost checks one host URL the way the docker CLI would take it, with
// the errors said in rollcall's words.
func parseHost(raw string) (hostURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || rest == "" {
		return hostURL{}, fmt.Errorf("endpoint %q: want unix:///path, tcp://host:port or ssh://user@host", raw)
	}
	switch scheme {
	case "unix":
		if !strings.HasPrefix(rest, "/") {
			return hostURL{}, fmt.Errorf("endpoint %s: a unix socket path must be absolute (unix:///run/docker.sock)", raw)
		}
		return hostURL{scheme: scheme, host: "unix://" + filepath.Clean(rest)}, nil
	case "tcp":
		u, err := url.Parse(raw)
		if err != nil {
			return hostURL{}, fmt.Errorf("endpoint %s: %w", raw, err)
		}
		if u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
			return hostURL{}, fmt.Errorf("endpoint %s: a tcp:// endpoint is host:port only", raw)
		}
		h, port, err := net.SplitHostPort(u.Host)
		if err != nil || h == "" {
			return hostURL{}, fmt.Errorf("endpoint %s: want tcp://host:port (the engine's port, e.g. 2376)", raw)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return hostURL{}, fmt.Errorf("endpoint %s: port %q is not 1-65535", raw, port)
		}
		return hostURL{scheme: scheme, host: "tcp://" + u.Host}, nil
	case "ssh":
		sp, err := ssh.ParseURL(raw)
		if err != nil {
			return hostURL{}, fmt.Errorf("endpoint %s: %w", raw, err)
		}
		if sp.Port != "" {
			if n, err := strconv.Atoi(sp.Port); err != nil || n < 1 || n > 65535 {
				return hostURL{}, fmt.Errorf("endpoint %s: port %q is not 1-65535", raw, sp.Port)
			}
		}
		if strings.HasPrefix(sp.Host, "-") || strings.HasPrefix(sp.User, "-") {
			return hostURL{}, fmt.Errorf("endpoint %s: a host or user may not start with '-'", raw)
		}
		return hostURL{scheme: scheme, host: raw}, nil
	default:
		return hostURL{}, fmt.Errorf("endpoint %s: scheme %s:// is not one rollcall speaks (unix://, tcp://, ssh://)", raw, scheme)
	}
}

// route is an endpoint resolved to what the client is built from.
type route struct {
	name string // what Info's Endpoint and the errors say
	host hostURL
	tls  *tlsMaterial // tcp:// only; nil is plain TCP
	// sshConfig is ssh's -F file, "" for its default.
	sshConfig string
}

// tlsMaterial is a client's TLS: PEM blocks, as a cert folder or a
// context's TLS folder holds them.
type tlsMaterial struct {
	ca, cert, key []byte // ca nil: the system's roots; cert and key both or neither
	skipVerify    bool   // the environment or a context said so, as the docker CLI lets them
	from          string // the folder, for errors
}

// resolve turns e into a route, reading a context or a cert folder; getenv
// is the environment (DOCKER_CONFIG, and DOCKER_HOST and friends for the
// zero Endpoint).
func (e Endpoint) resolve(getenv func(string) string) (route, error) {
	if err := e.Validate(); err != nil {
		return route{}, err
	}
	switch {
	case e.Context != "":
		return e.resolveContext(getenv)
	case e.Host == "":
		return envRoute("", getenv)
	}
	h, err := parseHost(e.Host)
	if err != nil {
		return route{}, err
	}
	r := route{name: e.Host, host: h, sshConfig: e.SSHConfig}
	if e.CertPath != "" {
		if r.tls, err = readCertPath(e.CertPath, false); err != nil {
			return route{}, fmt.Errorf("endpoint %s: %w", e.Host, err)
		}
	}
	return r, nil
}

// envRoute is the route the docker CLI takes from its environment, as New
// always took it: host, else DOCKER_HOST, else the default socket; TLS from
// DOCKER_CERT_PATH (~/.docker when only DOCKER_TLS_VERIFY is set), the
// server checked only with DOCKER_TLS_VERIFY; plain TCP otherwise, since
// that is what the environment asks of the docker CLI.
func envRoute(host string, getenv func(string) string) (route, error) {
	if host == "" {
		host = getenv(client.EnvOverrideHost)
	}
	if host == "" {
		host = client.DefaultDockerHost
	}
	h, err := parseHost(host)
	if err != nil {
		return route{}, err
	}
	r := route{name: host, host: h}
	if h.scheme != "tcp" {
		return r, nil
	}
	certPath, verify := getenv(client.EnvOverrideCertPath), getenv(client.EnvTLSVerify) != ""
	if certPath == "" && verify {
		certPath = configDir("", getenv)
	}
	if certPath != "" {
		if r.tls, err = readCertPath(certPath, !verify); err != nil {
			return route{}, fmt.Errorf("endpoint %s: %s: %w", host, client.EnvOverrideCertPath, err)
		}
	}
	return r, nil
}

// readCertPath reads a folder of the DOCKER_CERT_PATH layout: all three
// files must be there.
func readCertPath(dir string, skipVerify bool) (*tlsMaterial, error) {
	m := &tlsMaterial{skipVerify: skipVerify, from: dir}
	for _, f := range []struct {
		name string
		into *[]byte
	}{{"ca.pem", &m.ca}, {"cert.pem", &m.cert}, {"key.pem", &m.key}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if err != nil {
			return nil, fmt.Errorf("TLS folder %s: %w", dir, err)
		}
		*f.into = b
	}
	return m, nil
}

// configDir is the docker CLI's configuration folder: dir, else
// DOCKER_CONFIG, else ~/.docker.
func configDir(dir string, getenv func(string) string) string {
	if dir != "" {
		return dir
	}
	if d := getenv("DOCKER_CONFIG"); d != "" {
		return d
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	return filepath.Join(home, ".docker")
}
