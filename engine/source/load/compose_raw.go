package load

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// rawTree is a compose file as written. compose-go keeps no positions, so
// findings about the loaded project are placed by looking their attribute
// up here. Attributes that came from elsewhere (extends, include, a merge
// of another file) are not found: a finding then sits at the nearest
// ancestor that is, at worst at 1:1.
type rawTree struct{ root *yaml.Node }

// find walks path from the root: a mapping key at each step, or a list
// index given as a number. It returns the key and value nodes of the
// deepest step it could take (the key is nil for a list item), both nil
// when it could take none.
func (r rawTree) find(path ...string) (key, val *yaml.Node) {
	n := r.root
	for _, step := range path {
		if n == nil {
			break
		}
		switch n.Kind {
		case yaml.MappingNode:
			k, v := lookup(n, step, map[*yaml.Node]bool{})
			if v == nil {
				return key, val
			}
			key, val, n = k, v, v
		case yaml.SequenceNode:
			i, err := strconv.Atoi(step)
			if err != nil || i < 0 || i >= len(n.Content) {
				return key, val
			}
			key, val = nil, deref(n.Content[i])
			n = val
		default:
			return key, val
		}
	}
	return key, val
}

// get is find for an attribute that must be there: both nil unless the
// whole path was found.
func (r rawTree) get(path ...string) (key, val *yaml.Node) {
	n := r.root
	for _, step := range path {
		if n == nil {
			return nil, nil
		}
		k, v := rawTree{n}.find(step)
		if v == nil || (k == nil && n.Kind == yaml.MappingNode) {
			return nil, nil
		}
		key, val, n = k, v, v
	}
	return key, val
}

// findDotted is find for a path split on dots, as compose-go writes paths
// in its messages, where a service name may hold dots of its own: at each
// mapping it takes the longest run of parts that names a key.
func (r rawTree) findDotted(parts []string) (key, val *yaml.Node) {
	n := r.root
	for i := 0; i < len(parts) && n != nil; {
		step := 1
		if n.Kind == yaml.MappingNode {
			for j := len(parts); j > i+1; j-- {
				if _, v := lookup(n, strings.Join(parts[i:j], "."), map[*yaml.Node]bool{}); v != nil {
					step = j - i
					break
				}
			}
		}
		k, v := rawTree{n}.find(strings.Join(parts[i:i+step], "."))
		if v == nil {
			break
		}
		key, val, n = k, v, v
		i += step
	}
	return key, val
}

// lookup finds name among the keys of the mapping n, then in what its merge
// keys (<<) bring in.
func lookup(n *yaml.Node, name string, visited map[*yaml.Node]bool) (key, val *yaml.Node) {
	if visited[n] {
		return nil, nil
	}
	visited[n] = true
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind == yaml.ScalarNode && k.Value == name {
			return k, v
		}
	}
	for _, m := range merges {
		maps := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			maps = maps[:0]
			for _, c := range m.Content {
				maps = append(maps, deref(c))
			}
		}
		for _, mm := range maps {
			if mm.Kind == yaml.MappingNode {
				if k, v := lookup(mm, name, visited); v != nil {
					return k, v
				}
			}
		}
	}
	return nil, nil
}
