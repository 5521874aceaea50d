package docker

import (
	"errors"
	"fmt"
)

// PullKind is why a pull (or a distribution inspect) failed, as data: the
// engine's and the registry's words travel beside it (PullError.Detail) and
// are shown, never matched.
type PullKind string

const (
	PullNotFound     PullKind = "not-found"    // no such repository, tag or manifest
	PullUnauthorized PullKind = "unauthorized" // no credentials, wrong ones, or access denied
	PullUnreachable  PullKind = "unreachable"  // the registry could not be reached (DNS, refused, timeout, TLS)
	PullRateLimited  PullKind = "rate-limited" // the registry said too many requests (HTTP 429)
	PullNoSpace      PullKind = "no-space"     // the engine's disk is full
	PullOther        PullKind = "other"        // anything else the engine said
)

// PullKinds are every PullKind, in the order views list them.
var PullKinds = []PullKind{PullNotFound, PullUnauthorized, PullUnreachable, PullRateLimited, PullNoSpace, PullOther}

// Text is the kind in a few words, for a plan line or a note.
func (k PullKind) Text() string {
	switch k {
	case PullNotFound:
		return "not found in the registry"
	case PullUnauthorized:
		return "unauthorized"
	case PullUnreachable:
		return "registry unreachable"
	case PullRateLimited:
		return "rate limited by the registry"
	case PullNoSpace:
		return "no space left on the engine"
	}
	return "pull failed"
}

// PullError is a failed pull or distribution inspect. It never holds a
// credential: Detail is what the engine or the registry said about the
// reference, and the adapter that builds it never puts the auth header or
// the docker config's secrets in it.
type PullError struct {
	Ref    string
	Kind   PullKind
	Status int    // the HTTP status the engine or the registry gave, 0 when none
	Detail string // the engine's or the registry's words, as data
	// Err is the cause where one is kept (a context's end), for errors.Is.
	Err error
}

func (e *PullError) Error() string {
	s := fmt.Sprintf("pull %s: %s", e.Ref, e.Kind.Text())
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

func (e *PullError) Unwrap() error { return e.Err }

// PullKindOf is the kind of a failed pull, PullOther for an error that is
// not a *PullError, and "" for nil.
func PullKindOf(err error) PullKind {
	if err == nil {
		return ""
	}
	var pe *PullError
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return PullOther
}

// PullProgress is how far a pull is: layers and bytes, done and known so
// far (a registry tells a layer's size only as its download begins, so
// Bytes may grow while the pull runs). Layers that the engine already had
// count done at once.
type PullProgress struct {
	Ref        string
	Layers     int
	LayersDone int
	Bytes      int64
	BytesDone  int64
}

// Fraction is the share done, from bytes where they are known, else from
// layers; 0 before anything is known.
func (p PullProgress) Fraction() float64 {
	switch {
	case p.Bytes > 0:
		return min(1, float64(p.BytesDone)/float64(p.Bytes))
	case p.Layers > 0:
		return float64(p.LayersDone) / float64(p.Layers)
	}
	return 0
}
