package session

import (
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/docker"
	"github.com/rollcall/rollcall/engine/journal"
)

// RetryStage is where an offline retry stopped (RetryError).
type RetryStage int

const (
	RetryNotJournaled RetryStage = iota + 1 // the journal could not be opened or written: the hold stays
	RetryNotLifted                          // journaled, but the holds file could not be changed: the hold stays
)

// RetryError is an offline retry that did not lift its holds, and where it
// stopped.
type RetryError struct {
	Stage RetryStage
	Err   error
}

func (e *RetryError) Error() string { return e.Err.Error() }
func (e *RetryError) Unwrap() error { return e.Err }

// RetryHolds is the operator's `rollcall retry` of workload when no
// session need be running: the holds of the engine and prefix kept in dir
// are lifted once the decision is journaled (no audit, no action), as a
// session's Retry does. holds are the workload's holds as the caller read
// them (ListHolds): the journal line names them. It returns the holds it
// lifted: none when they were lifted meanwhile (the desired spec changed,
// or another retry). A running session lifts them too at its next relist.
func RetryHolds(dir, journalPath string, info docker.EngineInfo, prefix, workload, user, mode string, holds []Hold) ([]Hold, error) {
	shorts := make([]string, len(holds))
	for i, h := range holds {
		shorts[i] = short(h.Hash)
	}
	jr, err := journal.Open(journalPath, journal.Options{})
	if err != nil {
		return nil, &RetryError{RetryNotJournaled, err}
	}
	defer jr.Close()
	engine := info.ID
	if engine == "" {
		engine = info.Endpoint
	}
	entry := journal.Entry{Time: time.Now(), User: user, Mode: mode, Action: "retry",
		Workload: workload, Slot: -1, Reason: "hold lifted on spec " + strings.Join(shorts, ", "),
		Result: journal.ResultDecision, Engine: engine, Prefix: prefix}
	if err := jr.Append(entry); err != nil {
		return nil, &RetryError{RetryNotJournaled, err}
	}
	lifted, err := LiftHolds(dir, info, prefix, workload)
	if err != nil {
		return nil, &RetryError{RetryNotLifted, err}
	}
	return lifted, nil
}
