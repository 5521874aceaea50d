package session

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/rollcall/rollcall/engine/proxy"
)

// TestCanaryOverTheAdminSocket: with proxy.caddy_admin on a unix socket,
// as the shipped Caddyfile serves it (row 11 of issue 26), the session
// reaches the proxy through it: the canary's shares are set and lifted
// there, and the proxy view (the drain's upstreams) answers with no error.
func TestCanaryOverTheAdminSocket(t *testing.T) {
	f, clock := newEngine()
	seed(t, f, clock, desiredYAML("web:v1", 2))
	c := newCohortStandIn(t, f) // its TCP listener is left unused
	// Not t.TempDir: its path can pass the 107 bytes of a socket's path.
	dir, err := os.MkdirTemp("", "adm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(c.serve)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	admin := proxy.UnixScheme + sock

	h := newHarness(t, f, clock, canaryYAML("web:v2", admin, "[{share: 10%, for: 300ms}, {share: 50%, for: 300ms}]"), ModeAuto)
	h.start()
	h.drive("the proxy answered over the socket", func(s Snapshot) bool {
		return s.Proxy != nil && s.Proxy.Admin == admin && !s.Proxy.At.IsZero() && s.Proxy.Err == ""
	})
	h.drive("rolled to v2", func(s Snapshot) bool { return running(s, "web:v2") == 2 && running(s, "web:v1") == 0 })
	c.get(func(c *cohortStandIn) {
		// The canary's split at share 0 before its container exists
		// (DESIGN §12), then each step's share, then the split lifted.
		if !slices.Equal(c.shares, []float64{0, 0.1, 0.5}) || c.deletes != 1 {
			t.Errorf("over the socket: shares %v, deletes %d; want 0 (before the create), 10%%, 50%%, then the split lifted once", c.shares, c.deletes)
		}
	})
}
