package load

import (
	"fmt"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// maxAliasNodes bounds how many nodes aliases may add to a document once
// they are followed. Anchors that share an environment between a few
// workloads add hundreds; 5,000 keys behind one anchor aliased by 2,000
// workloads would add ten million from 300 KB of text, and take the
// process to gigabytes.
const maxAliasNodes = 100_000

// aliasBudget refuses, before anything follows an alias, a document whose
// aliases expand it by more than maxAliasNodes nodes, and an alias inside
// the node its anchor names, which would never end. The error is at the
// alias that goes over.
//
// The node tree is walked once; the expanded size of each anchored node is
// computed once and capped, so the check itself stays linear in the text.
func aliasBudget(file string, root *yaml.Node) *spec.Error {
	b := &budget{file: file, size: map[*yaml.Node]int{}}
	b.walk(root)
	return b.err
}

type budget struct {
	file  string
	size  map[*yaml.Node]int // expanded size of a node; 0 while it is being sized
	added int                // nodes the aliases walked so far add
	err   *spec.Error
}

// walk visits every node written in the text once, adding up what each
// alias brings in.
func (b *budget) walk(n *yaml.Node) {
	if n == nil || b.err != nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		b.added += b.sized(n, n.Alias) - 1
		if b.err == nil && b.added > maxAliasNodes {
			b.err = b.at(n, "anchors are for sharing a few keys, not for multiplying the document: write the repeated part out where it is needed",
				"aliases expand the document by more than %d nodes; refused (the limit keeps a small file from growing to gigabytes)", maxAliasNodes)
		}
		return
	}
	for _, c := range n.Content {
		b.walk(c)
	}
}

// sized is the expanded size of n, reached through the alias at: at most
// maxAliasNodes+1.
func (b *budget) sized(at, n *yaml.Node) int {
	if n == nil || b.err != nil {
		return 1
	}
	if s, ok := b.size[n]; ok {
		if s == 0 {
			b.err = b.at(at, "an anchored node cannot contain an alias to itself",
				"alias *%s refers to a node that contains it", at.Value)
			return 1
		}
		return s
	}
	b.size[n] = 0
	s := 1
	if n.Kind == yaml.AliasNode {
		s = b.sized(n, n.Alias)
	}
	for _, c := range n.Content {
		s = min(s+b.sized(c, c), maxAliasNodes+1)
	}
	b.size[n] = s
	return s
}

func (b *budget) at(n *yaml.Node, hint, format string, args ...any) *spec.Error {
	e := &spec.Error{File: b.file, Line: 1, Col: 1, Msg: fmt.Sprintf(format, args...), Hint: hint}
	if n.Line > 0 {
		e.Line, e.Col = n.Line, max(n.Column, 1)
	}
	return e
}
