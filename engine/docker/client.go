// Package docker is rollcall's narrow view of a container engine.
//
// It holds the Client interface (only the calls rollcall makes, in rollcall's
// own types), the scope check and the read-only wrapper used by watch mode;
// and the same for a swarm manager (Swarm, ScopedSwarm, ReadOnlySwarm; what
// a swarm can run is ServiceSpec.Check).
// The moby adapter, the production Client, is package engine/docker/moby;
// the in-memory fake engine for tests, the demo and benchmarks is package
// engine/docker/fake. This package imports no moby client package, so what
// imports it alone (reconcile, spec, session, tui) does not link them.
// Nothing here imports reconcile, session, tui or theme.
package docker

import (
	"context"
	"errors"
	"time"
)

// Client is every engine call rollcall makes. Implementations: moby.Moby
// (production, package engine/docker/moby), fake.Engine (tests, demo,
// benchmarks; package engine/docker/fake)
// and ReadOnly (watch).
//
// List, Events and every method that acts on a container by ID only ever see
// containers carrying "<prefix>.managed=true"; callers pass the prefix.
type Client interface {
	// Info describes the engine: endpoint, version, API version.
	Info(ctx context.Context) (EngineInfo, error)
	// List returns every container labelled <prefix>.managed=true, running or not.
	List(ctx context.Context, prefix string) ([]Container, error)
	// Inspect returns one container with its recent health probe results.
	Inspect(ctx context.Context, id string) (ContainerDetail, error)
	// ImageInspect resolves an image reference to the image the engine has.
	// An image the engine lacks is ErrNotFound.
	ImageInspect(ctx context.Context, ref string) (Image, error)
	// DistributionInspect asks the registry, through the engine and with
	// the docker CLI's credentials for it, which manifest digest ref
	// ("sha256:…") names now, without pulling. A failure is a *PullError.
	DistributionInspect(ctx context.Context, ref string) (string, error)
	// Pull pulls ref through the engine, with the docker CLI's credentials
	// for its registry, and returns the image the engine then has.
	// progress (may be nil) is called on the pull's goroutine with the
	// totals so far. A failure is a *PullError; ctx's end stops the pull.
	Pull(ctx context.Context, ref string, progress func(PullProgress)) (Image, error)

	// Create creates and starts a container. If start fails, the created
	// container is removed again. A name that already exists is ErrConflict.
	Create(ctx context.Context, spec CreateSpec) (string, error)
	// Stop stops a container gracefully: its stop signal, then SIGKILL after grace.
	Stop(ctx context.Context, id string, grace time.Duration) error
	// Remove removes a stopped container and its anonymous volumes.
	Remove(ctx context.Context, id string) error
	// Restart restarts a container in place (same ID).
	Restart(ctx context.Context, id string, grace time.Duration) error
	// Update changes CPU and memory limits and the restart policy in place.
	Update(ctx context.Context, id string, limits Limits) error
	// Exec runs cmd (an argv, no shell) in a running container, as docker
	// exec does, and waits for it to end or ctx to end. It returns the
	// command's exit code and its stdout and stderr together (the last 4
	// KiB). A command that ran and failed is a nonzero exit code, not an
	// error; a container that is gone is ErrNotFound.
	Exec(ctx context.Context, id string, cmd []string) (exitCode int, output string, err error)

	// Events streams container events for managed containers of prefix, from
	// since (zero: from now). Connection errors are offered on the error
	// channel without blocking, so a caller can show "engine disconnected".
	// The moby adapter reconnects by itself and resumes without repeats; the
	// event channel may still close (ctx ended, or a stream that cannot go
	// on, as the fake's BreakEvents): a caller then subscribes again and
	// relists.
	Events(ctx context.Context, prefix string, since time.Time) (<-chan Event, <-chan error)
	// Logs streams a container's log lines, stdout and stderr apart. With
	// follow, the channel stays open until ctx ends or the container goes.
	Logs(ctx context.Context, id string, opts LogOptions) (<-chan LogLine, error)
}

// Mutating names the Client methods that change engine state. The read-only
// wrapper refuses exactly these.
// Exec is among them: what a command does inside a container is unknown.
// Pull is among them: watch mode fetches nothing onto the engine.
var Mutating = []string{"Create", "Stop", "Remove", "Restart", "Update", "Exec", "Pull"}

// Typed errors, for callers that branch on them. Wrap them with %w.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict: name already in use")
	ErrReadOnly = errors.New("refused: read-only (watch mode)")
)

// ManagedLabel returns the marker label key for prefix: "<prefix>.managed".
func ManagedLabel(prefix string) string { return prefix + ".managed" }

// Label keys under a prefix (DESIGN §4).
func WorkloadLabel(prefix string) string { return prefix + ".workload" }
func SlotLabel(prefix string) string     { return prefix + ".slot" }
func SpecLabel(prefix string) string     { return prefix + ".spec" }
func VersionLabel(prefix string) string  { return prefix + ".version" }

// PreStopLabel holds the pre_stop command a container was created with, as a
// JSON list of strings: a stop runs that command, not the one the desired
// state holds now.
func PreStopLabel(prefix string) string { return prefix + ".pre-stop" }
