// Package loopkit is the small kit a loop that owns state is built from,
// shared by engine/session and engine/fleet (and the signals of
// engine/notify and engine/source): a signal that wakes without
// blocking, a one-shot alarm a select can wait on, an unbounded intent
// queue, a worker that runs slow jobs beside the loop in order, and the
// fingerprints that tell desired states apart.
//
// Rules it keeps: nothing here ever blocks the loop (Signal, Queue.Push
// and Worker.Push return at once, whatever the other side does); nothing
// is dropped (a queue and a worker keep every item, in order); an alarm
// not armed has a nil channel, so a select on it waits forever.
//
// It imports engine/spec (for the fingerprints) and the standard library
// only; it must not import the session, the fleet or any adapter.
package loopkit
