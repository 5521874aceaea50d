package load

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	composeloader "github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/template"
	"github.com/compose-spec/compose-go/v2/tree"
	yaml "go.yaml.in/yaml/v3"
)

// unsupported is compose-go's report of the attributes outside
// supportedAttributes; they become warnings once the project is loaded.
func (c *composeMap) unsupported(found []composeloader.UnsupportedAttribute) {
	c.ignored = found
}

// warnIgnored warns of each attribute rollcall ignores, once, and of each
// service that its profiles leave out.
func (c *composeMap) warnIgnored() {
	seen := map[string]bool{}
	for _, a := range c.ignored {
		parts := a.Path.Parts()
		for i, p := range parts {
			parts[i] = strings.ReplaceAll(p, "👻", ".") // compose-go's stand-in for a dot in a key
		}
		if len(parts) > 1 && parts[0] == "services" {
			if _, off := c.project.DisabledServices[parts[1]]; off {
				continue
			}
		}
		shown := strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]")
		if seen[shown] {
			continue
		}
		seen[shown] = true
		find := parts
		if i := slices.Index(parts, tree.PathMatchList); i >= 0 {
			find = parts[:i]
		}
		k, v := c.raw.find(find...)
		hint := ""
		if len(parts) > 2 && parts[0] == "services" {
			hint = ignoredHints[strings.Join(parts[2:], ".")]
		}
		c.l.warn(placeAt(&yaml.Node{}, k, v), hint, "%s: ignored: rollcall does not honour it", shown)
	}
	for _, name := range slices.Sorted(maps.Keys(c.project.DisabledServices)) {
		k, v := c.raw.find("services", name)
		profiles := c.project.DisabledServices[name].Profiles
		hint := "drop profiles: to run it"
		if len(profiles) > 0 {
			hint = "set COMPOSE_PROFILES=" + strings.Join(append(slices.Clone(c.project.Profiles), profiles[0]), ",") + " to run it"
		}
		active := "no profile is active"
		if len(c.project.Profiles) > 0 {
			active = "COMPOSE_PROFILES is " + strings.Join(c.project.Profiles, ",")
		}
		c.l.warn(placeAt(&yaml.Node{}, k, v), hint,
			"services.%s: left out: none of its profiles %v is active (%s), as in compose", name, profiles, active)
	}
}

var (
	namedGroup  = template.DefaultPattern.SubexpIndex("named")
	bracedGroup = template.DefaultPattern.SubexpIndex("braced")
	varNameRE   = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*`)
)

// substitute is compose's interpolation without its logging, noting each
// variable used with no default while not set.
func (c *composeMap) substitute(s string, lookup template.Mapping) (string, error) {
	for _, m := range template.DefaultPattern.FindAllStringSubmatch(s, -1) {
		name := m[namedGroup]
		if braced := m[bracedGroup]; braced != "" {
			name = varNameRE.FindString(braced)
			if name != braced {
				continue // ${X:-default}, ${X?error} and the like say what happens
			}
		}
		if _, ok := lookup(name); name != "" && !ok && !slices.Contains(c.unset, name) {
			c.unset = append(c.unset, name)
		}
	}
	return template.SubstituteWithOptions(s, lookup, template.WithoutLogging)
}

// warnUnset warns of each variable interpolated while not set, at its
// first use in the file.
func (c *composeMap) warnUnset() {
	text := string(c.data)
	for _, name := range c.unset {
		at := &yaml.Node{}
		re := regexp.MustCompile(`\$(\{` + regexp.QuoteMeta(name) + `\}|` + regexp.QuoteMeta(name) + `\b)`)
		if loc := re.FindStringIndex(text); loc != nil {
			at.Line = 1 + strings.Count(text[:loc[0]], "\n")
			at.Column = loc[0] - strings.LastIndex(text[:loc[0]], "\n")
		}
		c.l.warn(at, fmt.Sprintf("set it in the environment or in .env, or give a default: ${%s:-value}", name),
			"variable %s is not set: it reads as an empty string", name)
	}
}
