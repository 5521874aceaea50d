package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	yaml4 "go.yaml.in/yaml/v4"
)

// The YAML library rollcall parses with (v3) words a syntax error with one
// line, and that line is where the enclosing structure began, not where
// the parser stopped: an unclosed [ on line 7 reads "line 6", a bad indent
// on line 12 "line 2". Its successor (v4, which compose-go already brings
// in) keeps both places. So when v3 refuses a document, v4 reads it again
// to locate the problem; v3 stays the parser of record.

// syntaxProblem is where the parser stopped, and the structure it was in.
type syntaxProblem struct {
	line, col       int    // where the parser found the problem, 1-based
	msg             string // the library's words, e.g. "did not find expected key"
	context         string // e.g. "while parsing a flow sequence"; "" for none
	ctxLine, ctxCol int    // where that structure began, 1-based
}

// locateSyntax parses data with v4 and returns where its syntax error is;
// false when v4 finds none, or reports it in a shape not known here.
func locateSyntax(data []byte) (p syntaxProblem, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dec := yaml4.NewDecoder(bytes.NewReader(data))
	var err error
	for range 2 { // the first document, and the start of a second
		var n yaml4.Node
		if err = dec.Decode(&n); err != nil {
			break
		}
	}
	if err == nil || errors.Is(err, io.EOF) {
		return p, false
	}
	// v4 keeps these errors in an internal package: read their fields.
	v := reflect.ValueOf(err)
	if v.Kind() != reflect.Struct {
		return p, false
	}
	// Parser marks count lines from 0, scanner marks from 1; columns count
	// from 0 in both.
	lineBase := 0
	switch v.Type().Name() {
	case "ParserError":
		lineBase = 1
	case "ScannerError":
	default:
		return p, false
	}
	line, col, okMark := markOf(v.FieldByName("Mark"))
	msg := v.FieldByName("Message")
	if !okMark || !msg.IsValid() || msg.Kind() != reflect.String {
		return p, false
	}
	p.line, p.col, p.msg = line+lineBase, col+1, msg.String()
	if cm := v.FieldByName("ContextMessage"); cm.IsValid() && cm.Kind() == reflect.String && cm.String() != "" {
		if l, c, ok := markOf(v.FieldByName("ContextMark")); ok {
			p.context, p.ctxLine, p.ctxCol = cm.String(), l+lineBase, c+1
		}
	}
	if p.line < 1 {
		return p, false
	}
	return p, true
}

func markOf(m reflect.Value) (line, col int, ok bool) {
	if !m.IsValid() || m.Kind() != reflect.Struct {
		return 0, 0, false
	}
	l, c := m.FieldByName("Line"), m.FieldByName("Column")
	if !l.CanInt() || !c.CanInt() {
		return 0, 0, false
	}
	return int(l.Int()), int(c.Int()), true
}

// hint is advice for the usual causes of p; "" when there is none.
func (p syntaxProblem) hint(data []byte) string {
	opened := fmt.Sprintf("line %d, column %d", p.ctxLine, p.ctxCol)
	switch {
	case strings.Contains(p.msg, "tab"), strings.Contains(p.msg, "cannot start any token") && charAt(data, p.line, p.col) == '\t':
		return "indent with spaces: YAML does not allow tabs for indentation"
	case p.context == "while parsing a flow sequence":
		return "the [ opened at " + opened + " is not closed: end the list with ], or quote a value that holds a comma or a bracket"
	case p.context == "while parsing a flow mapping":
		return "the { opened at " + opened + " is not closed: end the mapping with }, or quote a value that holds a comma or a brace"
	case p.context == "while scanning a quoted scalar":
		return "the quote opened at " + opened + " is not closed"
	case p.context == "while parsing a block mapping":
		return "check the indentation: this line must line up with the keys of the mapping at " + opened + ", or be indented under one of them"
	case p.context == "while parsing a block collection":
		return "check the indentation: every item of the list at " + opened + " starts with '- ' at the same column"
	case p.context == "while parsing a flow node":
		return "a value is missing here: look for a [ or { that is not closed, or a stray comma"
	case strings.Contains(p.msg, "mapping values are not allowed"):
		return "a ': ' here starts a key where none may start: check the indentation of this line, or quote the value"
	case strings.Contains(p.msg, "could not find expected ':'"):
		return "a key needs a ':' and a space after it"
	}
	return ""
}

// charAt is the byte at a 1-based line and column of data; 0 outside it.
func charAt(data []byte, line, col int) byte {
	lines := bytes.Split(data, []byte("\n"))
	if line < 1 || line > len(lines) || col < 1 || col > len(lines[line-1]) {
		return 0
	}
	return lines[line-1][col-1]
}
