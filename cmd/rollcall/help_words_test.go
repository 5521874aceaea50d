package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestHelpSaysNothingUntrue: no command's help cites a document the
// repository does not have (DESIGN §N), and the root's help does not say
// rollcall drives one host only: a file with hosts: drives several.
func TestHelpSaysNothingUntrue(t *testing.T) {
	root := newRoot(env{})
	var walk func(c *cobra.Command)
	seen := 0
	walk = func(c *cobra.Command) {
		seen++
		texts := []string{c.Use, c.Short, c.Long, c.Example}
		c.Flags().VisitAll(func(f *pflag.Flag) { texts = append(texts, f.Usage) })
		for _, s := range texts {
			if strings.Contains(s, "DESIGN") || strings.Contains(s, "§") {
				t.Errorf("%s: help cites a document not in the repository: %q", c.CommandPath(), s)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	if seen < 10 {
		t.Fatalf("walked %d commands, want every one (at least 10)", seen)
	}
	for _, s := range []string{root.Short, root.Long} {
		if strings.Contains(s, "one Docker host") {
			t.Errorf("root help says one host only: %q", s)
		}
	}
	if !strings.Contains(root.Long, "hosts:") {
		t.Errorf("root help does not say a file with hosts: drives several: %q", root.Long)
	}
}
