package dockertest

import (
	"regexp"
	"strings"
	"testing"
)

// The sweep of a prefix takes its managed and unmanaged containers and
// those of prefixes made from it, by label or by name, and nothing of a
// prefix that merely starts alike.
func TestOfPrefix(t *testing.T) {
	const p = "rc01234567-web"
	tests := []struct {
		name, names, labels string
		want                bool
	}{
		{"managed label", "x", "a=b," + p + ".managed=true", true},
		{"a test's own label", "x", p + ".unmanaged=true", true},
		{"a prefix made from it", "x", p + "-api.managed=true", true},
		{"its name", "/" + p + "-web-0", "", true},
		{"a prefix that starts alike", p + "x-web-0", p + "x.managed=true", false},
		{"the prefix as a label value", "other", "owner=" + p + ".managed", false},
		{"nothing of it", "other", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ofPrefix(p, tt.names, tt.labels); got != tt.want {
				t.Errorf("ofPrefix(%q, %q, %q) = %v, want %v", p, tt.names, tt.labels, got, tt.want)
			}
		})
	}
}

// Prefixes are valid label prefixes with room to spare, and two tests whose
// long names start alike still get two prefixes.
func TestPrefixFor(t *testing.T) {
	valid := regexp.MustCompile(`^[a-z]([a-z0-9.-]{0,38}[a-z0-9])?$`) // as rollcall.yaml takes them
	seen := map[string]string{}
	for _, name := range []string{"TestRealConvergeFromNothingThenRoll", "TestRealConvergeFromNothingThenRestart", "TestShort", "TestA/sub_test#01"} {
		p := prefixFor(name)
		if len(p) > maxPrefix || !strings.HasPrefix(p, Run+"-") || !valid.MatchString(p+"-web") {
			t.Errorf("prefixFor(%s) = %q: want at most %d characters, starting with %s-, valid with -web after it", name, p, maxPrefix, Run)
		}
		if other, ok := seen[p]; ok {
			t.Errorf("prefixFor(%s) = prefixFor(%s) = %q", name, other, p)
		}
		seen[p] = name
	}
}
