package load

import (
	"time"

	"github.com/rollcall/rollcall/engine/spec"
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
	if d < spec.MinRegistryPoll {
		l.fail(f.val, "registries rate-limit: ask every 10s or less often (the default is 5m)",
			"%s: %s is too often", f.path, d)
		return 0
	}
	return d
}
