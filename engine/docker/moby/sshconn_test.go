package moby

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
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

// reapedSSH is a connection whose ssh the helper has already reaped: the
// transport's read loop got ssh's words at EOF, and the pipes are closed
// since, so a write fails with "file already closed" and a read says
// nothing more.
type reapedSSH struct {
	net.Conn
	words error
	reads int
}

func (c *reapedSSH) Write([]byte) (int, error) {
	return 0, &os.PathError{Op: "write", Path: "|1", Err: os.ErrClosed}
}
func (c *reapedSSH) Read([]byte) (int, error) {
	c.reads++
	if c.reads == 1 {
		return 0, c.words
	}
	return 0, &os.PathError{Op: "read", Path: "|0", Err: os.ErrClosed}
}

// The words come from the first read that ended, even when the helper
// reaped ssh before the write (a flake of TestMobyDialSSHFailsWithSSHsWords
// under load: "write |1: file already closed").
func TestSSHConnWriteAfterTheReapSaysWhy(t *testing.T) {
	words := errors.New("command [ssh …] has exited with exit status 255: stderr=ssh: connect to host 127.0.0.1 port 1: Connection refused")
	raw := &reapedSSH{words: words}
	dial := sshDialer(func(context.Context, string, string) (net.Conn, error) { return raw, nil })
	c, err := dial(context.Background(), "tcp", "docker.example.com:80")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, words) { // the transport's read loop
		t.Fatalf("Read = %v, want ssh's words", err)
	}
	if _, err := c.Write([]byte("GET /_ping HTTP/1.1\r\n")); !errors.Is(err, words) {
		t.Errorf("Write after the reap = %v, want ssh's words", err)
	}
}
