package load

import (
	"fmt"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// boundedDuration reads a duration of at most MaxDuration.
func (l *loader) boundedDuration(n *yaml.Node, path string) (time.Duration, bool) {
	d, ok := l.duration(n, path)
	if ok && d > spec.MaxDuration {
		l.fail(n, fmt.Sprintf("at most %s: a longer step or wait would hold the roll, and the host lock, for days", fmtDuration(spec.MaxDuration)),
			"%s: %s is too long", path, n.Value)
		return 0, false
	}
	return d, ok
}

// atMost fails n unless v <= bound, saying why with hint.
func (l *loader) atMost(n *yaml.Node, path string, v, bound int, hint string) bool {
	if v <= bound {
		return true
	}
	l.fail(n, hint, "%s: %d is more than %d", path, v, bound)
	return false
}

// count reads a number of f of 0..bound; negative says negHint, past the
// bound boundHint.
func (l *loader) count(f field, bound int, negHint, boundHint string) (int, bool) {
	n, ok := l.integer(f.val, f.path)
	if ok && n < 0 {
		l.fail(f.val, negHint, "%s: %d must not be negative", f.path, n)
		return 0, false
	}
	return n, ok && l.atMost(f.val, f.path, n, bound, boundHint)
}

const replicasHint = "at most 1000 replicas of a workload on one engine (see README: bounds); run more engines under hosts: for more"

// fmtDuration writes d as a file would: 24h, not 24h0m0s.
func fmtDuration(d time.Duration) string {
	if d%time.Hour == 0 {
		return fmt.Sprintf("%dh", d/time.Hour)
	}
	return d.String()
}
