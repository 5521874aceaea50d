// Package source is where desired states come from, behind one interface,
// Source: Name for the header, Load for the state as it is now, Changes to
// say when Load may give a new one.
//
//   - File follows a rollcall.yaml however it is replaced: written in place,
//     renamed over, or reached through symbolic links whose targets change
//     anywhere along the chain (a Kubernetes ConfigMap's ..data swap, ln
//     -sfn). It watches with fsnotify and polls beside the watch, so a
//     missed event is caught late rather than never.
//   - Compose is a compose file read by load.ParseCompose, followed as File
//     is, with the .env beside it.
//   - URL polls a document served over HTTP(S) with If-None-Match, with an
//     optional bearer token read from a file at each poll; a failed load is
//     a *StaleError that says when the source last confirmed the state.
//   - Static is a state held in memory that never changes.
//
// A read is bounded: anything but a regular file (a FIFO, a device) and a
// document over spec.MaxDocumentBytes is an error, never a blocked or
// unbounded read. The session (engine/session) loads a source beside its
// loop and keeps the last good state when a load fails; this package knows
// nothing of the session.
package source
