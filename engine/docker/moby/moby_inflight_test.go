package moby

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

// lockingEngine stands in for the engine's container lock as Docker 20.10
// holds it: a start or a stop holds the container, and an inspect of it
// waits until the call ends. The list answers without the lock.
type lockingEngine struct {
	mu       sync.Mutex
	state    string        // of the one container, c1
	held     chan struct{} // closed when the test lets the call in flight end
	entered  chan string   // "start" or "stop" as the call arrives
	inspects int           // of c1 while a call held it
	lockedBy string
}

func (e *lockingEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	w.Header().Set("Content-Type", "application/json")
	switch {
	case path == "/_ping":
		w.Header().Set("Api-Version", "1.41")
	case strings.HasSuffix(path, "/containers/create"):
		e.set("created")
		w.WriteHeader(http.StatusCreated)
		w.Write([]byte(`{"Id":"c1"}`))
	case strings.HasSuffix(path, "/containers/c1/start"), strings.HasSuffix(path, "/containers/c1/stop"):
		call := path[strings.LastIndex(path, "/")+1:]
		e.mu.Lock()
		e.lockedBy = call
		held := e.held
		e.mu.Unlock()
		e.entered <- call
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
		e.mu.Lock()
		e.lockedBy = ""
		e.state = map[string]string{"start": "running", "stop": "exited"}[call]
		e.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(path, "/containers/json"):
		e.mu.Lock()
		status := map[string]string{"created": "Created", "running": "Up 2 seconds (healthy)",
			"unhealthy": "Up 3 seconds (unhealthy)", "exited": "Exited (0) 1 second ago"}[e.state]
		state := map[bool]string{true: "running", false: e.state}[e.state == "unhealthy"]
		json.NewEncoder(w).Encode([]map[string]any{{"Id": "c1", "Names": []string{"/rc-web-0"}, "State": state, "Status": status,
			"Labels": map[string]string{"rc.managed": "true"}}})
		e.mu.Unlock()
	case strings.HasSuffix(path, "/containers/c1/json"):
		e.mu.Lock()
		locked, held := e.lockedBy != "", e.held
		if locked {
			e.inspects++
		}
		e.mu.Unlock()
		if locked {
			select {
			case <-held: // the engine's container lock
			case <-r.Context().Done():
				return
			}
		}
		e.mu.Lock()
		health := map[bool]string{true: `,"Health":{"Status":"healthy"}`}[e.state == "running"]
		body := `{"Id":"c1","Name":"/rc-web-0","Created":"2026-01-02T03:04:05Z","State":{"Status":"` + e.state + `"` + health + `},` +
			`"Config":{"Image":"web:v2","Labels":{"rc.managed":"true"},"Healthcheck":{"Test":["CMD","/demoapp","-health"]}},"HostConfig":{}}`
		e.mu.Unlock()
		w.Write([]byte(body))
	default:
		http.Error(w, `{"message":"unexpected path"}`, http.StatusNotFound)
	}
}

func (e *lockingEngine) set(state string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.state = state
}

// A list while the adapter's own start or stop holds a container does not
// wait for the engine's lock: it serves the container's last inspect with
// the list's state, and says a created container is starting. The call's
// end makes the next list inspect it again.
func TestListDoesNotWaitForACallInFlight(t *testing.T) {
	e := &lockingEngine{entered: make(chan string, 1)}
	m := mobyOn(t, e)
	var held []chan struct{}
	hold := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.held = make(chan struct{})
		held = append(held, e.held)
	}
	release := func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, h := range held {
			select {
			case <-h:
			default:
				close(h)
			}
		}
	}
	t.Cleanup(release) // a failed test lets the stand-in's calls end
	// A list that waits for the lock fails here instead of hanging.
	list := func() []docker.Container {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := m.List(ctx, "rc")
		if err != nil {
			t.Fatalf("List during the call: %v", err)
		}
		if len(got) != 1 {
			t.Fatalf("List = %d containers, want 1", len(got))
		}
		return got
	}

	hold()
	created := make(chan error, 1)
	go func() {
		_, err := m.Create(context.Background(), docker.CreateSpec{Name: "rc-web-0", Image: "web:v2", Labels: map[string]string{"rc.managed": "true"}})
		created <- err
	}()
	<-e.entered
	c := list()[0]
	if c.State != docker.StateCreated || !c.Starting {
		t.Errorf("during its start: state %s, starting %v; want created and starting", c.State, c.Starting)
	}
	e.set("running") // the engine runs it before the call returns
	if c = list()[0]; c.State != docker.StateRunning || c.Starting {
		t.Errorf("running, its start call not yet back: state %s, starting %v; want running, not starting", c.State, c.Starting)
	}
	release()
	if err := <-created; err != nil {
		t.Fatal(err)
	}
	c = list()[0]
	if c.State != docker.StateRunning || c.Health != docker.HealthHealthy || c.Starting {
		t.Errorf("after its start: state %s, health %s, starting %v; want running, healthy, not starting", c.State, c.Health, c.Starting)
	}

	hold()
	stopped := make(chan error, 1)
	go func() { stopped <- m.Stop(context.Background(), "c1", time.Second) }()
	<-e.entered
	e.set("unhealthy") // draining: the list says so, the last inspect does not
	if c = list()[0]; c.State != docker.StateRunning || c.Health != docker.HealthUnhealthy {
		t.Errorf("during its stop: state %s, health %s; want running and unhealthy, as the list says", c.State, c.Health)
	}
	e.set("exited") // it died; the engine cleans up under the lock
	c = list()[0]
	if c.State != docker.StateExited || c.Starting || c.Labels["rc.managed"] != "true" {
		t.Errorf("during its stop: state %s, starting %v, labels %v; want exited, from the last inspect", c.State, c.Starting, c.Labels)
	}
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	if e.mu.Lock(); e.inspects != 0 {
		t.Errorf("%d inspects of the container while a call held it, want 0", e.inspects)
	}
	e.mu.Unlock()
}
