package moby

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"

	"github.com/rollcall/rollcall/engine/docker"
)

// A container is healthy since its last start when the engine says healthy
// now, or one of the probes it keeps passed after that start.
func TestHealthySinceStart(t *testing.T) {
	started := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	probe := func(at time.Time, code int) *container.HealthcheckResult {
		return &container.HealthcheckResult{Start: at, End: at.Add(time.Millisecond), ExitCode: code}
	}
	for _, tc := range []struct {
		name   string
		health docker.Health
		log    []*container.HealthcheckResult
		want   bool
	}{
		{"healthy now", docker.HealthHealthy, nil, true},
		{"unhealthy, never passed: a slow starter", docker.HealthUnhealthy, []*container.HealthcheckResult{probe(started.Add(time.Second), 1), probe(started.Add(2*time.Second), 1)}, false},
		{"unhealthy after a pass since the start", docker.HealthUnhealthy, []*container.HealthcheckResult{probe(started.Add(time.Second), 0), probe(started.Add(2*time.Second), 1)}, true},
		{"a pass before the last start counts for nothing", docker.HealthUnhealthy, []*container.HealthcheckResult{probe(started.Add(-time.Second), 0), nil, probe(started.Add(time.Second), 1)}, false},
		{"starting, no probe yet", docker.HealthStarting, nil, false},
	} {
		if got := healthySince(tc.health, tc.log, started); got != tc.want {
			t.Errorf("%s: healthySince = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestConfigFromInspect(t *testing.T) {
	var r container.InspectResponse
	raw := `{
	  "Id": "0123", "Name": "/rollcall-web-0-abc", "Image": "sha256:feed",
	  "State": {"Status": "running", "StartedAt": "2026-01-02T03:04:06Z",
	    "Health": {"Status": "unhealthy", "Log": [{"Start": "2026-01-02T03:04:07Z", "ExitCode": 0}, {"Start": "2026-01-02T03:04:08Z", "ExitCode": 1}]}},
	  "Config": {"Image": "web:v1", "Cmd": ["-listen", ":8080"], "Entrypoint": ["/demoapp"], "Env": ["PATH=/bin", "GREETING=hi"],
	    "StopSignal": "SIGINT", "Labels": {"rollcall.managed": "true"},
	    "Healthcheck": {"Test": ["CMD", "/demoapp", "-health"], "Interval": 1000000000, "Timeout": 2000000000, "Retries": 3, "StartPeriod": 5000000000}},
	  "HostConfig": {"PortBindings": {"8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": ""}], "53/udp": [{"HostIp": "", "HostPort": "5353"}]}},
	  "NetworkSettings": {"Networks": {"front": {}, "back": {}}}
	}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	got := configFromInspect(r)
	want := docker.ContainerConfig{
		Cmd: []string{"-listen", ":8080"}, Entrypoint: []string{"/demoapp"}, Env: []string{"PATH=/bin", "GREETING=hi"},
		Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second, Timeout: 2 * time.Second, Retries: 3, StartPeriod: 5 * time.Second},
		StopSignal:  "SIGINT",
		Ports:       []docker.PortSpec{{ContainerPort: 53, Proto: "udp", HostPort: 5353}, {ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1"}},
		Networks:    []string{"back", "front"},
	}
	gh, wh := *got.Healthcheck, *want.Healthcheck
	got.Healthcheck, want.Healthcheck = nil, nil
	if g, w := fmt.Sprintf("%+v %+v", got, gh), fmt.Sprintf("%+v %+v", want, wh); g != w {
		t.Errorf("configFromInspect =\n %s\nwant\n %s", g, w)
	}
	if c := containerFromInspect(r); !c.HealthySinceStart {
		t.Error("a probe passed after the start, yet HealthySinceStart is false")
	}
	r.Config.Healthcheck.Test = []string{"NONE"}
	if configFromInspect(r).Healthcheck != nil {
		t.Error(`a healthcheck ["NONE"] is no healthcheck`)
	}
}
