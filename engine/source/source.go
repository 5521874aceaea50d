package source

import (
	"context"

	"github.com/rollcall/rollcall/engine/spec"
)

// Source is where the desired state comes from: a rollcall.yaml file
// (File), a compose file (Compose), a control-plane URL (URL) or a state
// held in memory (Static), behind the same interface.
type Source interface {
	// Name says where the desired state comes from, for the header.
	Name() string
	// Load reads and validates the desired state as it is now.
	Load(ctx context.Context) (*spec.Desired, error)
	// Changes signals, after the source settles, that Load may give a new
	// state. It is called once, before the first Load; its signals may be
	// merged, never lost.
	Changes(ctx context.Context) <-chan struct{}
}

// Static is a desired state held in memory that never changes: the demo's
// start state, one loaded once (apply), a test's.
func Static(name string, d *spec.Desired) Source { return static{name: name, d: d} }

type static struct {
	name string
	d    *spec.Desired
}

func (s static) Name() string                                { return s.name }
func (s static) Load(context.Context) (*spec.Desired, error) { return s.d, nil }
func (s static) Changes(ctx context.Context) <-chan struct{} { return make(chan struct{}) }
