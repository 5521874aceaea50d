package moby

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rollcall/rollcall/engine/docker"
)

// What engine 20.10 says of a failed pull is typed here, and only here.
func TestPullErrorKinds(t *testing.T) {
	for _, tt := range []struct {
		said string
		code int
		want docker.PullKind
	}{
		{"manifest for 127.0.0.1:5055/team/app:v9 not found: manifest unknown: manifest unknown", 0, docker.PullNotFound},
		{"pull access denied for team/app, repository does not exist or may require 'docker login'", 0, docker.PullUnauthorized},
		{`Head "http://127.0.0.1:5055/v2/team/app/manifests/v1": no basic auth credentials`, 0, docker.PullUnauthorized},
		{"unauthorized: authentication required", 0, docker.PullUnauthorized},
		{"toomanyrequests: You have reached your pull rate limit.", 0, docker.PullRateLimited},
		{"anything", 429, docker.PullRateLimited},
		{"anything", 404, docker.PullNotFound},
		{`Get "http://127.0.0.1:1/v2/": dial tcp 127.0.0.1:1: connect: connection refused`, 0, docker.PullUnreachable},
		{"write /var/lib/docker/tmp/GetImageBlob1: no space left on device", 0, docker.PullNoSpace},
		{"something new", 0, docker.PullOther},
	} {
		e := pullError("127.0.0.1:5055/team/app:v1", errors.New(tt.said), tt.code)
		if e.Kind != tt.want || e.Detail != tt.said {
			t.Errorf("%q (code %d): kind %s detail %q, want %s and the words kept", tt.said, tt.code, e.Kind, e.Detail, tt.want)
		}
	}
}

// The engine's stream of layer messages adds up to layers and bytes.
func TestPullTally(t *testing.T) {
	tl := newPullTally("app:v1")
	msgs := []struct {
		id, status   string
		current, max int64
	}{
		{"v1", "Pulling from team/app", 0, 0},
		{"aaa", "Pulling fs layer", 0, 0},
		{"bbb", "Already exists", 0, 0},
		{"aaa", "Downloading", 100, 400},
		{"aaa", "Downloading", 400, 400},
		{"aaa", "Download complete", 0, 0},
		{"aaa", "Extracting", 200, 400},
		{"aaa", "Pull complete", 0, 0},
		{"", "Digest: sha256:abc", 0, 0},
	}
	for _, m := range msgs {
		tl.take(m.id, m.status, m.current, m.max)
	}
	if p := tl.progress(); p.Layers != 2 || p.LayersDone != 2 || p.Bytes != 400 || p.BytesDone != 400 {
		t.Fatalf("progress %+v, want 2/2 layers and 400/400 bytes", p)
	}
}

// Credentials come from the docker CLI's config (DOCKER_CONFIG read at
// every pull), as the engine's X-Registry-Auth; a helper that fails is
// said without what it printed.
func TestRegistryAuthFromTheDockerConfig(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	if auth, err := registryAuth("127.0.0.1:5055/team/app:v1"); err != nil || auth != "" {
		t.Fatalf("no config: %q, %v; want no auth", auth, err)
	}
	const secret = "s3cr3t-pa55"
	cfg := `{"auths":{"127.0.0.1:5055":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("ci:"+secret)) + `"}},
		"credHelpers":{"127.0.0.1:6066":"rollcall-test-missing"}}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, perr := registryAuth("127.0.0.1:5055/team/app:v1")
	if perr != nil {
		t.Fatal(perr)
	}
	raw, err := base64.URLEncoding.DecodeString(auth)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Username, Password string }
	if err := json.Unmarshal(raw, &got); err != nil || got.Username != "ci" || got.Password != secret {
		t.Fatalf("X-Registry-Auth holds %+v (%v), want ci's", got, err)
	}
	_, perr = registryAuth("127.0.0.1:6066/team/app:v1")
	if perr == nil || perr.Kind != docker.PullUnauthorized || !strings.Contains(perr.Detail, "docker-credential-rollcall-test-missing") {
		t.Fatalf("a helper that is not there: %v", perr)
	}
	if strings.Contains(perr.Error(), secret) {
		t.Fatalf("the error holds the password: %v", perr)
	}
}

// A credential helper on PATH (credHelpers for one registry, credsStore
// for the rest) gives the credentials, as the docker CLI's do.
func TestRegistryAuthFromACredentialHelper(t *testing.T) {
	bin := t.TempDir()
	script := "#!/bin/sh\n[ \"$1\" = get ] || exit 1\nread url\n" +
		"case \"$url\" in *7077*) echo '{\"ServerURL\":\"'$url'\",\"Username\":\"ci\",\"Secret\":\"from-the-helper\"}';;\n" +
		"*) echo 'credentials not found in native keychain'; exit 1;; esac\n"
	for _, name := range []string{"docker-credential-rctest", "docker-credential-rcstore"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := t.TempDir()
	t.Setenv("DOCKER_CONFIG", dir)
	cfg := `{"credHelpers":{"127.0.0.1:7077":"rctest"},"credsStore":"rcstore"}`
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, perr := registryAuth("127.0.0.1:7077/team/app:v1")
	if perr != nil {
		t.Fatal(perr)
	}
	raw, err := base64.URLEncoding.DecodeString(auth)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Username, Password string }
	if err := json.Unmarshal(raw, &got); err != nil || got.Username != "ci" || got.Password != "from-the-helper" {
		t.Fatalf("X-Registry-Auth holds %+v (%v), want the helper's", got, err)
	}
	// The store has nothing for another registry: no credentials, as the CLI.
	if auth, perr := registryAuth("127.0.0.1:8088/team/app:v1"); perr != nil || auth != "" {
		t.Fatalf("a registry the store does not know: %q, %v", auth, perr)
	}
}
