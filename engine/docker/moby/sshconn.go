package moby

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
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
		return &sshConn{Conn: c, ended: make(chan struct{})}, nil
	}
}

// sshConn is one ssh process as a connection. When ssh exits early (it could
// not connect, log in, or run docker on the host) a request written to it
// fails with a broken pipe, or, once the helper has reaped ssh, with a pipe
// already closed; neither says anything. ssh's exit status and stderr come
// on the read side (the helper adds them at EOF, once only: its reap closes
// both pipes), so the write's error is the first error a read of this
// connection ended with: the HTTP transport's own read loop, which reads
// from the dial on, or the write's read when none ended yet. It keeps the
// helper's half-close, which an exec's hijacked connection uses.
type sshConn struct {
	net.Conn

	endOnce sync.Once
	ended   chan struct{} // closed once a read ended with an error: endErr
	endErr  error
}

func (c *sshConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		c.end(err)
	}
	return n, err
}

// end keeps the first error a read ended with.
func (c *sshConn) end(err error) {
	c.endOnce.Do(func() { c.endErr = err; close(c.ended) })
}

func (c *sshConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil || !(errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)) {
		return n, err
	}
	select {
	case <-c.ended:
	default:
		go func() {
			if _, rerr := c.Conn.Read(make([]byte, 1)); rerr != nil {
				c.end(rerr)
			}
		}()
	}
	select {
	case <-c.ended:
		if c.endErr != io.EOF && !errors.Is(c.endErr, os.ErrClosed) {
			return n, c.endErr
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
