package load

import (
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// dependRef is one depends_on entry read, for the document-wide checks
// (checkDepends): the name must be a workload, and no cycle may form.
type dependRef struct {
	from, to string
	node     *yaml.Node
	path     string
}

var dependKeys = []string{"condition"}

// dependsOn reads depends_on: a list of workload names (each
// condition started), or a mapping of each name to null (started) or
// {condition: started|healthy|completed}.
func (l *loader) dependsOn(f field, workload string) []spec.Dependency {
	var out []spec.Dependency
	add := func(node *yaml.Node, path, name, cond string) {
		switch {
		case name == "":
			l.fail(node, "", "%s: empty workload name", path)
		case slices.ContainsFunc(out, func(d spec.Dependency) bool { return d.Workload == name }):
			l.fail(node, "", "%s: %q is listed twice", path, name)
		default:
			out = append(out, spec.Dependency{Workload: name, Condition: cond})
			l.depends = append(l.depends, dependRef{from: workload, to: name, node: node, path: path})
		}
	}
	switch f.val.Kind {
	case yaml.SequenceNode:
		items, _ := l.list(f.val, f.path)
		for i, item := range items {
			if s, ok := l.str(item, index(f.path, i)); ok {
				add(item, index(f.path, i), s, spec.DependStarted)
			}
		}
	case yaml.MappingNode:
		for _, g := range l.fields(f.val, f.path, nil) {
			cond := spec.DependStarted
			if !isNull(g.val) && l.mapping(g.val, g.path) {
				for _, h := range l.fields(g.val, g.path, dependKeys) {
					if c, ok := l.oneOf(h.val, h.path, spec.DependStarted, spec.DependHealthy, spec.DependCompleted); ok {
						cond = c
					}
				}
			}
			add(g.key, g.path, g.name, cond)
		}
	default:
		l.fail(f.val, "e.g. [db], or {db: {condition: healthy}}", "%s: expected a list or a mapping, got %s", f.path, describe(f.val))
	}
	return out
}

// checkDepends checks every depends_on entry against the document: it
// names a workload of it, and no workload depends on itself, however
// indirectly (each cycle is an error at the entry that closes it).
func (l *loader) checkDepends(d *spec.Desired) {
	edges := map[string][]dependRef{}
	for _, r := range l.depends {
		if d.Workloads[r.to] == nil {
			l.fail(r.node, "depends_on names workloads of this file: "+strings.Join(d.Names(), ", "),
				"%s: unknown workload %q", r.path, r.to)
			continue
		}
		edges[r.from] = append(edges[r.from], r)
	}
	// A workload another waits for to complete is a one-shot job.
	for _, name := range d.Names() {
		for _, dep := range d.Workloads[name].DependsOn {
			if w := d.Workloads[dep.Workload]; w != nil && dep.Condition == spec.DependCompleted {
				w.Job = true
				// The engine must not start it again once it is done:
				// rollcall itself restarts one that failed.
				if w.Restart == "always" || w.Restart == "unless-stopped" {
					w.Restart = "no"
				}
			}
		}
	}
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = onPath
		path = append(path, name)
		for _, r := range edges[name] {
			switch state[r.to] {
			case unseen:
				visit(r.to)
			case onPath:
				cycle := append(slices.Clone(path[slices.Index(path, r.to):]), r.to)
				l.fail(r.node, "a workload cannot wait, however indirectly, for itself: drop one of these depends_on entries",
					"%s: dependency cycle: %s", r.path, strings.Join(cycle, " → "))
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	for _, name := range d.Names() {
		if state[name] == unseen {
			visit(name)
		}
	}
}
