package load

import (
	"regexp"
)

// platformRE is an OCI platform: os/arch[/variant], lowercase.
var platformRE = regexp.MustCompile(`^[a-z0-9]+/[a-z0-9_]+(/[a-z0-9]+)?$`)

// platform reads platform: "linux/amd64", "linux/arm64/v8".
func (l *loader) platform(f field) string {
	s, ok := l.str(f.val, f.path)
	if !ok {
		return ""
	}
	if !platformRE.MatchString(s) {
		l.fail(f.val, "os/arch[/variant], e.g. linux/amd64 or linux/arm64/v8", "%s: invalid platform %q", f.path, s)
		return ""
	}
	return s
}
