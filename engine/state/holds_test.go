package state

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
)

const pfx = "rollcall"

// TestHoldsFileRead: a file of an older rollcall (hashes alone) reads as
// holds without who and when; a FIFO in the file's place is an error, not
// a hang; a torn file is an error naming the file, and is not written over.
func TestHoldsFileRead(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := HoldsPath(dir, info, pfx)
	if err := os.WriteFile(path, []byte(`{"web": ["aaaa1111", "bbbb2222"]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	hs, err := ListHolds(dir, info, pfx)
	if err != nil || len(hs) != 2 || hs[0].Hash != "aaaa1111" || !hs[0].Since.IsZero() || hs[0].By != "" {
		t.Fatalf("old file: %+v %v", hs, err)
	}
	byHash, err := ReadHolds(dir, info, pfx)
	if err != nil || !byHash["web"]["aaaa1111"] || !byHash["web"]["bbbb2222"] || len(byHash) != 1 {
		t.Fatalf("ReadHolds: %v %v", byHash, err)
	}

	if err := os.WriteFile(path, []byte(`{"web": [{"hash": "aa`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ListHolds(dir, info, pfx); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("torn file: %v, want an error naming %s", err, path)
	}
	if _, err := LiftHolds(dir, info, pfx, "web"); err == nil {
		t.Errorf("a torn file was written over")
	}
	if data, _ := os.ReadFile(path); string(data) != `{"web": [{"hash": "aa` {
		t.Errorf("the torn file changed: %q", data)
	}

	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ListHolds(dir, info, pfx); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("FIFO: %v, want not a regular file", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("reading a FIFO in the holds file's place hangs")
	}
}

// A hold is written with who, when and why, read back the same, and lifted
// by LiftHolds, which returns what it lifted; no holds left: no file.
func TestHoldsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := HoldsPath(dir, info, pfx)
	since := time.Date(2026, 4, 30, 3, 12, 0, 0, time.UTC)
	want := Hold{Workload: "web", Hash: "aaaa1111", Since: since, By: "night-shift", Reason: "web/0: rollback: not healthy"}
	recs := Holds{}
	recs.Add(want)
	recs.Add(Hold{Workload: "api", Hash: "cccc3333"})
	if err := WriteHoldsFile(path, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ListHolds(dir, info, pfx)
	if err != nil || len(got) != 2 || got[0].Workload != "api" || got[1] != want {
		t.Fatalf("read back %+v %v, want api's then %+v", got, err, want)
	}
	lifted, err := LiftHolds(dir, info, pfx, "web")
	if err != nil || len(lifted) != 1 || lifted[0] != want {
		t.Fatalf("lifted %+v %v, want %+v", lifted, err, want)
	}
	if none, err := LiftHolds(dir, info, pfx, "web"); err != nil || len(none) != 0 {
		t.Errorf("second lift: %+v %v, want nothing", none, err)
	}
	if _, err := LiftHolds(dir, info, pfx, "api"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the holds file outlives its last hold: %v", err)
	}
}

// A hold keeps its typed cause through the file; a hold of a file written
// before causes were kept, with or without its words, reads as
// HoldCauseUnknown (never as the operator's), its words kept as the
// detail.
func TestHoldCauseIsKeptInTheFile(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := HoldsPath(dir, info, pfx)
	recs := Holds{}
	for i, c := range []HoldCause{HoldByOperator, HoldByCanaryAbort, HoldByFailureAction} {
		recs.Add(Hold{Workload: "web", Hash: fmt.Sprintf("hash%d", i), Since: time.Unix(int64(i), 0).UTC(), Cause: c})
	}
	if err := WriteHoldsFile(path, recs); err != nil {
		t.Fatal(err)
	}
	got, err := ListHolds(dir, info, pfx)
	if err != nil || len(got) != 3 || got[0].Cause != HoldByOperator || got[1].Cause != HoldByCanaryAbort || got[2].Cause != HoldByFailureAction {
		t.Fatalf("read back %+v %v, want each hold's cause", got, err)
	}
	older := `{"web": [{"hash": "aaaa1111", "by": "alice", "reason": "rolled back by the operator"}], "api": ["bbbb2222"]}`
	if err := os.WriteFile(path, []byte(older), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err = ListHolds(dir, info, pfx)
	if err != nil || len(got) != 2 || got[0].Cause != HoldCauseUnknown || got[1].Cause != HoldCauseUnknown || got[1].Reason != "rolled back by the operator" {
		t.Fatalf("older file read %+v %v, want causes unknown and the words kept", got, err)
	}
	if HoldCauseUnknown.Key() != "unknown" || HoldByCanaryAbort.Key() != "canary-abort" {
		t.Errorf("keys %q %q", HoldCauseUnknown.Key(), HoldByCanaryAbort.Key())
	}
	said := map[string]bool{}
	for _, c := range []HoldCause{HoldCauseUnknown, HoldByOperator, HoldByCanaryAbort, HoldByFailureAction} {
		if w := c.Said(); w == "" || said[w] {
			t.Errorf("cause %q said %q: empty or the same as another's", c, w)
		} else {
			said[w] = true
		}
	}
}

// Changes of the holds file from many writers at once are all kept: each
// is a read, a change and a write under the file's lock.
func TestHoldsChangesAreNotLost(t *testing.T) {
	dir := t.TempDir()
	path := HoldsPath(dir, docker.EngineInfo{ID: "engine-1"}, pfx)
	const writers = 20
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := UpdateHoldsFile(path, HoldsLockWait, func(cur Holds) bool {
				cur.Add(Hold{Workload: "web", Hash: string(rune('a' + i))})
				return true
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, err := ReadHoldsFile(path)
	if err != nil || len(recs["web"]) != writers {
		t.Fatalf("holds %d %v, want %d", len(recs["web"]), err, writers)
	}
}

// A change waits for another's lock for as long as it is told, then fails
// without writing.
func TestHoldsChangeWaitsForTheLock(t *testing.T) {
	path := HoldsPath(t.TempDir(), docker.EngineInfo{ID: "engine-1"}, pfx)
	release, held := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := UpdateHoldsFile(path, HoldsLockWait, func(Holds) bool { close(held); <-release; return false })
		done <- err
	}()
	<-held
	began := time.Now()
	_, err := UpdateHoldsFile(path, 50*time.Millisecond, func(cur Holds) bool { cur.Add(Hold{Workload: "web", Hash: "x"}); return true })
	if err == nil || !strings.Contains(err.Error(), "another rollcall") || time.Since(began) < 50*time.Millisecond {
		t.Errorf("change under another's lock: %v after %s, want a refusal after the wait", err, time.Since(began))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if recs, _ := ReadHoldsFile(path); len(recs) != 0 {
		t.Errorf("the refused change was written: %v", recs)
	}
}

// TestHoldsFileTooLarge: a holds file past maxHoldsFile is refused, even
// when it is valid JSON (padded with spaces), and one at the bound reads.
func TestHoldsFileTooLarge(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := HoldsPath(dir, info, pfx)
	body := `{"web": ["aaaa1111"]}`
	write := func(size int) {
		t.Helper()
		data := []byte(body + strings.Repeat(" ", size-len(body)))
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(maxHoldsFile)
	if hs, err := ListHolds(dir, info, pfx); err != nil || len(hs) != 1 {
		t.Fatalf("a file of maxHoldsFile bytes: %+v %v, want one hold", hs, err)
	}
	write(maxHoldsFile + 1)
	hs, err := ListHolds(dir, info, pfx)
	if err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a file of maxHoldsFile+1 bytes: %+v %v, want refused as too large", hs, err)
	}
	if len(hs) != 0 {
		t.Errorf("a refused file still gave holds: %+v", hs)
	}
}
