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

// registryPoll reads registry_poll: a duration of at least MinRegistryPoll.
func (l *loader) registryPoll(f field) time.Duration {
	if isNull(f.val) {
		return 0
	}
	d, ok := l.duration(f.val, f.path)
	if !ok {
		return 0
	}
	if d < MinRegistryPoll {
		l.fail(f.val, "registries rate-limit: ask every 10s or less often (the default is 5m)",
			"%s: %s is too often", f.path, d)
		return 0
	}
	return d
}

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
