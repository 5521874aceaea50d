package spec

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// pull: missing | always | never, missing by default, a bad value an error
// at its line and column; the policy changes no container (no hash).
func TestParsePullPolicy(t *testing.T) {
	for src, want := range map[string]string{
		"workloads:\n  web:\n    image: app\n":                    PullMissing,
		"workloads:\n  web:\n    image: app\n    pull: always\n":  PullAlways,
		"workloads:\n  web:\n    image: app\n    pull: never\n":   PullNever,
		"workloads:\n  web:\n    image: app\n    pull: missing\n": PullMissing,
	} {
		if got := mustParse(t, src).Workloads["web"].Pull; got != want {
			t.Errorf("%q: pull %q, want %q", src, got, want)
		}
	}
	_, err := Parse("test.yaml", []byte("workloads:\n  web:\n    image: app\n    pull: sometimes\n"))
	var e *Error
	if !errors.As(err, &e) || e.Line != 4 || e.Col != 11 || !strings.Contains(e.Msg, `web.pull: unknown value "sometimes"`) ||
		!strings.Contains(e.Hint, "missing, always, never") {
		t.Fatalf("bad pull: %v", err)
	}
	a := mustParse(t, "workloads:\n  web:\n    image: app\n    pull: always\n").Workloads["web"]
	n := mustParse(t, "workloads:\n  web:\n    image: app\n    pull: never\n").Workloads["web"]
	if Hash(a, "sha256:1") != Hash(n, "sha256:1") {
		t.Error("the pull policy is in the spec hash")
	}
}

// compose's pull_policy maps onto pull; build is never with compose's
// hint, and a refresh period is missing with a warning.
func TestComposePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy, want, warn string
	}{
		{"", PullMissing, ""},
		{"always", PullAlways, ""},
		{"never", PullNever, ""},
		{"missing", PullMissing, ""},
		{"if_not_present", PullMissing, ""},
		{"build", PullNever, "docker compose build web"},
		{"daily", PullMissing, "pull_policy: always"},
	} {
		src := "services:\n  web:\n    image: app:v1\n"
		if tc.policy != "" {
			src += "    pull_policy: " + tc.policy + "\n"
		}
		d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(src), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if got := d.Workloads["web"].Pull; got != tc.want {
			t.Errorf("pull_policy %q: pull %q, want %q", tc.policy, got, tc.want)
		}
		switch {
		case tc.warn == "" && len(d.Warnings) > 0:
			t.Errorf("pull_policy %q: warnings %v", tc.policy, ErrorList(d.Warnings))
		case tc.warn != "":
			if len(d.Warnings) != 1 || d.Warnings[0].Line != 4 || !strings.Contains(d.Warnings[0].Hint, tc.warn) ||
				!strings.HasPrefix(d.Warnings[0].Msg, "services.web.pull_policy: "+tc.policy) {
				t.Errorf("pull_policy %q: warnings %v, want one at line 4 hinting %q", tc.policy, ErrorList(d.Warnings), tc.warn)
			}
		}
	}
}
