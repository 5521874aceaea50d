package load

import (
	"errors"
	"testing"
)

func TestSyntaxErrorPosition(t *testing.T) {
	tests := []struct {
		rule      string
		data      string
		err       string
		line, col int
	}{
		{"the line comes from the message", "a\nb\nc\n", "yaml: line 3: could not find expected ':'", 3, 1},
		{"an unknown anchor is found in the text", "a: 1\nb: [*xy, *x]\n", "yaml: unknown anchor 'x' referenced", 2, 10},
		{"no line at all is 1:1", "", "yaml: something odd", 1, 1},
		{"line 0 is clamped to 1", "", "yaml: line 0: odd", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			e := syntaxError("f", []byte(tt.data), errors.New(tt.err))
			if e.Line != tt.line || e.Col != tt.col || e.File != "f" {
				t.Errorf("got %s:%d:%d, want f:%d:%d", e.File, e.Line, e.Col, tt.line, tt.col)
			}
		})
	}
}
