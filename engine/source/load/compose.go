package load

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/compose-spec/compose-go/v2/dotenv"
	composeloader "github.com/compose-spec/compose-go/v2/loader"
	composetypes "github.com/compose-spec/compose-go/v2/types"
	"github.com/rollcall/rollcall/engine/spec"
	"github.com/sirupsen/logrus"
	yaml "go.yaml.in/yaml/v3"
)

// ComposeFileNames are the names compose looks for, in its order of
// preference. A file of one of these names is read as a compose file.
var ComposeFileNames = []string{"compose.yaml", "compose.yml", "docker-compose.yaml", "docker-compose.yml"}

// IsComposeFile reports whether path names a compose file by its base name.
func IsComposeFile(path string) bool {
	return slices.Contains(ComposeFileNames, filepath.Base(path))
}

// LoadCompose reads the compose file at path and maps it as ParseCompose
// does. A file that cannot be read gives the wrapped os error.
func LoadCompose(path string, environ []string) (*spec.Desired, error) {
	data, err := spec.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read desired state: %w", err)
	}
	return ParseCompose(path, data, environ)
}

// ParseCompose reads a compose file as the desired state: one workload per
// service. name is the file data was read from; its directory is the
// project directory, as compose has it.
//
// Loading is compose's own (compose-go): the variables of environ (KEY=VALUE,
// as os.Environ gives them) and of the project directory's .env file are
// interpolated, the process environment winning as in compose; env_file,
// label_file, extends, include, anchors and merge keys all work.
// COMPOSE_DISABLE_ENV_FILE=true skips .env. Every file the document pulls
// in (.env, env_file, label_file, extends, include) is read under
// ReadFile's rules, as the document is: a FIFO, a device or a file over
// MaxDocumentBytes is an error at the line and column of its reference
// (compose_files.go).
//
// The mapping, compose field -> rollcall.yaml field:
//
//	image                                   image
//	deploy.replicas, or scale               replicas
//	command                                 command
//	environment (and env_file)              environment
//	labels (and label_file)                 labels: the containers' labels
//	ports                                   ports; no host_ip means 127.0.0.1
//	                                        (compose: every interface), and
//	                                        no published port an ephemeral one
//	healthcheck (test, interval, timeout,   healthcheck
//	  retries, start_period, disable)
//	deploy.resources.limits.cpus/memory     resources.cpus/memory
//	  (or the service's cpus/mem_limit)
//	deploy.update_config.parallelism        update.parallelism (0, all at
//	                                        once, reads as the replicas)
//	deploy.update_config.order              update.order
//	deploy.update_config.failure_action     update.failure_action
//	deploy.update_config.monitor            update.health_deadline
//	deploy.update_config.delay              update.delay
//	depends_on (service_started,            depends_on (started, healthy,
//	  service_healthy, ..._successfully)      completed)
//	stop_signal, stop_grace_period          the same
//	restart                                 restart
//	networks                                networks, by name: an external
//	                                        network by its name, any other by
//	                                        its key (rollcall creates none);
//	                                        compose's implicit default network
//	                                        is the engine's default bridge
//
// Whatever the file leaves out gets rollcall's defaults (spec.go), not
// compose's: restart unless-stopped, order start-first. The project name
// names only the volumes and a build-only service's image, as in compose.
// The label prefix is rollcall's unless the
// top-level extension sets it; the proxy, the engine and registry_poll of
// rollcall.yaml go there too (ExtensionKeys):
//
//	x-rollcall:
//	  prefix: shop
//	  proxy: {caddy_admin: "unix:///run/rollcall-caddy/admin.sock"}
//	  registry_poll: 1m
//
// A file that `docker stack deploy` deploys says `x-rollcall: {engine:
// swarm}`, written out (no variable: it decides how the file is read):
// then the deploy keys a swarm has (placement, endpoint_mode, labels,
// restart_policy, reservations, max_failure_ratio, mode) are read too,
// and every key is judged by the swarm's rules (SwarmRules).
//
// The mapped document meets every rule of rollcall.yaml (see Parse), with
// the same messages, located in the compose file: a service name must be a
// DNS label, a fixed host port cannot go with replicas > 1, and so on. A
// service with build: and no image: runs the image compose builds for it,
// <project>-<service> (the project name is COMPOSE_PROJECT_NAME, else the
// file's name:, else the directory's), with a warning: rollcall builds
// nothing, so it is built first (`docker compose build`), and it is never
// pulled (Workload.BuildFirst; pull_policy: build does the same for a
// service with image:). The profiles COMPOSE_PROFILES names (environ or
// .env, comma-separated) are enabled, as compose enables them. Every
// compose field rollcall cannot honour (links, container_name,
// deploy.placement, ...) is a warning that names the service and the
// field; so are a service left out by its profiles (the hint says which
// COMPOSE_PROFILES runs it), a
// variable that is not set, a network that compose would create, and a
// port that compose would publish on every interface. Extension fields
// (x-*) other than x-rollcall are left alone, as compose leaves them.
//
// Errors of compose itself come back in the ErrorList too, with the file
// and, where the message names one, the line of the attribute.
func ParseCompose(name string, data []byte, environ []string) (*spec.Desired, error) {
	if name == "" {
		name = "<input>"
	}
	quietCompose()
	l := &loader{file: name, prefix: spec.DefaultPrefix}
	raw, serr := decodeRaw(name, data)
	if serr != nil {
		return nil, spec.ErrorList{serr}
	}
	dir, err := filepath.Abs(filepath.Dir(name))
	if err != nil {
		dir = filepath.Dir(name)
	}
	env, eerr := composeEnvironment(dir, environ)
	if eerr != nil {
		return nil, spec.ErrorList{eerr}
	}
	c := &composeMap{l: l, raw: rawTree{raw}, data: data, pulled: newPulledIn(name, dir), buildFirst: map[string]bool{}}
	// A file deployed to a swarm has more compose keys (swarm_keys.go):
	// that is known before compose-go reads it.
	c.swarm = c.rawEngine() == string(spec.EngineSwarm)
	// Every file the document pulls in is read through ReadFile, before
	// compose-go sees it (compose_files.go).
	c.pulled.checkPulledIn(raw, dir, env)
	if len(c.pulled.errs) > 0 {
		return nil, c.pulled.errs.Sorted()
	}
	if err := c.load(dir, env); err != nil {
		return nil, spec.ErrorList{c.composeError(err)}
	}
	if errs := c.resolveFiles(); len(errs) > 0 {
		return nil, errs.Sorted()
	}
	root := c.document()
	d := l.document(root)
	for name := range c.buildFirst {
		if w := d.Workloads[name]; w != nil {
			w.BuildFirst = true
		}
	}
	c.renamePaths()
	if len(l.errs) > 0 {
		return nil, l.errs.Sorted()
	}
	d.Warnings = spec.ErrorList(l.warns).Sorted()
	return d, nil
}

// load runs compose's own loader over the file.
func (c *composeMap) load(dir string, env composetypes.Mapping) (err error) {
	defer func() {
		// A bad file must never take the console down, whatever the
		// library does with it.
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot load: %v", r)
		}
	}()
	supported, subtrees := supportedAttributes, acceptedSubtrees
	if c.swarm {
		supported, subtrees = swarmAttributes, swarmSubtrees
	}
	c.project, err = composeloader.LoadWithContext(context.Background(), composetypes.ConfigDetails{
		WorkingDir:  dir,
		ConfigFiles: []composetypes.ConfigFile{{Filename: c.l.file, Content: c.data}},
		Environment: env,
	}, func(o *composeloader.Options) {
		// The project name names the volumes (<project>_<key>), as compose
		// names them: COMPOSE_PROJECT_NAME, else the file's name:, else
		// the directory's name.
		if p := env["COMPOSE_PROJECT_NAME"]; p != "" {
			o.SetProjectName(p, true)
		} else {
			// A directory whose name normalizes to nothing (/) names no
			// project: rollcall's own name stands in.
			o.SetProjectName(cmp.Or(composeloader.NormalizeProjectName(filepath.Base(dir)), spec.DefaultPrefix), false)
		}
		// The profiles compose enables: COMPOSE_PROFILES, from the
		// environment or .env, comma-separated ("*" enables every one).
		o.Profiles = composeProfiles(env)
		o.Interpolate.Substitute = c.substitute
		// env_file and label_file are read by resolveFiles, include and
		// extends files checked by guard first: compose-go's own reads
		// block on a FIFO and run through /dev/zero.
		o.SkipResolveEnvironment = true
		o.SkipResolveLabels = true
		o.ResourceLoaders = []composeloader.ResourceLoader{guard{c.pulled}}
	}, composeloader.WithUnsupportedAttributesCheck(subtrees, c.unsupported),
		composeloader.WithSupportedAttributes(supported, nil))
	return err
}

// composeProfiles are the profiles COMPOSE_PROFILES names, as compose
// reads it: comma-separated, blanks dropped.
func composeProfiles(env composetypes.Mapping) []string {
	var out []string
	for _, p := range strings.Split(env["COMPOSE_PROFILES"], ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

var quietOnce sync.Once

// quietCompose turns off compose-go's logging. It logs a few findings
// through logrus's standard logger straight to stderr, where they would
// tear the console's screen; rollcall uses logrus for nothing else, and the
// findings that matter (an unset variable, the obsolete version key) come
// back as warnings instead.
func quietCompose() {
	quietOnce.Do(func() { logrus.SetOutput(io.Discard) })
}

// decodeRaw parses the compose file with rollcall's YAML library, for the
// positions compose-go does not keep; nil for an empty document.
func decodeRaw(name string, data []byte) (root *yaml.Node, e *spec.Error) {
	defer func() {
		if r := recover(); r != nil {
			root, e = nil, &spec.Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("invalid YAML: %v", r)}
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, syntaxError(name, data, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil
	}
	if e := aliasBudget(name, &doc); e != nil {
		return nil, e
	}
	return deref(doc.Content[0]), nil
}

// composeEnvironment is what interpolation reads: environ, and below it the
// .env file of the project directory, as compose reads them.
func composeEnvironment(dir string, environ []string) (composetypes.Mapping, *spec.Error) {
	env := composetypes.NewMapping(environ)
	if off, err := strconv.ParseBool(env["COMPOSE_DISABLE_ENV_FILE"]); err == nil && off {
		return env, nil
	}
	path := filepath.Join(dir, ".env")
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return env, nil
	}
	// compose's reader would block on a FIFO and read a device without end:
	// the file is read under ReadFile's rules, and its bytes parsed as
	// compose parses them (dotenv.GetEnvFromFile).
	data, err := spec.ReadFile(path)
	if err != nil {
		return nil, &spec.Error{File: path, Line: 1, Col: 1, Msg: "cannot read .env: " + err.Error()}
	}
	vars := map[string]string{}
	err = dotenv.ParseWithFormat(bytes.NewReader(data), path, vars, func(k string) (string, bool) {
		if v, ok := env[k]; ok {
			return v, true
		}
		v, ok := vars[k]
		return v, ok
	}, "")
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "failed to read "+path+": ")
		e := &spec.Error{File: path, Line: 1, Col: 1}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
		}
		e.Msg = "invalid .env: " + lineRE.ReplaceAllString(msg, "")
		return nil, e
	}
	return env.Merge(vars), nil
}

var (
	lineRE        = regexp.MustCompile(`\bline (\d+): `)
	falseSchemaRE = regexp.MustCompile(`(\S+) false schema`)
	requiredRE    = regexp.MustCompile(`required variable (\w+) is missing a value`)
	// Attribute paths in compose-go's messages: services.web.deploy.replicas,
	// 'services[web].command', service "web".
	dottedPathRE  = regexp.MustCompile(`\b((?:services|networks|volumes|configs|secrets|x-[\w-]+)(?:\.[\w.-]+)?)`)
	bracketPathRE = regexp.MustCompile(`\b(services|networks|volumes|configs|secrets)\[([^\]]+)\]((?:\.\w+)*)`)
	servicePathRE = regexp.MustCompile(`\bservice "([^"]+)"`)
	// compose-go's own depends_on cycle check: "dependency cycle
	// detected: a -> b -> a".
	cycleRE = regexp.MustCompile(`dependency cycle detected: ([\w.-]+) -> ([\w.-]+)`)
)

// composeError turns an error of compose-go into an *Error of the file, at
// the line it names or at the attribute it names, else at 1:1.
func (c *composeMap) composeError(err error) *spec.Error {
	msg := err.Error()
	for _, prefix := range []string{"validating " + c.l.file + ": ", "failed to parse " + c.l.file + ": "} {
		msg = strings.ReplaceAll(msg, prefix, "")
	}
	msg = strings.Join(strings.Fields(strings.ReplaceAll(msg, "\n", "; ")), " ")
	msg = strings.ReplaceAll(msg, ":; ", ": ")
	msg = falseSchemaRE.ReplaceAllString(msg, "$1: not a compose attribute")
	e := &spec.Error{File: c.l.file, Line: 1, Col: 1}
	if m := requiredRE.FindStringSubmatch(msg); m != nil {
		e.Hint = fmt.Sprintf("set %s in the environment, or in the .env file beside the compose file", m[1])
	}
	defer func() { e.Msg = "compose: " + msg }()
	if m := lineRE.FindAllStringSubmatch(msg, -1); m != nil {
		// The YAML library's "line N:" prefixes, innermost last.
		e.Line, _ = strconv.Atoi(m[len(m)-1][1])
		msg = lineRE.ReplaceAllString(msg, "")
		return e
	}
	var path []string
	if m := cycleRE.FindStringSubmatch(msg); m != nil {
		e.Hint = "a service cannot wait, however indirectly, for itself: drop one of these depends_on entries"
		path = []string{"services", m[1], "depends_on", m[2]}
	} else if m := bracketPathRE.FindStringSubmatch(msg); m != nil {
		path = append([]string{m[1], m[2]}, strings.Split(strings.TrimPrefix(m[3], "."), ".")...)
	} else if m := dottedPathRE.FindStringSubmatch(msg); m != nil {
		path = strings.Split(m[1], ".")
	} else if m := servicePathRE.FindStringSubmatch(msg); m != nil {
		path = []string{"services", m[1]}
	}
	if path != nil {
		if k, v := c.raw.findDotted(path); v != nil {
			e.Line, e.Col = position(k, v)
		}
	}
	return e
}

// position is where a finding about a key goes: a scalar value, else the
// key, so that one about a whole service points at its name.
func position(key, val *yaml.Node) (line, col int) {
	first := []*yaml.Node{val, key}
	if val != nil && val.Kind != yaml.ScalarNode {
		first = []*yaml.Node{key, val}
	}
	for _, n := range first {
		if n != nil && n.Line > 0 {
			return n.Line, max(n.Column, 1)
		}
	}
	return 1, 1
}
