package session

import "strings"

// neverPull is a desired state of desiredYAML's with pull: never: an image
// the engine lacks is an error, not a pull.
func neverPull(desired string) string {
	return strings.Replace(desired, "    replicas:", "    pull: never\n    replicas:", 1)
}
