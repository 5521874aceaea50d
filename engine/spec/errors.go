package spec

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a desired-state file, at the line and column of
// the offending YAML node (both 1-based).
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Hint      string // "" when there is nothing useful to add
}

func (e *Error) Error() string {
	s := fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	if e.Hint != "" {
		s += "\n  hint: " + e.Hint
	}
	return s
}

// ErrorList is every problem found in one document, sorted by position.
// load.Parse returns one whenever it fails, so a user can fix a file in one go.
type ErrorList []*Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the first *Error.
func (l ErrorList) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}

// Sorted orders the list by position and drops exact repeats, which an
// alias used twice produces.
func (l ErrorList) Sorted() ErrorList {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Msg < b.Msg
	})
	out := l[:0]
	for i, e := range l {
		if i > 0 && *e == *l[i-1] {
			continue
		}
		out = append(out, e)
	}
	return out
}
