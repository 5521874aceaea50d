// Package state is what outlives a rollcall process on a host (DESIGN §2):
// the host lock, the holds, the revisions and the pins, each kept in a
// small file.
//
//   - The host lock (lock.go) is an exclusive flock on one file per engine
//     and prefix; the file names its holder ("user pid since") for the
//     sessions that cannot get it. A holder whose process is gone names
//     nobody.
//   - The holds (holds.go) are the specs rolled back (§5 rule 9), one JSON
//     file per engine and prefix in the state directory. Every change is a
//     read, a change and a whole write (write, then rename) under a flock
//     on a lock file beside it, so two processes never lose each other's
//     change.
//   - The revisions (revisions.go) are the specs that reached every slot
//     of a workload healthy, the last 10 per workload, and the pins
//     (revisions_pins.go) the revisions operators rolled workloads back
//     to (§12): one JSON file each per engine and prefix, read bounded
//     and changed as the holds file is.
//
// Every call here touches the disk and may block on it: a session runs
// them beside its loop, never on it. What a session decides about the lock
// and the holds (when to take, drop, lift or write them) is the session's;
// this package only keeps them.
//
// An engine is named in file names by its identity (the ID of `docker
// info`), not by the endpoint, so two paths to one engine share its lock and
// its holds. A simulated engine lives in one process, so its files are per
// process.
//
// It imports only the plain types of engine/docker and engine/spec's
// Workload (a revision keeps its whole spec); never reconcile, session,
// tui or theme.
package state
