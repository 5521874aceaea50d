package load

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
	yaml "go.yaml.in/yaml/v3"
)

// volumeNameRE is the engine's rule for a volume name.
var volumeNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9_.-]*$`)

var (
	volumeKeys    = []string{"name", "driver", "driver_opts", "external"}
	mountKeys     = []string{"type", "source", "target", "read_only", "size"}
	mountTypes    = []string{string(spec.MountBind), string(spec.MountVolume), string(spec.MountTmpfs)}
	mountLongHint = "e.g. pgdata:/var/lib/postgresql/data, ./nginx.conf:/etc/nginx/nginx.conf:ro, or {type: tmpfs, target: /tmp}"
)

// readVolumes reads the top-level volumes: key -> {name, driver,
// driver_opts, external}, or null for the defaults.
func (l *loader) readVolumes(f field) map[string]*spec.Volume {
	if isNull(f.val) {
		return nil
	}
	if !l.mapping(f.val, f.path) {
		return nil
	}
	out := map[string]*spec.Volume{}
	for _, g := range l.fields(f.val, f.path, nil) {
		v := &spec.Volume{Key: g.name, Name: l.prefix + "_" + g.name, Line: g.key.Line, Col: g.key.Column}
		if !volumeNameRE.MatchString(g.name) {
			l.fail(g.key, "letters, digits, '_', '.' and '-', starting with a letter or digit", "%s: invalid volume key %q", g.path, g.name)
			continue
		}
		if !isNull(g.val) && l.mapping(g.val, g.path) {
			for _, h := range l.fields(g.val, g.path, volumeKeys) {
				if isNull(h.val) {
					continue
				}
				switch h.name {
				case "name":
					if s, ok := l.str(h.val, h.path); ok && !volumeNameRE.MatchString(s) {
						l.fail(h.val, "letters, digits, '_', '.' and '-', starting with a letter or digit", "%s: invalid volume name %q", h.path, s)
					} else if ok {
						v.Name = s
					}
				case "driver":
					v.Driver, _ = l.str(h.val, h.path)
				case "driver_opts":
					v.DriverOpts = l.keyValues(h, true)
				case "external":
					v.External, _ = l.boolean(h.val, h.path)
				}
			}
		}
		if v.External && (v.Driver != "" || len(v.DriverOpts) > 0) {
			l.fail(g.key, "rollcall never creates an external volume; drop driver and driver_opts", "%s: external with a driver", g.path)
		}
		out[g.name] = v
	}
	return out
}

// mounts reads a workload's volumes: short "SOURCE:TARGET[:ro|rw]", a bare
// "TARGET" (the slot's own volume), or long {type, source, target,
// read_only, size}.
func (l *loader) mounts(f field) []spec.Mount {
	items, ok := l.list(f.val, f.path)
	if !ok {
		return nil
	}
	var out []spec.Mount
	for i, item := range items {
		path := index(f.path, i)
		var m spec.Mount
		var ok bool
		if item.Kind == yaml.ScalarNode {
			m, ok = l.shortMount(item, path)
		} else {
			m, ok = l.longMount(item, path)
		}
		if !ok {
			continue
		}
		if m.Type == spec.MountVolume && m.Source == "" && l.engine == spec.EngineSwarm {
			swarmAnonymousVolume.refuse(l, item, path)
			continue
		}
		m.Line, m.Col = item.Line, item.Column
		out = append(out, m)
	}
	return out
}

func (l *loader) shortMount(n *yaml.Node, path string) (spec.Mount, bool) {
	s, ok := l.str(n, path)
	if !ok {
		return spec.Mount{}, false
	}
	parts := strings.Split(s, ":")
	m := spec.Mount{Type: spec.MountVolume}
	switch len(parts) {
	case 1:
		m.Target = parts[0]
	case 2, 3:
		m.Source, m.Target = parts[0], parts[1]
		if len(parts) == 3 {
			switch parts[2] {
			case "ro":
				m.ReadOnly = true
			case "rw":
			default:
				l.fail(n, "the mode is ro or rw", "%s: mode %q: rollcall honours ro and rw", path, parts[2])
				return spec.Mount{}, false
			}
		}
		if m.Source == "" {
			l.fail(n, mountLongHint, "%s: empty source in %q", path, s)
			return spec.Mount{}, false
		}
		if isHostPath(m.Source) {
			m.Type = spec.MountBind
		}
	default:
		l.fail(n, mountLongHint, "%s: %q is not SOURCE:TARGET[:ro]", path, s)
		return spec.Mount{}, false
	}
	return l.checkMount(n, path, m)
}

// isHostPath says a short syntax source is a host path, as compose reads
// it: an absolute or relative path, or one from the home directory.
func isHostPath(s string) bool {
	return strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~")
}

func (l *loader) longMount(n *yaml.Node, path string) (spec.Mount, bool) {
	if !l.mapping(n, path) {
		return spec.Mount{}, false
	}
	var m spec.Mount
	var typeNode, sizeNode *yaml.Node
	for _, g := range l.fields(n, path, mountKeys) {
		if isNull(g.val) {
			continue
		}
		switch g.name {
		case "type":
			if t, ok := l.oneOf(g.val, g.path, mountTypes...); ok {
				m.Type = spec.MountType(t)
				typeNode = g.val
			}
		case "source":
			m.Source, _ = l.str(g.val, g.path)
		case "target":
			m.Target, _ = l.str(g.val, g.path)
		case "read_only":
			m.ReadOnly, _ = l.boolean(g.val, g.path)
		case "size":
			sizeNode = g.val
			m.Size = l.size(g)
		}
	}
	if typeNode == nil {
		l.fail(n, "type is bind, volume or tmpfs", "%s: type is required", path)
		return spec.Mount{}, false
	}
	if sizeNode != nil && m.Type != spec.MountTmpfs {
		l.fail(sizeNode, "size is a tmpfs's", "%s: size on a %s mount", path, m.Type)
		return spec.Mount{}, false
	}
	return l.checkMount(n, path, m)
}

// checkMount checks a mount read in either syntax and resolves a bind
// source against the file's directory.
func (l *loader) checkMount(n *yaml.Node, path string, m spec.Mount) (spec.Mount, bool) {
	if m.Target == "" || !strings.HasPrefix(m.Target, "/") {
		l.fail(n, "the target is an absolute path in the container", "%s: target %q is not an absolute path", path, m.Target)
		return spec.Mount{}, false
	}
	m.Target = filepath.Clean(m.Target)
	if m.Target == "/" {
		l.fail(n, "mount below /, e.g. /data", "%s: target / would cover the whole image", path)
		return spec.Mount{}, false
	}
	switch m.Type {
	case spec.MountTmpfs:
		if m.Source != "" {
			l.fail(n, "a tmpfs has no source", "%s: tmpfs with source %q", path, m.Source)
			return spec.Mount{}, false
		}
	case spec.MountBind:
		src, ok := l.bindSource(n, path, m.Source)
		if !ok {
			return spec.Mount{}, false
		}
		m.Source = src
	case spec.MountVolume:
		if m.Source != "" && !volumeNameRE.MatchString(m.Source) {
			l.fail(n, "a volume source is a key of the top-level volumes; a host path starts with /, ./ or ../", "%s: invalid volume %q", path, m.Source)
			return spec.Mount{}, false
		}
	}
	return m, true
}

// bindSource makes a bind source absolute, relative to the file's
// directory, and checks that it exists here: the engine would create a
// missing one as an empty directory, and a config file would be a
// directory. The path is this machine's: with hosts:, each host's own
// path, which its engine checks at create (the check is left out).
func (l *loader) bindSource(n *yaml.Node, path, src string) (string, bool) {
	if src == "" {
		l.fail(n, "the source is a host path", "%s: bind mount without a source", path)
		return "", false
	}
	written := src
	defer func() {
		if l.engine == spec.EngineSwarm && !filepath.IsAbs(written) {
			l.relativeBind(n, path, written)
		}
	}()
	if strings.HasPrefix(src, "~") {
		home, err := os.UserHomeDir()
		if err != nil || (src != "~" && !strings.HasPrefix(src, "~/")) {
			l.fail(n, "write the path from / instead", "%s: cannot expand %q", path, src)
			return "", false
		}
		src = filepath.Join(home, strings.TrimPrefix(src, "~"))
	}
	if !filepath.IsAbs(src) {
		if strings.Contains(l.file, "://") || strings.HasPrefix(l.file, "<") {
			l.fail(n, "write the host path from /", "%s: relative bind source %q in a file that is not on this machine's disk", path, src)
			return "", false
		}
		abs, err := filepath.Abs(filepath.Join(filepath.Dir(l.file), src))
		if err != nil {
			l.fail(n, "write the host path from /", "%s: cannot resolve %q: %v", path, src, err)
			return "", false
		}
		src = abs
	}
	src = filepath.Clean(src)
	l.binds = append(l.binds, bindCheck{n, path, src})
	return src, true
}

// bindCheck is a bind source to look for once the document is read (and
// it is known whether it names hosts).
type bindCheck struct {
	n         *yaml.Node
	path, src string
}

// statBindSource is os.Stat; the corpus test (corpus_test.go) swaps it so
// that its goldens do not depend on the machine's paths.
var statBindSource = os.Stat

// checkBindSources looks for every bind source on this machine, unless the
// document names hosts, whose engines have paths of their own, or runs on a
// swarm, whose nodes do.
func (l *loader) checkBindSources(d *spec.Desired) {
	if len(d.Hosts) > 0 || d.OnSwarm() {
		return
	}
	for _, b := range l.binds {
		if _, err := statBindSource(b.src); err != nil {
			hint := "create it first: the engine would make a missing source an empty directory"
			if !os.IsNotExist(err) {
				hint = ""
			}
			l.fail(b.n, hint, "%s: bind source %s: %v", b.path, b.src, errorWords(err))
		}
	}
}

// errorWords is an os error without the path it repeats.
func errorWords(err error) string {
	if pe, ok := err.(*os.PathError); ok {
		if os.IsNotExist(err) {
			return "does not exist"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// tmpfs reads the tmpfs key: one target, or a list of them.
func (l *loader) tmpfs(f field) []spec.Mount {
	var nodes []*yaml.Node
	if f.val.Kind == yaml.ScalarNode {
		nodes = []*yaml.Node{f.val}
	} else if items, ok := l.list(f.val, f.path); ok {
		nodes = items
	}
	var out []spec.Mount
	for i, n := range nodes {
		path := index(f.path, i)
		s, ok := l.str(n, path)
		if !ok {
			continue
		}
		target, opts, _ := strings.Cut(s, ":")
		m := spec.Mount{Type: spec.MountTmpfs, Target: target}
		for _, o := range strings.Split(opts, ",") {
			k, v, _ := strings.Cut(o, "=")
			switch {
			case o == "":
			case k == "size":
				if b, p := parseSize(v); p != nil {
					l.fail(n, p.hint, "%s: %s", path, p.msg)
					ok = false
				} else {
					m.Size = b
				}
			default:
				l.fail(n, "rollcall honours size=, e.g. /tmp:size=64m", "%s: tmpfs option %q", path, o)
				ok = false
			}
		}
		if !ok {
			continue
		}
		if m, ok := l.checkMount(n, path, m); ok {
			m.Line, m.Col = n.Line, n.Column
			out = append(out, m)
		}
	}
	return out
}

// checkMounts ties every workload's named volumes to the top-level
// volumes, and finds two mounts at one target. On a swarm, a written
// volume of the local driver that no placement constraint pins is warned
// of (swarmNamedVolume).
func (l *loader) checkMounts(d *spec.Desired) {
	for _, name := range d.Names() {
		w := d.Workloads[name]
		targets := map[string]bool{}
		for i := range w.Mounts {
			m := &w.Mounts[i]
			at := &yaml.Node{Line: m.Line, Column: m.Col}
			if targets[m.Target] {
				l.fail(at, "one mount per target", "%s.volumes: %s is mounted twice", name, m.Target)
			}
			targets[m.Target] = true
			if m.Type != spec.MountVolume || m.Source == "" {
				continue
			}
			v, ok := d.Volumes[m.Source]
			if !ok {
				hint := fmt.Sprintf("declare it at the top level: volumes: {%s: {}}", m.Source)
				if len(d.Volumes) > 0 {
					hint += "; declared: " + strings.Join(slices.Sorted(maps.Keys(d.Volumes)), ", ")
				}
				l.fail(at, hint, "%s.volumes: volume %q is not declared", name, m.Source)
				continue
			}
			m.Volume, m.Def = v.Name, v
			if w.Swarm != nil && !m.ReadOnly && v.Driver == "" && len(w.Swarm.Placement.Constraints) == 0 {
				swarmNamedVolume.notice(l, at, fmt.Sprintf("%s.volumes", name),
					fmt.Sprintf("volume %q is of the local driver: each node has its own, and a task Swarm places on another node finds it empty", m.Source))
			}
		}
	}
}
