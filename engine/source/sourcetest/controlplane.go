// Package sourcetest is a helper of the tests of URL sources: a control
// plane that serves a desired-state document over HTTP.
package sourcetest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// ControlPlane is a test server for the desired state: it answers with
// whatever answer holds now, and records each request's If-None-Match.
type ControlPlane struct {
	mu      sync.Mutex
	answer  func(w http.ResponseWriter, r *http.Request)
	ifNone  []string
	srv     *httptest.Server
	release chan struct{}
}

// NewControlPlane starts a control plane, closed at t's cleanup. Until
// Set or Serve it answers 404.
func NewControlPlane(t testing.TB) *ControlPlane {
	cp := &ControlPlane{release: make(chan struct{}), answer: http.NotFound}
	cp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cp.mu.Lock()
		cp.ifNone = append(cp.ifNone, r.Header.Get("If-None-Match"))
		answer := cp.answer
		cp.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(func() { close(cp.release); cp.srv.Close() })
	return cp
}

// Set makes answer the answer to every request from now on.
func (cp *ControlPlane) Set(answer func(w http.ResponseWriter, r *http.Request)) {
	cp.mu.Lock()
	cp.answer = answer
	cp.mu.Unlock()
}

// Serve answers body with etag, or 304 to a request that already has it.
// An empty etag sends none.
func (cp *ControlPlane) Serve(body, etag string) {
	cp.Set(func(w http.ResponseWriter, r *http.Request) {
		if etag != "" && r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		if etag != "" {
			w.Header().Set("ETag", etag)
		}
		_, _ = w.Write([]byte(body))
	})
}

// Requests is how many requests came in so far.
func (cp *ControlPlane) Requests() int {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return len(cp.ifNone)
}

// LastIfNoneMatch is the If-None-Match of the last request ("" for none).
func (cp *ControlPlane) LastIfNoneMatch() string {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	if len(cp.ifNone) == 0 {
		return ""
	}
	return cp.ifNone[len(cp.ifNone)-1]
}

// Released is closed at cleanup: a slow answer waits on it (or on its
// request's context) so the server can close.
func (cp *ControlPlane) Released() <-chan struct{} { return cp.release }

// URL is the document's address.
func (cp *ControlPlane) URL() string { return cp.srv.URL + "/desired.yaml" }
