package load

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/fake"
	"github.com/rollcall/rollcall/engine/spec"
)

// pull: missing | always | never, missing by default, a bad value an error
// at its line and column; the policy changes no container (no hash).
func TestParsePullPolicy(t *testing.T) {
	for src, want := range map[string]string{
		"workloads:\n  web:\n    image: app\n":                    spec.PullMissing,
		"workloads:\n  web:\n    image: app\n    pull: always\n":  spec.PullAlways,
		"workloads:\n  web:\n    image: app\n    pull: never\n":   spec.PullNever,
		"workloads:\n  web:\n    image: app\n    pull: missing\n": spec.PullMissing,
	} {
		if got := mustParse(t, src).Workloads["web"].Pull; got != want {
			t.Errorf("%q: pull %q, want %q", src, got, want)
		}
	}
	_, err := Parse("test.yaml", []byte("workloads:\n  web:\n    image: app\n    pull: sometimes\n"))
	var e *spec.Error
	if !errors.As(err, &e) || e.Line != 4 || e.Col != 11 || !strings.Contains(e.Msg, `web.pull: unknown value "sometimes"`) ||
		!strings.Contains(e.Hint, "missing, always, never") {
		t.Fatalf("bad pull: %v", err)
	}
	a := mustParse(t, "workloads:\n  web:\n    image: app\n    pull: always\n").Workloads["web"]
	n := mustParse(t, "workloads:\n  web:\n    image: app\n    pull: never\n").Workloads["web"]
	if spec.Hash(a, "sha256:1") != spec.Hash(n, "sha256:1") {
		t.Error("the pull policy is in the spec hash")
	}
}

// compose's pull_policy maps onto pull; build is never with compose's
// hint, and a refresh period is missing with a warning.
func TestComposePullPolicy(t *testing.T) {
	for _, tc := range []struct {
		policy, want, warn string
	}{
		{"", spec.PullMissing, ""},
		{"always", spec.PullAlways, ""},
		{"never", spec.PullNever, ""},
		{"missing", spec.PullMissing, ""},
		{"if_not_present", spec.PullMissing, ""},
		{"build", spec.PullNever, "docker compose build web"},
		{"daily", spec.PullMissing, "pull_policy: always"},
	} {
		src := "services:\n  web:\n    image: app:v1\n"
		if tc.policy != "" {
			src += "    pull_policy: " + tc.policy + "\n"
		}
		d, err := ParseCompose(filepath.Join(t.TempDir(), "compose.yaml"), []byte(src), nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if got := d.Workloads["web"].Pull; got != tc.want {
			t.Errorf("pull_policy %q: pull %q, want %q", tc.policy, got, tc.want)
		}
		switch {
		case tc.warn == "" && len(d.Warnings) > 0:
			t.Errorf("pull_policy %q: warnings %v", tc.policy, spec.ErrorList(d.Warnings))
		case tc.warn != "":
			if len(d.Warnings) != 1 || d.Warnings[0].Line != 4 || !strings.Contains(d.Warnings[0].Hint, tc.warn) ||
				!strings.HasPrefix(d.Warnings[0].Msg, "services.web.pull_policy: "+tc.policy) {
				t.Errorf("pull_policy %q: warnings %v, want one at line 4 hinting %q", tc.policy, spec.ErrorList(d.Warnings), tc.warn)
			}
		}
	}
}

// An image the engine lacks is a pull (never: an error); with always, a
// tag the registry moved is a pull, a registry that cannot tell leaves the
// engine's image, and a digest reference is never asked again.
func TestResolvePulls(t *testing.T) {
	ctx := context.Background()
	f := fake.New(fake.Options{Seed: 1})
	f.Serve("reg/app:v1", "sha256:app1", fake.Behaviour{}, 1)
	d := mustParse(t, `
workloads:
  missing: {image: "reg/app:v1"}
  never:   {image: "reg/app:v1", pull: never}
  always:  {image: "reg/app:v1", pull: always}
`)
	r := spec.Resolve(ctx, d, f)
	if w := r.Workload("missing"); w.Pull == nil || w.Pull.Ref != "reg/app:v1" || w.Pull.Moved || !errors.Is(w.Err, spec.ErrPullFirst) || w.Hash != "" {
		t.Fatalf("missing: %+v", w)
	}
	if w := r.Workload("never"); w.Pull != nil || w.Err == nil || errors.Is(w.Err, spec.ErrPullFirst) || !strings.Contains(w.Err.Error(), "pull: never") {
		t.Fatalf("never: %+v", w)
	}
	if w := r.Workload("always"); w.Pull == nil || w.Pull.Moved {
		t.Fatalf("always, not on the engine: %+v", w)
	}
	if !r.NeedsPull() {
		t.Fatal("NeedsPull is false")
	}
	if _, err := f.Pull(ctx, "reg/app:v1", nil); err != nil {
		t.Fatal(err)
	}
	r = spec.Resolve(ctx, d, f)
	for _, w := range r.Workloads {
		if w.Err != nil || w.ImageID != "sha256:app1" {
			t.Fatalf("%s after the pull: %+v", w.Name, w)
		}
	}
	moved := f.Serve("reg/app:v1", "sha256:app2", fake.Behaviour{}, 1)
	r = spec.Resolve(ctx, d, f)
	if w := r.Workload("always"); w.Pull == nil || !w.Pull.Moved || w.Pull.Digest != moved || w.Hash != "" {
		t.Fatalf("always, the tag moved: %+v", w)
	}
	if w := r.Workload("missing"); w.Err != nil || w.ImageID != "sha256:app1" {
		t.Fatalf("missing, the tag moved: %+v (it follows the engine's tag)", w)
	}
	f.FailPulls("reg/app:v1", &docker.PullError{Kind: docker.PullUnreachable})
	if w := spec.Resolve(ctx, d, f).Workload("always"); w.Err != nil || w.ImageID != "sha256:app1" || docker.PullKindOf(w.RegistryErr) != docker.PullUnreachable {
		t.Fatalf("always, the registry unreachable: %+v (cannot tell is not moved, and is said)", w)
	}
	f.FailPulls("reg/app:v1", nil)
	f.ResetCalls()
	byDigest := mustParse(t, "workloads:\n  pinned: {image: \"reg/app@"+moved+"\", pull: always}\n")
	if w := spec.Resolve(ctx, byDigest, f).Workload("pinned"); w.Pull == nil || w.Pull.Moved {
		t.Fatalf("pinned by digest: %+v", w)
	}
	if _, err := f.Pull(ctx, "reg/app@"+moved, nil); err != nil {
		t.Fatal(err)
	}
	f.ResetCalls()
	if w := spec.Resolve(ctx, byDigest, f).Workload("pinned"); w.Err != nil || w.ImageID != "sha256:app2" {
		t.Fatalf("pinned by digest, pulled: %+v", w)
	}
	for _, c := range f.Calls() {
		if strings.HasPrefix(c, "distributioninspect") {
			t.Fatalf("a digest reference was asked of the registry: %v", f.Calls())
		}
	}
}

// registry_poll: a duration, at least 10s, 5m by default.
func TestParseRegistryPoll(t *testing.T) {
	d := mustParse(t, "workloads:\n  web: {image: app, pull: always}\n")
	if d.RegistryPollEvery() != spec.DefaultRegistryPoll || !d.FollowsTags() {
		t.Fatalf("default: %s, follows %v", d.RegistryPollEvery(), d.FollowsTags())
	}
	d = mustParse(t, "registry_poll: 30s\nworkloads:\n  web: {image: \"app@sha256:0123\", pull: always}\n")
	if d.RegistryPollEvery() != 30*time.Second || d.FollowsTags() {
		t.Fatalf("30s: %s, follows %v (a digest is never followed)", d.RegistryPollEvery(), d.FollowsTags())
	}
	_, err := Parse("test.yaml", []byte("registry_poll: 1s\nworkloads: {}\n"))
	var e *spec.Error
	if !errors.As(err, &e) || e.Line != 1 || e.Col != 16 || !strings.Contains(e.Msg, "registry_poll: 1s is too often") {
		t.Fatalf("1s: %v", err)
	}
}
