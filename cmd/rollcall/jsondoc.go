package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/rollcall/rollcall/engine/journal"
	"github.com/rollcall/rollcall/engine/reconcile"
	"github.com/rollcall/rollcall/engine/session"
	"github.com/rollcall/rollcall/engine/spec"
)

// planDoc is the document `rollcall plan --json` prints: one JSON object,
// indented, followed by a newline. The schema is stable: fields are only
// ever added, never renamed or removed, and every field is always present
// (arrays are [] rather than null when empty). schema_version counts the
// additions: 2 added schema_version, field_changes and then; 3 added holds;
// 4 added hosts and waves; 5 added pins, a step's wait and slots; 6 added a
// step's canary; 7 added a step's stop_first; 8 added a hold's cause.
//
//	{
//	  "schema_version": int  8
//	  "source":    string   the desired-state file
//	  "prefix":    string   the label prefix in force (after --prefix)
//	  "converged": bool     every slot runs the desired spec, healthy (exit 0): nothing
//	                        to do or wait for, no workload error, and no slot kept off
//	                        its desired spec by a hold
//	  "holds": [            specs on hold (rolled back) for this engine and prefix, by
//	                        workload then since; lifted by `rollcall retry WORKLOAD`
//	    {"workload": string, "hash": string (the spec hash on hold),
//	     "since": string|null  RFC 3339 UTC: when it was put on hold (null: not recorded),
//	     "by": string (who ran the session that put it on hold, "" if not recorded),
//	     "cause": "operator"|"canary-abort"|"failure-action"|"unknown"  what put it on
//	                        hold: the operator's rollback, a canary that failed its
//	                        analysis, failure_action: rollback; unknown when the holds
//	                        file does not say (written by an older rollcall)
//	     "reason": string (the cause in words, then its detail: the step rolled back
//	                        and why, the canary's judgement),
//	     "slots": [int]     the slots it keeps from starting the desired spec; [] when
//	                        it keeps none (the desired spec changed: the next session
//	                        drops the hold)}
//	  ],
//	  "pins": [             workloads pinned to a revision (rollcall rollback), by
//	                        workload; lifted by `rollcall retry WORKLOAD` or a new desired spec
//	    {"workload": string, "revision": int, "hash": string (the revision's spec hash),
//	     "image": string, "version": string,
//	     "against": string (the desired spec hash it was set against),
//	     "by": string, "since": string|null  RFC 3339 UTC}
//	  ],
//	  "summary":   string   "2 start · 1 roll · 1 restart · 1 stop", or "nothing to do"
//	  "workloads": [        only workloads with something to say, sorted by name
//	    {
//	      "name":     string
//	      "changes":  [string]   spec diff lines, "~ image: web:v1 → web:v2"
//	      "field_changes": [     the field-by-field diff of the desired workload with its
//	                             stale containers as inspected (a few per workload)
//	        {"field": string (image|image ID|version|command|entrypoint|env|ports|labels|
//	                  healthcheck|limits|restart|stop_signal|networks|pre_stop|mount|read_only),
//	                  (mount: key is the target)
//	         "key": string (the variable or label name for env and labels, else ""),
//	         "kind": "+"|"-"|"~", "old": string, "new": string}
//	                             env values are secrets: for env, old and new are always ""
//	      ],
//	      "error":    string     "" or why the workload cannot be acted on (image missing)
//	      "failures": [          new containers that missed their health deadline
//	        {"workload": string, "slot": int|null, "container": string,
//	         "action": string (the failure_action: pause|rollback|continue), "reason": string}
//	      ],
//	      "steps": [             in the order apply runs them
//	        {
//	          "action":       "pull"|"start"|"roll"|"restart"|"update"|"stop"|"canary"|"wait",
//	          "workload":     string,
//	          "slot":         int|null   (null: the container has no readable slot),
//	          "container":    string     (for start: the name it will get),
//	          "container_id": string     ("" for start),
//	          "reason":       string,
//	          "wait":         ""|"boot"|"ready"|"backoff"|"queue"|"blue-green"|"restarting"|"paused"|"canary":
//	                          what a wait step waits for ("" for the other actions; canary:
//	                          the slot's old container drains only once the canary's steps
//	                          pass, or a step held on too little traffic)
//	          "until":        string|null  RFC 3339 UTC: when a wait is next looked at,
//	          "downtime":     bool       stop-first: the slot is down until the new container is healthy
//	          "stop_first":   ""|"chosen"|"host-port"|"host-network"|"data"|"slot-volume":
//	                          why a downtime step's slot goes down ("" for the other steps)
//	          "canary":       object|null  a canary step's own part (DESIGN §12), null for
//	                          every other step:
//	            {"step": int (1-based), "of": int (the canary's steps in all),
//	             "share": float (the canary's share of the requests, 0..1: 0.05 for 5%),
//	             "for_ms": int (the step's length),
//	             "spec": string (the canary's spec hash: its cohort in the proxy),
//	             "analysis": {"interval_ms": int (how often the cohorts are compared,
//	                           at most for_ms), "max_error_rate": float,
//	                          "max_error_rate_increase": float, "max_p95_ratio": float
//	                           (-1: not checked; rates are fractions 0..1),
//	                          "min_requests": int,
//	                          "on_insufficient_traffic": "hold"|"fail"|"pass"}}
//	        }
//	      ],
//	      "then": [step]         the steps that follow once the waits end, in the order
//	                             they would come; shown, never run (same fields as steps)
//	      "notes": [string]
//	    }
//	  ],
//	  "slots": [            Diff's state of every slot, by workload then slot (the
//	                        same classification the console shows)
//	    {"workload": string, "slot": int|null (null: orphans, no readable slot),
//	     "desired": bool (a slot 0..replicas-1 of a desired workload),
//	     "ready": bool (served by an up-to-date container, healthy or unverified),
//	     "wait": string (what the slot waits for, as a step's, or "hold"; "" for nothing),
//	     "until": string|null,
//	     "containers": [    up-to-date ones first as Diff ranks them, then oldest first
//	       {"id": string, "name": string,
//	        "relation": "up-to-date"|"needs-update"|"revert"|"stale"|"legacy"|"duplicate"|
//	                    "surplus"|"orphan"|"extra"|"unknown",
//	        "condition": "healthy"|"unverified"|"booting"|"restarting"|"paused"|"crashed"|"drained",
//	        "serves": bool}
//	     ]}
//	  ],
//	  "notes":    [string]   containers that belong to no workload (left alone)
//	  "warnings": [string]   doubtful but accepted findings in the file, "file:line:col: message"
//	  "waves": [[string]]    with hosts: the waves of the rollout, canary first, each the
//	                         names of its hosts in file order; [] without hosts:
//	  "hosts": [             with hosts: one per host, in file order; [] without hosts:
//	    {"name": string, "endpoint": string (as the file writes it, "context NAME" for a
//	                     docker context),
//	     "wave": int (the index of its wave in waves: 0 is the canary wave),
//	     "engine_id": string, "engine_version": string ("" when it did not answer),
//	     "reachable": bool, "error": string ("" when it answered, else why not),
//	     "plan": object|null  the host's own plan: this document, of the host's own
//	                          desired state (its replica overrides applied), with hosts
//	                          and waves []; null when it did not answer}
//	  ]
//	}
//
// With hosts:, the top level is the fleet: converged is true only when
// every host answers and is converged; summary counts the hosts by state
// ("3 hosts: 1 converged · 1 not converged · 1 unreachable"); holds,
// workloads and notes are [], each host's being in its plan.
type planDoc struct {
	SchemaVersion int           `json:"schema_version"`
	Source        string        `json:"source"`
	Prefix        string        `json:"prefix"`
	Converged     bool          `json:"converged"`
	Holds         []holdDoc     `json:"holds"`
	Pins          []pinDoc      `json:"pins"`
	Summary       string        `json:"summary"`
	Workloads     []workloadDoc `json:"workloads"`
	Notes         []string      `json:"notes"`
	Warnings      []string      `json:"warnings"`
	Slots         []slotDoc     `json:"slots"`
	Waves         [][]string    `json:"waves"`
	Hosts         []hostDoc     `json:"hosts"`
}

// hostDoc is one host of a fleet plan (planDoc.Hosts).
type hostDoc struct {
	Name          string   `json:"name"`
	Endpoint      string   `json:"endpoint"`
	Wave          int      `json:"wave"`
	EngineID      string   `json:"engine_id"`
	EngineVersion string   `json:"engine_version"`
	Reachable     bool     `json:"reachable"`
	Error         string   `json:"error"`
	Plan          *planDoc `json:"plan"`
}

type workloadDoc struct {
	Name         string           `json:"name"`
	Changes      []string         `json:"changes"`
	FieldChanges []fieldChangeDoc `json:"field_changes"`
	Error        string           `json:"error"`
	Failures     []failureDoc     `json:"failures"`
	Steps        []stepDoc        `json:"steps"`
	Then         []stepDoc        `json:"then"`
	Notes        []string         `json:"notes"`
}

type fieldChangeDoc struct {
	Field string `json:"field"`
	Key   string `json:"key"`
	Kind  string `json:"kind"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// planSchemaVersion is planDoc's schema_version.
const planSchemaVersion = 8

type pinDoc struct {
	Workload string     `json:"workload"`
	Revision int        `json:"revision"`
	Hash     string     `json:"hash"`
	Image    string     `json:"image"`
	Version  string     `json:"version"`
	Against  string     `json:"against"`
	By       string     `json:"by"`
	Since    *time.Time `json:"since"`
}

type slotDoc struct {
	Workload   string         `json:"workload"`
	Slot       *int           `json:"slot"`
	Desired    bool           `json:"desired"`
	Ready      bool           `json:"ready"`
	Wait       string         `json:"wait"`
	Until      *time.Time     `json:"until"`
	Containers []containerDoc `json:"containers"`
}

type containerDoc struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Relation  string `json:"relation"`
	Condition string `json:"condition"`
	Serves    bool   `json:"serves"`
}

type holdDoc struct {
	Workload string     `json:"workload"`
	Hash     string     `json:"hash"`
	Since    *time.Time `json:"since"`
	By       string     `json:"by"`
	Cause    string     `json:"cause"`
	Reason   string     `json:"reason"`
	Slots    []int      `json:"slots"`
}

type failureDoc struct {
	Workload  string `json:"workload"`
	Slot      *int   `json:"slot"`
	Container string `json:"container"`
	Action    string `json:"action"`
	Reason    string `json:"reason"`
}

type stepDoc struct {
	Action      string     `json:"action"`
	Workload    string     `json:"workload"`
	Slot        *int       `json:"slot"`
	Container   string     `json:"container"`
	ContainerID string     `json:"container_id"`
	Reason      string     `json:"reason"`
	Wait        string     `json:"wait"`
	Until       *time.Time `json:"until"`
	Downtime    bool       `json:"downtime"`
	// StopFirst is why a downtime step's slot goes down: chosen,
	// host-port, data or slot-volume; "" otherwise.
	StopFirst string     `json:"stop_first"`
	Canary    *canaryDoc `json:"canary"`
}

// canaryDoc is a canary step's own part (stepDoc.Canary).
type canaryDoc struct {
	Step     int         `json:"step"`
	Of       int         `json:"of"`
	Share    float64     `json:"share"`
	ForMS    int64       `json:"for_ms"`
	Spec     string      `json:"spec"`
	Analysis analysisDoc `json:"analysis"`
}

type analysisDoc struct {
	IntervalMS            int64   `json:"interval_ms"`
	MaxErrorRate          float64 `json:"max_error_rate"`
	MaxErrorRateIncrease  float64 `json:"max_error_rate_increase"`
	MaxP95Ratio           float64 `json:"max_p95_ratio"`
	MinRequests           int     `json:"min_requests"`
	OnInsufficientTraffic string  `json:"on_insufficient_traffic"`
}

func newCanaryDoc(c *reconcile.CanaryStep) *canaryDoc {
	if c == nil {
		return nil
	}
	a := c.Analysis
	return &canaryDoc{Step: c.Index + 1, Of: c.Of, Share: c.Share, ForMS: c.For.Milliseconds(), Spec: c.Spec,
		Analysis: analysisDoc{IntervalMS: c.Interval().Milliseconds(), MaxErrorRate: a.MaxErrorRate, MaxErrorRateIncrease: a.MaxErrorRateIncrease,
			MaxP95Ratio: a.MaxP95Ratio, MinRequests: a.MinRequests, OnInsufficientTraffic: a.OnInsufficientTraffic}}
}

func newPlanDoc(d *spec.Desired, p reconcile.Plan, fields map[string][]reconcile.FieldChange, holds []session.Hold, pins []session.PinRecord) planDoc {
	doc := planDoc{
		SchemaVersion: planSchemaVersion,
		Source:        d.Source, Prefix: d.Prefix, Converged: converged(p), Holds: []holdDoc{}, Pins: []pinDoc{}, Summary: p.Summary(),
		Workloads: []workloadDoc{}, Notes: list(p.Notes), Warnings: []string{}, Slots: []slotDoc{}, Waves: [][]string{}, Hosts: []hostDoc{},
	}
	for _, pn := range pins {
		pd := pinDoc{Workload: pn.Workload, Revision: pn.Revision.Number, Hash: pn.Revision.Hash, Image: pn.Revision.Image,
			Version: pn.Revision.Version, Against: pn.Against, By: pn.By}
		if !pn.Since.IsZero() {
			since := pn.Since.UTC()
			pd.Since = &since
		}
		doc.Pins = append(doc.Pins, pd)
	}
	for _, st := range p.Slots {
		sd := slotDoc{Workload: st.Workload, Slot: slotPtr(st.Slot), Desired: st.Desired, Ready: st.Ready,
			Wait: string(st.Wait), Until: timePtr(st.Until), Containers: []containerDoc{}}
		for _, c := range st.Containers {
			sd.Containers = append(sd.Containers, containerDoc{ID: c.ID, Name: c.Name, Relation: string(c.Relation),
				Condition: c.Condition.String(), Serves: c.Serves})
		}
		doc.Slots = append(doc.Slots, sd)
	}
	held := heldSlots(p)
	for _, h := range holds {
		hd := holdDoc{Workload: h.Workload, Hash: h.Hash, By: h.By, Cause: h.Cause.Key(), Reason: h.Why(),
			Slots: append([]int{}, held[h.Workload][h.Hash]...)}
		if !h.Since.IsZero() {
			since := h.Since.UTC()
			hd.Since = &since
		}
		doc.Holds = append(doc.Holds, hd)
	}
	for _, w := range d.Warnings {
		doc.Warnings = append(doc.Warnings, fmt.Sprintf("%s:%d:%d: %s", w.File, w.Line, w.Col, w.Msg))
	}
	for _, w := range p.Workloads {
		wd := workloadDoc{Name: w.Name, Changes: list(w.Changes), FieldChanges: []fieldChangeDoc{}, Error: w.Error,
			Failures: []failureDoc{}, Steps: []stepDoc{}, Then: []stepDoc{}, Notes: list(w.Notes)}
		for _, fc := range fields[w.Name] {
			fd := fieldChangeDoc{Field: fc.Field, Key: fc.Key, Kind: fc.Kind, Old: fc.Old, New: fc.New}
			if fc.Field == "env" {
				fd.Old, fd.New = "", "" // secrets: names only
			}
			wd.FieldChanges = append(wd.FieldChanges, fd)
		}
		for _, s := range w.Then {
			wd.Then = append(wd.Then, newStepDoc(s))
		}
		for _, f := range w.Failures {
			wd.Failures = append(wd.Failures, failureDoc{Workload: f.Workload, Slot: slotPtr(f.Slot),
				Container: f.Container, Action: f.Action, Reason: f.Reason})
		}
		for _, s := range w.Steps {
			wd.Steps = append(wd.Steps, newStepDoc(s))
		}
		doc.Workloads = append(doc.Workloads, wd)
	}
	return doc
}

func newStepDoc(s reconcile.Step) stepDoc {
	sd := stepDoc{Action: string(s.Action), Workload: s.Workload, Slot: slotPtr(s.Slot),
		Container: s.Container, ContainerID: s.ContainerID, Reason: s.Reason, Wait: string(s.Wait), Until: timePtr(s.Until), Downtime: s.Downtime,
		Canary: newCanaryDoc(s.Canary)}
	if s.Why.Kind == reconcile.ReasonStopFirst {
		sd.StopFirst = string(s.Why.StopFirst)
	}
	return sd
}

// timePtr is t in UTC, or nil for the zero time.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func slotPtr(slot int) *int {
	if slot == reconcile.NoSlot {
		return nil
	}
	return &slot
}

// list copies a list so that an empty one encodes as [].
func list(in []string) []string { return append([]string{}, in...) }

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// applyDoc is what `rollcall apply --json` prints on stdout when it ends
// (progress lines stay on stderr): one indented JSON object. Stable as
// planDoc is; every field always present.
//
//	{
//	  "source":    string
//	  "prefix":    string
//	  "converged": bool      true: exit 0
//	  "rounds":    int       fresh plans the session diffed while it ran
//	  "summary":   string    the final line, as printed on stderr
//	  "error":     string    "" when converged, else why not
//	  "steps": [             every executed step, in order: the step fields of
//	                         plan --json (but a start that succeeded has the
//	                         container_id the engine gave the container it
//	                         created, even if gone since), plus
//	    {..., "result": "ok"|"failed", "error": string, "duration_ms": int,
//	     "judgement": object|null  a canary step's last comparison of the canary
//	                         with the stable cohort, as its journal line has it;
//	                         null for every other step, and for a canary step that
//	                         measured nothing (the proxy could not be read):
//	       {"verdict": "pass"|"fail"|"insufficient"|"measuring",
//	        "check": string  the check that failed (max_error_rate,
//	                         max_error_rate_increase, max_p95_ratio), or min_requests
//	                         for too little traffic; "" for a pass,
//	        "measured": float, "limit": float  that check's figure and threshold (a
//	                         rate 0..1, a ratio, or a count); 0 for a pass,
//	        "window_ms": int  the window compared, from the step's start,
//	        "canary": cohort, "stable": cohort  each {"requests": int, "errors": int,
//	                         "error_rate": float, "p50_ms": float, "p95_ms": float}},
//	     "pull": object|null  a pull step's own part, null for every other step:
//	       {"image": string  the reference pulled,
//	        "kind": ""|"not-found"|"unauthorized"|"unreachable"|"rate-limited"|"no-space"|"other":
//	                         why it failed ("" when it did not); the engine's and the
//	                         registry's words are in the step's error,
//	        "layers": int, "layers_done": int, "bytes": int, "bytes_done": int:
//	                         its last progress as the engine reported it (bytes are
//	                         known as each layer's download begins; 0s before any
//	                         report, and with hosts:)}}
//	  ],
//	  "pending": [step]      the last plan's steps when not converged, else []
//	  "rollout": string      with hosts: the rollout's ID, on every journal line of it
//	                         ("" when none began); "" without hosts:
//	  "hosts": [             with hosts: one per host, in file order; [] without hosts:
//	    {"name": string, "endpoint": string (as the file writes it, "context NAME"),
//	     "engine_id": string ("" when it did not answer),
//	     "status": string   "converged", "not converged", "failed", "lost", "left out",
//	                        "not started", "does not answer" or "not rolled (one engine twice)",
//	     ...                and the fields of this document for the host alone: its
//	                        source, prefix, converged, rounds (0), summary (its last
//	                        line), error, steps and pending, with rollout "" and hosts []}
//	  ]
//	}
//
// With hosts:, the top level is the fleet: converged only when every host
// converged (a host left out by --skip-unreachable did not); summary is the
// last line; rounds is 0 and steps and pending are [], each host's being
// under hosts.
type applyDoc struct {
	Source    string         `json:"source"`
	Prefix    string         `json:"prefix"`
	Converged bool           `json:"converged"`
	Rounds    int            `json:"rounds"`
	Summary   string         `json:"summary"`
	Error     string         `json:"error"`
	Steps     []resultDoc    `json:"steps"`
	Pending   []stepDoc      `json:"pending"`
	Rollout   string         `json:"rollout"`
	Hosts     []hostApplyDoc `json:"hosts"`
	// Standing is where the session stood at the end (one engine; each
	// host's in hosts), as the session decided it.
	Standing *standingDoc `json:"standing,omitempty"`
	// Missed counts the session's facts apply fell too far behind to
	// read: steps may be missing from steps then. 0 in a run that kept up.
	Missed uint64 `json:"missed_facts"`
}

// standingDoc is a session's standing (session.Standing).
type standingDoc struct {
	Kind   session.StandingKind `json:"kind"`
	Causes []causeDoc           `json:"causes"`
	Pinned []string             `json:"pinned"` // workloads whose pin was reached, as asked
}

type causeDoc struct {
	Kind     session.CauseKind `json:"kind"`
	Workload string            `json:"workload,omitempty"`
	Text     string            `json:"text"`
}

func newStandingDoc(st session.Standing) *standingDoc {
	d := &standingDoc{Kind: st.Kind, Causes: []causeDoc{}, Pinned: []string{}}
	for _, c := range st.Causes {
		d.Causes = append(d.Causes, causeDoc{Kind: c.Kind, Workload: c.Workload, Text: c.Said()})
	}
	for _, p := range st.Pinned {
		d.Pinned = append(d.Pinned, p.Workload)
	}
	return d
}

// hostApplyDoc is one host of apply --json with hosts: (applyDoc.Hosts).
type hostApplyDoc struct {
	Name     string `json:"name"`
	Endpoint string `json:"endpoint"`
	EngineID string `json:"engine_id"`
	Status   string `json:"status"`
	applyDoc
}

type resultDoc struct {
	stepDoc
	Result     string        `json:"result"`
	Error      string        `json:"error"`
	DurationMS int64         `json:"duration_ms"`
	Judgement  *judgementDoc `json:"judgement"`
	Pull       *pullDoc      `json:"pull"`

	key string // the step's key: pullDocs finds its progress by it
}

// pullDoc is a pull step's own part of apply --json (resultDoc.Pull).
type pullDoc struct {
	Image      string `json:"image"`
	Kind       string `json:"kind"`
	Layers     int    `json:"layers"`
	LayersDone int    `json:"layers_done"`
	Bytes      int64  `json:"bytes"`
	BytesDone  int64  `json:"bytes_done"`
}

// judgementDoc is a canary step's last judgement (resultDoc.Judgement):
// the journal's figures, without the step's own part, which the step's
// canary object has.
type judgementDoc struct {
	Verdict  reconcile.Verdict `json:"verdict"`
	Check    reconcile.Check   `json:"check"`
	Measured float64           `json:"measured"`
	Limit    float64           `json:"limit"`
	WindowMS int64             `json:"window_ms"`
	Canary   journal.Cohort    `json:"canary"`
	Stable   journal.Cohort    `json:"stable"`
}

func newJudgementDoc(s reconcile.CanaryStep, j reconcile.Judgement) *judgementDoc {
	c := journal.CanaryOf(reconcile.Step{Canary: &s}, j)
	return &judgementDoc{Verdict: c.Verdict, Check: c.Check, Measured: c.Measured, Limit: c.Limit, WindowMS: c.WindowMS,
		Canary: c.Canary, Stable: c.Stable}
}

// newApplyDoc is apply --json of one engine; judged gives each canary step
// that ran its judgement, in the order they ended (progress.canaryResult).
func newApplyDoc(d *spec.Desired, res session.Outcome, summary string, judged func(reconcile.Step) *judgementDoc) applyDoc {
	doc := applyDoc{Source: d.Source, Prefix: d.Prefix, Converged: res.Converged, Rounds: res.Plans,
		Summary: summary, Steps: []resultDoc{}, Pending: []stepDoc{}, Hosts: []hostApplyDoc{},
		Standing: newStandingDoc(res.Standing), Missed: res.Missed}
	if !res.Converged {
		doc.Error = oneLine(res.Reason)
		for _, s := range res.Left.Steps() {
			doc.Pending = append(doc.Pending, newStepDoc(s))
		}
	}
	for _, r := range res.Steps {
		rd := resultDoc{stepDoc: newStepDoc(r.Step), Result: journal.ResultOK, DurationMS: r.Duration.Milliseconds(),
			Pull: newPullDoc(r), key: r.Step.Key()}
		switch {
		case r.Step.Canary != nil && r.Judgement != nil:
			rd.Judgement = newJudgementDoc(*r.Step.Canary, *r.Judgement) // the step's own
		case r.Step.Canary != nil && judged != nil:
			rd.Judgement = judged(r.Step) // its last reading (a fleet's host)
		}
		if r.Err != "" {
			rd.Result, rd.Error = journal.ResultFailed, oneLine(r.Err)
		} else if r.Step.Action == reconcile.ActStart {
			// A start's step has no container ID: it is the one the
			// engine gave the container the start made.
			rd.ContainerID = r.Created
		}
		doc.Steps = append(doc.Steps, rd)
	}
	return doc
}
