package load

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// TestSyntaxErrorsAreWhereTheParserFoundThem checks the cases of issue 10:
// a YAML syntax error is reported at the line and column where the parser
// stopped, not at the line where the enclosing structure began, with a
// hint for the usual cause.
func TestSyntaxErrorsAreWhereTheParserFoundThem(t *testing.T) {
	const head = "prefix: shop\nworkloads:\n  web:\n    image: nginx\n" // lines 1-4
	tests := []struct {
		rule string
		src  string
		pos  string
		msg  string
		hint string
		// notCompose: the row is not checked as a compose file too, whose
		// positions differ (compose-go reads a second document itself).
		notCompose bool
	}{
		{"a bad indent on line 12",
			head + "    version: \"1\"\n    replicas: 2\n    environment:\n      A: b\n      C: d\n  api:\n    image: api\n   version: \"2\"\n",
			"12:4", "did not find expected key", "line up with the keys of the mapping at line 3, column 3", false},
		{"a value indented as a key on line 12",
			head + "    version: \"1\"\n    replicas: 2\n    environment:\n      A: b\n      C: d\n  api:\n    image: api\n      replicas: 3\n",
			"12:15", "mapping values are not allowed", "indentation", false},
		{"an unclosed [ on line 7",
			head + "    version: \"1\"\n    replicas: 2\n    command: [serve, --port, \"80\"\n    environment:\n      A: b\n",
			"8:5", "did not find expected ',' or ']'", "the [ opened at line 7, column 14 is not closed", false},
		{"an unclosed { on line 5",
			head + "    environment: {A: b\n  api:\n    image: x\n",
			"6:6", "did not find expected ',' or '}'", "the { opened at line 5, column 18 is not closed", false},
		{"a tab on line 5", head + "\tversion: \"1\"\n    replicas: 2\n", "5:1", "tab character", "indent with spaces", false},
		{"a tab inside the indent of line 5", head + "    \tversion: \"1\"\n", "5:5", "tab character", "indent with spaces", false},
		{"a tab starting a key on line 6", head + "    version: \"1\"\n\treplicas: 2\n", "6:1", "cannot start any token", "indent with spaces", false},
		{"an unclosed quote on line 4", "workloads:\n  web:\n    replicas: 2\n    image: \"nginx\n", "5:1", "unexpected end of stream", "the quote opened at line 4, column 12 is not closed", false},
		{"an error in a second document", "workloads: {}\n---\na: [\n", "4:1", "invalid YAML", "not closed", true},
		{"an unknown anchor is at its alias", "a: 1\nworkloads: *nope\n", "2:12", "unknown anchor 'nope'", "must come after its anchor", true},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := Parse("test.yaml", []byte(tt.src))
			var list spec.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("error %v, want an ErrorList of one", err)
			}
			e := list[0]
			if fmt.Sprintf("%d:%d", e.Line, e.Col) != tt.pos || !strings.Contains(e.Msg, tt.msg) || !strings.Contains(e.Hint, tt.hint) {
				t.Errorf("got %v\nwant test.yaml:%s: ...%s... (hint ...%s...)", e, tt.pos, tt.msg, tt.hint)
			}
			if tt.notCompose {
				return
			}
			// A compose file goes through the same locator.
			_, err = ParseCompose("compose.yaml", []byte(strings.Replace(tt.src, "workloads:", "services:", 1)), nil)
			if !errors.As(err, &list) || fmt.Sprintf("%d:%d", list[0].Line, list[0].Col) != tt.pos {
				t.Errorf("compose: got %v, want it at %s", err, tt.pos)
			}
		})
	}
}
