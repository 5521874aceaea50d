package main

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/fleet"
	"github.com/rollcall/rollcall/engine/source"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/rollcall/rollcall/tui"
)

// The console of a file with hosts: the fleet runtime under the console
// of several hosts (tui.RunFleet), in the mode the flags ask for. Each
// host's logs and inspect go to that host's own engine, through a
// read-only client of the console's own, dialled at the first read (the
// fleet's clients are its own); x (a shell in a container) is off with
// several hosts.

// runFleetConsole opens the console of several hosts on source, whose
// first desired state d has hosts. dial reaches a host, for the fleet and
// for the console's reads.
func runFleetConsole(ctx context.Context, e env, g *globals, source source.Source, d *spec.Desired, dial fleet.Dialer, o consoleOpts) error {
	if o.recreate || o.skipHealth {
		return usageErr(fmt.Errorf("--recreate and --skip-health act on one engine: a file with hosts: does not take them yet"))
	}
	mode, j, name, err := consoleSetup(g, o)
	if err != nil {
		return err
	}
	if j != nil {
		defer j.Close()
	}
	f := fleet.New(fleet.Options{Source: prefixed{source, g.prefix}, Dial: dial, Mode: mode, Journal: j, Now: e.now, StateDir: g.stateDir(), LockDir: g.lockDir})
	defer abandonOn(e.abandon, f)()
	v, _ := buildVersion()
	opts := tui.FleetOptions{Theme: name, Version: v, Logs: map[string]tui.LogSource{},
		Inspect: map[string]func(ctx context.Context, id string) (docker.ContainerDetail, error){}}
	var readers []*lazyClient
	defer func() {
		for _, r := range readers {
			r.close()
		}
	}()
	for _, h := range d.Hosts {
		r := &lazyClient{host: h, dial: dial}
		readers = append(readers, r)
		opts.Logs[h.Name] = func(ctx context.Context, id string) (<-chan docker.LogLine, error) {
			c, err := r.get(ctx)
			if err != nil {
				return nil, err
			}
			return c.Logs(ctx, id, docker.LogOptions{Tail: 200, Follow: true})
		}
		opts.Inspect[h.Name] = func(ctx context.Context, id string) (docker.ContainerDetail, error) {
			c, err := r.get(ctx)
			if err != nil {
				return docker.ContainerDetail{}, err
			}
			return c.Inspect(ctx, id)
		}
	}
	return tui.RunFleet(ctx, f, opts)
}

// lazyClient is the console's own read-only client of one host, dialled
// the first time the console reads a container there; a dial that failed
// is tried again at the next read.
type lazyClient struct {
	host *spec.Host
	dial fleet.Dialer
	mu   sync.Mutex
	c    docker.Client // read-only, over raw
	raw  docker.Client
}

func (l *lazyClient) get(ctx context.Context) (docker.Client, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c != nil {
		return l.c, nil
	}
	c, err := l.dial(ctx, l.host)
	if err != nil {
		return nil, err
	}
	l.c = docker.ReadOnly(c)
	l.raw = c
	return l.c, nil
}

func (l *lazyClient) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cl, ok := l.raw.(io.Closer); ok {
		_ = cl.Close()
	}
}
