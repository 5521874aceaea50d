package spec

import (
	"strings"

	"github.com/rollcall/rollcall/engine/docker"
)

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
