package load

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// Docker's own lower limits, checked here so a bad value fails at load
// rather than at the first container start.
const (
	minMemory   = 6 << 20 // bytes
	minNanoCPUs = 1e7     // 0.01 CPU
)

// duration reads a Go duration (1s, 500ms, 1m30s). A bare number is an
// error: compose would read it as seconds, Go as nanoseconds.
func (l *loader) duration(n *yaml.Node, path string) (time.Duration, bool) {
	const unitHint = "add a unit, e.g. 10s"
	if n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float") {
		l.fail(n, unitHint, "%s: %s is a bare number, not a duration", path, n.Value)
		return 0, false
	}
	s, ok := l.str(n, path)
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		hint := "use Go duration syntax, e.g. 500ms, 10s, 1m30s"
		if _, ferr := strconv.ParseFloat(s, 64); ferr == nil {
			hint = unitHint
		}
		l.fail(n, hint, "%s: invalid duration %q", path, s)
		return 0, false
	}
	if d < 0 {
		l.fail(n, "", "%s: duration %s must not be negative", path, s)
		return 0, false
	}
	return d, true
}

// memory reads a size: an integer of bytes, or a string such as 64M.
func (l *loader) memory(n *yaml.Node, path string) (int64, bool) {
	var b int64
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		if err := n.Decode(&b); err != nil {
			l.fail(n, "", "%s: %s is out of range", path, n.Value)
			return 0, false
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		var p *problem
		if b, p = parseSize(n.Value); p != nil {
			l.fail(n, p.hint, "%s: %s", path, p.msg)
			return 0, false
		}
	default:
		l.fail(n, "write bytes, or a size such as 64M or 1.5G", "%s: expected a size, got %s", path, describe(n))
		return 0, false
	}
	if b < minMemory {
		l.fail(n, "Docker's smallest memory limit is 6M; leave memory out for no limit", "%s: %d bytes is too small", path, b)
		return 0, false
	}
	return b, true
}

var sizeRE = regexp.MustCompile(`(?i)^([0-9]+(?:\.[0-9]+)?) ?([bkmg]?)(i?)(b?)$`)

// parseSize reads a size the way docker does: units b, k, m, g in any case,
// optionally followed by i and/or b, all binary multiples (1k = 1024).
func parseSize(s string) (int64, *problem) {
	bad := &problem{fmt.Sprintf("invalid size %q", s), "write bytes, or a number with a unit b, k, m or g, e.g. 512k, 64M, 1.5G"}
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, bad
	}
	unit := strings.ToLower(m[2])
	if (unit == "" || unit == "b") && (m[3] != "" || (unit == "b" && m[4] != "")) {
		return 0, bad // "64i", "64bb"
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, bad
	}
	mult := map[string]float64{"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[unit]
	f *= mult
	if f >= math.MaxInt64 {
		return 0, &problem{fmt.Sprintf("size %q is too large", s), ""}
	}
	return int64(f), nil
}

// cpus reads a CPU count (0.5, 2, or compose's quoted "0.5") as nano CPUs.
func (l *loader) cpus(n *yaml.Node, path string) (int64, bool) {
	const hint = "a number of CPUs, e.g. 0.5 or 2"
	var f float64
	switch {
	case n.Kind == yaml.ScalarNode && (n.ShortTag() == "!!int" || n.ShortTag() == "!!float"):
		if err := n.Decode(&f); err != nil {
			l.fail(n, hint, "%s: invalid number %s", path, n.Value)
			return 0, false
		}
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		var err error
		if f, err = strconv.ParseFloat(n.Value, 64); err != nil {
			l.fail(n, hint, "%s: expected a number, got %s", path, describe(n))
			return 0, false
		}
	default:
		l.fail(n, hint, "%s: expected a number, got %s", path, describe(n))
		return 0, false
	}
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0) || f <= 0:
		l.fail(n, "leave cpus out for no limit", "%s: %s must be greater than 0", path, n.Value)
		return 0, false
	case f*1e9 >= math.MaxInt64:
		l.fail(n, "", "%s: %s is too large", path, n.Value)
		return 0, false
	case math.Round(f*1e9) < minNanoCPUs:
		l.fail(n, "Docker's smallest CPU limit is 0.01", "%s: %s is too small", path, n.Value)
		return 0, false
	}
	return int64(math.Round(f * 1e9)), true
}

var signalRE = regexp.MustCompile(`^SIG[A-Z0-9]+$`)

// signal reads a stop signal: a name such as SIGTERM, or a number.
func (l *loader) signal(n *yaml.Node, path string) (string, bool) {
	const hint = "a signal name such as SIGTERM, SIGINT or SIGQUIT, or a number"
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" {
		if !spec.IsDigits(n.Value) || n.Value == "0" || len(n.Value) > 3 {
			l.fail(n, hint, "%s: invalid signal %s", path, n.Value)
			return "", false
		}
		return n.Value, true
	}
	s, ok := l.str(n, path)
	if !ok {
		return "", false
	}
	if !signalRE.MatchString(s) && !(spec.IsDigits(s) && s != "0" && len(s) <= 3) {
		l.fail(n, hint, "%s: invalid signal %q", path, s)
		return "", false
	}
	return s, true
}

// restart reads the engine's restart policy, kept as written.
func (l *loader) restart(n *yaml.Node, path string) (string, bool) {
	const hint = `one of: "no", always, unless-stopped, on-failure, on-failure:N`
	s, ok := l.str(n, path)
	if !ok {
		return "", false
	}
	switch s {
	case "no", "always", "unless-stopped", "on-failure":
		return s, true
	}
	if max, found := strings.CutPrefix(s, "on-failure:"); found && spec.IsDigits(max) {
		if _, err := strconv.Atoi(max); err == nil {
			return s, true
		}
	}
	l.fail(n, hint, "%s: unknown restart policy %q", path, s)
	return "", false
}
