package session

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/state"
)

// rollcall retry lifts a hold only once its decision is journaled: with a
// journal that cannot be written the hold stays; with one, the line is
// there and the hold is gone.
func TestRetryHoldsJournalsFirst(t *testing.T) {
	dir := t.TempDir()
	info := docker.EngineInfo{ID: "engine-1"}
	path := state.HoldsPath(dir, info, "rc")
	if _, err := state.UpdateHoldsFile(path, time.Second, func(cur state.Holds) bool {
		cur.Add(state.Hold{Workload: "web", Hash: "abcdef0123456789", Since: time.Now().UTC(), By: "ops"})
		return true
	}); err != nil {
		t.Fatal(err)
	}
	holds, err := ListHolds(dir, info, "rc")
	if err != nil || len(holds) != 1 {
		t.Fatalf("holds %v, %v", holds, err)
	}
	blocked := filepath.Join(dir, "not-a-dir")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = RetryHolds(dir, filepath.Join(blocked, "journal.jsonl"), info, "rc", "web", "ops", "retry", holds)
	var re *RetryError
	if !errors.As(err, &re) || re.Stage != RetryNotJournaled {
		t.Fatalf("retry with no journal: %v, want RetryNotJournaled", err)
	}
	if left, _ := ListHolds(dir, info, "rc"); len(left) != 1 {
		t.Fatalf("a retry that could not be journaled lifted the hold: %v left", left)
	}
	jpath := filepath.Join(dir, "journal.jsonl")
	lifted, err := RetryHolds(dir, jpath, info, "rc", "web", "ops", "retry", holds)
	if err != nil || len(lifted) != 1 {
		t.Fatalf("retry: %v lifted, %v", lifted, err)
	}
	es, err := journal.Read(jpath, 0)
	if err != nil || len(es) != 1 || es[0].Action != "retry" || es[0].Workload != "web" || es[0].Engine != "engine-1" {
		t.Fatalf("journal %+v, %v: want the retry line", es, err)
	}
	if left, _ := ListHolds(dir, info, "rc"); len(left) != 0 {
		t.Fatalf("holds %v after the retry", left)
	}
}
