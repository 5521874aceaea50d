package moby

// Tests of the moby adapter that need no Docker engine: the pure mappings,
// and the event and log streams against a scripted HTTP stand-in for the
// engine API.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/events"
	"github.com/moby/moby/api/types/network"

	"github.com/rollcall/rollcall/engine/docker"
)

func TestParseRestartPolicy(t *testing.T) {
	tests := []struct {
		in      string
		want    container.RestartPolicy
		wantErr bool
	}{
		{in: "", want: container.RestartPolicy{}},
		{in: "no", want: container.RestartPolicy{Name: "no"}},
		{in: "always", want: container.RestartPolicy{Name: "always"}},
		{in: "unless-stopped", want: container.RestartPolicy{Name: "unless-stopped"}},
		{in: "on-failure", want: container.RestartPolicy{Name: "on-failure"}},
		{in: "on-failure:5", want: container.RestartPolicy{Name: "on-failure", MaximumRetryCount: 5}},
		{in: "on-failure:x", wantErr: true},
		{in: "on-failure:-1", wantErr: true},
		{in: "always:3", wantErr: true},
		{in: "sometimes", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseRestartPolicy(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("parseRestartPolicy(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
		if err == nil && tt.in != "" {
			if back := formatRestartPolicy(got); back != tt.in {
				t.Errorf("formatRestartPolicy(parseRestartPolicy(%q)) = %q", tt.in, back)
			}
		}
	}
	if got := formatRestartPolicy(container.RestartPolicy{}); got != "no" {
		t.Errorf("formatRestartPolicy of the engine's empty policy = %q, want no", got)
	}
	if got := formatRestartPolicy(container.RestartPolicy{Name: "on-failure"}); got != "on-failure" {
		t.Errorf("formatRestartPolicy(on-failure, 0 retries) = %q, want on-failure", got)
	}
}

func TestCreateOptionsSetEverythingExplicitly(t *testing.T) {
	spec := docker.CreateSpec{
		Name:    "rollcall-web-0-abcdef12",
		Image:   "web:v1",
		Command: []string{"-listen", ":8080"},
		Env:     []string{"A=1"},
		Labels:  map[string]string{"rollcall.managed": "true", "x": "y"},
		Ports: []docker.PortSpec{
			{ContainerPort: 8080},
			{HostIP: "0.0.0.0", HostPort: 9090, ContainerPort: 9090, Proto: "udp"},
		},
		Healthcheck: &docker.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second, Timeout: 2 * time.Second, Retries: 3, StartPeriod: 4 * time.Second},
		StopSignal:  "SIGINT",
		StopTimeout: 1500 * time.Millisecond,
		Limits:      docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "on-failure:2"},
		Networks:    []string{"front", "back"},
		Aliases:     map[string][]string{"front": {"web", "www"}, "back": {"web"}},
	}
	o, err := createOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	c, h := o.Config, o.HostConfig
	if o.Name != spec.Name || c.Image != spec.Image || !slices.Equal(c.Cmd, spec.Command) || !slices.Equal(c.Env, spec.Env) || c.Labels["x"] != "y" || c.StopSignal != "SIGINT" {
		t.Errorf("config = %+v", c)
	}
	if c.StopTimeout == nil || *c.StopTimeout != 2 {
		t.Errorf("StopTimeout = %v, want 2 (1.5s rounded up)", c.StopTimeout)
	}
	wantHC := container.HealthConfig{Test: spec.Healthcheck.Test, Interval: time.Second, Timeout: 2 * time.Second, Retries: 3, StartPeriod: 4 * time.Second}
	if hc := c.Healthcheck; hc == nil || !slices.Equal(hc.Test, wantHC.Test) || hc.Interval != wantHC.Interval || hc.Timeout != wantHC.Timeout || hc.Retries != wantHC.Retries || hc.StartPeriod != wantHC.StartPeriod {
		t.Errorf("healthcheck = %+v, want %+v", c.Healthcheck, wantHC)
	}
	if h.NanoCPUs != 5e8 || h.Memory != 64<<20 || h.MemorySwap != 64<<20 || h.RestartPolicy != (container.RestartPolicy{Name: "on-failure", MaximumRetryCount: 2}) {
		t.Errorf("resources %d/%d/%d, restart %+v", h.NanoCPUs, h.Memory, h.MemorySwap, h.RestartPolicy)
	}
	tcp := network.MustParsePort("8080/tcp")
	udp := network.MustParsePort("9090/udp")
	if _, ok := c.ExposedPorts[tcp]; !ok || len(c.ExposedPorts) != 2 {
		t.Errorf("exposed = %v", c.ExposedPorts)
	}
	if b := h.PortBindings[tcp]; len(b) != 1 || b[0].HostIP.String() != "127.0.0.1" || b[0].HostPort != "" {
		t.Errorf("8080/tcp bindings = %+v, want 127.0.0.1 with an ephemeral port", b)
	}
	if b := h.PortBindings[udp]; len(b) != 1 || b[0].HostIP.String() != "0.0.0.0" || b[0].HostPort != "9090" {
		t.Errorf("9090/udp bindings = %+v, want 0.0.0.0:9090", b)
	}
	if h.NetworkMode != "front" || len(o.NetworkingConfig.EndpointsConfig) != 1 || o.NetworkingConfig.EndpointsConfig["front"] == nil {
		t.Errorf("network mode %q, endpoints %v; want only the first network at create", h.NetworkMode, o.NetworkingConfig.EndpointsConfig)
	}
	if ep := o.NetworkingConfig.EndpointsConfig["front"]; ep == nil || !slices.Equal(ep.Aliases, []string{"web", "www"}) {
		t.Errorf("front endpoint %+v, want aliases web, www", ep)
	}

	spec.Healthcheck, spec.Limits, spec.Networks, spec.StopTimeout = nil, docker.Limits{}, nil, 0
	o, err = createOptions(spec)
	if err != nil {
		t.Fatal(err)
	}
	if hc := o.Config.Healthcheck; hc == nil || !slices.Equal(hc.Test, []string{"NONE"}) {
		t.Errorf("no healthcheck: engine healthcheck = %+v, want Test [NONE]", hc)
	}
	if o.HostConfig.MemorySwap != 0 || o.Config.StopTimeout != nil || o.NetworkingConfig != nil {
		t.Errorf("no limits: swap %d, stop timeout %v, networking %v; want all unset", o.HostConfig.MemorySwap, o.Config.StopTimeout, o.NetworkingConfig)
	}

	for _, bad := range []docker.PortSpec{{ContainerPort: 0}, {ContainerPort: 70000}, {ContainerPort: 80, HostPort: -1}, {ContainerPort: 80, HostIP: "localhost"}} {
		spec.Ports = []docker.PortSpec{bad}
		if _, err := createOptions(spec); err == nil {
			t.Errorf("createOptions with port %+v: nil error", bad)
		}
	}
}

func TestContainerFromInspect(t *testing.T) {
	var r container.InspectResponse
	raw := `{
	  "Id": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
	  "Created": "2026-01-02T03:04:05.123456789Z",
	  "Name": "/rollcall-web-0-abc",
	  "Image": "sha256:feed",
	  "RestartCount": 2,
	  "State": {"Status": "exited", "ExitCode": 137, "OOMKilled": true, "Error": "",
	    "StartedAt": "2026-01-02T03:04:06Z", "FinishedAt": "0001-01-01T00:00:00Z",
	    "Health": {"Status": "unhealthy", "FailingStreak": 3, "Log": [{"Start": "2026-01-02T03:04:07Z", "End": "2026-01-02T03:04:08Z", "ExitCode": 1, "Output": "503"}]}},
	  "Config": {"Image": "web:v1", "Labels": {"rollcall.managed": "true"}, "Healthcheck": {"Test": ["CMD", "/demoapp", "-health"]}},
	  "HostConfig": {"NanoCpus": 500000000, "Memory": 67108864, "RestartPolicy": {"Name": "on-failure", "MaximumRetryCount": 4}},
	  "NetworkSettings": {"Ports": {
	    "8080/tcp": [{"HostIp": "127.0.0.1", "HostPort": "32768"}, {"HostIp": "::1", "HostPort": "32768"}],
	    "53/udp": [{"HostIp": "", "HostPort": "5353"}],
	    "9000/tcp": null},
	    "Networks": {"front": {"IPAddress": "172.18.0.5"}, "bridge": {"IPAddress": ""}}}
	}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	c := containerFromInspect(r)
	want := docker.Container{
		ID:             r.ID,
		Name:           "rollcall-web-0-abc",
		Image:          "web:v1",
		ImageID:        "sha256:feed",
		Labels:         map[string]string{"rollcall.managed": "true"},
		State:          docker.StateExited,
		Health:         docker.HealthUnhealthy,
		HasHealthcheck: true,
		ExitCode:       137,
		OOMKilled:      true,
		Created:        time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC),
		StartedAt:      time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
		RestartCount:   2,
		Limits:         docker.Limits{NanoCPUs: 5e8, Memory: 64 << 20, Restart: "on-failure:4"},
		Ports: []docker.PublishedPort{
			{ContainerPort: 53, Proto: "udp", HostPort: 5353},
			{ContainerPort: 8080, Proto: "tcp", HostIP: "127.0.0.1", HostPort: 32768},
			{ContainerPort: 8080, Proto: "tcp", HostIP: "::1", HostPort: 32768},
		},
		Networks: map[string]string{"front": "172.18.0.5", "bridge": ""},
	}
	if got, w := fmt.Sprintf("%+v", c), fmt.Sprintf("%+v", want); got != w {
		t.Errorf("containerFromInspect =\n %s\nwant\n %s", got, w)
	}
	if !c.FinishedAt.IsZero() {
		t.Errorf("FinishedAt = %v, want zero for the engine's 0001-01-01", c.FinishedAt)
	}
}

func TestEventCursorDropsRepeats(t *testing.T) {
	msg := func(nano int64, id, action string) events.Message {
		return events.Message{TimeNano: nano, Action: events.Action(action), Actor: events.Actor{ID: id}}
	}
	var c eventCursor
	steps := []struct {
		msg  events.Message
		want bool
	}{
		{msg(100, "a", "start"), true},
		{msg(100, "b", "start"), true},  // same instant, other container
		{msg(100, "a", "start"), false}, // the inclusive since brings it back
		{msg(90, "c", "create"), false}, // before the cursor
		{msg(200, "a", "die"), true},
		{msg(100, "b", "start"), false},
		{msg(200, "a", "destroy"), true}, // same instant, other action
		{msg(200, "a", "die"), false},
		{events.Message{Time: 1, Action: "stop", Actor: events.Actor{ID: "a"}}, true}, // seconds only: 1s > 200ns
	}
	for i, s := range steps {
		if got := c.advance(s.msg); got != s.want {
			t.Errorf("step %d: advance(%d %s %s) = %v, want %v", i, s.msg.TimeNano, s.msg.Actor.ID, s.msg.Action, got, s.want)
		}
	}
}

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		in   string
		want docker.LogLine
	}{
		{"2026-01-02T03:04:05.123456789Z hello world", docker.LogLine{Time: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC), Stream: "stdout", Text: "hello world"}},
		{"2026-01-02T03:04:05Z ", docker.LogLine{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Stream: "stdout", Text: ""}},
		{"no timestamp here", docker.LogLine{Stream: "stdout", Text: "no timestamp here"}},
		{"", docker.LogLine{Stream: "stdout"}},
	}
	for _, tt := range tests {
		if got := parseLogLine("stdout", tt.in); got != tt.want {
			t.Errorf("parseLogLine(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
}

// engineStub is a scripted stand-in for the engine API: it answers pings,
// and hands each request for path to the next of its handlers.
type engineStub struct {
	t        *testing.T
	path     string
	mu       sync.Mutex
	handlers []http.HandlerFunc
	queries  []string
	images   []string // the queries of the image event stream, which the script never answers
}

func newEngineStub(t *testing.T, path string, handlers ...http.HandlerFunc) (*Moby, *engineStub) {
	t.Helper()
	s := &engineStub{t: t, path: path, handlers: handlers}
	return mobyOn(t, s), s
}

// mobyOn is a Moby adapter talking to h, a stand-in for the engine API,
// closed with the test.
func mobyOn(t *testing.T, h http.Handler) *Moby {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	m, err := New(context.Background(), "tcp://"+srv.Listener.Addr().String())
	if err != nil {
		t.Fatalf("New against the stand-in: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func (s *engineStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/_ping" {
		w.Header().Set("Api-Version", "1.41")
		w.WriteHeader(http.StatusOK)
		return
	}
	if !strings.HasSuffix(r.URL.Path, s.path) {
		http.Error(w, `{"message":"unexpected path"}`, http.StatusNotFound)
		return
	}
	if strings.HasSuffix(r.URL.Path, "/events") && strings.Contains(r.URL.Query().Get("filters"), `"image"`) {
		// The image stream, beside the container stream the script is
		// about: held open, with nothing on it.
		s.mu.Lock()
		s.images = append(s.images, r.URL.RawQuery)
		s.mu.Unlock()
		<-r.Context().Done()
		return
	}
	s.mu.Lock()
	s.queries = append(s.queries, r.URL.RawQuery)
	var h http.HandlerFunc
	if len(s.handlers) > 0 {
		h, s.handlers = s.handlers[0], s.handlers[1:]
	}
	s.mu.Unlock()
	if h == nil {
		<-r.Context().Done() // out of script: hold the stream open
		return
	}
	h(w, r)
}

func (s *engineStub) query(i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i >= len(s.queries) {
		return ""
	}
	return s.queries[i]
}

func writeEvents(msgs ...events.Message) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		for _, m := range msgs {
			enc.Encode(m)
		}
		// Returning ends the response: the stream breaks.
	}
}

func TestEventsResumeAfterABrokenStream(t *testing.T) {
	at := func(s int) int64 { return time.Date(2026, 1, 2, 3, 4, s, 500, time.UTC).UnixNano() }
	ev := func(s int, id, action string) events.Message {
		return events.Message{Type: "container", Action: events.Action(action), TimeNano: at(s), Time: at(s) / 1e9,
			Actor: events.Actor{ID: id, Attributes: map[string]string{"name": "web-" + id}}}
	}
	m, stub := newEngineStub(t, "/events",
		writeEvents(ev(1, "a", "create"), ev(2, "a", "exec_start: /demoapp -health"), ev(2, "a", "start")),
		func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"message":"daemon restarting"}`, http.StatusServiceUnavailable)
		},
		writeEvents(ev(2, "a", "start"), ev(3, "a", "health_status: healthy")),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, errc := m.Events(ctx, "rollcall", time.Time{})

	var got []string
	var errs []error
	deadline := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case e := <-evs:
			got = append(got, e.ContainerID+" "+e.Action+" "+e.Name)
			if e.Time.UnixNano() == 0 {
				t.Errorf("event %+v has no time", e)
			}
		case err := <-errc:
			errs = append(errs, err)
		case <-deadline:
			t.Fatalf("got %q within 10s, want three events", got)
		}
	}
	want := []string{"a create web-a", "a start web-a", "a health_status: healthy web-a"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %q, want %q (no exec events, no repeat after resuming)", got, want)
	}
	// Drain an error still pending, so both breaks are counted.
	select {
	case err := <-errc:
		errs = append(errs, err)
	case <-time.After(100 * time.Millisecond):
	}
	if len(errs) == 0 {
		t.Error("no error offered for the broken stream")
	}
	if q := stub.query(0); strings.Contains(q, "since") {
		t.Errorf("first request %q asks for since, want live events only", q)
	}
	wantSince := fmt.Sprintf("since=%d.%09d", at(2)/1e9, at(2)%1e9)
	for i := 1; i <= 2; i++ {
		if q := stub.query(i); !strings.Contains(q, wantSince) {
			t.Errorf("reconnect %d asked %q, want it to resume with %s", i, q, wantSince)
		}
		if q := stub.query(i); !strings.Contains(q, "rollcall.managed%3Dtrue") {
			t.Errorf("reconnect %d asked %q, want the managed label filter", i, q)
		}
	}
	// Beside it, the image stream: images' tag events only, engine-side,
	// with no container label (an image carries none).
	stub.mu.Lock()
	images := slices.Clone(stub.images)
	stub.mu.Unlock()
	if len(images) != 1 {
		t.Errorf("image streams opened: %q, want one", images)
	} else if f, _ := url.QueryUnescape(images[0]); !strings.Contains(f, `"type":{"image":true}`) || !strings.Contains(f, `"tag":true`) || strings.Contains(f, "label") {
		t.Errorf("image stream asked %q, want type image, its tag events, no label filter", f)
	}

	cancel()
	for range evs {
	}
	for range errc {
	}
}

// frame is one multiplexed log frame: stream 1 stdout, 2 stderr.
func frame(stream byte, s string) []byte {
	h := make([]byte, 8, 8+len(s))
	h[0] = stream
	binary.BigEndian.PutUint32(h[4:], uint32(len(s)))
	return append(h, s...)
}

func TestLogsDemultiplexInOrder(t *testing.T) {
	ts := "2026-01-02T03:04:05.000000001Z "
	m, stub := newEngineStub(t, "/logs", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
		for _, f := range [][]byte{
			frame(1, ts+"one\n"),
			frame(2, ts+"oops\n"),
			frame(1, ts+"two "), // a line split across frames
			frame(1, "halves\n"),
			frame(1, ts+"last, no newline"),
		} {
			w.Write(f)
		}
	})
	lines, err := m.Logs(context.Background(), "abc", docker.LogOptions{Tail: 5, Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for l := range lines {
		if l.Time.Nanosecond() != 1 {
			t.Errorf("line %+v: timestamp not parsed", l)
		}
		got = append(got, l.Stream+":"+l.Text)
	}
	want := []string{"stdout:one", "stderr:oops", "stdout:two halves", "stdout:last, no newline"}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	q := stub.query(0)
	for _, p := range []string{"stdout=1", "stderr=1", "timestamps=1", "follow=1", "tail=5"} {
		if !strings.Contains(q, p) {
			t.Errorf("logs query %q lacks %s", q, p)
		}
	}
}

func TestLogsStopWhenTheReaderGoes(t *testing.T) {
	m, _ := newEngineStub(t, "/logs", func(w http.ResponseWriter, r *http.Request) {
		for i := 0; r.Context().Err() == nil; i++ {
			if _, err := w.Write(frame(1, fmt.Sprintf("line %d\n", i))); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	lines, err := m.Logs(ctx, "abc", docker.LogOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	<-lines
	cancel()
	done := make(chan struct{})
	go func() {
		for range lines {
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("log channel still open 5s after the context ended")
	}
}

func TestEngineErrMarksNotFoundOnly(t *testing.T) {
	m, _ := newEngineStub(t, "/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"message":"No such container: abc"}`))
	})
	_, err := m.Inspect(context.Background(), "abc")
	if !errors.Is(err, docker.ErrNotFound) || !strings.Contains(err.Error(), "inspect abc: ") || !strings.Contains(err.Error(), "No such container") {
		t.Errorf("Inspect of a missing container: %v, want ErrNotFound with the verb and the engine's message", err)
	}
	if errors.Is(err, docker.ErrConflict) {
		t.Errorf("not-found error %v also matches ErrConflict", err)
	}
}
