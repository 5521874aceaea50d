package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rollcall/rollcall/engine/spec"
)

// Exit codes. plan adds exitPending.
const (
	exitOK      = 0
	exitFailed  = 1
	exitPending = 2
)

// exitError ends a command with a code other than 1. A nil err prints
// nothing: the command has already said what there is to say.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// hintError is an error with advice for the operator, printed on the same line.
type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + " (hint: " + e.hint + ")" }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hint string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hint: hint}
}

// usageError is a bad command line; it points at the command's --help.
type usageError struct {
	err     error
	command string // "rollcall plan"; "" for rollcall
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usageErr(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// report prints err for the operator and returns the exit code. Errors in
// the desired-state file keep their "file:line:col: message" form, so an
// editor can jump to them; everything else is one line after "rollcall: ".
// Either is terminal-safe: an error may quote a file, an engine answer or
// a container's labels.
func report(w io.Writer, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil {
			return code
		}
		err = ee.err
	}
	var list spec.ErrorList
	var ue *usageError
	switch {
	case errors.As(err, &list):
		fmt.Fprintln(w, termSafeLines(list.Error()))
	case errors.As(err, &ue):
		command := ue.command
		if command == "" {
			command = "rollcall"
		}
		fmt.Fprintf(w, "rollcall: %s\nRun '%s --help' for usage.\n", termSafe(oneLine(err.Error())), command)
	default:
		fmt.Fprintf(w, "rollcall: %s\n", termSafe(oneLine(err.Error())))
	}
	return code
}

// oneLine folds a multi-line error (a joined one, say) onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
