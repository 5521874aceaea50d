package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/template"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// The files a compose document pulls in (env_file, label_file, extends,
// include, an included project's env_file and .env) are read under
// ReadFile's rules, as the document itself is (DESIGN §7): a regular file,
// at most MaxDocumentBytes, never a blocking open. compose-go reads them
// with os.ReadFile and os.Open, which block on a FIFO and read /dev/zero
// until the process dies, so:
//
//   - env_file and label_file are read here, not by compose-go
//     (SkipResolveEnvironment, SkipResolveLabels): resolveFiles reads each
//     one through ReadFile and parses the bytes as compose does.
//   - include and extends files, and an include's env files, are read by
//     compose-go. checkPulledIn walks the document first, as compose
//     resolves it, and reads each of them through ReadFile; and every
//     include or extends path compose-go is about to read passes guard,
//     compose-go's resource-loader hook, which checks it the same way
//     when the walk did not. What is left is the moment between the check
//     and compose-go's own read: a file swapped for a FIFO in that moment
//     is read by compose-go.
//
// A finding is placed at the reference in the compose document; when the
// reference is in a file the document pulls in, the message says where.

// maxPulledFiles bounds how many files one compose document may pull in,
// include and extends chains included, so that the walk ends in bounded
// time whatever the files do.
const maxPulledFiles = 64

// pulledIn is the walk over what a compose document pulls in.
type pulledIn struct {
	main  string // the compose document's file
	files int
	// read are the files read and found good, by absolute path; bad the
	// ones found bad, with the error.
	read map[string]bool
	bad  map[string]error
	// walked are the files walked, with the directory their paths
	// resolved from: a file pulled in twice (a diamond of includes) is
	// walked once, so the walk stays linear.
	walked map[string]bool
	// bases are the directories relative paths were resolved from.
	bases []string
	// refs is where each env_file and label_file is referenced, by
	// absolute path, for resolveFiles' errors.
	refs map[string]ref
	errs spec.ErrorList
}

// ref is a place in the compose document, and the reference it leads to
// in the files pulled in ("" in the document itself).
type ref struct {
	line, col int
	via       []string // file:line:col of each reference down the chain
}

// say is msg about the file at the end of r's chain.
func (r ref) say(msg string) string {
	if len(r.via) == 0 {
		return msg
	}
	via := r.via
	if len(via) > 4 {
		via = append(slices.Clip(via[:2]), fmt.Sprintf("(%d more)", len(via)-3), via[len(via)-1])
	}
	return "through " + strings.Join(via, " → ") + ": " + msg
}

func newPulledIn(main, dir string) *pulledIn {
	return &pulledIn{main: main, read: map[string]bool{}, bad: map[string]error{}, walked: map[string]bool{}, bases: []string{dir}, refs: map[string]ref{}}
}

// checkPulledIn walks the compose document whose raw tree is root, in
// directory dir, reading every include and extends file and every env file
// of an include through ReadFile, and noting where each env_file and
// label_file is referenced.
func (p *pulledIn) checkPulledIn(root *yaml.Node, dir string, env composetypes.Mapping) {
	if root == nil {
		return
	}
	p.walk(p.main, root, dir, env, nil, true)
}

// walk visits one file: root is its tree, base the directory its relative
// paths resolve from, env what interpolates it, at where the chain that
// led to it starts in the document (nil for the document itself).
func (p *pulledIn) walk(file string, root *yaml.Node, base string, env composetypes.Mapping, at *ref, withInclude bool) {
	raw := rawTree{root}
	if _, inc := raw.get("include"); withInclude && inc != nil && inc.Kind == yaml.SequenceNode {
		for _, item := range inc.Content {
			p.include(file, deref(item), base, env, at)
		}
	}
	_, services := raw.get("services")
	if services == nil || services.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(services.Content); i += 2 {
		svc := deref(services.Content[i+1])
		if svc.Kind != yaml.MappingNode {
			continue
		}
		s := rawTree{svc}
		if _, ext := s.get("extends", "file"); ext != nil && ext.Kind == yaml.ScalarNode {
			path := p.resolve(base, p.interpolate(ext.Value, env))
			where := p.place(file, ext, at)
			if !p.seen(path, filepath.Dir(path)) {
				if data, ok := p.readFile(path, "extends.file", where); ok {
					if eroot, ok := p.parse(path, data, where); ok {
						// The extended file's own extends resolve from its directory; its includes are not read.
						p.addBase(filepath.Dir(path))
						p.walk(path, eroot, filepath.Dir(path), env, &where, false)
					}
				}
			}
		}
		_, ef := s.get("env_file")
		for _, n := range pathNodes(ef, "path") {
			p.note(p.resolve(base, p.interpolate(n.Value, env)), p.place(file, n, at))
		}
		_, lf := s.get("label_file")
		for _, n := range pathNodes(lf, "") {
			p.note(p.resolve(base, p.interpolate(n.Value, env)), p.place(file, n, at))
		}
	}
}

// include visits one entry of include: a path, or a mapping of path,
// project_directory and env_file.
func (p *pulledIn) include(file string, item *yaml.Node, base string, env composetypes.Mapping, at *ref) {
	var paths, envFiles []*yaml.Node
	projectDir := ""
	switch item.Kind {
	case yaml.ScalarNode:
		paths = []*yaml.Node{item}
	case yaml.MappingNode:
		m := rawTree{item}
		_, pv := m.get("path")
		paths = pathNodes(pv, "")
		_, ev := m.get("env_file")
		envFiles = pathNodes(ev, "")
		if _, pd := m.get("project_directory"); pd != nil && pd.Kind == yaml.ScalarNode {
			projectDir = p.resolve(base, p.interpolate(pd.Value, env))
		}
	}
	if len(paths) == 0 {
		return
	}
	resolved := make([]string, len(paths))
	for i, n := range paths {
		resolved[i] = p.resolve(base, p.interpolate(n.Value, env))
	}
	if projectDir == "" {
		projectDir = filepath.Dir(resolved[0])
	}
	p.addBase(projectDir)
	// The include's env files, else its project's .env, interpolate it.
	incEnv := env.Clone()
	var envPaths []string
	var envAt []ref
	for _, n := range envFiles {
		if f := p.interpolate(n.Value, env); f != "/dev/null" {
			envPaths = append(envPaths, p.resolve(base, f))
			envAt = append(envAt, p.place(file, n, at))
		}
	}
	if len(envFiles) == 0 {
		if st, err := os.Stat(filepath.Join(projectDir, ".env")); err == nil && !st.IsDir() {
			envPaths = append(envPaths, filepath.Join(projectDir, ".env"))
			envAt = append(envAt, p.place(file, paths[0], at))
		}
	}
	vars := map[string]string{}
	for i, path := range envPaths {
		data, ok := p.readFile(path, "include env_file", envAt[i])
		if !ok {
			continue
		}
		_ = dotenv.ParseWithFormat(bytes.NewReader(data), path, vars, func(k string) (string, bool) {
			if v, ok := env[k]; ok {
				return v, true
			}
			v, ok := vars[k]
			return v, ok
		}, "")
	}
	incEnv = incEnv.Merge(vars)
	for i, path := range resolved {
		where := p.place(file, paths[i], at)
		if p.seen(path, projectDir) {
			continue
		}
		data, ok := p.readFile(path, "include", where)
		if !ok {
			continue
		}
		if iroot, ok := p.parse(path, data, where); ok {
			p.walk(path, iroot, projectDir, incEnv, &where, true)
		}
	}
}

// seen reports whether file was walked from base before, and marks it.
func (p *pulledIn) seen(file, base string) bool {
	key := file + "\x00" + base
	if p.walked[key] {
		return true
	}
	p.walked[key] = true
	return false
}

// pathNodes are the path scalars of an attribute that is a path or a list
// of paths, or of mappings holding one under key (env_file's path).
func pathNodes(n *yaml.Node, key string) []*yaml.Node {
	if n == nil {
		return nil
	}
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []*yaml.Node
	for _, it := range items {
		it = deref(it)
		switch {
		case it.Kind == yaml.ScalarNode && it.Value != "":
			out = append(out, it)
		case it.Kind == yaml.MappingNode && key != "":
			if _, v := (rawTree{it}).get(key); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// place is where a reference at node n of file goes: n itself in the
// document, else the start of the chain, saying where n is.
func (p *pulledIn) place(file string, n *yaml.Node, at *ref) ref {
	if at == nil {
		return ref{line: max(n.Line, 1), col: max(n.Column, 1)}
	}
	return ref{line: at.line, col: at.col, via: append(slices.Clip(at.via), fmt.Sprintf("%s:%d:%d", file, n.Line, n.Column))}
}

func (p *pulledIn) interpolate(s string, env composetypes.Mapping) string {
	out, err := template.SubstituteWithOptions(s, func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}, template.WithoutLogging)
	if err != nil {
		return s
	}
	return out
}

func (p *pulledIn) resolve(base, path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(base, path)
}

func (p *pulledIn) addBase(dir string) {
	if !slices.Contains(p.bases, dir) {
		p.bases = append(p.bases, dir)
	}
}

// note records where an env_file or label_file is first referenced.
func (p *pulledIn) note(path string, at ref) {
	if _, ok := p.refs[path]; !ok {
		p.refs[path] = at
	}
}

// readFile reads path through ReadFile, once; a finding goes at at, as
// what (the attribute that names the file). A file that does not exist
// is left to compose-go, which says so in its own words.
func (p *pulledIn) readFile(path, what string, at ref) ([]byte, bool) {
	if err, ok := p.bad[path]; ok {
		p.fail(at, what, err)
		return nil, false
	}
	if !p.read[path] {
		if p.files >= maxPulledFiles {
			p.fail(at, what, fmt.Errorf("%s: more than %d files pulled in by one compose document", path, maxPulledFiles))
			return nil, false
		}
		p.files++
	}
	data, err := spec.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case err != nil:
		p.bad[path] = err
		p.fail(at, what, err)
		return nil, false
	}
	p.read[path] = true
	return data, true
}

// parse reads an included or extended file's tree, with the alias budget
// of the document itself (compose-go would follow the aliases unbounded).
func (p *pulledIn) parse(path string, data []byte, at ref) (*yaml.Node, bool) {
	root, e := decodeRaw(path, data)
	if e != nil {
		p.errs = append(p.errs, &spec.Error{File: p.main, Line: at.line, Col: at.col, Msg: at.say(fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)), Hint: e.Hint})
		return nil, false
	}
	return root, root != nil
}

func (p *pulledIn) fail(at ref, what string, err error) {
	p.errs = append(p.errs, &spec.Error{File: p.main, Line: at.line, Col: at.col, Msg: at.say(what + ": " + err.Error())})
}

// guard is the resource loader compose-go asks before it reads an include
// or extends file: it accepts (and so fails, in Load) a path that is not a
// regular file of at most MaxDocumentBytes, and leaves every other path to
// compose-go's own loader. A relative path is checked as resolved from
// each directory the walk resolved from, as compose-go resolves it from
// one of them.
type guard struct{ p *pulledIn }

func (g guard) candidates(path string) []string {
	if filepath.IsAbs(path) {
		return []string{filepath.Clean(path)}
	}
	var out []string
	for _, b := range g.p.bases {
		out = append(out, filepath.Join(b, path))
	}
	return out
}

func (g guard) Accept(path string) bool { return g.check(path) != nil }

func (g guard) check(path string) error {
	for _, c := range g.candidates(path) {
		if g.p.read[c] {
			continue
		}
		if err, ok := g.p.bad[c]; ok {
			return err
		}
		st, err := os.Stat(c)
		if err != nil || st.IsDir() {
			continue // absent, or a build context: nothing compose-go reads as a file
		}
		if _, err := spec.ReadFile(c); err != nil {
			g.p.bad[c] = err
			return err
		}
		g.p.read[c] = true
	}
	return nil
}

func (g guard) Load(_ context.Context, path string) (string, error) {
	if err := g.check(path); err != nil {
		return "", err
	}
	return "", fmt.Errorf("%s: not checked", path)
}

func (g guard) Dir(path string) string { return filepath.Dir(path) }

// resolveFiles reads the env_file and label_file of every service, as
// compose resolves them (types.Project.WithServicesEnvironmentResolved,
// WithServicesLabelsResolved), through ReadFile.
func (c *composeMap) resolveFiles() spec.ErrorList {
	var errs spec.ErrorList
	for name, s := range c.project.Services {
		if err := c.resolveEnvironment(name, &s); err != nil {
			errs = append(errs, err)
		}
		if err := c.resolveLabels(name, &s); err != nil {
			errs = append(errs, err)
		}
		c.project.Services[name] = s
	}
	return errs
}

func (c *composeMap) resolveEnvironment(name string, s *composetypes.ServiceConfig) *spec.Error {
	projectEnv := c.project.Environment
	s.Environment = s.Environment.Resolve(projectEnv.Resolve)
	environment := s.Environment.ToMapping()
	for _, f := range s.EnvFiles {
		data, err := readPulledIn(f.Path)
		if errors.Is(err, fs.ErrNotExist) && !bool(f.Required) {
			continue
		}
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("env file %s not found", f.Path)
		}
		if err == nil {
			err = dotenv.ParseWithFormat(bytes.NewReader(data), f.Path, environment, func(k string) (string, bool) {
				// The project's environment first, as compose interpolates.
				if v, ok := projectEnv.Resolve(k); ok {
					return v, true
				}
				if v, ok := s.Environment[k]; ok && v != nil {
					return *v, true
				}
				return "", false
			}, f.Format)
		}
		if err != nil {
			return c.fileError(name, "env_file", f.Path, err)
		}
	}
	s.Environment = environment.ToMappingWithEquals().OverrideBy(s.Environment)
	return nil
}

func (c *composeMap) resolveLabels(name string, s *composetypes.ServiceConfig) *spec.Error {
	labels := composetypes.MappingWithEquals{}
	for _, f := range s.LabelFiles {
		data, err := readPulledIn(f)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("label file %s not found", f)
		}
		vars := composetypes.Mapping{}
		if err == nil {
			err = dotenv.ParseWithFormat(bytes.NewReader(data), f, vars, func(k string) (string, bool) {
				if v, ok := labels[k]; ok && v != nil {
					return *v, true
				}
				return "", false
			}, "")
		}
		if err != nil {
			return c.fileError(name, "label_file", f, err)
		}
		labels.OverrideBy(vars.ToMappingWithEquals())
	}
	labels = labels.OverrideBy(s.Labels.ToMappingWithEquals())
	if len(labels) > 0 {
		s.Labels = composetypes.NewLabelsFromMappingWithEquals(labels)
	}
	return nil
}

// readPulledIn reads an env or label file; /dev/null, compose's way of
// saying none, reads as empty.
func readPulledIn(path string) ([]byte, error) {
	if path == "/dev/null" {
		return nil, nil
	}
	return spec.ReadFile(path)
}

// fileError places a failure to read service name's env or label file at
// its reference: where the walk saw it, else the service's attribute, else
// the service.
func (c *composeMap) fileError(name, attr, path string, err error) *spec.Error {
	msg := fmt.Sprintf("services.%s.%s: %v", name, attr, err)
	if r, ok := c.pulled.refs[path]; ok {
		return &spec.Error{File: c.l.file, Line: r.line, Col: r.col, Msg: r.say(msg)}
	}
	k, v := c.raw.find("services", name, attr)
	line, col := position(k, v)
	return &spec.Error{File: c.l.file, Line: line, Col: col, Msg: msg}
}
