package nowords

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// goFiles parses every non-test Go file of rollcall the tests read, by
// directory (a package), relative to the repository's root.
func goFiles(t *testing.T, fset *token.FileSet) map[string][]*ast.File {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]*ast.File{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
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
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			return err
		}
		pkgs[filepath.ToSlash(filepath.Dir(rel))] = append(pkgs[filepath.ToSlash(filepath.Dir(rel))], f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// stringFields are the struct fields of plain type string, by name, with
// the packages (directories) that declare one so named.
func stringFields(pkgs map[string][]*ast.File) map[string]map[string]bool {
	fields := map[string]map[string]bool{}
	for dir, files := range pkgs {
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				st, ok := n.(*ast.StructType)
				if !ok {
					return true
				}
				for _, fl := range st.Fields.List {
					if id, ok := fl.Type.(*ast.Ident); !ok || id.Name != "string" {
						continue
					}
					for _, name := range fl.Names {
						if fields[name.Name] == nil {
							fields[name.Name] = map[string]bool{}
						}
						fields[name.Name][dir] = true
					}
				}
				return true
			})
		}
	}
	return fields
}

// word is a literal of a vocabulary: "stderr", "max_p95_ratio", "pass".
var word = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// enumsAllowed are the comparisons left as they are, each with why. Each
// must still match something, so the list stays true.
var enumsAllowed = []struct{ file, field, why string }{
	{"tui/logs.go", "Stream", "engine/docker's LogLine.Stream: the engine's two streams want docker.Stream constants (issue 29, left to engine/docker's owner)"},
	{"engine/source/load/ports.go", "Proto", "the loader reads spec's ports from the file: \"tcp\" and \"udp\" are the file format's values, checked as it parses them"},
	{"engine/source/load/depends.go", "Restart", "the loader reads spec's restart policy from the file: \"no\" is the file format's value, checked as it parses it"},
}

// enumAcross is the field compared in e, a comparison of x.F with a
// non-empty string literal where F is a plain-string field that only
// other packages declare; "" for any other expression.
func enumAcross(e *ast.BinaryExpr, dir string, fields map[string]map[string]bool) string {
	if e.Op != token.EQL && e.Op != token.NEQ {
		return ""
	}
	for _, pair := range [][2]ast.Expr{{e.X, e.Y}, {e.Y, e.X}} {
		sel, ok := ast.Unparen(pair[0]).(*ast.SelectorExpr)
		lit, isLit := ast.Unparen(pair[1]).(*ast.BasicLit)
		if !ok || !isLit || lit.Kind != token.STRING {
			continue
		}
		if v, err := strconv.Unquote(lit.Value); err != nil || !word.MatchString(v) {
			continue // "" asks whether it is set; "/drain" or "0.0.0.0" is no word of a vocabulary
		}
		if decl := fields[sel.Sel.Name]; len(decl) > 0 && !decl[dir] {
			return sel.Sel.Name
		}
	}
	return ""
}

// TestNoStringEnumsAcrossPackages (issue 29): a package that compares
// another package's field with a word ("max_p95_ratio") holds a copy of
// that package's vocabulary; the field wants a type of its own with
// constants, as reconcile.Check has. Without go/types (golang.org/x/tools
// is not in go.mod) the check is syntactic: x.F == "word", where F is a
// field of plain type string declared in another package of rollcall and
// in none of the comparing package's own structs (when both declare an F,
// the field cannot be told apart and is not checked).
func TestNoStringEnumsAcrossPackages(t *testing.T) {
	fset := token.NewFileSet()
	pkgs := goFiles(t, fset)
	fields := stringFields(pkgs)
	used := make([]bool, len(enumsAllowed))
	for dir, files := range pkgs {
		for _, f := range files {
			file := fset.Position(f.Pos()).Filename
			ast.Inspect(f, func(n ast.Node) bool {
				if e, ok := n.(*ast.BinaryExpr); ok {
					if name := enumAcross(e, dir, fields); name != "" {
						for i, a := range enumsAllowed {
							if a.file == file && a.field == name {
								used[i] = true
								return true
							}
						}
						t.Errorf("%s: %s compared with a word: another package's string field; give it a type with constants",
							fset.Position(e.Pos()), name)
					}
				}
				return true
			})
		}
	}
	for i, a := range enumsAllowed {
		if !used[i] {
			t.Errorf("allowed %s %s matches nothing any more: drop it from the list", a.file, a.field)
		}
	}
}
