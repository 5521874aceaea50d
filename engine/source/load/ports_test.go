package load

import (
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

func TestParsePort(t *testing.T) {
	tests := []struct {
		rule string
		in   string
		want spec.Port
		err  string // substring; "" when valid
	}{
		{"container port only is ephemeral on loopback", "8080", spec.Port{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 8080, Proto: "tcp"}, ""},
		{"host and container port", "9000:8080", spec.Port{HostIP: "127.0.0.1", HostPort: 9000, ContainerPort: 8080, Proto: "tcp"}, ""},
		{"empty host port is ephemeral", "127.0.0.1::8080", spec.Port{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 8080, Proto: "tcp"}, ""},
		{"full form with protocol", "127.0.0.1:9000:8080/tcp", spec.Port{HostIP: "127.0.0.1", HostPort: 9000, ContainerPort: 8080, Proto: "tcp"}, ""},
		{"udp", "53/udp", spec.Port{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 53, Proto: "udp"}, ""},
		{"empty host IP is the default", ":9000:80", spec.Port{HostIP: "127.0.0.1", HostPort: 9000, ContainerPort: 80, Proto: "tcp"}, ""},
		{"every IP", "0.0.0.0:80:80", spec.Port{HostIP: "0.0.0.0", HostPort: 80, ContainerPort: 80, Proto: "tcp"}, ""},
		{"IPv6 in brackets", "[::1]::80", spec.Port{HostIP: "::1", HostPort: 0, ContainerPort: 80, Proto: "tcp"}, ""},
		{"IPv6 is normalised", "[0:0::1]:81:80", spec.Port{HostIP: "::1", HostPort: 81, ContainerPort: 80, Proto: "tcp"}, ""},
		{"host port 0 is ephemeral", "0:80", spec.Port{HostIP: "127.0.0.1", HostPort: 0, ContainerPort: 80, Proto: "tcp"}, ""},
		{"empty", "", spec.Port{}, "missing container port"},
		{"protocol only", "/tcp", spec.Port{}, "missing container port"},
		{"too many colons", "1:2:3:4", spec.Port{}, "invalid port"},
		{"unclosed bracket", "[::1:80:80", spec.Port{}, "unclosed IPv6"},
		{"IPv6 without host port", "[::1]:80", spec.Port{}, "invalid port"},
		{"sign is not a digit", "+80", spec.Port{}, "not a number"},
		{"container port above range", "65536", spec.Port{}, "out of range"},
		{"host port above range", "65536:80", spec.Port{}, "out of range"},
		{"upper-case protocol", "80/TCP", spec.Port{}, "unknown protocol"},
		{"range", "80-81", spec.Port{}, "ranges are not supported"},
		{"bad IP", "1.2.3:80:80", spec.Port{}, "invalid host IP"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, p := parsePort(tt.in)
			switch {
			case tt.err == "" && p != nil:
				t.Errorf("%q: unexpected error %s", tt.in, p.msg)
			case tt.err != "" && (p == nil || !strings.Contains(p.msg, tt.err)):
				t.Errorf("%q: got %+v, %+v; want error %q", tt.in, got, p, tt.err)
			case tt.err == "" && got != tt.want:
				t.Errorf("%q: got %+v, want %+v", tt.in, got, tt.want)
			}
		})
	}
}

// TestEphemeralHintIsAPortSpec: the hint is a port spec that parses back to
// the same address, container port and protocol, IPv6 in brackets.
func TestEphemeralHintIsAPortSpec(t *testing.T) {
	for _, p := range []spec.Port{
		{HostIP: "127.0.0.1", HostPort: 80, ContainerPort: 80, Proto: "tcp"},
		{HostIP: "::1", HostPort: 8080, ContainerPort: 80, Proto: "tcp"},
		{HostIP: "127.0.0.1", HostPort: 53, ContainerPort: 53, Proto: "udp"},
	} {
		hint := ephemeralHint(p)
		spec := hint[strings.Index(hint, `"`)+1 : strings.LastIndex(hint, `"`)]
		got, prob := parsePort(spec)
		if prob != nil || got.HostIP != p.HostIP || got.HostPort != 0 || got.ContainerPort != p.ContainerPort || got.Proto != p.Proto {
			t.Errorf("%+v: hint %q parses to %+v, %v", p, hint, got, prob)
		}
	}
}
