package load

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// COMPOSE_PROFILES, from the environment or .env, enables profiles as
// compose does; a service whose profiles are all inactive is left out,
// with the setting that runs it.
func TestComposeProfiles(t *testing.T) {
	src := "services:\n  web:\n    image: web:1\n  adminer:\n    image: adminer:4\n    profiles: [debug, tools]\n  mail:\n    image: mailpit:1\n    profiles: [dev]\n"
	for _, tc := range []struct {
		name, dotenv string
		environ      []string
		want         []string
		hints        map[string]string // left-out service -> hint
	}{
		{name: "none active", want: []string{"web"},
			hints: map[string]string{"adminer": "set COMPOSE_PROFILES=debug to run it", "mail": "set COMPOSE_PROFILES=dev to run it"}},
		{name: "one of a service's profiles", environ: []string{"COMPOSE_PROFILES=tools"}, want: []string{"adminer", "web"},
			hints: map[string]string{"mail": "set COMPOSE_PROFILES=tools,dev to run it"}},
		{name: "a list, blanks dropped", environ: []string{"COMPOSE_PROFILES= dev, ,debug "}, want: []string{"adminer", "mail", "web"}},
		{name: "every profile", environ: []string{"COMPOSE_PROFILES=*"}, want: []string{"adminer", "mail", "web"}},
		{name: "from .env", dotenv: "COMPOSE_PROFILES=dev\n", want: []string{"mail", "web"},
			hints: map[string]string{"adminer": "set COMPOSE_PROFILES=dev,debug to run it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.dotenv != "" {
				if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(tc.dotenv), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, err := ParseCompose(filepath.Join(dir, "compose.yaml"), []byte(src), tc.environ)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Names(); !slices.Equal(got, tc.want) {
				t.Errorf("workloads %q, want %q", got, tc.want)
			}
			left := map[string]string{}
			for _, w := range d.Warnings {
				if name, ok := strings.CutPrefix(w.Msg, "services."); ok && strings.Contains(w.Msg, ": left out: ") {
					name, _, _ = strings.Cut(name, ":")
					left[name] = w.Hint
					line := map[string]int{"adminer": 4, "mail": 7}[name]
					if w.Line != line || w.Col != 3 {
						t.Errorf("%s: warning at %d:%d, want %d:3", name, w.Line, w.Col, line)
					}
				}
			}
			if len(left) != len(tc.hints) {
				t.Errorf("left out %v, want %v", left, tc.hints)
			}
			for name, hint := range tc.hints {
				if left[name] != hint {
					t.Errorf("%s: hint %q, want %q", name, left[name], hint)
				}
			}
		})
	}
}
