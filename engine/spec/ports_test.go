package spec

import (
	"strings"
	"testing"
)

func TestParsePort(t *testing.T) {
	tests := []struct {
		rule string
		in   string
		want Port
		err  string // substring; "" when valid
	}{
		{"container port only is ephemeral on loopback", "8080", Port{"127.0.0.1", 0, 8080, "tcp"}, ""},
		{"host and container port", "9000:8080", Port{"127.0.0.1", 9000, 8080, "tcp"}, ""},
		{"empty host port is ephemeral", "127.0.0.1::8080", Port{"127.0.0.1", 0, 8080, "tcp"}, ""},
		{"full form with protocol", "127.0.0.1:9000:8080/tcp", Port{"127.0.0.1", 9000, 8080, "tcp"}, ""},
		{"udp", "53/udp", Port{"127.0.0.1", 0, 53, "udp"}, ""},
		{"empty host IP is the default", ":9000:80", Port{"127.0.0.1", 9000, 80, "tcp"}, ""},
		{"every IP", "0.0.0.0:80:80", Port{"0.0.0.0", 80, 80, "tcp"}, ""},
		{"IPv6 in brackets", "[::1]::80", Port{"::1", 0, 80, "tcp"}, ""},
		{"IPv6 is normalised", "[0:0::1]:81:80", Port{"::1", 81, 80, "tcp"}, ""},
		{"host port 0 is ephemeral", "0:80", Port{"127.0.0.1", 0, 80, "tcp"}, ""},
		{"empty", "", Port{}, "missing container port"},
		{"protocol only", "/tcp", Port{}, "missing container port"},
		{"too many colons", "1:2:3:4", Port{}, "invalid port"},
		{"unclosed bracket", "[::1:80:80", Port{}, "unclosed IPv6"},
		{"IPv6 without host port", "[::1]:80", Port{}, "invalid port"},
		{"sign is not a digit", "+80", Port{}, "not a number"},
		{"container port above range", "65536", Port{}, "out of range"},
		{"host port above range", "65536:80", Port{}, "out of range"},
		{"upper-case protocol", "80/TCP", Port{}, "unknown protocol"},
		{"range", "80-81", Port{}, "ranges are not supported"},
		{"bad IP", "1.2.3:80:80", Port{}, "invalid host IP"},
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
	for _, p := range []Port{
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
