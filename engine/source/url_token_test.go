package source

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/source/sourcetest"
)

// The token file's content, trimmed, goes out as a bearer token; a
// rotated token is used from the next poll on.
func TestURLSourceSendsTheBearerToken(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	var mu sync.Mutex
	var got []string
	body := "prefix: " + pfx + "\n" + desiredYAML("web:v1", 2)
	cp.Set(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(body))
	})
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("  s3cret-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := mustURL(t, cp.URL(), URLOptions{TokenFile: tokenFile})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokenFile, []byte("s3cret-2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 || got[0] != "Bearer s3cret-1" || got[1] != "Bearer s3cret-2" {
		t.Fatalf("Authorization headers %q, want the token, then the rotated one", got)
	}
	if strings.Contains(src.Name(), "s3cret") {
		t.Errorf("Name() %q shows the token", src.Name())
	}
}

// A token file that cannot be used is an error at once, naming the file
// and never the token, and never blocks (a FIFO) or reads without bound.
func TestURLSourceRefusesBadTokenFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ rule, path, want string }{
		{"absent", filepath.Join(dir, "none"), "no such file"},
		{"a FIFO", fifo, "not a regular file"},
		{"a link to /dev/zero", zero, "not a regular file"},
		{"a directory", dir, "not a regular file"},
		{"empty", write("empty", " \n"), "empty"},
		{"too long", write("long", strings.Repeat("a", MaxTokenBytes+1)), "KiB limit"},
		{"two lines", write("lines", "s3cret\nX-Evil: 1\n"), "cannot"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				_, err := URL("https://example.com/desired.yaml", URLOptions{TokenFile: tc.path})
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("URL still blocks after 5s")
			}
			var terr *TokenFileError
			if !errors.As(err, &terr) || terr.Path != tc.path || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
				t.Fatalf("err = %v, want a TokenFileError naming %s with %q", err, tc.path, tc.want)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "Evil") {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

// A token file that breaks after a good answer fails the poll (a
// StaleError with the file's name) without asking the server.
func TestURLSourceTokenFileGoneKeepsLastGood(t *testing.T) {
	cp := sourcetest.NewControlPlane(t)
	cp.Serve("prefix: "+pfx+"\n"+desiredYAML("web:v1", 2), `"v1"`)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := mustURL(t, cp.URL(), URLOptions{TokenFile: tokenFile})
	if _, err := src.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	_, err := src.Load(context.Background())
	var stale *StaleError
	var terr *TokenFileError
	if !errors.As(err, &stale) || !errors.As(err, &terr) || stale.LastGood.IsZero() {
		t.Fatalf("Load with the token file gone = %v, want a StaleError from a TokenFileError with LastGood set", err)
	}
	n := cp.Requests()
	if n != 1 {
		t.Errorf("%d requests, want 1: no request goes out without its token", n)
	}
}
