package spec

import (
	"regexp"
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
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

// platformMatches says img is of platform p ("os/arch[/variant]"). An
// image whose platform the engine does not tell matches; so does a p
// without a variant, whatever the image's.
func platformMatches(p string, img docker.Image) bool {
	if img.OS == "" || img.Architecture == "" {
		return true
	}
	parts := strings.Split(p, "/")
	if parts[0] != img.OS || normArch(parts[1]) != normArch(img.Architecture) {
		return false
	}
	return len(parts) < 3 || img.Variant == "" || parts[2] == img.Variant
}

// normArch folds the architecture names that mean one thing.
func normArch(a string) string {
	switch a {
	case "x86_64", "x86-64":
		return "amd64"
	case "aarch64":
		return "arm64"
	}
	return a
}

// imagePlatform is img's platform in words: "linux/arm64/v8".
func imagePlatform(img docker.Image) string {
	p := img.OS + "/" + img.Architecture
	if img.Variant != "" {
		p += "/" + img.Variant
	}
	return p
}
