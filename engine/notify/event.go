package notify

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
)

// SchemaVersion is the version of the JSON an event is posted as. It
// grows only when a field changes meaning or goes away; a field added
// leaves it as it is.
const SchemaVersion = 1

// Kind is what an event is about.
type Kind string

// The kinds a session posts (engine/session/notify.go), and the sample.
const (
	KindRolloutStarted Kind = "rollout_started" // the first step towards a new desired state began
	KindRolloutEnded   Kind = "rollout_ended"   // it ended: Outcome says how
	KindStepFailed     Kind = "step_failed"     // a step failed at the engine
	KindHealthFailed   Kind = "health_failed"   // a new container missed its health deadline; Action is the failure_action
	KindRollback       Kind = "rollback"        // failure_action rollback stopped the new container, or the operator rolled back
	KindHold           Kind = "hold"            // a spec went on hold: it does not start again until the desired spec changes or a retry
	KindPin            Kind = "pin"             // an operator pinned a workload to a revision (rollcall rollback, u): Spec is the desired spec held, ToImage the pinned revision's
	KindEngineLost     Kind = "engine_lost"     // the engine stopped answering
	KindEngineBack     Kind = "engine_back"     // it answers again
	KindTest           Kind = "test"            // `rollcall notify-test`
)

// The canary by traffic (DESIGN §12): a step that passed or held
// (canary_step), and one that failed and aborted the canary (abort), with
// their figures (Event.Canary). The fleet's kinds are held for the part of
// §11 that will post them.
const (
	KindCanaryStep      Kind = "canary_step"
	KindAbort           Kind = "abort"
	KindFleetWave       Kind = "fleet_wave"
	KindFleetHostFailed Kind = "fleet_host_failed"
)

// Outcome is how a rollout ended (rollout_ended).
type Outcome string

const (
	OutcomeConverged  Outcome = "converged"  // every slot runs the desired spec, healthy
	OutcomeHeld       Outcome = "held"       // nothing more runs by itself: a spec on hold keeps slots off the desired state, or a canary holds on too little traffic
	OutcomeFailed     Outcome = "failed"     // something failed and nothing more runs by itself (failure_action pause, a refused desired state, a workload that cannot converge, the journal)
	OutcomeSuperseded Outcome = "superseded" // a newer desired state came before the end; its own rollout follows
	OutcomeStopped    Outcome = "stopped"    // the session ended first (apply timed out, the agent was stopped)
)

// Event is one thing posted. The caller fills in what it knows; Send sets
// SchemaVersion, Time when zero, Text when empty, and Missed. Its JSON has every key,
// always (zero values as "", 0 or [] rather than absent).
type Event struct {
	SchemaVersion int       `json:"schema_version"`
	Kind          Kind      `json:"kind"`
	Time          time.Time `json:"time"`
	// Text is one line for humans (the "text" of Slack's and
	// Mattermost's incoming webhooks); Send writes Summary() when empty.
	Text string `json:"text"`
	// Rollout is the rollout's ID: the fleet's (the same on every host),
	// else the session's own; "" outside a rollout.
	Rollout string `json:"rollout"`
	Host    string `json:"host"`   // the host's name in hosts: (DESIGN §11); "" for a file without hosts
	Engine  string `json:"engine"` // the engine's identity (docker info ID), else its endpoint
	Prefix  string `json:"prefix"`
	User    string `json:"user"` // who runs the session, as the journal names them

	Workload  string `json:"workload"`
	Slot      int    `json:"slot"` // -1: none, or several
	Container string `json:"container"`
	// Action is the step's action (start, stop, roll, restart, update) of
	// step_failed, and the failure_action (pause, rollback, continue) of
	// health_failed.
	Action    string `json:"action"`
	FromImage string `json:"from_image"`
	ToImage   string `json:"to_image"`
	Spec      string `json:"spec"` // the spec hash a hold or rollback is about
	// Operator is set on an operator's own act (a rollback asked for),
	// as opposed to one that failure_action took.
	Operator bool    `json:"operator"`
	Outcome  Outcome `json:"outcome"` // rollout_ended
	Reason   string  `json:"reason"`
	Error    string  `json:"error"`
	// Duration is how long the rollout (rollout_ended) or the step
	// (step_failed) took, in milliseconds.
	DurationMS int64 `json:"duration_ms"`
	// Canary is a canary step's figures beside its thresholds
	// (canary_step, abort); null otherwise.
	Canary    *journal.Canary `json:"canary"`
	Counts    Counts          `json:"counts"`
	Workloads []Change        `json:"workloads"`
	// Missed is how many events this URL did not get between the last one
	// it got and this one: dropped from a full queue, or failed.
	Missed int `json:"missed"`
}

// Counts are a rollout's figures.
type Counts struct {
	Steps  int `json:"steps"`  // rollout_started: the steps planned so far; rollout_ended: the steps run
	Failed int `json:"failed"` // steps that failed at the engine
	Ready  int `json:"ready"`  // desired slots served by an up-to-date, healthy container
	Total  int `json:"total"`  // desired slots
	Held   int `json:"held"`   // slots kept off the desired state by a hold
}

// Change is one workload a rollout changes.
type Change struct {
	Workload   string   `json:"workload"`
	FromImages []string `json:"from_images"` // what its older containers run, sorted
	ToImage    string   `json:"to_image"`
	Version    string   `json:"version"`
	Replicas   int      `json:"replicas"`
}

// MarshalJSON writes every key, with [] for no workloads.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	p := plain(e)
	ws := make([]Change, len(p.Workloads))
	copy(ws, p.Workloads)
	for i := range ws {
		if ws[i].FromImages == nil {
			ws[i].FromImages = []string{}
		}
	}
	p.Workloads = ws
	return json.Marshal(p)
}

// Summary is the event as one line: "rollout_ended on edge-1: converged
// (web rollcall-demoapp:v1 → rollcall-demoapp:v2, 6 steps, 3/3 ready)".
func (e Event) Summary() string {
	var b strings.Builder
	b.WriteString("rollcall " + string(e.Kind))
	if e.Host != "" {
		b.WriteString(" on " + e.Host)
	}
	what := e.Workload
	if what != "" && e.Slot >= 0 {
		what = fmt.Sprintf("%s/%d", e.Workload, e.Slot)
	}
	var parts []string
	switch e.Kind {
	case KindRolloutStarted, KindRolloutEnded:
		if e.Outcome != "" {
			b.WriteString(": " + string(e.Outcome))
		}
		for _, c := range e.Workloads {
			from := strings.Join(c.FromImages, ", ")
			if from == "" {
				from = "nothing"
			}
			parts = append(parts, fmt.Sprintf("%s %s → %s", c.Workload, from, c.ToImage))
		}
		if e.Counts.Steps > 0 {
			parts = append(parts, fmt.Sprintf("%d steps", e.Counts.Steps))
		}
		if e.Counts.Failed > 0 {
			parts = append(parts, fmt.Sprintf("%d failed", e.Counts.Failed))
		}
		if e.Counts.Total > 0 {
			parts = append(parts, fmt.Sprintf("%d/%d ready", e.Counts.Ready, e.Counts.Total))
		}
	case KindCanaryStep, KindAbort:
		if what != "" {
			b.WriteString(": " + what)
		}
		if c := e.Canary; c != nil {
			// The judgement in reconcile's words and figures, as
			// every view says it.
			j := c.Judgement()
			parts = append(parts, fmt.Sprintf("step %d/%d at %s %s", c.Step, c.Of, reconcile.Percent(c.Share), e.Reason))
			if j.Verdict != reconcile.VerdictPass {
				parts = append(parts, j.Finding())
			}
			parts = append(parts, fmt.Sprintf("canary %d requests, %s errors, p95 %s; stable %d, %s, p95 %s",
				j.Canary.Requests, reconcile.Percent(j.Canary.ErrorRate()), reconcile.Latency(j.Canary.P95),
				j.Stable.Requests, reconcile.Percent(j.Stable.ErrorRate()), reconcile.Latency(j.Stable.P95)))
		}
	default:
		if what != "" {
			b.WriteString(": " + what)
		}
		for _, s := range []string{e.Action, e.Container, e.Reason, e.Error} {
			if s != "" {
				parts = append(parts, s)
			}
		}
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, "; ") + ")")
	}
	return b.String()
}
