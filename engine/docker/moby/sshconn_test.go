package moby

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

// exitedSSH is a connection whose ssh has exited: writes fail with a
// broken pipe, and the read side says why (as the helper's does at EOF).
type exitedSSH struct {
	net.Conn
	readErr     error
	closedWrite bool
}

func (c *exitedSSH) Write([]byte) (int, error) {
	return 0, fmt.Errorf("write |1: %w", syscall.EPIPE)
}
func (c *exitedSSH) Read([]byte) (int, error) { return 0, c.readErr }
func (c *exitedSSH) CloseWrite() error        { c.closedWrite = true; return nil }

func TestSSHConnWriteSaysWhySSHExited(t *testing.T) {
	stderr := errors.New("command [ssh …] has exited with exit status 255: stderr=ssh: connect to host edge-1 port 22: Connection refused")
	for _, tc := range []struct {
		name    string
		readErr error
		want    error
	}{
		{"ssh's exit and stderr replace the broken pipe", stderr, stderr},
		{"a plain EOF keeps the write's error", io.EOF, syscall.EPIPE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := &exitedSSH{readErr: tc.readErr}
			dial := sshDialer(func(context.Context, string, string) (net.Conn, error) { return raw, nil })
			c, err := dial(context.Background(), "tcp", "docker.example.com:80")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("GET /_ping HTTP/1.1\r\n")); !errors.Is(err, tc.want) {
				t.Errorf("Write = %v, want %v", err, tc.want)
			}
			// The half-close an exec's hijacked connection needs is kept.
			hc, ok := c.(interface{ CloseWrite() error })
			if !ok {
				t.Fatal("the ssh connection lost CloseWrite")
			}
			if err := hc.CloseWrite(); err != nil || !raw.closedWrite {
				t.Errorf("CloseWrite = %v, reached the helper's %v; want nil, true", err, raw.closedWrite)
			}
		})
	}
}
