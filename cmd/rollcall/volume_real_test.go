package main

// Data across a roll on the real engine (issue 28): a workload writing a
// named volume, under a read-only root with a tmpfs, and one whose image
// declares a VOLUME, each roll v1 -> v2 through the built binary; what the
// first container wrote is there for the second. Two probed containers at
// a time, at most.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/spec"
)

func TestRealVolumeDataSurvivesARoll(t *testing.T) {
	r := newRealRig(t)
	// keep's image declares VOLUME /data, as a database image does; the
	// file mounts nothing there.
	keepTag := dockertest.ImageTag("demoapp-volume", r.prefix)
	keepTags := map[string]string{}
	for _, v := range []string{"v1", "v2"} {
		keepTags[v] = keepTag + "-" + v
		dockertest.DemoappImageWithVolume(t, keepTags[v], v, "/data")
	}
	conf := filepath.Join(r.dir, "app.conf")
	if err := os.WriteFile(conf, []byte("conf\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	file := func(version string) string {
		db := realWorkload(t, "db", version, 1, `args: , "-journal", "/data/journal"`,
			`ports: ["127.0.0.1::8080"]`,
			"volumes: [data:/data, ./app.conf:/etc/app.conf:ro]",
			"tmpfs: /tmp",
			"read_only: true")
		keep := strings.Replace(realWorkload(t, "keep", version, 1, `args: , "-journal", "/data/journal"`,
			`ports: ["127.0.0.1::8080"]`), dockertest.DemoappTag(version), keepTags[version], 1)
		return r.desired(db, keep) + "volumes:\n  data: {}\n"
	}
	path := filepath.Join(r.dir, "rollcall.yaml")
	write := func(version string) {
		if err := os.WriteFile(path, []byte(file(version)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write("v1")
	if res := r.run("apply", "--yes", "--timeout", "3m", "-f", path); res.code != exitOK {
		t.Fatalf("apply v1: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	journals := map[string]string{}
	for _, w := range []string{"db", "keep"} {
		journals[w] = r.journal1(w)
		if !strings.HasPrefix(journals[w], "v1 ") || strings.Count(journals[w], "\n") != 1 {
			t.Fatalf("%s's journal after v1: %q", w, journals[w])
		}
	}
	// The named volume is rollcall's: created with its managed label.
	out, err := dockertest.CLI(r.ctx, "volume", "inspect", "--format", "{{json .Labels}}", r.prefix+"_data")
	var labels map[string]string
	if err != nil || json.Unmarshal([]byte(out), &labels) != nil || labels[docker.ManagedLabel(r.prefix)] != "true" {
		t.Errorf("volume %s_data: %v labels %s", r.prefix, err, out)
	}

	// The plan says why each slot goes down.
	write("v2")
	res := r.run("plan", "--json", "-f", path)
	var doc planDoc
	if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil {
		t.Fatalf("plan --json: exit %d, %v\n%s", res.code, err, res.stdout)
	}
	causes := map[string]string{}
	for _, w := range doc.Workloads {
		for _, s := range w.Steps {
			if s.Downtime {
				causes[s.Workload] = s.StopFirst
			}
		}
	}
	if causes["db"] != string(spec.StopFirstData) || causes["keep"] != string(spec.StopFirstSlotVolume) {
		t.Errorf("stop-first causes %v, want db: data, keep: slot-volume\n%s", causes, res.stdout)
	}

	// Both workloads roll stop-first: every running container goes.
	if res := r.run("apply", "--yes", "--allow-mass-stop", "--timeout", "3m", "-f", path); res.code != exitOK {
		t.Fatalf("apply v2: exit %d\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	for _, w := range []string{"db", "keep"} {
		got := r.journal1(w)
		if !strings.HasPrefix(got, journals[w]+"v2 ") || strings.Count(got, "\n") != 2 {
			t.Errorf("%s's journal after the roll: %q, want v1's line then v2's", w, got)
		}
	}
}

// journal1 is what the one running container of workload serves on
// /journal.
func (r *realRig) journal1(workload string) string {
	r.t.Helper()
	cs, err := r.m.List(r.ctx, r.prefix)
	if err != nil {
		r.t.Fatal(err)
	}
	for _, c := range cs {
		if c.Labels[docker.WorkloadLabel(r.prefix)] != workload || c.State != docker.StateRunning || len(c.Ports) == 0 {
			continue
		}
		url := fmt.Sprintf("http://127.0.0.1:%s/journal", strconv.Itoa(c.Ports[0].HostPort))
		client := http.Client{Timeout: 5 * time.Second}
		resp, err := client.Get(url)
		if err != nil {
			r.t.Fatalf("%s: %v", url, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			r.t.Fatalf("%s: %s %s", url, resp.Status, b)
		}
		return string(b)
	}
	r.t.Fatalf("no running container of %s in %v", workload, cs)
	return ""
}
