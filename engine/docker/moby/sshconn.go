package moby

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"time"
)

// sshExitWait is how long a failed write waits for the exited ssh's
// status and stderr.
const sshExitWait = 2 * time.Second

// sshDialer wraps the docker CLI's ssh dialer (docker/cli connhelper: one
// ssh process per connection, its stderr kept, killed on close) so that a
// connection whose ssh has exited says why.
func sshDialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &sshConn{Conn: c}, nil
	}
}

// sshConn is one ssh process as a connection. When ssh exits early (it could
// not connect, log in, or run docker on the host) a request written to it
// fails with a broken pipe, which says nothing; its exit status and stderr
// come on the read side (the helper reads them at EOF), so the write's
// error is that one. It keeps the helper's half-close, which an exec's
// hijacked connection uses.
type sshConn struct {
	net.Conn
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil || !errors.Is(err, syscall.EPIPE) {
		return n, err
	}
	why := make(chan error, 1)
	go func() {
		_, rerr := c.Conn.Read(make([]byte, 1))
		why <- rerr
	}()
	select {
	case rerr := <-why:
		if rerr != nil && rerr != io.EOF {
			return n, rerr
		}
	case <-time.After(sshExitWait):
		// The read goes on until the connection closes.
	}
	return n, err
}

// CloseWrite closes ssh's stdin, as the helper's connection does.
func (c *sshConn) CloseWrite() error {
	if hc, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return hc.CloseWrite()
	}
	return c.Conn.Close()
}

// CloseRead closes ssh's stdout, as the helper's connection does.
func (c *sshConn) CloseRead() error {
	if hc, ok := c.Conn.(interface{ CloseRead() error }); ok {
		return hc.CloseRead()
	}
	return nil
}
