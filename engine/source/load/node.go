package load

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// This file holds the typed reads of YAML nodes that every level of the
// document shares. Each read reports a problem at the node itself, so the
// user is pointed at the exact spot.

// loader walks one document, collecting every problem rather than stopping
// at the first.
type loader struct {
	file   string
	prefix string
	// engine is the document's engine: key, read before anything else,
	// since what a workload may have depends on it (swarm_keys.go).
	engine spec.Engine
	errs   spec.ErrorList
	warns  []*spec.Error
	// canaries are the update.canary keys read, for the check that the
	// document names the proxy they need (checkCanaryProxy).
	canaries []field
	// binds are the bind sources read, looked for once the document is
	// read (checkBindSources).
	binds []bindCheck
	// depends are the depends_on entries read, checked once every
	// workload is (checkDepends).
	depends []dependRef
}

// problem is a message and hint not yet tied to a position; the pure
// parsers (ports, sizes) return one.
type problem struct{ msg, hint string }

func (l *loader) at(n *yaml.Node, hint, format string, args ...any) *spec.Error {
	e := &spec.Error{File: l.file, Line: 1, Col: 1, Msg: fmt.Sprintf(format, args...), Hint: hint}
	if n != nil && n.Line > 0 {
		e.Line = n.Line
		if n.Column > 0 {
			e.Col = n.Column
		}
	}
	return e
}

func (l *loader) fail(n *yaml.Node, hint, format string, args ...any) {
	l.errs = append(l.errs, l.at(n, hint, format, args...))
}

func (l *loader) warn(n *yaml.Node, hint, format string, args ...any) {
	l.warns = append(l.warns, l.at(n, hint, format, args...))
}

// deref follows aliases to the node they name.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// describe names what a node is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
	default:
		return "nothing"
	}
	switch tag := n.ShortTag(); tag {
	case "!!str":
		return fmt.Sprintf("string %q", n.Value)
	case "!!int":
		return "integer " + n.Value
	case "!!float":
		return "number " + n.Value
	case "!!bool":
		return "boolean " + n.Value
	case "!!null":
		return "null"
	case "!!timestamp":
		return "timestamp " + n.Value
	default:
		return fmt.Sprintf("%s %q", tag, n.Value)
	}
}

// field is one key of a mapping, its value with aliases resolved.
type field struct {
	name string
	key  *yaml.Node
	val  *yaml.Node
	path string // e.g. "web.healthcheck.interval", for messages
}

// fields returns the entries of the mapping n in document order. Merge
// keys (<<) are expanded, with keys written out winning over merged ones.
// Duplicate keys are errors. When valid is not nil, keys outside it are
// errors too, with the closest valid key suggested.
func (l *loader) fields(n *yaml.Node, path string, valid []string) []field {
	return l.collect(n, path, valid, map[*yaml.Node]bool{n: true})
}

func (l *loader) collect(n *yaml.Node, path string, valid []string, visited map[*yaml.Node]bool) []field {
	var out []field
	seen := map[string]*yaml.Node{}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		name, ok := l.keyName(k, path)
		if !ok {
			continue
		}
		if first, dup := seen[name]; dup {
			l.fail(k, "", "%s: duplicate key (first at line %d)", join(path, name), first.Line)
			continue
		}
		seen[name] = k
		if valid != nil && !slices.Contains(valid, name) {
			l.fail(k, unknownKeyHint(name, valid), "%s: unknown key", join(path, name))
			continue
		}
		out = append(out, field{name: name, key: k, val: v, path: join(path, name)})
	}
	// Merged entries come after, so an explicit key always wins; among
	// merged mappings the first to name a key wins, as YAML specifies.
	for _, m := range merges {
		for _, f := range l.merged(m, path, valid, visited) {
			if _, dup := seen[f.name]; dup {
				continue
			}
			seen[f.name] = f.key
			out = append(out, f)
		}
	}
	return out
}

// merged returns the fields a merge key's value brings in: a mapping or a
// list of mappings. Each mapping is expanded once, however often it is
// merged, so chained merges cannot blow up.
func (l *loader) merged(v *yaml.Node, path string, valid []string, visited map[*yaml.Node]bool) []field {
	var maps []*yaml.Node
	switch v.Kind {
	case yaml.MappingNode:
		maps = []*yaml.Node{v}
	case yaml.SequenceNode:
		for _, c := range v.Content {
			maps = append(maps, deref(c))
		}
	default:
		l.fail(v, "", "%s: merge key (<<) expects a mapping or a list of mappings, got %s", join(path, "<<"), describe(v))
		return nil
	}
	var out []field
	for _, m := range maps {
		if m.Kind != yaml.MappingNode {
			l.fail(m, "", "%s: merge key (<<) expects a mapping, got %s", join(path, "<<"), describe(m))
			continue
		}
		if visited[m] {
			continue
		}
		visited[m] = true
		out = append(out, l.collect(m, path, valid, visited)...)
	}
	return out
}

func (l *loader) keyName(k *yaml.Node, path string) (string, bool) {
	if k.Kind != yaml.ScalarNode {
		l.fail(k, "", "%s: a key must be a plain string, got %s", orTop(path), describe(k))
		return "", false
	}
	if k.Value == "" || k.ShortTag() == "!!null" {
		l.fail(k, "", "%s: empty key", orTop(path))
		return "", false
	}
	return k.Value, true
}

// composeTwins are compose keys that rollcall spells differently.
var composeTwins = map[string]string{"services": "workloads"}

func unknownKeyHint(name string, valid []string) string {
	hint := "valid keys: " + strings.Join(valid, ", ")
	if twin, ok := composeTwins[name]; ok && slices.Contains(valid, twin) {
		hint = fmt.Sprintf("rollcall calls this %q; %s", twin, hint)
	} else if s := closest(name, valid); s != "" {
		hint = fmt.Sprintf("did you mean %q? %s", s, hint)
	}
	return hint
}

// closest is the valid key within edit distance 2 of name, or "".
func closest(name string, valid []string) string {
	best, bestD := "", 3
	for _, v := range valid {
		if d := levenshtein(strings.ToLower(name), v); d < bestD {
			best, bestD = v, d
		}
	}
	return best
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// mapping checks that n is a mapping; null counts as absent to the caller.
func (l *loader) mapping(n *yaml.Node, path string) bool {
	if n.Kind != yaml.MappingNode {
		l.fail(n, "", "%s: expected a mapping, got %s", path, describe(n))
		return false
	}
	return true
}

// str reads a string; numbers and booleans are rejected, so a typo such as
// `image: 3` is caught.
func (l *loader) str(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		l.fail(n, "", "%s: expected a string, got %s", path, describe(n))
		return "", false
	}
	return n.Value, true
}

// text reads any non-null scalar as the text it is written with, so
// `version: 2` is "2" and `version: 2.10` stays "2.10".
func (l *loader) text(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		l.fail(n, "", "%s: expected a string, got %s", path, describe(n))
		return "", false
	}
	switch n.ShortTag() {
	case "!!str", "!!int", "!!float", "!!bool", "!!timestamp":
		return n.Value, true
	}
	l.fail(n, "", "%s: expected a string, got %s", path, describe(n))
	return "", false
}

// integer reads an int the way the YAML library reads one (0x10, 1_000).
func (l *loader) integer(n *yaml.Node, path string) (int, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		hint := ""
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && spec.IsDigits(strings.TrimPrefix(n.Value, "-")) {
			hint = "remove the quotes"
		}
		l.fail(n, hint, "%s: expected an integer, got %s", path, describe(n))
		return 0, false
	}
	var i int
	if err := n.Decode(&i); err != nil {
		l.fail(n, "", "%s: integer %s is out of range", path, n.Value)
		return 0, false
	}
	return i, true
}

func (l *loader) boolean(n *yaml.Node, path string) (bool, bool) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
		l.fail(n, "", "%s: expected true or false, got %s", path, describe(n))
		return false, false
	}
	var b bool
	if err := n.Decode(&b); err != nil {
		l.fail(n, "", "%s: expected true or false, got %s", path, describe(n))
		return false, false
	}
	return b, true
}

// oneOf reads a string that must be one of choices.
func (l *loader) oneOf(n *yaml.Node, path string, choices ...string) (string, bool) {
	s, ok := l.str(n, path)
	if !ok {
		return "", false
	}
	if !slices.Contains(choices, s) {
		l.fail(n, "one of: "+strings.Join(choices, ", "), "%s: unknown value %q", path, s)
		return "", false
	}
	return s, true
}

// list checks that n is a sequence and returns its items, aliases resolved.
func (l *loader) list(n *yaml.Node, path string) ([]*yaml.Node, bool) {
	if n.Kind != yaml.SequenceNode {
		l.fail(n, "", "%s: expected a list, got %s", path, describe(n))
		return nil, false
	}
	items := make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		items[i] = deref(c)
	}
	return items, true
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

func orTop(path string) string {
	if path == "" {
		return "document"
	}
	return path
}
