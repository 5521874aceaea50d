package moby

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
)

// The docker CLI's context store, as `docker context create` writes it
// under the configuration folder (docker/cli cli/context/store):
//
//	contexts/meta/<sha256 of the name>/meta.json   {"Name": …, "Endpoints": {"docker": {"Host": …, "SkipTLSVerify": …}}}
//	contexts/tls/<sha256 of the name>/docker/      ca.pem, cert.pem, key.pem, each optional
//
// Only the "docker" endpoint is read; the rest of the metadata is the CLI's.
const (
	contextsDir    = "contexts"
	contextMeta    = "meta.json"
	dockerEndpoint = "docker"
	// defaultContext is the CLI's name for its environment; it is never stored.
	defaultContext = "default"
)

// contextName is the docker CLI's rule for a context name.
var contextName = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.+-]+$`)

func checkContextName(name string) error {
	if name != defaultContext && !contextName.MatchString(name) {
		return fmt.Errorf("docker context %q: not a context name (letters, digits and _.+-, starting with a letter or digit)", name)
	}
	return nil
}

// contextMetadata is the part of meta.json rollcall reads.
type contextMetadata struct {
	Name      string
	Endpoints map[string]struct {
		Host          string
		SkipTLSVerify bool
	}
}

// contextID is the folder name of a context: the hex SHA-256 of its name.
func contextID(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// resolveContext reads e's context: its docker endpoint's host, and for
// tcp:// its TLS folder. "default" is the environment, as for the docker
// CLI. A tcp:// context without TLS material is refused unless PlainTCP.
func (e Endpoint) resolveContext(getenv func(string) string) (route, error) {
	if e.Context == defaultContext {
		return envRoute("", getenv)
	}
	dir := configDir(e.ConfigDir, getenv)
	id := contextID(e.Context)
	metaFile := filepath.Join(dir, contextsDir, "meta", id, contextMeta)
	b, err := os.ReadFile(metaFile)
	if errors.Is(err, fs.ErrNotExist) {
		return route{}, fmt.Errorf("%s: no such context in %s (see docker context ls)", e, dir)
	}
	if err != nil {
		return route{}, fmt.Errorf("%s: %w", e, err)
	}
	var meta contextMetadata
	if err := json.Unmarshal(b, &meta); err != nil {
		return route{}, fmt.Errorf("%s: %s: %w", e, metaFile, err)
	}
	if meta.Name != e.Context {
		return route{}, fmt.Errorf("%s: %s is the context %q", e, metaFile, meta.Name)
	}
	ep, ok := meta.Endpoints[dockerEndpoint]
	if !ok || ep.Host == "" {
		return route{}, fmt.Errorf("%s: it has no docker endpoint host", e)
	}
	h, err := parseHost(ep.Host)
	if err != nil {
		return route{}, fmt.Errorf("%s: %w", e, err)
	}
	r := route{name: ep.Host, host: h, sshConfig: e.SSHConfig}
	if h.scheme != "tcp" {
		return r, nil
	}
	tlsDir := filepath.Join(dir, contextsDir, "tls", id, dockerEndpoint)
	m, err := readContextTLS(tlsDir)
	if err != nil {
		return route{}, fmt.Errorf("%s: %w", e, err)
	}
	if m == nil && ep.SkipTLSVerify {
		m = &tlsMaterial{from: tlsDir}
	}
	if m != nil {
		m.skipVerify = ep.SkipTLSVerify
		r.tls = m
	}
	if r.tls == nil && !e.PlainTCP {
		return route{}, fmt.Errorf("%s: %s has no TLS material (in %s): give the context TLS (docker context create --docker host=…,ca=…,cert=…,key=…), or ask for plain TCP explicitly", e, ep.Host, tlsDir)
	}
	if r.tls != nil && e.PlainTCP {
		return route{}, fmt.Errorf("%s: plain TCP asked, but the context has TLS material (in %s)", e, tlsDir)
	}
	return r, nil
}

// readContextTLS reads a context's TLS folder, each file optional as the
// CLI stores them (cert and key come together); nil when there is none.
func readContextTLS(dir string) (*tlsMaterial, error) {
	m := &tlsMaterial{from: dir}
	found := false
	for _, f := range []struct {
		name string
		into *[]byte
	}{{"ca.pem", &m.ca}, {"cert.pem", &m.cert}, {"key.pem", &m.key}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("TLS folder %s: %w", dir, err)
		}
		*f.into, found = b, true
	}
	if !found {
		return nil, nil
	}
	if (m.cert == nil) != (m.key == nil) {
		return nil, fmt.Errorf("TLS folder %s: cert.pem and key.pem go together", dir)
	}
	return m, nil
}
