package spec

import (
	"slices"
)

// predefinedNetworks are the engine's own networks, where a container has no
// DNS alias.
var predefinedNetworks = []string{"bridge", "host", "none"}

// PredefinedNetwork reports whether name is one of the engine's own
// networks (bridge, host, none), on which containers take no DNS aliases.
func PredefinedNetwork(name string) bool { return slices.Contains(predefinedNetworks, name) }
