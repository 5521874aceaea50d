package session

import "github.com/rollcall/rollcall/engine/source"

// StaleError is a polled source's failed load (source.StaleError): the
// session keeps the last good desired state, and LastGood says when the
// source last confirmed it. The console reads it here, as it reads
// everything of the engine through the session.
type StaleError = source.StaleError
