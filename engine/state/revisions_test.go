package state

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/spec"
)

// rev is a revision of web on image tag v<i>, recorded at minute i.
func rev(i int) Revision {
	w := &spec.Workload{Name: "web", Image: fmt.Sprintf("web:v%d", i), Version: fmt.Sprint(i), Replicas: 2,
		Command: []string{"-listen", ":8080"}, Environment: map[string]string{"GREETING": "hello"},
		Healthcheck: &spec.Healthcheck{Test: []string{"CMD", "/demoapp", "-health"}, Interval: time.Second},
		StopSignal:  "SIGTERM", StopGrace: 10 * time.Second, PreStop: []string{"/demoapp", "-drain"},
		Update: spec.UpdatePolicy{Strategy: spec.StrategyRolling, Parallelism: 1, Drain: 300 * time.Millisecond}}
	id := fmt.Sprintf("sha256:%04d", i)
	return Revision{Workload: "web", Hash: spec.Hash(w, id), Image: w.Image, ImageID: id, Version: w.Version,
		At: time.Date(2026, 5, 1, 10, i, 0, 0, time.UTC), Rollout: fmt.Sprintf("r-%d", i), Spec: w}
}

// A revision is written whole and read back the same: its spec, hash,
// image, when and rollout; numbered 1, 2, … in the order kept.
func TestRevisionsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := RevisionsPath(dir, info, pfx)
	for i := 1; i <= 2; i++ {
		kept, err := RecordRevision(path, RevisionsLockWait, rev(i))
		if err != nil || kept.Number != i {
			t.Fatalf("record v%d: %+v %v, want number %d", i, kept, err, i)
		}
	}
	api := rev(7)
	api.Workload, api.Spec.Name = "api", "api"
	if _, err := RecordRevision(path, RevisionsLockWait, api); err != nil {
		t.Fatal(err)
	}
	got, err := ListRevisions(dir, info, pfx)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		want := rev(i)
		want.Number = i
		if !reflect.DeepEqual(got["web"][i-1], want) {
			t.Errorf("web revision %d read back\n %+v\nwant\n %+v", i, got["web"][i-1], want)
		}
	}
	if len(got["api"]) != 1 || got["api"][0].Number != 1 || got["api"][0].Spec.Name != "api" {
		t.Errorf("api's revisions %+v, want its own, numbered from 1", got["api"])
	}
	if l := got.List(); len(l) != 3 || l[0].Workload != "api" || l[2].Number != 2 {
		t.Errorf("List %+v, want api's then web's, oldest first", l)
	}
	// Another engine, another prefix: other files.
	if other, err := ListRevisions(dir, docker.EngineInfo{ID: "engine-2"}, pfx); err != nil || len(other) != 0 {
		t.Errorf("another engine's revisions: %v %v, want none", other, err)
	}
	if other, err := ListRevisions(dir, info, "other"); err != nil || len(other) != 0 {
		t.Errorf("another prefix's revisions: %v %v, want none", other, err)
	}
}

// Only the last MaxRevisions are kept per workload, the newest last, and
// the numbers go on.
func TestRevisionsKeepTheLastTen(t *testing.T) {
	path := RevisionsPath(t.TempDir(), docker.EngineInfo{ID: "engine-1"}, pfx)
	for i := 1; i <= MaxRevisions+3; i++ {
		if _, err := RecordRevision(path, RevisionsLockWait, rev(i)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadRevisionsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list := got["web"]
	if len(list) != MaxRevisions {
		t.Fatalf("%d revisions kept, want %d", len(list), MaxRevisions)
	}
	for i, r := range list {
		if want := i + 4; r.Number != want || r.Image != fmt.Sprintf("web:v%d", want) {
			t.Errorf("revision %d kept: number %d image %s, want the last ten, oldest first (%d)", i, r.Number, r.Image, want)
		}
	}
}

// A spec kept already is not kept twice: recorded as the newest again it
// is a no-op; recorded again after another (a rollback to it converged),
// it moves to the end and keeps its number, so the newest is last and a
// number shown names the same spec.
func TestRevisionsNoDuplicates(t *testing.T) {
	path := RevisionsPath(t.TempDir(), docker.EngineInfo{ID: "engine-1"}, pfx)
	record := func(r Revision) Revision {
		t.Helper()
		kept, err := RecordRevision(path, RevisionsLockWait, r)
		if err != nil {
			t.Fatal(err)
		}
		return kept
	}
	record(rev(1))
	record(rev(2))
	again := rev(2)
	again.At = again.At.Add(time.Hour)
	if kept := record(again); kept.Number != 2 || !kept.At.Equal(rev(2).At) {
		t.Errorf("the newest recorded again: %+v, want it as it was (number 2, its first time)", kept)
	}
	back := rev(1)
	back.At, back.Rollout = back.At.Add(time.Hour), "r-back"
	if kept := record(back); kept.Number != 1 {
		t.Errorf("an older spec recorded again: number %d, want 1 (its own)", kept.Number)
	}
	got, err := ReadRevisionsFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list := got["web"]
	if len(list) != 2 || list[0].Image != "web:v2" || list[1].Image != "web:v1" || list[1].Number != 1 || list[1].Rollout != "r-back" {
		t.Fatalf("revisions %+v, want v2 (2) then v1 (1), each once", list)
	}
	// The same hash with another image ID is another revision.
	rebuilt := rev(1)
	rebuilt.ImageID = "sha256:rebuilt"
	if kept := record(rebuilt); kept.Number != 3 {
		t.Errorf("a rebuilt image: number %d, want a revision of its own (3)", kept.Number)
	}
	if p, ok := got.Previous("web", list[1].Hash); !ok || p.Number != 2 {
		t.Errorf("Previous with v1 desired: %+v %v, want v2 (the newest that is not the desired spec)", p, ok)
	}
	if p, ok := got.Previous("web", "elsewhere"); !ok || p.Number != 1 {
		t.Errorf("Previous with a desired spec never reached: %+v %v, want the newest (1)", p, ok)
	}
	if r, ok := got.Find("web", 1); !ok || r.Image != "web:v1" {
		t.Errorf("number 1: %+v %v, want v1 still", r, ok)
	}
}

// The revisions file is read bounded: a file over the bound, a FIFO in its
// place, or a torn file is an error naming the file, and a file that
// cannot be read is not written over.
func TestRevisionsFileRead(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := RevisionsPath(dir, info, pfx)

	big := `{"web": [` + strings.Repeat(" ", maxRevisionsFile) + `]}`
	if err := os.WriteFile(path, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListRevisions(dir, info, pfx); err == nil || !strings.Contains(err.Error(), "larger than") || !strings.Contains(err.Error(), path) {
		t.Errorf("huge file: %v, want refused as larger than the bound", err)
	}

	torn := `{"web": [{"number": 1, "hash": "aa`
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListRevisions(dir, info, pfx); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("torn file: %v, want an error naming %s", err, path)
	}
	if _, err := RecordRevision(path, RevisionsLockWait, rev(1)); err == nil {
		t.Errorf("a torn file was written over")
	}
	if data, _ := os.ReadFile(path); string(data) != torn {
		t.Errorf("the torn file changed: %q", data)
	}
	if err := os.WriteFile(path, []byte(`{"web": [{"number": 1, "hash": "aa", "image_id": "sha256:1"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListRevisions(dir, info, pfx); err == nil || !strings.Contains(err.Error(), "without its spec") {
		t.Errorf("a revision without its spec: %v, want refused", err)
	}

	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ListRevisions(dir, info, pfx); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v, want not a regular file", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("reading a FIFO in the revisions file's place hangs")
	}
}

// A pin is written with its whole revision, who, when and the desired
// spec it was set against, read back the same, replaced by a new pin of
// its workload, and lifted by LiftPin; no pins left: no file.
func TestPinsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	r := rev(1)
	r.Number = 1
	want := Pin{Workload: "web", Revision: r, Against: rev(2).Hash, By: "alice", Since: time.Date(2026, 5, 1, 11, 0, 0, 0, time.UTC)}
	if was, err := SetPin(dir, info, pfx, want); err != nil || was != nil {
		t.Fatalf("set: %v %v", was, err)
	}
	got, err := ListPins(dir, info, pfx)
	if err != nil || len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Fatalf("read back %+v %v\nwant %+v", got, err, want)
	}
	second := want
	second.By, second.Since = "bob", want.Since.Add(time.Minute)
	if was, err := SetPin(dir, info, pfx, second); err != nil || was == nil || !was.Same(want) {
		t.Fatalf("set again: replaced %+v %v, want the first", was, err)
	}
	if second.Same(want) {
		t.Errorf("a pin set again is the same as the one it replaced")
	}
	lifted, err := LiftPin(dir, info, pfx, "web")
	if err != nil || lifted == nil || !lifted.Same(second) {
		t.Fatalf("lifted %+v %v, want the second pin", lifted, err)
	}
	if none, err := LiftPin(dir, info, pfx, "web"); err != nil || none != nil {
		t.Errorf("second lift: %+v %v, want nothing", none, err)
	}
	if _, err := os.Stat(PinsPath(dir, info, pfx)); !os.IsNotExist(err) {
		t.Errorf("the pins file outlives its last pin: %v", err)
	}
	if err := os.WriteFile(PinsPath(dir, info, pfx), []byte(`{"web": {"revision": {"number": 1, "hash": "a", "image_id": "b", "spec": {}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListPins(dir, info, pfx); err == nil || !strings.Contains(err.Error(), "set against") {
		t.Errorf("a pin without its desired spec: %v, want refused", err)
	}
}
