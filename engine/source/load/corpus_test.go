package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/spec"
)

// corpusDir holds compose files written as public examples are (issue 28,
// item 6), one per directory, each beside the golden.txt of what rollcall
// makes of it.
var corpusDir = filepath.Join("testdata", "compose", "corpus")

// corpusEnviron is the whole environment the corpus loads under: nothing of
// the host's leaks into the goldens.
var corpusEnviron = []string{"USER=rollcall", "TZ=UTC"}

// TestComposeCorpus: each compose file of the corpus loads to the workloads,
// volumes and warnings its golden.txt holds, or fails with the errors it
// holds. The goldens are the specification of the mapping on real files;
// rewrite them with -update and read the diff.
func TestComposeCorpus(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	corpusAbs, err := filepath.Abs(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	// The goldens must not depend on the machine: a bind source outside
	// the corpus (/var/run/docker.sock, /dev/disk) is taken to be there,
	// one inside it is looked for; ~ is a fixed home.
	t.Setenv("HOME", "/home/rollcall")
	stat := statBindSource
	t.Cleanup(func() { statBindSource = stat })
	statBindSource = func(path string) (os.FileInfo, error) {
		if strings.HasPrefix(path, corpusAbs+string(filepath.Separator)) {
			return os.Stat(path)
		}
		return nil, nil
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		dir := filepath.Join(corpusDir, e.Name())
		t.Run(e.Name(), func(t *testing.T) {
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "compose.yaml")
			d, err := LoadCompose(file, corpusEnviron)
			checkCorpusErrors(t, err)
			got := renderCorpus(abs, file, d, err)
			golden := filepath.Join(dir, "golden.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (write it with -update, then read it)", err)
			}
			if string(want) != got {
				t.Errorf("%s differs (rewrite it with -update):\n%s", golden, lineDiff(string(want), got))
			}
		})
	}
	if n < 32 {
		t.Errorf("the corpus has %d files, want at least 32", n)
	}
}

// checkCorpusErrors: a file that does not load says where and what: each
// error at a line, naming a service's path or a top-level key.
func checkCorpusErrors(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var list spec.ErrorList
	if !errors.As(err, &list) {
		t.Errorf("not an ErrorList: %v", err)
		return
	}
	topLevel := []string{"services", "networks", "volumes", "configs", "secrets", "models", "name", "include", "version", "x-rollcall"}
	for _, e := range list {
		if e.Line < 1 {
			t.Errorf("error at line %d: %v", e.Line, e)
		}
		msg := strings.TrimPrefix(e.Msg, "compose: ")
		if !slices.ContainsFunc(topLevel, func(k string) bool {
			return strings.HasPrefix(msg, k+".") || strings.HasPrefix(msg, k+":") || strings.HasPrefix(msg, k+" ")
		}) {
			t.Errorf("error names no service path or top-level key: %v", e)
		}
	}
}

// renderCorpus is the text of a golden file: each workload, in name order,
// then the volumes, then the warnings; or the errors. abs, the corpus
// directory, reads as ".".
func renderCorpus(abs, file string, d *spec.Desired, err error) string {
	var b strings.Builder
	rel := func(s string) string { return strings.ReplaceAll(s, abs, ".") }
	finding := func(e *spec.Error) {
		where := ""
		if e.File != file {
			where = rel(e.File) + ":"
		}
		fmt.Fprintf(&b, "%s%d:%d %s", where, e.Line, e.Col, rel(e.Msg))
		if e.Hint != "" {
			fmt.Fprintf(&b, " (%s)", rel(e.Hint))
		}
		b.WriteString("\n")
	}
	if err != nil {
		b.WriteString("error\n")
		var list spec.ErrorList
		if !errors.As(err, &list) {
			fmt.Fprintf(&b, "  %s\n", rel(err.Error()))
			return b.String()
		}
		for _, e := range list {
			b.WriteString("  ")
			finding(e)
		}
		return b.String()
	}
	if d.OnSwarm() {
		fmt.Fprintf(&b, "engine %s prefix %s\n", d.Engine, d.Prefix)
	}
	for _, name := range d.Names() {
		w := d.Workloads[name]
		fmt.Fprintf(&b, "workload %s\n", name)
		fmt.Fprintf(&b, "  image %s\n", w.Image)
		fmt.Fprintf(&b, "  replicas %d\n", w.Replicas)
		if w.Platform != "" {
			fmt.Fprintf(&b, "  platform %s\n", w.Platform)
		}
		if w.Job {
			b.WriteString("  job: runs once per spec, never restarted once it exited 0\n")
		}
		if w.Command != nil {
			fmt.Fprintf(&b, "  command %q\n", w.Command)
		}
		if len(w.Environment) > 0 {
			fmt.Fprintf(&b, "  environment %s\n", strings.Join(slices.Sorted(maps.Keys(w.Environment)), " "))
		}
		for _, p := range w.Ports {
			fmt.Fprintf(&b, "  port %s:%d->%d/%s\n", p.HostIP, p.HostPort, p.ContainerPort, p.Proto)
		}
		for _, net := range w.Networks {
			fmt.Fprintf(&b, "  network %s", net)
			if a := w.Aliases[net]; len(a) > 0 {
				fmt.Fprintf(&b, " aliases %s", strings.Join(a, ","))
			}
			b.WriteString("\n")
		}
		if h := w.Healthcheck; h != nil {
			fmt.Fprintf(&b, "  healthcheck %q every %s\n", h.Test, h.Interval)
		}
		for _, m := range w.Mounts {
			src := m.Source
			if m.Type == spec.MountVolume && src == "" {
				src = "(slot's own)"
			}
			if src != "" {
				src = rel(src) + " "
			}
			fmt.Fprintf(&b, "  mount %s %s-> %s", m.Type, src, m.Target)
			if m.ReadOnly {
				b.WriteString(" ro")
			}
			if m.Size != 0 {
				fmt.Fprintf(&b, " size %d", m.Size)
			}
			b.WriteString("\n")
		}
		if w.ReadOnly {
			b.WriteString("  read_only\n")
		}
		if w.Resources != (spec.Resources{}) {
			fmt.Fprintf(&b, "  resources cpus %g memory %d\n", float64(w.Resources.NanoCPUs)/1e9, w.Resources.Memory)
		}
		if !w.Options.IsZero() {
			o, _ := json.Marshal(w.Options)
			fmt.Fprintf(&b, "  options %s\n", rel(string(o)))
		}
		fmt.Fprintf(&b, "  restart %s, pull %s, stop %s after %s\n", w.Restart, w.Pull, w.StopSignal, w.StopGrace)
		u := w.Update
		order := u.Order
		if u.OrderSet {
			order += " (set)"
		}
		fmt.Fprintf(&b, "  update %s parallelism %d order %s failure %s deadline %s", u.Strategy, u.Parallelism, order, u.FailureAction, u.HealthDeadline)
		if u.Delay > 0 {
			fmt.Fprintf(&b, " delay %s", u.Delay)
		}
		if u.RollbackParallelism > 0 {
			fmt.Fprintf(&b, " rollback parallelism %d", u.RollbackParallelism)
		}
		b.WriteString("\n")
		if u.MaxFailureRatio > 0 {
			fmt.Fprintf(&b, "  update max failure ratio %g\n", u.MaxFailureRatio)
		}
		if sw := w.Swarm; sw != nil {
			r := sw.Restart
			fmt.Fprintf(&b, "  swarm endpoint %s restart %s delay %s attempts %d window %s\n", sw.EndpointMode, r.Condition, r.Delay, r.MaxAttempts, r.Window)
			if p := sw.Placement; len(p.Constraints)+len(p.Preferences) > 0 || p.MaxReplicas > 0 {
				fmt.Fprintf(&b, "  swarm placement %q spread %q max per node %d\n", p.Constraints, p.Preferences, p.MaxReplicas)
			}
			if sw.Reservations != (spec.Resources{}) {
				fmt.Fprintf(&b, "  swarm reservations cpus %g memory %d\n", float64(sw.Reservations.NanoCPUs)/1e9, sw.Reservations.Memory)
			}
			for _, k := range slices.Sorted(maps.Keys(sw.Labels)) {
				fmt.Fprintf(&b, "  swarm service label %s=%s\n", k, sw.Labels[k])
			}
			if h := w.SwarmHostname(); h != "" {
				fmt.Fprintf(&b, "  swarm hostname %s\n", h)
			}
		}
		cause, what := w.StopFirst()
		fmt.Fprintf(&b, "  rolls %s", w.EffectiveOrder())
		if cause != "" {
			fmt.Fprintf(&b, ": %s", cause)
			if what != "" {
				fmt.Fprintf(&b, " (%s)", rel(what))
			}
		}
		b.WriteString("\n")
	}
	for _, key := range slices.Sorted(maps.Keys(d.Volumes)) {
		v := d.Volumes[key]
		fmt.Fprintf(&b, "volume %s name %s", key, v.Name)
		if v.External {
			b.WriteString(" external")
		}
		if v.Driver != "" {
			fmt.Fprintf(&b, " driver %s", v.Driver)
		}
		for _, o := range slices.Sorted(maps.Keys(v.DriverOpts)) {
			fmt.Fprintf(&b, " %s=%s", o, rel(v.DriverOpts[o]))
		}
		b.WriteString("\n")
	}
	for _, w := range d.Warnings {
		b.WriteString("warning ")
		finding(w)
	}
	return b.String()
}
