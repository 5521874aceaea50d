package fleet

import (
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
)

// Waves splits hosts (in file order) into the waves of a rollout: the
// canary hosts of p first, in file order, then the others, p.Batch at a
// time. A canary that is not among hosts is passed over; with none left
// (or none named) the first host is the canary. Nil for no hosts.
func Waves(hosts []string, p spec.Fleet) [][]string {
	if len(hosts) == 0 {
		return nil
	}
	var canary, rest []string
	for _, h := range hosts {
		if slices.Contains(p.Canary, h) {
			canary = append(canary, h)
		} else {
			rest = append(rest, h)
		}
	}
	if len(canary) == 0 {
		canary, rest = hosts[:1:1], hosts[1:]
	}
	waves := [][]string{canary}
	size := p.Batch.Size(len(hosts))
	for len(rest) > 0 {
		n := min(size, len(rest))
		waves = append(waves, rest[:n:n])
		rest = rest[n:]
	}
	return waves
}

// LockOrder is the order in which to take the hosts' locks: by engine ID,
// then name. Every rollcall takes them in this one order, so two operators
// whose host sets overlap cannot each hold a part and wait for the other:
// the first to reach a common host gets it, the other fails there and
// releases what it took (all or nothing). A host without an engine ID has
// not answered and is left out; preflight holds the rollout for it.
func LockOrder(hosts []Host) []string {
	var known []Host
	for _, h := range hosts {
		if h.EngineID != "" {
			known = append(known, h)
		}
	}
	slices.SortStableFunc(known, func(a, b Host) int {
		if c := strings.Compare(a.EngineID, b.EngineID); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	names := make([]string, len(known))
	for i, h := range known {
		names[i] = h.Name
	}
	return names
}
