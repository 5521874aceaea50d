package load

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	composetypes "github.com/compose-spec/compose-go/v2/types"
	yaml "go.yaml.in/yaml/v3"
)

// mounts maps a service's volumes, tmpfs, configs and secrets onto
// rollcall's long mount syntax, each placed where the compose file has it.
// A config or secret from a file is a read-only bind mount at compose's
// target, as `docker compose` mounts it on one host.
func (c *composeMap) mounts(service string, s composetypes.ServiceConfig) *yaml.Node {
	out := &yaml.Node{Kind: yaml.SequenceNode}
	written := "" // the compose attribute of the next item, for messages
	item := func(at *yaml.Node, fields ...any) {
		m := placeAt(&yaml.Node{Kind: yaml.MappingNode}, at)
		for i := 0; i+1 < len(fields); i += 2 {
			var v *yaml.Node
			switch x := fields[i+1].(type) {
			case string:
				if x == "" {
					continue
				}
				v = strNode(x)
			case bool:
				if !x {
					continue
				}
				v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"}
			case int64:
				if x == 0 {
					continue
				}
				v = intNode(x)
			}
			m.Content = append(m.Content, placeAt(strNode(fields[i].(string)), at), placeAt(v, at))
		}
		c.renames[fmt.Sprintf("%s.volumes[%d]", service, len(out.Content))] = fmt.Sprintf("services.%s.%s", service, written)
		out.Content = append(out.Content, m)
	}
	for i, v := range s.Volumes {
		at := c.itemAt(service, "volumes", i)
		switch v.Type {
		case composetypes.VolumeTypeBind, composetypes.VolumeTypeVolume, composetypes.VolumeTypeTmpfs:
		default:
			c.l.fail(at, "rollcall mounts binds, volumes and tmpfs", "services.%s.volumes[%d]: type %s: rollcall does not mount it", service, i, v.Type)
			continue
		}
		c.warnMountOptions(service, i, at, v)
		var size int64
		if v.Tmpfs != nil {
			size = int64(v.Tmpfs.Size)
		}
		written = fmt.Sprintf("volumes[%d]", i)
		if v.Type == composetypes.VolumeTypeBind {
			_, raw := c.raw.find("services", service, "volumes", strconv.Itoa(i))
			c.swarmRelativeBind(at, writtenSource(raw), fmt.Sprintf("services.%s.%s", service, written))
		}
		item(at, "type", v.Type, "source", v.Source, "target", v.Target, "read_only", v.ReadOnly, "size", size)
	}
	for i, t := range s.Tmpfs {
		written = fmt.Sprintf("tmpfs[%d]", i)
		at := c.itemAt(service, "tmpfs", i)
		target, size := c.tmpfsOptions(service, i, at, t)
		item(at, "type", "tmpfs", "target", target, "size", size)
	}
	for i, ref := range s.Configs {
		def, ok := c.project.Configs[ref.Source]
		c.fileMount(service, "configs", i, composetypes.FileReferenceConfig(ref), composetypes.FileObjectConfig(def), ok, "/"+ref.Source, &written, item)
	}
	for i, ref := range s.Secrets {
		def, ok := c.project.Secrets[ref.Source]
		c.fileMount(service, "secrets", i, composetypes.FileReferenceConfig(ref), composetypes.FileObjectConfig(def), ok, "/run/secrets/"+ref.Source, &written, item)
	}
	if len(out.Content) == 0 {
		return nil
	}
	return out
}

// fileMount maps one config or secret that a file holds onto a read-only
// bind mount; one from the environment, inline content or an external one
// is refused, with what to do instead.
func (c *composeMap) fileMount(service, kind string, i int, ref composetypes.FileReferenceConfig, def composetypes.FileObjectConfig, ok bool,
	target string, written *string, item func(*yaml.Node, ...any)) {
	at := c.itemAt(service, kind, i)
	switch {
	case !ok:
		return // compose-go refuses an undefined one
	case bool(def.External):
		c.l.fail(at, "write it to a file and use file:", "services.%s.%s[%d]: %s is external: a Swarm %s; rollcall mounts files", service, kind, i, ref.Source, kind[:len(kind)-1])
		return
	case def.File == "":
		c.l.fail(at, fmt.Sprintf("write it to a file and declare it with file: under the top-level %s", kind),
			"services.%s.%s[%d]: %s comes from the environment or inline content; rollcall mounts %s from files only", service, kind, i, ref.Source, kind)
		return
	}
	switch {
	case ref.Target == "":
	case path.IsAbs(ref.Target):
		target = ref.Target
	case kind == "secrets":
		target = "/run/secrets/" + ref.Target
	default:
		target = "/" + ref.Target
	}
	if ref.UID != "" || ref.GID != "" || ref.Mode != nil {
		c.l.warn(at, "set the file's owner and mode on the host", "services.%s.%s[%d]: uid, gid and mode ignored: the bind mount keeps the host file's", service, kind, i)
	}
	*written = fmt.Sprintf("%s[%d]", kind, i)
	if _, file := c.raw.get(kind, ref.Source, "file"); file != nil {
		c.swarmRelativeBind(at, file.Value, fmt.Sprintf("services.%s.%s", service, *written))
	}
	item(at, "type", "bind", "source", def.File, "target", target, "read_only", true)
}

// tmpfsOptions reads an item of tmpfs:, "PATH[:OPTIONS]" as the engine
// takes it (/run:size=16m,mode=1777): the target, and the size; an invalid
// size is an error, the other options are warned of (the engine's defaults
// apply).
func (c *composeMap) tmpfsOptions(service string, i int, at *yaml.Node, t string) (target string, size int64) {
	target, opts, _ := strings.Cut(t, ":")
	var ignored []string
	for _, o := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(o, "=")
		switch {
		case o == "":
		case k == "size":
			n, p := parseSize(v)
			if p != nil {
				c.l.fail(at, p.hint, "services.%s.tmpfs[%d]: %s", service, i, p.msg)
				continue
			}
			size = n
		default:
			ignored = append(ignored, o)
		}
	}
	if len(ignored) > 0 {
		c.l.warn(at, "the engine's defaults apply", "services.%s.tmpfs[%d]: %v ignored", service, i, ignored)
	}
	return target, size
}

// warnMountOptions warns of the mount options rollcall leaves to the engine.
func (c *composeMap) warnMountOptions(service string, i int, at *yaml.Node, v composetypes.ServiceVolumeConfig) {
	var ignored []string
	if v.Consistency != "" {
		ignored = append(ignored, "consistency")
	}
	if b := v.Bind; b != nil && b.Propagation != "" {
		ignored = append(ignored, "bind.propagation")
	}
	if b := v.Bind; b != nil && b.SELinux != "" {
		ignored = append(ignored, "bind.selinux")
	}
	if vo := v.Volume; vo != nil && vo.NoCopy {
		ignored = append(ignored, "volume.nocopy")
	}
	if vo := v.Volume; vo != nil && vo.Subpath != "" {
		ignored = append(ignored, "volume.subpath")
	}
	if t := v.Tmpfs; t != nil && t.Mode != 0 {
		ignored = append(ignored, "tmpfs.mode")
	}
	if len(ignored) > 0 {
		c.l.warn(at, "the engine's defaults apply", "services.%s.volumes[%d]: %v ignored", service, i, ignored)
	}
}

// itemAt is where the compose file has item i of a service's list
// attribute, or the attribute when it is not a list of items.
func (c *composeMap) itemAt(service, attr string, i int) *yaml.Node {
	k, v := c.raw.find("services", service, attr, strconv.Itoa(i))
	return placeAt(&yaml.Node{}, v, k)
}

// volumes maps the top-level volumes a service mounts onto rollcall's,
// with compose's names (<project>_<key>, or name:); on a swarm, as
// docker stack deploy names them, <prefix>_<key> (the prefix is the
// stack's name), or name:.
func (c *composeMap) volumes() *yaml.Node {
	used := map[string]bool{}
	for _, s := range c.project.Services {
		for _, v := range s.Volumes {
			if v.Type == composetypes.VolumeTypeVolume && v.Source != "" {
				used[v.Source] = true
			}
		}
	}
	if len(used) == 0 {
		return nil
	}
	out := &yaml.Node{Kind: yaml.MappingNode}
	for _, key := range slices.Sorted(maps.Keys(used)) {
		def, ok := c.project.Volumes[key]
		if !ok {
			continue // compose-go refuses an undefined one
		}
		k, v := c.raw.find("volumes", key)
		val := placeAt(&yaml.Node{Kind: yaml.MappingNode}, v, k)
		field := func(name string, n *yaml.Node) {
			val.Content = append(val.Content, placeAt(strNode(name), k), placeAt(n, v, k))
		}
		if _, named := c.raw.get("volumes", key, "name"); !c.swarm || named != nil || bool(def.External) {
			field("name", strNode(def.Name))
		} // else <prefix>_<key> (swarmVolumeName)
		if def.External {
			field("external", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
		}
		if def.Driver != "" {
			field("driver", strNode(def.Driver))
		}
		if len(def.DriverOpts) > 0 {
			opts := &yaml.Node{Kind: yaml.MappingNode}
			for _, o := range slices.Sorted(maps.Keys(def.DriverOpts)) {
				opts.Content = append(opts.Content, placeAt(strNode(o), k), placeAt(strNode(def.DriverOpts[o]), k))
			}
			field("driver_opts", opts)
		}
		out.Content = append(out.Content, placeAt(strNode(key), k), val)
	}
	return out
}
