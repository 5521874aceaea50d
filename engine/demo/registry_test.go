package demo

import "testing"

// Clean takes a tag for a copy of the demo's from a registry on loopback
// only when it is exactly that: loopback IPv4, a port, the demo's tag.
func TestRegistryCopyOf(t *testing.T) {
	for ref, want := range map[string]bool{
		"127.0.0.1:41234/rollcall-demoapp:v1":       true,
		"127.0.0.2:5000/rollcall-demoapp:v1":        true,
		"127.0.0.1:41234/rollcall-demoapp:v2":       false, // another tag
		"127.0.0.1/rollcall-demoapp:v1":             false, // no port: not what the demo pushes to
		"10.0.0.1:5000/rollcall-demoapp:v1":         false, // not loopback
		"registry.example:5000/rollcall-demoapp:v1": false,
		"127.0.0.1:41234/team/rollcall-demoapp:v1":  false,
		"rollcall-demoapp:v1":                       false,
	} {
		if got := registryCopyOf(ref, "rollcall-demoapp:v1"); got != want {
			t.Errorf("registryCopyOf(%q) = %v, want %v", ref, got, want)
		}
	}
}
