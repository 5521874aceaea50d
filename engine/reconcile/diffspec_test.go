package reconcile

import (
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// inspected is container c of w as the engine would report it when created
// from w's CreateSpec, on an image with cmd ["/demoapp"] and env PATH.
func inspected(w *spec.Resolved, c docker.Container) docker.ContainerDetail {
	cs := CreateSpec(pfx, w, 0)
	cmd := cs.Command
	if len(cmd) == 0 {
		cmd = []string{"/demoapp"}
	}
	return docker.ContainerDetail{Container: c, Config: docker.ContainerConfig{
		Cmd: cmd, Env: append([]string{"PATH=/bin"}, cs.Env...), Healthcheck: cs.Healthcheck, StopSignal: cs.StopSignal,
		Ports: cs.Ports, Networks: cs.Networks,
		ImageKnown: true, ImageCmd: []string{"/demoapp"}, ImageEnv: []string{"PATH=/bin"},
	}}
}

func TestSpecDiffFieldByField(t *testing.T) {
	base := func(w *spec.Workload) {
		w.Command = []string{"-listen", ":8080"}
		w.Environment = map[string]string{"GREETING": "hi", "TOKEN": "s3cret", "OLD": "x"}
		w.Labels = map[string]string{"traefik.enable": "true", "team": "a"}
		w.Ports = []spec.Port{{HostIP: "127.0.0.1", ContainerPort: 8080, Proto: "tcp"}}
	}
	oldD := resolved(workload("web", 1, base, v1))
	old := oldD.Workload("web")
	userLabels := func(c *docker.Container) { c.Labels["traefik.enable"], c.Labels["team"] = "true", "a" }
	c := stale(oldD, "web", 0, userLabels)
	d := inspected(old, c)

	if got := SpecDiff(pfx, old, docker.ContainerDetail{Container: fresh(oldD, "web", 0, userLabels), Config: d.Config}, false); len(got) != 0 {
		t.Fatalf("an up-to-date container differs: %v", got)
	}

	newD := resolved(workload("web", 1, base, func(w *spec.Workload) {
		w.Command = []string{"-listen", ":9090"}
		w.Environment = map[string]string{"GREETING": "hello", "TOKEN": "s3cret", "NEW": "1"}
		w.Labels = map[string]string{"traefik.enable": "false"}
		w.Ports = []spec.Port{{HostIP: "127.0.0.1", ContainerPort: 9090, Proto: "tcp"}}
		w.Healthcheck.Retries = 5
		w.Resources.Memory = 64 << 20
		w.Restart = "always"
		w.StopSignal = "SIGINT"
		w.Networks = []string{"front"}
		w.PreStop = []string{"/demoapp", "-drain"}
	}))
	var lines []string
	for _, fc := range SpecDiff(pfx, newD.Workload("web"), d, false) {
		lines = append(lines, fc.String())
	}
	want := []string{
		"~ image: web:v1 → web:v2",
		"~ version: 1 → 2",
		`~ command: ["-listen", ":8080"] → ["-listen", ":9090"]`,
		"~ env GREETING", "+ env NEW", "- env OLD",
		"~ ports: [127.0.0.1::8080/tcp] → [127.0.0.1::9090/tcp]",
		"~ labels traefik.enable: true → false", "- labels team: a",
		`~ healthcheck: ["CMD", "/demoapp", "-health"] interval 1s timeout 1s retries 3 start_period 0s → ["CMD", "/demoapp", "-health"] interval 1s timeout 1s retries 5 start_period 0s`,
		"~ limits: cpus ∞ mem ∞ → cpus ∞ mem 64M",
		"~ restart: unless-stopped → always",
		"~ stop_signal: SIGTERM → SIGINT",
		"~ networks: [default] → [front]",
		`~ pre_stop: none → ["/demoapp", "-drain"]`,
	}
	equalStrings(t, lines, want)

	// Values only when asked; a secret never shows otherwise.
	var env []string
	for _, fc := range SpecDiff(pfx, newD.Workload("web"), d, true) {
		if fc.Field == "env" {
			env = append(env, fc.String())
		}
	}
	equalStrings(t, env, []string{"~ env GREETING: hi → hello", "+ env NEW: 1", "- env OLD: x"})
}

// A command or environment left to the image compares with the image's
// defaults; with the image unknown, only what the desired state sets.
func TestSpecDiffImageDefaults(t *testing.T) {
	d := resolved(workload("web", 1))
	w := d.Workload("web")
	det := inspected(w, fresh(d, "web", 0))
	if got := SpecDiff(pfx, w, det, false); len(got) != 0 {
		t.Fatalf("the image's own command and PATH read as changes: %v", got)
	}
	det.Config.Entrypoint = []string{"/bin/sh", "-c"}
	if got := SpecDiff(pfx, w, det, false); len(got) != 1 || got[0].Field != "entrypoint" {
		t.Fatalf("entrypoint set at create not seen: %v", got)
	}
	det = inspected(w, fresh(d, "web", 0))
	det.Config.ImageKnown, det.Config.ImageCmd, det.Config.ImageEnv = false, nil, nil
	if got := SpecDiff(pfx, w, det, false); len(got) != 0 {
		t.Fatalf("with the image unknown, its defaults read as changes: %v", got)
	}
	if fc := (FieldChange{Field: "env", Key: "A", Kind: "+"}); fc.String() != "+ env A" {
		t.Fatal(fc.String())
	}
}

// TestSpecDiffImageLabels: a label baked into the image is on the container
// as inspected, though the desired state never set it: it is not shown as
// removed. A desired label over the image's compares with the desired
// value; one the container changed from the image's, or that the image
// does not have, still shows. With the image unknown, a label the desired
// state does not set cannot be told from the image's, so it is not shown.
func TestSpecDiffImageLabels(t *testing.T) {
	d := resolved(workload("web", 1, func(w *spec.Workload) { w.Labels = map[string]string{"tier": "front"} }))
	w := d.Workload("web")
	c := fresh(d, "web", 0, func(c *docker.Container) {
		c.Labels["tier"] = "front"
		c.Labels["org.opencontainers.image.source"] = "https://example.com/demoapp"
		c.Labels["maintainer"] = "ops"
	})
	det := inspected(w, c)
	det.Config.ImageLabels = map[string]string{"org.opencontainers.image.source": "https://example.com/demoapp", "maintainer": "ops", "tier": "back"}
	if got := SpecDiff(pfx, w, det, false); len(got) != 0 {
		t.Fatalf("the image's own labels read as changes: %v", got)
	}

	c.Labels["maintainer"] = "someone else" // changed from the image's at create
	c.Labels["stray"] = "1"                 // neither desired nor the image's
	det = inspected(w, c)
	det.Config.ImageLabels = map[string]string{"org.opencontainers.image.source": "https://example.com/demoapp", "maintainer": "ops"}
	var lines []string
	for _, fc := range SpecDiff(pfx, w, det, false) {
		lines = append(lines, fc.String())
	}
	equalStrings(t, lines, []string{"~ labels maintainer: someone else → ops", "- labels stray: 1"})

	det.Config.ImageKnown, det.Config.ImageCmd, det.Config.ImageEnv, det.Config.ImageLabels = false, nil, nil, nil
	if got := SpecDiff(pfx, w, det, false); len(got) != 0 {
		t.Fatalf("with the image unknown, its labels read as removed: %v", got)
	}
}
