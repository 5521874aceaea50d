package moby

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"time"

	"github.com/docker/cli/cli/connhelper"
	"github.com/moby/moby/client"
)

// An ssh:// engine is reached as the docker CLI reaches it (docker/cli
// cli/connhelper): each HTTP connection is one system ssh process running
// `docker system dial-stdio` on the host, its stdin and stdout the
// connection, its stderr kept for the error when it exits, and the process
// killed when the connection closes. The user's ssh does the rest:
// ~/.ssh/config (or the endpoint's -F file), agents, ProxyJump,
// ControlMaster.
const (
	// sshConnectTimeout is ssh's ConnectTimeout: the TCP connect to the host.
	sshConnectTimeout = 10 * time.Second
	// sshPingTimeout bounds the first ping over ssh: the connect, the key
	// exchange, the login and the remote docker starting.
	sshPingTimeout = 20 * time.Second
	// sshIdleConns is how many connections (ssh processes) are kept for
	// reuse: the inspects List runs at once, the event stream and a log
	// stream, so a List does not start new ssh processes each time.
	sshIdleConns = inspectParallelism + 2
	// sshIdleTimeout closes a connection unused this long, and its process.
	sshIdleTimeout = 2 * time.Minute
)

// clientOpts are the moby client's options for r, and how long the first
// ping may take.
func (r route) clientOpts() ([]client.Opt, time.Duration, error) {
	opts := []client.Opt{client.WithAPIVersionFromEnv()}
	switch r.host.scheme {
	case "ssh":
		var flags []string
		if r.sshConfig != "" {
			flags = append(flags, "-F", r.sshConfig)
		}
		flags = append(flags, "-o", fmt.Sprintf("ConnectTimeout=%d", int(sshConnectTimeout.Seconds())))
		helper, err := connhelper.GetConnectionHelperWithSSHOpts(r.host.host, flags)
		if err != nil {
			return nil, 0, err
		}
		// The host first, then a transport of our own: no proxy from the
		// environment, and idle connections kept for reuse.
		tr := &http.Transport{
			DialContext:         sshDialer(helper.Dialer),
			MaxIdleConns:        sshIdleConns,
			MaxIdleConnsPerHost: sshIdleConns,
			IdleConnTimeout:     sshIdleTimeout,
		}
		opts = append(opts,
			client.WithHost(helper.Host),
			client.WithHTTPClient(&http.Client{Transport: tr, CheckRedirect: client.CheckRedirect}))
		return opts, sshPingTimeout, nil
	case "tcp":
		if r.tls != nil {
			cfg, err := r.tls.config()
			if err != nil {
				return nil, 0, err
			}
			opts = append(opts, client.WithHTTPClient(&http.Client{
				Transport:     &http.Transport{TLSClientConfig: cfg},
				CheckRedirect: client.CheckRedirect,
			}))
		}
	}
	return append(opts, client.WithHost(r.host.host)), connectTimeout, nil
}

// config is m as a client's TLS configuration: the server checked against
// ca.pem (the system's roots without one) unless skipVerify, the client
// certificate when there is one.
func (m *tlsMaterial) config() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: m.skipVerify}
	if m.ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(m.ca) {
			return nil, fmt.Errorf("TLS folder %s: ca.pem holds no PEM certificate", m.from)
		}
		cfg.RootCAs = pool
	}
	if m.cert != nil {
		pair, err := tls.X509KeyPair(m.cert, m.key)
		if err != nil {
			return nil, fmt.Errorf("TLS folder %s: cert.pem and key.pem: %w", m.from, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
