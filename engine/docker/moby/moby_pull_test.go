package moby_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/docker/dockertest"
)

// The adapter pulls from a registry through the real engine: its progress
// adds up, the image is then there with the digest the registry's
// distribution inspect names, and each failure the engine reports is of
// its kind, with no credential in its words.
func TestMobyPullFromARegistry(t *testing.T) {
	m := dockertest.Engine(t)
	local := dockertest.ImageTag("pull", "v1")
	dockertest.BuildForRegistry(t, local, "v1", 2<<20)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const password = "pa55-w0rd-never-shown"
	reg := dockertest.StartRegistry(t, dockertest.WithBasicAuth("ci", password))
	ref := reg.Push(t, local, dockertest.Repo("pull")+":v1")
	dockertest.RemoveLocal(t, local)
	dockertest.RemoveLocal(t, ref)

	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials
	_, err := m.Pull(ctx, ref, nil)
	if docker.PullKindOf(err) != docker.PullUnauthorized {
		t.Fatalf("pull without credentials: %v (kind %s), want unauthorized", err, docker.PullKindOf(err))
	}
	if _, err := m.DistributionInspect(ctx, ref); docker.PullKindOf(err) != docker.PullUnauthorized {
		t.Fatalf("distribution inspect without credentials: %v, want unauthorized", err)
	}
	t.Setenv("DOCKER_CONFIG", reg.DockerConfig(t, t.TempDir()))
	digest, err := m.DistributionInspect(ctx, ref)
	if err != nil || !strings.HasPrefix(digest, "sha256:") {
		t.Fatalf("distribution inspect: %q, %v", digest, err)
	}
	var last docker.PullProgress
	img, err := m.Pull(ctx, ref, func(p docker.PullProgress) { last = p })
	if err != nil {
		t.Fatal(err)
	}
	if last.Layers == 0 || last.LayersDone != last.Layers || last.BytesDone != last.Bytes || last.Bytes == 0 {
		t.Errorf("last progress %+v: want every layer and byte done", last)
	}
	if !strings.HasSuffix(strings.Join(img.RepoDigests, " "), "@"+digest) {
		t.Errorf("pulled image %+v, want the digest %s", img, digest)
	}

	_, err = m.Pull(ctx, reg.Host+"/"+dockertest.Repo("pull")+":nosuchtag", nil)
	if docker.PullKindOf(err) != docker.PullNotFound {
		t.Errorf("pull of a tag the registry lacks: %v (kind %s), want not found", err, docker.PullKindOf(err))
	}
	ln, lerr := net.Listen("tcp", "127.0.0.1:0")
	if lerr != nil {
		t.Fatal(lerr)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, err = m.Pull(ctx, closed+"/"+dockertest.Repo("pull")+":v1", nil)
	if docker.PullKindOf(err) != docker.PullUnreachable {
		t.Errorf("pull from no registry: %v (kind %s), want unreachable", err, docker.PullKindOf(err))
	}
	var pe *docker.PullError
	for _, e := range []error{err} {
		if errors.As(e, &pe) && strings.Contains(pe.Error(), password) {
			t.Errorf("an error holds the password: %v", e)
		}
	}
}
