package spec

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
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
// Parse returns one whenever it fails, so a user can fix a file in one go.
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

// sorted orders the list by position and drops exact repeats, which an
// alias used twice produces.
func (l ErrorList) sorted() ErrorList {
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

var (
	yamlLineRE   = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)
	yamlAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// syntaxError turns an error of the YAML library into an *Error at the
// line and column where the parser found the problem (locateSyntax), with
// a hint for the usual causes. Failing that, it takes the one line the
// library's message carries.
func syntaxError(file string, data []byte, err error) *Error {
	e := &Error{File: file, Line: 1, Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if p, ok := locateSyntax(data); ok {
		e.Line, e.Col, e.Msg, e.Hint = p.line, p.col, "invalid YAML: "+p.msg, p.hint(data)
		return e
	}
	if m := yamlLineRE.FindStringSubmatch(err.Error()); m != nil {
		if n, perr := strconv.Atoi(m[1]); perr == nil && n > 0 {
			e.Line = n
		}
		e.Msg = m[2]
	} else if m := yamlAnchorRE.FindStringSubmatch(err.Error()); m != nil {
		e.Line, e.Col = findAlias(data, m[1])
		e.Hint = "an alias (*" + m[1] + ") must come after its anchor (&" + m[1] + ")"
	}
	if strings.Contains(e.Msg, "tab") || (strings.Contains(e.Msg, "cannot start any token") && lineHasTab(data, e.Line)) {
		e.Hint = "indent with spaces: YAML does not allow tabs for indentation"
	}
	e.Msg = "invalid YAML: " + e.Msg
	return e
}

// findAlias locates the first "*name" in data; 1:1 when it is not found.
func findAlias(data []byte, name string) (line, col int) {
	s := string(data)
	needle := "*" + name
	for off := 0; ; {
		i := strings.Index(s[off:], needle)
		if i < 0 {
			return 1, 1
		}
		at := off + i
		end := at + len(needle)
		if end == len(s) || strings.ContainsRune(" \t\r\n,]}", rune(s[end])) {
			line = 1 + strings.Count(s[:at], "\n")
			col = at - strings.LastIndex(s[:at], "\n")
			return line, col
		}
		off = at + 1
	}
}

func lineHasTab(data []byte, line int) bool {
	lines := strings.Split(string(data), "\n")
	return line >= 1 && line <= len(lines) && strings.Contains(lines[line-1], "\t")
}
