//go:build !linux

package dockertest

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
)

// Engines of a test's own need Linux's network namespaces (netns_linux.go).
var errNotLinux = errors.New("several engines on one machine need Linux")

func platformCheck() error                              { return errNotLinux }
func newNetns() (*os.File, error)                       { return nil, errNotLinux }
func startIn(*os.File, *exec.Cmd) (<-chan error, error) { return nil, errNotLinux }
func dialIn(context.Context, *os.File, string, string) (net.Conn, error) {
	return nil, errNotLinux
}
func listenInNS(*os.File, string, string) (net.Listener, error) { return nil, errNotLinux }
func reap(string, string) error                                 { return errNotLinux }
func unmountUnder(string) error                                 { return errNotLinux }
func removeCgroups(string) error                                { return errNotLinux }

func livePidOf(string, string) bool { return false }

func (*Swarm) wire() error   { return errNotLinux }
func (*Swarm) unwire() error { return errNotLinux }
