package rollcallup

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// fakeEngine answers /containers/json with what list holds (an error
// status while fail is set) and holds /events open, sending a line on
// each poke; it records the list filters it was asked.
type fakeEngine struct {
	mu      sync.Mutex
	list    string
	fail    bool
	filters []string
	events  chan string
}

func (f *fakeEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/containers/json"):
		f.mu.Lock()
		defer f.mu.Unlock()
		f.filters = append(f.filters, r.URL.Query().Get("filters"))
		if f.fail {
			http.Error(w, `{"message":"engine restarting"}`, http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(f.list))
	case strings.HasSuffix(r.URL.Path, "/events"):
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-r.Context().Done():
				return
			case line := <-f.events:
				w.Write([]byte(line + "\n"))
				w.(http.Flusher).Flush()
			}
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeEngine) set(list string, fail bool) {
	f.mu.Lock()
	f.list, f.fail = list, fail
	f.mu.Unlock()
}

func container(ip string) string {
	return `{"Id":"x","NetworkSettings":{"Networks":{"front":{"IPAddress":"` + ip + `"},"bridge":{"IPAddress":"172.17.0.9"}}}}`
}

func waitFor(t *testing.T, w *watcher, want []string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !slices.Equal(w.current(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("routes %v, want %v", w.current(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWatcherRoutesWhatTheEngineListsHealthy: the set is the workload's
// running, healthy or healthcheck-less containers (asked of the engine),
// at their address on the network; an event relists at once; a failed list
// keeps the last set.
func TestWatcherRoutesWhatTheEngineListsHealthy(t *testing.T) {
	eng := &fakeEngine{events: make(chan string)}
	eng.set("["+container("10.0.0.2")+"]", false)
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(eng)
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	cfg := Upstreams{Workload: "web", Prefix: "rc", Network: "front", Port: "8080", Socket: sock, Refresh: 1 << 62} // events only
	w := newWatcher(cfg, zap.NewNop())
	go w.run()
	defer w.cancel()
	waitFor(t, w, []string{"10.0.0.2:8080"})

	eng.mu.Lock()
	var f map[string][]string
	json.Unmarshal([]byte(eng.filters[0]), &f)
	eng.mu.Unlock()
	if !slices.Equal(f["label"], []string{"rc.managed=true", "rc.workload=web"}) ||
		!slices.Equal(f["status"], []string{"running"}) || !slices.Equal(f["health"], []string{"healthy", "none"}) {
		t.Errorf("list filters %v: want the workload's managed, running, healthy or unchecked containers", f)
	}

	// An event (a new one healthy, say) relists at once.
	eng.set("["+container("10.0.0.2")+","+container("10.0.0.3")+"]", false)
	eng.events <- `{"status":"health_status: healthy"}`
	waitFor(t, w, []string{"10.0.0.2:8080", "10.0.0.3:8080"})

	// A list that fails keeps what was routed.
	eng.set("", true)
	eng.mu.Lock()
	asked := len(eng.filters)
	eng.mu.Unlock()
	eng.events <- `{"status":"die"}`
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		eng.mu.Lock()
		n := len(eng.filters)
		eng.mu.Unlock()
		if n > asked {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no relist after an event")
		}
	}
	time.Sleep(20 * time.Millisecond) // the failed answer taken in
	if got := w.current(); !slices.Equal(got, []string{"10.0.0.2:8080", "10.0.0.3:8080"}) {
		t.Errorf("after a failed list: routes %v, want the last set kept", got)
	}

	// One leaves (unhealthy): out of rotation.
	eng.set("["+container("10.0.0.3")+"]", false)
	eng.events <- `{"status":"health_status: unhealthy"}`
	waitFor(t, w, []string{"10.0.0.3:8080"})
}
