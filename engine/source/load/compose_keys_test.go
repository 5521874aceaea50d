package load

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// update rewrites what the tests compare with (the corpus goldens, the
// README's table of compose keys): go test ./engine/source/load -run ... -update
var update = flag.Bool("update", false, "rewrite the golden files and the README's compose key table")

// TestREADMEComposeKeyTable: the README's table of compose keys is the
// table the loader uses (ComposeKeys), so the two cannot drift.
func TestREADMEComposeKeyTable(t *testing.T) {
	checkREADMETable(t, "compose-keys", ComposeKeyTable(), "ComposeKeys")
}

// TestREADMESwarmKeyTable: the README's table of a swarm's keys is the
// table the loader applies (SwarmRules).
func TestREADMESwarmKeyTable(t *testing.T) {
	checkREADMETable(t, "swarm-keys", SwarmKeyTable(), "SwarmRules")
}

// checkREADMETable compares the README's text between the markers
// <!-- name:begin --> and <!-- name:end --> with want, and rewrites it
// with -update.
func checkREADMETable(t *testing.T, name, want, from string) {
	t.Helper()
	begin, end := "<!-- "+name+":begin -->\n", "<!-- "+name+":end -->"
	path := filepath.Join("..", "..", "..", "README.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	before, rest, ok := strings.Cut(text, begin)
	if !ok {
		t.Fatalf("%s: no %q marker", path, strings.TrimSpace(begin))
	}
	got, after, ok := strings.Cut(rest, end)
	if !ok {
		t.Fatalf("%s: no %q marker after the begin marker", path, end)
	}
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(before+begin+want+end+after), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's %s table differs from %s (rewrite it with -update):\n%s", name, from, lineDiff(got, want))
}

// TestComposeKeysAreConsistent: each key once, with a known verdict, and an
// ignored key says what to do instead.
func TestComposeKeysAreConsistent(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range slices.Concat(ComposeKeys, ExtensionKeys) {
		if seen[k.Path] {
			t.Errorf("%s: twice in ComposeKeys", k.Path)
		}
		seen[k.Path] = true
		switch k.Does {
		case KeyHonoured, KeyMapped:
		case KeyIgnored, KeyRefused:
			if k.Whole {
				t.Errorf("%s: %s but taken whole", k.Path, k.Does)
			}
			if k.Why == "" {
				t.Errorf("%s: %s with no word on what to do instead", k.Path, k.Does)
			}
		default:
			t.Errorf("%s: unknown verdict %q", k.Path, k.Does)
		}
	}
}

// lineDiff is a plain diff of two texts, line by line: "- " before a line
// of got that want lacks, "+ " before a line of want that got lacks.
func lineDiff(got, want string) string {
	var b strings.Builder
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i, j := 0, 0
	for i < len(g) || j < len(w) {
		switch {
		case i < len(g) && j < len(w) && g[i] == w[j]:
			i++
			j++
		case j < len(w) && !slices.Contains(g[i:], w[j]):
			fmt.Fprintf(&b, "+ %s\n", w[j])
			j++
		case i < len(g):
			fmt.Fprintf(&b, "- %s\n", g[i])
			i++
		default:
			fmt.Fprintf(&b, "+ %s\n", w[j])
			j++
		}
	}
	return b.String()
}
