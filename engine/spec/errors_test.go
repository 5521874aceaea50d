package spec

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
)

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		rule string
		err  error
		want string
	}{
		{"file:line:col: msg", &Error{File: "a.yaml", Line: 3, Col: 5, Msg: "bad"}, "a.yaml:3:5: bad"},
		{"a hint goes on its own indented line", &Error{File: "a.yaml", Line: 3, Col: 5, Msg: "bad", Hint: "fix it"}, "a.yaml:3:5: bad\n  hint: fix it"},
		{"a list has one error per line", ErrorList{{File: "a", Line: 1, Col: 1, Msg: "x"}, {File: "a", Line: 2, Col: 1, Msg: "y", Hint: "h"}},
			"a:1:1: x\na:2:1: y\n  hint: h"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestErrorListUnwrapsToItsFirstError(t *testing.T) {
	first := &Error{File: "a", Line: 1, Col: 1, Msg: "x"}
	var err error = fmt.Errorf("load: %w", ErrorList{first, {File: "a", Line: 2, Col: 1, Msg: "y"}})
	var e *Error
	if !errors.As(err, &e) || e != first {
		t.Errorf("errors.As found %v, want the first entry", e)
	}
}

func TestErrorListSortsByPositionAndDropsRepeats(t *testing.T) {
	l := ErrorList{
		{File: "a", Line: 2, Col: 1, Msg: "b"},
		{File: "a", Line: 1, Col: 9, Msg: "a"},
		{File: "a", Line: 2, Col: 1, Msg: "b"},
		{File: "a", Line: 1, Col: 2, Msg: "c"},
	}
	var got []string
	for _, e := range l.Sorted() {
		got = append(got, fmt.Sprintf("%d:%d %s", e.Line, e.Col, e.Msg))
	}
	want := []string{"1:2 c", "1:9 a", "2:1 b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
