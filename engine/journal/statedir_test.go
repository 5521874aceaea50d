package journal

import (
	"errors"
	"strings"
	"testing"
)

// TestStateDir checks where state goes: the XDG state directory, else
// under HOME, else for root /var/lib/rollcall, else a refusal that says
// how to set it; never the temporary directory.
func TestStateDir(t *testing.T) {
	tests := []struct {
		rule    string
		env     map[string]string
		euid    int
		want    string
		refused bool
	}{
		{"XDG_STATE_HOME comes first", map[string]string{"XDG_STATE_HOME": "/srv/state", "HOME": "/home/alice"}, 1000, "/srv/state/rollcall", false},
		{"else under HOME", map[string]string{"HOME": "/home/alice"}, 1000, "/home/alice/.local/state/rollcall", false},
		{"a relative XDG_STATE_HOME is ignored", map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/alice"}, 1000, "/home/alice/.local/state/rollcall", false},
		{"root without HOME goes to /var/lib/rollcall", map[string]string{}, 0, "/var/lib/rollcall", false},
		{"root with an empty HOME goes to /var/lib/rollcall", map[string]string{"HOME": ""}, 0, "/var/lib/rollcall", false},
		{"root with HOME keeps HOME", map[string]string{"HOME": "/root"}, 0, "/root/.local/state/rollcall", false},
		{"a user without HOME is refused", map[string]string{}, 1000, "", true},
		{"a user with a relative HOME is refused", map[string]string{"HOME": "home"}, 1000, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, err := stateDir(func(k string) string { return tt.env[k] }, tt.euid)
			switch {
			case tt.refused:
				if !errors.Is(err, ErrNoStateDir) || got != "" {
					t.Fatalf("got %q, %v; want the refusal", got, err)
				}
				for _, how := range []string{"--journal", "XDG_STATE_HOME", "HOME"} {
					if !strings.Contains(err.Error(), how) {
						t.Errorf("the refusal %q does not say %s", err, how)
					}
				}
			case err != nil || got != tt.want:
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestDefaultPathWithoutHomeIsNotTemporary(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	got, err := DefaultPath()
	if strings.HasPrefix(got, "/tmp") || (err == nil) != (got == "/var/lib/rollcall/journal.jsonl") {
		t.Errorf("DefaultPath() = %q, %v; want /var/lib/rollcall/journal.jsonl as root, else a refusal", got, err)
	}
}
