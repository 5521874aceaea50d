package spec

// DefaultHostIP is where a port is published when the spec names no IP:
// rollcall exposes nothing beyond the host unless asked to.
const DefaultHostIP = "127.0.0.1"

// IsDigits reports whether s is one or more ASCII digits, as a port or a
// count is written.
func IsDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
