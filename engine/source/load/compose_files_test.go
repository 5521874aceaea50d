package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/spec"
)

// parseComposeWithin runs ParseCompose in a goroutine and fails the test
// when it is still blocked after 5s, so a read that hangs on a FIFO ends
// the test, not the suite.
func parseComposeWithin(t *testing.T, name, doc string) (*spec.Desired, error) {
	t.Helper()
	type result struct {
		d   *spec.Desired
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := ParseCompose(name, []byte(doc), nil)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		return r.d, r.err
	case <-time.After(5 * time.Second):
		t.Fatalf("ParseCompose still blocks after 5s on:\n%s", doc)
		return nil, nil
	}
}

// hostileFiles makes, in dir, a link to /dev/zero, a 1 GiB sparse file and
// a FIFO, by name, with the words of the error each must give.
func hostileFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return map[string]string{
		"zero":   "is a character device, not a regular file",
		"sparse": "larger than the 4 MiB limit",
		"fifo":   "is a named pipe (FIFO), not a regular file",
	}
}

// TestComposePulledInFilesAreReadSafely (issue 18, row 2): a compose file
// whose env_file, label_file, extends file or include is a link to
// /dev/zero, a 1 GiB sparse file or a FIFO gives an error at once, naming
// the file and placed at its reference; never a blocked read, never an
// unbounded one.
func TestComposePulledInFilesAreReadSafely(t *testing.T) {
	dir := t.TempDir()
	targets := hostileFiles(t, dir)
	name := filepath.Join(dir, "compose.yaml")
	for _, ref := range []struct {
		attr, doc string
		line, col int
	}{
		{"env_file", "services:\n  web:\n    image: app\n    env_file: %s\n", 4, 15},
		{"env_file (long form)", "services:\n  web:\n    image: app\n    env_file:\n      - path: %s\n        required: false\n", 5, 15},
		{"label_file", "services:\n  web:\n    image: app\n    label_file: [%s]\n", 4, 18},
		{"extends", "services:\n  web:\n    image: app\n    extends: {file: %s, service: base}\n", 4, 21},
		{"include", "include:\n  - %s\nservices:\n  web: {image: app}\n", 2, 5},
		{"include (long form)", "include:\n  - path: [%s]\nservices:\n  web: {image: app}\n", 2, 12},
	} {
		for target, want := range targets {
			t.Run(ref.attr+" "+target, func(t *testing.T) {
				_, err := parseComposeWithin(t, name, fmt.Sprintf(ref.doc, target))
				var list spec.ErrorList
				if !errors.As(err, &list) || len(list) != 1 {
					t.Fatalf("error %v, want one finding", err)
				}
				e := list[0]
				if e.File != name || e.Line != ref.line || e.Col != ref.col {
					t.Errorf("finding at %s:%d:%d, want %s:%d:%d: %v", e.File, e.Line, e.Col, name, ref.line, ref.col, e)
				}
				if !strings.Contains(e.Msg, want) || !strings.Contains(e.Msg, filepath.Join(dir, target)) {
					t.Errorf("finding %q, want one naming %s with %q", e.Msg, filepath.Join(dir, target), want)
				}
			})
		}
	}
}

// TestComposeFilesPulledInByPulledInFiles: the same holds down an include
// or extends chain, and for an include's env_file and its project's .env;
// the finding is at the document's reference and says where the chain
// leads. An included file is held to the alias budget too.
func TestComposeFilesPulledInByPulledInFiles(t *testing.T) {
	dir := t.TempDir()
	hostileFiles(t, dir)
	write := func(rel, content string) string {
		path := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	inner := write("inc/inner.yaml", "services:\n  inner:\n    image: app\n    env_file: ../fifo\n")
	write("inc/outer.yaml", "include: [inner.yaml]\n")
	base := write("base.yaml", "services:\n  base:\n    image: app\n    extends: {file: more/base2.yaml, service: b}\n")
	base2 := write("more/base2.yaml", "services:\n  b:\n    image: app\n    label_file: ../zero\n")
	write("proj/other.yaml", "services:\n  other: {image: app}\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "proj", ".env"), 0o644); err != nil {
		t.Fatal(err)
	}
	var bomb strings.Builder
	bomb.WriteString("x-a: &a [" + strings.Repeat("x,", 1000) + "x]\nx-b: &b [" + strings.Repeat("*a,", 1000) + "*a]\nservices: {}\n")
	write("bomb.yaml", bomb.String())

	name := filepath.Join(dir, "compose.yaml")
	for _, tt := range []struct {
		rule, doc string
		line, col int
		want      []string
	}{
		{"an include's env_file", "include:\n  - path: inc/inner.yaml\n    env_file: fifo\nservices: {}\n", 3, 15,
			[]string{"include env_file: " + filepath.Join(dir, "fifo") + " is a named pipe"}},
		{"an included project's .env", "include:\n  - proj/other.yaml\nservices: {}\n", 2, 5,
			[]string{"include env_file: " + filepath.Join(dir, "proj", ".env") + " is a named pipe"}},
		{"an include's include's env_file", "include:\n  - inc/outer.yaml\nservices: {}\n", 2, 5,
			[]string{"through " + filepath.Join(dir, "inc", "outer.yaml") + ":1:11 → " + inner + ":4:15: services.inner.env_file: " + filepath.Join(dir, "fifo") + " is a named pipe"}},
		{"an extends chain's label_file", "services:\n  web:\n    extends: {file: base.yaml, service: base}\n", 3, 21,
			[]string{"through " + base + ":4:21 → " + base2 + ":4:17: services.web.label_file: " + filepath.Join(dir, "zero") + " is a character device"}},
		{"an included alias bomb", "include: [bomb.yaml]\nservices: {}\n", 1, 11,
			[]string{filepath.Join(dir, "bomb.yaml") + ":2:", "aliases expand the document"}},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := parseComposeWithin(t, name, tt.doc)
			var list spec.ErrorList
			if !errors.As(err, &list) || len(list) != 1 {
				t.Fatalf("error %v, want one finding", err)
			}
			if e := list[0]; e.File != name || e.Line != tt.line || e.Col != tt.col {
				t.Errorf("finding at %s:%d:%d, want %s:%d:%d: %v", e.File, e.Line, e.Col, name, tt.line, tt.col, e)
			}
			for _, w := range tt.want {
				if !strings.Contains(list[0].Msg, w) {
					t.Errorf("finding %q lacks %q", list[0].Msg, w)
				}
			}
		})
	}
}

// TestComposePulledInFilesStillWork: env_file (with required: false and
// /dev/null), label_file, extends and include of regular files read as
// compose reads them.
func TestComposePulledInFilesStillWork(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, content string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("app.env", "A=1\nB=${A}-x\nC=from-file\n")
	write("app.labels", "team=core\n")
	write("base/base.yaml", "services:\n  base:\n    image: app:1\n    env_file: base.env\n")
	write("base/base.env", "FROM_BASE=yes\n")
	write("other/other.yaml", "services:\n  other:\n    image: other:${OTHER_TAG}\n")
	write("other/.env", "OTHER_TAG=7\n")
	doc := `include:
  - other/other.yaml
services:
  web:
    extends: {file: base/base.yaml, service: base}
    env_file:
      - app.env
      - path: missing.env
        required: false
      - /dev/null
    label_file: app.labels
    environment: {C: explicit}
`
	d, err := parseComposeWithin(t, filepath.Join(dir, "compose.yaml"), doc)
	if err != nil {
		t.Fatal(err)
	}
	web := d.Workloads["web"]
	if web == nil || d.Workloads["other"] == nil {
		t.Fatalf("workloads %v, want web and other", d.Workloads)
	}
	if d.Workloads["other"].Image != "other:7" {
		t.Errorf("other's image %q, want other:7 (its project's .env)", d.Workloads["other"].Image)
	}
	want := map[string]string{"A": "1", "B": "1-x", "C": "explicit", "FROM_BASE": "yes"}
	for k, v := range want {
		if web.Environment[k] != v {
			t.Errorf("environment %v, want %v", web.Environment, want)
			break
		}
	}
	if web.Image != "app:1" || web.Labels["team"] != "core" {
		t.Errorf("image %q, labels %v; want app:1 and team=core", web.Image, web.Labels)
	}

	// A missing required env file and a missing label file are errors at
	// their reference.
	_, err = parseComposeWithin(t, filepath.Join(dir, "compose.yaml"), "services:\n  web:\n    image: app\n    env_file: nope.env\n    label_file: nope.labels\n")
	if err == nil || !strings.Contains(err.Error(), ":4:15: services.web.env_file: env file "+filepath.Join(dir, "nope.env")+" not found") ||
		!strings.Contains(err.Error(), ":5:17: services.web.label_file: label file "+filepath.Join(dir, "nope.labels")+" not found") {
		t.Errorf("missing files: error %v", err)
	}
}

// TestReadAtMostRefusesAFileThatGrows: what a file gives past the size it
// had at the open (it grows while being read) counts against the limit:
// one byte over is refused, exactly the limit is read.
func TestReadAtMostRefusesAFileThatGrows(t *testing.T) {
	for size, ok := range map[int]bool{spec.MaxDocumentBytes: true, spec.MaxDocumentBytes + 1: false, 3 * spec.MaxDocumentBytes: false} {
		data, err := spec.ReadAtMost(strings.NewReader(strings.Repeat("#", size)), "grows.yaml")
		switch {
		case ok && (err != nil || len(data) != size):
			t.Errorf("%d bytes: read %d, %v; want all of them", size, len(data), err)
		case !ok && (err == nil || !strings.Contains(err.Error(), "grows.yaml: larger than the 4 MiB limit")):
			t.Errorf("%d bytes: read %d, %v; want refused", size, len(data), err)
		}
	}
}

// TestGuardChecksWhatComposeGoReads: the resource loader compose-go asks
// before it reads an include or extends file refuses a path, relative to
// any directory the walk resolved from, that is not a regular file, and
// leaves the others to compose-go.
func TestGuardChecksWhatComposeGoReads(t *testing.T) {
	dir := t.TempDir()
	hostileFiles(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("services: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g := guard{newPulledIn(filepath.Join(dir, "compose.yaml"), t.TempDir())}
	g.p.addBase(dir)
	for path, refused := range map[string]bool{"fifo": true, filepath.Join(dir, "zero"): true, "sparse": true, "ok.yaml": false, "absent.yaml": false, ".": false} {
		done := make(chan bool, 1)
		go func() { done <- g.Accept(path) }()
		select {
		case got := <-done:
			if got != refused {
				t.Errorf("Accept(%s) = %v, want %v", path, got, refused)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Accept(%s) still blocks after 5s", path)
		}
		if refused {
			if _, err := g.Load(context.Background(), path); err == nil || !strings.Contains(err.Error(), "not a regular file") && !strings.Contains(err.Error(), "4 MiB") {
				t.Errorf("Load(%s) = %v, want the refusal", path, err)
			}
		}
	}
}

// TestComposePullsInABoundedNumberOfFiles: a chain of includes longer than
// maxPulledFiles is refused, at the document's include.
func TestComposePullsInABoundedNumberOfFiles(t *testing.T) {
	dir := t.TempDir()
	for i := range maxPulledFiles + 5 {
		doc := fmt.Sprintf("include: [f%d.yaml]\nservices: {}\n", i+1)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.yaml", i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := parseComposeWithin(t, filepath.Join(dir, "compose.yaml"), "include: [f0.yaml]\nservices: {}\n")
	var list spec.ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Line != 1 || list[0].Col != 11 ||
		!strings.Contains(list[0].Msg, fmt.Sprintf("more than %d files pulled in", maxPulledFiles)) {
		t.Errorf("error %v, want the bound at 1:11", err)
	}
}
