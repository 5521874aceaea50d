package moby

import "github.com/moby/moby/client"

// MobyClient is the moby client under m, for the external tests
// (moby_test.go, package moby_test) to do what the adapter has no call for: make a container
// behind rollcall's back, or read the engine's own view of one.
func MobyClient(m *Moby) *client.Client { return m.cli }
