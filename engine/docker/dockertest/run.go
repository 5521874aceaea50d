package dockertest

// This file holds the run: a test process is a run, named by Run, and all
// it makes on the engine is of it, by name or by label. A run leaves a
// marker on the engine (a labelled volume, which costs nothing) that says
// where its process is; the first test of a package that takes the engine
// sweeps what runs whose process is dead left behind (killed by go test's
// timeout, a panic, kill -9), and Main sweeps the run's own at its end.
// A run that is alive is never touched: two suites at once on one engine
// each keep their own.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/imagebuild"
	"github.com/rollcall/rollcall/engine/docker/moby"
)

// RunLabel is the label, with the run's name as its value, that every
// container, network and image a run makes itself carries. What rollcall
// makes for a test carries the test's prefix, which starts with the run's
// name: that names the run too.
const RunLabel = "rollcall.testrun"

// RunLabelArg is RunLabel=Run, for the docker command line's --label.
var RunLabelArg = RunLabel + "=" + Run

// The labels of a run's marker, besides RunLabel.
const (
	markerHost  = RunLabel + ".host"  // the kernel boot and pid namespace its pid means something in
	markerPID   = RunLabel + ".pid"   // the test process
	markerStart = RunLabel + ".start" // when that process started, in clock ticks since boot: a pid used again is another process
	markerBegan = RunLabel + ".began" // the wall clock, RFC 3339, for a run whose process cannot be seen from here
)

// staleAfter is how long after it began a run whose process cannot be seen
// from here (one on another host that shares the engine, in another pid
// namespace, or from before a reboot) still counts as alive. The README's
// test command gives a suite 30 minutes.
const staleAfter = 2 * time.Hour

// runName is what Run looks like.
var runName = regexp.MustCompile(`^rc[0-9a-f]{8}$`)

// marker is one run's marker, as read back from the engine.
type marker struct {
	run   string
	host  string
	pid   int
	start uint64
	began time.Time
}

// dead reports whether the run of m is over: its process, on this host and
// in this pid namespace (here), is gone or is another process under the
// same pid; or, where its process cannot be seen from here, it began more
// than staleAfter before now. proc returns a live process's start time.
// This process's own run is never dead.
func (m marker) dead(here string, proc func(pid int) (start uint64, ok bool), now time.Time) bool {
	if m.run == Run {
		return false
	}
	if here != "" && m.host == here && m.pid > 0 {
		start, ok := proc(m.pid)
		return !ok || start != m.start
	}
	return now.Sub(m.began) > staleAfter
}

// labels are the marker's labels: where this process is.
func (m marker) labels() []string {
	return []string{
		RunLabel + "=" + m.run,
		markerHost + "=" + m.host,
		markerPID + "=" + strconv.Itoa(m.pid),
		markerStart + "=" + strconv.FormatUint(m.start, 10),
		markerBegan + "=" + m.began.UTC().Format(time.RFC3339),
	}
}

// parseMarker reads a marker back from its labels (as docker volume ls
// prints them). A marker it cannot read is an error: it is then kept, and
// so is all of its run.
func parseMarker(labels string) (marker, error) {
	kv := map[string]string{}
	for _, l := range strings.Split(labels, ",") {
		k, v, _ := strings.Cut(l, "=")
		kv[k] = v
	}
	m := marker{run: kv[RunLabel], host: kv[markerHost]}
	var errs []error
	if !runName.MatchString(m.run) {
		errs = append(errs, fmt.Errorf("%s %q is no run", RunLabel, m.run))
	}
	var err error
	if m.pid, err = strconv.Atoi(kv[markerPID]); err != nil {
		errs = append(errs, err)
	}
	if m.start, err = strconv.ParseUint(kv[markerStart], 10, 64); err != nil {
		errs = append(errs, err)
	}
	if m.began, err = time.Parse(time.RFC3339, kv[markerBegan]); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return marker{}, fmt.Errorf("run marker %q: %w", labels, err)
	}
	return m, nil
}

// markerVolume is the name of run's marker.
func markerVolume(run string) string { return "rollcall-testrun-" + run }

// createMarker leaves m on the engine.
func createMarker(ctx context.Context, m marker) error {
	args := []string{"volume", "create"}
	for _, l := range m.labels() {
		args = append(args, "--label", l)
	}
	if _, err := CLI(ctx, append(args, markerVolume(m.run))...); err != nil {
		return fmt.Errorf("mark run %s: %w", m.run, err)
	}
	return nil
}

// thisRun is this process's marker.
func thisRun() marker {
	start, _ := procStart(os.Getpid())
	return marker{run: Run, host: hostID(), pid: os.Getpid(), start: start, began: time.Now()}
}

// hostID names where a pid means one process: the kernel's boot and this
// process's pid namespace. "" where /proc does not say (not Linux).
func hostID() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + strings.Trim(strings.TrimPrefix(ns, "pid:"), "[]")
}

// procStart returns when the process pid started, in clock ticks since
// boot (field 22 of /proc/PID/stat), or false when there is no such
// process.
func procStart(pid int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command, field 2, is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 { // fields 3 to 22
		return 0, false
	}
	start, err := strconv.ParseUint(fields[19], 10, 64)
	return start, err == nil
}

// runPrefix returns the run that s (a name, a label key or an image tag)
// is of: it starts with a run's name and then "-" or ".".
func runPrefix(s string) string {
	if len(s) > 10 && (s[10] == '-' || s[10] == '.') && runName.MatchString(s[:10]) {
		return s[:10]
	}
	return ""
}

// runOf returns the run a container or network of names and labels (as
// docker ps or docker network ls print them) is of, or "": a run that
// starts its name or one of its label keys (a test's prefix, and so
// rollcall's labels under it), else the value of its RunLabel. The prefix
// comes first: a container inherits the RunLabel of its image.
func runOf(names, labels string) string {
	for _, n := range strings.Split(names, ",") {
		if r := runPrefix(strings.TrimPrefix(n, "/")); r != "" {
			return r
		}
	}
	for _, kv := range strings.Split(labels, ",") {
		k, _, _ := strings.Cut(kv, "=")
		if r := runPrefix(k); r != "" {
			return r
		}
	}
	for _, kv := range strings.Split(labels, ",") {
		if k, v, _ := strings.Cut(kv, "="); k == RunLabel && runName.MatchString(v) {
			return v
		}
	}
	return ""
}

// tagRun returns the run an image reference (repository:tag) is of: its
// tag starts with the run's name (DemoappTag, ImageTag, a prefix).
func tagRun(ref string) string {
	i := strings.LastIndexByte(ref, ':')
	if i < 0 || strings.Contains(ref[i:], "/") {
		return ""
	}
	return runPrefix(ref[i+1:])
}

// beginRun leaves this run's marker, then sweeps the runs that are dead.
// A failed sweep is only reported: what another run left is no reason to
// fail this one.
func beginRun(ctx context.Context) error {
	if err := createMarker(ctx, thisRun()); err != nil {
		return err
	}
	if err := sweepDead(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dockertest: sweep of dead runs:", err)
	}
	return nil
}

// sweepDead removes what every dead run left: its containers, networks and
// image tags, then its marker, which stays if any of that could not go
// (the next run tries again).
func sweepDead(ctx context.Context) error {
	out, err := CLI(ctx, "volume", "ls", "--filter", "label="+RunLabel, "--format", "{{.Name}}\t{{.Labels}}")
	if err != nil {
		return err
	}
	here, now := hostID(), time.Now()
	dead := map[string]bool{}
	var errs []error
	for _, line := range lines(out) {
		_, labels, _ := strings.Cut(line, "\t")
		m, err := parseMarker(labels)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if m.dead(here, procStart, now) {
			dead[m.run] = true
		}
	}
	if len(dead) == 0 {
		return errors.Join(errs...)
	}
	if err := sweepRuns(ctx, dead); err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, removeMarkers(ctx, dead))...)
}

// endRun sweeps this run's own, then its marker.
func endRun(ctx context.Context) error {
	runs := map[string]bool{Run: true}
	if err := sweepRuns(ctx, runs); err != nil {
		return err
	}
	return removeMarkers(ctx, runs)
}

func removeMarkers(ctx context.Context, runs map[string]bool) error {
	args := []string{"volume", "rm"}
	for r := range runs {
		args = append(args, markerVolume(r))
	}
	return ignoreGone(CLI(ctx, args...))
}

// sweepRuns force-removes the containers of runs, then their networks,
// then their image tags and the images they built that no tag names any
// more.
func sweepRuns(ctx context.Context, runs map[string]bool) error {
	of := func(names, labels string) bool { return runs[runOf(names, labels)] }
	if err := sweepContainers(ctx, of); err != nil {
		return err
	}
	if err := sweepNetworks(ctx, of); err != nil {
		return err
	}
	return sweepImages(ctx, runs)
}

// sweepContainers force-removes every container whose names and labels
// (as docker ps prints them) of says yes to.
func sweepContainers(ctx context.Context, of func(names, labels string) bool) error {
	return sweepListed(ctx, []string{"ps", "-a"}, "{{.Names}}", []string{"rm", "-f", "-v"}, of)
}

// sweepNetworks removes every network whose name and labels of says yes
// to. Its containers must be gone first.
func sweepNetworks(ctx context.Context, of func(names, labels string) bool) error {
	return sweepListed(ctx, []string{"network", "ls"}, "{{.Name}}", []string{"network", "rm"}, of)
}

// sweepVolumes removes the volumes of whose name or labels of says yes
// to: rollcall never removes a volume, so a test removes its own.
func sweepVolumes(ctx context.Context, of func(names, labels string) bool) error {
	out, err := CLI(ctx, "volume", "ls", "--format", "{{.Name}}\t{{.Labels}}")
	if err != nil {
		return err
	}
	var names []string
	for _, line := range lines(out) {
		name, labels, _ := strings.Cut(line, "\t")
		if of(name, labels) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return ignoreGone(CLI(ctx, append([]string{"volume", "rm"}, names...)...))
}

// sweepListed lists with the docker CLI's list command, by ID, name and
// labels, and hands the IDs that of says yes to to its remove command.
func sweepListed(ctx context.Context, list []string, name string, remove []string, of func(names, labels string) bool) error {
	out, err := CLI(ctx, append(list, "--no-trunc", "--format", "{{.ID}}\t"+name+"\t{{.Labels}}")...)
	if err != nil {
		return err
	}
	var ids []string
	for _, line := range lines(out) {
		fields := strings.SplitN(line, "\t", 3)
		if len(fields) == 3 && of(fields[1], fields[2]) {
			ids = append(ids, fields[0])
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return ignoreGone(CLI(ctx, append(remove, ids...)...))
}

// sweepImages removes the tags of runs, which removes each image whose
// last tag it was, then the images labelled with one of runs that no tag
// names (a tag a test moved left them): an image another tag still names
// stays.
func sweepImages(ctx context.Context, runs map[string]bool) error {
	out, err := CLI(ctx, "images", "--no-trunc", "--format", "{{.Repository}}:{{.Tag}}")
	if err != nil {
		return err
	}
	var tags []string
	for _, ref := range lines(out) {
		if runs[tagRun(ref)] {
			tags = append(tags, ref)
		}
	}
	if len(tags) > 0 {
		if err := ignoreGone(CLI(ctx, append([]string{"rmi"}, tags...)...)); err != nil {
			return err
		}
	}
	out, err = CLI(ctx, "images", "--no-trunc", "--quiet", "--filter", "label="+RunLabel, "--filter", "dangling=true")
	if err != nil || out == "" {
		return err
	}
	out, err = CLI(ctx, append([]string{"image", "inspect", "--format", "{{.Id}}\t{{index .Config.Labels \"" + RunLabel + "\"}}"}, lines(out)...)...)
	if err != nil {
		return ignoreGone("", err)
	}
	var ids []string
	for _, line := range lines(out) {
		if id, run, _ := strings.Cut(line, "\t"); runs[run] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return ignoreGone(CLI(ctx, append([]string{"rmi"}, ids...)...))
}

// exitStatus is a line the docker command line ends some of its messages
// with.
var exitStatus = regexp.MustCompile(`^exit status [0-9]+$`)

// ignoreGone passes err on (from CLI) unless every line of the docker
// command line's message only says that what was to go is gone already:
// another run's sweep took it first.
func ignoreGone(_ string, err error) error {
	var exit *exec.ExitError
	if err == nil || !errors.As(err, &exit) {
		return err
	}
	_, msg, ok := strings.Cut(err.Error(), exit.Error()+": ")
	if !ok {
		return err
	}
	for _, line := range lines(strings.ToLower(msg)) {
		if !strings.Contains(line, "no such") && !strings.Contains(line, "not found") && !exitStatus.MatchString(line) {
			return err
		}
	}
	return nil
}

func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// ImageTag is a tag of this run's own for an image of repo: the
// repository rollcall-test-<repo> (never one an operator's rollcall uses)
// and the tag <Run>-<name>. The sweep takes it with the run.
func ImageTag(repo, name string) string { return "rollcall-test-" + repo + ":" + Run + "-" + name }

// runBuilder builds images labelled with the run (RunLabel), so that the
// sweep finds them when no tag names them any more.
//
// The label comes right after the FROM line, so that every layer after it
// is this run's own: two runs building the same Dockerfile at once would
// otherwise share the builder's cached intermediate images, and the other
// run's removal of its image could delete one this build stands on
// ("failed to get digest … no such file", seen with two suites at once).
type runBuilder struct{ m *moby.Moby }

func (b runBuilder) BuildImage(ctx context.Context, tag string, files map[string][]byte) (string, error) {
	labelled := maps.Clone(files)
	labelled["Dockerfile"] = withRunLabel(files["Dockerfile"])
	return b.m.BuildImage(ctx, tag, labelled)
}

// withRunLabel is df with the run's label after its first FROM line (at
// its end when it has none).
func withRunLabel(df []byte) []byte {
	label := fmt.Sprintf("LABEL %s=%q", RunLabel, Run)
	lines := strings.Split(strings.TrimRight(string(df), "\n"), "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(l)), "FROM ") {
			lines = slices.Insert(lines, i+1, label)
			return []byte(strings.Join(lines, "\n") + "\n")
		}
	}
	return []byte(strings.Join(append(lines, label), "\n") + "\n")
}

// ImageBuilder returns a builder of images on the engine (see Engine)
// that labels each with the run: build every image of a test with it, under
// a tag of the run (ImageTag). It skips t when there is no engine.
func ImageBuilder(t testing.TB) imagebuild.Builder {
	t.Helper()
	return runBuilder{Engine(t)}
}
