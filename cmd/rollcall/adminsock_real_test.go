package main

// Row 11 of issue 26: the proxy's admin API is rollcall's alone. The
// shipped Caddyfile once served it on 0.0.0.0:2019, on the workloads'
// network, with no authentication: any container there could PUT a split
// sending every request to itself, or read the whole config. It now listens
// on a unix socket in a directory of the host (startCaddy mounts one of the
// test's own), and on no port.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker/dockertest"
	"github.com/rollcall/rollcall/engine/proxy"
)

// TestRealEngineAdminSocketOnly starts the shipped Caddy as the README's
// recipe does and a demoapp container on its network, a workload as any
// other. Caddy's address on that network accepts connections on its proxy
// port alone (every TCP port is tried); from the container, the admin API's
// calls on :2019 and on every port that accepts get no answer from the
// admin API (refused on 2019; the proxy's own answer on 8080), and the split
// the container tried to set is not there. rollcall, through the socket,
// reads the config and sets and lifts a split: 200.
func TestRealEngineAdminSocketOnly(t *testing.T) {
	dockertest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	caddy := caddyImage(t, ctx)
	image, _ := dockertest.DemoappImage(t, "v1")
	prefix := dockertest.Prefix(t)
	network, _, admin := startCaddy(t, ctx, caddy, prefix)
	ip, err := dockertest.CLI(ctx, "inspect", "--format", "{{(index .NetworkSettings.Networks \""+network+"\").IPAddress}}", prefix+"-caddy")
	if err != nil || net.ParseIP(ip) == nil {
		t.Fatalf("Caddy's address on %s: %q, %v", network, ip, err)
	}

	// Caddy is up once its proxy port accepts: the admin endpoint starts
	// before the apps.
	up := time.Now().Add(time.Minute)
	for {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, "8080"), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(up) {
			logs, _ := dockertest.CLI(ctx, "logs", "--tail", "20", prefix+"-caddy")
			t.Fatalf("Caddy does not accept on %s:8080 a minute after its start: %v\n%s", ip, err, logs)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Every TCP port of Caddy's address on the workloads' network, tried
	// from this host, which is on that bridge as its gateway: what accepts
	// a connection is what a workload could guess.
	open := openPorts(ctx, ip)
	if !slices.Equal(open, []int{8080}) {
		t.Errorf("Caddy's address %s on the workloads' network accepts on ports %v; want its proxy port 8080 alone", ip, open)
	}

	// A workload tries the admin API: the port it listened on before and
	// every port that accepts.
	fetch := func(args ...string) (code int, out string) {
		var err error
		out, err = dockertest.CLI(ctx, append([]string{"run", "--rm", "--network", network, "--label", prefix + ".test=true",
			"--label", dockertest.RunLabelArg, image}, args...)...)
		if err != nil {
			code, out = 1, out+" "+err.Error()
		}
		t.Logf("a workload's demoapp %s: exit %d: %s", strings.Join(args, " "), code, firstLine(out))
		return code, out
	}
	split := `{"spec":"attacker","share":1}`
	tried := []int{2019}
	for _, p := range open {
		if p > 0 && p != 2019 {
			tried = append(tried, p)
		}
	}
	for _, port := range tried {
		base := "http://" + net.JoinHostPort(ip, strconv.Itoa(port))
		code, out := fetch("-fetch", base+"/config/")
		switch {
		case port == 2019 && (code != 1 || !strings.Contains(out, "connection refused")):
			t.Errorf("a workload's GET %s/config/: exit %d, %q; want no answer (connection refused)", base, code, out)
		case code == 0 && (strings.HasPrefix(out, "200 ") || strings.Contains(out, `"admin"`)):
			t.Errorf("a workload's GET %s/config/ reached the admin API: %q", base, out)
		}
		code, out = fetch("-fetch", base+"/rollcall/cohorts/"+prefix+"/web", "-method", "PUT", "-data", split)
		switch {
		case port == 2019 && (code != 1 || !strings.Contains(out, "connection refused")):
			t.Errorf("a workload's PUT %s/rollcall/cohorts/%s/web: exit %d, %q; want no answer (connection refused)", base, prefix, code, out)
		case code == 0 && strings.HasPrefix(out, "200 "):
			t.Errorf("a workload's PUT %s/rollcall/cohorts/%s/web %s answered 200: %q", base, prefix, split, out)
		}
	}

	// rollcall, on the host, through the socket.
	sock, _ := proxy.SocketPath(admin)
	if fi, err := os.Stat(sock); err != nil {
		t.Fatalf("the admin socket: %v", err)
	} else if st, ok := fi.Sys().(*syscall.Stat_t); fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o200 || !ok || st.Uid != 0 {
		t.Errorf("the admin socket %s: mode %v, owner %v; want a socket, 0200, root's (as the README says)", sock, fi.Mode(), fi.Sys())
	}
	var ws []proxy.WorkloadCohorts
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if ws, err = proxy.Cohorts(ctx, nil, admin); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("rollcall's GET /rollcall/cohorts over %s: %v", admin, err)
	}
	for _, w := range ws {
		if w.Prefix == prefix && w.Split != nil {
			t.Errorf("the workload's PUT set a split: %+v", *w.Split)
		}
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://localhost/config/", nil)
	resp, err := proxy.Client(admin).Do(req)
	if err != nil {
		t.Fatalf("rollcall's GET /config/ over %s: %v", admin, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var cfg struct {
		Admin struct {
			Listen string `json:"listen"`
		} `json:"admin"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &cfg) != nil || !strings.HasPrefix(cfg.Admin.Listen, "unix/"+caddySocketDir+"/admin.sock") {
		t.Errorf("rollcall's GET /config/ over the socket: %s, admin %+v; want 200 and the socket's listen\n%s", resp.Status, cfg.Admin, body)
	}
	if err := proxy.SetSplit(ctx, nil, admin, prefix, "web", "rollcall", 0); err != nil {
		t.Errorf("rollcall's PUT of a split over the socket: %v", err)
	}
	if err := proxy.ClearSplit(ctx, nil, admin, prefix, "web"); err != nil {
		t.Errorf("rollcall's DELETE of the split over the socket: %v", err)
	}
	if _, err := proxy.Upstreams(ctx, nil, admin); err != nil {
		t.Errorf("rollcall's upstreams over the socket: %v", err)
	}
	t.Logf("Caddy at %s on %s: open ports %v; admin API on %s (%s)", ip, network, open, filepath.Base(sock), admin)
}

// openPorts dials every TCP port of ip and returns those that accept.
func openPorts(ctx context.Context, ip string) []int {
	ports := make(chan int)
	var mu sync.Mutex
	var open []int
	var wg sync.WaitGroup
	for range 128 {
		wg.Go(func() {
			d := net.Dialer{Timeout: 2 * time.Second}
			for p := range ports {
				c, err := d.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(p)))
				if err != nil {
					if !errors.Is(err, syscall.ECONNREFUSED) {
						// Neither refused nor accepted (a dropped SYN,
						// a timeout): say so, as an open port would.
						mu.Lock()
						open = append(open, -p)
						mu.Unlock()
					}
					continue
				}
				c.Close()
				mu.Lock()
				open = append(open, p)
				mu.Unlock()
			}
		})
	}
	for p := 1; p <= 65535; p++ {
		ports <- p
	}
	close(ports)
	wg.Wait()
	slices.Sort(open)
	return open
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
