package spec

import (
	"strings"
	"time"
)

// Bounds and default of registry_poll.
const (
	DefaultRegistryPoll = 5 * time.Minute
	// MinRegistryPoll keeps a session from asking a registry (which
	// rate-limits) more than this often.
	MinRegistryPoll = 10 * time.Second
)

// RegistryPollEvery is how often the registry is asked where the `pull:
// always` tags point: registry_poll, or DefaultRegistryPoll.
func (d *Desired) RegistryPollEvery() time.Duration {
	if d.RegistryPoll > 0 {
		return d.RegistryPoll
	}
	return DefaultRegistryPoll
}

// FollowsTags reports whether a workload has `pull: always` on a tag (not
// a digest): the registry is then asked every RegistryPollEvery.
func (d *Desired) FollowsTags() bool {
	for _, w := range d.Workloads {
		if w.Pull == PullAlways && !strings.Contains(w.Image, "@") {
			return true
		}
	}
	return false
}
