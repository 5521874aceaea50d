package dockertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// A run is dead when its process is gone or its pid is another process's
// now; a run whose process cannot be seen from here (another host, another
// pid namespace, another boot) is dead only long after it began; this
// process's own run never is.
func TestMarkerDead(t *testing.T) {
	const here = "boot-1/4026531836"
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	procs := map[int]uint64{100: 5000, 200: 7000} // pid → start
	proc := func(pid int) (uint64, bool) { s, ok := procs[pid]; return s, ok }
	run := func(host string, pid int, start uint64, age time.Duration) marker {
		return marker{run: "rc0000abcd", host: host, pid: pid, start: start, began: now.Add(-age)}
	}
	tests := []struct {
		name string
		m    marker
		want bool
	}{
		{"its process runs", run(here, 100, 5000, time.Minute), false},
		{"its process runs, for days", run(here, 100, 5000, 72*time.Hour), false},
		{"its process is gone", run(here, 300, 5000, time.Minute), true},
		{"its pid is another process now", run(here, 200, 5000, time.Minute), true},
		{"another pid namespace, young", run("boot-1/4026532000", 300, 1, time.Minute), false},
		{"another boot or host, young", run("boot-2/4026531836", 300, 1, staleAfter-time.Minute), false},
		{"another boot or host, old", run("boot-2/4026531836", 100, 5000, staleAfter+time.Minute), true},
		{"a host that cannot say, old", run("", 100, 5000, staleAfter+time.Minute), true},
		{"this process's own run", marker{run: Run, host: here, pid: 300, began: now.Add(-72 * time.Hour)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.dead(here, proc, now); got != tt.want {
				t.Errorf("%+v dead = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
	// Where this process cannot see pids at all, a young run is alive.
	if run(here, 300, 1, time.Minute).dead("", proc, now) {
		t.Error("a young run on a host where pids cannot be read counts as dead")
	}
}

// A marker reads back as it was written; one that cannot be read is an
// error (and so is kept, with its run).
func TestParseMarker(t *testing.T) {
	m := marker{run: "rc0000abcd", host: "boot/1", pid: 42, start: 99, began: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	got, err := parseMarker(strings.Join(m.labels(), ","))
	if err != nil || got != m {
		t.Errorf("parseMarker(labels of %+v) = %+v, %v", m, got, err)
	}
	for _, labels := range []string{"", RunLabel + "=rc0000abcd", strings.Replace(strings.Join(m.labels(), ","), "rc0000abcd", "web", 1)} {
		if _, err := parseMarker(labels); err == nil {
			t.Errorf("parseMarker(%q) took it", labels)
		}
	}
}

// What is of a run: its run label, a name or label key that starts with
// the run (a test's prefix, and rollcall's labels under it), an image tag
// that does; nothing that merely looks alike.
func TestRunOf(t *testing.T) {
	const r = "rc0123abcd"
	tests := []struct {
		name, names, labels, want string
	}{
		{"the run label", "other", "a=b," + RunLabel + "=" + r, r},
		{"a prefix's name", "/" + r + "-web-web-0", "", r},
		{"rollcall's managed label", "x", r + "-web.managed=true," + r + "-web.slot=0", r},
		{"a test's label", "x", r + ".test=true", r},
		{"a prefix before the run label its image gave it", "/" + r + "-web-web-0", RunLabel + "=rc9999ffff", r},
		{"not a run", "/rc0123abc-web-0", "rc0123abcde.managed=true,rollcall-demo.managed=true", ""},
		{"the run as a label value", "other", "owner=" + r + "-web", ""},
		{"a run label that is no run", "other", RunLabel + "=web", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := runOf(tt.names, tt.labels); got != tt.want {
				t.Errorf("runOf(%q, %q) = %q, want %q", tt.names, tt.labels, got, tt.want)
			}
		})
	}
	for ref, want := range map[string]string{
		"rollcall-test-demoapp:" + r + "-v1":                r,
		"rollcall-test-empty:" + r + "-realimage":           r,
		"rollcall-demoapp:v1":                               "",
		"<none>:<none>":                                     "",
		"registry:5000/" + r + "-x:latest":                  "",
		"localhost:5000/rollcall-test-demoapp:" + r + "-v2": r,
	} {
		if got := tagRun(ref); got != want {
			t.Errorf("tagRun(%q) = %q, want %q", ref, got, want)
		}
	}
	if tagRun(ImageTag("demoapp", "v1")) != Run || tagRun(DemoappTag("v1")) != Run || runOf(prefixFor("TestX"), "") != Run {
		t.Errorf("ImageTag, DemoappTag or a prefix is not of the run %s", Run)
	}
}

// TestRealSweepTakesDeadRunsOnly: the sweep at the start of a run removes
// the container, network and image tag a dead run left, with its marker,
// and keeps those of a run whose process still runs. The two runs are
// made up here: the dead one's process has exited, the live one's is a
// sleep that runs until the test ends.
func TestRealSweepTakesDeadRunsOnly(t *testing.T) {
	Engine(t)
	if hostID() == "" {
		t.Skip("this host's /proc does not say which process runs: only the age of a run can tell")
	}
	image, _ := DemoappImage(t, "v1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	sleeping := exec.Command("sleep", "600")
	if err := sleeping.Start(); err != nil {
		t.Fatal(err)
	}
	start, ok := procStart(sleeping.Process.Pid)
	if !ok {
		t.Fatalf("no start time for the live run's process %d", sleeping.Process.Pid)
	}
	dead := marker{run: "rc" + randomHex(4), host: hostID(), pid: exited.Process.Pid, began: time.Now()}
	live := marker{run: "rc" + randomHex(4), host: hostID(), pid: sleeping.Process.Pid, start: start, began: time.Now()}
	t.Cleanup(func() {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Minute)
		defer ccancel()
		runs := map[string]bool{dead.run: true, live.run: true}
		if err := sweepRuns(cctx, runs); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := removeMarkers(cctx, runs); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		sleeping.Process.Kill()
		sleeping.Wait()
	})

	// What each run leaves: a container as rollcall makes them (its
	// prefix's managed label), a network with the run label, an image tag.
	type left struct{ container, network, tag string }
	leave := func(m marker) left {
		t.Helper()
		if err := createMarker(ctx, m); err != nil {
			t.Fatal(err)
		}
		l := left{m.run + "-web-web-0", m.run + "-front", "rollcall-test-demoapp:" + m.run + "-v1"}
		for _, args := range [][]string{
			{"create", "--name", l.container, "--label", m.run + "-web.managed=true", image},
			{"network", "create", "--label", RunLabel + "=" + m.run, l.network},
			{"tag", image, l.tag},
		} {
			if _, err := CLI(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	gone, kept := leave(dead), leave(live)

	if err := sweepDead(ctx); err != nil {
		t.Fatal(err)
	}
	exists := func(args ...string) bool {
		_, err := CLI(ctx, args...)
		return err == nil
	}
	for _, c := range []struct {
		what    string
		inspect []string
		want    bool
	}{
		{"the dead run's container", []string{"container", "inspect", gone.container}, false},
		{"the dead run's network", []string{"network", "inspect", gone.network}, false},
		{"the dead run's image tag", []string{"image", "inspect", gone.tag}, false},
		{"the dead run's marker", []string{"volume", "inspect", markerVolume(dead.run)}, false},
		{"the live run's container", []string{"container", "inspect", kept.container}, true},
		{"the live run's network", []string{"network", "inspect", kept.network}, true},
		{"the live run's image tag", []string{"image", "inspect", kept.tag}, true},
		{"the live run's marker", []string{"volume", "inspect", markerVolume(live.run)}, true},
		{"this run's image", []string{"image", "inspect", image}, true},
		{"this run's marker", []string{"volume", "inspect", markerVolume(Run)}, true},
	} {
		if got := exists(c.inspect...); got != c.want {
			t.Errorf("after the sweep, %s exists: %v, want %v", c.what, got, c.want)
		}
	}
}

// Two runs sweep the same dead run at once: what the other took first is
// no error; anything else is.
func TestIgnoreGone(t *testing.T) {
	exit := exec.Command("false").Run()
	wrap := func(stderr string) error { return fmt.Errorf("docker network rm a b: %w: %s", exit, stderr) }
	for stderr, gone := range map[string]bool{
		"Error response from daemon: network bd6f not found\nexit status 1":                      true,
		"Error: No such container: 075a\nError: No such container: bd6f":                         true,
		"Error response from daemon: get rollcall-testrun-rca7: no such volume":                  true,
		"Error response from daemon: error while removing network: network has active endpoints": false,
		"Error: No such image: x\nError response from daemon: conflict: image is being used":     false,
	} {
		if err := ignoreGone("", wrap(stderr)); (err == nil) != gone {
			t.Errorf("ignoreGone(%q) = %v, want gone %v", stderr, err, gone)
		}
	}
	if err := ignoreGone("", context.DeadlineExceeded); err == nil {
		t.Error("ignoreGone took an error that is no docker command's exit")
	}
}
