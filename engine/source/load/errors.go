package load

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
)

var (
	yamlLineRE   = regexp.MustCompile(`(?s)^yaml: line (\d+): (.*)$`)
	yamlAnchorRE = regexp.MustCompile(`^yaml: unknown anchor '(.*)' referenced$`)
)

// syntaxError turns an error of the YAML library into an *Error at the
// line and column where the parser found the problem (locateSyntax), with
// a hint for the usual causes. Failing that, it takes the one line the
// library's message carries.
func syntaxError(file string, data []byte, err error) *spec.Error {
	e := &spec.Error{File: file, Line: 1, Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
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
