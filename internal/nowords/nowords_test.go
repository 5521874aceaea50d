package nowords

import (
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// matchers are the strings functions that read a text for its content.
var matchers = map[string]bool{
	"Contains": true, "ContainsAny": true, "ContainsRune": true, "HasPrefix": true, "HasSuffix": true,
	"CutPrefix": true, "CutSuffix": true, "TrimPrefix": true, "TrimSuffix": true, "Index": true,
	"LastIndex": true, "EqualFold": true, "Cut": true,
}

// wordy is an expression that holds words made for people: an error's
// text, a step's reason, a note, a message.
var wordy = regexp.MustCompile(`\.Error\(\)|(?i:reason|\bmsg\b|\.Msg\b|note|message|\.Text\b|stderr)`)

// allowed are the places that must read words no one offers as data,
// each with why. Each must still match something, so the list stays true.
var allowed = []struct{ file, expr, why string }{
	{"engine/source/load/syntax.go", "p.msg", "the YAML library's parser messages have no kind; the hint for a tab or a stray ':' is chosen from them"},
	{"engine/source/load/errors.go", "err.Error()", "the YAML library's one-line error, when its typed error cannot be read"},
	{"engine/source/load/errors.go", "e.Msg", "the same YAML message, for the tab hint"},
	{"engine/source/load/compose.go", "err.Error()", "compose-go's dotenv parser says the line only in its message"},
	{"engine/source/load/compose_map.go", "e.Msg", "the loader's own messages for a compose document, renamed to the compose paths they came from (the same package's words)"},
}

func TestNoCodeMatchesWords(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	used := make([]bool, len(allowed))
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "third_party", "cmd/rollbench", "engine/docker/dockertest", ".git", "vhs":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || !matchers[sel.Sel.Name] {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "strings" {
				return true
			}
			var b strings.Builder
			_ = printer.Fprint(&b, fset, call.Args[0])
			haystack := b.String()
			if !wordy.MatchString(haystack) {
				return true
			}
			for i, a := range allowed {
				if filepath.ToSlash(rel) == a.file && strings.Contains(haystack, a.expr) {
					used[i] = true
					return true
				}
			}
			t.Errorf("%s: strings.%s(%s, …) reads meaning out of words: pass it as data (a typed field, a kind, an error type)",
				fset.Position(call.Pos()), sel.Sel.Name, haystack)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range allowed {
		if !used[i] {
			t.Errorf("allowed %s %q matches nothing any more: drop it from the list", a.file, a.expr)
		}
	}
}
