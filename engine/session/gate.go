package session

// The gate is how a fleet (engine/fleet) holds one host's session while
// other hosts roll: a wave that has not started, a canary that is not yet
// healthy. It is not the pause: a pause is the operator's or a failure's
// (failure_action pause) and only Resume lifts it; the gate is the
// caller's alone, and opening it never lifts a pause. While it is closed
// no step starts, in any mode (an operator rollback's stops still run, as
// through a pause), but for pull steps when Pulls is set: a fleet pulls on
// every host before any host's first other step; a step in flight finishes.

// Gate opens or closes the session's gate. Why says, closed, what it
// waits for: the snapshot shows it (Gated, Waiting).
type Gate struct {
	Open bool
	Why  string
	// Pulls lets the pull steps through a closed gate: they touch nothing
	// that serves.
	Pulls bool
}

func (Gate) intent() {}

// gateWaiting is why a gated session's gate is closed before the caller
// said anything, and again after a new desired state loaded.
const gateWaiting = "waiting for the fleet's decision on this desired state"

// setGate takes in a Gate intent.
func (g *guards) setGate(i Gate) {
	g.gatePulls = !i.Open && i.Pulls
	if i.Open {
		g.gated = ""
		return
	}
	g.gated = i.Why
	if g.gated == "" {
		g.gated = "closed by the caller"
	}
}

// gateOnNewDesired closes a gated session's gate (gated:
// Options.Gated) as a new desired state loads: nothing of it runs before
// the caller opens it again.
func (g *guards) gateOnNewDesired(gated bool) {
	if gated {
		g.gated, g.gatePulls = gateWaiting, false
	}
}
