package dockertest

import (
	"fmt"
	"testing"
)

// The run's label comes right after FROM, so no layer of this run's build
// is one another run's build could share (and remove under it).
func TestRunLabelFollowsFrom(t *testing.T) {
	label := fmt.Sprintf("LABEL %s=%q", RunLabel, Run)
	for _, tc := range []struct{ in, want string }{
		{"FROM scratch\nCOPY demoapp /demoapp\nCMD [\"-version\", \"v1\"]\n", "FROM scratch\n" + label + "\nCOPY demoapp /demoapp\nCMD [\"-version\", \"v1\"]\n"},
		{"  from scratch\nCOPY a /a", "  from scratch\n" + label + "\nCOPY a /a\n"},
		{"COPY a /a\n", "COPY a /a\n" + label + "\n"},
	} {
		if got := string(withRunLabel([]byte(tc.in))); got != tc.want {
			t.Errorf("withRunLabel(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
		}
	}
}
