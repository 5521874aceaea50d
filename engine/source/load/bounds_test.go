package load

import (
	"fmt"
	"strings"
	"testing"
)

// TestBounds (issue 26, row 14): every number that drives memory or time
// is bounded, at its line:col with a hint, and the bound itself is taken.
func TestBounds(t *testing.T) {
	many := func(n int, item func(i int) string) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(item(i))
		}
		return b.String()
	}
	workloads := func(n, replicas int) string {
		return "workloads:\n" + many(n, func(i int) string { return fmt.Sprintf("  w%d: {image: app, replicas: %d}\n", i, replicas) })
	}
	hosts := func(n int, body string) string {
		return "hosts:\n" + many(n, func(i int) string { return fmt.Sprintf("  h%d: {endpoint: \"ssh://h%d\"%s}\n", i, i, body) })
	}
	steps := func(n int) string {
		return "[" + strings.TrimSuffix(many(n, func(int) string { return "{share: 10%, for: 1m}, " }), ", ") + "]"
	}
	webhooks := func(n int) string {
		return "[" + strings.TrimSuffix(many(n, func(i int) string { return fmt.Sprintf("\"https://h%d.example/x\", ", i) }), ", ") + "]"
	}
	const canaryOK = "{interval: 10s, max_error_rate: 1%}"
	tests := []struct {
		rule      string
		ok, bad   string
		pos       string
		msg, hint string
	}{
		{"replicas", doc("    replicas: 1000\n"), doc("    replicas: 99999999999\n"), "4:15", "web.replicas: 99999999999 is more than 1000", "at most 1000 replicas"},
		{"replicas past int64", doc("    replicas: 1000\n"), doc("    replicas: 999999999999999999999\n"), "4:15", "expected an integer", ""},
		{"replicas on a host", doc("") + hosts(1, ", replicas: {web: 1000}"), doc("") + hosts(1, ", replicas: {web: 10000000}"), "5:46", "hosts.h0.replicas.web: 10000000 is more than 1000", "at most 1000"},
		{"workloads", workloads(1000, 1), workloads(1001, 1), "1:1", "workloads: 1001 workloads, more than 1000", "at most 1000 workloads"},
		{"containers on the engine", workloads(10, 1000), workloads(11, 1000), "1:1", "workloads: 11000 replicas in all, more than 10000", "at most 10000 containers"},
		{"containers on a host", workloads(10, 1000) + hosts(1, ""), workloads(11, 1) + hosts(1, ", replicas: {"+strings.TrimSuffix(many(11, func(i int) string { return fmt.Sprintf("w%d: 1000, ", i) }), ", ")+"}"), "", "", ""},
		{"hosts", doc("") + hosts(200, ""), doc("") + hosts(201, ""), "4:1", "hosts: 201 hosts, more than 200", "at most 200 hosts"},
		{"webhooks", doc("") + "notify: " + webhooks(20) + "\n", doc("") + "notify: " + webhooks(21) + "\n", "4:9", "notify: 21 webhooks, more than 20", "at most 20 webhooks"},
		{"canary steps", canaryDoc(steps(20), canaryOK), canaryDoc(steps(21), canaryOK), "6:16", "steps: 21 steps, more than 20", "at most 20 steps"},
		{"canary interval from below", canaryDoc(steps(1), "{interval: 100ms, max_error_rate: 1%}"), canaryDoc(steps(1), "{interval: 1ns, max_error_rate: 1%}"), "7:30", "interval: 1ns is too short", "at least 100ms"},
		{"canary interval from above", canaryDoc(steps(1), "{interval: 24h, max_error_rate: 1%}"), canaryDoc(steps(1), "{interval: 25h, max_error_rate: 1%}"), "7:30", "interval: 25h is too long", "at most 24h"},
		{"canary step's for", canaryDoc("[{share: 10%, for: 24h}]", canaryOK), canaryDoc("[{share: 10%, for: 876000h}]", canaryOK), "6:35", "for: 876000h is too long", "at most 24h"},
		{"health_deadline", doc("    update: {health_deadline: 24h}\n"), doc("    update: {health_deadline: 876000h}\n"), "4:31", "health_deadline: 876000h is too long", "at most 24h"},
		{"min_ready", doc("    update: {min_ready: 24h}\n"), doc("    update: {min_ready: 25h}\n"), "4:25", "min_ready: 25h is too long", ""},
		{"drain", doc("    update: {drain: 24h}\n"), doc("    update: {drain: 25h}\n"), "4:21", "drain: 25h is too long", ""},
		{"parallelism", doc("    update: {parallelism: 1000}\n"), doc("    update: {parallelism: 1001}\n"), "4:27", "parallelism: 1001 is more than 1000", ""},
		{"stop_grace_period", doc("    stop_grace_period: 24h\n"), doc("    stop_grace_period: 100000h\n"), "4:24", "stop_grace_period: 100000h is too long", ""},
		{"healthcheck interval", doc("    healthcheck: {test: [CMD, /a], interval: 24h}\n"), doc("    healthcheck: {test: [CMD, /a], interval: 25h}\n"), "4:46", "interval: 25h is too long", ""},
		{"healthcheck retries", doc("    healthcheck: {test: [CMD, /a], retries: 100}\n"), doc("    healthcheck: {test: [CMD, /a], retries: 101}\n"), "4:45", "retries: 101 is more than 100", ""},
		{"fleet wait", doc("") + hosts(2, "") + "fleet: {wait: 24h}\n", doc("") + hosts(2, "") + "fleet: {wait: 25h}\n", "7:15", "fleet.wait: 25h is too long", ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			if _, err := Parse("test.yaml", []byte(tt.ok)); err != nil {
				t.Fatalf("at the bound: %v", err)
			}
			if tt.pos == "" { // a host's line: found below
				_, err := Parse("test.yaml", []byte(tt.bad))
				if err == nil || !strings.Contains(err.Error(), "test.yaml:14:3: hosts.h0: 11000 replicas in all, more than 10000") {
					t.Fatalf("want hosts.h0's total refused at its line; got %v", err)
				}
				return
			}
			wantParseError(t, tt.bad, tt.pos, tt.msg, tt.hint)
		})
	}
}

// TestComposeBounds: the same bounds hold in a compose file, at the
// compose attribute's line:col.
func TestComposeBounds(t *testing.T) {
	tests := []struct{ rule, src, want string }{
		{"deploy.replicas", "services:\n  web:\n    image: app\n    deploy: {replicas: 99999999999}\n",
			"compose.yaml:4:24: services.web.deploy.replicas: 99999999999 is more than 1000"},
		{"scale", "services:\n  web:\n    image: app\n    scale: 10000000\n", "compose.yaml:4:12: services.web.scale: 10000000 is more than 1000"},
		{"parallelism", "services:\n  web:\n    image: app\n    deploy: {update_config: {parallelism: 5000}}\n",
			"compose.yaml:4:43: services.web.deploy.update_config.parallelism: 5000 is more than 1000"},
		{"monitor", "services:\n  web:\n    image: app\n    deploy: {update_config: {monitor: 876000h}}\n",
			"compose.yaml:4:39: services.web.deploy.update_config.monitor: 876000h0m0s is too long"},
		{"stop_grace_period", "services:\n  web:\n    image: app\n    stop_grace_period: 876000h\n",
			"compose.yaml:4:24: services.web.stop_grace_period: 876000h0m0s is too long"},
		{"containers on the engine", "services:\n" + func() string {
			var b strings.Builder
			for i := range 11 {
				fmt.Fprintf(&b, "  w%d: {image: app, deploy: {replicas: 1000}}\n", i)
			}
			return b.String()
		}(), "compose.yaml:1:1: workloads: 11000 replicas in all, more than 10000"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := ParseCompose("compose.yaml", []byte(tt.src), nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v\nwant %q", err, tt.want)
			}
		})
	}
}
