package journal

import (
	"errors"
	"os"
	"path/filepath"
)

// StateDir is the directory rollcall keeps its state in (the journal, the
// holds, the lock files), as a service expects it:
//
//   - $XDG_STATE_HOME/rollcall, when XDG_STATE_HOME is an absolute path;
//   - else $HOME/.local/state/rollcall, when HOME is an absolute path;
//   - else, as root (a system unit without User= has no HOME),
//     /var/lib/rollcall;
//   - else an error that says how to set it.
//
// It never falls back to the temporary directory, where another user can
// create the directory first and cleaning removes it. The directory is not
// created here.
func StateDir() (string, error) {
	return stateDir(os.Getenv, os.Geteuid())
}

// ErrNoStateDir is StateDir's refusal: nothing says where state belongs.
var ErrNoStateDir = errors.New("no state directory: XDG_STATE_HOME and HOME are unset and rollcall does not run as root; set XDG_STATE_HOME or HOME, or pass --journal PATH")

func stateDir(getenv func(string) string, euid int) (string, error) {
	if dir := getenv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "rollcall"), nil
	}
	if home := getenv("HOME"); filepath.IsAbs(home) {
		return filepath.Join(home, ".local", "state", "rollcall"), nil
	}
	if euid == 0 {
		return "/var/lib/rollcall", nil
	}
	return "", ErrNoStateDir
}

// DefaultPath is where the journal lives unless told otherwise:
// journal.jsonl in StateDir, or StateDir's error.
func DefaultPath() (string, error) {
	dir, err := StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "journal.jsonl"), nil
}
