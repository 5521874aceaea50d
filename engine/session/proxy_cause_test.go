package session

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// The proxy's cause is read from the error's type: a request that got no
// answer gives the transport's error, without the call around it; any
// other failure is given whole.
func TestProxyCauseIsTheTransportsError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: the dial is refused
	_, getErr := http.Get("http://" + addr + "/reverse_proxy/upstreams")
	if getErr == nil {
		t.Fatal("a closed port answered")
	}
	wrapped := fmt.Errorf("caddy upstreams: %w", getErr)
	got := proxyCause(wrapped)
	if !strings.HasPrefix(got, "dial tcp "+addr) || strings.Contains(got, "caddy upstreams") || strings.Contains(got, "Get ") {
		t.Fatalf("cause %q of %q", got, wrapped)
	}
	other := errors.New("caddy upstreams: 500 Internal Server Error: boom")
	if got := proxyCause(other); got != other.Error() {
		t.Fatalf("cause %q, want the error whole", got)
	}
}
